package sqlite

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/store"
)

const benchWebsite = "bench-website"

// benchStore opens a store with one website.
func benchStore(b *testing.B) *Store {
	b.Helper()
	s, err := Open(context.Background(), filepath.Join(b.TempDir(), "bench.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	acc := store.Account{ID: "bench-account", OwnerEmail: "o@example.com"}
	web := store.Website{ID: benchWebsite, AccountID: acc.ID, ProjectID: "prj", Name: "bench", URL: "https://example.com", Timezone: "UTC"}
	if err := s.CreateWebsite(context.Background(), acc, web, store.APIKey{ID: "k", Hash: "h"}); err != nil {
		b.Fatal(err)
	}
	return s
}

// seedAudience inserts n subscribers with one endpoint each, every tenth
// with an external id, in one transaction (UpsertSubscription would take
// minutes for 100k).
func seedAudience(b *testing.B, s *Store, n int) {
	b.Helper()
	ctx := context.Background()
	at := ms(time.Now())
	err := s.write(ctx, func(tx wtx) error {
		subStmt, err := tx.tx.PrepareContext(ctx, `INSERT INTO subscribers (id, website_id, external_id, country, language,
			timezone, url, tags, shard, created_at, last_seen_at) VALUES (?, ?, ?, 'FR', 'fr', 'Europe/Paris',
			'https://example.com/pricing', ?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		epStmt, err := tx.tx.PrepareContext(ctx, `INSERT INTO endpoints (id, website_id, subscriber_id, url, p256dh, auth,
			device, user_agent, shard, created_at, last_seen_at) VALUES (?, ?, ?, ?, ?, ?, 'desktop', ?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		for i := range n {
			sub := uuid.NewString()
			shard := store.ShardOf(sub)
			var ext any
			tags := "{}"
			if i%10 == 0 {
				ext = "user-" + strconv.Itoa(i)
				tags = `{"plan":"pro","rb_source":"import"}`
			}
			if _, err := subStmt.ExecContext(ctx, sub, benchWebsite, ext, tags, shard, at, at); err != nil {
				return err
			}
			// Sizes of a real FCM subscription.
			url := "https://fcm.googleapis.com/fcm/send/" + uuid.NewString() + ":APA91b" + hex.EncodeToString([]byte(uuid.NewString() + uuid.NewString()))[:100]
			if _, err := epStmt.ExecContext(ctx, uuid.NewString(), benchWebsite, sub, url,
				"BNcRdreALRFXTkOOUHK1EtK2wtaz5Ry4YfYCA_0QTpQtUbVlUls0VJXg7A8u-Ts1XbjhazAkj7I99e8QcYP7DkM",
				"tBHItJI5svbpez7KI4CCXg", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/124.0 Safari/537.36",
				shard, at, at); err != nil {
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

// BenchmarkAudience walks the whole audience of a 100k-endpoint website,
// shard by shard, in pages of 500: what fan-out does for one send.
func BenchmarkAudience(b *testing.B) {
	s := benchStore(b)
	const total = 100_000
	seedAudience(b, s, total)
	ctx := context.Background()
	b.Run("all", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			n := 0
			for shard := range store.Shards {
				q := store.AudienceQuery{WebsiteID: benchWebsite, Shard: shard, Limit: 500}
				for {
					page, err := s.Audience(ctx, q)
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
	// The same walk over a copy of endpoints laid out as an ordinary rowid
	// table with a (website_id, shard, id) index, rows in arrival order as
	// subscriptions come: a lookup of a random row per endpoint.
	b.Run("all-unclustered", func(b *testing.B) {
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
				q := store.AudienceQuery{WebsiteID: benchWebsite, Shard: shard, Limit: 500}
				for {
					rows, err := s.r.query(ctx, query, q.WebsiteID, q.Shard, q.AfterID, q.Limit)
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
	// Pages of different shards read at once, as several fan-out workers do.
	b.Run("page-parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			shard := 0
			for pb.Next() {
				page, err := s.Audience(ctx, store.AudienceQuery{WebsiteID: benchWebsite, Shard: shard % store.Shards, Limit: 500})
				if err != nil || len(page) != 500 {
					b.Fatalf("page of %d, err %v", len(page), err)
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
// new, and a replayed batch (all duplicates). by-outcome is the
// implementation (one INSERT ... SELECT FROM json_each per outcome); it is
// measured against one INSERT for the whole batch with RETURNING to tell
// the new rows apart (returning), and one prepared INSERT per result
// (stmt-loop).
func BenchmarkRecordResults(b *testing.B) {
	for _, impl := range []struct {
		name   string
		record func(s *Store, ctx context.Context, id string, rs []store.PushResult) error
	}{
		{"by-outcome", (*Store).RecordResults},
		{"returning", (*Store).recordResultsReturning},
		{"stmt-loop", (*Store).recordResultsLoop},
	} {
		b.Run(impl.name, func(b *testing.B) {
			s := benchStore(b)
			ctx := context.Background()
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
