package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/relaybell/relaybell/store"
)

// reached is what Reachable gave for one person.
type reached struct {
	ExternalID, Country, Language, URL string
	Tags                               map[string]string
	Browsers                           int
}

// testReachable: Reachable gives each subscribed person of the website who
// has a browser once, with their browser count, the attributes the filter
// engine reads, the tags only when asked, and applies ExternalIDs and each
// narrowing condition; unsubscribed people, people without a browser and
// other websites never come.
func testReachable(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	site := w.Website.ID
	news := createTopic(t, s, site, "News", "news", t0)
	ids := map[string]string{} // subscriber id -> name
	join := func(name string, edit func(*store.SubscriptionInput)) {
		in := subscription(site)
		edit(&in)
		ids[subscribe(t, s, in).SubscriberID] = name
	}
	join("a", func(in *store.SubscriptionInput) { in.ExternalID, in.Topics = "alice", []string{"news"} })
	join("a", func(in *store.SubscriptionInput) { in.ExternalID = "alice" }) // a second browser
	join("b", func(in *store.SubscriptionInput) { in.ExternalID, in.Country, in.Language = "bob", "DE", "de-DE" })
	join("c", func(in *store.SubscriptionInput) { in.Country = "US" })
	d := subscription(site)
	ids[subscribe(t, s, d).SubscriberID] = "d"
	_, err := s.DeleteSubscription(ctx, site, d.Endpoint)
	noErr(t, "DeleteSubscription", err)
	_, err = s.ImportPeople(ctx, site, []store.ImportRow{{ExternalID: "carol", Tags: map[string]string{"plan": "pro"}}}, t0)
	noErr(t, "ImportPeople", err)
	for id, name := range ids {
		tags := map[string]string{"a": "pro", "b": "free"}[name]
		if tags != "" {
			_, err := s.TagPeople(ctx, site, []string{id}, map[string]string{"plan": tags}, nil)
			noErr(t, "TagPeople", err)
		}
	}
	subscribe(t, s, subscription(newWebsite(t, s).Website.ID)) // someone of another website

	pricing := "https://example.com/pricing"
	a := reached{"alice", "FR", "fr", pricing, nil, 2}
	b := reached{"bob", "DE", "de-DE", pricing, nil, 1}
	c := reached{"", "US", "fr", pricing, nil, 1}
	withTags := func(r reached, tags map[string]string) reached { r.Tags = tags; return r }
	for _, k := range []struct {
		name string
		q    store.ReachQuery
		want map[string]reached
	}{
		{"everyone", store.ReachQuery{}, map[string]reached{"a": a, "b": b, "c": c}},
		{"with tags", store.ReachQuery{Tags: true}, map[string]reached{
			"a": withTags(a, map[string]string{"plan": "pro"}), "b": withTags(b, map[string]string{"plan": "free"}), "c": c}},
		{"external ids", store.ReachQuery{ExternalIDs: []string{"bob", "carol", "nobody"}}, map[string]reached{"b": b}},
		{"countries", store.ReachQuery{Narrow: store.PeopleFilter{Countries: []string{"FR", "US"}}}, map[string]reached{"a": a, "c": c}},
		{"topic", store.ReachQuery{Narrow: store.PeopleFilter{Topics: []string{news.ID}}}, map[string]reached{"a": a}},
		{"tag value", store.ReachQuery{Narrow: store.PeopleFilter{Tags: []store.TagCondition{{Key: "plan", Value: "pro", HasValue: true}}}},
			map[string]reached{"a": a}},
		{"tag key", store.ReachQuery{Narrow: store.PeopleFilter{Tags: []store.TagCondition{{Key: "plan"}}}}, map[string]reached{"a": a, "b": b}},
	} {
		got := map[string]reached{}
		read := func(shard int) {
			q := k.q
			q.WebsiteID, q.Shard = site, shard
			err := s.Reachable(ctx, q, func(sub *store.Subscriber, browsers int) {
				name, ok := ids[sub.ID]
				if !ok {
					t.Errorf("%s: someone else, %s", k.name, sub.ID)
				}
				if _, dup := got[name]; dup {
					t.Errorf("%s: %s twice", k.name, name)
				}
				if sub.WebsiteID != site || sub.Shard != store.ShardOf(sub.ID) || (shard != store.AllShards && sub.Shard != shard) {
					t.Errorf("%s: %s of website %s shard %d, read in shard %d", k.name, name, sub.WebsiteID, sub.Shard, shard)
				}
				if len(sub.Tags) == 0 {
					sub.Tags = nil
				}
				got[name] = reached{sub.ExternalID, sub.Country, sub.Language, sub.URL, sub.Tags, browsers}
			})
			noErr(t, "Reachable", err)
		}
		for shard := range store.Shards {
			read(shard)
		}
		same(t, k.name, got, k.want)
		got = map[string]reached{}
		read(store.AllShards)
		same(t, k.name+", every shard at once", got, k.want)
	}

	// The browser counts follow endpoints going: a person loses one of two
	// browsers, another is erased with both of theirs.
	second := subscription(site)
	second.ExternalID = "bob"
	subscribe(t, s, second)
	_, err = s.DeleteSubscription(ctx, site, second.Endpoint)
	noErr(t, "DeleteSubscription", err)
	var alice string
	for id, name := range ids {
		if name == "a" {
			alice = id
		}
	}
	_, err = s.ErasePeople(ctx, site, []string{alice})
	noErr(t, "ErasePeople", err)
	got := map[string]int{}
	err = s.Reachable(ctx, store.ReachQuery{WebsiteID: site, Shard: store.AllShards}, func(sub *store.Subscriber, browsers int) {
		got[ids[sub.ID]] = browsers
	})
	noErr(t, "Reachable", err)
	same(t, "browsers after a deletion and an erasure", got, map[string]int{"b": 1, "c": 1})

	// An anonymous browser that logs in as someone with a browser already:
	// whatever the identity merge does, each person's count is their
	// endpoints.
	anon := subscription(site)
	subscribe(t, s, anon)
	anon.ExternalID = "bob"
	subscribe(t, s, anon)
	counts := map[string]int{}
	err = s.Reachable(ctx, store.ReachQuery{WebsiteID: site, Shard: store.AllShards}, func(sub *store.Subscriber, browsers int) {
		counts[sub.ID] = browsers
	})
	noErr(t, "Reachable", err)
	total := 0
	for id, n := range counts {
		eps, err := s.PersonEndpoints(ctx, site, id)
		noErr(t, "PersonEndpoints", err)
		same(t, "browsers of "+id, n, len(eps))
		total += n
	}
	same(t, "browsers in all", total, 3)

	canceled, cancel := context.WithTimeout(ctx, -time.Second)
	defer cancel()
	if err := s.Reachable(canceled, store.ReachQuery{WebsiteID: site}, func(*store.Subscriber, int) {}); err == nil {
		t.Error("Reachable on a canceled context: no error")
	}
}
