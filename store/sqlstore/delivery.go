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
	"unicode/utf8"

	"github.com/relaybell/relaybell/store"
)

var _ store.Delivery = (*Store)(nil)

// LedgerQuery reads the push ledger's runs of a send ($1: its id) that
// meet rows ranges of endpoint ids, four arguments a range from $2 on: a
// shard, the range's first and last ids, and the end of the last id's
// bucket (ledgerBucketEnd). For each range it reads one range of the
// ledger's key: the shard's runs whose last id is from the first id up to
// the end of the last's bucket, less those that start after the last. A
// run never leaves its bucket, so no run past that bound can meet the
// range; the read follows the batch's own stretch of each shard, whatever
// the send's size (TestLedgerReadIsBounded, TestQueryPlans). The send's seq, the ledger's key, comes from its row in
// the same statement: an unknown send has no runs. It answers each run's
// shard and ids.
//
// The shards of a recorder's write are read in one statement (they were
// one statement each, four to five a write in a broadcast's recording:
// docs/scale-out.md, "A broadcast's statements"). rows is a power of two
// (padRows): ranges past the shards read are empty (shard -1, ids from ""
// to before "": no run meets them), so that the statement has a few
// texts, each planned a few times on a connection, not one text a count.
func LedgerQuery(rows int) string {
	reads := make([]string, rows)
	for i := range reads {
		n := 4*i + 2
		// A read of its own a shard, each the one read of LedgerQuery(1):
		// joined to a VALUES list instead, PostgreSQL may hash the list
		// against a scan of the whole ledger (TestLedgerReadIsBounded).
		reads[i] = fmt.Sprintf(`SELECT l.shard, l.endpoints FROM notifications n JOIN push_ledger l ON l.notification_seq = n.seq
	WHERE n.id = $1 AND l.shard = $%d AND l.last_endpoint >= $%d AND l.last_endpoint < $%d AND l.first_endpoint <= $%d`, n, n+1, n+3, n+2)
	}
	return strings.Join(reads, "\nUNION ALL\n")
}

// ledgerQueries are LedgerQuery's texts for 1, 2, 4, ... store.Shards rows.
var ledgerQueries = func() map[int]string {
	m := map[int]string{}
	for rows := 1; rows <= store.Shards; rows *= 2 {
		m[rows] = LedgerQuery(rows)
	}
	return m
}()

// ledgerBucket is the push ledger's bucket of an endpoint id: its first
// character. A run holds ids of one bucket.
func ledgerBucket(id string) string {
	_, n := utf8.DecodeRuneInString(id)
	return id[:n]
}

// ledgerBucketEnd is the least string after every id of id's bucket: the
// bucket's character, one up.
func ledgerBucketEnd(id string) string {
	r, _ := utf8.DecodeRuneInString(id)
	if r == utf8.RuneError || r >= utf8.MaxRune {
		return string(utf8.MaxRune)
	}
	return string(r + 1)
}

// Undelivered returns, in input order, the endpoint ids that have no
// recorded result for the notification: no run of the push ledger holds
// them.
func (s *Store) Undelivered(ctx context.Context, notificationID string, endpoints []store.ShardEndpoint) ([]string, error) {
	if len(endpoints) == 0 {
		return nil, nil
	}
	ids := make([]string, len(endpoints))
	for i, e := range endpoints {
		ids[i] = e.ID
	}
	done, err := s.ledgerRecorded(ctx, s.db.Read(), notificationID, endpoints)
	if err != nil {
		return nil, fmt.Errorf("checking deliveries: %w", err)
	}
	return store.Without(ids, done), nil
}

// ledgerRecorded returns which of the endpoints have a result of the send
// in the push ledger: each shard's runs that meet the range of the
// endpoints' ids in that shard (LedgerQuery), up to store.Shards shards a
// read.
func (s *Store) ledgerRecorded(ctx context.Context, c Conn, notificationID string, endpoints []store.ShardEndpoint) (map[string]struct{}, error) {
	groups := byShard(endpoints)
	mine := make(map[int]map[string]struct{}, len(groups))
	for shard, ids := range groups {
		mine[shard] = make(map[string]struct{}, len(ids))
		for _, id := range ids {
			mine[shard][id] = struct{}{}
		}
	}
	recorded := make(map[string]struct{})
	for chunk := range slices.Chunk(slices.Sorted(maps.Keys(groups)), store.Shards) {
		rows := padRows(len(chunk), store.Shards)
		args := make([]any, 0, 1+4*rows)
		args = append(args, notificationID)
		for i := range rows {
			if i >= len(chunk) { // padding: the empty range ["", "") meets no run
				args = append(args, -1, "", "", "")
				continue
			}
			ids := groups[chunk[i]]
			lo, hi := slices.Min(ids), slices.Max(ids)
			args = append(args, chunk[i], lo, hi, ledgerBucketEnd(hi))
		}
		runs, err := c.Query(ctx, ledgerQueries[rows], args...)
		if err != nil {
			return nil, err
		}
		var (
			shard  int
			packed string
		)
		for runs.Next() {
			if err := runs.Scan(&shard, &packed); err != nil {
				runs.Close()
				return nil, err
			}
			store.EachPackedEndpoint(packed, func(id string) {
				if _, ok := mine[shard][id]; ok {
					recorded[id] = struct{}{}
				}
			})
		}
		runs.Close()
		if err := runs.Err(); err != nil {
			return nil, err
		}
	}
	return recorded, nil
}

// eachRun calls f with every endpoint id of the ledger's runs rows holds
// (one column, endpoints), and closes rows.
func eachRun(rows Rows, f func(id string)) error {
	defer rows.Close()
	var packed string
	for rows.Next() {
		if err := rows.Scan(&packed); err != nil {
			return err
		}
		store.EachPackedEndpoint(packed, f)
	}
	return rows.Err()
}

// byShard groups endpoint ids by their shard.
func byShard(endpoints []store.ShardEndpoint) map[int][]string {
	out := make(map[int][]string)
	for _, e := range endpoints {
		out[e.Shard] = append(out[e.Shard], e.ID)
	}
	return out
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
// service pruned, all in one transaction (recordResults). An unknown
// notification is store.ErrNotFound. Within a batch the first result of
// an endpoint counts.
func (s *Store) RecordResults(ctx context.Context, notificationID string, results []store.PushResult) error {
	unknown, err := s.RecordAllResults(ctx, map[string][]store.PushResult{notificationID: results})
	if err != nil {
		return err
	}
	if len(unknown) > 0 {
		return fmt.Errorf("recording results: %w", store.ErrNotFound)
	}
	return nil
}

// RecordAllResults stores several sends' results in one transaction, the
// sends in id order, so that two concurrent calls lock the notifications'
// rows in the same order (recordResults); the endpoints pruned are
// deleted once, at the end, in id order.
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
	at := time.Now()
	var unknown []string
	err := s.db.Tx(ctx, TxOptions{}, func(tx Conn) error {
		unknown = unknown[:0]
		var pruned []string
		for i, id := range ids {
			if len(firsts[i]) == 0 {
				continue
			}
			added, found, err := s.recordResults(ctx, tx, id, firsts[i])
			if err != nil {
				return err
			}
			if !found {
				unknown = append(unknown, id)
				continue
			}
			for _, r := range added {
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

// ResultService is what push_ledger.push_service keeps of a result: its
// push service when it failed or was pruned (a report's delivery health),
// "" (NULL) when it was sent or its service is unknown.
func ResultService(r store.PushResult) string {
	if r.Outcome == store.OutcomeSent {
		return ""
	}
	return r.Service
}

// recordResults stores one send's results in tx (rs: one per endpoint,
// sorted by endpoint id, as store.FirstResults returns them) once per
// (notification, endpoint), and adds the new ones to the notification's
// counters. It returns the new results, and false for an unknown
// notification.
//
// It first locks the send's shards that the results are of (ledgerLocks):
// concurrent writes of the same shard's results (a redelivered batch
// racing its first delivery) then run one after the other, and each reads
// what the one before it recorded. The new results are those no run of
// the ledger holds yet (ledgerRecorded). They go to the push ledger as one
// run per shard, bucket, outcome and push service (ResultService), however
// many they are, rowsPerInsert runs a statement (a broadcast's write holds
// tens of runs, of a few ids each); then one UPDATE of the counters, which
// locks the notification's row until the transaction ends. Writes of
// other shards go on meanwhile, and the row, which every write of the
// send and every shard's completion (ShardsDone) updates, is held only from
// that last statement to the commit (it was locked first, for the whole
// transaction, and the pushers' writes and the shards' completions queued
// on it: docs/scale-out.md).
func (s *Store) recordResults(ctx context.Context, tx Conn, notificationID string, rs []store.PushResult) ([]store.PushResult, bool, error) {
	var seq int64
	err := tx.QueryRow(ctx, `SELECT seq FROM notifications WHERE id = $1`, notificationID).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	endpoints := make([]store.ShardEndpoint, len(rs))
	for i, r := range rs {
		endpoints[i] = store.ShardEndpoint{ID: r.EndpointID, Shard: r.Shard}
	}
	if err := s.d.Lock(ctx, tx, ledgerLocks(seq, endpoints)...); err != nil {
		return nil, false, err
	}
	done, err := s.ledgerRecorded(ctx, tx, notificationID, endpoints)
	if err != nil {
		return nil, false, err
	}
	type run struct {
		shard   int
		bucket  string
		outcome int // in resultOutcomes
		service string
	}
	runs := map[run][]string{}
	var added []store.PushResult
	var counts [len(resultOutcomes)]int64
	for _, r := range rs {
		if _, ok := done[r.EndpointID]; ok {
			continue
		}
		added = append(added, r)
		o := slices.Index(resultOutcomes[:], r.Outcome)
		counts[o]++
		k := run{r.Shard, ledgerBucket(r.EndpointID), o, ResultService(r)}
		runs[k] = append(runs[k], r.EndpointID)
	}
	if len(added) == 0 {
		return nil, true, nil
	}
	keys := slices.SortedFunc(maps.Keys(runs), func(a, b run) int {
		return cmp.Or(cmp.Compare(a.shard, b.shard), strings.Compare(a.bucket, b.bucket),
			cmp.Compare(a.outcome, b.outcome), strings.Compare(a.service, b.service))
	})
	for chunk := range slices.Chunk(keys, rowsPerInsert) {
		args := make([]any, 0, len(chunk)*ledgerInsertN)
		for _, k := range chunk {
			ids := runs[k] // sorted, as rs is
			packed, err := store.PackEndpoints(ids)
			if err != nil {
				return nil, false, err
			}
			args = append(args, seq, k.shard, ids[len(ids)-1], ids[0], resultOutcomes[k.outcome], nullString(k.service), len(ids), packed)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO push_ledger
			(notification_seq, shard, last_endpoint, first_endpoint, outcome, push_service, pushes, endpoints)
			VALUES `+valuesList(len(chunk), ledgerInsertN, nil), args...); err != nil {
			return nil, false, err
		}
	}
	if _, err := tx.Exec(ctx, `UPDATE notifications SET recipients = recipients + $2, processed = processed + $2,
		sent = sent + $3, failed = failed + $4, pruned = pruned + $5 WHERE seq = $1`,
		seq, int64(len(added)), counts[0], counts[1], counts[2]); err != nil {
		return nil, false, err
	}
	return added, true, nil
}

// ledgerLocks are the lock keys (Dialect.Lock) of the send's shards that
// the endpoints are in, sorted. A key is the shard's place among every
// send's shards, seq × store.Shards + shard, folded into the negative
// 32-bit keys (the store's other locks are positive): two shards share a
// key only when their sends are 2^31 ÷ store.Shards sends apart, and then
// merely wait for each other.
func ledgerLocks(seq int64, endpoints []store.ShardEndpoint) []int64 {
	keys := make([]int64, 0, len(endpoints))
	for _, e := range endpoints {
		keys = append(keys, -1-(seq*store.Shards+int64(e.Shard))%(1<<31))
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// ledgerInsertN is the number of columns recordResults inserts a run of
// the push ledger with.
const ledgerInsertN = 8

// resultOutcomes are the push outcomes in the order recordResults counts
// and inserts them.
var resultOutcomes = [...]string{store.OutcomeSent, store.OutcomeFailed, store.OutcomePruned}

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

// ShardDone marks one shard of a send done: ShardsDone of one task.
func (s *Store) ShardDone(ctx context.Context, notificationID string, shard int, at time.Time) (bool, error) {
	return s.ShardsDone(ctx, notificationID, []int{shard}, at)
}

// ShardsDone marks shard tasks of a send done. The call that completes the
// last task of a sending notification turns it sent, adds its
// notification.sent webhook event in the same transaction, and alone
// reports finished=true; later calls for a finished send report false.
//
// A task counts once: its notification_shards row is inserted from the
// send's row, only for a task the send has (max(waves, 1) * Shards of
// them), and only new rows add to shards_done, whose UPDATE returns what
// the finishing needs. When no row is new (repeated tasks, an unknown
// send, tasks out of range) the row is read instead. On the usual path
// that is two statements for up to Shards tasks (a send in waves may give
// more: an INSERT each Shards of them): the tasks go as a VALUES list
// padded to a power of two (task -1, which no send has), so that the
// statement has a few texts.
//
// The finishing UPDATE is conditional (status still sending, every shard
// counted): on PostgreSQL, of concurrent calls, the first to take the row
// lock changes it, and the others, re-checking the condition on the changed
// row, don't; so exactly one adds the event. It runs also on a repeated
// shard: a send whose shards all finished before it was marked sending
// completes on the next report.
func (s *Store) ShardsDone(ctx context.Context, notificationID string, shards []int, at time.Time) (bool, error) {
	t := nowOr(at)
	tasks := slices.Compact(slices.Sorted(slices.Values(shards)))
	var finished bool
	err := s.db.Tx(ctx, TxOptions{}, func(tx Conn) error {
		finished = false
		var added int64
		for chunk := range slices.Chunk(tasks, store.Shards) {
			rows := padRows(len(chunk), store.Shards)
			args := make([]any, rows, rows+3)
			for i := range args {
				args[i] = -1 // padding: no send has task -1
				if i < len(chunk) {
					args[i] = chunk[i]
				}
			}
			args = append(args, notificationID, s.time(t), store.Shards)
			// The tasks are $1 to $rows; both engines name a VALUES
			// list's column column1.
			n, err := tx.Exec(ctx, fmt.Sprintf(`INSERT INTO notification_shards (notification_id, shard, done_at)
				SELECT n.id, v.column1, $%[2]d FROM notifications n CROSS JOIN (VALUES %[4]s) AS v
				WHERE n.id = $%[1]d AND v.column1 >= 0 AND (v.column1 < n.waves * $%[3]d OR v.column1 < $%[3]d)
				ON CONFLICT DO NOTHING`, rows+1, rows+2, rows+3, valuesList(rows, 1, map[int]string{0: "INTEGER"})), args...)
			if err != nil {
				return err
			}
			added += n
		}
		var (
			waves, done int
			status      string
			err         error
		)
		if added > 0 {
			err = tx.QueryRow(ctx, `UPDATE notifications SET shards_done = shards_done + $2 WHERE id = $1
				RETURNING waves, shards_done, status`, notificationID, added).Scan(&waves, &done, &status)
		} else {
			err = tx.QueryRow(ctx, `SELECT waves, shards_done, status FROM notifications WHERE id = $1`,
				notificationID).Scan(&waves, &done, &status)
		}
		if err != nil {
			return err
		}
		count := max(waves, 1) * store.Shards
		for _, task := range tasks {
			if task < 0 || task >= count {
				return fmt.Errorf("shard task %d out of range [0, %d)", task, count)
			}
		}
		if status != store.StatusSending || done < count {
			return nil
		}
		n, err := tx.Exec(ctx, `UPDATE notifications SET status = 'sent', finished_at = $2
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
		return false, fmt.Errorf("marking shards done: %w", s.mapErr(err))
	}
	return finished, nil
}
