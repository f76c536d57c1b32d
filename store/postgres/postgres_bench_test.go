package postgres

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/relaybell/relaybell/audience/audiencebench"
	"github.com/relaybell/relaybell/store"
	"github.com/relaybell/relaybell/store/storetest"
)

// The shared benchmarks are storetest's, so the figures compare with
// store/sqlite's; this file loads the data PostgreSQL's way and adds the
// variants only PostgreSQL has.

// benchStore opens a store in a schema of its own with storetest's bench
// website.
func benchStore(b testing.TB) *Store {
	b.Helper()
	s := openTest(b)
	storetest.BenchSetup(b, s)
	return s
}

// benchStoreAs is benchStore on connections named for the benchmark
// (application_name, a prefix and a random suffix), so that backendCPU
// reads its PostgreSQL backends' CPU; it returns the name.
func benchStoreAs(b testing.TB, prefix string) (*Store, string) {
	b.Helper()
	app := prefix + "-" + uuid.NewString()[:8]
	s := openAt(b, testSchema(b)+"&application_name="+app)
	storetest.BenchSetup(b, s)
	return s, app
}

// seedAudience loads storetest.SeedRows(n) with COPY, in arrival order
// (endpoint ids random).
func seedAudience(b testing.TB, s *Store, n int) {
	b.Helper()
	seedRows(b, s, storetest.SeedRows(n))
}

// seedRows loads rows with COPY, in their order.
func seedRows(b testing.TB, s *Store, rows []storetest.SeedRow) {
	b.Helper()
	ctx := context.Background()
	subs := make([][]any, 0, len(rows))
	eps := make([][]any, 0, len(rows))
	for _, r := range rows {
		var ext any
		if r.ExternalID != "" {
			ext = r.ExternalID
		}
		subs = append(subs, []any{r.SubscriberID, storetest.BenchWebsite, ext, r.Country, r.Language,
			storetest.SeedTimezone, storetest.SeedPageURL, r.Tags, r.Shard, r.At, r.At})
		eps = append(eps, []any{r.EndpointID, storetest.BenchWebsite, r.SubscriberID, r.URL, r.P256dh, r.Auth,
			r.Device, r.UserAgent, r.Shard, r.At, r.At})
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"subscribers"}, []string{"id", "website_id", "external_id", "country",
			"language", "timezone", "url", "tags", "shard", "created_at", "last_seen_at"}, pgx.CopyFromRows(subs)); err != nil {
			return err
		}
		_, err := tx.CopyFrom(ctx, pgx.Identifier{"endpoints"}, []string{"id", "website_id", "subscriber_id", "url", "p256dh",
			"auth", "device", "user_agent", "shard", "created_at", "last_seen_at"}, pgx.CopyFromRows(eps))
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, "VACUUM ANALYZE subscribers, endpoints, subscriber_labels"); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkAudience runs storetest's audience benchmarks over 100k
// endpoints in arrival order (a heap fetch from a random page per
// endpoint), then the walk once the table is rewritten in audience order
// (CLUSTER, an operator's maintenance step, not something the store does).
func BenchmarkAudience(b *testing.B) {
	s, app := benchStoreAs(b, "audiencebench")
	const total = 100_000
	seedAudience(b, s, total)
	storetest.BenchAudience(b, s, total)
	for _, lean := range []bool{false, true} {
		name := "all-pg-cpu"
		if lean {
			name = "all-lean-pg-cpu"
		}
		b.Run(name, func(b *testing.B) {
			before := backendCPU(b, s, app)
			storetest.BenchWalk(b, s, total, lean)
			b.ReportMetric(float64((backendCPU(b, s, app)-before).Microseconds())/float64(b.N*total), "pg-cpu-µs/recipient")
		})
	}
	b.Run("all-clustered", func(b *testing.B) {
		ctx := context.Background()
		for _, q := range []string{"CLUSTER endpoints USING endpoints_audience", "ANALYZE endpoints"} {
			if _, err := s.pool.Exec(ctx, q); err != nil {
				b.Fatal(err)
			}
		}
		storetest.BenchWalk(b, s, total, false)
	})
}

// BenchmarkRecordResults records 500-result batches of one send, each batch
// new: ledger's batches make 3 runs of the push ledger (one bucket, three
// outcomes), ledger-spread's about 90, as a broadcast's recorder writes
// do (storetest.BenchSpreadResults). replay records one batch again and
// again (all duplicates), and parallel batches of different sends
// at once, as several pushers do. ledger and ledger-spread report the CPU
// of the store's PostgreSQL backends per result too.
func BenchmarkRecordResults(b *testing.B) {
	for _, c := range []struct {
		name    string
		results func(int, []store.PushResult) []store.PushResult
	}{{"ledger", storetest.BenchResults}, {"ledger-spread", storetest.BenchSpreadResults}} {
		b.Run(c.name, func(b *testing.B) {
			s, app := benchStoreAs(b, "recordbench")
			before := backendCPU(b, s, app)
			storetest.BenchRecordResults(b, s, s.RecordResults, c.results)
			b.ReportMetric(float64((backendCPU(b, s, app)-before).Microseconds())/float64(b.N*500), "pg-cpu-µs/result")
		})
	}
	b.Run("replay", func(b *testing.B) { storetest.BenchReplay(b, benchStore(b)) })
	b.Run("parallel", func(b *testing.B) { storetest.BenchParallelSends(b, benchStore(b)) })
}

// BenchmarkSubscribe runs storetest's registrations, with the visit
// learned in a transaction of its own and in the registration's.
func BenchmarkSubscribe(b *testing.B) {
	storetest.BenchSubscribe(b, func(tb testing.TB) store.Store { return benchStore(tb) })
}

// BenchmarkRegisterAgain runs storetest's known browsers registering
// again, one by one and in batches (the CPU reported is this process's,
// not PostgreSQL's).
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
