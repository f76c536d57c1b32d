package sqlite

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/relaybell/relaybell/audience/audiencebench"
	"github.com/relaybell/relaybell/store"
	"github.com/relaybell/relaybell/store/sqlstore"
	"github.com/relaybell/relaybell/store/storetest"
)

// benchStore opens a store with storetest's bench website.
func benchStore(b testing.TB) *Store {
	b.Helper()
	s, err := Open(context.Background(), filepath.Join(b.TempDir(), "bench.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	storetest.BenchSetup(b, s)
	return s
}

// seedAudience loads storetest.SeedRows(n) in one transaction
// (UpsertSubscription would take minutes for 100k).
func seedAudience(b *testing.B, s *Store, n int) {
	b.Helper()
	ctx := context.Background()
	err := s.write(ctx, func(tx wtx) error {
		subStmt, err := tx.tx.PrepareContext(ctx, `INSERT INTO subscribers (id, website_id, external_id, country, language,
			timezone, url, tags, shard, created_at, last_seen_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		epStmt, err := tx.tx.PrepareContext(ctx, `INSERT INTO endpoints (id, website_id, subscriber_id, url, p256dh, auth,
			device, user_agent, shard, created_at, last_seen_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		for _, r := range storetest.SeedRows(n) {
			var ext any
			if r.ExternalID != "" {
				ext = r.ExternalID
			}
			if _, err := subStmt.ExecContext(ctx, r.SubscriberID, storetest.BenchWebsite, ext, r.Country,
				r.Language, storetest.SeedTimezone, storetest.SeedPageURL, string(r.Tags), r.Shard, r.At.UnixMilli(), r.At.UnixMilli()); err != nil {
				return err
			}
			if _, err := epStmt.ExecContext(ctx, r.EndpointID, storetest.BenchWebsite, r.SubscriberID, r.URL, r.P256dh, r.Auth,
				r.Device, r.UserAgent, r.Shard, r.At.UnixMilli(), r.At.UnixMilli()); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := s.w.exec(ctx, "ANALYZE"); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkAudience runs storetest's audience benchmarks over 100k
// endpoints, and the same walk over endpoints laid out as an ordinary rowid
// table (all-unclustered), against the table clustered by (website_id,
// shard, id) that the schema uses.
func BenchmarkAudience(b *testing.B) {
	s := benchStore(b)
	const total = 100_000
	seedAudience(b, s, total)
	storetest.BenchAudience(b, s, total)
	b.Run("all-unclustered", func(b *testing.B) {
		// The same rows in random order in an ordinary rowid table, with an
		// index for the walk, in the place of endpoints while it runs.
		ctx := context.Background()
		exec := func(queries ...string) {
			for _, q := range queries {
				if _, err := s.w.db.ExecContext(ctx, q); err != nil {
					b.Fatal(err)
				}
			}
		}
		exec(`CREATE TABLE IF NOT EXISTS endpoints_heap AS SELECT * FROM endpoints ORDER BY random()`,
			`CREATE INDEX IF NOT EXISTS endpoints_heap_audience ON endpoints_heap (website_id, shard, id)`,
			`ALTER TABLE endpoints RENAME TO endpoints_clustered`,
			`ALTER TABLE endpoints_heap RENAME TO endpoints`,
			`PRAGMA wal_checkpoint(TRUNCATE)`)
		defer exec(`ALTER TABLE endpoints RENAME TO endpoints_heap`, `ALTER TABLE endpoints_clustered RENAME TO endpoints`)
		storetest.BenchWalk(b, s, total)
	})
}

// BenchmarkRecordResults records 500-result batches of one send, each batch
// new, and a replayed batch (all duplicates). by-outcome is the
// implementation (one INSERT ... SELECT FROM json_each per outcome); it is
// measured against one INSERT for the whole batch with RETURNING to tell
// the new rows apart (returning), and one prepared INSERT per result
// (stmt-loop), each as the store's Dialect.RecordResults.
func BenchmarkRecordResults(b *testing.B) {
	for _, impl := range []struct {
		name   string
		record sqlstore.RecordResultsFunc
	}{
		{"by-outcome", nil},
		{"returning", recordResultsReturning},
		{"stmt-loop", recordResultsLoop},
	} {
		b.Run(impl.name, func(b *testing.B) {
			s := benchStore(b)
			d := dialect
			d.RecordResults = impl.record
			storetest.BenchRecordResults(b, s, sqlstore.New(s.DB(), d, nil).RecordResults)
		})
	}
	b.Run("replay", func(b *testing.B) { storetest.BenchReplay(b, benchStore(b)) })
}

// recordResultsReturning is the returning alternative: the whole batch as a
// JSON array of [endpointId, outcome] pairs in one INSERT, whose RETURNING
// rows are the new results.
func recordResultsReturning(ctx context.Context, tx sqlstore.Conn, notificationID string, rs []store.PushResult, at time.Time) (bool, error) {
	pairs := make([][2]string, len(rs))
	for i, r := range rs {
		pairs[i] = [2]string{r.EndpointID, r.Outcome}
	}
	batch, err := json.Marshal(pairs)
	if err != nil {
		return false, err
	}
	return recordCounted(ctx, tx, notificationID, func(seq int64, added map[string]int64) error {
		rows, err := tx.Query(ctx, `INSERT OR IGNORE INTO deliveries (notification_seq, endpoint_id, outcome, at)
			SELECT $1, value ->> 0, value ->> 1, $2 FROM json_each($3)
			RETURNING outcome`, seq, at.UnixMilli(), string(batch))
		if err != nil {
			return err
		}
		defer rows.Close()
		var outcome string
		for rows.Next() {
			if err := rows.Scan(&outcome); err != nil {
				return err
			}
			added[outcome]++
		}
		return rows.Err()
	})
}

// recordResultsLoop is the stmt-loop alternative: one prepared INSERT OR
// IGNORE per result.
func recordResultsLoop(ctx context.Context, tx sqlstore.Conn, notificationID string, rs []store.PushResult, at time.Time) (bool, error) {
	return recordCounted(ctx, tx, notificationID, func(seq int64, added map[string]int64) error {
		for _, r := range rs {
			n, err := tx.Exec(ctx, `INSERT OR IGNORE INTO deliveries (notification_seq, endpoint_id, outcome, at)
				VALUES ($1, $2, $3, $4)`, seq, r.EndpointID, r.Outcome, at.UnixMilli())
			if err != nil {
				return err
			}
			added[r.Outcome] += n
		}
		return nil
	})
}

// recordCounted looks the send's seq up, has insert store the batch and
// count the new results of each outcome, and adds them to the counters.
func recordCounted(ctx context.Context, tx sqlstore.Conn, notificationID string, insert func(seq int64, added map[string]int64) error) (bool, error) {
	var seq int64
	if err := tx.QueryRow(ctx, `SELECT seq FROM notifications WHERE id = $1`, notificationID).Scan(&seq); err != nil {
		return false, err
	}
	added := map[string]int64{}
	if err := insert(seq, added); err != nil {
		return false, err
	}
	sent, failed, pruned := added[store.OutcomeSent], added[store.OutcomeFailed], added[store.OutcomePruned]
	_, err := tx.Exec(ctx, `UPDATE notifications SET recipients = recipients + $2, processed = processed + $2,
		sent = sent + $3, failed = failed + $4, pruned = pruned + $5 WHERE seq = $1`,
		seq, sent+failed+pruned, sent, failed, pruned)
	return true, err
}

// BenchmarkSubscribe runs storetest's registrations, with the visit
// learned in a transaction of its own and in the registration's.
func BenchmarkSubscribe(b *testing.B) {
	storetest.BenchSubscribe(b, func(tb testing.TB) store.Store { return benchStore(tb) })
}

// BenchmarkPeople runs the audience-view benchmarks (audiencebench.People)
// (RELAYBELL_BENCH_PEOPLE subscribers, default 100,000).
func BenchmarkPeople(b *testing.B) {
	s := benchStore(b)
	total := storetest.PeopleBenchSize(b)
	seedAudience(b, s, total)
	audiencebench.People(b, s, total)
}
