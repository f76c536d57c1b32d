package journeys

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/relaybell/relaybell/store"
)

// Dispatcher publishes a stored step's send intent; a failure leaves it
// to the outbox sweep.
type Dispatcher interface {
	Dispatch(ctx context.Context, n store.Notification) error
}

// Engine fires journey timers (store.TimerJourney): it is the handler the
// automations' claim loop (automations.Engine) calls for that kind, so
// one loop claims both kinds under the same leases.
type Engine struct {
	st     Store
	disp   Dispatcher
	logger *slog.Logger
}

// NewEngine returns the journeys' timer handler; disp may be nil (the
// outbox sweep publishes every send).
func NewEngine(st Store, disp Dispatcher, logger *slog.Logger) *Engine {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Engine{st: st, disp: disp, logger: logger}
}

// FireTimer runs a claimed timer's enrolment from where it is until it
// must wait or ends, in one MoveEnrollment: a stale timer (the enrolment
// moved on or ended) is deleted and does nothing.
func (e *Engine) FireTimer(ctx context.Context, t store.Timer, now time.Time) error {
	stale := store.JourneyMove{EnrollmentID: t.RunID, Tick: -1, Timer: &t}
	en, err := e.st.Enrollment(ctx, t.WebsiteID, t.RunID)
	if errors.Is(err, store.ErrNotFound) {
		_, err = e.st.MoveEnrollment(ctx, stale)
		return err
	}
	if err != nil {
		return err
	}
	if en.State != store.EnrollmentActive || en.Tick != t.Item {
		_, err = e.st.MoveEnrollment(ctx, stale)
		return err
	}
	d, err := version(ctx, e.st, en.JourneyID, en.Version)
	if err != nil {
		return err
	}
	w, err := e.st.Website(ctx, t.WebsiteID)
	if err != nil {
		return err
	}
	p, err := e.st.Person(ctx, t.WebsiteID, en.SubscriberID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	r := runner{st: e.st, d: &d, e: en, person: p, w: w, now: now}
	m, err := r.plan(ctx)
	if err != nil {
		return err
	}
	m.Timer = &t
	moved, err := e.st.MoveEnrollment(ctx, m)
	if err != nil || !moved {
		return err
	}
	for _, h := range m.Steps {
		n := h.Notification
		if n == nil || n.Status != store.StatusQueued || e.disp == nil {
			continue
		}
		if err := e.disp.Dispatch(ctx, *n); err != nil {
			e.logger.Warn("dispatching a journey step's send; the outbox sweep will retry", "notification_id", n.ID, "err", err)
		}
	}
	return nil
}
