package sqlite

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/relaybell/relaybell/audience/audiencebench"
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
		storetest.BenchWalk(b, s, total, false)
	})
}

// BenchmarkRecordResults records 500-result batches of one send, each batch
// new: ledger's batches make 3 runs of the push ledger (one bucket, three
// outcomes), ledger-spread's about 90, as a broadcast's recorder writes
// do (storetest.BenchSpreadResults). replay records one batch again and
// again (all duplicates).
func BenchmarkRecordResults(b *testing.B) {
	b.Run("ledger", func(b *testing.B) {
		s := benchStore(b)
		storetest.BenchRecordResults(b, s, s.RecordResults, storetest.BenchResults)
	})
	b.Run("ledger-spread", func(b *testing.B) {
		s := benchStore(b)
		storetest.BenchRecordResults(b, s, s.RecordResults, storetest.BenchSpreadResults)
	})
	b.Run("replay", func(b *testing.B) { storetest.BenchReplay(b, benchStore(b)) })
}

// BenchmarkSubscribe runs storetest's registrations, with the visit
// learned in a transaction of its own and in the registration's.
func BenchmarkSubscribe(b *testing.B) {
	storetest.BenchSubscribe(b, func(tb testing.TB) store.Store { return benchStore(tb) })
}

// BenchmarkRegisterAgain runs storetest's known browsers registering
// again, one by one and in batches.
func BenchmarkRegisterAgain(b *testing.B) {
	storetest.BenchRegisterAgain(b, func(tb testing.TB) store.Store { return benchStore(tb) })
}

// BenchmarkPeople runs the audience-view benchmarks (audiencebench.People)
// (RELAYBELL_BENCH_PEOPLE subscribers, default 100,000).
func BenchmarkPeople(b *testing.B) {
	s := benchStore(b)
	total := storetest.PeopleBenchSize(b)
	seedAudience(b, s, total)
	audiencebench.People(b, s, total)
}
