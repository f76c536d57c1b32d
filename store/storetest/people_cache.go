package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/relaybell/relaybell/store"
)

// PeopleCache is a node's cache of person lookups (defcache.People), as
// the conformance suite tests it over a store.
type PeopleCache interface {
	Refs(ctx context.Context, keys map[string][]string) (map[string]map[string]store.PersonRef, error)
}

// NewPeopleCache makes the cache over base; the engines' tests set it to
// defcache.NewPeople's (the store layer imports nothing above it, so this
// package cannot).
var NewPeopleCache func(base store.Store) PeopleCache

// countedRefs counts the PersonRefs calls that reach the store.
type countedRefs struct {
	store.Store
	calls int
}

func (c *countedRefs) PersonRefs(ctx context.Context, websiteID string, keys []string) (map[string]store.PersonRef, error) {
	c.calls++
	return c.Store.PersonRefs(ctx, websiteID, keys)
}

// testPeopleCache: for every store write that changes what PersonRefs
// answers (and those that look as if they might), a warm defcache.People
// answers as the store does right after the write: the people version
// moved with the write, or the answer did not change. Each case warms the
// cache, checks a second lookup reads no refs, writes, and compares.
func testPeopleCache(t *testing.T, s store.Store) {
	ctx := context.Background()
	if NewPeopleCache == nil {
		t.Fatal("storetest.NewPeopleCache is not set")
	}
	type world struct {
		w    website
		a, b store.SubscriptionResult // a is "user-a" with browser inA; b is anonymous
		inA  store.SubscriptionInput
		inB  store.SubscriptionInput
	}
	setup := func(t *testing.T) world {
		w := newWebsite(t, s)
		inA := subscription(w.Website.ID)
		inA.ExternalID = "user-a"
		inB := subscription(w.Website.ID)
		return world{w: w, a: subscribe(t, s, inA), b: subscribe(t, s, inB), inA: inA, inB: inB}
	}
	cases := []struct {
		name    string
		write   func(t *testing.T, x world)
		changed bool // the store's answer changed
	}{
		{"first external id", func(t *testing.T, x world) {
			in := x.inB
			in.ExternalID = "user-b"
			subscribe(t, s, in)
		}, true},
		{"first external id in a batch", func(t *testing.T, x world) {
			in := x.inB
			in.ExternalID = "user-b"
			_, err := s.UpsertSubscriptions(ctx, []store.SubscriptionInput{in, subscription(x.w.Website.ID)})
			noErr(t, "UpsertSubscriptions", err)
		}, true},
		{"another person's browser", func(t *testing.T, x world) {
			in := x.inB
			in.ExternalID = "user-a"
			subscribe(t, s, in)
		}, false},
		{"logout", func(t *testing.T, x world) {
			in := x.inA
			in.ExternalID, in.Logout = "", true
			subscribe(t, s, in)
		}, false},
		{"browser deleted", func(t *testing.T, x world) {
			_, err := s.DeleteSubscription(ctx, x.w.Website.ID, x.inA.Endpoint)
			noErr(t, "DeleteSubscription", err)
		}, false},
		{"import", func(t *testing.T, x world) {
			_, err := s.ImportPeople(ctx, x.w.Website.ID, []store.ImportRow{{ExternalID: "user-a", Tags: map[string]string{"plan": "pro"}},
				{ExternalID: "user-c"}}, at(time.Hour))
			noErr(t, "ImportPeople", err)
		}, true}, // user-c: a key that named nobody is not kept
		{"erasure", func(t *testing.T, x world) {
			_, err := s.ErasePeople(ctx, x.w.Website.ID, []string{x.a.SubscriberID})
			noErr(t, "ErasePeople", err)
		}, true},
		{"bulk erasure", func(t *testing.T, x world) {
			_, err := s.ErasePeople(ctx, x.w.Website.ID, []string{x.a.SubscriberID, x.b.SubscriberID})
			noErr(t, "ErasePeople", err)
		}, true},
		{"website deleted", func(t *testing.T, x world) {
			noErr(t, "DeleteWebsite", s.DeleteWebsite(ctx, x.w.Website.ID))
		}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			x := setup(t)
			site := x.w.Website.ID
			keys := []string{"user-a", "user-b", "user-c", x.a.SubscriberID, x.b.SubscriberID}
			base := &countedRefs{Store: s}
			cache := NewPeopleCache(base)
			refs := func(what string) map[string]store.PersonRef {
				got, err := cache.Refs(ctx, map[string][]string{site: keys})
				noErr(t, what, err)
				return got[site]
			}
			before := refs("Refs, cold")
			base.calls = 0
			same(t, "Refs, warm", refs("Refs, warm"), before)
			// The keys naming nobody (user-b, user-c) are read again.
			same(t, "store calls of a warm lookup", base.calls, 1)
			c.write(t, x)
			want, err := s.PersonRefs(ctx, site, keys)
			noErr(t, "PersonRefs", err)
			same(t, "Refs after the write", refs("Refs after the write"), want)
			if changed := len(want) != len(before) || func() bool {
				for k, v := range want {
					if before[k] != v {
						return true
					}
				}
				return false
			}(); changed != c.changed {
				t.Fatalf("the store's answer changed: %v, want %v (before %v, after %v)", changed, c.changed, before, want)
			}
		})
	}
}

// testPeopleVersion: the people version moves with each transaction that
// changes an external id or deletes a subscriber, one after another on
// the same store, and not with a registration that changes neither.
func testPeopleVersion(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	version := func() int64 {
		v, err := s.PeopleVersion(ctx)
		noErr(t, "PeopleVersion", err)
		return v
	}
	in := subscription(w.Website.ID)
	in.ExternalID = "user-a"
	a := subscribe(t, s, in)
	last := version()
	subscribe(t, s, in) // the same browser, the same person
	same(t, "version after a registration again", version(), last)
	for i, ids := range [][]string{{a.SubscriberID}, {subscribe(t, s, subscription(w.Website.ID)).SubscriberID},
		{subscribe(t, s, subscription(w.Website.ID)).SubscriberID, subscribe(t, s, subscription(w.Website.ID)).SubscriberID}} {
		before := version()
		_, err := s.ErasePeople(ctx, w.Website.ID, ids)
		noErr(t, "ErasePeople", err)
		if v := version(); v <= before {
			t.Fatalf("erasure %d: version %d, was %d", i, v, before)
		}
	}
}
