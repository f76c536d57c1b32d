package sqlite

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/relaybell/relaybell/store"
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
				r.Language, storetest.SeedTimezone, storetest.SeedPageURL, string(r.Tags), r.Shard, ms(r.At), ms(r.At)); err != nil {
				return err
			}
			if _, err := epStmt.ExecContext(ctx, r.EndpointID, storetest.BenchWebsite, r.SubscriberID, r.URL, r.P256dh, r.Auth,
				r.Device, r.UserAgent, r.Shard, ms(r.At), ms(r.At)); err != nil {
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
		ctx := context.Background()
		for _, q := range []string{
			`CREATE TABLE IF NOT EXISTS endpoints_heap AS SELECT * FROM endpoints ORDER BY random()`,
			`CREATE INDEX IF NOT EXISTS endpoints_heap_audience ON endpoints_heap (website_id, shard, id)`,
			`PRAGMA wal_checkpoint(TRUNCATE)`,
		} {
			if _, err := s.w.db.ExecContext(ctx, q); err != nil {
				b.Fatal(err)
			}
		}
		query := strings.Replace(audienceQuery, "FROM endpoints e", "FROM endpoints_heap e", 1)
		b.ReportAllocs()
		for b.Loop() {
			n := 0
			for shard := range store.Shards {
				q := store.AudienceQuery{WebsiteID: storetest.BenchWebsite, Shard: shard, Limit: 500}
				for {
					rows, err := s.r.query(ctx, query, q.WebsiteID, q.Shard, q.AfterID, q.Limit, "")
					if err != nil {
						b.Fatal(err)
					}
					page, err := scanRecipients(rows, q, q.Limit)
					if err != nil {
						b.Fatal(err)
					}
					n += len(page)
					if len(page) < q.Limit {
						break
					}
					q.AfterID = page[len(page)-1].Endpoint.ID
				}
			}
			if n != total {
				b.Fatalf("walked %d recipients, want %d", n, total)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*total), "ns/recipient")
	})
}

// BenchmarkRecordResults records 500-result batches of one send, each batch
// new, and a replayed batch (all duplicates). by-outcome is the
// implementation (one INSERT ... SELECT FROM json_each per outcome); it is
// measured against one INSERT for the whole batch with RETURNING to tell
// the new rows apart (returning), and one prepared INSERT per result
// (stmt-loop).
func BenchmarkRecordResults(b *testing.B) {
	for _, impl := range []struct {
		name   string
		record func(s *Store) storetest.RecordFunc
	}{
		{"by-outcome", func(s *Store) storetest.RecordFunc { return s.RecordResults }},
		{"returning", func(s *Store) storetest.RecordFunc { return s.recordResultsReturning }},
		{"stmt-loop", func(s *Store) storetest.RecordFunc { return s.recordResultsLoop }},
	} {
		b.Run(impl.name, func(b *testing.B) {
			s := benchStore(b)
			storetest.BenchRecordResults(b, s, impl.record(s))
		})
	}
	b.Run("replay", func(b *testing.B) { storetest.BenchReplay(b, benchStore(b)) })
}

// recordResultsReturning is the returning alternative: the whole batch as a
// JSON array of [endpointId, outcome] pairs in one INSERT, whose RETURNING
// rows are the new results.
func (s *Store) recordResultsReturning(ctx context.Context, notificationID string, results []store.PushResult) error {
	pairs := make([][2]string, len(results))
	var pruned []string
	for i, r := range results {
		pairs[i] = [2]string{r.EndpointID, r.Outcome}
		if r.Outcome == store.OutcomePruned {
			pruned = append(pruned, r.EndpointID)
		}
	}
	batch, err := json.Marshal(pairs)
	if err != nil {
		return err
	}
	prunedList, err := json.Marshal(pruned)
	if err != nil {
		return err
	}
	at := ms(time.Now())
	return s.write(ctx, func(tx wtx) error {
		var seq int64
		if err := tx.queryRow(`SELECT seq FROM notifications WHERE id = ?`, notificationID).Scan(&seq); err != nil {
			return notFound(err)
		}
		rows, err := tx.query(`INSERT OR IGNORE INTO deliveries (notification_seq, endpoint_id, outcome, at)
			SELECT ?1, value ->> 0, value ->> 1, ?2 FROM json_each(?3)
			RETURNING outcome`, seq, at, string(batch))
		if err != nil {
			return err
		}
		var added [len(outcomes)]int64
		for rows.Next() {
			var outcome string
			if err := rows.Scan(&outcome); err != nil {
				rows.Close()
				return err
			}
			switch outcome {
			case store.OutcomeSent:
				added[0]++
			case store.OutcomeFailed:
				added[1]++
			case store.OutcomePruned:
				added[2]++
			}
		}
		if err := rows.Close(); err != nil {
			return err
		}
		if n := added[0] + added[1] + added[2]; n > 0 {
			if _, err := tx.exec(addCountersQuery, seq, n, added[0], added[1], added[2]); err != nil {
				return err
			}
		}
		if len(pruned) == 0 {
			return nil
		}
		return pruneEndpoints(tx, string(prunedList), at)
	})
}

// recordResultsLoop is the stmt-loop alternative: one prepared INSERT OR
// IGNORE per result.
func (s *Store) recordResultsLoop(ctx context.Context, notificationID string, results []store.PushResult) error {
	at := ms(time.Now())
	var pruned []string
	for _, r := range results {
		if r.Outcome == store.OutcomePruned {
			pruned = append(pruned, r.EndpointID)
		}
	}
	prunedList, err := json.Marshal(pruned)
	if err != nil {
		return err
	}
	return s.write(ctx, func(tx wtx) error {
		var seq int64
		if err := tx.queryRow(`SELECT seq FROM notifications WHERE id = ?`, notificationID).Scan(&seq); err != nil {
			return notFound(err)
		}
		var added [len(outcomes)]int64
		for _, r := range results {
			res, err := tx.exec(`INSERT OR IGNORE INTO deliveries (notification_seq, endpoint_id, outcome, at)
				VALUES (?, ?, ?, ?)`, seq, r.EndpointID, r.Outcome, at)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n == 0 {
				continue
			}
			switch r.Outcome {
			case store.OutcomeSent:
				added[0]++
			case store.OutcomeFailed:
				added[1]++
			case store.OutcomePruned:
				added[2]++
			}
		}
		if n := added[0] + added[1] + added[2]; n > 0 {
			if _, err := tx.exec(addCountersQuery, seq, n, added[0], added[1], added[2]); err != nil {
				return err
			}
		}
		if len(pruned) == 0 {
			return nil
		}
		return pruneEndpoints(tx, string(prunedList), at)
	})
}

// BenchmarkSubscribe runs storetest's registrations, with the visit
// learned in a transaction of its own and in the registration's.
func BenchmarkSubscribe(b *testing.B) {
	storetest.BenchSubscribe(b, func(tb testing.TB) store.Store { return benchStore(tb) })
}

// BenchmarkPeople runs storetest's audience-view benchmarks
// (RELAYBELL_BENCH_PEOPLE subscribers, default 100,000).
func BenchmarkPeople(b *testing.B) {
	s := benchStore(b)
	total := storetest.PeopleBenchSize(b)
	seedAudience(b, s, total)
	storetest.BenchPeople(b, s, total)
}
