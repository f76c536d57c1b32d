package storetest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/store"
)

var subscriptionCases = []testCase{
	{"NewSubscription", testNewSubscription},
	{"SameEndpointUpdates", testSameEndpointUpdates},
	{"ExternalIDJoinsSubscriber", testExternalIDJoinsSubscriber},
	{"ExternalIDSetOnKnownEndpoint", testExternalIDSetOnKnownEndpoint},
	{"EndpointMovesToExternalIDOwner", testEndpointMovesToExternalIDOwner},
	{"EndpointChangesPerson", testEndpointChangesPerson},
	{"WebsitesAreSeparate", testSubscriptionWebsitesAreSeparate},
	{"UnknownWebsite", testSubscriptionUnknownWebsite},
	{"DeleteSubscription", testDeleteSubscription},
	{"Resubscribe", testResubscribe},
	{"Topics", testSubscriptionTopics},
	{"SetTopics", testSubscriptionSetTopics},
	{"UpsertSubscriptionsAsOneByOne", testUpsertSubscriptionsAsOneByOne},
	{"Logout", testLogout},
	{"Replaces", testReplacesEndpoint},
	{"Endpoint", testEndpointLookup},
	{"UnsubscribedWithoutEndpoints", testUnsubscribedWithoutEndpoints},
	{"ConcurrentRegistrations", testConcurrentRegistrations},
	{"ConcurrentRegistrationBatches", testConcurrentRegistrationBatches},
}

// everyone returns every recipient of the website, all shards, by endpoint id.
func everyone(t *testing.T, s store.Store, websiteID string) map[string]store.Recipient {
	t.Helper()
	out := map[string]store.Recipient{}
	for shard := range store.Shards {
		page, err := s.Audience(context.Background(), store.AudienceQuery{WebsiteID: websiteID, Shard: shard, Limit: 10_000})
		noErr(t, "Audience", err)
		for _, r := range page {
			out[r.Endpoint.ID] = r
		}
	}
	return out
}

// recipient returns the endpoint's recipient from the audience.
func recipient(t *testing.T, s store.Store, websiteID, endpointID string) store.Recipient {
	t.Helper()
	r, ok := everyone(t, s, websiteID)[endpointID]
	if !ok {
		t.Fatalf("endpoint %s is not in the audience of website %s", endpointID, websiteID)
	}
	return r
}

// wantRecipient is the recipient a single registration of in creates.
func wantRecipient(in store.SubscriptionInput, res store.SubscriptionResult) store.Recipient {
	return store.Recipient{
		Endpoint: store.Endpoint{
			ID:           res.EndpointID,
			SubscriberID: res.SubscriberID,
			WebsiteID:    in.WebsiteID,
			URL:          in.Endpoint,
			P256dh:       in.P256dh,
			Auth:         in.Auth,
			Device:       in.Device,
			UserAgent:    in.UserAgent,
			Language:     in.Language,
			CreatedAt:    in.At,
			LastSeenAt:   in.At,
		},
		Subscriber: store.Subscriber{
			ID:         res.SubscriberID,
			WebsiteID:  in.WebsiteID,
			ExternalID: in.ExternalID,
			Country:    in.Country,
			Language:   in.Language,
			Timezone:   in.Timezone,
			URL:        in.URL,
			Shard:      store.ShardOf(res.SubscriberID),
			CreatedAt:  in.At,
			LastSeenAt: in.At,
		},
	}
}

func testNewSubscription(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	in := subscription(w.Website.ID)
	in.ExternalID = "user-1"
	res := subscribe(t, s, in)
	if !res.Created || res.SubscriberID == "" || res.EndpointID == "" || res.SubscriberID == res.EndpointID {
		t.Fatalf("UpsertSubscription = %+v, want Created and two distinct ids", res)
	}
	want := wantRecipient(in, res)
	e, err := s.Endpoint(ctx, w.Website.ID, res.EndpointID)
	noErr(t, "Endpoint", err)
	same(t, "Endpoint", e, want.Endpoint)
	same(t, "recipient", recipient(t, s, w.Website.ID, res.EndpointID), want)

	// Without an external id every new endpoint is a new person.
	a := subscribe(t, s, subscription(w.Website.ID))
	b := subscribe(t, s, subscription(w.Website.ID))
	if a.SubscriberID == b.SubscriberID || a.SubscriberID == res.SubscriberID {
		t.Fatalf("anonymous subscriptions share a subscriber: %+v %+v", a, b)
	}
	if n := len(everyone(t, s, w.Website.ID)); n != 3 {
		t.Fatalf("audience has %d endpoints, want 3", n)
	}
}

func testSameEndpointUpdates(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	in := subscription(w.Website.ID)
	first := subscribe(t, s, in)

	again := in
	again.P256dh, again.Auth = "BP256-rotated", "auth-rotated"
	again.Device, again.UserAgent = "android", "Mozilla/5.0 (Linux; Android 14) Chrome/125.0"
	again.Language, again.Timezone, again.Country = "de", "Europe/Berlin", "DE"
	again.URL = "https://example.com/blog"
	again.At = at(time.Hour)
	res := subscribe(t, s, again)
	same(t, "second registration", res, store.SubscriptionResult{SubscriberID: first.SubscriberID, EndpointID: first.EndpointID})

	want := wantRecipient(again, res)
	want.Endpoint.CreatedAt, want.Subscriber.CreatedAt = in.At, in.At
	same(t, "updated recipient", recipient(t, s, w.Website.ID, res.EndpointID), want)

	// Fields left out are kept.
	sparse := store.SubscriptionInput{
		WebsiteID: w.Website.ID, Endpoint: in.Endpoint, P256dh: again.P256dh, Auth: again.Auth, At: at(2 * time.Hour),
	}
	res = subscribe(t, s, sparse)
	same(t, "third registration", res, store.SubscriptionResult{SubscriberID: first.SubscriberID, EndpointID: first.EndpointID})
	want.Endpoint.LastSeenAt, want.Subscriber.LastSeenAt = sparse.At, sparse.At
	same(t, "recipient after sparse registration", recipient(t, s, w.Website.ID, res.EndpointID), want)

	e, err := s.Endpoint(ctx, w.Website.ID, res.EndpointID)
	noErr(t, "Endpoint", err)
	same(t, "Endpoint", e, want.Endpoint)
	if n := len(everyone(t, s, w.Website.ID)); n != 1 {
		t.Fatalf("audience has %d endpoints, want 1", n)
	}
}

func testExternalIDJoinsSubscriber(t *testing.T, s store.Store) {
	w := newWebsite(t, s)
	laptop := subscription(w.Website.ID)
	laptop.ExternalID = "user-42"
	l := subscribe(t, s, laptop)

	phone := subscription(w.Website.ID)
	phone.ExternalID = "user-42"
	phone.Device, phone.Language = "android", "es"
	phone.At = at(time.Hour)
	p := subscribe(t, s, phone)
	if !p.Created || p.SubscriberID != l.SubscriberID || p.EndpointID == l.EndpointID {
		t.Fatalf("second browser of user-42 = %+v, want a new endpoint of subscriber %s", p, l.SubscriberID)
	}
	all := everyone(t, s, w.Website.ID)
	if len(all) != 2 {
		t.Fatalf("audience has %d endpoints, want 2", len(all))
	}
	want := wantRecipient(phone, p)
	want.Subscriber.CreatedAt = laptop.At
	same(t, "phone", all[p.EndpointID], want)
	// Both endpoints show the subscriber as it is now.
	same(t, "laptop's subscriber", all[l.EndpointID].Subscriber, want.Subscriber)
}

func testExternalIDSetOnKnownEndpoint(t *testing.T, s store.Store) {
	w := newWebsite(t, s)
	anon := subscription(w.Website.ID)
	first := subscribe(t, s, anon)

	login := anon
	login.ExternalID = "user-7"
	login.At = at(time.Minute)
	res := subscribe(t, s, login)
	same(t, "after login", res, store.SubscriptionResult{SubscriberID: first.SubscriberID, EndpointID: first.EndpointID})
	if got := recipient(t, s, w.Website.ID, first.EndpointID).Subscriber.ExternalID; got != "user-7" {
		t.Fatalf("ExternalID = %q, want user-7", got)
	}

	// The external id now leads other browsers to this subscriber.
	other := subscription(w.Website.ID)
	other.ExternalID = "user-7"
	o := subscribe(t, s, other)
	if o.SubscriberID != first.SubscriberID || !o.Created {
		t.Fatalf("second browser = %+v, want a new endpoint of %s", o, first.SubscriberID)
	}
}

func testEndpointMovesToExternalIDOwner(t *testing.T, s store.Store) {
	w := newWebsite(t, s)
	owner := subscription(w.Website.ID)
	owner.ExternalID = "user-9"
	o := subscribe(t, s, owner)

	anon := subscription(w.Website.ID)
	a := subscribe(t, s, anon)
	anonSibling := subscription(w.Website.ID)
	anonSibling.ExternalID = "anon-sibling"
	subscribe(t, s, anonSibling)

	login := anon
	login.ExternalID = "user-9"
	login.At = at(time.Minute)
	res := subscribe(t, s, login)
	same(t, "after login", res, store.SubscriptionResult{SubscriberID: o.SubscriberID, EndpointID: a.EndpointID})
	r := recipient(t, s, w.Website.ID, a.EndpointID)
	if r.Endpoint.SubscriberID != o.SubscriberID || r.Subscriber.ID != o.SubscriberID || r.Subscriber.ExternalID != "user-9" ||
		r.Subscriber.Shard != store.ShardOf(o.SubscriberID) {
		t.Fatalf("moved endpoint = %+v, want it under subscriber %s (shard %d)", r, o.SubscriberID, store.ShardOf(o.SubscriberID))
	}
	// It is found in the owner's shard, once.
	n := 0
	for _, r := range everyone(t, s, w.Website.ID) {
		if r.Endpoint.ID == a.EndpointID {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("moved endpoint appears %d times", n)
	}
	page, err := s.Audience(context.Background(), store.AudienceQuery{
		WebsiteID: w.Website.ID, Shard: store.ShardOf(o.SubscriberID), Limit: 100, ExternalIDs: []string{"user-9"},
	})
	noErr(t, "Audience", err)
	if len(page) != 2 {
		t.Fatalf("user-9 has %d endpoints, want 2", len(page))
	}
}

// A browser known under one external id that registers with another one
// now belongs to another person.
func testEndpointChangesPerson(t *testing.T, s store.Store) {
	w := newWebsite(t, s)
	in := subscription(w.Website.ID)
	in.ExternalID = "alice"
	first := subscribe(t, s, in)

	in.ExternalID = "bob"
	in.At = at(time.Minute)
	res := subscribe(t, s, in)
	if res.Created || res.EndpointID != first.EndpointID || res.SubscriberID == first.SubscriberID {
		t.Fatalf("re-registration as bob = %+v, want endpoint %s under a new subscriber", res, first.EndpointID)
	}
	r := recipient(t, s, w.Website.ID, res.EndpointID)
	if r.Subscriber.ID != res.SubscriberID || r.Subscriber.ExternalID != "bob" || r.Subscriber.Shard != store.ShardOf(res.SubscriberID) {
		t.Fatalf("recipient = %+v, want subscriber %s with external id bob", r.Subscriber, res.SubscriberID)
	}
	// alice's next browser does not join bob.
	alice := subscription(w.Website.ID)
	alice.ExternalID = "alice"
	a := subscribe(t, s, alice)
	if a.SubscriberID != first.SubscriberID {
		t.Fatalf("alice's new browser joined %s, want her subscriber %s", a.SubscriberID, first.SubscriberID)
	}
}

func testSubscriptionWebsitesAreSeparate(t *testing.T, s store.Store) {
	ctx := context.Background()
	w1, w2 := newWebsite(t, s), newWebsite(t, s)
	in1 := subscription(w1.Website.ID)
	in1.ExternalID = "shared-user"
	r1 := subscribe(t, s, in1)

	// The same browser endpoint and external id on another website.
	in2 := in1
	in2.WebsiteID = w2.Website.ID
	r2 := subscribe(t, s, in2)
	if !r2.Created || r2.SubscriberID == r1.SubscriberID || r2.EndpointID == r1.EndpointID {
		t.Fatalf("website 2 registration = %+v, want new records apart from %+v", r2, r1)
	}
	if got := everyone(t, s, w1.Website.ID); len(got) != 1 {
		t.Fatalf("website 1 audience has %d endpoints, want 1", len(got))
	}
	if _, ok := everyone(t, s, w2.Website.ID)[r2.EndpointID]; !ok {
		t.Fatal("website 2 audience misses its endpoint")
	}
	_, err := s.Endpoint(ctx, w2.Website.ID, r1.EndpointID)
	wantErr(t, "Endpoint(other website)", err, store.ErrNotFound)

	_, err = s.DeleteSubscription(ctx, w2.Website.ID, in1.Endpoint)
	noErr(t, "DeleteSubscription(website 2)", err)
	_, err = s.Endpoint(ctx, w1.Website.ID, r1.EndpointID)
	noErr(t, "website 1 endpoint after website 2 deleted its own", err)
}

func testSubscriptionUnknownWebsite(t *testing.T, s store.Store) {
	newWebsite(t, s)
	_, err := s.UpsertSubscription(context.Background(), subscription(uuid.NewString()))
	wantErr(t, "UpsertSubscription(unknown website)", err, store.ErrNotFound)
}

func testDeleteSubscription(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	in := subscription(w.Website.ID)
	in.ExternalID = "user-5"
	res := subscribe(t, s, in)
	other := subscription(w.Website.ID)
	o := subscribe(t, s, other)

	e, err := s.DeleteSubscription(ctx, w.Website.ID, in.Endpoint)
	noErr(t, "DeleteSubscription", err)
	same(t, "deleted endpoint", e, wantRecipient(in, res).Endpoint)
	_, err = s.Endpoint(ctx, w.Website.ID, res.EndpointID)
	wantErr(t, "Endpoint(deleted)", err, store.ErrNotFound)
	all := everyone(t, s, w.Website.ID)
	if _, ok := all[o.EndpointID]; len(all) != 1 || !ok {
		t.Fatalf("audience after delete = %d endpoints, want only %s", len(all), o.EndpointID)
	}

	_, err = s.DeleteSubscription(ctx, w.Website.ID, in.Endpoint)
	wantErr(t, "DeleteSubscription(again)", err, store.ErrNotFound)
	_, err = s.DeleteSubscription(ctx, w.Website.ID, "https://fcm.googleapis.com/fcm/send/unknown")
	wantErr(t, "DeleteSubscription(unknown)", err, store.ErrNotFound)
	w2 := newWebsite(t, s)
	_, err = s.DeleteSubscription(ctx, w2.Website.ID, other.Endpoint)
	wantErr(t, "DeleteSubscription(other website)", err, store.ErrNotFound)
	_, err = s.Endpoint(ctx, w.Website.ID, o.EndpointID)
	noErr(t, "Endpoint(kept)", err)

	// One of two browsers: the person stays subscribed through the other.
	a := subscription(w.Website.ID)
	a.ExternalID = "user-6"
	b := a
	b.Endpoint += "-second"
	ra, rb := subscribe(t, s, a), subscribe(t, s, b)
	_, err = s.DeleteSubscription(ctx, w.Website.ID, a.Endpoint)
	noErr(t, "DeleteSubscription(first of two)", err)
	r := recipient(t, s, w.Website.ID, rb.EndpointID)
	if r.Subscriber.ID != ra.SubscriberID || r.Subscriber.UnsubscribedAt != nil {
		t.Fatalf("remaining browser's subscriber = %+v, want %s subscribed", r.Subscriber, ra.SubscriberID)
	}
}

// Subscribing again after turning notifications off brings the same person
// back into the audience.
func testResubscribe(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	in := subscription(w.Website.ID)
	in.ExternalID = "user-3"
	first := subscribe(t, s, in)
	_, err := s.DeleteSubscription(ctx, w.Website.ID, in.Endpoint)
	noErr(t, "DeleteSubscription", err)
	if n := len(everyone(t, s, w.Website.ID)); n != 0 {
		t.Fatalf("audience has %d endpoints after unsubscribe, want 0", n)
	}

	back := subscription(w.Website.ID)
	back.ExternalID = "user-3"
	back.At = at(time.Hour)
	res := subscribe(t, s, back)
	if !res.Created || res.SubscriberID != first.SubscriberID {
		t.Fatalf("resubscription = %+v, want a new endpoint of %s", res, first.SubscriberID)
	}
	r := recipient(t, s, w.Website.ID, res.EndpointID)
	if r.Subscriber.UnsubscribedAt != nil || !r.Subscriber.LastSeenAt.Equal(back.At) {
		t.Fatalf("resubscribed subscriber = %+v, want subscribed, last seen %v", r.Subscriber, back.At)
	}

	// The same endpoint URL again after unsubscribing: a new endpoint record.
	_, err = s.DeleteSubscription(ctx, w.Website.ID, back.Endpoint)
	noErr(t, "DeleteSubscription", err)
	again := subscribe(t, s, back)
	if !again.Created || again.EndpointID == res.EndpointID || again.SubscriberID != first.SubscriberID {
		t.Fatalf("same endpoint after unsubscribe = %+v", again)
	}
}

func testSubscriptionTopics(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	news := createTopic(t, s, w.Website.ID, "News", "news", t0).ID
	deals := createTopic(t, s, w.Website.ID, "Deals", "deals", t0).ID
	sports := createTopic(t, s, w.Website.ID, "Sports", "sports", t0).ID
	in := subscription(w.Website.ID)
	in.Topics = []string{"NEWS", "deals", "unknown-topic"}
	res := subscribe(t, s, in)
	// Again with the same topics: opting in twice is no error.
	in.At = at(time.Minute)
	again := subscribe(t, s, in)
	same(t, "second registration", again, store.SubscriptionResult{SubscriberID: res.SubscriberID, EndpointID: res.EndpointID})
	other := subscribe(t, s, subscription(w.Website.ID))
	for _, c := range []struct {
		topic, subscriber string
		want              bool
	}{
		{news, res.SubscriberID, true}, // slugs match in any case
		{deals, res.SubscriberID, true},
		{sports, res.SubscriberID, false},
		{news, other.SubscriberID, false},
	} {
		p, err := s.Person(ctx, w.Website.ID, c.subscriber)
		noErr(t, "Person", err)
		if got := slices.Contains(p.Topics, c.topic); got != c.want {
			t.Fatalf("OptedIn(%s, %s) = %v, want %v", c.topic, c.subscriber, got, c.want)
		}
	}
}

// testUnsubscribedWithoutEndpoints: a subscriber left with no endpoint is
// marked unsubscribed, whether the visitor turned notifications off, the
// push service pruned the subscription, or the endpoint moved to the owner
// of an external id.
func testUnsubscribedWithoutEndpoints(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	unsubscribed := func(subscriberID string) bool {
		t.Helper()
		p, err := s.Person(ctx, w.Website.ID, subscriberID)
		noErr(t, "Person", err)
		return p.UnsubscribedAt != nil
	}
	sub := func(externalID string) (store.SubscriptionInput, store.SubscriptionResult) {
		t.Helper()
		in := subscription(w.Website.ID)
		in.ExternalID = externalID
		return in, subscribe(t, s, in)
	}

	aIn, a := sub("")
	if unsubscribed(a.SubscriberID) {
		t.Fatal("a new subscriber is unsubscribed")
	}
	_, err := s.DeleteSubscription(ctx, w.Website.ID, aIn.Endpoint)
	noErr(t, "DeleteSubscription", err)
	if !unsubscribed(a.SubscriberID) {
		t.Fatal("subscriber without endpoints is not unsubscribed after DeleteSubscription")
	}

	_, b := sub("")
	n := create(t, s, notification(w.Website.ID))
	noErr(t, "RecordResults", recordResults(s, ctx, n.ID, []store.PushResult{{EndpointID: b.EndpointID, Outcome: store.OutcomePruned}}))
	if !unsubscribed(b.SubscriberID) {
		t.Fatal("subscriber without endpoints is not unsubscribed after pruning")
	}

	cIn, c := sub("")
	_, d := sub("user-moving")
	cIn.ExternalID = "user-moving"
	moved := subscribe(t, s, cIn)
	if moved.SubscriberID != d.SubscriberID {
		t.Fatalf("endpoint did not move to the external id's owner: %+v", moved)
	}
	if !unsubscribed(c.SubscriberID) {
		t.Fatal("subscriber left by its endpoint is not unsubscribed")
	}
	if unsubscribed(d.SubscriberID) {
		t.Fatal("subscriber with endpoints is unsubscribed")
	}
}

// testConcurrentRegistrations: registrations of the same new browser, and of
// new browsers of the same new person, racing (on several API nodes) end up
// as one endpoint and one person.
func testConcurrentRegistrations(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	browser := subscription(w.Website.ID)
	results := make([]store.SubscriptionResult, 16)
	errs := make([]error, len(results))
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() {
			in := browser
			if i%2 == 1 {
				in = subscription(w.Website.ID)
			}
			in.ExternalID = "racer"
			results[i], errs[i] = s.UpsertSubscription(ctx, in)
		})
	}
	wg.Wait()
	created := 0
	for i, res := range results {
		noErr(t, "concurrent UpsertSubscription", errs[i])
		if res.SubscriberID != results[0].SubscriberID {
			t.Fatalf("registrations of one person got subscribers %s and %s", results[0].SubscriberID, res.SubscriberID)
		}
		if i%2 == 0 && res.Created {
			created++
		}
	}
	if created != 1 {
		t.Fatalf("the same browser was created %d times, want 1", created)
	}
}

// testConcurrentRegistrationBatches: batches of new browsers of the same
// new people, racing (on several API nodes, each batch's inserts sent
// together on PostgreSQL: sqlstore.Pipeline), end up as one person each:
// a batch that loses the race to create a person runs again and finds it.
func testConcurrentRegistrationBatches(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	const racers, people = 4, 8
	results := make([][]store.SubscriptionResult, racers)
	errs := make([]error, racers)
	var wg sync.WaitGroup
	for r := range racers {
		wg.Go(func() {
			batch := make([]store.SubscriptionInput, people)
			for p := range batch {
				batch[p] = subscription(w.Website.ID)
				batch[p].ExternalID = fmt.Sprintf("racer-%d", p)
			}
			results[r], errs[r] = s.UpsertSubscriptions(ctx, batch)
		})
	}
	wg.Wait()
	for r := range racers {
		noErr(t, "concurrent UpsertSubscriptions", errs[r])
		for p, res := range results[r] {
			if !res.Created || res.SubscriberID != results[0][p].SubscriberID {
				t.Fatalf("racer %d, person %d: %+v, want a new browser of subscriber %s", r, p, res, results[0][p].SubscriberID)
			}
		}
	}
	browsers := map[string]int{}
	for _, r := range everyone(t, s, w.Website.ID) {
		browsers[r.Subscriber.ID]++
	}
	for p := range people {
		if n := browsers[results[0][p].SubscriberID]; n != racers {
			t.Fatalf("person %d has %d browsers, want %d", p, n, racers)
		}
	}
	if len(browsers) != people {
		t.Fatalf("%d people, want %d", len(browsers), people)
	}
}

func testEndpointLookup(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	in := subscription(w.Website.ID)
	res := subscribe(t, s, in)
	_, err := s.Endpoint(ctx, w.Website.ID, uuid.NewString())
	wantErr(t, "Endpoint(unknown)", err, store.ErrNotFound)
	_, err = s.Endpoint(ctx, newWebsite(t, s).Website.ID, res.EndpointID)
	wantErr(t, "Endpoint(other website)", err, store.ErrNotFound)
	e, err := s.Endpoint(ctx, w.Website.ID, res.EndpointID)
	noErr(t, "Endpoint", err)
	same(t, "Endpoint", e, wantRecipient(in, res).Endpoint)
}

// personTopics is the slugs of the topics the subscriber opted into, sorted.
func personTopics(t *testing.T, s store.Store, websiteID, subscriberID string) []string {
	t.Helper()
	p, err := s.Person(context.Background(), websiteID, subscriberID)
	noErr(t, "Person", err)
	topics, err := s.ListTopics(context.Background(), websiteID)
	noErr(t, "ListTopics", err)
	out := []string{}
	for _, tp := range topics {
		if slices.Contains(p.Topics, tp.ID) {
			out = append(out, tp.Slug)
		}
	}
	slices.Sort(out)
	return out
}

// testSubscriptionSetTopics: with SetTopics the registration's topics are
// the subscriber's whole set; without it they are added; an import adds
// too, whatever the browser set.
func testSubscriptionSetTopics(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	for _, slug := range []string{"news", "deals", "sports"} {
		createTopic(t, s, w.Website.ID, slug, slug, t0)
	}
	other := newWebsite(t, s)
	createTopic(t, s, other.Website.ID, "news", "news", t0)
	in := subscription(w.Website.ID)
	in.ExternalID = "reader"
	res := subscribe(t, s, in)
	bystander := subscription(w.Website.ID)
	bystander.Topics = []string{"news"}
	by := subscribe(t, s, bystander)
	topics := func(what string, want ...string) {
		t.Helper()
		same(t, what, personTopics(t, s, w.Website.ID, res.SubscriberID), append([]string{}, want...))
	}

	steps := []struct {
		what      string
		topics    []string
		setTopics bool
		want      []string
	}{
		{"added", []string{"news", "deals"}, false, []string{"deals", "news"}},
		{"added again", []string{"sports"}, false, []string{"deals", "news", "sports"}},
		{"no topics: untouched", nil, false, []string{"deals", "news", "sports"}},
		{"set: others removed", []string{"DEALS", "unknown"}, true, []string{"deals"}},
		{"set: replaced", []string{"news", "sports"}, true, []string{"news", "sports"}},
		{"set again", []string{"news", "sports"}, true, []string{"news", "sports"}},
		{"set empty: none", []string{}, true, nil},
		{"set nil: none", nil, true, nil},
	}
	for i, c := range steps {
		step := in
		step.Topics, step.SetTopics, step.At = c.topics, c.setTopics, at(time.Duration(i+1)*time.Minute)
		got := subscribe(t, s, step)
		got.OptedIn = nil // testSubscriptionOptedIn checks it
		same(t, c.what+": ids", got, store.SubscriptionResult{SubscriberID: res.SubscriberID, EndpointID: res.EndpointID})
		topics(c.what, c.want...)
	}
	same(t, "another subscriber's topics", personTopics(t, s, w.Website.ID, by.SubscriberID), []string{"news"})

	// An import adds to what the browser set; the browser's next set is the
	// whole set again.
	_, err := s.ImportPeople(ctx, w.Website.ID, []store.ImportRow{{ExternalID: "reader", Tags: map[string]string{}, Topics: []string{"news"}}}, at(time.Hour))
	noErr(t, "ImportPeople", err)
	step := in
	step.Topics, step.SetTopics, step.At = []string{"deals"}, true, at(2*time.Hour)
	subscribe(t, s, step)
	_, err = s.ImportPeople(ctx, w.Website.ID, []store.ImportRow{{ExternalID: "reader", Tags: map[string]string{}, Topics: []string{"sports"}}}, at(3*time.Hour))
	noErr(t, "ImportPeople", err)
	topics("after set and import", "deals", "sports")
	step.Topics, step.SetTopics, step.At = nil, false, at(4*time.Hour)
	subscribe(t, s, step)
	topics("registration without topics after import", "deals", "sports")

	// A new browser of an imported person with a set: the person's set.
	_, err = s.ImportPeople(ctx, w.Website.ID, []store.ImportRow{{ExternalID: "imported", Tags: map[string]string{}, Topics: []string{"news", "sports"}}}, at(time.Hour))
	noErr(t, "ImportPeople", err)
	fresh := subscription(w.Website.ID)
	fresh.ExternalID, fresh.Topics, fresh.SetTopics = "imported", []string{"deals"}, true
	f := subscribe(t, s, fresh)
	same(t, "imported person's set", personTopics(t, s, w.Website.ID, f.SubscriberID), []string{"deals"})
}

// testLogout: Logout moves a person's browser to a new anonymous
// subscriber; the person keeps the rest and, with no browser left, has no
// device; an anonymous browser stays as it is.
func testLogout(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	news := createTopic(t, s, w.Website.ID, "News", "news", t0)
	laptop := subscription(w.Website.ID)
	laptop.ExternalID, laptop.Topics = "alice", []string{"news"}
	l := subscribe(t, s, laptop)
	phone := subscription(w.Website.ID)
	phone.ExternalID, phone.Device = "alice", "android"
	p := subscribe(t, s, phone)
	_, err := s.TagPeople(ctx, w.Website.ID, []string{l.SubscriberID}, map[string]string{"plan": "pro"}, nil)
	noErr(t, "TagPeople", err)
	alice, err := s.Person(ctx, w.Website.ID, "alice")
	noErr(t, "Person(alice)", err)

	out := store.SubscriptionInput{
		WebsiteID: w.Website.ID, Endpoint: laptop.Endpoint, P256dh: laptop.P256dh, Auth: laptop.Auth,
		Logout: true, Language: "en-GB", Timezone: "Europe/London", Country: "GB", URL: "https://example.com/bye",
		At: at(time.Hour),
	}
	res := subscribe(t, s, out)
	if res.Created || res.EndpointID != l.EndpointID || res.SubscriberID == l.SubscriberID || res.SubscriberID == "" {
		t.Fatalf("logout = %+v, want endpoint %s under a new subscriber", res, l.EndpointID)
	}
	anon, err := s.Person(ctx, w.Website.ID, res.SubscriberID)
	noErr(t, "Person(new)", err)
	same(t, "anonymous subscriber", anon, store.Person{
		Subscriber: store.Subscriber{ID: res.SubscriberID, WebsiteID: w.Website.ID, Country: "GB", Language: "en-GB",
			Timezone: "Europe/London", URL: "https://example.com/bye", Tags: map[string]string{},
			Shard: store.ShardOf(res.SubscriberID), CreatedAt: out.At, LastSeenAt: out.At},
		ConsentAt: ptr(out.At),
		Devices:   []string{"desktop"},
	})
	e, err := s.Endpoint(ctx, w.Website.ID, l.EndpointID)
	noErr(t, "Endpoint", err)
	want := wantRecipient(laptop, l).Endpoint
	want.SubscriberID, want.LastSeenAt, want.Language = res.SubscriberID, out.At, "en-GB" // its own language
	same(t, "endpoint after logout", e, want)
	same(t, "recipient's shard", recipient(t, s, w.Website.ID, l.EndpointID).Subscriber.Shard, store.ShardOf(res.SubscriberID))

	// alice keeps her phone, tags and topics.
	kept, err := s.Person(ctx, w.Website.ID, "alice")
	noErr(t, "Person(alice)", err)
	alice.Devices = []string{"android"}
	same(t, "alice after the laptop's logout", kept, alice)
	same(t, "alice's topics", kept.Topics, []string{news.ID})
	page, err := s.Audience(ctx, store.AudienceQuery{WebsiteID: w.Website.ID, Shard: store.ShardOf(l.SubscriberID),
		Limit: 100, ExternalIDs: []string{"alice"}})
	noErr(t, "Audience(alice)", err)
	if len(page) != 1 || page[0].Endpoint.ID != p.EndpointID {
		t.Fatalf("alice's audience = %+v, want only her phone", page)
	}

	// Her last browser logs out: she has no device, and is not unsubscribed.
	last := phone
	last.ExternalID, last.Logout, last.At = "", true, at(2*time.Hour)
	ph := subscribe(t, s, last)
	if ph.EndpointID != p.EndpointID || ph.SubscriberID == l.SubscriberID || ph.SubscriberID == res.SubscriberID {
		t.Fatalf("phone's logout = %+v", ph)
	}
	kept, err = s.Person(ctx, w.Website.ID, "alice")
	noErr(t, "Person(alice)", err)
	same(t, "alice without browsers", []any{kept.ID, kept.Status(), kept.UnsubscribedAt, kept.Tags, kept.Topics},
		[]any{l.SubscriberID, "no_device", (*time.Time)(nil), map[string]string{"plan": "pro"}, []string{news.ID}})

	// Logging out an anonymous browser changes nothing but what is given.
	again := out
	again.At = at(3 * time.Hour)
	same(t, "second logout", subscribe(t, s, again), store.SubscriptionResult{SubscriberID: res.SubscriberID, EndpointID: l.EndpointID})
	// A browser RelayBell does not know yet: a new anonymous subscriber.
	fresh := subscription(w.Website.ID)
	fresh.Logout = true
	f := subscribe(t, s, fresh)
	r := recipient(t, s, w.Website.ID, f.EndpointID)
	if !f.Created || r.Subscriber.ExternalID != "" || f.SubscriberID == l.SubscriberID {
		t.Fatalf("logout of a new browser = %+v, %+v", f, r.Subscriber)
	}

	// alice logs in again on the laptop: it joins her once more.
	back := laptop
	back.Topics, back.At = nil, at(4*time.Hour)
	same(t, "login after logout", subscribe(t, s, back), store.SubscriptionResult{SubscriberID: l.SubscriberID, EndpointID: l.EndpointID})
	kept, err = s.Person(ctx, w.Website.ID, "alice")
	noErr(t, "Person(alice)", err)
	same(t, "alice's status", kept.Status(), "subscribed")
	anon, err = s.Person(ctx, w.Website.ID, res.SubscriberID)
	noErr(t, "Person(anonymous)", err)
	same(t, "anonymous subscriber the laptop left", anon.Status(), "unsubscribed")
}

// testReplacesEndpoint: a subscription that replaces a known endpoint
// takes its place (same ids, new URL and keys) unless its own URL is known.
func testReplacesEndpoint(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	old := subscription(w.Website.ID)
	old.ExternalID = "user-8"
	first := subscribe(t, s, old)

	// Naming the endpoint without its auth secret takes nothing over.
	thief := subscription(w.Website.ID)
	thief.Replaces, thief.ReplacesAuth = old.Endpoint, "c3RvbGVu"
	if got := subscribe(t, s, thief); !got.Created || got.EndpointID == first.EndpointID || got.SubscriberID == first.SubscriberID {
		t.Fatalf("replacing without the auth secret = %+v, want a new endpoint of a new subscriber", got)
	}
	_, err := s.DeleteSubscription(ctx, w.Website.ID, thief.Endpoint)
	noErr(t, "DeleteSubscription(thief)", err)

	renewed := subscription(w.Website.ID)
	renewed.Replaces, renewed.ReplacesAuth, renewed.At = old.Endpoint, old.Auth, at(time.Hour)
	renewed.Language, renewed.UserAgent, renewed.Device = "", "", ""
	res := subscribe(t, s, renewed)
	same(t, "renewed subscription", res, store.SubscriptionResult{SubscriberID: first.SubscriberID, EndpointID: first.EndpointID})
	want := wantRecipient(old, first)
	want.Endpoint.URL, want.Endpoint.P256dh, want.Endpoint.Auth = renewed.Endpoint, renewed.P256dh, renewed.Auth
	want.Endpoint.LastSeenAt, want.Subscriber.LastSeenAt = renewed.At, renewed.At
	all := everyone(t, s, w.Website.ID)
	if len(all) != 1 {
		t.Fatalf("audience has %d endpoints, want 1", len(all))
	}
	same(t, "recipient", all[first.EndpointID], want)
	_, err = s.DeleteSubscription(ctx, w.Website.ID, old.Endpoint)
	wantErr(t, "DeleteSubscription(old URL)", err, store.ErrNotFound)

	// The new URL registered already: that endpoint is updated, the
	// replaced one stays.
	known := subscription(w.Website.ID)
	k := subscribe(t, s, known)
	again := known
	again.Replaces, again.ReplacesAuth, again.At = renewed.Endpoint, renewed.Auth, at(2*time.Hour)
	same(t, "replacing with a known URL", subscribe(t, s, again), store.SubscriptionResult{SubscriberID: k.SubscriberID, EndpointID: k.EndpointID})
	if n := len(everyone(t, s, w.Website.ID)); n != 2 {
		t.Fatalf("audience has %d endpoints, want 2", n)
	}

	// An unknown URL, or another website's, replaces nothing.
	for _, replaces := range []string{"https://fcm.googleapis.com/fcm/send/unknown", renewed.Endpoint} {
		in := subscription(newWebsite(t, s).Website.ID)
		in.Replaces, in.ReplacesAuth = replaces, renewed.Auth
		if got := subscribe(t, s, in); !got.Created || got.EndpointID == first.EndpointID {
			t.Fatalf("replacing %s = %+v, want a new endpoint", replaces, got)
		}
	}
	e, err := s.Endpoint(ctx, w.Website.ID, first.EndpointID)
	noErr(t, "Endpoint", err)
	same(t, "replaced endpoint after the others", e.URL, renewed.Endpoint)
}
