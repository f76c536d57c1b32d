package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/store"
)

var behaviorCases = []testCase{
	{"LastInteraction", testLastInteraction},
	{"Attribute", testAttribute},
	{"Conversions", testConversions},
	{"ConcurrentFolds", testConcurrentFolds},
	{"Interests", testInterests},
	{"AddInterests", testAddInterests},
	{"AddInterestsConcurrent", testAddInterestsConcurrent},
	{"WriteEvents", testWriteEvents},
	{"PersonRefs", testPersonRefs},
	{"PeopleCache", testPeopleCache},
	{"PeopleVersion", testPeopleVersion},
	{"ProductAlert", testProductAlert},
	{"ProductAlertDedupe", testProductAlertDedupe},
	{"Idempotency", testIdempotency},
}

func testLastInteraction(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	other := newWebsite(t, s)
	phone := subscription(w.Website.ID)
	phone.ExternalID = "ann"
	p := subscribe(t, s, phone)
	laptop := subscription(w.Website.ID)
	laptop.ExternalID = "ann"
	l := subscribe(t, s, laptop)
	if l.SubscriberID != p.SubscriberID {
		t.Fatalf("one person's browsers are subscribers %s and %s", p.SubscriberID, l.SubscriberID)
	}
	_, _, err := s.LastInteraction(ctx, w.Website.ID, p.SubscriberID, at(0))
	wantErr(t, "LastInteraction of nobody's notification", err, store.ErrNotFound)

	n1, n2, n3 := create(t, s, notification(w.Website.ID)), create(t, s, notification(w.Website.ID)), create(t, s, notification(w.Website.ID))
	record := func(n store.Notification, endpointID, kind string, d time.Duration) {
		t.Helper()
		_, err := s.RecordInteraction(ctx, w.Website.ID, n.ID, endpointID, kind, at(d), nil)
		noErr(t, "RecordInteraction", err)
	}
	record(n1, p.EndpointID, store.InteractionDelivered, time.Hour)
	record(n2, l.EndpointID, store.InteractionDelivered, 2*time.Hour)
	got, clicked, err := s.LastInteraction(ctx, w.Website.ID, p.SubscriberID, at(0))
	noErr(t, "LastInteraction", err)
	same(t, "the last delivered, on any browser", [2]any{got, clicked}, [2]any{n2.ID, false})

	// A click within the window wins over a later delivery.
	record(n1, p.EndpointID, store.InteractionClicked, 90*time.Minute)
	record(n3, p.EndpointID, store.InteractionDelivered, 3*time.Hour)
	got, clicked, err = s.LastInteraction(ctx, w.Website.ID, p.SubscriberID, at(0))
	noErr(t, "LastInteraction", err)
	same(t, "the clicked one", [2]any{got, clicked}, [2]any{n1.ID, true})
	// Out of the window, the click no longer counts.
	got, clicked, err = s.LastInteraction(ctx, w.Website.ID, p.SubscriberID, at(100*time.Minute))
	noErr(t, "LastInteraction", err)
	same(t, "the last delivered after the click's window", [2]any{got, clicked}, [2]any{n3.ID, false})
	_, _, err = s.LastInteraction(ctx, w.Website.ID, p.SubscriberID, at(4*time.Hour))
	wantErr(t, "LastInteraction with everything out of the window", err, store.ErrNotFound)
	_, _, err = s.LastInteraction(ctx, other.Website.ID, p.SubscriberID, at(0))
	wantErr(t, "LastInteraction through another website", err, store.ErrNotFound)
}

// testAttribute: Attribute credits each conversion of a list to what
// LastInteraction finds for it alone, whatever the list mixes (people
// without interactions, clicks against deliveries, ties, windows,
// repeated people, another website's notification through the same
// endpoint), once per event: an event credited before answers what it
// was credited to, through its own website only, and the fold counts
// each credit once.
func testAttribute(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	other := newWebsite(t, s)
	people := make([]store.SubscriptionResult, 6)
	for i := range people {
		in := subscription(w.Website.ID)
		in.ExternalID = fmt.Sprintf("person-%d", i)
		people[i] = subscribe(t, s, in)
	}
	laptop := subscription(w.Website.ID)
	laptop.ExternalID = "person-1" // a second browser of person 1
	l := subscribe(t, s, laptop)
	same(t, "the laptop's subscriber", l.SubscriberID, people[1].SubscriberID)
	stranger := subscribe(t, s, subscription(other.Website.ID))
	ns := make([]store.Notification, 4)
	for i := range ns {
		ns[i] = create(t, s, notification(w.Website.ID))
	}
	foreign := create(t, s, notification(other.Website.ID))
	record := func(websiteID, notificationID, endpointID, kind string, d time.Duration) {
		t.Helper()
		_, err := s.RecordInteraction(ctx, websiteID, notificationID, endpointID, kind, at(d), nil)
		noErr(t, "RecordInteraction", err)
	}
	// Person 0: nothing. Person 1: deliveries on both browsers, a click
	// in between.
	record(w.Website.ID, ns[0].ID, people[1].EndpointID, store.InteractionDelivered, time.Hour)
	record(w.Website.ID, ns[1].ID, l.EndpointID, store.InteractionDelivered, 3*time.Hour)
	record(w.Website.ID, ns[2].ID, people[1].EndpointID, store.InteractionClicked, 2*time.Hour)
	// Person 2: two deliveries and two clicks at the same moment (the
	// least notification id wins each tie).
	for _, n := range ns[:2] {
		record(w.Website.ID, n.ID, people[2].EndpointID, store.InteractionDelivered, time.Hour)
	}
	for _, n := range ns[2:] {
		record(w.Website.ID, n.ID, people[2].EndpointID, store.InteractionClicked, 2*time.Hour)
	}
	// Person 3: only another website's notification, clicked through
	// this website's endpoint. Person 4: a delivery, and the other
	// website's notification clicked later.
	record(other.Website.ID, foreign.ID, people[3].EndpointID, store.InteractionClicked, 2*time.Hour)
	record(w.Website.ID, ns[3].ID, people[4].EndpointID, store.InteractionDelivered, time.Hour)
	record(other.Website.ID, foreign.ID, people[4].EndpointID, store.InteractionClicked, 3*time.Hour)
	// The other website's subscriber: a click of its own notification.
	record(other.Website.ID, foreign.ID, stranger.EndpointID, store.InteractionClicked, time.Hour)

	type sum struct {
		conversions, clicked int64
		revenue              float64
	}
	sums := map[string]*sum{}
	credited := map[string]store.Interaction{} // by event, of website w
	var wQueries []store.Attribution
	for _, site := range []string{w.Website.ID, other.Website.ID} {
		var queries []store.Attribution
		add := func(subscriberID string, since time.Duration) {
			n := len(queries)
			queries = append(queries, store.Attribution{EventID: fmt.Sprintf("%s-%d", site, n), SubscriberID: subscriberID,
				Since: at(since), At: at(5 * time.Hour), Value: float64(n) + 0.25})
		}
		for _, since := range []time.Duration{0, 90 * time.Minute, 2 * time.Hour, 150 * time.Minute, 4 * time.Hour} {
			for _, p := range people {
				add(p.SubscriberID, since)
			}
			add(stranger.SubscriberID, since)
			add(uuid.NewString(), since)
		}
		rand.Shuffle(len(queries), func(i, j int) { queries[i], queries[j] = queries[j], queries[i] })
		want := make([]store.Interaction, len(queries))
		for i, q := range queries {
			id, clicked, err := s.LastInteraction(ctx, site, q.SubscriberID, q.Since)
			if !errors.Is(err, store.ErrNotFound) {
				noErr(t, "LastInteraction", err)
				want[i] = store.Interaction{NotificationID: id, Clicked: clicked}
			}
		}
		got, err := s.Attribute(ctx, site, queries)
		noErr(t, "Attribute", err)
		same(t, "Attribute against LastInteraction", got, want)
		for i, q := range queries {
			if got[i].NotificationID == foreign.ID && site == w.Website.ID || got[i].NotificationID != "" && site == other.Website.ID && q.SubscriberID != stranger.SubscriberID {
				t.Fatalf("query %+v of website %s credited %+v", q, site, got[i])
			}
			if got[i].NotificationID == "" {
				continue
			}
			c := sums[got[i].NotificationID]
			if c == nil {
				c = &sum{}
				sums[got[i].NotificationID] = c
			}
			c.conversions++
			c.revenue += q.Value
			if got[i].Clicked {
				c.clicked++
			}
			if site == w.Website.ID {
				credited[q.EventID] = got[i]
			}
		}
		if site == w.Website.ID {
			wQueries = queries
		}
	}
	if len(credited) == 0 || sums[foreign.ID] == nil {
		t.Fatalf("nothing credited to one of the websites: %v, %v", credited, sums)
	}

	// Some answers spelt out.
	least := func(a, b store.Notification) string { return min(a.ID, b.ID) }
	spelt := []store.Attribution{
		{SubscriberID: people[1].SubscriberID, Since: at(0)},
		{SubscriberID: people[1].SubscriberID, Since: at(150 * time.Minute)},
		{SubscriberID: people[2].SubscriberID, Since: at(0)},
		{SubscriberID: people[2].SubscriberID, Since: at(150 * time.Minute)},
		{SubscriberID: people[3].SubscriberID, Since: at(0)},
		{SubscriberID: people[4].SubscriberID, Since: at(0)},
		{SubscriberID: people[1].SubscriberID, Since: at(4 * time.Hour)},
	}
	for i := range spelt {
		spelt[i].EventID, spelt[i].At = fmt.Sprintf("spelt-%d", i), at(5*time.Hour)
	}
	got, err := s.Attribute(ctx, w.Website.ID, spelt)
	noErr(t, "Attribute", err)
	same(t, "Attribute", got, []store.Interaction{
		{NotificationID: ns[2].ID, Clicked: true}, // a click wins over a later delivery
		{NotificationID: ns[1].ID},                // the laptop's delivery, after the click's window
		{NotificationID: least(ns[2], ns[3]), Clicked: true},
		{},
		{},
		{NotificationID: ns[3].ID},
		{},
	})
	for _, a := range got {
		if a.NotificationID == "" {
			continue
		}
		c := sums[a.NotificationID]
		if c == nil {
			c = &sum{}
			sums[a.NotificationID] = c
		}
		c.conversions++
		if a.Clicked {
			c.clicked++
		}
	}
	// The same events again, worth more, and one of them twice in the
	// list, after a later click of another notification by each person
	// credited: each answers what it was credited to, and counts once.
	for _, p := range append(people, l) {
		record(w.Website.ID, ns[0].ID, p.EndpointID, store.InteractionClicked, 6*time.Hour)
	}
	again := make([]store.Attribution, 0, len(wQueries)+1)
	for _, q := range wQueries {
		q.Value = 1000
		again = append(again, q)
	}
	again = append(again, again[0])
	got, err = s.Attribute(ctx, w.Website.ID, again)
	noErr(t, "Attribute of the events again", err)
	for i, q := range again {
		if want, ok := credited[q.EventID]; ok {
			same(t, "Attribute of "+q.EventID+" again", got[i], want)
		} else if got[i].NotificationID != "" {
			// Found now (the later click), and credited as new.
			same(t, "Attribute of "+q.EventID+", not credited before", got[i], store.Interaction{NotificationID: ns[0].ID, Clicked: true})
			c := sums[ns[0].ID]
			if c == nil && i < len(wQueries) {
				c = &sum{}
				sums[ns[0].ID] = c
			}
			if i < len(wQueries) {
				c.conversions++
				c.clicked++
				c.revenue += 1000
			}
		}
	}
	// Searching where nothing is found any more, an event credited
	// before answers none and credits nothing.
	late := slices.Clone(wQueries[:3])
	for i := range late {
		late[i].Since = at(10 * time.Hour)
	}
	got, err = s.Attribute(ctx, w.Website.ID, late)
	noErr(t, "Attribute of the events again, finding nothing", err)
	same(t, "Attribute of the events again, finding nothing", got, make([]store.Interaction, len(late)))
	// Through the other website, an event credited to this one's
	// notification answers nothing, even where a credit would be found.
	var through []store.Attribution
	for id := range credited {
		through = append(through, store.Attribution{EventID: id, SubscriberID: stranger.SubscriberID, Since: at(0), At: at(5 * time.Hour), Value: 3})
	}
	got, err = s.Attribute(ctx, other.Website.ID, through)
	noErr(t, "Attribute through another website", err)
	same(t, "Attribute through another website", got, make([]store.Interaction, len(through)))

	got, err = s.Attribute(ctx, w.Website.ID, nil)
	noErr(t, "Attribute of nothing", err)
	same(t, "Attribute of nothing", len(got), 0)

	// Each credit folded once, at the value of its first call.
	folded, err := s.FoldConversions(ctx, 10000)
	noErr(t, "FoldConversions", err)
	want := 0
	for _, c := range sums {
		want += int(c.conversions)
	}
	same(t, "credits folded", folded, want)
	for _, n := range append(ns, foreign) {
		got := getNotification(t, s, n.ID)
		c := sums[n.ID]
		if c == nil {
			c = &sum{}
		}
		same(t, "conversions, click conversions and revenue of "+n.ID, [3]any{got.Conversions, got.ClickConversions, got.Revenue},
			[3]any{c.conversions, c.clicked, c.revenue})
	}
}

// credited is a person whose last interaction with the website is
// notification n, clicked or delivered, for Attribute to credit.
func credited(t *testing.T, s store.Store, websiteID string, n store.Notification, kind string) string {
	t.Helper()
	p := subscribe(t, s, subscription(websiteID))
	_, err := s.RecordInteraction(context.Background(), websiteID, n.ID, p.EndpointID, kind, at(0), nil)
	noErr(t, "RecordInteraction", err)
	return p.SubscriberID
}

// credit credits event eventID of the subscriber through Attribute and
// returns the notification credited ("" for none).
func credit(t *testing.T, s store.Store, websiteID, subscriberID, eventID string, value float64, when time.Duration) string {
	t.Helper()
	got, err := s.Attribute(context.Background(), websiteID, []store.Attribution{{EventID: eventID, SubscriberID: subscriberID,
		Since: at(0), At: at(when), Value: value}})
	noErr(t, "Attribute of "+eventID, err)
	return got[0].NotificationID
}

// testConversions: Attribute's credits reach the notifications' counters
// through FoldConversions, each once, whatever is credited again before or
// after its fold, until purged.
func testConversions(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	other := newWebsite(t, s)
	n1, n2 := create(t, s, notification(w.Website.ID)), create(t, s, notification(w.Website.ID))
	clicker := credited(t, s, w.Website.ID, n1, store.InteractionClicked)
	reader := credited(t, s, w.Website.ID, n1, store.InteractionDelivered)
	later := credited(t, s, w.Website.ID, n2, store.InteractionDelivered)
	same(t, "credited", credit(t, s, w.Website.ID, clicker, "e1", 19.5, time.Hour), n1.ID)
	same(t, "credited", credit(t, s, w.Website.ID, reader, "e2", 0, time.Hour), n1.ID)
	same(t, "credited", credit(t, s, w.Website.ID, later, "e3", 5.25, time.Hour), n2.ID)
	same(t, "an event credited again", credit(t, s, w.Website.ID, clicker, "e1", 19.5, time.Hour), n1.ID)
	same(t, "a person through another website", credit(t, s, other.Website.ID, clicker, "e4", 1, time.Hour), "")
	if got := getNotification(t, s, n1.ID); got.Conversions != 0 || got.Revenue != 0 {
		t.Fatalf("before a fold: conversions %d, revenue %v; want nothing yet", got.Conversions, got.Revenue)
	}
	folded, err := s.FoldConversions(ctx, 2)
	noErr(t, "FoldConversions", err)
	same(t, "credits folded with max 2", folded, 2)
	folded, err = s.FoldConversions(ctx, 100)
	noErr(t, "FoldConversions", err)
	same(t, "credits folded next", folded, 1)
	folded, err = s.FoldConversions(ctx, 100)
	noErr(t, "FoldConversions", err)
	same(t, "credits folded when none is left", folded, 0)
	// A retried event after its fold credits nothing more; once purged, no
	// credit is folded again.
	same(t, "a folded event credited again", credit(t, s, w.Website.ID, later, "e3", 5.25, 2*time.Hour), n2.ID)
	purged, err := s.PurgeBehavior(ctx, store.BehaviorPurge{Credits: at(time.Hour + time.Millisecond)})
	noErr(t, "PurgeBehavior", err)
	same(t, "folded credits purged", purged, int64(3))
	folded, err = s.FoldConversions(ctx, 100)
	noErr(t, "FoldConversions", err)
	same(t, "credits folded after the purge", folded, 0)
	for _, c := range []struct {
		n             store.Notification
		conv, clicked int64
		revenue       float64
	}{{n1, 2, 1, 19.5}, {n2, 1, 0, 5.25}} {
		got := getNotification(t, s, c.n.ID)
		same(t, "conversions, click conversions and revenue", [3]any{got.Conversions, got.ClickConversions, got.Revenue},
			[3]any{c.conv, c.clicked, c.revenue})
	}
}

// testConcurrentFolds: credits made and folded at once by several callers
// are each counted exactly once.
func testConcurrentFolds(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	n := create(t, s, notification(w.Website.ID))
	person := credited(t, s, w.Website.ID, n, store.InteractionClicked)
	const writers, each = 4, 25
	var wg sync.WaitGroup
	errs := make(chan error, writers*each+100)
	stop := make(chan struct{})
	for range writers {
		wg.Go(func() {
			for range each {
				id := uuid.NewString()
				for range 2 {
					got, err := s.Attribute(ctx, w.Website.ID, []store.Attribution{{EventID: id, SubscriberID: person,
						Since: at(0), At: at(time.Hour), Value: 2}})
					if err != nil {
						errs <- err
					} else if got[0] != (store.Interaction{NotificationID: n.ID, Clicked: true}) {
						errs <- fmt.Errorf("event %s credited %+v", id, got[0])
					}
				}
			}
		})
	}
	var folders sync.WaitGroup
	for range 2 {
		folders.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := s.FoldConversions(ctx, 7); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	folders.Wait()
	for {
		folded, err := s.FoldConversions(ctx, 1000)
		noErr(t, "FoldConversions", err)
		if folded == 0 {
			break
		}
	}
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got := getNotification(t, s, n.ID)
	same(t, "conversions and revenue", [3]any{got.Conversions, got.ClickConversions, got.Revenue},
		[3]any{int64(writers * each), int64(writers * each), float64(2 * writers * each)})
}

func testInterests(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	other := newWebsite(t, s)
	a := subscribe(t, s, subscription(w.Website.ID))
	interest := func(product, kind string, d time.Duration) store.ProductInterest {
		return store.ProductInterest{WebsiteID: w.Website.ID, SubscriberID: a.SubscriberID, ProductID: product, Kind: kind, CreatedAt: at(d)}
	}
	noErr(t, "AddInterest", s.AddInterest(ctx, interest("sku-1", store.InterestPriceDrop, time.Minute)))
	noErr(t, "AddInterest", s.AddInterest(ctx, interest("sku-2", store.InterestBackInStock, 2*time.Minute)))
	noErr(t, "AddInterest again", s.AddInterest(ctx, interest("sku-1", store.InterestPriceDrop, 3*time.Minute)))
	wrong := interest("sku-3", store.InterestPriceDrop, time.Minute)
	wrong.WebsiteID = other.Website.ID
	wantErr(t, "AddInterest for another website's subscriber", s.AddInterest(ctx, wrong), store.ErrNotFound)
	if err := s.AddInterest(ctx, interest("sku-3", "wishlist", time.Minute)); err == nil {
		t.Fatal("AddInterest of an unknown kind: no error")
	}
	got, err := s.Interests(ctx, w.Website.ID, []string{a.SubscriberID}, at(0), 10)
	noErr(t, "Interests", err)
	same(t, "interests, newest first, renewed in place", got, []store.ProductInterest{
		interest("sku-1", store.InterestPriceDrop, 3*time.Minute), interest("sku-2", store.InterestBackInStock, 2*time.Minute)})
	got, err = s.Interests(ctx, w.Website.ID, []string{a.SubscriberID}, at(150*time.Second), 10)
	noErr(t, "Interests", err)
	same(t, "interests since", got, []store.ProductInterest{interest("sku-1", store.InterestPriceDrop, 3*time.Minute)})
	got, err = s.Interests(ctx, other.Website.ID, []string{a.SubscriberID}, at(0), 10)
	noErr(t, "Interests", err)
	same(t, "interests through another website", len(got), 0)

	_, err = s.ErasePeople(ctx, w.Website.ID, []string{a.SubscriberID})
	noErr(t, "ErasePeople", err)
	got, err = s.Interests(ctx, w.Website.ID, []string{a.SubscriberID}, at(0), 10)
	noErr(t, "Interests", err)
	same(t, "interests after erasure", len(got), 0)
}

// alertNotification is a product alert of the website as the events
// package makes it.
func alertNotification(websiteID, product, kind string, d time.Duration) *store.Notification {
	n := notification(websiteID)
	n.Automation = true
	n.SendBody = nil
	n.CreatedAt = at(d)
	n.Target, _ = json.Marshal(map[string]any{"productAlert": map[string]string{"id": n.ID, "kind": kind, "productId": product}})
	return &n
}

// alertAudience reads a notification's whole audience by AlertID: the
// endpoint ids, sorted.
func alertAudience(t *testing.T, s store.Store, websiteID, alertID string) []string {
	t.Helper()
	var ids []string
	for shard := range store.Shards {
		after := ""
		for {
			page, err := s.Audience(context.Background(), store.AudienceQuery{WebsiteID: websiteID, Shard: shard, AfterID: after, Limit: 2, AlertID: alertID})
			noErr(t, "Audience", err)
			for _, r := range page {
				ids = append(ids, r.Endpoint.ID)
			}
			if len(page) < 2 {
				break
			}
			after = page[len(page)-1].Endpoint.ID
		}
	}
	slices.Sort(ids)
	return ids
}

func testProductAlert(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	other := newWebsite(t, s)
	var people []store.SubscriptionResult
	var endpoints []string
	for i := range 6 {
		in := subscription(w.Website.ID)
		in.ExternalID = fmt.Sprintf("p%d", i)
		r := subscribe(t, s, in)
		people = append(people, r)
		endpoints = append(endpoints, r.EndpointID)
		if i == 0 { // a second browser of the same person
			in2 := subscription(w.Website.ID)
			in2.ExternalID = in.ExternalID
			endpoints = append(endpoints, subscribe(t, s, in2).EndpointID)
		}
	}
	stranger := subscribe(t, s, subscription(other.Website.ID))
	interest := func(r store.SubscriptionResult, product, kind string, d time.Duration) {
		t.Helper()
		noErr(t, "AddInterest", s.AddInterest(ctx, store.ProductInterest{WebsiteID: w.Website.ID, SubscriberID: r.SubscriberID,
			ProductID: product, Kind: kind, CreatedAt: at(d)}))
	}
	// p0-p3 wait for sku-1 to be back; p4 only watches its price; p5's
	// interest has expired.
	for i, p := range people[:4] {
		interest(p, "sku-1", store.InterestBackInStock, time.Duration(i+10)*time.Minute)
	}
	interest(people[4], "sku-1", store.InterestPriceDrop, time.Hour)
	interest(people[5], "sku-1", store.InterestBackInStock, time.Minute)
	noErr(t, "AddInterest", s.AddInterest(ctx, store.ProductInterest{WebsiteID: other.Website.ID, SubscriberID: stranger.SubscriberID,
		ProductID: "sku-1", Kind: store.InterestBackInStock, CreatedAt: at(time.Hour)}))
	// Nobody interested: nothing stored.
	none := alertNotification(w.Website.ID, "sku-9", store.InterestBackInStock, 2*time.Hour)
	res, err := s.CreateProductAlert(ctx, none, store.ProductAlert{ProductID: "sku-9", Kind: store.InterestBackInStock, Since: at(5 * time.Minute), Max: 100})
	noErr(t, "CreateProductAlert", err)
	same(t, "an alert nobody waits for", res, store.AlertResult{})
	_, err = s.NotificationByID(ctx, none.ID)
	wantErr(t, "the alert nobody waits for", err, store.ErrNotFound)

	// Cut at 3: the newest three interests (p3, p2, p1) get it; p0 keeps
	// waiting.
	n := alertNotification(w.Website.ID, "sku-1", store.InterestBackInStock, 2*time.Hour)
	res, err = s.CreateProductAlert(ctx, n, store.ProductAlert{ProductID: "sku-1", Kind: store.InterestBackInStock, Since: at(5 * time.Minute), Max: 3})
	noErr(t, "CreateProductAlert", err)
	same(t, "a cut alert", res, store.AlertResult{Audience: 3, Truncated: true, Created: true})
	stored := getNotification(t, s, n.ID)
	same(t, "the stored alert's automation and send body", [2]any{stored.Automation, stored.SendBody == nil}, [2]any{true, true})
	want := []string{people[1].EndpointID, people[2].EndpointID, people[3].EndpointID}
	slices.Sort(want)
	same(t, "the alert's audience", alertAudience(t, s, w.Website.ID, n.ID), want)
	same(t, "another website's walk of the alert", len(alertAudience(t, s, other.Website.ID, n.ID)), 0)

	// The interests it used are gone, and so is p5's expired one.
	left, err := s.Interests(ctx, w.Website.ID, []string{people[0].SubscriberID, people[1].SubscriberID, people[4].SubscriberID, people[5].SubscriberID}, at(0), 10)
	noErr(t, "Interests", err)
	same(t, "interests left", left, []store.ProductInterest{
		{WebsiteID: w.Website.ID, SubscriberID: people[4].SubscriberID, ProductID: "sku-1", Kind: store.InterestPriceDrop, CreatedAt: at(time.Hour)},
		{WebsiteID: w.Website.ID, SubscriberID: people[0].SubscriberID, ProductID: "sku-1", Kind: store.InterestBackInStock, CreatedAt: at(10 * time.Minute)},
	})

	// The next one reaches p0 on both browsers.
	n2 := alertNotification(w.Website.ID, "sku-1", store.InterestBackInStock, 3*time.Hour)
	res, err = s.CreateProductAlert(ctx, n2, store.ProductAlert{ProductID: "sku-1", Kind: store.InterestBackInStock, Since: at(5 * time.Minute), Max: 3})
	noErr(t, "CreateProductAlert", err)
	same(t, "the second alert", res, store.AlertResult{Audience: 1, Created: true})
	want = endpoints[:2]
	slices.Sort(want)
	same(t, "the second alert's audience", alertAudience(t, s, w.Website.ID, n2.ID), want)

	// ReachQuery honours the alert too.
	var reached []string
	noErr(t, "Reachable", s.Reachable(ctx, store.ReachQuery{WebsiteID: w.Website.ID, Shard: store.AllShards, AlertID: n.ID}, func(sub *store.Subscriber, _ int) {
		reached = append(reached, sub.ID)
	}))
	slices.Sort(reached)
	wantPeople := []string{people[1].SubscriberID, people[2].SubscriberID, people[3].SubscriberID}
	slices.Sort(wantPeople)
	same(t, "Reachable of the alert", reached, wantPeople)

	// Purges: the audience of a finished alert and old interests go; a
	// running alert keeps its audience.
	purged, err := s.PurgeBehavior(ctx, store.BehaviorPurge{Alerts: at(24 * time.Hour)})
	noErr(t, "PurgeBehavior", err)
	same(t, "audiences purged while the alerts run", purged, int64(0))
	sched := alertNotification(w.Website.ID, "sku-2", store.InterestPriceDrop, 4*time.Hour)
	sched.Status, sched.ScheduledAt = store.StatusScheduled, ptr(at(48*time.Hour))
	noErr(t, "AddInterest", s.AddInterest(ctx, store.ProductInterest{WebsiteID: w.Website.ID, SubscriberID: people[2].SubscriberID,
		ProductID: "sku-2", Kind: store.InterestPriceDrop, CreatedAt: at(time.Hour)}))
	res, err = s.CreateProductAlert(ctx, sched, store.ProductAlert{ProductID: "sku-2", Kind: store.InterestPriceDrop, Since: at(0), Max: 10})
	noErr(t, "CreateProductAlert", err)
	same(t, "a scheduled alert", res, store.AlertResult{Audience: 1, Created: true})
	noErr(t, "CancelNotification", s.CancelNotification(ctx, w.Website.ID, sched.ID, at(5*time.Hour)))
	purged, err = s.PurgeBehavior(ctx, store.BehaviorPurge{Alerts: at(24 * time.Hour), Interests: at(61 * time.Minute)})
	noErr(t, "PurgeBehavior", err)
	// (the interests of every website: the stranger's too)
	same(t, "rows purged: a canceled alert's audience and the three interests of an hour ago", purged, int64(4))
	same(t, "the canceled alert's audience", len(alertAudience(t, s, w.Website.ID, sched.ID)), 0)
	same(t, "the running alert's audience", len(alertAudience(t, s, w.Website.ID, n.ID)), 3)

	// An alert and external ids at once is refused, not widened.
	_, err = s.Audience(ctx, store.AudienceQuery{WebsiteID: w.Website.ID, AlertID: n.ID, ExternalIDs: []string{"p0"}})
	if err == nil {
		t.Fatal("Audience with an alert and external ids: no error")
	}
}

func testProductAlertDedupe(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	p := subscribe(t, s, subscription(w.Website.ID))
	noErr(t, "AddInterest", s.AddInterest(ctx, store.ProductInterest{WebsiteID: w.Website.ID, SubscriberID: p.SubscriberID,
		ProductID: "sku-1", Kind: store.InterestPriceDrop, CreatedAt: at(time.Minute)}))
	drop := func(d time.Duration) store.AlertResult {
		t.Helper()
		n := alertNotification(w.Website.ID, "sku-1", store.InterestPriceDrop, d)
		res, err := s.CreateProductAlert(ctx, n, store.ProductAlert{ProductID: "sku-1", Kind: store.InterestPriceDrop,
			Since: at(0), Max: 10, DedupeSince: at(d - 10*time.Minute)})
		noErr(t, "CreateProductAlert", err)
		return res
	}
	same(t, "the first price drop", drop(time.Hour), store.AlertResult{Audience: 1, Created: true})
	same(t, "a price drop 9 minutes later", drop(time.Hour+9*time.Minute), store.AlertResult{Deduped: true})
	same(t, "a price drop 10 minutes after the first", drop(time.Hour+10*time.Minute), store.AlertResult{Audience: 1, Created: true})
	// Price-drop interests stay.
	same(t, "a price drop 21 minutes after the first", drop(time.Hour+21*time.Minute), store.AlertResult{Audience: 1, Created: true})

	// Two at once: one goes out.
	var wg sync.WaitGroup
	results := make([]store.AlertResult, 4)
	for i := range results {
		wg.Go(func() {
			n := alertNotification(w.Website.ID, "sku-1", store.InterestPriceDrop, 2*time.Hour)
			res, err := s.CreateProductAlert(ctx, n, store.ProductAlert{ProductID: "sku-1", Kind: store.InterestPriceDrop,
				Since: at(0), Max: 10, DedupeSince: at(2*time.Hour - 10*time.Minute)})
			if err != nil {
				t.Error(err)
			}
			results[i] = res
		})
	}
	wg.Wait()
	created := 0
	for _, r := range results {
		if r.Created {
			created++
		}
	}
	same(t, "concurrent price drops that went out", created, 1)
}

func testIdempotency(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	other := newWebsite(t, s)
	answer, claimed, err := s.ClaimIdempotency(ctx, w.Website.ID, "events", "k1", "r-k1", at(0), at(-time.Minute))
	noErr(t, "ClaimIdempotency", err)
	same(t, "a new key", [2]any{answer == nil, claimed}, [2]any{true, true})
	answer, claimed, err = s.ClaimIdempotency(ctx, w.Website.ID, "events", "k1", "r-k1", at(time.Second), at(-time.Minute))
	noErr(t, "ClaimIdempotency", err)
	same(t, "a key whose request runs", [2]any{answer == nil, claimed}, [2]any{true, false})
	answer, claimed, err = s.ClaimIdempotency(ctx, other.Website.ID, "events", "k1", "r-k1", at(time.Second), at(-time.Minute))
	noErr(t, "ClaimIdempotency", err)
	same(t, "the same key of another website", [2]any{answer == nil, claimed}, [2]any{true, true})
	noErr(t, "SettleIdempotency", s.SettleIdempotency(ctx, w.Website.ID, "events", "k1", []byte(`{"ok":true}`)))
	answer, claimed, err = s.ClaimIdempotency(ctx, w.Website.ID, "events", "k1", "r-k1", at(2*time.Second), at(time.Hour))
	noErr(t, "ClaimIdempotency", err)
	same(t, "a settled key", [2]any{string(answer), claimed}, [2]any{`{"ok":true}`, false})
	_, _, err = s.ClaimIdempotency(ctx, w.Website.ID, "events", "k1", "another request", at(2*time.Second), at(time.Hour))
	wantErr(t, "a key claimed again for another request", err, store.ErrConflict)

	// A failed request releases its claim; one that died is taken over
	// once stale.
	_, _, err = s.ClaimIdempotency(ctx, w.Website.ID, "events", "k2", "r-k2", at(0), at(-time.Minute))
	noErr(t, "ClaimIdempotency", err)
	noErr(t, "SettleIdempotency", s.SettleIdempotency(ctx, w.Website.ID, "events", "k2", nil))
	_, claimed, err = s.ClaimIdempotency(ctx, w.Website.ID, "events", "k2", "r-k2", at(time.Second), at(-time.Minute))
	noErr(t, "ClaimIdempotency", err)
	same(t, "a released key claimed again", claimed, true)
	_, claimed, err = s.ClaimIdempotency(ctx, w.Website.ID, "events", "k2", "r-k2", at(time.Minute), at(time.Second))
	noErr(t, "ClaimIdempotency", err)
	same(t, "a claim not yet stale", claimed, false)
	_, claimed, err = s.ClaimIdempotency(ctx, w.Website.ID, "events", "k2", "r-k2", at(2*time.Minute), at(time.Minute))
	noErr(t, "ClaimIdempotency", err)
	same(t, "a stale claim taken over", claimed, true)

	n, err := s.PurgeBehavior(ctx, store.BehaviorPurge{Keys: at(90 * time.Second)})
	noErr(t, "PurgeBehavior", err)
	same(t, "keys purged", n, int64(2)) // k1 of both websites; k2 was renewed at 2 min
	_, claimed, err = s.ClaimIdempotency(ctx, w.Website.ID, "events", "k1", "r-k1", at(3*time.Minute), at(0))
	noErr(t, "ClaimIdempotency", err)
	same(t, "a purged key", claimed, true)
}

// testAddInterests: a batch records each interest as AddInterest does,
// renews one already there, keeps the latest of duplicates, and leaves
// out another website's subscriber without failing the rest.
func testAddInterests(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	other := newWebsite(t, s)
	a := subscribe(t, s, subscription(w.Website.ID))
	b := subscribe(t, s, subscription(w.Website.ID))
	interest := func(sub, product, kind string, d time.Duration) store.ProductInterest {
		return store.ProductInterest{WebsiteID: w.Website.ID, SubscriberID: sub, ProductID: product, Kind: kind, CreatedAt: at(d)}
	}
	noErr(t, "AddInterest", s.AddInterest(ctx, interest(a.SubscriberID, "sku-1", store.InterestPriceDrop, time.Minute)))
	wrong := interest(a.SubscriberID, "sku-9", store.InterestPriceDrop, time.Minute)
	wrong.WebsiteID = other.Website.ID
	noErr(t, "AddInterests", s.AddInterests(ctx, []store.ProductInterest{
		interest(b.SubscriberID, "sku-2", store.InterestBackInStock, 2*time.Minute),
		interest(a.SubscriberID, "sku-1", store.InterestPriceDrop, 4*time.Minute), // renewed
		wrong,
		interest(b.SubscriberID, "sku-2", store.InterestBackInStock, 5*time.Minute), // the latest of two
		interest(b.SubscriberID, "sku-2", store.InterestBackInStock, 3*time.Minute),
	}))
	got, err := s.Interests(ctx, w.Website.ID, []string{a.SubscriberID, b.SubscriberID}, at(0), 10)
	noErr(t, "Interests", err)
	same(t, "interests", got, []store.ProductInterest{
		interest(b.SubscriberID, "sku-2", store.InterestBackInStock, 5*time.Minute),
		interest(a.SubscriberID, "sku-1", store.InterestPriceDrop, 4*time.Minute)})
	got, err = s.Interests(ctx, other.Website.ID, []string{a.SubscriberID}, at(0), 10)
	noErr(t, "Interests", err)
	same(t, "another website's", len(got), 0)
	noErr(t, "AddInterests of none", s.AddInterests(ctx, nil))
	if err := s.AddInterests(ctx, []store.ProductInterest{interest(a.SubscriberID, "sku-3", "wishlist", 0)}); err == nil {
		t.Fatal("AddInterests of an unknown kind: no error")
	}
	// More than one statement's rows.
	var many []store.ProductInterest
	for i := range 1000 {
		many = append(many, interest(a.SubscriberID, fmt.Sprintf("bulk-%04d", i), store.InterestPriceDrop, time.Hour))
	}
	noErr(t, "AddInterests, 1000", s.AddInterests(ctx, many))
	got, err = s.Interests(ctx, w.Website.ID, []string{a.SubscriberID}, at(time.Hour), 1000)
	noErr(t, "Interests", err)
	same(t, "interests of the bulk", len(got), 1000)
}

// testWriteEvents: one call credits the conversions of two websites, each
// answered by its website and event (one with nothing to credit not at
// all), and records the interests of both; one with an interest of an
// unknown kind is refused whole.
func testWriteEvents(t *testing.T, s store.Store) {
	ctx := context.Background()
	sites := []website{newWebsite(t, s), newWebsite(t, s)}
	var (
		w         store.EventWrites
		want      = map[string]map[string]store.Interaction{}
		interests []store.ProductInterest
		people    []store.SubscriptionResult
	)
	w.Credits = map[string][]store.Attribution{}
	for i, site := range sites {
		id := site.Website.ID
		buyer := subscribe(t, s, subscription(id))
		browser := subscribe(t, s, subscription(id))
		people = append(people, buyer, browser)
		n := create(t, s, notification(id))
		_, err := s.RecordInteraction(ctx, id, n.ID, buyer.EndpointID, store.InteractionClicked, at(time.Hour), nil)
		noErr(t, "RecordInteraction", err)
		// The browser has nothing to credit; the buyer's click is
		// credited, once for each event.
		for j, sub := range []string{browser.SubscriberID, buyer.SubscriberID} {
			w.Credits[id] = append(w.Credits[id], store.Attribution{EventID: fmt.Sprintf("write-%d-%d", i, j), SubscriberID: sub,
				Since: at(0), At: at(2 * time.Hour), Value: 3})
		}
		want[id] = map[string]store.Interaction{fmt.Sprintf("write-%d-1", i): {NotificationID: n.ID, Clicked: true}}
		for _, sub := range []string{buyer.SubscriberID, browser.SubscriberID} {
			interests = append(interests, store.ProductInterest{WebsiteID: id, SubscriberID: sub, ProductID: "sku-w",
				Kind: store.InterestPriceDrop, CreatedAt: at(2 * time.Hour)})
		}
	}
	refused := w
	refused.Interests = append(slices.Clone(interests), store.ProductInterest{WebsiteID: sites[0].Website.ID,
		SubscriberID: people[0].SubscriberID, ProductID: "sku-x", Kind: "wishlist"})
	if _, err := s.WriteEvents(ctx, refused); err == nil {
		t.Fatal("WriteEvents with an interest of an unknown kind: no error")
	}
	for i, site := range sites {
		got, err := s.Interests(ctx, site.Website.ID, []string{people[2*i].SubscriberID, people[2*i+1].SubscriberID}, at(0), 10)
		noErr(t, "Interests", err)
		same(t, "interests after the refused call", len(got), 0)
	}
	w.Interests = interests
	got, err := s.WriteEvents(ctx, w)
	noErr(t, "WriteEvents", err)
	same(t, "credits", got, want)
	for i, site := range sites {
		got, err := s.Interests(ctx, site.Website.ID, []string{people[2*i].SubscriberID, people[2*i+1].SubscriberID}, at(0), 10)
		noErr(t, "Interests", err)
		same(t, "interests written", len(got), 2)
	}
	// Again: the same answers (the credits found as made), nothing twice.
	got, err = s.WriteEvents(ctx, w)
	noErr(t, "WriteEvents again", err)
	same(t, "credits again", got, want)
	folded, err := s.FoldConversions(ctx, 100)
	noErr(t, "FoldConversions", err)
	same(t, "credits folded", folded, 2)
	got, err = s.WriteEvents(ctx, store.EventWrites{})
	noErr(t, "WriteEvents of nothing", err)
	same(t, "answers of nothing", len(got), 0)
}

// testPersonRefs: keys resolve to their website's people, by subscriber
// id or external id, a subscriber id first; other keys are left out.
func testPersonRefs(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	other := newWebsite(t, s)
	in := subscription(w.Website.ID)
	in.ExternalID = "user-1"
	a := subscribe(t, s, in)
	b := subscribe(t, s, subscription(w.Website.ID))
	in = subscription(other.Website.ID)
	in.ExternalID = "user-2"
	subscribe(t, s, in)
	got, err := s.PersonRefs(ctx, w.Website.ID, []string{"user-1", b.SubscriberID, "user-2", "nobody", a.SubscriberID})
	noErr(t, "PersonRefs", err)
	same(t, "refs", got, map[string]store.PersonRef{
		"user-1":       {ID: a.SubscriberID, ExternalID: "user-1"},
		a.SubscriberID: {ID: a.SubscriberID, ExternalID: "user-1"},
		b.SubscriberID: {ID: b.SubscriberID},
	})
	got, err = s.PersonRefs(ctx, w.Website.ID, nil)
	noErr(t, "PersonRefs of none", err)
	same(t, "refs of none", len(got), 0)
}

// testAddInterestsConcurrent: batches of the same interests in different
// orders, written at once, all succeed (none deadlocks with another).
func testAddInterestsConcurrent(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	var people []string
	for range 10 {
		people = append(people, subscribe(t, s, subscription(w.Website.ID)).SubscriberID)
	}
	var list []store.ProductInterest
	for _, p := range people {
		for i := range 20 {
			list = append(list, store.ProductInterest{WebsiteID: w.Website.ID, SubscriberID: p, ProductID: fmt.Sprintf("sku-%d", i),
				Kind: store.InterestPriceDrop, CreatedAt: at(time.Minute)})
		}
	}
	const writers = 6
	errs := make(chan error, writers*5)
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			mine := slices.Clone(list)
			for round := range 5 {
				rand.New(rand.NewPCG(uint64(g), uint64(round))).Shuffle(len(mine), func(i, j int) { mine[i], mine[j] = mine[j], mine[i] })
				errs <- s.AddInterests(ctx, mine)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		noErr(t, "AddInterests, concurrent", err)
	}
	got, err := s.Interests(ctx, w.Website.ID, people, at(0), 1000)
	noErr(t, "Interests", err)
	same(t, "interests", len(got), len(list))
}
