package storetest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/store"
)

var audienceCases = []testCase{
	{"Paging", testAudiencePaging},
	{"ExternalIDs", testAudienceExternalIDs},
	{"Empty", testAudienceEmpty},
	{"SegmentLookup", testSegmentLookup},
	{"TopicLookup", testTopicLookup},
	{"OneEndpoint", testOneEndpointAudience},
	{"Lean", testLeanAudience},
	{"LeanLanguageRace", testLeanLanguageRace},
}

// walkShard walks one shard with the given page size and checks each page.
func walkShard(t *testing.T, s store.Store, q store.AudienceQuery) []store.Recipient {
	t.Helper()
	var all []store.Recipient
	for pages := 0; ; pages++ {
		if pages > 10_000 {
			t.Fatal("audience paging does not end")
		}
		page, err := s.Audience(context.Background(), q)
		noErr(t, "Audience", err)
		if len(page) > q.Limit {
			t.Fatalf("page of %d recipients, limit %d", len(page), q.Limit)
		}
		for i, r := range page {
			if r.Endpoint.ID <= q.AfterID || (i > 0 && r.Endpoint.ID <= page[i-1].Endpoint.ID) {
				t.Fatalf("page after %q not in ascending endpoint id order: %q at %d", q.AfterID, r.Endpoint.ID, i)
			}
			if r.Subscriber.Shard != q.Shard || store.ShardOf(r.Subscriber.ID) != q.Shard {
				t.Fatalf("recipient of subscriber %s (shard %d) in shard %d", r.Subscriber.ID, r.Subscriber.Shard, q.Shard)
			}
			if r.Endpoint.WebsiteID != q.WebsiteID || r.Subscriber.WebsiteID != q.WebsiteID ||
				r.Endpoint.SubscriberID != r.Subscriber.ID {
				t.Fatalf("recipient %+v does not belong to website %s", r, q.WebsiteID)
			}
		}
		all = append(all, page...)
		if len(page) < q.Limit {
			return all
		}
		q.AfterID = page[len(page)-1].Endpoint.ID
	}
}

func testAudiencePaging(t *testing.T, s store.Store) {
	w, other := newWebsite(t, s), newWebsite(t, s)
	want := map[string]store.Recipient{}
	for i := range 300 {
		in := subscription(w.Website.ID)
		if i%3 == 0 {
			in.ExternalID = fmt.Sprintf("user-%d", i)
		}
		in.Language = []string{"en", "fr", "de"}[i%3]
		in.At = at(time.Duration(i) * time.Second)
		res := subscribe(t, s, in)
		want[res.EndpointID] = wantRecipient(in, res)
		if in.ExternalID != "" && i%10 == 0 { // a second browser of the same person
			in2 := subscription(w.Website.ID)
			in2.ExternalID, in2.Language, in2.At = in.ExternalID, in.Language, in.At
			res2 := subscribe(t, s, in2)
			want[res2.EndpointID] = wantRecipient(in2, res2)
		}
	}
	for range 40 {
		subscribe(t, s, subscription(other.Website.ID))
	}

	got := map[string]store.Recipient{}
	pagesOfSeveral := 0
	for shard := range store.Shards {
		rs := walkShard(t, s, store.AudienceQuery{WebsiteID: w.Website.ID, Shard: shard, Limit: 2})
		if len(rs) > 4 {
			pagesOfSeveral++
		}
		for _, r := range rs {
			if _, dup := got[r.Endpoint.ID]; dup {
				t.Fatalf("endpoint %s returned twice", r.Endpoint.ID)
			}
			got[r.Endpoint.ID] = r
		}
	}
	if pagesOfSeveral == 0 {
		t.Fatal("no shard needed more than two pages; the test is not testing paging")
	}
	if len(got) != len(want) {
		t.Fatalf("audience has %d endpoints, want %d", len(got), len(want))
	}
	for id, r := range want {
		same(t, "recipient "+id, got[id], r)
	}

	// A page size larger than the shard returns it whole, in one page.
	shard := want[slices.Sorted(maps.Keys(want))[0]].Subscriber.Shard
	whole := walkShard(t, s, store.AudienceQuery{WebsiteID: w.Website.ID, Shard: shard, Limit: 1000})
	paged := walkShard(t, s, store.AudienceQuery{WebsiteID: w.Website.ID, Shard: shard, Limit: 1})
	same(t, "whole shard vs paged by 1", whole, paged)
}

func testAudienceExternalIDs(t *testing.T, s store.Store) {
	ctx := context.Background()
	w, other := newWebsite(t, s), newWebsite(t, s)
	endpointsOf := map[string][]string{} // external id -> endpoint ids
	for i := range 60 {
		in := subscription(w.Website.ID)
		if i%4 != 3 {
			in.ExternalID = fmt.Sprintf("u%d", i%5)
		}
		res := subscribe(t, s, in)
		endpointsOf[in.ExternalID] = append(endpointsOf[in.ExternalID], res.EndpointID)
	}
	// The same external ids on another website stay out.
	for i := range 5 {
		in := subscription(other.Website.ID)
		in.ExternalID = fmt.Sprintf("u%d", i)
		subscribe(t, s, in)
	}

	f := func(ids []string, limit int, want []string) {
		t.Helper()
		var got []string
		for shard := range store.Shards {
			for _, r := range walkShard(t, s, store.AudienceQuery{WebsiteID: w.Website.ID, Shard: shard, Limit: limit, ExternalIDs: ids}) {
				if !slices.Contains(ids, r.Subscriber.ExternalID) {
					t.Fatalf("ExternalIDs %q returned subscriber with external id %q", ids, r.Subscriber.ExternalID)
				}
				got = append(got, r.Endpoint.ID)
			}
		}
		slices.Sort(got)
		slices.Sort(want)
		same(t, fmt.Sprintf("endpoints of %q", ids), got, want)
	}
	f([]string{"u1", "u3", "nobody"}, 2, slices.Concat(endpointsOf["u1"], endpointsOf["u3"]))
	f([]string{"u0"}, 1, endpointsOf["u0"])
	f([]string{"u0", "u1", "u2", "u3", "u4"}, 1000, slices.Concat(endpointsOf["u0"], endpointsOf["u1"],
		endpointsOf["u2"], endpointsOf["u3"], endpointsOf["u4"]))
	f([]string{"nobody"}, 10, nil)
	f([]string{"u4", "u4"}, 1, endpointsOf["u4"]) // a repeated id does not repeat its endpoints

	// A person whose browsers are all gone is not in the audience.
	for _, e := range endpointsOf["u2"] {
		noErr(t, "RecordResults", recordResults(s, ctx, create(t, s, notification(w.Website.ID)).ID,
			[]store.PushResult{{EndpointID: e, Outcome: store.OutcomePruned}}))
	}
	f([]string{"u2", "u4"}, 3, endpointsOf["u4"])
}

func testAudienceEmpty(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	for _, q := range []store.AudienceQuery{
		{WebsiteID: w.Website.ID, Shard: 0, Limit: 10},
		{WebsiteID: uuid.NewString(), Shard: 5, Limit: 10},
		{WebsiteID: w.Website.ID, Shard: 7, Limit: 10, ExternalIDs: []string{"x"}},
	} {
		got, err := s.Audience(ctx, q)
		noErr(t, "Audience", err)
		if len(got) != 0 {
			t.Fatalf("Audience(%+v) = %d recipients, want none", q, len(got))
		}
	}
	// Past the last endpoint id of a shard.
	res := subscribe(t, s, subscription(w.Website.ID))
	shard := store.ShardOf(res.SubscriberID)
	got, err := s.Audience(ctx, store.AudienceQuery{WebsiteID: w.Website.ID, Shard: shard, AfterID: res.EndpointID, Limit: 10})
	noErr(t, "Audience", err)
	if len(got) != 0 {
		t.Fatalf("Audience after the last endpoint = %d recipients, want none", len(got))
	}
	got, err = s.Audience(ctx, store.AudienceQuery{WebsiteID: w.Website.ID, Shard: (shard + 1) % store.Shards, Limit: 10})
	noErr(t, "Audience", err)
	if len(got) != 0 {
		t.Fatalf("Audience of another shard = %d recipients, want none", len(got))
	}
}

func testSegmentLookup(t *testing.T, s store.Store) {
	ctx := context.Background()
	w, other := newWebsite(t, s), newWebsite(t, s)
	id := uuid.NewString()
	noErr(t, "CreateSegment", s.CreateSegment(ctx, store.Segment{ID: id, WebsiteID: w.Website.ID, Name: "French speakers",
		Filters: []byte(`{"match":"all","rules":[{"field":"language","op":"eq","value":"fr"}]}`), CreatedAt: t0}))
	f := func(websiteID, id string, want bool) {
		t.Helper()
		_, err := s.Segment(ctx, websiteID, id)
		if want {
			noErr(t, "Segment", err)
		} else {
			wantErr(t, "Segment", err, store.ErrNotFound)
		}
	}
	f(w.Website.ID, id, true)
	f(other.Website.ID, id, false)
	f(w.Website.ID, uuid.NewString(), false)
}

// createTopic saves a new topic and fails the test if it was a rename.
func createTopic(t *testing.T, s store.Store, websiteID, name, slug string, at time.Time) store.Topic {
	t.Helper()
	tp, created, err := s.SaveTopic(context.Background(), store.Topic{
		ID: uuid.NewString(), WebsiteID: websiteID, Name: name, Slug: slug, CreatedAt: at})
	noErr(t, "SaveTopic", err)
	if !created {
		t.Fatalf("SaveTopic(%s) renamed %+v instead of creating", slug, tp)
	}
	return tp
}

func testTopicLookup(t *testing.T, s store.Store) {
	ctx := context.Background()
	w, other := newWebsite(t, s), newWebsite(t, s)
	id := createTopic(t, s, w.Website.ID, "Breaking News", "breaking-news", t0).ID
	createTopic(t, s, other.Website.ID, "Breaking News", "breaking-news", t0)

	f := func(websiteID, idOrSlug string, want bool) {
		t.Helper()
		got, err := s.Topic(ctx, websiteID, idOrSlug)
		if !want {
			wantErr(t, "Topic("+idOrSlug+")", err, store.ErrNotFound)
			return
		}
		noErr(t, "Topic("+idOrSlug+")", err)
		if got.ID != id {
			t.Fatalf("Topic(%q) = %s, want %s", idOrSlug, got.ID, id)
		}
	}
	f(w.Website.ID, id, true)
	f(w.Website.ID, strings.ToUpper(id), true)
	f(w.Website.ID, "breaking-news", true)
	f(w.Website.ID, "Breaking-NEWS", true)
	f(w.Website.ID, "breaking", false)
	f(w.Website.ID, uuid.NewString(), false)
	f(other.Website.ID, id, false)
	f(newWebsite(t, s).Website.ID, "breaking-news", false)
}

// testOneEndpointAudience: a send to one browser (a welcome) reaches that
// endpoint alone, not its person's other browsers, in the shard it is in
// now (EndpointShard), even after it moved to another person; another
// website's, or one gone, reaches nobody.
func testOneEndpointAudience(t *testing.T, s store.Store) {
	ctx := context.Background()
	w, other := newWebsite(t, s), newWebsite(t, s)
	named := func(externalID string) (store.SubscriptionInput, store.SubscriptionResult) {
		in := subscription(w.Website.ID)
		in.ExternalID = externalID
		return in, subscribe(t, s, in)
	}
	_, first := named("ada")
	in2, second := named("ada") // Ada's second browser
	if second.SubscriberID != first.SubscriberID {
		t.Fatalf("the second browser is person %s, not %s", second.SubscriberID, first.SubscriberID)
	}
	named("") // somebody else
	walk := func(websiteID, endpointID string) []string {
		t.Helper()
		var got []string
		for shard := range store.Shards {
			for _, r := range walkShard(t, s, store.AudienceQuery{WebsiteID: websiteID, Shard: shard, Limit: 10, EndpointID: endpointID}) {
				got = append(got, r.Endpoint.ID)
			}
		}
		return got
	}
	if got := walk(w.Website.ID, second.EndpointID); !slices.Equal(got, []string{second.EndpointID}) {
		t.Fatalf("audience %v, want the second browser %s alone", got, second.EndpointID)
	}
	shard := store.ShardOf(second.SubscriberID)
	page, err := s.Audience(ctx, store.AudienceQuery{WebsiteID: w.Website.ID, Shard: shard, Limit: 10, EndpointID: second.EndpointID})
	noErr(t, "Audience", err)
	same(t, "the one recipient", page, []store.Recipient{wantRecipient(in2, second)})
	got, err := s.EndpointShard(ctx, w.Website.ID, second.EndpointID)
	noErr(t, "EndpointShard", err)
	if got != shard {
		t.Fatalf("EndpointShard = %d, want %d", got, shard)
	}
	people := 0
	noErr(t, "Reachable", s.Reachable(ctx, store.ReachQuery{WebsiteID: w.Website.ID, Shard: store.AllShards, EndpointID: second.EndpointID},
		func(sub *store.Subscriber, browsers int) {
			if sub.ID != second.SubscriberID || browsers != 1 {
				t.Errorf("reached %s with %d browsers, want %s with 1", sub.ID, browsers, second.SubscriberID)
			}
			people++
		}))
	if people != 1 {
		t.Fatalf("reached %d people, want 1", people)
	}

	// Another website's: nobody, and no shard.
	if got := walk(other.Website.ID, second.EndpointID); len(got) != 0 {
		t.Fatalf("another website reached %v", got)
	}
	if _, err := s.EndpointShard(ctx, other.Website.ID, second.EndpointID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("another website's EndpointShard: %v, want ErrNotFound", err)
	}
	// With anyone else named: refused, never wider.
	for _, q := range []store.AudienceQuery{
		{SubscriberID: first.SubscriberID},
		{ExternalIDs: []string{"ada"}},
		{TestDevices: true},
		{AlertID: uuid.NewString()},
	} {
		q.WebsiteID, q.Shard, q.Limit, q.EndpointID = w.Website.ID, shard, 10, second.EndpointID
		if page, err := s.Audience(ctx, q); err == nil {
			t.Fatalf("Audience(%+v) = %d recipients, want an error", q, len(page))
		}
	}

	// An anonymous browser that logs in moves to Ada: found in her shard.
	anon := subscription(w.Website.ID)
	moved := subscribe(t, s, anon)
	anon.ExternalID = "ada"
	if res := subscribe(t, s, anon); res.EndpointID != moved.EndpointID || res.SubscriberID != first.SubscriberID {
		t.Fatalf("login: %+v, want endpoint %s of %s", res, moved.EndpointID, first.SubscriberID)
	}
	if got, err := s.EndpointShard(ctx, w.Website.ID, moved.EndpointID); err != nil || got != shard {
		t.Fatalf("EndpointShard after the login = %d, %v; want %d", got, err, shard)
	}
	if got := walk(w.Website.ID, moved.EndpointID); !slices.Equal(got, []string{moved.EndpointID}) {
		t.Fatalf("audience after the login %v, want %s alone", got, moved.EndpointID)
	}

	// Gone (the visitor turned notifications off): nobody, no shard.
	_, err = s.DeleteSubscription(ctx, w.Website.ID, in2.Endpoint)
	noErr(t, "DeleteSubscription", err)
	if got := walk(w.Website.ID, second.EndpointID); len(got) != 0 {
		t.Fatalf("a removed endpoint reached %v", got)
	}
	if _, err := s.EndpointShard(ctx, w.Website.ID, second.EndpointID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a removed endpoint's EndpointShard: %v, want ErrNotFound", err)
	}
}

// testLeanAudience: a lean walk (AudienceQuery.Lean) selects exactly the
// endpoints of the full walk, in its order and pages, with the same
// endpoint fields and the subscriber's id; the other subscriber fields are
// left zero. Each endpoint's language is its browser's, as it last
// registered with one, whatever its person's: a registration in another
// language changes that browser's alone, a browser moving to another
// person or logging out keeps its own unless it names another, a new
// browser without one takes its person's, and a batch of registrations
// does as registrations one by one.
func testLeanAudience(t *testing.T, s store.Store) {
	ctx := context.Background()
	w, other := newWebsite(t, s), newWebsite(t, s)
	tp := createTopic(t, s, w.Website.ID, "News", "news", t0)
	person := func(ext, lang string, browsers int) []store.SubscriptionInput {
		var out []store.SubscriptionInput
		for i := range browsers {
			in := subscription(w.Website.ID)
			in.ExternalID, in.Language = ext, lang
			if i == 0 {
				in.Topics = []string{"news"}
			}
			subscribe(t, s, in)
			out = append(out, in)
		}
		return out
	}
	ada := person("ada", "en", 3)
	bob := person("bob", "de", 2)
	person("", "it", 1)
	for i := range 30 {
		in := subscription(w.Website.ID)
		in.Language = []string{"en", "fr", "pt-BR", ""}[i%4]
		subscribe(t, s, in)
	}
	for range 5 {
		subscribe(t, s, subscription(other.Website.ID))
	}

	// Ada's second browser registers in Spanish: her person speaks it, her
	// other browsers do not.
	again := ada[1]
	again.Language, again.Topics = "es", nil
	subscribe(t, s, again)
	// Bob's first browser signs in as Ada without a language (it moves to
	// her, still German); his second logs out in Greek (a new subscriber
	// of its own).
	moved := bob[0]
	moved.ExternalID, moved.Language, moved.Topics = "ada", "", nil
	subscribe(t, s, moved)
	out := bob[1]
	out.ExternalID, out.Logout, out.Language = "", true, "el"
	subscribe(t, s, out)
	// Two new browsers and Ada's third in one batch, the third in Japanese.
	batch := []store.SubscriptionInput{subscription(w.Website.ID), subscription(w.Website.ID), ada[2]}
	batch[2].Language, batch[2].Topics = "ja", nil
	batch[0].Language = "ko"
	if _, err := s.UpsertSubscriptions(ctx, batch); err != nil {
		t.Fatalf("UpsertSubscriptions: %v", err)
	}
	// A new browser of Ada's without a language takes hers, Japanese now.
	newer := subscription(w.Website.ID)
	newer.ExternalID, newer.Language = "ada", ""
	subscribe(t, s, newer)
	// One browser of someone alone unsubscribes: its subscriber is left
	// without a browser, and marked unsubscribed.
	gone := subscription(w.Website.ID)
	subscribe(t, s, gone)
	_, err := s.DeleteSubscription(ctx, w.Website.ID, gone.Endpoint)
	noErr(t, "DeleteSubscription", err)

	check := func(step string, topicID string) map[string]store.Recipient {
		t.Helper()
		byURL := map[string]store.Recipient{}
		for shard := range store.Shards {
			q := store.AudienceQuery{WebsiteID: w.Website.ID, Shard: shard, TopicID: topicID, Limit: 3}
			full := walkShard(t, s, q)
			q.Lean = true
			lean := walkShard(t, s, q)
			if len(lean) != len(full) {
				t.Fatalf("%s: shard %d: lean walk has %d endpoints, the full walk %d", step, shard, len(lean), len(full))
			}
			for i, f := range full {
				want := store.Recipient{Endpoint: f.Endpoint, Subscriber: store.Subscriber{ID: f.Subscriber.ID,
					WebsiteID: f.Subscriber.WebsiteID, Shard: f.Subscriber.Shard}}
				same(t, fmt.Sprintf("%s: lean recipient %s", step, f.Endpoint.ID), lean[i], want)
				byURL[f.Endpoint.URL] = f
			}
		}
		return byURL
	}
	all := check("registrations", "")
	if len(all) != 3+2+1+30+2+1 {
		t.Fatalf("the walks have %d endpoints, want 39", len(all))
	}
	// Opted in: Ada (her four browsers and the one Bob's moved to her) and
	// the Italian.
	if n := len(check("topic", tp.ID)); n != 6 {
		t.Fatalf("the topic's walks have %d endpoints, want 6", n)
	}
	for _, c := range []struct{ url, browser, person string }{
		{ada[0].Endpoint, "en", "ja"}, {ada[1].Endpoint, "es", "ja"}, {ada[2].Endpoint, "ja", "ja"},
		{bob[0].Endpoint, "de", "ja"}, {newer.Endpoint, "ja", "ja"}, {bob[1].Endpoint, "el", "el"},
		{batch[0].Endpoint, "ko", "ko"}, {batch[1].Endpoint, "fr", "fr"},
	} {
		r := all[c.url]
		if r.Endpoint.Language != c.browser || r.Subscriber.Language != c.person {
			t.Fatalf("%s speaks %q, its person %q; want %q and %q", c.url, r.Endpoint.Language, r.Subscriber.Language,
				c.browser, c.person)
		}
	}
	// The store's other reads of an endpoint give its language too.
	e, err := s.Endpoint(ctx, w.Website.ID, all[ada[1].Endpoint].Endpoint.ID)
	noErr(t, "Endpoint", err)
	same(t, "Endpoint", e, all[ada[1].Endpoint].Endpoint)
}

// testLeanLanguageRace: a person's browsers registering again at once,
// each in its own language, one by one and in batches, all succeed, and
// each browser keeps its own language.
func testLeanLanguageRace(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	browsers := make([]store.SubscriptionInput, 3)
	for i := range browsers {
		browsers[i] = subscription(w.Website.ID)
		browsers[i].ExternalID, browsers[i].Language = "ada", []string{"en", "de", "fr"}[i]
		subscribe(t, s, browsers[i])
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(browsers))
	for _, in := range browsers {
		wg.Go(func() {
			for range 20 {
				if _, err := s.UpsertSubscription(ctx, in); err != nil {
					errs <- err
					return
				}
				if _, err := s.UpsertSubscriptions(ctx, []store.SubscriptionInput{in}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("registering again: %v", err)
	}
	spoken := map[string]string{}
	for shard := range store.Shards {
		for _, r := range walkShard(t, s, store.AudienceQuery{WebsiteID: w.Website.ID, Shard: shard, Limit: 10, Lean: true}) {
			spoken[r.Endpoint.URL] = r.Endpoint.Language
		}
	}
	want := map[string]string{}
	for _, in := range browsers {
		want[in.Endpoint] = in.Language
	}
	same(t, "the browsers' languages", spoken, want)
}
