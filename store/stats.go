package store

import (
	"context"
	"time"
)

// MaxActivitySpans bounds the spans of one Activity call: a report of a
// year of days, and a little more.
const MaxActivitySpans = 400

// Activity is what a website's reports show of the metadata, counted per
// span of time (package stats turns the spans into days).
//
// Subscribers are browsers (endpoints). A browser that turns notifications
// off, expires (the push service reports it gone) or whose person is
// erased is deleted, and its removal recorded: the website, when the
// browser subscribed and when it left, nothing else. So the counts of the
// past take in the browsers that left since, as long as their removal is
// recorded: removals before the store's migration 19 are not, and
// PurgeRemovals forgets old ones (stats.RemovalLife). A browser moved to
// another person (it signed in) stays subscribed: no removal. Browsers of a
// deleted website go with it, removals included.
type Activity struct {
	// Subscribers is the website's subscribed browsers now (every browser
	// stored is subscribed: its person is, as an audience counts them).
	Subscribers int64
	// Start is the browsers subscribed at the first bound: those made
	// before it that are subscribed now or were removed at or after it.
	// The browsers subscribed at the end of span i are Start plus the
	// NewSubscribers less the Unsubscribed of spans 0 to i.
	Start int64
	// Spans are the counts of each span, in order.
	Spans []ActivitySpan
}

// ActivitySpan is the activity of one span of time.
type ActivitySpan struct {
	// NewSubscribers is the browsers made in the span (an endpoint's
	// CreatedAt; a renewed subscription keeps its first), subscribed now
	// or removed since.
	NewSubscribers int64
	// Unsubscribed is the browsers removed in the span: turned off,
	// expired, or erased with their person.
	Unsubscribed int64
	// Notifications is the website's notifications made in the span
	// (CreatedAt), drafts excluded, automations included; the others are
	// the sums of their counters.
	Notifications int64
	Recipients    int64
	Sent          int64
	Delivered     int64
	Clicked       int64
	Conversions   int64
	Revenue       float64
}

// Stats reads what a website's reports show, and forgets old removals.
type Stats interface {
	// Activity counts the website's activity in each span between two
	// consecutive bounds, [bounds[i], bounds[i+1]), so len(bounds)-1
	// spans: bounds must increase, and make 1 to MaxActivitySpans spans;
	// otherwise it is an error. The subscriber counts (Subscribers,
	// Start, NewSubscribers, Unsubscribed) are read at one moment, so a
	// concurrent removal is counted once, as a browser or as a removal.
	// An unknown website has nothing: zero counts. The work is one read
	// of each of the website's endpoints, its removals since the first
	// bound (twice) and its notifications in the spans, aggregated by
	// the engine: no row per browser or notification comes back.
	Activity(ctx context.Context, websiteID string, bounds []time.Time) (Activity, error)
	// PurgeRemovals forgets the removals of the browsers that left before
	// the time given, of every website, and returns how many went: the
	// counts of the past then miss those browsers.
	PurgeRemovals(ctx context.Context, before time.Time) (int64, error)
}
