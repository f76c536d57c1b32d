package storetest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/store"
)

var peopleCases = []testCase{
	{"Segments", testSegments},
	{"SegmentUses", testSegmentUses},
	{"Topics", testTopics},
	{"AudienceTopic", testAudienceTopic},
	{"Reachable", testReachable},
	{"PeoplePaging", testPeoplePaging},
	{"PeopleSnapshot", testPeopleSnapshot},
	{"PeopleFilter", testPeopleFilter},
	{"Person", testPerson},
	{"Import", testImport},
	{"TagPeople", testTagPeople},
	{"ErasePeople", testErasePeople},
	{"Facets", testFacets},
}

func segment(websiteID, name string, at time.Time) store.Segment {
	return store.Segment{ID: uuid.NewString(), WebsiteID: websiteID, Name: name,
		Filters: []byte(`{"match": "all", "rules": [{"field": "country", "op": "eq", "value": "FR"}]}`), CreatedAt: at}
}

func testSegments(t *testing.T, s store.Store) {
	ctx := context.Background()
	w, other := newWebsite(t, s), newWebsite(t, s)
	a, b := segment(w.Website.ID, "A", at(time.Second)), segment(w.Website.ID, "B", at(2*time.Second))
	noErr(t, "CreateSegment", s.CreateSegment(ctx, a))
	noErr(t, "CreateSegment", s.CreateSegment(ctx, b))
	noErr(t, "CreateSegment", s.CreateSegment(ctx, segment(other.Website.ID, "C", at(3*time.Second))))
	wantErr(t, "CreateSegment(same id)", s.CreateSegment(ctx, a), store.ErrConflict)

	list, err := s.ListSegments(ctx, w.Website.ID)
	noErr(t, "ListSegments", err)
	names := func(l []store.Segment) (out []string) {
		for _, sg := range l {
			out = append(out, sg.Name)
		}
		return out
	}
	same(t, "segments newest first", names(list), []string{"B", "A"})
	got, err := s.Segment(ctx, w.Website.ID, a.ID)
	noErr(t, "Segment", err)
	same(t, "segment name and time", []any{got.Name, got.WebsiteID, got.CreatedAt}, []any{"A", w.Website.ID, a.CreatedAt})
	same(t, "segment filters", got.Filters, a.Filters)

	a.Name, a.Filters = "A2", []byte(`{"match":"any","rules":[{"field":"tag:plan","op":"exists"}]}`)
	noErr(t, "UpdateSegment", s.UpdateSegment(ctx, a))
	got, err = s.Segment(ctx, w.Website.ID, a.ID)
	noErr(t, "Segment", err)
	same(t, "updated name", got.Name, "A2")
	same(t, "updated filters", got.Filters, a.Filters)
	moved := a
	moved.WebsiteID = other.Website.ID
	wantErr(t, "UpdateSegment(other website)", s.UpdateSegment(ctx, moved), store.ErrNotFound)
	wantErr(t, "UpdateSegment(unknown)", s.UpdateSegment(ctx, segment(w.Website.ID, "X", t0)), store.ErrNotFound)

	noErr(t, "DeleteSegment(other website)", s.DeleteSegment(ctx, other.Website.ID, a.ID))
	noErr(t, "DeleteSegment", s.DeleteSegment(ctx, w.Website.ID, a.ID))
	noErr(t, "DeleteSegment(again)", s.DeleteSegment(ctx, w.Website.ID, a.ID))
	list, err = s.ListSegments(ctx, w.Website.ID)
	noErr(t, "ListSegments", err)
	same(t, "segments after delete", names(list), []string{"B"})
	empty, err := s.ListSegments(ctx, newWebsite(t, s).Website.ID)
	noErr(t, "ListSegments", err)
	if empty == nil || len(empty) != 0 {
		t.Fatalf("ListSegments of a new website = %#v, want an empty list", empty)
	}
}

func testSegmentUses(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	a, b, c := uuid.NewString(), uuid.NewString(), uuid.NewString()
	mk := func(status string, started *time.Time, segs ...string) {
		n := notification(w.Website.ID)
		n.Status, n.StartedAt, n.Segments = status, started, segs
		create(t, s, n)
	}
	mk(store.StatusQueued, nil, a, b)
	mk(store.StatusScheduled, nil, a)
	mk(store.StatusSent, ptr(at(time.Hour)), a)
	mk(store.StatusSent, ptr(at(2*time.Hour)), b, b)
	mk(store.StatusDraft, nil, c)
	uses, err := s.SegmentUses(ctx, w.Website.ID)
	noErr(t, "SegmentUses", err)
	same(t, "segment uses", uses, map[string]store.SegmentUse{
		a: {Pending: 2, LastSentAt: ptr(at(time.Hour))},
		b: {Pending: 1, LastSentAt: ptr(at(2 * time.Hour))},
		c: {},
	})
	other, err := s.SegmentUses(ctx, newWebsite(t, s).Website.ID)
	noErr(t, "SegmentUses", err)
	same(t, "uses of another website", other, map[string]store.SegmentUse{})
}

func testTopics(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	news := createTopic(t, s, w.Website.ID, "News", "news", at(time.Second))
	deals := createTopic(t, s, w.Website.ID, "Deals", "deals", at(2*time.Second))
	in := subscription(w.Website.ID)
	in.Topics = []string{"news", "deals"}
	subscribe(t, s, in)
	in = subscription(w.Website.ID)
	in.Topics = []string{"news"}
	second := subscribe(t, s, in)

	renamed, created, err := s.SaveTopic(ctx, store.Topic{ID: uuid.NewString(), WebsiteID: w.Website.ID,
		Name: "World news", Slug: "NEWS", CreatedAt: at(time.Hour)})
	noErr(t, "SaveTopic(existing slug)", err)
	if created {
		t.Fatal("SaveTopic with an existing slug created a second topic")
	}
	same(t, "renamed topic", renamed, store.Topic{ID: news.ID, WebsiteID: w.Website.ID, Name: "World news",
		Slug: "news", CreatedAt: at(time.Second), Subscribers: 2})

	list, err := s.ListTopics(ctx, w.Website.ID)
	noErr(t, "ListTopics", err)
	same(t, "topics oldest first", list, []store.Topic{renamed,
		{ID: deals.ID, WebsiteID: w.Website.ID, Name: "Deals", Slug: "deals", CreatedAt: at(2 * time.Second), Subscribers: 1}})

	got, err := s.RenameTopic(ctx, w.Website.ID, deals.ID, "Hot deals")
	noErr(t, "RenameTopic", err)
	same(t, "RenameTopic name and slug", []string{got.Name, got.Slug}, []string{"Hot deals", "deals"})
	_, err = s.RenameTopic(ctx, newWebsite(t, s).Website.ID, deals.ID, "x")
	wantErr(t, "RenameTopic(other website)", err, store.ErrNotFound)

	noErr(t, "DeleteTopic", s.DeleteTopic(ctx, w.Website.ID, news.ID))
	noErr(t, "DeleteTopic(again)", s.DeleteTopic(ctx, w.Website.ID, news.ID))
	p, err := s.Person(ctx, w.Website.ID, second.SubscriberID)
	noErr(t, "Person", err)
	if len(p.Topics) != 0 {
		t.Fatalf("opt-ins after the topic was deleted: %v", p.Topics)
	}
	// A topic created again with the old slug starts with no one.
	again := createTopic(t, s, w.Website.ID, "News", "news", at(3*time.Hour))
	same(t, "recreated topic subscribers", again.Subscribers, int64(0))
}

func testAudienceTopic(t *testing.T, s store.Store) {
	w := newWebsite(t, s)
	tp := createTopic(t, s, w.Website.ID, "News", "news", t0)
	want := map[string]bool{}
	for i := range 40 {
		in := subscription(w.Website.ID)
		if i%3 == 0 {
			in.Topics = []string{"News"}
		}
		res := subscribe(t, s, in)
		if i%3 == 0 {
			want[res.EndpointID] = true
		}
	}
	got := map[string]bool{}
	for shard := range store.Shards {
		for _, r := range walkShard(t, s, store.AudienceQuery{WebsiteID: w.Website.ID, Shard: shard, TopicID: tp.ID, Limit: 2}) {
			got[r.Endpoint.ID] = true
		}
	}
	same(t, "audience of the topic", got, want)
}

func people(t *testing.T, s store.Store, q store.PeopleQuery) []store.Person {
	t.Helper()
	out, err := s.People(context.Background(), q)
	noErr(t, "People", err)
	return out
}

func testPeoplePaging(t *testing.T, s store.Store) {
	w := newWebsite(t, s)
	var ids []string
	for i := range 7 {
		in := subscription(w.Website.ID)
		in.At = at(time.Duration(i/2) * time.Minute) // pairs share a creation time
		ids = append(ids, subscribe(t, s, in).SubscriberID)
	}
	newWebsiteWithPeople := newWebsite(t, s)
	subscribe(t, s, subscription(newWebsiteWithPeople.Website.ID))

	var got []string
	var after *store.PersonKey
	for {
		page := people(t, s, store.PeopleQuery{WebsiteID: w.Website.ID, After: after, Limit: 3})
		for _, p := range page {
			got = append(got, p.ID)
		}
		if len(page) < 3 {
			break
		}
		last := page[len(page)-1]
		after = &store.PersonKey{CreatedAt: last.CreatedAt, ID: last.ID}
	}
	want := slices.Clone(ids)
	slices.SortStableFunc(want, func(a, b string) int {
		ia, ib := slices.Index(ids, a)/2, slices.Index(ids, b)/2
		if ia != ib {
			return ib - ia
		}
		if a > b {
			return -1
		}
		return 1
	})
	same(t, "people newest first, then by id", got, want)
}

// testPeopleSnapshot: a page and a count read through one snapshot agree
// though a person subscribes between them, and the store outside sees the
// new person at once.
func testPeopleSnapshot(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	first := subscribe(t, s, subscription(w.Website.ID)).SubscriberID
	var (
		page    []string
		inside  int64
		outside int64
		again   []string
	)
	err := s.PeopleSnapshot(ctx, func(r store.PeopleReader) error {
		list, err := r.People(ctx, store.PeopleQuery{WebsiteID: w.Website.ID, Limit: 10})
		if err != nil {
			return err
		}
		for _, p := range list {
			page = append(page, p.ID)
		}
		// Committed after the snapshot's first read, before its others.
		subscribe(t, s, subscription(w.Website.ID))
		if outside, err = s.CountPeople(ctx, w.Website.ID, store.PeopleFilter{}); err != nil {
			return err
		}
		if inside, err = r.CountPeople(ctx, w.Website.ID, store.PeopleFilter{}); err != nil {
			return err
		}
		list, err = r.People(ctx, store.PeopleQuery{WebsiteID: w.Website.ID, Limit: 10})
		for _, p := range list {
			again = append(again, p.ID)
		}
		return err
	})
	noErr(t, "PeopleSnapshot", err)
	same(t, "the snapshot's page", page, []string{first})
	same(t, "the snapshot's count and page after a person subscribed", []any{inside, again}, []any{int64(1), []string{first}})
	same(t, "the count outside the snapshot", outside, int64(2))
	after, err := s.CountPeople(ctx, w.Website.ID, store.PeopleFilter{})
	noErr(t, "CountPeople", err)
	same(t, "the count after the snapshot", after, int64(2))

	// An error from fn is the snapshot's, as it is.
	boom := errors.New("boom")
	wantErr(t, "PeopleSnapshot(failing)", s.PeopleSnapshot(ctx, func(store.PeopleReader) error { return boom }), boom)
}

func testPeopleFilter(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	news := createTopic(t, s, w.Website.ID, "News", "news", t0)
	ids := map[string]string{} // name -> subscriber id
	join := func(name string, d time.Duration, edit func(*store.SubscriptionInput)) store.SubscriptionInput {
		in := subscription(w.Website.ID)
		in.At = at(d)
		edit(&in)
		ids[name] = subscribe(t, s, in).SubscriberID
		return in
	}
	join("a", time.Hour, func(in *store.SubscriptionInput) { in.ExternalID, in.Topics = "Alice-42", []string{"news"} })
	join("b", 2*time.Hour, func(in *store.SubscriptionInput) {
		in.ExternalID, in.Country, in.Language, in.Device = "bob", "DE", "en-US", "android"
	})
	join("b", 7*time.Hour, func(in *store.SubscriptionInput) { // a second browser, desktop
		in.ExternalID, in.Country, in.Language = "bob", "DE", "en-US"
	})
	join("c", 3*time.Hour, func(in *store.SubscriptionInput) { in.Country, in.Language, in.Device = "US", "en_GB", "ios" })
	d := join("d", 4*time.Hour, func(in *store.SubscriptionInput) { in.Language = "EN" })
	_, err := s.DeleteSubscription(ctx, w.Website.ID, d.Endpoint)
	noErr(t, "DeleteSubscription", err)
	_, err = s.ImportPeople(ctx, w.Website.ID, []store.ImportRow{{ExternalID: "carol", Tags: map[string]string{"plan": "pro"}}}, at(5*time.Hour))
	noErr(t, "ImportPeople", err)
	e, err := s.Person(ctx, w.Website.ID, "carol")
	noErr(t, "Person(carol)", err)
	ids["e"] = e.ID
	_, err = s.TagPeople(ctx, w.Website.ID, []string{ids["a"]}, map[string]string{"plan": "pro", "beta": ""}, nil)
	noErr(t, "TagPeople", err)
	_, err = s.TagPeople(ctx, w.Website.ID, []string{ids["b"]}, map[string]string{"plan": "free"}, nil)
	noErr(t, "TagPeople", err)
	subscribe(t, s, subscription(newWebsite(t, s).Website.ID)) // someone of another website

	for _, c := range []struct {
		name string
		f    store.PeopleFilter
		want string // names newest first
	}{
		{"everyone", store.PeopleFilter{}, "edcba"},
		{"q part of an external id, any case", store.PeopleFilter{Q: "ALICE"}, "a"},
		{"q a subscriber id", store.PeopleFilter{Q: ids["c"]}, "c"},
		{"q nobody", store.PeopleFilter{Q: "zed"}, ""},
		{"q wildcards are letters", store.PeopleFilter{Q: "a_i"}, ""},
		{"q percent is a letter", store.PeopleFilter{Q: "%"}, ""},
		{"q backslash is a letter", store.PeopleFilter{Q: `\`}, ""},
		{"subscribed", store.PeopleFilter{Status: "subscribed"}, "cba"},
		{"unsubscribed", store.PeopleFilter{Status: "unsubscribed"}, "d"},
		{"no device", store.PeopleFilter{Status: "no_device"}, "e"},
		{"countries", store.PeopleFilter{Countries: []string{"FR", "US"}}, "dca"},
		{"language prefix", store.PeopleFilter{Languages: []string{"en"}}, "dcb"},
		{"language exact, any case", store.PeopleFilter{Languages: []string{"EN-us"}}, "b"},
		{"languages", store.PeopleFilter{Languages: []string{"en-GB", "fr"}}, "a"},
		{"no language prefix of a letter", store.PeopleFilter{Languages: []string{"e"}}, ""},
		{"device of any browser", store.PeopleFilter{Devices: []string{"desktop"}}, "ba"},
		{"devices", store.PeopleFilter{Devices: []string{"ios", "android"}}, "cb"},
		{"topic", store.PeopleFilter{Topics: []string{news.ID, uuid.NewString()}}, "a"},
		{"tag value", store.PeopleFilter{Tags: []store.TagCondition{{Key: "plan", Value: "pro", HasValue: true}}}, "ea"},
		{"tag key", store.PeopleFilter{Tags: []store.TagCondition{{Key: "plan"}}}, "eba"},
		{"empty tag value", store.PeopleFilter{Tags: []store.TagCondition{{Key: "beta", HasValue: true}}}, "a"},
		{"every tag", store.PeopleFilter{Tags: []store.TagCondition{{Key: "plan", Value: "pro", HasValue: true}, {Key: "beta"}}}, "a"},
		{"joined", store.PeopleFilter{JoinedFrom: at(2 * time.Hour), JoinedTo: at(4 * time.Hour)}, "cb"},
		{"seen", store.PeopleFilter{SeenFrom: at(6 * time.Hour)}, "b"},
		{"all of them", store.PeopleFilter{Countries: []string{"FR"}, Status: "subscribed", Languages: []string{"fr"}}, "a"},
	} {
		var got []string
		var after *store.PersonKey
		for { // pages of 2, so the filter and the position combine
			page := people(t, s, store.PeopleQuery{WebsiteID: w.Website.ID, Filter: c.f, After: after, Limit: 2})
			for _, p := range page {
				for name, id := range ids {
					if p.ID == id {
						got = append(got, name)
					}
				}
			}
			if len(page) < 2 {
				break
			}
			after = &store.PersonKey{CreatedAt: page[1].CreatedAt, ID: page[1].ID}
		}
		same(t, c.name, strings.Join(got, ""), c.want)
		n, err := s.CountPeople(ctx, w.Website.ID, c.f)
		noErr(t, "CountPeople", err)
		same(t, c.name+": count", n, int64(len(c.want)))
	}
}

func testPerson(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	tp := createTopic(t, s, w.Website.ID, "News", "news", t0)
	in := subscription(w.Website.ID)
	in.ExternalID, in.Device, in.Topics = "user-1", "desktop", []string{"news"}
	first := subscribe(t, s, in)
	in2 := subscription(w.Website.ID)
	in2.ExternalID, in2.Device, in2.At = "user-1", "android", at(time.Hour)
	second := subscribe(t, s, in2)

	want := store.Person{
		Subscriber: store.Subscriber{ID: first.SubscriberID, WebsiteID: w.Website.ID, ExternalID: "user-1",
			Country: "FR", Language: "fr", Timezone: "Europe/Paris", URL: "https://example.com/pricing",
			Shard: store.ShardOf(first.SubscriberID), CreatedAt: in.At, LastSeenAt: in2.At},
		ConsentAt: ptr(in.At),
		Devices:   []string{"android", "desktop"},
		Topics:    []string{tp.ID},
	}
	for _, key := range []string{first.SubscriberID, "user-1"} {
		p, err := s.Person(ctx, w.Website.ID, key)
		noErr(t, "Person("+key+")", err)
		same(t, "Person("+key+")", p, want)
		same(t, "status", p.Status(), "subscribed")
	}
	_, err := s.Person(ctx, newWebsite(t, s).Website.ID, "user-1")
	wantErr(t, "Person(other website)", err, store.ErrNotFound)
	eps, err := s.PersonEndpoints(ctx, w.Website.ID, first.SubscriberID)
	noErr(t, "PersonEndpoints", err)
	if len(eps) != 2 || eps[0].ID != second.EndpointID || eps[1].ID != first.EndpointID {
		t.Fatalf("PersonEndpoints = %+v, want the android endpoint then the desktop one", eps)
	}
	_, err = s.DeleteSubscription(ctx, w.Website.ID, in.Endpoint)
	noErr(t, "DeleteSubscription", err)
	_, err = s.DeleteSubscription(ctx, w.Website.ID, in2.Endpoint)
	noErr(t, "DeleteSubscription", err)
	p, err := s.Person(ctx, w.Website.ID, "user-1")
	noErr(t, "Person", err)
	same(t, "status after unsubscribing", p.Status(), "unsubscribed")
}

func testImport(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	tp := createTopic(t, s, w.Website.ID, "News", "news", t0)
	in := subscription(w.Website.ID)
	in.ExternalID = "known"
	known := subscribe(t, s, in)
	_, err := s.TagPeople(ctx, w.Website.ID, []string{known.SubscriberID}, map[string]string{"plan": "free", "keep": "1"}, nil)
	noErr(t, "TagPeople", err)

	n, err := s.ImportPeople(ctx, w.Website.ID, []store.ImportRow{
		{ExternalID: "known", Tags: map[string]string{"plan": "pro", "vip": ""}, Topics: []string{"NEWS", "missing"}},
		{ExternalID: ""},
		{ExternalID: "new", Tags: map[string]string{"plan": "trial"}, Topics: []string{"news"}},
	}, at(time.Hour))
	noErr(t, "ImportPeople", err)
	same(t, "imported rows", n, 2)

	p, err := s.Person(ctx, w.Website.ID, "known")
	noErr(t, "Person(known)", err)
	same(t, "enriched person", []any{p.ID, p.Tags, p.Topics, p.Status()},
		[]any{known.SubscriberID, map[string]string{"plan": "pro", "vip": "", "keep": "1"}, []string{tp.ID}, "subscribed"})

	p, err = s.Person(ctx, w.Website.ID, "new")
	noErr(t, "Person(new)", err)
	same(t, "imported person", []any{p.Tags, p.Topics, p.Status(), p.ConsentAt, p.CreatedAt},
		[]any{map[string]string{"plan": "trial"}, []string{tp.ID}, "no_device", (*time.Time)(nil), at(time.Hour)})

	// The browser opts in later: the attributes apply to it.
	in = subscription(w.Website.ID)
	in.ExternalID, in.At = "new", at(2*time.Hour)
	res := subscribe(t, s, in)
	same(t, "subscriber of the browser", res.SubscriberID, p.ID)
	p, err = s.Person(ctx, w.Website.ID, "new")
	noErr(t, "Person(new)", err)
	same(t, "person after opting in", []any{p.Status(), p.ConsentAt, p.Tags["plan"]}, []any{"subscribed", ptr(at(2 * time.Hour)), "trial"})

	// Rows without labels, new and known.
	n, err = s.ImportPeople(ctx, w.Website.ID, []store.ImportRow{{ExternalID: "bare", Topics: []string{"news"}}, {ExternalID: "new"}}, at(3*time.Hour))
	noErr(t, "ImportPeople without tags", err)
	same(t, "imported rows without tags", n, 2)
	p, err = s.Person(ctx, w.Website.ID, "bare")
	noErr(t, "Person(bare)", err)
	same(t, "person imported without tags", []any{len(p.Tags), p.Topics}, []any{0, []string{tp.ID}})
	p, err = s.Person(ctx, w.Website.ID, "new")
	noErr(t, "Person(new)", err)
	same(t, "tags kept by a row without tags", p.Tags, map[string]string{"plan": "trial"})
}

func testTagPeople(t *testing.T, s store.Store) {
	ctx := context.Background()
	w, other := newWebsite(t, s), newWebsite(t, s)
	a := subscribe(t, s, subscription(w.Website.ID)).SubscriberID
	b := subscribe(t, s, subscription(w.Website.ID)).SubscriberID
	foreign := subscribe(t, s, subscription(other.Website.ID)).SubscriberID
	n, err := s.TagPeople(ctx, w.Website.ID, []string{a, b, foreign, uuid.NewString()},
		map[string]string{"plan": "pro", "beta": ""}, nil)
	noErr(t, "TagPeople", err)
	same(t, "tagged", n, 2)
	n, err = s.TagPeople(ctx, w.Website.ID, []string{b}, map[string]string{"plan": "free"}, []string{"beta", "absent"})
	noErr(t, "TagPeople", err)
	same(t, "tagged", n, 1)
	for id, want := range map[string]map[string]string{
		a: {"plan": "pro", "beta": ""},
		b: {"plan": "free"},
	} {
		p, err := s.Person(ctx, w.Website.ID, id)
		noErr(t, "Person", err)
		same(t, "labels", p.Tags, want)
	}
	p, err := s.Person(ctx, other.Website.ID, foreign)
	noErr(t, "Person", err)
	if len(p.Tags) != 0 {
		t.Fatalf("another website's subscriber was tagged: %v", p.Tags)
	}
}

func testErasePeople(t *testing.T, s store.Store) {
	ctx := context.Background()
	w, other := newWebsite(t, s), newWebsite(t, s)
	createTopic(t, s, w.Website.ID, "News", "news", t0)
	in := subscription(w.Website.ID)
	in.ExternalID, in.Topics = "gone", []string{"news"}
	gone := subscribe(t, s, in)
	kept := subscribe(t, s, subscription(w.Website.ID))
	foreign := subscribe(t, s, subscription(other.Website.ID))
	// A browser whose id comes before the erased one's in its bucket,
	// pushed (as the other's shard, where it was then): their sent pushes
	// share a run of the push ledger, ending with the erased one, which
	// the erasure writes again without it, under a new last id.
	neighbour := subscribe(t, s, subscription(w.Website.ID))
	for neighbour.EndpointID[0] != gone.EndpointID[0] || neighbour.EndpointID > gone.EndpointID {
		neighbour = subscribe(t, s, subscription(w.Website.ID))
	}
	goneShard := shardOf(gone.EndpointID)

	n := sending(t, s, w.Website.ID)
	noErr(t, "RecordResults", s.RecordResults(ctx, n.ID, []store.PushResult{
		{EndpointID: gone.EndpointID, Outcome: store.OutcomeSent, Shard: goneShard},
		{EndpointID: kept.EndpointID, Outcome: store.OutcomeSent, Shard: shardOf(kept.EndpointID)},
		{EndpointID: neighbour.EndpointID, Outcome: store.OutcomeSent, Shard: goneShard}}))
	_, err := s.RecordInteraction(ctx, w.Website.ID, n.ID, gone.EndpointID, store.InteractionClicked, at(time.Minute), nil)
	noErr(t, "RecordInteraction", err)

	erased, err := s.ErasePeople(ctx, w.Website.ID, []string{gone.SubscriberID, foreign.SubscriberID, uuid.NewString()})
	noErr(t, "ErasePeople", err)
	same(t, "erased", erased, []store.Subscriber{{ID: gone.SubscriberID, WebsiteID: w.Website.ID, ExternalID: "gone"}})
	_, err = s.Person(ctx, w.Website.ID, gone.SubscriberID)
	wantErr(t, "Person(erased)", err, store.ErrNotFound)
	_, err = s.Endpoint(ctx, w.Website.ID, gone.EndpointID)
	wantErr(t, "Endpoint(erased)", err, store.ErrNotFound)
	left, err := s.Undelivered(ctx, n.ID, append(keyed([]string{gone.EndpointID, kept.EndpointID}),
		store.ShardEndpoint{ID: neighbour.EndpointID, Shard: goneShard}))
	noErr(t, "Undelivered", err)
	same(t, "push results left", left, []string{gone.EndpointID})
	again, err := s.RecordInteraction(ctx, w.Website.ID, n.ID, gone.EndpointID, store.InteractionClicked, at(time.Minute), nil)
	noErr(t, "RecordInteraction", err)
	if !again {
		t.Fatal("the erased endpoint's click was kept")
	}
	_, err = s.Person(ctx, other.Website.ID, foreign.SubscriberID)
	noErr(t, "another website's person", err)
	_, err = s.Person(ctx, w.Website.ID, kept.SubscriberID)
	noErr(t, "the other person", err)
}

func testFacets(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	news := createTopic(t, s, w.Website.ID, "News", "news", t0)
	deals := createTopic(t, s, w.Website.ID, "Deals", "deals", at(time.Second))
	add := func(country, lang, device string, topics []string, tags map[string]string) {
		in := subscription(w.Website.ID)
		in.Country, in.Language, in.Device, in.Topics = country, lang, device, topics
		res := subscribe(t, s, in)
		if tags != nil {
			_, err := s.TagPeople(ctx, w.Website.ID, []string{res.SubscriberID}, tags, nil)
			noErr(t, "TagPeople", err)
		}
	}
	add("FR", "fr", "desktop", []string{"news"}, map[string]string{"plan": "pro", "rb_internal": "x"})
	add("FR", "fr-CA", "android", []string{"news", "deals"}, map[string]string{"plan": "pro", "beta": ""})
	add("DE", "de", "desktop", nil, map[string]string{"plan": "free"})
	add("", "", "desktop", nil, nil)
	subscribe(t, s, subscription(newWebsite(t, s).Website.ID))

	f, err := s.Facets(ctx, w.Website.ID, 20)
	noErr(t, "Facets", err)
	same(t, "facets", f, store.Facets{
		Countries: []store.FacetValue{{Value: "FR", Count: 2}, {Value: "DE", Count: 1}},
		Languages: []store.FacetValue{{Value: "de", Count: 1}, {Value: "fr", Count: 1}, {Value: "fr-CA", Count: 1}},
		Devices:   []store.FacetValue{{Value: "desktop", Count: 3}, {Value: "android", Count: 1}},
		Tags: []store.TagFacet{{Key: "plan", Count: 3, Values: []string{"pro", "free"}},
			{Key: "beta", Count: 1, Values: []string{}}},
		Topics: []store.TopicFacet{{ID: news.ID, Name: "News", Slug: "news", Count: 2},
			{ID: deals.ID, Name: "Deals", Slug: "deals", Count: 1}},
	})
	f, err = s.Facets(ctx, w.Website.ID, 1)
	noErr(t, "Facets(limit 1)", err)
	same(t, "limited facets", []any{f.Countries, f.Tags}, []any{[]store.FacetValue{{Value: "FR", Count: 2}},
		[]store.TagFacet{{Key: "plan", Count: 3, Values: []string{"pro"}}}})
}
