package postgres

import (
	"context"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/relaybell/relaybell/store"
)

// The benchmarks mirror store/sqlite/sqlite_bench_test.go (same data, same
// walks, same batches) so the two stores can be compared.

const benchWebsite = "bench-website"

// benchStore opens a store in a schema of its own with one website.
func benchStore(b *testing.B) *Store {
	b.Helper()
	s := openTest(b)
	acc := store.Account{ID: "bench-account", OwnerEmail: "o@example.com"}
	web := store.Website{ID: benchWebsite, AccountID: acc.ID, ProjectID: "prj", Name: "bench", URL: "https://example.com", Timezone: "UTC"}
	if err := s.CreateWebsite(context.Background(), acc, web, store.APIKey{ID: "k", Hash: "h"}); err != nil {
		b.Fatal(err)
	}
	return s
}

// seedAudience loads n subscribers with one endpoint each, every tenth with
// an external id, with COPY, in arrival order (endpoint ids random).
func seedAudience(b *testing.B, s *Store, n int) {
	b.Helper()
	ctx := context.Background()
	at := now(time.Now())
	subs := make([][]any, 0, n)
	eps := make([][]any, 0, n)
	for i := range n {
		sub := uuid.NewString()
		shard := store.ShardOf(sub)
		var ext any
		tags := []byte("{}")
		if i%10 == 0 {
			ext = "user-" + strconv.Itoa(i)
			tags = []byte(`{"plan":"pro","rb_source":"import"}`)
		}
		subs = append(subs, []any{sub, benchWebsite, ext, "FR", "fr", "Europe/Paris", "https://example.com/pricing",
			tags, shard, at, at})
		// Sizes of a real FCM subscription.
		url := "https://fcm.googleapis.com/fcm/send/" + uuid.NewString() + ":APA91b" + hex.EncodeToString([]byte(uuid.NewString() + uuid.NewString()))[:100]
		eps = append(eps, []any{uuid.NewString(), benchWebsite, sub, url,
			"BNcRdreALRFXTkOOUHK1EtK2wtaz5Ry4YfYCA_0QTpQtUbVlUls0VJXg7A8u-Ts1XbjhazAkj7I99e8QcYP7DkM",
			"tBHItJI5svbpez7KI4CCXg", "desktop", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/124.0 Safari/537.36",
			shard, at, at})
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
	if _, err := s.pool.Exec(ctx, "VACUUM ANALYZE subscribers, endpoints"); err != nil {
		b.Fatal(err)
	}
}

// walkAudience walks every shard of the bench website in pages of 500.
func walkAudience(b *testing.B, s *Store) int {
	n := 0
	for shard := range store.Shards {
		q := store.AudienceQuery{WebsiteID: benchWebsite, Shard: shard, Limit: 500}
		for {
			page, err := s.Audience(context.Background(), q)
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
	return n
}

// BenchmarkAudience walks the whole audience of a 100k-endpoint website,
// shard by shard, in pages of 500: what fan-out does for one send.
func BenchmarkAudience(b *testing.B) {
	s := benchStore(b)
	const total = 100_000
	seedAudience(b, s, total)
	ctx := context.Background()
	walk := func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if n := walkAudience(b, s); n != total {
				b.Fatalf("walked %d recipients, want %d", n, total)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*total), "ns/recipient")
	}
	// Rows in arrival order, as subscriptions come: a heap fetch from a
	// random page per endpoint.
	b.Run("all", walk)
	// Pages of different shards read at once, as several fan-out workers do.
	b.Run("page-parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			shard := 0
			for pb.Next() {
				page, err := s.Audience(ctx, store.AudienceQuery{WebsiteID: benchWebsite, Shard: shard % store.Shards, Limit: 500})
				if err != nil || len(page) != 500 {
					b.Errorf("page of %d, err %v", len(page), err)
					return
				}
				shard++
			}
		})
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*500), "ns/recipient")
	})
	// A send to 100 named users among the 100k.
	b.Run("external-ids", func(b *testing.B) {
		ids := make([]string, 100)
		for i := range ids {
			ids[i] = "user-" + strconv.Itoa(i*970)
		}
		b.ReportAllocs()
		for b.Loop() {
			n := 0
			for shard := range store.Shards {
				page, err := s.Audience(ctx, store.AudienceQuery{WebsiteID: benchWebsite, Shard: shard, Limit: 500, ExternalIDs: ids})
				if err != nil {
					b.Fatal(err)
				}
				n += len(page)
			}
			if n != len(ids) {
				b.Fatalf("found %d recipients, want %d", n, len(ids))
			}
		}
	})
	// The same walk once the table is rewritten in audience order (CLUSTER,
	// an operator's maintenance step, not something the store does).
	b.Run("all-clustered", func(b *testing.B) {
		if _, err := s.pool.Exec(ctx, "CLUSTER endpoints USING endpoints_audience"); err != nil {
			b.Fatal(err)
		}
		if _, err := s.pool.Exec(ctx, "ANALYZE endpoints"); err != nil {
			b.Fatal(err)
		}
		walk(b)
	})
}

// benchSuffixes are the last 12 hex digits of the endpoint ids in a batch.
var benchSuffixes = func() []string {
	out := make([]string, 500)
	for j := range out {
		out[j] = fmt.Sprintf("%012x", j)
	}
	return out
}()

// benchResults returns batch i of 500 results for distinct endpoints: 95%
// sent, 4% failed, 1% pruned (of endpoints that are not stored, so pruning
// costs its statements but deletes nothing).
func benchResults(i int, out []store.PushResult) []store.PushResult {
	out = out[:0]
	prefix := fmt.Sprintf("%08x-0000-4000-8000-", i)
	for j, suffix := range benchSuffixes {
		outcome := store.OutcomeSent
		switch {
		case j%100 == 0:
			outcome = store.OutcomePruned
		case j%25 == 0:
			outcome = store.OutcomeFailed
		}
		out = append(out, store.PushResult{EndpointID: prefix + suffix, Outcome: outcome})
	}
	return out
}

// BenchmarkRecordResults records 500-result batches of one send, each batch
// new, and a replayed batch (all duplicates). one-statement is the
// implementation (INSERT over unnest RETURNING, counted in the same
// statement); it is measured with a foreign key from deliveries to
// notifications, which the schema leaves out (one-statement-fk), and against
// returning-to-client (the INSERT's
// RETURNING rows read and counted in Go, then an UPDATE of the counters).
func BenchmarkRecordResults(b *testing.B) {
	for _, impl := range []struct {
		name   string
		record func(s *Store, ctx context.Context, id string, rs []store.PushResult) error
	}{
		{"one-statement", (*Store).RecordResults},
		{"one-statement-fk", (*Store).RecordResults},
		{"returning-to-client", (*Store).recordResultsClient},
	} {
		b.Run(impl.name, func(b *testing.B) {
			s := benchStore(b)
			ctx := context.Background()
			if strings.HasSuffix(impl.name, "-fk") {
				if _, err := s.pool.Exec(ctx, `ALTER TABLE deliveries ADD FOREIGN KEY (notification_seq)
					REFERENCES notifications (seq) ON DELETE CASCADE`); err != nil {
					b.Fatal(err)
				}
			}
			n := store.Notification{WebsiteID: benchWebsite, Status: store.StatusSending}
			if err := s.CreateNotification(ctx, &n); err != nil {
				b.Fatal(err)
			}
			batch := make([]store.PushResult, 0, 500)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				batch = benchResults(i, batch)
				i++
				if err := impl.record(s, ctx, n.ID, batch); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*500), "ns/result")
			got, err := s.NotificationByID(ctx, n.ID)
			if err != nil || got.Processed != int64(i*500) {
				b.Fatalf("processed %d, want %d (err %v)", got.Processed, i*500, err)
			}
		})
	}
	b.Run("replay", func(b *testing.B) {
		s := benchStore(b)
		ctx := context.Background()
		n := store.Notification{WebsiteID: benchWebsite, Status: store.StatusSending}
		if err := s.CreateNotification(ctx, &n); err != nil {
			b.Fatal(err)
		}
		batch := benchResults(0, nil)
		if err := s.RecordResults(ctx, n.ID, batch); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if err := s.RecordResults(ctx, n.ID, batch); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*500), "ns/result")
	})
	// Batches of different sends recorded at once, as several pushers do.
	b.Run("parallel", func(b *testing.B) {
		s := benchStore(b)
		ctx := context.Background()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			n := store.Notification{WebsiteID: benchWebsite, Status: store.StatusSending}
			if err := s.CreateNotification(ctx, &n); err != nil {
				b.Error(err)
				return
			}
			batch := make([]store.PushResult, 0, 500)
			for i := 0; pb.Next(); i++ {
				batch = benchResults(i, batch)
				if err := s.RecordResults(ctx, n.ID, batch); err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*500), "ns/result")
	})
}

// recordResultsClient is the returning-to-client alternative: the INSERT's
// RETURNING rows come back to Go, which counts them and updates the
// counters in a second statement.
func (s *Store) recordResultsClient(ctx context.Context, notificationID string, results []store.PushResult) error {
	ids, outcomes := make([]string, len(results)), make([]string, len(results))
	var pruned []string
	for i, r := range results {
		ids[i], outcomes[i] = r.EndpointID, r.Outcome
		if r.Outcome == store.OutcomePruned {
			pruned = append(pruned, r.EndpointID)
		}
	}
	at := now(time.Time{})
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var seq int64
		if err := tx.QueryRow(ctx, `SELECT seq FROM notifications WHERE id = $1`, notificationID).Scan(&seq); err != nil {
			return mapErr(err)
		}
		rows, err := tx.Query(ctx, `INSERT INTO deliveries (notification_seq, endpoint_id, outcome, at)
			SELECT $1, r.endpoint_id, r.outcome, $4 FROM unnest($2::text[], $3::text[]) AS r (endpoint_id, outcome)
			ON CONFLICT DO NOTHING RETURNING outcome`, seq, ids, outcomes, at)
		if err != nil {
			return err
		}
		var added [3]int64
		var outcome string
		_, err = pgx.ForEachRow(rows, []any{&outcome}, func() error {
			switch outcome {
			case store.OutcomeSent:
				added[0]++
			case store.OutcomeFailed:
				added[1]++
			case store.OutcomePruned:
				added[2]++
			}
			return nil
		})
		if err != nil {
			return err
		}
		if n := added[0] + added[1] + added[2]; n > 0 {
			if _, err := tx.Exec(ctx, `UPDATE notifications SET recipients = recipients + $2, processed = processed + $2,
				sent = sent + $3, failed = failed + $4, pruned = pruned + $5 WHERE seq = $1`,
				seq, n, added[0], added[1], added[2]); err != nil {
				return err
			}
		}
		return pruneEndpoints(ctx, tx, pruned, at)
	})
}
