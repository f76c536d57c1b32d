package automations

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/relaybell/relaybell/audience"
	"github.com/relaybell/relaybell/store"
)

// Store is what the Service and the Engine read and write.
type Store interface {
	store.Automations
	audience.Reader
	Website(ctx context.Context, id string) (store.Website, error)
	Segment(ctx context.Context, websiteID, id string) (store.Segment, error)
	Person(ctx context.Context, websiteID, idOrExternalID string) (store.Person, error)
	// Template finds a template a message names, when the engine sends
	// it (templates.Lookup).
	Template(ctx context.Context, websiteID, id string) (store.Template, error)
}

// Service starts and stops people's runs as their events and browsers
// arrive. It runs on the API nodes, on the request's path; the Engine
// sends the messages when they come due.
type Service struct {
	st     Store
	logger *slog.Logger
	// wake tells a local Engine that a run started (a message may be due
	// now); buffered, never blocks.
	wake chan struct{}
}

// NewService returns a Service over st.
func NewService(st Store, logger *slog.Logger) *Service {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Service{st: st, logger: logger, wake: make(chan struct{}, 1)}
}

// Wakes is signalled after a run starts, for an Engine in the same
// process (NewEngine's wake).
func (s *Service) Wakes() <-chan struct{} { return s.wake }

// Wake signals Wakes: another kind's timer (a journey's step) may be due
// now. It never blocks.
func (s *Service) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Decode reads a stored automation's definition.
func Decode(a store.Automation) (Definition, error) {
	d := Definition{Name: a.Name, Status: a.Status}
	if err := json.Unmarshal(a.Definition, &d); err != nil {
		return Definition{}, fmt.Errorf("decoding automation %s: %w", a.ID, err)
	}
	return d, nil
}

// Event acts on a person's behavioral event named name: it first cancels
// what is pending of the automations that name it as a stop event, then
// starts the runs of the active automations it triggers (conditions on
// its properties included). It returns how many runs it started or
// restarted.
func (s *Service) Event(ctx context.Context, websiteID, subscriberID, name string, properties json.RawMessage, at time.Time) (int, error) {
	list, err := s.st.ActiveAutomations(ctx, websiteID)
	if err != nil {
		return 0, err
	}
	var stops []string
	var triggers []store.Automation
	defs := map[string]Definition{}
	for _, a := range list {
		d, err := Decode(a)
		if err != nil {
			return 0, err
		}
		defs[a.ID] = d
		if slices.Contains(d.StopEvents, name) {
			stops = append(stops, a.ID)
		}
		if d.Trigger.Type == TriggerEvent && d.Trigger.Event == name && Matches(d.Trigger.Conditions, properties) {
			triggers = append(triggers, a)
		}
	}
	if _, err := s.st.StopAutomations(ctx, websiteID, subscriberID, stops, at); err != nil {
		return 0, err
	}
	return s.start(ctx, triggers, defs, subscriberID, "", at)
}

// startMatching starts the person's runs of the website's active
// automations of the trigger type that match; key names the trigger (see
// start).
func (s *Service) startMatching(ctx context.Context, websiteID, subscriberID, trigger, key string, at time.Time, match func(Definition) bool) (int, error) {
	list, err := s.st.ActiveAutomations(ctx, websiteID, trigger)
	if err != nil {
		return 0, err
	}
	var triggers []store.Automation
	defs := map[string]Definition{}
	for _, a := range list {
		d, err := Decode(a)
		if err != nil {
			return 0, err
		}
		if match(d) {
			triggers = append(triggers, a)
			defs[a.ID] = d
		}
	}
	return s.start(ctx, triggers, defs, subscriberID, key, at)
}

// start starts the person's run of each automation. A trigger with a key
// (a pending trigger's id) gives each run an id derived from it and the
// automation, so that the trigger done again starts nothing more
// (store.Automations.TriggerAutomation); "" gives new ones.
func (s *Service) start(ctx context.Context, list []store.Automation, defs map[string]Definition, subscriberID, key string, at time.Time) (int, error) {
	started := 0
	for _, a := range list {
		d := defs[a.ID]
		delays := make([]time.Duration, len(d.Messages))
		for i, m := range d.Messages {
			delays[i] = time.Duration(*m.DelaySeconds) * time.Second
		}
		ok, err := s.st.TriggerAutomation(ctx, store.AutomationTrigger{
			WebsiteID: a.WebsiteID, AutomationID: a.ID, SubscriberID: subscriberID,
			RunID: runID(key, a.ID), Restart: d.Restart, Delays: delays, At: at,
		})
		switch {
		case errors.Is(err, store.ErrNotFound): // deleted meanwhile, or the person was erased
			continue
		case err != nil:
			return started, err
		case ok:
			started++
		}
	}
	if started > 0 {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
	return started, nil
}

// LedgerLife is how long the ledger keeps what a message did: the caps
// count a week of it.
const LedgerLife = 8 * 24 * time.Hour

// Purge forgets the ledger rows no cap counts any more.
func (s *Service) Purge(ctx context.Context, now time.Time) error {
	_, err := s.st.PurgeLedger(ctx, now.Add(-LedgerLife))
	return err
}

// WatchSegment records who is in the segment of a segment_entered
// automation now, when it starts watching it (created, its segment
// changed, or made active again): they are in it already and do not
// enter (SeedSegment).
func (s *Service) WatchSegment(ctx context.Context, a store.Automation) error {
	d, err := Decode(a)
	if err != nil || d.Trigger.Type != TriggerSegmentEntered {
		return err
	}
	return SeedSegment(ctx, s.st, a.WebsiteID, a.ID, d.Trigger.SegmentID)
}

// SegmentWatches lists the website's active segment_entered automations
// as watchers of their segments (Segments): entering one starts the
// person's run.
func (s *Service) SegmentWatches(ctx context.Context, websiteID string) ([]Watch, error) {
	list, err := s.st.ActiveAutomations(ctx, websiteID, TriggerSegmentEntered)
	if err != nil {
		return nil, err
	}
	out := make([]Watch, 0, len(list))
	for _, a := range list {
		d, err := Decode(a)
		if err != nil {
			return nil, err
		}
		out = append(out, Watch{ID: a.ID, SegmentID: d.Trigger.SegmentID,
			Enter: func(ctx context.Context, subscriberID string, at time.Time) (bool, error) {
				n, err := s.start(ctx, []store.Automation{a}, map[string]Definition{a.ID: d}, subscriberID, "", at)
				return n > 0, err
			}})
	}
	return out, nil
}

var _ Watchers = (*Service)(nil)
