package automations

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/relaybell/relaybell/notification"
	"github.com/relaybell/relaybell/store"
)

// Dispatcher publishes a stored message's send intent; a failure leaves
// it to the outbox sweep.
type Dispatcher interface {
	Dispatch(ctx context.Context, n store.Notification) error
}

// Config tunes an Engine; the zero value is the defaults.
type Config struct {
	// Poll is the longest the engine sleeps between looks at the timers
	// (another node may have started a run due now); default 1s.
	Poll time.Duration
	// Lease is how long a claimed timer stays the claimer's before another
	// node may take it (the claimer died); default 5s: a node killed with
	// a batch claimed delays it by at most that (the deploy package's
	// TestEngineSurvivesSIGKILL). A batch fired slower than its lease is
	// still fired once: FireTimer's DELETE is the claim that counts.
	Lease time.Duration
	// Batch is how many timers one claim takes; default 100.
	Batch int
	// Now is the clock; default time.Now. Tests move it instead of
	// sleeping through delays.
	Now func() time.Time
	// Kinds fire the timers of other kinds than the automations' (a
	// journey's steps: store.TimerJourney) in the same claim loop, under
	// the same leases. A timer of a kind no handler takes is an error.
	Kinds map[string]KindHandler
}

// KindHandler fires a claimed timer of its kind exactly once: the
// timer's delete in the handler's own transaction is the claim that
// counts, as FireTimer's is for an automation's message.
type KindHandler interface {
	FireTimer(ctx context.Context, t store.Timer, now time.Time) error
}

func (c Config) withDefaults() Config {
	if c.Poll <= 0 {
		c.Poll = time.Second
	}
	if c.Lease <= 0 {
		c.Lease = 5 * time.Second
	}
	if c.Batch <= 0 {
		c.Batch = 100
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	if c = c.withDefaults(); c.Lease < c.Poll {
		return errors.New("automations: the lease must be at least the poll interval")
	}
	return nil
}

// Engine fires due timers: each message of a run, once, as a notification
// to that person's browsers. Any number of engines may run on one store.
type Engine struct {
	cfg    Config
	st     Store
	disp   Dispatcher
	wake   <-chan struct{}
	logger *slog.Logger
	fired  *prometheus.CounterVec
}

// NewEngine returns an engine. wake, when not nil, makes it look at the
// timers at once (Service.Wakes); disp may be nil (the outbox sweep
// publishes every message). reg may be nil.
func NewEngine(cfg Config, st Store, disp Dispatcher, wake <-chan struct{}, logger *slog.Logger, reg prometheus.Registerer) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	e := &Engine{cfg: cfg.withDefaults(), st: st, disp: disp, wake: wake, logger: logger,
		fired: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "relaybell_automation_messages_total",
			Help: "Automation messages fired, by ledger outcome (sent, capped, skipped)."}, []string{"outcome"})}
	if reg != nil {
		if err := reg.Register(e.fired); err != nil {
			return nil, fmt.Errorf("registering automation metrics: %w", err)
		}
	}
	return e, nil
}

// Run fires due timers until ctx ends. It sleeps until the earliest
// timer not leased is due, at most Poll (a lease that runs out, a run
// another node started), or until woken; after a failure, Poll.
func (e *Engine) Run(ctx context.Context) error {
	for {
		wait := e.cfg.Poll
		if _, err := e.RunDue(ctx); err != nil {
			if ctx.Err() == nil {
				e.logger.Warn("firing automation timers", "err", err)
			}
		} else if due, ok, err := e.st.NextTimerDue(ctx); err == nil && ok {
			wait = min(wait, max(due.Sub(e.cfg.Now()), 0))
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-e.wake:
		case <-t.C:
		}
		t.Stop()
	}
}

// RunDue claims and fires every timer due now, a batch at a time, and
// returns how many it fired.
func (e *Engine) RunDue(ctx context.Context) (int, error) {
	total := 0
	for {
		now := e.cfg.Now()
		timers, err := e.st.ClaimTimers(ctx, now, e.cfg.Lease, e.cfg.Batch)
		if err != nil {
			return total, err
		}
		b := batch{e: e, automations: map[string]map[string]store.Automation{}, websites: map[string]store.Website{}}
		for _, t := range timers {
			if err := b.fire(ctx, t, now); err != nil {
				// The timer stays leased; another pass takes it when the
				// lease runs out.
				return total, fmt.Errorf("firing timer %s/%d: %w", t.RunID, t.Item, err)
			}
			total++
		}
		if len(timers) < e.cfg.Batch {
			return total, nil
		}
	}
}

// batch caches what a batch's timers read: each website and its active
// automations.
type batch struct {
	e           *Engine
	automations map[string]map[string]store.Automation // website id -> automation id -> automation
	websites    map[string]store.Website
}

func (b *batch) website(ctx context.Context, id string) (store.Website, map[string]store.Automation, error) {
	if list, ok := b.automations[id]; ok {
		return b.websites[id], list, nil
	}
	w, err := b.e.st.Website(ctx, id)
	if err != nil {
		return store.Website{}, nil, err
	}
	active, err := b.e.st.ActiveAutomations(ctx, id)
	if err != nil {
		return store.Website{}, nil, err
	}
	list := map[string]store.Automation{}
	for _, a := range active {
		list[a.ID] = a
	}
	b.websites[id], b.automations[id] = w, list
	return w, list, nil
}

// fire does one timer: its message as a notification to the person,
// unless the automation is no longer active or has no such message (the
// item is skipped), and the person's caps hold it back.
func (b *batch) fire(ctx context.Context, t store.Timer, now time.Time) error {
	if t.Kind != store.TimerAutomation {
		if h, ok := b.e.cfg.Kinds[t.Kind]; ok {
			return h.FireTimer(ctx, t, now)
		}
		return fmt.Errorf("unknown timer kind %q", t.Kind)
	}
	w, active, err := b.website(ctx, t.WebsiteID)
	if err != nil {
		return err
	}
	f := store.Fire{At: now}
	if a, ok := active[t.AutomationID]; ok {
		d, err := Decode(a)
		if err != nil {
			return err
		}
		if t.Item < len(d.Messages) {
			if f.Notification, err = message(ctx, d, t, w, now); err != nil {
				return err
			}
			f.Caps = store.AutomationCaps{PerDay: deref(d.Caps.PerDay), PerWeek: deref(d.Caps.PerWeek)}
		}
	}
	outcome, err := b.e.st.FireTimer(ctx, t, f)
	if err != nil {
		return err
	}
	if outcome == "" {
		return nil // stopped, restarted or fired by another node meanwhile
	}
	b.e.fired.WithLabelValues(outcome).Inc()
	if outcome == store.LedgerSent && f.Notification.Status == store.StatusQueued && b.e.disp != nil {
		if err := b.e.disp.Dispatch(ctx, *f.Notification); err != nil {
			b.e.logger.Warn("dispatching an automation message; the outbox sweep will retry", "notification_id", f.Notification.ID, "err", err)
		}
	}
	return nil
}

// errNoPerson refuses a message whose timer names nobody.
var errNoPerson = errors.New("an automation message's timer names no person")

// message is the notification of a timer's message: an automation send
// (no send body) to the person's browsers and nobody else's.
func message(ctx context.Context, d Definition, t store.Timer, w store.Website, now time.Time) (*store.Notification, error) {
	if t.SubscriberID == "" { // an empty target is everyone: never
		return nil, errNoPerson
	}
	n, err := d.Messages[t.Item].Prepare(ctx, w, d.Transactional, now)
	if err != nil {
		return nil, fmt.Errorf("preparing automation message: %w", err)
	}
	n.Automation, n.AutomationID, n.SendBody = true, t.AutomationID, nil
	target := notification.Target{SubscriberID: t.SubscriberID}
	n.TargetSummary = target.Summary()
	if n.Target, err = json.Marshal(target); err != nil {
		return nil, fmt.Errorf("encoding automation target: %w", err)
	}
	return n, nil
}

func deref(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}
