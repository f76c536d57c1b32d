package analytics

import (
	"context"
	"fmt"
	"time"
)

// Event kinds. A push ends as sent, failed or expired; the service worker
// then reports delivered and clicked.
const (
	KindSent      = "sent"
	KindFailed    = "failed"
	KindExpired   = "expired"
	KindDelivered = "delivered"
	KindClicked   = "clicked"
)

// Event is one row of a send's event log.
type Event struct {
	Kind           string
	WebsiteID      string
	NotificationID string
	EndpointID     string
	SubscriberID   string
	Device         string // desktop, android, ios, mobile, other
	Language       string // two letters or "" (reported as "unknown")
	Variant        string // "a", "b" or "" when not an A/B send
	Code           string // push service answer for failed/expired: "413", "500", "timeout", ...
	At             time.Time
}

// The times an event may carry: what every store can hold (ClickHouse's
// DateTime ends in 2106).
var (
	minAt = time.Unix(0, 0)
	maxAt = time.Date(2105, 12, 31, 0, 0, 0, 0, time.UTC)
)

// kinds are the event kinds a store holds.
var kinds = map[string]bool{KindSent: true, KindFailed: true, KindExpired: true, KindDelivered: true, KindClicked: true}

// Check returns an error for the first of events that no store can hold:
// an unknown kind, or a time before 1970 or after 2105. Every Record
// refuses such a batch whole before writing or journaling any of it, so
// that it cannot fail the events of other Record calls it would have
// shared a journal record or a group commit with (a caller that puts the
// events of several pieces of work in one call, as the pusher's recorder
// does, still has them all refused together).
func Check(events []Event) error {
	for i := range events {
		if err := events[i].check(); err != nil {
			return fmt.Errorf("event %d: %w", i, err)
		}
	}
	return nil
}

func (e *Event) check() error {
	if !kinds[e.Kind] || e.At.Before(minAt) || e.At.After(maxAt) {
		return fmt.Errorf("kind %q at %s cannot be stored", e.Kind, e.At.Format(time.RFC3339Nano))
	}
	return nil
}

// Report is what the notification detail shows from the event log.
type Report struct {
	Devices   []DeviceRow
	Variants  []VariantRow
	Languages []LanguageRow
	Errors    []ErrorRow
	Expired   int64
}

// DeviceRow counts one device type.
type DeviceRow struct {
	Device  string `json:"device"`
	Sent    int64  `json:"sent"`
	Clicked int64  `json:"clicked"`
}

// VariantRow counts one A/B variant; Ctr is clicked/sent in percent, one decimal.
type VariantRow struct {
	Variant string  `json:"variant"`
	Sent    int64   `json:"sent"`
	Clicked int64   `json:"clicked"`
	Ctr     float64 `json:"ctr"`
}

// LanguageRow counts one language ("unknown" when the browser sent none).
type LanguageRow struct {
	Language string `json:"language"`
	Sent     int64  `json:"sent"`
	Clicked  int64  `json:"clicked"`
}

// ErrorRow counts one push service answer (or "expired").
type ErrorRow struct {
	Code  string `json:"code"`
	Count int64  `json:"count"`
}

// Store records send events and reads them back per notification, and
// keeps the behavioral events websites post.
// Implementations: SQLite (embedded default) and ClickHouse (cluster, where
// nodes record through a Journal).
type Store interface {
	// Record writes the events; a batch with an event Check refuses is
	// refused whole, with nothing written.
	Record(ctx context.Context, events []Event) error
	Report(ctx context.Context, websiteID, notificationID string) (Report, error)
	// PersonEvents lists the events of the website's subscribers, newest
	// first, at most limit; only those of the given kinds unless kinds is
	// empty.
	PersonEvents(ctx context.Context, websiteID string, subscriberIDs, kinds []string, limit int) ([]Event, error)
	// PersonCounts counts the events of the website's subscribers by kind.
	PersonCounts(ctx context.Context, websiteID string, subscriberIDs []string) (map[string]int64, error)
	// RecordBehaviors writes behavioral events, durably once it returns; a
	// batch with one CheckBehaviors refuses is refused whole, with nothing
	// written. A behavior recorded again (the same id) is listed
	// once.
	RecordBehaviors(ctx context.Context, behaviors []Behavior) error
	// Behaviors lists the website's behavioral events q selects, newest
	// first (ties by id, descending), at most q.Limit; an error when
	// q.Check refuses q.
	Behaviors(ctx context.Context, q BehaviorQuery) ([]Behavior, error)
	// Erase deletes every event of the website's subscribers, and every
	// behavioral event of those subscribers or logged under those external
	// ids (right to erasure); empty ids erase nothing. A store may finish
	// the deletion shortly after returning.
	Erase(ctx context.Context, websiteID string, subscriberIDs, externalIDs []string) error
	Close() error
}
