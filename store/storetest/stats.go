package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/store"
)

var statsCases = []testCase{
	{"Subscribers", testStatsSubscribers},
	{"Unsubscribed", testStatsUnsubscribed},
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

// testStatsSubscribers: browsers subscribed now, by the span they
// subscribed in; another website's browsers and people without one are
// not counted.
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
	join(w.Website.ID, 3*time.Hour, "")                  // after the last bound: Later
	gone := join(w.Website.ID, 90*time.Minute, "")       // turned off since: not counted
	join(other.Website.ID, 10*time.Minute, "")           // another website's
	_, err := s.DeleteSubscription(ctx, w.Website.ID, gone.Endpoint)
	noErr(t, "DeleteSubscription", err)
	_, err = s.ImportPeople(ctx, w.Website.ID, []store.ImportRow{{ExternalID: "carol"}}, at(20*time.Minute))
	noErr(t, "ImportPeople", err) // a person without a browser

	// An anonymous browser that signs in as bob, who already has a record,
	// moves to it: the record it leaves is marked unsubscribed then.
	anon := join(w.Website.ID, 2*time.Hour, "")
	anon.ExternalID, anon.At = "bob", at(2*time.Hour+time.Minute)
	subscribe(t, s, anon)

	got := activity(t, s, w.Website.ID, hours(t0, 3))
	same(t, "activity", got, store.Activity{Subscribers: 8, Later: 1, Spans: []store.ActivitySpan{
		{NewSubscribers: 2}, {NewSubscribers: 2}, {NewSubscribers: 2, Unsubscribed: 1},
	}})
	same(t, "the other website's activity", activity(t, s, other.Website.ID, hours(t0, 3)), store.Activity{
		Subscribers: 1, Spans: []store.ActivitySpan{{NewSubscribers: 1}, {}, {}},
	})
	// The first bound after every subscription: all of them are before.
	same(t, "activity after every subscription", activity(t, s, w.Website.ID, hours(t0.Add(24*time.Hour), 1)),
		store.Activity{Subscribers: 8, Spans: []store.ActivitySpan{{}}})
}

// testStatsUnsubscribed: people whose last browser left in a span and who
// have not come back. DeleteSubscription marks them at the current time.
func testStatsUnsubscribed(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	other := newWebsite(t, s)
	now := time.Now()
	join := func(websiteID, externalID string) store.SubscriptionInput {
		t.Helper()
		in := subscription(websiteID)
		in.At, in.ExternalID = now.Add(-30*time.Minute), externalID
		subscribe(t, s, in)
		return in
	}
	leave := func(websiteID string, in store.SubscriptionInput) {
		t.Helper()
		_, err := s.DeleteSubscription(ctx, websiteID, in.Endpoint)
		noErr(t, "DeleteSubscription", err)
	}
	leave(w.Website.ID, join(w.Website.ID, ""))    // left: counted
	leave(w.Website.ID, join(w.Website.ID, "ann")) // ann keeps her second browser: not counted
	join(w.Website.ID, "ann")
	back := join(w.Website.ID, "dan") // left, then came back: not counted
	leave(w.Website.ID, back)
	back.At = now.Add(-10 * time.Minute)
	subscribe(t, s, back)
	leave(other.Website.ID, join(other.Website.ID, "")) // another website's

	bounds := []time.Time{now.Add(-time.Hour), now.Add(time.Hour)}
	same(t, "activity", activity(t, s, w.Website.ID, bounds), store.Activity{Subscribers: 2, Spans: []store.ActivitySpan{
		{NewSubscribers: 2, Unsubscribed: 1},
	}})
	same(t, "the other website's activity", activity(t, s, other.Website.ID, bounds), store.Activity{
		Spans: []store.ActivitySpan{{Unsubscribed: 1}},
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
