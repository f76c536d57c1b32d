package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/relaybell/relaybell/store"
)

var _ store.Delivery = (*Store)(nil)

// UndeliveredQuery is Undelivered's query on d, for the engines' plan
// tests: it looks each endpoint of the batch ($2) up in deliveries' primary
// key, whatever the statistics say. Written as notification_seq = … AND
// endpoint_id = ANY (the batch), it was planned by PostgreSQL, without
// statistics on deliveries (a new store, or autovacuum not run yet:
// deliveries grows through a send), as a walk over every result of the
// send so far, filtered against the batch: a cost per batch that grew with
// the send, so a broadcast's cost grew with the square of its audience
// (about 11,000 buffers and 65 ms per batch of 500 at 500k results, against
// 1,600 buffers and 1 ms this way). PostgreSQL never turns a scalar
// subquery into a join, so both engines run this one once per id of the
// batch, a lookup of the key (TestUndeliveredLooksEachIDUp, TestQueryPlans).
func UndeliveredQuery(d Dialect) string {
	return `SELECT value FROM (SELECT seq FROM notifications WHERE id = $1) AS n, ` + d.Elems("$2") + `
		WHERE (SELECT true FROM deliveries WHERE notification_seq = n.seq AND endpoint_id = value)`
}

// Undelivered returns, in input order, the endpoint ids that have no
// recorded result for the notification.
func (s *Store) Undelivered(ctx context.Context, notificationID string, endpointIDs []string) ([]string, error) {
	if len(endpointIDs) == 0 {
		return nil, nil
	}
	rows, err := s.db.Read().Query(ctx, UndeliveredQuery(s.d), notificationID, s.d.List(endpointIDs))
	done, err := collectIDSet(rows, err)
	if err != nil {
		return nil, fmt.Errorf("checking deliveries: %w", err)
	}
	return store.Without(endpointIDs, done), nil
}

// collectIDSet reads the ids a query returns into a set, and closes rows.
// Taking Query's results as they are, as CollectRows does, it scans every
// row into one string: the rows of a batch are up to one an endpoint.
func collectIDSet(rows Rows, err error) (map[string]struct{}, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	set := make(map[string]struct{})
	var id string
	for rows.Next() {
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		set[id] = struct{}{}
	}
	return set, rows.Err()
}

// RecordResults stores a batch of push results once per (notification,
// endpoint), adds the new ones to the counters (each new result is one more
// recipient and one more processed), and deletes the endpoints the push
// service pruned, all in one transaction. An unknown notification is
// store.ErrNotFound. Within a batch the first result of an endpoint counts.
//
// The batch goes in sorted by endpoint id, so that on PostgreSQL concurrent
// overlapping batches (a redelivered batch racing its first delivery) wait
// for each other's rows in the same order instead of deadlocking; ON
// CONFLICT DO NOTHING makes a concurrent duplicate wait for the first and
// then skips it, so it is counted once. The insert is Dialect.RecordResults
// where the engine has one (PostgreSQL's single statement over unnest),
// else recordResultsByOutcome.
func (s *Store) RecordResults(ctx context.Context, notificationID string, results []store.PushResult) error {
	if len(results) == 0 {
		return nil
	}
	rs, err := store.FirstResults(results)
	if err != nil {
		return fmt.Errorf("recording results: %w", err)
	}
	var pruned []string // sorted, as rs is
	for _, r := range rs {
		if r.Outcome == store.OutcomePruned {
			pruned = append(pruned, r.EndpointID)
		}
	}
	record := s.d.RecordResults
	if record == nil {
		record = s.recordResultsByOutcome
	}
	at := time.Now()
	err = s.db.Tx(ctx, TxOptions{}, func(tx Conn) error {
		if found, err := record(ctx, tx, notificationID, rs, at); err != nil {
			return err
		} else if !found {
			return store.ErrNotFound
		}
		// Deleting is idempotent: a replayed pruned result finds nothing.
		return s.pruneEndpoints(ctx, tx, pruned, at)
	})
	if err != nil {
		return fmt.Errorf("recording results: %w", err)
	}
	return nil
}

// RecordAllResults stores several sends' results in one transaction, the
// sends in id order (and each one's results in endpoint order, as
// RecordResults), so that two concurrent calls lock the notifications'
// rows and the deliveries' keys in the same order; the endpoints pruned
// are deleted once, at the end.
func (s *Store) RecordAllResults(ctx context.Context, bySend map[string][]store.PushResult) ([]string, error) {
	ids := slices.Sorted(maps.Keys(bySend))
	firsts := make([][]store.PushResult, len(ids))
	for i, id := range ids {
		rs, err := store.FirstResults(bySend[id])
		if err != nil {
			return nil, fmt.Errorf("recording results: %w", err)
		}
		firsts[i] = rs
	}
	record := s.d.RecordResults
	if record == nil {
		record = s.recordResultsByOutcome
	}
	at := time.Now()
	var unknown []string
	err := s.db.Tx(ctx, TxOptions{}, func(tx Conn) error {
		unknown = unknown[:0]
		var pruned []string
		for i, id := range ids {
			if len(firsts[i]) == 0 {
				continue
			}
			found, err := record(ctx, tx, id, firsts[i], at)
			if err != nil {
				return err
			}
			if !found {
				unknown = append(unknown, id)
				continue
			}
			for _, r := range firsts[i] {
				if r.Outcome == store.OutcomePruned {
					pruned = append(pruned, r.EndpointID)
				}
			}
		}
		slices.Sort(pruned)
		return s.pruneEndpoints(ctx, tx, slices.Compact(pruned), at)
	})
	if err != nil {
		return nil, fmt.Errorf("recording results: %w", err)
	}
	return unknown, nil
}

// RecordResultsFunc stores a batch of results in tx (rs: one per
// endpoint, sorted by endpoint id, as store.FirstResults returns them;
// the time at) once per (notification, endpoint), and adds the new ones
// to the notification's counters. It reports false for an unknown
// notification.
type RecordResultsFunc func(ctx context.Context, tx Conn, notificationID string, rs []store.PushResult, at time.Time) (bool, error)

// resultOutcomes are the push outcomes in the order
// recordResultsByOutcome inserts them.
var resultOutcomes = [...]string{store.OutcomeSent, store.OutcomeFailed, store.OutcomePruned}

// ResultService is what deliveries.push_service keeps of a result: its
// push service when it failed or was pruned (a report's delivery health),
// "" (NULL) when it was sent or its service is unknown.
func ResultService(r store.PushResult) string {
	if r.Outcome == store.OutcomeSent {
		return ""
	}
	return r.Service
}

// recordResultsByOutcome is RecordResults' insert without a
// Dialect.RecordResults: the endpoints of each outcome (and, failed or
// pruned, of each push service: ResultService) in one INSERT ... SELECT
// over the list, whose rows changed are the new results, the ones to
// count; then one UPDATE of the counters. On SQLite one statement for the
// whole batch with RETURNING to tell the new rows apart, or one INSERT per
// result, costs twice as much (BenchmarkRecordResults).
func (s *Store) recordResultsByOutcome(ctx context.Context, tx Conn, notificationID string, rs []store.PushResult, at time.Time) (bool, error) {
	var seq int64
	if err := tx.QueryRow(ctx, `SELECT seq FROM notifications WHERE id = $1`, notificationID).Scan(&seq); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return false, nil
		}
		return false, err
	}
	type group struct {
		outcome int // in resultOutcomes
		service string
	}
	groups := map[group][]string{}
	for _, r := range rs {
		g := group{slices.Index(resultOutcomes[:], r.Outcome), ResultService(r)}
		groups[g] = append(groups[g], r.EndpointID)
	}
	var added [len(resultOutcomes)]int64
	for _, g := range slices.SortedFunc(maps.Keys(groups), func(a, b group) int {
		return cmp.Or(cmp.Compare(a.outcome, b.outcome), strings.Compare(a.service, b.service))
	}) {
		// WHERE true: SQLite would read ON CONFLICT as the join's ON.
		n, err := tx.Exec(ctx, `INSERT INTO deliveries (notification_seq, endpoint_id, outcome, at, push_service)
			SELECT $1, value, $2, $3, $5 FROM `+s.d.Elems("$4")+` WHERE true ON CONFLICT DO NOTHING`,
			seq, resultOutcomes[g.outcome], s.time(at), s.d.List(groups[g]), nullString(g.service))
		if err != nil {
			return false, err
		}
		added[g.outcome] += n
	}
	if n := added[0] + added[1] + added[2]; n > 0 {
		if _, err := tx.Exec(ctx, `UPDATE notifications SET recipients = recipients + $2, processed = processed + $2,
			sent = sent + $3, failed = failed + $4, pruned = pruned + $5 WHERE seq = $1`,
			seq, n, added[0], added[1], added[2]); err != nil {
			return false, err
		}
	}
	return true, nil
}

// pruneEndpoints deletes the endpoints the push service reported gone (ids
// sorted: PostgreSQL locks the rows in that order), recording their
// removals first (the stats' history), and marks subscribers left without
// any unsubscribed.
func (s *Store) pruneEndpoints(ctx context.Context, tx Conn, ids []string, at time.Time) error {
	if len(ids) == 0 {
		return nil
	}
	if err := s.recordRemovals(ctx, tx, at, s.d.In("id", "$2"), s.d.List(ids)); err != nil {
		return err
	}
	rows, err := tx.Query(ctx, `DELETE FROM endpoints WHERE `+s.d.In("id", "$1")+` RETURNING subscriber_id`, s.d.List(ids))
	subs, err := CollectRows(rows, err, func(id *string) []any { return []any{id} })
	if err != nil || len(subs) == 0 {
		return err
	}
	slices.Sort(subs)
	return s.markUnsubscribedIfEmpty(ctx, tx, slices.Compact(subs), at)
}

// SoleShardDone finishes a send whose shards fan-out expanded in the
// intent's handler (one person's, or a few named people's, whatever the
// number of shards): one conditional UPDATE (still sending, without
// waves) sets every shard counted and the status sent, returning the
// counters the notification.sent event carries, and adds that event
// (addEvent) when it changed the row; of concurrent calls exactly one
// does. The shard tasks get no notification_shards rows: such a send
// publishes none, and a stray ShardDone of a finished send changes
// nothing that shows.
func (s *Store) SoleShardDone(ctx context.Context, notificationID string, at time.Time) (bool, error) {
	t := nowOr(at)
	var finished bool
	err := s.db.Tx(ctx, TxOptions{}, func(tx Conn) error {
		finished = false
		var websiteID string
		d := store.NotificationSent{NotificationID: notificationID}
		err := tx.QueryRow(ctx, `UPDATE notifications SET shards_done = $3, status = 'sent', finished_at = $2
			WHERE id = $1 AND status = 'sending' AND waves = 0
			RETURNING website_id, recipients, sent, failed, pruned`, notificationID, s.time(t), store.Shards).
			Scan(&websiteID, &d.Recipients, &d.Sent, &d.Failed, &d.Pruned)
		if errors.Is(err, sql.ErrNoRows) {
			var waves int
			if err := tx.QueryRow(ctx, `SELECT waves FROM notifications WHERE id = $1`, notificationID).Scan(&waves); err != nil {
				return err
			}
			if waves > 0 {
				return errors.New("a send in waves has every shard in each wave")
			}
			return nil // finished already, or not sending
		}
		if err != nil {
			return err
		}
		finished = true
		return s.addEvent(ctx, tx, websiteID, store.EventNotificationSent, d, t)
	})
	if err != nil {
		return false, fmt.Errorf("finishing a send expanded in its intent: %w", s.mapErr(err))
	}
	return finished, nil
}

// ShardDone marks one shard of a send done. The call that completes the last
// shard of a sending notification turns it sent, adds its notification.sent
// webhook event in the same transaction, and alone reports finished=true;
// later calls for a finished send report false.
//
// The finishing UPDATE is conditional (status still sending, every shard
// counted): on PostgreSQL, of concurrent calls, the first to take the row
// lock changes it, and the others, re-checking the condition on the changed
// row, don't; so exactly one adds the event.
func (s *Store) ShardDone(ctx context.Context, notificationID string, shard int, at time.Time) (bool, error) {
	t := nowOr(at)
	var finished bool
	err := s.db.Tx(ctx, TxOptions{}, func(tx Conn) error {
		finished = false
		var waves int
		if err := tx.QueryRow(ctx, `SELECT waves FROM notifications WHERE id = $1`, notificationID).Scan(&waves); err != nil {
			return err
		}
		if tasks := max(waves, 1) * store.Shards; shard < 0 || shard >= tasks {
			return fmt.Errorf("shard task %d out of range [0, %d)", shard, tasks)
		}
		n, err := tx.Exec(ctx, `INSERT INTO notification_shards (notification_id, shard, done_at)
			VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`, notificationID, shard, s.time(t))
		if err != nil {
			return err
		}
		if n > 0 {
			if _, err := tx.Exec(ctx, `UPDATE notifications SET shards_done = shards_done + 1 WHERE id = $1`,
				notificationID); err != nil {
				return err
			}
		}
		// Also on a repeated shard: a send whose shards all finished before
		// it was marked sending completes on the next report. Every shard
		// counted is shards_done >= max(waves, 1) * Shards, written as two
		// comparisons (SQLite's max is PostgreSQL's greatest).
		n, err = tx.Exec(ctx, `UPDATE notifications SET status = 'sent', finished_at = $2
			WHERE id = $1 AND status = 'sending' AND shards_done >= waves * $3 AND shards_done >= $3`,
			notificationID, s.time(t), store.Shards)
		if err != nil || n == 0 {
			return err
		}
		// The call that finishes the send, and only it, adds the event.
		finished = true
		return s.addNotificationSent(ctx, tx, notificationID, t)
	})
	if err != nil {
		return false, fmt.Errorf("marking shard done: %w", s.mapErr(err))
	}
	return finished, nil
}
