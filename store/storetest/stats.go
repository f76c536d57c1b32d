package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/store"
)

var statsCases = []testCase{
	{"Subscribers", testStatsSubscribers},
	{"Unsubscribed", testStatsUnsubscribed},
	{"Removed", testStatsRemoved},
	{"Pruned", testStatsPruned},
	{"Erased", testStatsErased},
	{"ConcurrentRemovals", testStatsConcurrentRemovals},
	{"PurgeRemovals", testStatsPurgeRemovals},
	{"Notifications", testStatsNotifications},
	{"ManySpans", testStatsManySpans},
	{"Bounds", testStatsBounds},
}

// hours are bounds an hour apart from start: n spans.
func hours(start time.Time, n int) []time.Time {
	out := make([]time.Time, n+1)
	for i := range out {
		out[i] = start.Add(time.Duration(i) * time.Hour)
	}
	return out
}

func activity(t *testing.T, s store.Store, websiteID string, bounds []time.Time) store.Activity {
	t.Helper()
	a, err := s.Activity(context.Background(), websiteID, bounds)
	noErr(t, "Activity", err)
	return a
}

// subscribedAtEnds is the browsers subscribed at the end of each span of
// a, as package stats reads them.
func subscribedAtEnds(a store.Activity) []int64 {
	out := make([]int64, len(a.Spans))
	n := a.Start
	for i, sp := range a.Spans {
		n += sp.NewSubscribers - sp.Unsubscribed
		out[i] = n
	}
	return out
}

// days are the bounds of three days around now, the removals' time: day
// 1 ended 36 hours ago, day 3 holds now. Removals are made at the
// current time (DeleteSubscription, RecordResults, ErasePeople take none).
func days(now time.Time) []time.Time {
	return []time.Time{now.Add(-60 * time.Hour), now.Add(-36 * time.Hour), now.Add(-12 * time.Hour), now.Add(12 * time.Hour)}
}

// joinAt registers a new browser of the website made at t (of the person
// externalID, or a new one).
func joinAt(t *testing.T, s store.Store, websiteID string, when time.Time, externalID string) (store.SubscriptionInput, store.SubscriptionResult) {
	t.Helper()
	in := subscription(websiteID)
	in.At, in.ExternalID = when.Truncate(time.Millisecond), externalID
	return in, subscribe(t, s, in)
}

// testStatsSubscribers: browsers by the span they subscribed in, those
// removed since included; a browser that moves to another person is no
// removal; another website's browsers and people without one are not
// counted.
func testStatsSubscribers(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	other := newWebsite(t, s)
	join := func(websiteID string, d time.Duration, externalID string) store.SubscriptionInput {
		t.Helper()
		in := subscription(websiteID)
		in.At, in.ExternalID = at(d), externalID
		subscribe(t, s, in)
		return in
	}
	join(w.Website.ID, -time.Minute, "")                 // before the first bound
	join(w.Website.ID, 10*time.Minute, "")               // span 0
	join(w.Website.ID, 10*time.Minute, "bob")            // span 0: bob's first browser
	join(w.Website.ID, time.Hour, "")                    // span 1: a bound belongs to the span it starts
	join(w.Website.ID, 70*time.Minute, "bob")            // span 1: bob's second browser
	join(w.Website.ID, 3*time.Hour-time.Millisecond, "") // span 2
	join(w.Website.ID, 3*time.Hour, "")                  // after the last bound
	gone := join(w.Website.ID, 90*time.Minute, "")       // span 1, turned off now
	join(other.Website.ID, 10*time.Minute, "")           // another website's
	_, err := s.DeleteSubscription(ctx, w.Website.ID, gone.Endpoint)
	noErr(t, "DeleteSubscription", err)
	_, err = s.ImportPeople(ctx, w.Website.ID, []store.ImportRow{{ExternalID: "carol"}}, at(20*time.Minute))
	noErr(t, "ImportPeople", err) // a person without a browser

	// An anonymous browser that signs in as bob, who already has a record,
	// moves to it: the record it leaves is marked unsubscribed, but the
	// browser stays subscribed.
	anon := join(w.Website.ID, 2*time.Hour, "")
	anon.ExternalID, anon.At = "bob", at(2*time.Hour+time.Minute)
	subscribe(t, s, anon)

	// gone subscribed in span 1 and left at the current time, after the
	// last bound: it is one of span 1's new browsers, subscribed since.
	got := activity(t, s, w.Website.ID, hours(t0, 3))
	same(t, "activity", got, store.Activity{Subscribers: 8, Start: 1, Spans: []store.ActivitySpan{
		{NewSubscribers: 2}, {NewSubscribers: 3}, {NewSubscribers: 2},
	}})
	same(t, "subscribed at the spans' ends", subscribedAtEnds(got), []int64{3, 6, 8})
	same(t, "the other website's activity", activity(t, s, other.Website.ID, hours(t0, 3)), store.Activity{
		Subscribers: 1, Spans: []store.ActivitySpan{{NewSubscribers: 1}, {}, {}},
	})
	// The first bound after every subscription: all of them are before,
	// gone too, subscribed until now.
	same(t, "activity after every subscription", activity(t, s, w.Website.ID, hours(t0.Add(24*time.Hour), 1)),
		store.Activity{Subscribers: 8, Start: 9, Spans: []store.ActivitySpan{{}}})
}

// testStatsUnsubscribed: browsers turned off in a span, each counted,
// whether their person keeps another browser or comes back (a browser
// that subscribes again is a new one). DeleteSubscription removes them at
// the current time.
func testStatsUnsubscribed(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	other := newWebsite(t, s)
	now := time.Now()
	join := func(websiteID, externalID string) store.SubscriptionInput {
		t.Helper()
		in, _ := joinAt(t, s, websiteID, now.Add(-30*time.Minute), externalID)
		return in
	}
	leave := func(websiteID string, in store.SubscriptionInput) {
		t.Helper()
		_, err := s.DeleteSubscription(ctx, websiteID, in.Endpoint)
		noErr(t, "DeleteSubscription", err)
	}
	leave(w.Website.ID, join(w.Website.ID, ""))    // left
	leave(w.Website.ID, join(w.Website.ID, "ann")) // left; ann keeps her second browser
	join(w.Website.ID, "ann")
	back := join(w.Website.ID, "dan") // left, then subscribed again: a new browser
	leave(w.Website.ID, back)
	back.At = now.Add(-10 * time.Minute).Truncate(time.Millisecond)
	subscribe(t, s, back)
	leave(other.Website.ID, join(other.Website.ID, "")) // another website's

	bounds := []time.Time{now.Add(-time.Hour), now.Add(time.Hour)}
	got := activity(t, s, w.Website.ID, bounds)
	same(t, "activity", got, store.Activity{Subscribers: 2, Spans: []store.ActivitySpan{
		{NewSubscribers: 5, Unsubscribed: 3},
	}})
	same(t, "subscribed at the end", subscribedAtEnds(got), []int64{2})
	same(t, "the other website's activity", activity(t, s, other.Website.ID, bounds), store.Activity{
		Spans: []store.ActivitySpan{{NewSubscribers: 1, Unsubscribed: 1}},
	})
}

// testStatsRemoved: a browser made on day 1 and turned off on day 3 is
// subscribed at the end of days 1 and 2, not 3; it is day 1's new browser
// and day 3's unsubscribed one, in any range holding those days. Another
// website's removal never counts.
func testStatsRemoved(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	other := newWebsite(t, s)
	now := time.Now()
	b := days(now)
	joinAt(t, s, w.Website.ID, b[0].Add(-time.Hour), "") // before day 1, kept
	gone, _ := joinAt(t, s, w.Website.ID, b[0].Add(time.Hour), "")
	otherGone, _ := joinAt(t, s, other.Website.ID, b[0].Add(time.Hour), "")
	for _, in := range []store.SubscriptionInput{gone, otherGone} {
		_, err := s.DeleteSubscription(ctx, in.WebsiteID, in.Endpoint)
		noErr(t, "DeleteSubscription", err)
	}

	got := activity(t, s, w.Website.ID, b)
	same(t, "activity", got, store.Activity{Subscribers: 1, Start: 1, Spans: []store.ActivitySpan{
		{NewSubscribers: 1}, {}, {Unsubscribed: 1},
	}})
	same(t, "subscribed at the days' ends", subscribedAtEnds(got), []int64{2, 2, 1})
	// Days 1 and 2 alone: it never left.
	got = activity(t, s, w.Website.ID, b[:3])
	same(t, "days 1-2", got, store.Activity{Subscribers: 1, Start: 1, Spans: []store.ActivitySpan{{NewSubscribers: 1}, {}}})
	same(t, "subscribed at the ends of days 1-2", subscribedAtEnds(got), []int64{2, 2})
	// Day 3 alone: subscribed at its start, left in it.
	got = activity(t, s, w.Website.ID, b[2:])
	same(t, "day 3", got, store.Activity{Subscribers: 1, Start: 2, Spans: []store.ActivitySpan{{Unsubscribed: 1}}})
	same(t, "subscribed at the end of day 3", subscribedAtEnds(got), []int64{1})
	// Day 2 to 3 hours later: its removal is after every bound.
	got = activity(t, s, w.Website.ID, []time.Time{b[1], b[2]})
	same(t, "day 2", got, store.Activity{Subscribers: 1, Start: 2, Spans: []store.ActivitySpan{{}}})

	same(t, "the other website's activity", activity(t, s, other.Website.ID, b), store.Activity{
		Spans: []store.ActivitySpan{{NewSubscribers: 1}, {}, {Unsubscribed: 1}},
	})
}

// testStatsPruned: browsers the push service reports gone are removals
// too, once however often the result is replayed.
func testStatsPruned(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	b := days(time.Now())
	_, before := joinAt(t, s, w.Website.ID, b[0].Add(-time.Hour), "")
	_, day2 := joinAt(t, s, w.Website.ID, b[1].Add(time.Hour), "")
	_, kept := joinAt(t, s, w.Website.ID, b[1].Add(2*time.Hour), "")
	n := create(t, s, notification(w.Website.ID))
	results := []store.PushResult{
		{EndpointID: before.EndpointID, Outcome: store.OutcomePruned},
		{EndpointID: day2.EndpointID, Outcome: store.OutcomePruned},
		{EndpointID: kept.EndpointID, Outcome: store.OutcomeSent},
	}
	noErr(t, "RecordResults", recordResults(s, ctx, n.ID, results))
	noErr(t, "RecordResults(replay)", recordResults(s, ctx, n.ID, results))
	// Another send's result for a pruned browser finds nothing to delete.
	noErr(t, "RecordResults(another send)", recordResults(s, ctx, create(t, s, notification(w.Website.ID)).ID, results[:1]))

	got := activity(t, s, w.Website.ID, b)
	same(t, "activity", got, store.Activity{Subscribers: 1, Start: 1, Spans: []store.ActivitySpan{
		{}, {NewSubscribers: 2}, {Unsubscribed: 2},
	}})
	same(t, "subscribed at the days' ends", subscribedAtEnds(got), []int64{1, 3, 1})
}

// testStatsErased: an erased person's browsers are removals (the website
// and two times are all that is kept of them); another person's and
// another website's are not.
func testStatsErased(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	other := newWebsite(t, s)
	b := days(time.Now())
	_, ann := joinAt(t, s, w.Website.ID, b[0].Add(time.Hour), "ann")
	joinAt(t, s, w.Website.ID, b[1].Add(time.Hour), "ann") // ann's second browser
	joinAt(t, s, w.Website.ID, b[1].Add(time.Hour), "bob")
	_, foreign := joinAt(t, s, other.Website.ID, b[0].Add(time.Hour), "ann")
	erased, err := s.ErasePeople(ctx, w.Website.ID, []string{ann.SubscriberID, foreign.SubscriberID})
	noErr(t, "ErasePeople", err)
	if len(erased) != 1 {
		t.Fatalf("ErasePeople erased %d people, want 1", len(erased))
	}

	got := activity(t, s, w.Website.ID, b)
	same(t, "activity", got, store.Activity{Subscribers: 1, Spans: []store.ActivitySpan{
		{NewSubscribers: 1}, {NewSubscribers: 2}, {Unsubscribed: 2},
	}})
	same(t, "subscribed at the days' ends", subscribedAtEnds(got), []int64{1, 3, 1})
	same(t, "the other website's activity", activity(t, s, other.Website.ID, b), store.Activity{
		Subscribers: 1, Spans: []store.ActivitySpan{{NewSubscribers: 1}, {}, {}},
	})
}

// testStatsConcurrentRemovals: a browser turned off while the push
// service reports it gone is one removal.
func testStatsConcurrentRemovals(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	b := days(time.Now())
	n := create(t, s, notification(w.Website.ID))
	const browsers = 20
	var (
		ins     []store.SubscriptionInput
		results []store.PushResult
	)
	for range browsers {
		in, res := joinAt(t, s, w.Website.ID, b[1].Add(time.Hour), "")
		ins = append(ins, in)
		results = append(results, store.PushResult{EndpointID: res.EndpointID, Outcome: store.OutcomePruned})
	}
	errs := make(chan error, browsers+1)
	go func() { errs <- recordResults(s, ctx, n.ID, results) }()
	for _, in := range ins {
		go func() {
			_, err := s.DeleteSubscription(ctx, in.WebsiteID, in.Endpoint)
			if errors.Is(err, store.ErrNotFound) { // pruned first
				err = nil
			}
			errs <- err
		}()
	}
	for range browsers + 1 {
		noErr(t, "removing", <-errs)
	}
	same(t, "activity", activity(t, s, w.Website.ID, b), store.Activity{Spans: []store.ActivitySpan{
		{}, {NewSubscribers: browsers}, {Unsubscribed: browsers},
	}})
}

// testStatsPurgeRemovals: PurgeRemovals forgets the removals before its
// time, of every website; a deleted website's go with it.
func testStatsPurgeRemovals(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	deleted := newWebsite(t, s)
	now := time.Now()
	b := days(now)
	for _, websiteID := range []string{w.Website.ID, w.Website.ID, deleted.Website.ID} {
		in, _ := joinAt(t, s, websiteID, b[1].Add(time.Hour), "")
		_, err := s.DeleteSubscription(ctx, websiteID, in.Endpoint)
		noErr(t, "DeleteSubscription", err)
	}
	noErr(t, "DeleteWebsite", s.DeleteWebsite(ctx, deleted.Website.ID))

	n, err := s.PurgeRemovals(ctx, now.Add(-time.Hour))
	noErr(t, "PurgeRemovals", err)
	same(t, "removals purged before they were made", n, 0)
	same(t, "activity", activity(t, s, w.Website.ID, b), store.Activity{Spans: []store.ActivitySpan{
		{}, {NewSubscribers: 2}, {Unsubscribed: 2},
	}})
	n, err = s.PurgeRemovals(ctx, now.Add(time.Hour))
	noErr(t, "PurgeRemovals", err)
	same(t, "removals purged after they were made", n, 2)
	// Forgotten: as if the browsers had never been.
	same(t, "activity after the purge", activity(t, s, w.Website.ID, b), store.Activity{
		Spans: []store.ActivitySpan{{}, {}, {}},
	})
}

// testStatsNotifications: the sums of the notifications made in each span,
// drafts left out, automations and every other status counted.
func testStatsNotifications(t *testing.T, s store.Store) {
	w := newWebsite(t, s)
	other := newWebsite(t, s)
	add := func(websiteID string, d time.Duration, edit func(*store.Notification)) {
		t.Helper()
		n := notification(websiteID)
		n.CreatedAt = at(d)
		n.Recipients, n.Sent, n.Delivered, n.Clicked, n.Conversions, n.Revenue = 10, 8, 6, 3, 1, 12.5
		if edit != nil {
			edit(&n)
		}
		create(t, s, n)
	}
	add(w.Website.ID, -time.Millisecond, nil) // before the first bound
	add(w.Website.ID, 0, nil)                 // span 0
	add(w.Website.ID, 59*time.Minute, func(n *store.Notification) {
		n.Automation, n.Status, n.Recipients, n.Sent, n.Delivered, n.Clicked, n.Conversions, n.Revenue =
			true, store.StatusSent, 100, 90, 80, 9, 2, 7.25
	})
	add(w.Website.ID, 30*time.Minute, func(n *store.Notification) { n.Status = store.StatusDraft })
	add(w.Website.ID, 2*time.Hour, func(n *store.Notification) { // span 2
		n.Status, n.Recipients, n.Sent, n.Delivered, n.Clicked, n.Conversions, n.Revenue =
			store.StatusCanceled, 0, 0, 0, 0, 0, 0
	})
	add(w.Website.ID, 3*time.Hour, nil)        // at the last bound: after the range
	add(other.Website.ID, 30*time.Minute, nil) // another website's

	same(t, "activity", activity(t, s, w.Website.ID, hours(t0, 3)), store.Activity{Spans: []store.ActivitySpan{
		{Notifications: 2, Recipients: 110, Sent: 98, Delivered: 86, Clicked: 12, Conversions: 3, Revenue: 19.75},
		{},
		{Notifications: 1},
	}})
}

// testStatsManySpans: the most spans a call takes, each row in its own.
func testStatsManySpans(t *testing.T, s store.Store) {
	w := newWebsite(t, s)
	n := store.MaxActivitySpans
	bounds := hours(t0, n)
	want := store.Activity{Spans: make([]store.ActivitySpan, n)}
	for i, span := range []int{0, 1, 2, 137, 200, 255, 256, 398, n - 1} {
		in := subscription(w.Website.ID)
		in.At = bounds[span].Add(time.Duration(i) * time.Minute)
		subscribe(t, s, in)
		nt := notification(w.Website.ID)
		nt.CreatedAt, nt.Sent = bounds[span+1].Add(-time.Millisecond), int64(i+1)
		create(t, s, nt)
		want.Subscribers++
		want.Spans[span].NewSubscribers++
		want.Spans[span].Notifications++
		want.Spans[span].Sent += int64(i + 1)
	}
	same(t, "activity", activity(t, s, w.Website.ID, bounds), want)
}

// testStatsBounds: an unknown website has nothing; bounds that are too few,
// too many or not increasing are an error.
func testStatsBounds(t *testing.T, s store.Store) {
	ctx := context.Background()
	same(t, "an unknown website's activity", activity(t, s, uuid.NewString(), hours(t0, 2)),
		store.Activity{Spans: []store.ActivitySpan{{}, {}}})
	for _, c := range []struct {
		what   string
		bounds []time.Time
	}{
		{"no bound", nil},
		{"one bound", []time.Time{t0}},
		{"too many", hours(t0, store.MaxActivitySpans+1)},
		{"equal bounds", []time.Time{t0, t0}},
		{"decreasing", []time.Time{t0, t0.Add(time.Hour), t0.Add(time.Minute)}},
	} {
		if _, err := s.Activity(ctx, uuid.NewString(), c.bounds); err == nil {
			t.Errorf("%s: no error", c.what)
		}
	}
}
