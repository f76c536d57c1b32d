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
// Browsers that turn notifications off or expire are deleted, not marked:
// the store keeps no time of a browser's leaving. So NewSubscribers and
// Later count the browsers subscribed now, by when they subscribed, and
// Unsubscribed counts people (subscribers), by when their last browser
// left.
type Activity struct {
	// Subscribers is the website's subscribed browsers now, counted as an
	// audience counts them (subscribed people's endpoints).
	Subscribers int64
	// Later is how many of Subscribers subscribed at or after the last
	// bound.
	Later int64
	// Spans are the counts of each span, in order.
	Spans []ActivitySpan
}

// ActivitySpan is the activity of one span of time.
type ActivitySpan struct {
	// NewSubscribers is the browsers subscribed now whose subscription was
	// made in the span (an endpoint's CreatedAt; a renewed subscription
	// keeps its first).
	NewSubscribers int64
	// Unsubscribed is the people marked unsubscribed in the span (their
	// last browser was turned off, expired or moved to another person) who
	// have not subscribed again.
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

// Stats reads what a website's reports show.
type Stats interface {
	// Activity counts the website's activity in each span between two
	// consecutive bounds, [bounds[i], bounds[i+1]), so len(bounds)-1
	// spans: bounds must increase, and make 1 to MaxActivitySpans spans;
	// otherwise it is an error. The subscriber counts (Subscribers, Later,
	// NewSubscribers) are read at one moment, so Subscribers - Later -
	// the NewSubscribers of the spans after a span is what subscribed by
	// its end and still is. An unknown website has nothing: zero counts.
	// The work is one read of each of the website's subscribers, endpoints
	// and notifications, aggregated by the engine: no row per browser or
	// notification comes back.
	Activity(ctx context.Context, websiteID string, bounds []time.Time) (Activity, error)
}
