package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/analytics"
	"github.com/relaybell/relaybell/events"
	"github.com/relaybell/relaybell/store"
	"github.com/relaybell/relaybell/store/storetest"
)

// lookupCounter counts the person lookups and people-version reads that
// reach the store; without the version (noVersion) every read of it fails
// without a statement, so events.Service reads PersonRefs for every batch,
// as it did before the people cache.
type lookupCounter struct {
	*Store
	noVersion        bool
	lookups, version int
}

func (c *lookupCounter) PersonRefs(ctx context.Context, websiteID string, keys []string) (map[string]store.PersonRef, error) {
	c.lookups++
	return c.Store.PersonRefs(ctx, websiteID, keys)
}

func (c *lookupCounter) PeopleVersion(ctx context.Context) (int64, error) {
	if c.noVersion {
		return 0, errors.New("no people version")
	}
	c.version++
	return c.Store.PeopleVersion(ctx)
}

// noLog is an event log that keeps nothing.
type noLog struct{}

func (noLog) RecordBehaviors(context.Context, []analytics.Behavior) error { return nil }

// BenchmarkTrackPeople tracks events one after the other (a batch of one
// each, as under light load) naming 200 people by external id through
// events.Service over PostgreSQL: "views" page views alone, "mix" with a
// third naming a product (an interest upserted). It reports per event: the person lookups (PersonRefs) and
// people-version reads that reached the store, and the CPU of the store's
// PostgreSQL backends (pg-cpu-µs/event). "uncached" is the path before the
// people cache (a lookup per batch), "cached" the path with it (a version
// read per batch, a lookup only for a person not cached).
func BenchmarkTrackPeople(b *testing.B) {
	ctx := context.Background()
	const people = 200
	for _, bc := range []struct {
		cached, products bool
	}{{false, false}, {true, false}, {false, true}, {true, true}} {
		cached, name := bc.cached, "uncached"
		if cached {
			name = "cached"
		}
		if bc.products {
			name += "/mix"
		} else {
			name += "/views"
		}
		b.Run(name, func(b *testing.B) {
			s, app := benchStoreAs(b, "trackbench")
			for i := range people {
				if _, err := s.UpsertSubscription(ctx, store.SubscriptionInput{WebsiteID: storetest.BenchWebsite,
					Endpoint: "https://push.example/p-" + strconv.Itoa(i), P256dh: "BP256", Auth: "auth",
					ExternalID: "p-" + strconv.Itoa(i), At: time.Now()}); err != nil {
					b.Fatal(err)
				}
			}
			// The planner's statistics of a table this small are what
			// autovacuum would have made of a large one: without them it
			// scans the website's subscribers for each key.
			if _, err := s.pool.Exec(ctx, `ANALYZE subscribers`); err != nil {
				b.Fatal(err)
			}
			st := &lookupCounter{Store: s, noVersion: !cached}
			svc := events.New(st, noLog{}, nil, nil, events.Config{})
			site := store.Website{ID: storetest.BenchWebsite}
			input := func(i int) events.Input {
				props := fmt.Sprintf(`{"path":"/p/%d"}`, i)
				if bc.products && i%3 == 0 {
					props = fmt.Sprintf(`{"productId":"sku-%d"}`, i%40)
				}
				return events.Input{Website: site, Name: "page.viewed", ExternalID: "p-" + strconv.Itoa(i%people),
					Addressed: true, Properties: json.RawMessage(props), Source: events.SourceServer, At: time.Now()}
			}
			for i := range people { // every person seen once
				if _, err := svc.Track(ctx, input(i)); err != nil {
					b.Fatal(err)
				}
			}
			st.lookups, st.version = 0, 0
			before := backendCPU(b, s, app)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				ans, err := svc.Track(ctx, input(i))
				if err != nil || ans.SubscriberID == nil {
					b.Fatalf("Track: %+v %v", ans, err)
				}
			}
			b.StopTimer()
			n := float64(b.N)
			b.ReportMetric(float64(st.lookups)/n, "lookups/event")
			b.ReportMetric(float64(st.version)/n, "version-reads/event")
			b.ReportMetric(float64((backendCPU(b, s, app)-before).Microseconds())/n, "pg-cpu-µs/event")
		})
	}
}

// BenchmarkAttribute finds and credits the sends of a batch of 16
// conversions of 16 people (each with a few sends delivered within the
// window, every third with one clicked): "alone" one LastInteraction and
// one insert of the credit per conversion, as events.Service did for a
// lone conversion, "one" an Attribute of one conversion for each, as it does
// now for a lone one, and "batch" one Attribute for the batch, as it does
// now for a batch of one website. It reports
// the statements per batch and the CPU of the store's PostgreSQL backends
// per conversion (pg-cpu-µs/conversion).
func BenchmarkAttribute(b *testing.B) {
	ctx := context.Background()
	const people, sends, perBatch = 256, 20, 16
	for _, name := range []string{"alone", "one", "batch"} {
		b.Run(name, func(b *testing.B) {
			s, app := benchStoreAs(b, "sendsbench")
			subs, now := seedConversions(b, s, people, sends)
			since := now.Add(-7 * 24 * time.Hour)
			batch := func(i int) []store.Attribution {
				qs := make([]store.Attribution, perBatch)
				for j := range qs {
					qs[j] = store.Attribution{EventID: uuid.NewString(), SubscriberID: subs[(i*perBatch+j)%people], Since: since, At: now, Value: 1}
				}
				return qs
			}
			statements := 0
			before := backendCPU(b, s, app)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				qs := batch(i)
				found := 0
				if name == "alone" {
					for _, q := range qs {
						id, clicked, err := s.LastInteraction(ctx, storetest.BenchWebsite, q.SubscriberID, q.Since)
						if err != nil {
							b.Fatal(err)
						}
						// The credit's insert as it was.
						if _, err := s.DB().Write().Exec(ctx, `INSERT INTO conversion_credits (event_id, notification_id, value, clicked, at)
							SELECT $1, id, $3, $4, $5 FROM notifications WHERE id = $2 AND website_id = $6
							ON CONFLICT (event_id) DO NOTHING`, q.EventID, id, q.Value, clicked, q.At, storetest.BenchWebsite); err != nil {
							b.Fatal(err)
						}
						statements += 2
						found++
					}
				} else {
					calls := [][]store.Attribution{qs}
					if name == "one" {
						calls = slices.Collect(slices.Chunk(qs, 1))
					}
					for _, c := range calls {
						got, err := s.Attribute(ctx, storetest.BenchWebsite, c)
						if err != nil {
							b.Fatal(err)
						}
						statements++
						for _, g := range got {
							if g.NotificationID != "" {
								found++
							}
						}
					}
				}
				if found != perBatch {
					b.Fatalf("found %d sends of %d", found, perBatch)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(statements)/float64(b.N), "statements/batch")
			b.ReportMetric(float64((backendCPU(b, s, app)-before).Microseconds())/float64(b.N*perBatch), "pg-cpu-µs/conversion")
		})
	}
}

// seedConversions subscribes people people of the bench website, each with
// deliveries of four of sends notifications and a third with a click, and
// returns their subscriber ids and the time it took as now.
func seedConversions(b *testing.B, s *Store, people, sends int) ([]string, time.Time) {
	b.Helper()
	ctx := context.Background()
	now := time.Now()
	ns := make([]store.Notification, sends)
	for i := range ns {
		ns[i] = store.Notification{WebsiteID: storetest.BenchWebsite, Status: store.StatusSent, Title: "Sale"}
		if err := s.CreateNotification(ctx, &ns[i]); err != nil {
			b.Fatal(err)
		}
	}
	subs := make([]string, people)
	for i := range subs {
		res, err := s.UpsertSubscription(ctx, store.SubscriptionInput{WebsiteID: storetest.BenchWebsite,
			Endpoint: "https://push.example/p-" + strconv.Itoa(i), P256dh: "BP256", Auth: "auth",
			ExternalID: "p-" + strconv.Itoa(i), At: now})
		if err != nil {
			b.Fatal(err)
		}
		subs[i] = res.SubscriberID
		for j := range 4 {
			if _, err := s.RecordInteraction(ctx, storetest.BenchWebsite, ns[(i+j)%sends].ID, res.EndpointID,
				store.InteractionDelivered, now.Add(-time.Duration(j+1)*time.Hour), nil); err != nil {
				b.Fatal(err)
			}
		}
		if i%3 == 0 {
			if _, err := s.RecordInteraction(ctx, storetest.BenchWebsite, ns[i%sends].ID, res.EndpointID,
				store.InteractionClicked, now.Add(-30*time.Minute), nil); err != nil {
				b.Fatal(err)
			}
		}
	}
	if _, err := s.pool.Exec(ctx, `ANALYZE`); err != nil {
		b.Fatal(err)
	}
	return subs, now
}

// BenchmarkEventWrites: what concurrent events write to PostgreSQL beside
// their log entries, in a batch of the local cluster's shape at 3,000
// events a second (a write gathers about 3 ms of an API node's events: a
// conversion and two product interests), written apart (the interests'
// upsert, then the credit's statement, each committed alone: the two
// batchers before stop 63) or together (WriteEvents: one pipeline, one
// commit). PostgreSQL's CPU and the wall time per batch:
//
//	go test ./store/postgres/ -run '^$' -bench BenchmarkEventWrites -benchtime 3000x -count 2
func BenchmarkEventWrites(b *testing.B) {
	ctx := context.Background()
	const people, sends, credits, interests = 256, 20, 1, 2
	for _, name := range []string{"apart", "together"} {
		b.Run(name, func(b *testing.B) {
			s, app := benchStoreAs(b, "eventwritesbench")
			subs, now := seedConversions(b, s, people, sends)
			since := now.Add(-7 * 24 * time.Hour)
			batch := func(i int) store.EventWrites {
				w := store.EventWrites{Credits: map[string][]store.Attribution{}}
				for j := range credits {
					w.Credits[storetest.BenchWebsite] = append(w.Credits[storetest.BenchWebsite], store.Attribution{EventID: uuid.NewString(),
						SubscriberID: subs[(i*credits+j)%people], Since: since, At: now, Value: 1})
				}
				for j := range interests {
					w.Interests = append(w.Interests, store.ProductInterest{WebsiteID: storetest.BenchWebsite,
						SubscriberID: subs[(i*interests+j+7)%people], ProductID: "sku-" + strconv.Itoa((i+j)%500),
						Kind: store.InterestPriceDrop, CreatedAt: now})
				}
				return w
			}
			before := backendCPU(b, s, app)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				w := batch(i)
				credited := 0
				if name == "apart" {
					if err := s.AddInterests(ctx, w.Interests); err != nil {
						b.Fatal(err)
					}
					got, err := s.Attribute(ctx, storetest.BenchWebsite, w.Credits[storetest.BenchWebsite])
					if err != nil {
						b.Fatal(err)
					}
					for _, g := range got {
						if g.NotificationID != "" {
							credited++
						}
					}
				} else {
					got, err := s.WriteEvents(ctx, w)
					if err != nil {
						b.Fatal(err)
					}
					credited = len(got[storetest.BenchWebsite])
				}
				if credited != credits {
					b.Fatalf("%d of %d conversions credited", credited, credits)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64((backendCPU(b, s, app)-before).Microseconds())/float64(b.N), "pg-cpu-µs/batch")
		})
	}
}
