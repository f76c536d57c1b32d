package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/relaybell/relaybell/store"
)

const undeliveredQuery = `SELECT endpoint_id FROM deliveries
	WHERE notification_seq = (SELECT seq FROM notifications WHERE id = ?1)
	  AND endpoint_id IN (SELECT value FROM json_each(?2))`

// Undelivered returns, in input order, the endpoint ids that have no
// recorded result for the notification.
func (s *Store) Undelivered(ctx context.Context, notificationID string, endpointIDs []string) ([]string, error) {
	if len(endpointIDs) == 0 {
		return nil, nil
	}
	ids, err := json.Marshal(endpointIDs)
	if err != nil {
		return nil, fmt.Errorf("checking deliveries: %w", err)
	}
	rows, err := s.r.query(ctx, undeliveredQuery, notificationID, string(ids))
	if err != nil {
		return nil, fmt.Errorf("checking deliveries: %w", err)
	}
	defer rows.Close()
	done := make(map[string]struct{})
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("checking deliveries: %w", err)
		}
		done[id] = struct{}{}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("checking deliveries: %w", err)
	}
	return store.Without(endpointIDs, done), nil
}

// outcomes are the push outcomes in the order RecordResults inserts them.
var outcomes = [...]string{store.OutcomeSent, store.OutcomeFailed, store.OutcomePruned}

// insertResultsQuery inserts the endpoints of one outcome, given as a JSON
// array, in one statement; the rows it changed are the new results, the ones
// to count. One statement for the whole batch with RETURNING to tell the
// new rows apart, or one INSERT per result, costs twice as much: see
// BenchmarkRecordResults.
const insertResultsQuery = `INSERT OR IGNORE INTO deliveries (notification_seq, endpoint_id, outcome, at)
	SELECT ?1, value, ?2, ?3 FROM json_each(?4)`

const addCountersQuery = `UPDATE notifications SET recipients = recipients + ?2, processed = processed + ?2,
	sent = sent + ?3, failed = failed + ?4, pruned = pruned + ?5 WHERE seq = ?1`

// RecordResults stores a batch of push results once per (notification,
// endpoint), adds the new ones to the counters (each new result is one more
// recipient and one more processed), and deletes the endpoints the push
// service pruned, all in one transaction. An unknown notification is
// store.ErrNotFound. Within a batch the first result of an endpoint counts.
func (s *Store) RecordResults(ctx context.Context, notificationID string, results []store.PushResult) error {
	if len(results) == 0 {
		return nil
	}
	rs, err := store.FirstResults(results)
	if err != nil {
		return fmt.Errorf("recording results: %w", err)
	}
	var byOutcome [len(outcomes)][]string
	for _, r := range rs {
		i := slices.Index(outcomes[:], r.Outcome)
		byOutcome[i] = append(byOutcome[i], r.EndpointID)
	}
	var lists [len(outcomes)]string
	for i, ids := range byOutcome {
		if len(ids) > 0 {
			js, err := json.Marshal(ids)
			if err != nil {
				return fmt.Errorf("recording results: %w", err)
			}
			lists[i] = string(js)
		}
	}
	at := ms(time.Now())
	err = s.write(ctx, func(tx wtx) error {
		var seq int64
		if err := tx.queryRow(`SELECT seq FROM notifications WHERE id = ?`, notificationID).Scan(&seq); err != nil {
			return notFound(err)
		}
		var added [len(outcomes)]int64
		for i, list := range lists {
			if list == "" {
				continue
			}
			res, err := tx.exec(insertResultsQuery, seq, outcomes[i], at, list)
			if err != nil {
				return err
			}
			if added[i], err = res.RowsAffected(); err != nil {
				return err
			}
		}
		if n := added[0] + added[1] + added[2]; n > 0 {
			if _, err := tx.exec(addCountersQuery, seq, n, added[0], added[1], added[2]); err != nil {
				return err
			}
		}
		// Deleting is idempotent: a replayed pruned result finds nothing.
		return pruneEndpoints(tx, lists[2], at)
	})
	if err != nil {
		return fmt.Errorf("recording results: %w", err)
	}
	return nil
}

// pruneEndpoints deletes the endpoints of a JSON array of ids the push
// service reported gone and marks subscribers left without any unsubscribed.
func pruneEndpoints(tx wtx, ids string, at int64) error {
	if ids == "" {
		return nil
	}
	rows, err := tx.query(`DELETE FROM endpoints WHERE id IN (SELECT value FROM json_each(?))
		RETURNING subscriber_id`, ids)
	if err != nil {
		return err
	}
	var subs []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return err
		}
		subs = append(subs, id)
	}
	if err := rows.Close(); err != nil {
		return err
	}
	if err := rows.Err(); err != nil || len(subs) == 0 {
		return err
	}
	js, err := json.Marshal(subs)
	if err != nil {
		return err
	}
	_, err = tx.exec(`UPDATE subscribers SET unsubscribed_at = ?
		WHERE id IN (SELECT value FROM json_each(?)) AND unsubscribed_at IS NULL
		AND NOT EXISTS (SELECT 1 FROM endpoints e WHERE e.subscriber_id = subscribers.id)`, at, string(js))
	return err
}

// ShardDone marks one shard of a send done. The call that completes the last
// shard of a sending notification turns it sent, adds its notification.sent
// webhook event in the same transaction, and alone reports finished=true;
// later calls for a finished send report false.
func (s *Store) ShardDone(ctx context.Context, notificationID string, shard int, at time.Time) (bool, error) {
	t := ms(now(at))
	var finished bool
	err := s.write(ctx, func(tx wtx) error {
		finished = false
		var tasks int
		if err := tx.queryRow(`SELECT max(waves, 1) * ? FROM notifications WHERE id = ?`,
			store.Shards, notificationID).Scan(&tasks); err != nil {
			return notFound(err)
		}
		if shard < 0 || shard >= tasks {
			return fmt.Errorf("shard task %d out of range [0, %d)", shard, tasks)
		}
		res, err := tx.exec(`INSERT OR IGNORE INTO notification_shards (notification_id, shard, done_at)
			VALUES (?, ?, ?)`, notificationID, shard, t)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n > 0 {
			if _, err := tx.exec(`UPDATE notifications SET shards_done = shards_done + 1 WHERE id = ?`,
				notificationID); err != nil {
				return err
			}
		}
		// Also on a repeated shard: a send whose shards all finished before
		// it was marked sending completes on the next report.
		res, err = tx.exec(`UPDATE notifications SET status = 'sent', finished_at = ?
			WHERE id = ? AND status = 'sending' AND shards_done >= max(waves, 1) * ?`, t, notificationID, store.Shards)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil || n == 0 {
			return err
		}
		// The call that finishes the send, and only it, adds the event.
		finished = true
		return addNotificationSent(tx, notificationID, t)
	})
	if err != nil {
		return false, fmt.Errorf("marking shard done: %w", mapErr(err))
	}
	return finished, nil
}
