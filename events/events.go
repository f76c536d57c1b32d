package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/relaybell/relaybell/analytics"
	"github.com/relaybell/relaybell/batch"
	"github.com/relaybell/relaybell/defcache"
	"github.com/relaybell/relaybell/store"
)

// Limits of spec 8.2 and the rules above.
const (
	// MaxName is how many characters of an event name are kept.
	MaxName = analytics.MaxBehaviorName
	// DefaultAlertMax is where a product alert's audience is cut.
	DefaultAlertMax = 100_000
	// InterestLife is how long a product interest lasts.
	InterestLife = 90 * 24 * time.Hour
	// DedupeWindow is how long after a price_drop another of the same
	// product is deduped.
	DedupeWindow = 10 * time.Minute
	// maxProductID bounds a product id (longer ones are cut).
	maxProductID = 200
)

// Event names with a meaning of their own.
const (
	NameBackInStock          = "back_in_stock"
	NamePriceDrop            = "price_drop"
	NameBackInStockSubscribe = "back_in_stock.subscribe"
)

// Sources of an event.
const (
	SourceServer  = "server"
	SourceBrowser = "browser"
)

// notConversions never count as conversions, whatever their properties.
var notConversions = map[string]bool{"cart.updated": true, "checkout.started": true}

// MaxValue bounds a conversion value (either sign), far beyond any sale,
// so that sums of them stay exact and finite in every store.
const MaxValue = 1e12

// ErrValue is returned for a value or revenue beyond MaxValue; nothing is
// done.
var ErrValue = errors.New("value and revenue are at most 1e12 either way")

// ErrTooLarge is returned for an event larger than the event log takes
// (analytics.MaxBehaviorBytes); nothing is done.
var ErrTooLarge = errors.New("the event is too large to store")

// Store is what Track reads and writes in the metadata, what Run folds and
// what Purge forgets.
type Store interface {
	store.Behavior
	Person(ctx context.Context, websiteID, idOrExternalID string) (store.Person, error)
}

// Log is the event log the events are kept in.
type Log interface {
	RecordBehaviors(ctx context.Context, bs []analytics.Behavior) error
}

// Dispatcher publishes a queued product alert's send intent once it is
// stored; a failure leaves it to the outbox sweep.
type Dispatcher interface {
	Dispatch(ctx context.Context, n store.Notification) error
}

// Automations starts and stops a person's automation runs on their
// events (package automations' Service is one).
type Automations interface {
	// Event cancels what the event stops and starts what it triggers, and
	// returns how many runs it started or restarted.
	Event(ctx context.Context, websiteID, subscriberID, name string, properties json.RawMessage, at time.Time) (int, error)
}

// Goals records a person's reaches of goals on their events (package
// goals' Service is one).
type Goals interface {
	// Event records the reaches of the website's goals of the event name,
	// once per event id, and returns the ids of the goals reached.
	Event(ctx context.Context, websiteID, subscriberID, eventID, name string, value float64, at time.Time) ([]string, error)
}

// Journeys ends, moves on and enrols a person's journey enrolments on
// their events (package journeys' Service is one).
type Journeys interface {
	// Event ends the enrolments the event exits, moves on those waiting
	// for it, and returns how many journeys it enrolled the person in.
	Event(ctx context.Context, websiteID, subscriberID, name string, properties json.RawMessage, at time.Time) (int, error)
}

// writeLinger is how long a write of conversions' credits and product
// interests waits for more. Track makes an event's write while it does the
// rest (the goals, automations and journeys), and waits for it before the
// event's own write, which needs its credit (and waits up to the log's
// 3 ms gap while events come together), so the wait costs a request
// little. For the interests alone, at 3,000 events a second in the local
// cluster: 287 µs of CPU an event across every process (PostgreSQL 80)
// against 304 (95) lingering only while busy (batch.WhenBusy) and 325 to
// 332 (107) written before the rest, one after the other; the embedded
// default 196, 205 and 225 (docs/scale-out.md, "The interests written
// beside the rest"). The credits joined them in stop 63 ("Credits and
// interests in one write").
const writeLinger = 3 * time.Millisecond

// Config tunes a Service; the zero value is the spec's.
type Config struct {
	// AlertMax is where a product alert's audience is cut (tests make it
	// small); 0 is DefaultAlertMax.
	AlertMax int
	// Automations acts on the events of known people; nil runs none.
	Automations Automations
	// Goals records the goals the events of known people reach; nil
	// records none.
	Goals Goals
	// Journeys acts on the events of known people; nil runs none.
	Journeys Journeys
}

// Service handles behavioral events.
type Service struct {
	st     Store
	log    Log
	disp   Dispatcher
	logger *slog.Logger
	cfg    Config
	// kick wakes the folder when a conversion was credited.
	kick chan struct{}
	// refs answers the person lookups from what it found before, while
	// the people version has not moved.
	refs *defcache.People
	// people and writes share the store calls of concurrent events.
	people *batch.Batcher[personKey, personFound]
	writes *batch.Batcher[write, store.Interaction]
}

// New returns a Service; disp may be nil (alerts wait for the outbox
// sweep).
func New(st Store, log Log, disp Dispatcher, logger *slog.Logger, cfg Config) *Service {
	if cfg.AlertMax <= 0 {
		cfg.AlertMax = DefaultAlertMax
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Service{st: st, log: log, disp: disp, logger: logger, cfg: cfg, kick: make(chan struct{}, 1)}
	s.refs = defcache.NewPeople(st, logger)
	s.people = batch.New(s.lookPeople, nil)
	s.writes = batch.New(s.write, s.writeOne).WithLinger(writeLinger)
	return s
}

// Input is one event as posted.
type Input struct {
	// ID is the event's id; "" gets a new one. A retry of the same
	// request (an Idempotency-Key) gives the same.
	ID           string
	Website      store.Website
	Name         string
	ExternalID   string
	SubscriberID string // a UUID in lower case, or ""
	// Addressed says the post had an externalId, subscriberId or endpoint
	// member, even null or blank: such an event never makes a product
	// alert (a mistake must not send to everyone interested).
	Addressed bool
	// Properties is a JSON object, or empty for none.
	Properties json.RawMessage
	Source     string
	At         time.Time
}

// Attribution is the notification a conversion was credited to.
type Attribution struct {
	NotificationID string  `json:"notificationId"`
	Value          float64 `json:"value"`
}

// Answer is the 202 body of POST /events (spec 4.2). The product-alert
// members are there only for an event that asks for a product alert.
type Answer struct {
	OK                     bool         `json:"ok"`
	EventID                string       `json:"eventId"`
	SubscriberID           *string      `json:"subscriberId"`
	IsConversion           bool         `json:"isConversion"`
	Attribution            *Attribution `json:"attribution"`
	AutomationsTriggered   int          `json:"automationsTriggered"`
	SequencesEnrolled      int          `json:"sequencesEnrolled"`
	ProductAlerts          *int         `json:"productAlerts,omitempty"`
	AlertAudience          *int         `json:"alertAudience,omitempty"`
	AlertAudienceTruncated *bool        `json:"alertAudienceTruncated,omitempty"`
	Deduped                *bool        `json:"deduped,omitempty"`
}

// CutName is an event name as kept: trimmed, at most MaxName characters.
// "" means none was given.
func CutName(name string) string { return cutText(strings.TrimSpace(name), MaxName) }

// Track stores the event and does what it asks for: the conversion
// credit (found and made in one statement) and the product interest, in
// one write shared with concurrent events' and made while the goals,
// automations and journeys are done, or else the product alert; then the
// event itself (after its credit, whose send it names; beside its
// interest), so that once Track returns without an error all of them are
// stored. A failed step fails Track (a write's failure may come after the
// goals, automations and journeys ran, an interest's after the event was
// stored); running it again with the same Input.ID stores and credits
// nothing twice (the credit and the event are keyed by the event id, the
// credit answering the send it was first made to, an interest is kept
// once, and a repeated alert is deduped or finds its interests used up).
func (s *Service) Track(ctx context.Context, in Input) (ans Answer, err error) {
	at := in.At.UTC()
	// The order GET /events lists events of the same millisecond in.
	seq := analytics.NextSeq()
	props, err := readProperties(in.Properties)
	if err != nil {
		return Answer{}, err
	}
	value, valued := props.value()
	if valued && math.Abs(value) > MaxValue {
		return Answer{}, ErrValue
	}
	name := CutName(in.Name)
	b := analytics.Behavior{
		ID: in.ID, WebsiteID: in.Website.ID, Name: name, ExternalID: in.ExternalID,
		Properties: in.Properties, Source: in.Source, At: at, Seq: seq,
	}
	if b.ID == "" {
		// In time order: the embedded default's behaviors are keyed by id
		// (store.NewID).
		b.ID = store.NewID()
	}
	if len(b.Properties) == 0 {
		b.Properties = json.RawMessage("{}")
	}
	ans = Answer{OK: true, EventID: b.ID}
	// Refused before anything is done: the log's bound on one event.
	if err := analytics.CheckBehaviors([]analytics.Behavior{b}); errors.Is(err, analytics.ErrBehaviorTooLarge) {
		return Answer{}, fmt.Errorf("%w: %w", ErrTooLarge, err)
	}

	person, err := s.person(ctx, in)
	if err != nil {
		return Answer{}, err
	}
	if person != nil {
		b.SubscriberID, b.ExternalID = person.ID, person.ExternalID
		ans.SubscriberID = &person.ID
	}

	b.Conversion = isConversion(name, valued, in.Website.Settings)
	ans.IsConversion = b.Conversion
	// The event's credit and interest are one write, shared with
	// concurrent events' (each request answered once the write holding its
	// own committed), made while the rest is done. The event's own write
	// waits for a credit (the event names the send credited); an interest
	// alone is written beside it too, the answer waiting for both.
	w := write{websiteID: in.Website.ID}
	if b.Conversion && person != nil {
		w.credit = &store.Attribution{EventID: b.ID, SubscriberID: person.ID,
			Since: at.Add(-in.Website.Settings.Attribution()), At: at, Value: value}
	}
	if product := props.productID(); product != "" {
		switch {
		case person != nil:
			kind := store.InterestPriceDrop
			if name == NameBackInStockSubscribe {
				kind = store.InterestBackInStock
			}
			w.interest = &store.ProductInterest{WebsiteID: in.Website.ID, SubscriberID: person.ID,
				ProductID: product, Kind: kind, CreatedAt: at}
		case (name == NameBackInStock || name == NamePriceDrop) && !in.Addressed:
			if err := s.alert(ctx, in.Website, name, product, props, at, &ans); err != nil {
				return Answer{}, err
			}
		}
	}
	var written func() writeDone
	if w.credit != nil || w.interest != nil {
		done := make(chan writeDone, 1)
		go func() {
			send, err := s.writes.Do(ctx, w)
			done <- writeDone{send, err}
		}()
		written = sync.OnceValue(func() writeDone { return <-done })
		// Track returns only once the write is done, whatever step failed.
		defer func() {
			if d := written(); d.err != nil && err == nil {
				ans, err = Answer{}, d.err
			}
		}()
	}

	if person != nil && s.cfg.Goals != nil {
		// The goals service ends the enrolments that exit on a goal
		// reached. A redo (same event id) records nothing more.
		worth := 0.0
		if valued {
			worth = value
		}
		if _, err := s.cfg.Goals.Event(ctx, in.Website.ID, person.ID, b.ID, name, worth, at); err != nil {
			return Answer{}, fmt.Errorf("recording goals: %w", err)
		}
	}
	if person != nil && s.cfg.Automations != nil {
		// A redo (same event id) stops nothing more and restarts what it
		// started, so its answer may count the restarts again.
		n, err := s.cfg.Automations.Event(ctx, in.Website.ID, person.ID, name, b.Properties, at)
		if err != nil {
			return Answer{}, fmt.Errorf("running automations: %w", err)
		}
		ans.AutomationsTriggered = n
	}
	if person != nil && s.cfg.Journeys != nil {
		// A redo (same event id) finds the enrolments it made live, and
		// enrols nobody again (reentry never: already enrolled).
		n, err := s.cfg.Journeys.Event(ctx, in.Website.ID, person.ID, name, b.Properties, at)
		if err != nil {
			return Answer{}, fmt.Errorf("running journeys: %w", err)
		}
		ans.SequencesEnrolled = n
	}
	if w.credit != nil {
		d := written()
		if d.err != nil {
			return Answer{}, d.err
		}
		if d.send.NotificationID != "" {
			b.NotificationID, b.Value = d.send.NotificationID, value
			ans.Attribution = &Attribution{NotificationID: d.send.NotificationID, Value: value}
			select {
			case s.kick <- struct{}{}:
			default:
			}
		}
	}
	if err := s.log.RecordBehaviors(ctx, []analytics.Behavior{b}); err != nil {
		return Answer{}, fmt.Errorf("storing event: %w", err)
	}
	return ans, nil
}

// person is whom the event names, or nil: subscriberId first, then
// externalId. A person of another website, or one not stored yet, is
// nobody (the event keeps the external id it named). Concurrent events
// share their lookups: a batch reads the people version (unless the
// store's lease on the last read holds), then the keys not cached, one
// store call per website, reading only ids.
func (s *Service) person(ctx context.Context, in Input) (*store.PersonRef, error) {
	key, byID := in.SubscriberID, true
	if key == "" {
		key, byID = in.ExternalID, false
	}
	if key == "" {
		return nil, nil
	}
	p, err := s.people.Do(ctx, personKey{websiteID: in.Website.ID, key: key})
	if err != nil {
		return nil, fmt.Errorf("finding the event's person: %w", err)
	}
	if !p.found || byID && p.ref.ID != key || !byID && p.ref.ExternalID != key {
		return nil, nil
	}
	return &p.ref, nil
}

// personKey is a person lookup of a batch, personFound its answer.
type personKey struct{ websiteID, key string }

type personFound struct {
	ref   store.PersonRef
	found bool
}

// lookPeople answers a batch of person lookups: one read of the people
// version, and a store call per website of the keys not cached.
func (s *Service) lookPeople(ctx context.Context, keys []personKey) ([]personFound, error) {
	bySite := map[string][]string{}
	for _, k := range keys {
		bySite[k.websiteID] = append(bySite[k.websiteID], k.key)
	}
	refs, err := s.refs.Refs(ctx, bySite)
	if err != nil {
		return nil, err
	}
	out := make([]personFound, len(keys))
	for i, k := range keys {
		out[i].ref, out[i].found = refs[k.websiteID][k.key]
	}
	return out, nil
}

// write is what one event writes to the store beside its log entry: its
// conversion's credit, its product interest, or both; writeDone is how it
// went, the send credited (none: a zero Interaction).
type write struct {
	websiteID string
	credit    *store.Attribution
	interest  *store.ProductInterest
}

type writeDone struct {
	send store.Interaction
	err  error
}

// write makes a batch of events' writes: one store call, one transaction.
func (s *Service) write(ctx context.Context, list []write) ([]store.Interaction, error) {
	w := store.EventWrites{Credits: map[string][]store.Attribution{}}
	for _, it := range list {
		if it.credit != nil {
			w.Credits[it.websiteID] = append(w.Credits[it.websiteID], *it.credit)
		}
		if it.interest != nil {
			w.Interests = append(w.Interests, *it.interest)
		}
	}
	found, err := s.st.WriteEvents(ctx, w)
	if err != nil {
		return nil, err
	}
	out := make([]store.Interaction, len(list))
	for i, it := range list {
		if it.credit != nil {
			out[i] = found[it.websiteID][it.credit.EventID]
		}
	}
	return out, nil
}

// writeOne makes one event's write alone (a lone one, or one of a batch
// that failed, so that only the request at fault fails).
func (s *Service) writeOne(ctx context.Context, it write) (store.Interaction, error) {
	found, err := s.write(ctx, []write{it})
	if err != nil {
		return store.Interaction{}, err
	}
	return found[0], nil
}

// isConversion applies rules 3-4.
func isConversion(name string, valued bool, s store.Settings) bool {
	if notConversions[name] {
		return false
	}
	if valued {
		return true
	}
	for _, c := range s.ConversionNames() {
		if c == name {
			return true
		}
	}
	return false
}
