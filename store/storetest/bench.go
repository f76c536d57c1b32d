package storetest

import (
	"context"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/cputime"
	"github.com/relaybell/relaybell/store"
)

// The benchmarks below are shared by every store so their figures compare.
// A store's own benchmark file opens the store, loads the audience its
// fastest way (SeedRows), and adds variants only it has.

// BenchWebsite is the website the benchmarks use.
const BenchWebsite = "bench-website"

// BenchSetup creates BenchWebsite in an empty store.
func BenchSetup(b testing.TB, s store.Store) {
	b.Helper()
	acc := store.Account{ID: "bench-account", OwnerEmail: "o@example.com"}
	web := store.Website{ID: BenchWebsite, AccountID: acc.ID, ProjectID: "prj", Name: "bench", URL: "https://example.com", Timezone: "UTC"}
	if err := s.CreateWebsite(context.Background(), acc, web, store.APIKey{ID: "k", Hash: "h"}); err != nil {
		b.Fatal(err)
	}
}

// SeedRow is one subscriber of the benchmark audience with its endpoint, at
// the sizes of a real FCM subscription.
type SeedRow struct {
	SubscriberID string
	ExternalID   string // every tenth: "user-<i>"
	Tags         []byte // JSON
	Shard        int
	EndpointID   string
	URL          string
	P256dh       string
	Auth         string
	UserAgent    string
	Country      string
	Language     string
	Device       string
	At           time.Time // creation and last visit: one a millisecond, the first row oldest
}

// Seed attributes every row shares (beyond the SeedRow fields).
const (
	SeedTimezone = "Europe/Paris"
	SeedPageURL  = "https://example.com/pricing"
)

// The seed's countries, languages and devices, given to rows in turn; every
// second row has a "city" label of 40 values, every tenth also "plan": "pro"
// and a reserved label.
var (
	seedCountries = strings.Fields("FR US DE GB ES IT NL BE CA BR IN JP PL SE CH AT PT IE DK NO FI MX AR AU NZ")
	seedLanguages = strings.Fields("fr en-US de en-GB es it nl fr-BE en-CA pt-BR hi ja pl sv de-CH de-AT pt en da nb fi es-MX es-AR en-AU en-NZ")
	seedDevices   = []string{"desktop", "android", "ios", "mobile"}
)

var seedStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// SeedRows returns n rows of the benchmark audience of BenchWebsite.
func SeedRows(n int) []SeedRow {
	rows := make([]SeedRow, n)
	for i := range rows {
		sub := uuid.NewString()
		r := SeedRow{
			SubscriberID: sub,
			Tags:         []byte("{}"),
			Shard:        store.ShardOf(sub),
			EndpointID:   uuid.NewString(),
			URL:          "https://fcm.googleapis.com/fcm/send/" + uuid.NewString() + ":APA91b" + hex.EncodeToString([]byte(uuid.NewString() + uuid.NewString()))[:100],
			P256dh:       "BNcRdreALRFXTkOOUHK1EtK2wtaz5Ry4YfYCA_0QTpQtUbVlUls0VJXg7A8u-Ts1XbjhazAkj7I99e8QcYP7DkM",
			Auth:         "tBHItJI5svbpez7KI4CCXg",
			UserAgent:    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/124.0 Safari/537.36",
		}
		r.Country, r.Language = seedCountries[i%len(seedCountries)], seedLanguages[i%len(seedLanguages)]
		r.Device, r.At = seedDevices[i%len(seedDevices)], seedStart.Add(time.Duration(i)*time.Millisecond)
		switch city := `"city":"city-` + strconv.Itoa(i%40) + `"`; {
		case i%10 == 0:
			r.ExternalID = "user-" + strconv.Itoa(i)
			r.Tags = []byte(`{"plan":"pro",` + city + `,"rb_source":"import"}`)
		case i%2 == 0:
			r.Tags = []byte(`{` + city + `}`)
		}
		rows[i] = r
	}
	return rows
}

// WalkAudience reads every shard of BenchWebsite in pages of 2000 (the
// fan-out's page size), as fan-out does for one send (a lean walk when
// lean, store.AudienceQuery's Lean), and returns how many recipients it
// read.
func WalkAudience(b *testing.B, s store.Store, lean bool) int {
	n := 0
	for shard := range store.Shards {
		q := store.AudienceQuery{WebsiteID: BenchWebsite, Shard: shard, Limit: 2000, Lean: lean}
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

// BenchWalk measures WalkAudience over an audience of total recipients.
func BenchWalk(b *testing.B, s store.Store, total int, lean bool) {
	b.ReportAllocs()
	for b.Loop() {
		if n := WalkAudience(b, s, lean); n != total {
			b.Fatalf("walked %d recipients, want %d", n, total)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*total), "ns/recipient")
}

// BenchAudience runs the audience benchmarks over a store seeded with
// SeedRows(total): the whole walk, pages of different shards read at once
// (several fan-out workers), and a send to 100 named users.
func BenchAudience(b *testing.B, s store.Store, total int) {
	ctx := context.Background()
	b.Run("all", func(b *testing.B) { BenchWalk(b, s, total, false) })
	b.Run("all-lean", func(b *testing.B) { BenchWalk(b, s, total, true) })
	b.Run("page-parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for shard := 0; pb.Next(); shard++ {
				page, err := s.Audience(ctx, store.AudienceQuery{WebsiteID: BenchWebsite, Shard: shard % store.Shards, Limit: 500})
				if err != nil || len(page) != 500 {
					b.Errorf("page of %d, err %v", len(page), err)
					return
				}
			}
		})
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*500), "ns/recipient")
	})
	b.Run("external-ids", func(b *testing.B) {
		ids := make([]string, 100)
		for i := range ids {
			ids[i] = "user-" + strconv.Itoa(i*(total/1000)*10)
		}
		b.ReportAllocs()
		for b.Loop() {
			n := 0
			for shard := range store.Shards {
				page, err := s.Audience(ctx, store.AudienceQuery{WebsiteID: BenchWebsite, Shard: shard, Limit: 500, ExternalIDs: ids})
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

// BenchResults returns batch i of 500 results for distinct endpoints: 95%
// sent, 4% failed, 1% pruned (of endpoints that are not stored, so pruning
// costs its statements but deletes nothing).
func BenchResults(i int, out []store.PushResult) []store.PushResult {
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

// BenchSpreadResults returns batch i of 500 results as a pusher's
// recorder writes them in a broadcast: the outcomes of BenchResults, for
// endpoints whose ids start with each of the 16 hex digits, on four shards
// (four per batch, 64 in all). Stored, they make about 90 runs of the push
// ledger (shard, first character, outcome), of about 5 ids each.
func BenchSpreadResults(i int, out []store.PushResult) []store.PushResult {
	out = BenchResults(i, out)
	for j := range out {
		out[j].EndpointID = fmt.Sprintf("%x%07x", j%16, i) + out[j].EndpointID[8:]
		out[j].Shard = 4*(i%16) + j%4
	}
	return out
}

// RecordFunc records a batch of results; the store's RecordResults, or an
// alternative a store's benchmark measures against it.
type RecordFunc func(ctx context.Context, notificationID string, results []store.PushResult) error

// BenchRecordResults records new 500-result batches of one send with
// record, batch i made by results (BenchResults, BenchSpreadResults), and
// checks every result was counted.
func BenchRecordResults(b *testing.B, s store.Store, record RecordFunc, results func(i int, out []store.PushResult) []store.PushResult) {
	ctx := context.Background()
	n := store.Notification{WebsiteID: BenchWebsite, Status: store.StatusSending}
	if err := s.CreateNotification(ctx, &n); err != nil {
		b.Fatal(err)
	}
	batch := make([]store.PushResult, 0, 500)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		batch = results(i, batch)
		i++
		if err := record(ctx, n.ID, batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*500), "ns/result")
	got, err := s.NotificationByID(ctx, n.ID)
	if err != nil || got.Processed != int64(i*500) {
		b.Fatalf("processed %d, want %d (err %v)", got.Processed, i*500, err)
	}
}

// BenchReplay records the same batch again and again: a redone batch whose
// results are all duplicates.
func BenchReplay(b *testing.B, s store.Store) {
	ctx := context.Background()
	n := store.Notification{WebsiteID: BenchWebsite, Status: store.StatusSending}
	if err := s.CreateNotification(ctx, &n); err != nil {
		b.Fatal(err)
	}
	batch := BenchResults(0, nil)
	if err := recordResults(s, ctx, n.ID, batch); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := recordResults(s, ctx, n.ID, batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*500), "ns/result")
}

// BenchParallelSends records batches of different sends at once, as several
// pushers do.
func BenchParallelSends(b *testing.B, s store.Store) {
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		n := store.Notification{WebsiteID: BenchWebsite, Status: store.StatusSending}
		if err := s.CreateNotification(ctx, &n); err != nil {
			b.Error(err)
			return
		}
		batch := make([]store.PushResult, 0, 500)
		for i := 0; pb.Next(); i++ {
			batch = BenchResults(i, batch)
			if err := recordResults(s, ctx, n.ID, batch); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*500), "ns/result")
}

// PeopleBenchSize is the audience of audiencebench.People: RELAYBELL_BENCH_PEOPLE,
// default 100,000 (the note of issue 4 gives the 1,000,000 figures).
func PeopleBenchSize(b *testing.B) int {
	if v := os.Getenv("RELAYBELL_BENCH_PEOPLE"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 100 {
			b.Fatalf("RELAYBELL_BENCH_PEOPLE=%q: want a number of at least 100", v)
		}
		return n
	}
	return 100_000
}

// BenchSubscribe registers new browsers from about 32 goroutines at once,
// as the SDK route does under a wave of visitors, each registration
// counting as a visit: "separate" learns the visit in a transaction of its
// own after the registration (as the API did before SubscriptionInput.Visit),
// "visit" in the registration's. Each variant gets a new store from open.
func BenchSubscribe(b *testing.B, open func(testing.TB) store.Store) {
	ctx := context.Background()
	for _, bc := range []struct {
		name     string
		separate bool
	}{{"separate", true}, {"visit", false}} {
		b.Run(bc.name, func(b *testing.B) {
			s := open(b)
			b.ReportAllocs()
			b.ResetTimer()
			b.SetParallelism(max(1, 32/runtime.GOMAXPROCS(0)))
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					in := subscription(BenchWebsite)
					in.Visit = store.VisitWeight
					if bc.separate {
						in.Visit = 0
					}
					res, err := s.UpsertSubscription(ctx, in)
					if err == nil && bc.separate {
						err = s.LearnActivity(ctx, res.SubscriberID, in.At, store.VisitWeight)
					}
					if err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchRegisterAgain registers browsers already known again, as the SDK
// does on every page view (each as its person, each a visit), in
// batches of 1 (UpsertSubscription) and of 16 (UpsertSubscriptions, as
// the API's batcher does under load), from an audience of 20,000, four
// in five named by an external id. It reports the process's CPU per
// registration: the embedded store's checkpoints are in it, a server's
// work (PostgreSQL's) is not.
func BenchRegisterAgain(b *testing.B, open func(testing.TB) store.Store) {
	ctx := context.Background()
	for _, size := range []int{1, 16} {
		b.Run("batch="+strconv.Itoa(size), func(b *testing.B) {
			s := open(b)
			audience := make([]store.SubscriptionInput, 20_000)
			for i := range audience {
				in := subscription(BenchWebsite)
				in.Visit, in.SiteTimezone = store.VisitWeight, "UTC"
				if i%5 != 0 {
					in.ExternalID = "person-" + strconv.Itoa(i)
				}
				audience[i] = in
			}
			for chunk := range slices.Chunk(audience, 500) {
				if _, err := s.UpsertSubscriptions(ctx, chunk); err != nil {
					b.Fatal(err)
				}
			}
			rng := rand.New(rand.NewPCG(1, 2))
			batch := make([]store.SubscriptionInput, size)
			b.ReportAllocs()
			cpu := cputime.Process()
			registered := 0
			for b.Loop() {
				for i := range batch {
					batch[i] = audience[rng.IntN(len(audience))]
					batch[i].At = time.Now()
				}
				var err error
				if size == 1 {
					_, err = s.UpsertSubscription(ctx, batch[0])
				} else {
					_, err = s.UpsertSubscriptions(ctx, batch)
				}
				if err != nil {
					b.Fatal(err)
				}
				registered += size
			}
			b.ReportMetric(float64((cputime.Process()-cpu).Microseconds())/float64(registered), "cpu-µs/registration")
		})
	}
}

// BenchTriggerOneAutomation starts runs of one automation from about 32
// goroutines at once, as the API nodes do when a popular event (a cart
// updated) triggers it for many people: each run is a different person of
// people (subscribers of BenchWebsite), with three messages.
func BenchTriggerOneAutomation(b *testing.B, s store.Store, people []string) {
	ctx := context.Background()
	a := store.Automation{ID: uuid.NewString(), WebsiteID: BenchWebsite, Name: "Cart", Status: store.AutomationActive,
		TriggerType: "event", Definition: []byte(`{"trigger":{"type":"event","event":"cart.updated"}}`),
		CreatedAt: time.Now(), UpdatedAt: time.Now()}
	if err := s.CreateAutomation(ctx, a); err != nil {
		b.Fatal(err)
	}
	var next atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.SetParallelism(max(1, 32/runtime.GOMAXPROCS(0)))
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := next.Add(1)
			_, err := s.TriggerAutomation(ctx, store.AutomationTrigger{WebsiteID: BenchWebsite, AutomationID: a.ID,
				SubscriberID: people[int(i)%len(people)], RunID: uuid.NewString(), Restart: true,
				Delays: []time.Duration{0, 20 * time.Second, 40 * time.Second}, At: time.Now().Add(time.Hour)})
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "triggers/s")
	got, err := s.Automation(ctx, BenchWebsite, a.ID)
	if err != nil || got.Stats.Triggered != int64(b.N) {
		b.Fatalf("triggered %d of %d: %v", got.Stats.Triggered, b.N, err)
	}
}
