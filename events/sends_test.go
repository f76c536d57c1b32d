package events

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/analytics"
	"github.com/relaybell/relaybell/automations/enginetest"
	"github.com/relaybell/relaybell/store"
)

// gatedSends holds the first WriteEvents call until gate closes, so that
// the conversions tracked meanwhile gather into one batch, and counts the
// calls crediting each website after it.
type gatedSends struct {
	store.Store
	entered, gate chan struct{}
	once          sync.Once
	mu            sync.Mutex
	calls         map[string]int
}

func (g *gatedSends) WriteEvents(ctx context.Context, w store.EventWrites) (map[string]map[string]store.Interaction, error) {
	first := false
	g.once.Do(func() {
		first = true
		close(g.entered)
		<-g.gate
	})
	if !first {
		g.mu.Lock()
		for websiteID := range w.Credits {
			g.calls[websiteID]++
		}
		g.mu.Unlock()
	}
	return g.Store.WriteEvents(ctx, w)
}

type discardLog struct{}

func (discardLog) RecordBehaviors(context.Context, []analytics.Behavior) error { return nil }

// TestTrackBatchedConversions: conversions tracked while another's
// credit is in flight are credited, in one WriteEvents call, to
// the sends LastInteraction finds for each alone.
func TestTrackBatchedConversions(t *testing.T) {
	ctx := context.Background()
	st := enginetest.OpenSQLite(t)
	now := time.Now().UTC().Truncate(time.Millisecond)
	sites := []store.Website{newShop(t, st), newShop(t, st)}
	type person struct {
		site         store.Website
		external     string
		subscriberID string
		endpointID   string
	}
	var people []person
	for i := range 7 {
		p := person{site: sites[i%2], external: fmt.Sprintf("p-%d", i)}
		res, err := st.UpsertSubscription(ctx, store.SubscriptionInput{WebsiteID: p.site.ID, Endpoint: "https://push.example/" + p.external,
			P256dh: "BP256", Auth: "auth", ExternalID: p.external, At: now})
		if err != nil {
			t.Fatal(err)
		}
		p.subscriberID, p.endpointID = res.SubscriberID, res.EndpointID
		people = append(people, p)
	}
	for _, w := range sites {
		var ns []store.Notification
		for range 3 {
			n := store.Notification{WebsiteID: w.ID, Status: store.StatusSent, Title: "Sale"}
			if err := st.CreateNotification(ctx, &n); err != nil {
				t.Fatal(err)
			}
			ns = append(ns, n)
		}
		for i, p := range people {
			if p.site.ID != w.ID || i == 6 { // person 6: nothing to credit
				continue
			}
			for j, n := range ns {
				kind := store.InteractionDelivered
				if (i+j)%3 == 0 {
					kind = store.InteractionClicked
				}
				if _, err := st.RecordInteraction(ctx, w.ID, n.ID, p.endpointID, kind, now.Add(-time.Duration(i+j)*time.Hour), nil); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	g := &gatedSends{Store: st, entered: make(chan struct{}), gate: make(chan struct{}), calls: map[string]int{}}
	svc := New(g, discardLog{}, nil, nil, Config{})
	answers := make([]Answer, len(people))
	errs := make([]error, len(people))
	var wg sync.WaitGroup
	track := func(i int) {
		wg.Go(func() {
			answers[i], errs[i] = svc.Track(ctx, Input{Website: people[i].site, Name: "purchase", ExternalID: people[i].external,
				Addressed: true, Properties: []byte(`{"value": 5}`), Source: SourceServer, At: now})
		})
	}
	track(0)
	<-g.entered // the first conversion's search is in flight, alone
	for i := 1; i < len(people); i++ {
		track(i)
	}
	for svc.writes.Pending() < len(people)-1 {
		time.Sleep(time.Millisecond)
	}
	close(g.gate)
	wg.Wait()
	credited := 0
	for i, p := range people {
		if errs[i] != nil {
			t.Fatalf("Track of %s: %v", p.external, errs[i])
		}
		var want *Attribution
		id, _, err := st.LastInteraction(ctx, p.site.ID, p.subscriberID, now.Add(-p.site.Settings.Attribution()))
		if err == nil {
			want = &Attribution{NotificationID: id, Value: 5}
		}
		if (answers[i].Attribution == nil) != (want == nil) || want != nil && *answers[i].Attribution != *want {
			t.Fatalf("%s credited %+v, want %+v", p.external, answers[i].Attribution, want)
		}
		if want != nil {
			credited++
		}
	}
	if folded, err := st.FoldConversions(ctx, 100); err != nil || folded != credited {
		t.Fatalf("credits folded %d, %v; want the %d answered", folded, err, credited)
	}
	if want := map[string]int{sites[0].ID: 1, sites[1].ID: 1}; fmt.Sprint(g.calls) != fmt.Sprint(want) {
		t.Fatalf("WriteEvents calls crediting each website %v, want one %v", g.calls, want)
	}
}

// countedWrites counts WriteEvents calls and keeps what each held.
type countedWrites struct {
	store.Store
	mu    sync.Mutex
	calls []store.EventWrites
}

func (c *countedWrites) WriteEvents(ctx context.Context, w store.EventWrites) (map[string]map[string]store.Interaction, error) {
	c.mu.Lock()
	c.calls = append(c.calls, w)
	c.mu.Unlock()
	return c.Store.WriteEvents(ctx, w)
}

// TestTrackCreditAndInterestInOneWrite: a purchase naming a product and a
// person with a delivered send is credited to that send and records the
// person's interest in one store write, and the event logged names the
// send it was credited to.
func TestTrackCreditAndInterestInOneWrite(t *testing.T) {
	ctx := context.Background()
	st := enginetest.OpenSQLite(t)
	now := time.Now().UTC().Truncate(time.Millisecond)
	w := newShop(t, st)
	res := subscribeAnn(t, st, w, now)
	n := store.Notification{WebsiteID: w.ID, Status: store.StatusSent, Title: "Sale"}
	if err := st.CreateNotification(ctx, &n); err != nil {
		t.Fatal(err)
	}
	if _, err := st.RecordInteraction(ctx, w.ID, n.ID, res.EndpointID, store.InteractionDelivered, now.Add(-time.Hour), nil); err != nil {
		t.Fatal(err)
	}
	c := &countedWrites{Store: st}
	log := &signalLog{logged: make(chan struct{})}
	svc := New(c, log, nil, nil, Config{})
	ans, err := svc.Track(ctx, Input{ID: uuid.NewString(), Website: w, Name: "purchase", ExternalID: "ann", Addressed: true,
		Properties: []byte(`{"productId": "sku-1", "value": 12.5}`), Source: SourceServer, At: now})
	if err != nil || ans.Attribution == nil || *ans.Attribution != (Attribution{NotificationID: n.ID, Value: 12.5}) {
		t.Fatalf("Track: %+v, %v; want credited to %s", ans, err, n.ID)
	}
	if len(c.calls) != 1 || len(c.calls[0].Interests) != 1 || len(c.calls[0].Credits[w.ID]) != 1 {
		t.Fatalf("store writes %+v, want one holding the credit and the interest", c.calls)
	}
	got, err := st.Interests(ctx, w.ID, []string{res.SubscriberID}, now.Add(-time.Hour), 10)
	if err != nil || len(got) != 1 || got[0].ProductID != "sku-1" {
		t.Fatalf("interests %+v, %v; want sku-1", got, err)
	}
	if len(log.behaviors) != 1 || log.behaviors[0].NotificationID != n.ID || log.behaviors[0].Value != 12.5 {
		t.Fatalf("logged %+v, want the event credited to %s", log.behaviors, n.ID)
	}
}

// newShop creates a website of an account of its own.
func newShop(t *testing.T, st store.Store) store.Website {
	t.Helper()
	a := store.Account{ID: uuid.NewString(), OwnerEmail: "o@shop.example"}
	w := store.Website{ID: uuid.NewString(), AccountID: a.ID, ProjectID: uuid.NewString(), Name: "Shop", URL: "https://shop.example", Timezone: "UTC"}
	if err := st.CreateWebsite(context.Background(), a, w, store.APIKey{ID: uuid.NewString(), Hash: uuid.NewString()}); err != nil {
		t.Fatal(err)
	}
	return w
}

// subscribeAnn subscribes a browser of the website's person "ann".
func subscribeAnn(t *testing.T, st store.Store, w store.Website, at time.Time) store.SubscriptionResult {
	t.Helper()
	res, err := st.UpsertSubscription(context.Background(), store.SubscriptionInput{WebsiteID: w.ID, Endpoint: "https://push.example/ann",
		P256dh: "BP256", Auth: "auth", ExternalID: "ann", At: at})
	if err != nil {
		t.Fatal(err)
	}
	return res
}
