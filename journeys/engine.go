package journeys

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/relaybell/relaybell/store"
)

// Dispatcher publishes a stored step's send intent; a failure leaves it
// to the outbox sweep.
type Dispatcher interface {
	Dispatch(ctx context.Context, n store.Notification) error
}

// TagsSet is told, once the move that set them has committed, that a
// set_tags step changed a person's labels, so that they do what a label
// change through the API does: tag goals reached, segment entry
// evaluated. The composition root builds it from the goals' and the
// segments' services.
type TagsSet func(ctx context.Context, websiteID, subscriberID string, at time.Time) error

// SegmentEntry evaluates segment entry for people whose attributes
// changed (automations.Segments).
type SegmentEntry interface {
	PeopleChanged(ctx context.Context, websiteID string, people []string, at time.Time) (int, error)
}

// TagGoals records the tag goals a person reached as their labels changed
// (goals.Service).
type TagGoals interface {
	TagsChanged(ctx context.Context, websiteID, person string, at time.Time) ([]string, error)
}

// LabelsChanged is the TagsSet that does what a label change through the
// API does, in the same order: segment entry evaluated, then tag goals
// reached (whose Reached hook ends the enrolments that exit on them).
// Either may be nil.
func LabelsChanged(segments SegmentEntry, goals TagGoals) TagsSet {
	return func(ctx context.Context, websiteID, subscriberID string, at time.Time) error {
		if segments != nil {
			if _, err := segments.PeopleChanged(ctx, websiteID, []string{subscriberID}, at); err != nil {
				return fmt.Errorf("evaluating segment entry: %w", err)
			}
		}
		if goals != nil {
			if _, err := goals.TagsChanged(ctx, websiteID, subscriberID, at); err != nil {
				return fmt.Errorf("recording tag goals: %w", err)
			}
		}
		return nil
	}
}

// Engine fires journey timers (store.TimerJourney): it is the handler the
// automations' claim loop (automations.Engine) calls for that kind, so
// one loop claims both kinds under the same leases.
type Engine struct {
	st      Store
	disp    Dispatcher
	tagsSet TagsSet
	logger  *slog.Logger
}

// NewEngine returns the journeys' timer handler; disp may be nil (the
// outbox sweep publishes every send), and so may tagsSet (a set_tags
// step changes the labels and nothing more).
func NewEngine(st Store, disp Dispatcher, tagsSet TagsSet, logger *slog.Logger) *Engine {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Engine{st: st, disp: disp, tagsSet: tagsSet, logger: logger}
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
	// After the commit, never inside it: what the label change reaches
	// (goals, segment entries, other journeys and automations) moves in
	// transactions of its own. A node that dies between the commit and
	// this call has set the labels without evaluating them, and nothing
	// retries it (the timer went with the move): the person's next
	// evaluation (a label change or an import; for segments also a
	// registration, which the SDK makes on every page view) finds the
	// same state and does it then, late. Labels changed back before that
	// lose it. The membership rows record what was done, so nothing is
	// done twice.
	if len(m.Tags) > 0 && e.tagsSet != nil {
		if err := e.tagsSet(ctx, t.WebsiteID, en.SubscriberID, now); err != nil {
			e.logger.Warn("evaluating the labels a journey step set", "enrollment_id", en.ID, "err", err)
		}
	}
	return nil
}
