package postgres

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/relaybell/relaybell/store"
)

// undeliveredQuery looks each endpoint of the batch up in the primary key,
// whatever the statistics say. Written as notification_seq = ... AND
// endpoint_id = ANY (...), it was planned, without statistics on deliveries
// (a new store, or autovacuum not run yet: deliveries grows through a
// send), as a walk over every result of the send so far, filtered against
// the batch: a cost per batch that grows with the send, so a broadcast's
// cost grew with the square of its audience (about 11,000 buffers and 65 ms
// per batch of 500 at 500k results, against 1,600 buffers and 1 ms this
// way). OFFSET 0 keeps the LATERAL a loop over the ids, as in cappedQuery.
const undeliveredQuery = `SELECT d.endpoint_id
	FROM (SELECT seq FROM notifications WHERE id = $1) AS n
	CROSS JOIN unnest($2::text[]) AS b (id)
	CROSS JOIN LATERAL (SELECT endpoint_id FROM deliveries
		WHERE notification_seq = n.seq AND endpoint_id = b.id OFFSET 0) AS d`

// Undelivered returns, in input order, the endpoint ids that have no
// recorded result for the notification.
func (s *Store) Undelivered(ctx context.Context, notificationID string, endpointIDs []string) ([]string, error) {
	if len(endpointIDs) == 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, undeliveredQuery, notificationID, endpointIDs)
	if err != nil {
		return nil, fmt.Errorf("checking deliveries: %w", err)
	}
	defer rows.Close()
	done := make(map[string]struct{})
	var id string
	for rows.Next() {
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

// recordResultsQuery inserts a batch in one statement over two parallel
// arrays (endpoint ids, outcomes); the rows ON CONFLICT DO NOTHING lets
// through, and so RETURNING yields, are exactly the new results, and the
// same statement adds them to the counters. It returns the notification's
// seq, NULL for an unknown notification.
const recordResultsQuery = `WITH n AS (
		SELECT seq FROM notifications WHERE id = $1
	), ins AS (
		INSERT INTO deliveries (notification_seq, endpoint_id, outcome, at)
		SELECT n.seq, r.endpoint_id, r.outcome, $4
		FROM n CROSS JOIN unnest($2::text[], $3::text[]) AS r (endpoint_id, outcome)
		ON CONFLICT DO NOTHING
		RETURNING outcome
	), c AS (
		SELECT count(*) AS n_total,
			count(*) FILTER (WHERE outcome = 'sent') AS n_sent,
			count(*) FILTER (WHERE outcome = 'failed') AS n_failed,
			count(*) FILTER (WHERE outcome = 'pruned') AS n_pruned
		FROM ins
	), upd AS (
		UPDATE notifications SET recipients = recipients + n_total, processed = processed + n_total,
			sent = sent + n_sent, failed = failed + n_failed, pruned = pruned + n_pruned
		FROM c WHERE notifications.id = $1 AND n_total > 0
	)
	SELECT (SELECT seq FROM n)`

// RecordResults stores a batch of push results once per (notification,
// endpoint), adds the new ones to the counters (each new result is one more
// recipient and one more processed), and deletes the endpoints the push
// service pruned, all in one transaction. An unknown notification is
// store.ErrNotFound. Within a batch the first result of an endpoint counts.
//
// The batch goes in sorted by endpoint id, so that concurrent overlapping
// batches (a redelivered batch racing its first delivery) wait for each
// other's rows in the same order instead of deadlocking.
func (s *Store) RecordResults(ctx context.Context, notificationID string, results []store.PushResult) error {
	if len(results) == 0 {
		return nil
	}
	rs, err := store.FirstResults(results)
	if err != nil {
		return fmt.Errorf("recording results: %w", err)
	}
	ids, outcomes := make([]string, len(rs)), make([]string, len(rs))
	var pruned []string // sorted, as rs is
	for i, r := range rs {
		ids[i], outcomes[i] = r.EndpointID, r.Outcome
		if r.Outcome == store.OutcomePruned {
			pruned = append(pruned, r.EndpointID)
		}
	}
	at := now(time.Time{})
	err = s.inTx(ctx, false, func(tx pgx.Tx) error {
		var seq *int64
		if err := tx.QueryRow(ctx, recordResultsQuery, notificationID, ids, outcomes, at).Scan(&seq); err != nil {
			return err
		}
		if seq == nil {
			return store.ErrNotFound
		}
		// Deleting is idempotent: a replayed pruned result finds nothing.
		return pruneEndpoints(ctx, tx, pruned, at)
	})
	if err != nil {
		return fmt.Errorf("recording results: %w", err)
	}
	return nil
}

// pruneEndpoints deletes the endpoints the push service reported gone and
// marks subscribers left without any unsubscribed.
func pruneEndpoints(ctx context.Context, tx pgx.Tx, ids []string, at time.Time) error {
	if len(ids) == 0 {
		return nil
	}
	rows, err := tx.Query(ctx, `DELETE FROM endpoints WHERE id = ANY ($1::text[]) RETURNING subscriber_id`, ids)
	if err != nil {
		return err
	}
	subs, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(subs) == 0 {
		return err
	}
	slices.Sort(subs)
	return markUnsubscribedIfEmpty(ctx, tx, slices.Compact(subs), at)
}

// ShardDone marks one shard of a send done. The call that completes the last
// shard of a sending notification turns it sent, adds its notification.sent
// webhook event in the same transaction, and alone reports finished=true;
// later calls for a finished send report false.
//
// The finishing UPDATE is conditional (status still sending, every shard
// counted): of concurrent calls, the first to take the row lock changes it,
// and the others, re-checking the condition on the changed row, don't; so
// exactly one adds the event.
func (s *Store) ShardDone(ctx context.Context, notificationID string, shard int, at time.Time) (bool, error) {
	t := now(at)
	var finished bool
	err := s.inTx(ctx, false, func(tx pgx.Tx) error {
		finished = false
		var tasks int
		if err := tx.QueryRow(ctx, `SELECT greatest(waves, 1) * $2 FROM notifications WHERE id = $1`,
			notificationID, store.Shards).Scan(&tasks); err != nil {
			return err
		}
		if shard < 0 || shard >= tasks {
			return fmt.Errorf("shard task %d out of range [0, %d)", shard, tasks)
		}
		if _, err := tx.Exec(ctx, `WITH ins AS (
				INSERT INTO notification_shards (notification_id, shard, done_at) VALUES ($1, $2, $3)
				ON CONFLICT DO NOTHING
				RETURNING 1
			)
			UPDATE notifications SET shards_done = shards_done + 1
			WHERE id = $1 AND EXISTS (SELECT 1 FROM ins)`, notificationID, shard, t); err != nil {
			return err
		}
		// Also on a repeated shard: a send whose shards all finished before
		// it was marked sending completes on the next report.
		tag, err := tx.Exec(ctx, `UPDATE notifications SET status = 'sent', finished_at = $2
			WHERE id = $1 AND status = 'sending' AND shards_done >= greatest(waves, 1) * $3`, notificationID, t, store.Shards)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return nil
		}
		// The call that finishes the send, and only it, adds the event.
		finished = true
		return addNotificationSent(ctx, tx, notificationID, t)
	})
	if err != nil {
		return false, fmt.Errorf("marking shard done: %w", mapErr(err))
	}
	return finished, nil
}
