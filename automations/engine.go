package automations

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/relaybell/relaybell/lease"
	"github.com/relaybell/relaybell/notification"
	"github.com/relaybell/relaybell/store"
	"github.com/relaybell/relaybell/templates"
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

// BatchKindHandler is a KindHandler that fires a claimed batch's timers
// of its kind together (the journeys' engine: one transaction for them
// all), falling back to one at a time itself when that fails. It returns
// how many it fired; those not fired stay leased.
type BatchKindHandler interface {
	KindHandler
	FireTimers(ctx context.Context, ts []store.Timer, now time.Time) (int, error)
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
	return lease.Loop{What: "firing automation timers", Poll: e.cfg.Poll, RunDue: e.RunDue,
		NextDue: e.st.NextTimerDue, Now: e.cfg.Now, Wake: e.wake, Logger: e.logger}.Run(ctx)
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
		n, err := b.fireAll(ctx, timers, now)
		total += n
		if err != nil {
			// The timers not fired stay leased; another pass takes them
			// when the lease runs out.
			return total, err
		}
		if len(timers) < e.cfg.Batch {
			return total, nil
		}
	}
}

// fireAll fires a claimed batch: the timers of other kinds through their
// handlers (a BatchKindHandler's together, once the rest are fired; any
// other's one by one), the automations' messages together
// (store.FireTimers: one transaction for the batch's uncapped messages,
// where a transaction each made the store's CPU per message). Should the
// batch's transaction fail (a deadlock with a stop deleting several of
// its timers, on PostgreSQL), each is fired on its own. It returns how
// many it fired.
func (b *batch) fireAll(ctx context.Context, timers []store.Timer, now time.Time) (fired int, firedErr error) {
	var fires []store.TimerFire
	var prepErr error
	kinds := map[string][]store.Timer{} // the batch handlers' timers
	var kindOrder []string
	defer func() { // the batch handlers' timers, whatever returns before
		for _, k := range kindOrder {
			n, err := b.e.cfg.Kinds[k].(BatchKindHandler).FireTimers(ctx, kinds[k], now)
			fired += n
			if err != nil && firedErr == nil {
				firedErr = err
			}
		}
	}()
	for _, t := range timers {
		if t.Kind != store.TimerAutomation {
			h, ok := b.e.cfg.Kinds[t.Kind]
			if !ok {
				prepErr = fmt.Errorf("firing timer %s/%d: unknown timer kind %q", t.RunID, t.Item, t.Kind)
				break
			}
			if _, ok := h.(BatchKindHandler); ok {
				if kinds[t.Kind] == nil {
					kindOrder = append(kindOrder, t.Kind)
				}
				kinds[t.Kind] = append(kinds[t.Kind], t)
				continue
			}
			if err := h.FireTimer(ctx, t, now); err != nil {
				prepErr = fmt.Errorf("firing timer %s/%d: %w", t.RunID, t.Item, err)
				break
			}
			fired++
			continue
		}
		f, err := b.prepare(ctx, t, now)
		if err != nil {
			prepErr = fmt.Errorf("firing timer %s/%d: %w", t.RunID, t.Item, err)
			break
		}
		fires = append(fires, store.TimerFire{Timer: t, Fire: f})
	}
	if len(fires) == 0 {
		return fired, prepErr
	}
	outcomes, err := b.e.st.FireTimers(ctx, fires)
	ok := len(fires) // fired without an error
	if err != nil {
		ok = 0
		if len(outcomes) != len(fires) {
			outcomes = make([]string, len(fires))
		}
		if ctx.Err() == nil {
			b.e.logger.Warn("firing a batch of automation timers; firing them one by one", "timers", len(fires), "err", err)
			err = nil
			for i, f := range fires {
				o, ferr := b.e.st.FireTimer(ctx, f.Timer, f.Fire)
				if ferr != nil {
					err = fmt.Errorf("firing timer %s/%d: %w", f.Timer.RunID, f.Timer.Item, ferr)
					break
				}
				if outcomes[i] == "" { // not one the batch fired before it failed
					outcomes[i] = o
				}
				ok = i + 1
			}
		}
	}
	fired += ok
	for i, f := range fires {
		b.done(ctx, f.Fire, outcomes[i])
	}
	if err != nil {
		return fired, err
	}
	return fired, prepErr
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

// prepare is what firing an automation timer does: its message as a
// notification to the person, unless the automation is no longer active
// or has no such message (the item is skipped), under the automation's
// caps.
func (b *batch) prepare(ctx context.Context, t store.Timer, now time.Time) (store.Fire, error) {
	w, active, err := b.website(ctx, t.WebsiteID)
	if err != nil {
		return store.Fire{}, err
	}
	f := store.Fire{At: now}
	if a, ok := active[t.AutomationID]; ok {
		d, err := Decode(a)
		if err != nil {
			return store.Fire{}, err
		}
		if t.Item < len(d.Messages) {
			m := d.Messages[t.Item]
			switch err := templates.Resolve(ctx, b.e.st, t.WebsiteID, &m.Request); {
			case errors.Is(err, store.ErrNotFound):
				// Deleting a template a message names is refused; one gone
				// all the same (deleted meanwhile) skips the message.
				b.e.logger.Warn("an automation message's template is gone; the message is skipped",
					"automation_id", t.AutomationID, "item", t.Item, "err", err)
				return f, nil
			case err != nil:
				return store.Fire{}, err
			}
			d.Messages[t.Item] = m
			var refused *notification.Error
			if f.Notification, err = message(ctx, d, t, w, now); errors.As(err, &refused) {
				// Checked when the automation was saved, refused now (its
				// template changed since): skipped, as a template gone,
				// rather than failing its batch at every lease for ever.
				b.e.logger.Warn("an automation message no longer sends; the message is skipped",
					"automation_id", t.AutomationID, "item", t.Item, "err", err)
				return store.Fire{At: now}, nil
			} else if err != nil {
				return store.Fire{}, err
			}
			f.Caps = store.AutomationCaps{PerDay: deref(d.Caps.PerDay), PerWeek: deref(d.Caps.PerWeek)}
		}
	}
	return f, nil
}

// done counts a fired timer's outcome and dispatches its message if it
// was sent; "" is a timer stopped, restarted or fired by another node
// meanwhile.
func (b *batch) done(ctx context.Context, f store.Fire, outcome string) {
	if outcome == "" {
		return
	}
	b.e.fired.WithLabelValues(outcome).Inc()
	if outcome == store.LedgerSent && f.Notification.Status == store.StatusQueued && b.e.disp != nil {
		if err := b.e.disp.Dispatch(ctx, *f.Notification); err != nil {
			b.e.logger.Warn("dispatching an automation message; the outbox sweep will retry", "notification_id", f.Notification.ID, "err", err)
		}
	}
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
