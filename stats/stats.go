package stats

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/relaybell/relaybell/analytics"
	"github.com/relaybell/relaybell/store"
)

// Bounds of a report's range, and of its history.
const (
	// DefaultDays is the range without from: the 30 days that end with to.
	DefaultDays = 30
	// MaxDays is the longest range, a leap year.
	MaxDays = 366
	// RemovalLife is how long the store keeps a browser's removal
	// (store.Stats.PurgeRemovals): a report of any range that starts in
	// the last 400 days is whole.
	RemovalLife = 400 * 24 * time.Hour
)

// ErrRange is a range that ends before it starts or is longer than
// MaxDays.
var ErrRange = fmt.Errorf("the range must not end before it starts, nor be longer than %d days", MaxDays)

// Reader is what a report reads of the store.
type Reader interface {
	Activity(ctx context.Context, websiteID string, bounds []time.Time) (store.Activity, error)
}

// Remover forgets old removals of browsers.
type Remover interface {
	PurgeRemovals(ctx context.Context, before time.Time) (int64, error)
}

// Purger forgets what the reports no longer need: the removals of browsers
// after RemovalLife. The composition root runs it with the other purges.
type Purger struct{ Store Remover }

// Purge forgets the removals older than RemovalLife at now.
func (p Purger) Purge(ctx context.Context, now time.Time) error {
	if _, err := p.Store.PurgeRemovals(ctx, now.Add(-RemovalLife)); err != nil {
		return fmt.Errorf("purging removals: %w", err)
	}
	return nil
}

// Query asks for a website's report.
type Query struct {
	WebsiteID string
	// From and To are the first and last day, included, in Loc. A zero To
	// is today, a zero From DefaultDays-1 days before To.
	From, To Day
	Loc      *time.Location
	// Now is the current time: it makes today, and its subscribers are
	// the store's now.
	Now time.Time
}

// Report is a website's activity per day of a range and over the range.
type Report struct {
	From     string `json:"from"`
	To       string `json:"to"`
	Timezone string `json:"timezone"`
	// Totals sum the days, but for Subscribers: the subscribed browsers
	// now.
	Totals Counts     `json:"totals"`
	Days   []DayStats `json:"days"`
}

// DayStats is one day of a Report.
type DayStats struct {
	Date string `json:"date"`
	Counts
}

// Counts are a day's or a range's numbers. Subscribers are browsers, and
// the past's are known as far as the store recorded removals (see the
// package doc).
type Counts struct {
	// Subscribers is the browsers subscribed at the end of the day, those
	// that left since included, or now in Totals.
	Subscribers int64 `json:"subscribers"`
	// NewSubscribers is the browsers that subscribed that day, those that
	// left since included.
	NewSubscribers int64 `json:"newSubscribers"`
	// Unsubscribed is the browsers that left that day: turned off,
	// expired, or erased with their person.
	Unsubscribed int64 `json:"unsubscribed"`
	// Notifications is the notifications made that day (drafts excluded,
	// automations included), the rest their counters' sums.
	Notifications int64 `json:"notifications"`
	Recipients    int64 `json:"recipients"`
	Sent          int64 `json:"sent"`
	Delivered     int64 `json:"delivered"`
	Clicked       int64 `json:"clicked"`
	// Ctr is Clicked / Sent in percent, one decimal (spec 2.3); 0 with
	// nothing sent.
	Ctr         float64 `json:"ctr"`
	Conversions int64   `json:"conversions"`
	Revenue     float64 `json:"revenue"`
}

// Range resolves the query's days: the defaults filled in, ErrRange for a
// range that ends before it starts or is longer than MaxDays.
func (q Query) Range() (from, to Day, err error) {
	from, to = q.From, q.To
	if to.IsZero() {
		to = DayOf(q.Now.In(q.Loc))
	}
	if from.IsZero() {
		from = to.AddDays(-(DefaultDays - 1))
	}
	if n := to.Sub(from) + 1; n < 1 || n > MaxDays {
		return Day{}, Day{}, ErrRange
	}
	return from, to, nil
}

// Read makes the report: one call of r for every day's counts, folded
// into days here.
func Read(ctx context.Context, r Reader, q Query) (Report, error) {
	from, to, err := q.Range()
	if err != nil {
		return Report{}, err
	}
	n := to.Sub(from) + 1
	bounds := make([]time.Time, n+1)
	for i := range bounds {
		bounds[i] = from.AddDays(i).Start(q.Loc)
	}
	act, err := r.Activity(ctx, q.WebsiteID, bounds)
	if err != nil {
		return Report{}, fmt.Errorf("reading activity: %w", err)
	}
	if len(act.Spans) != n {
		return Report{}, fmt.Errorf("reading activity: %d spans for %d days", len(act.Spans), n)
	}
	rep := Report{From: from.String(), To: to.String(), Timezone: q.Loc.String(), Days: make([]DayStats, n)}
	// Walk forward from the first day's start: a day's subscribers are
	// those of the day before, and its new ones, less those that left.
	t := &rep.Totals
	subscribers := act.Start
	var revenue float64
	for i, sp := range act.Spans {
		subscribers += sp.NewSubscribers - sp.Unsubscribed
		rep.Days[i] = DayStats{Date: from.AddDays(i).String(), Counts: Counts{
			Subscribers:    max(subscribers, 0),
			NewSubscribers: sp.NewSubscribers,
			Unsubscribed:   sp.Unsubscribed,
			Notifications:  sp.Notifications,
			Recipients:     sp.Recipients,
			Sent:           sp.Sent,
			Delivered:      sp.Delivered,
			Clicked:        sp.Clicked,
			Ctr:            analytics.Ctr(sp.Clicked, sp.Sent),
			Conversions:    sp.Conversions,
			Revenue:        money(sp.Revenue),
		}}
		t.NewSubscribers += sp.NewSubscribers
		t.Unsubscribed += sp.Unsubscribed
		t.Notifications += sp.Notifications
		t.Recipients += sp.Recipients
		t.Sent += sp.Sent
		t.Delivered += sp.Delivered
		t.Clicked += sp.Clicked
		t.Conversions += sp.Conversions
		revenue += sp.Revenue
	}
	t.Subscribers = act.Subscribers
	t.Ctr = analytics.Ctr(t.Clicked, t.Sent)
	t.Revenue = money(revenue)
	return rep, nil
}

// money rounds a sum of amounts to millionths, below any currency's
// smallest unit: adding floats leaves noise such as 0.30000000000000004.
func money(v float64) float64 { return math.Round(v*1e6) / 1e6 }
