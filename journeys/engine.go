package journeys

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
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
	b := e.newBatch()
	m, err := b.plan(ctx, t, now)
	if err != nil {
		return err
	}
	moved, err := e.st.MoveEnrollment(ctx, m.JourneyMove)
	if err != nil || !moved {
		return err
	}
	e.done(ctx, m, now)
	return nil
}

// FireTimers fires a claimed batch of journey timers (the claim loop's
// batch handler): each is planned as FireTimer plans it, reading the
// website and each journey version once for the batch, and the moves are
// made together by one store.MoveEnrollments, in enrolment id order: one
// commit for the batch, where a commit per step made most of the store's
// time per step. Should that transaction fail (a deadlock with a move of
// one of its enrolments on PostgreSQL, one bad move), each move is made on
// its own, so one enrolment does not hold the rest back. A timer whose
// plan fails stops the batch there (those planned before it are fired;
// it and the rest stay leased). It returns how many timers it fired.
func (e *Engine) FireTimers(ctx context.Context, ts []store.Timer, now time.Time) (int, error) {
	b := e.newBatch()
	var moves []move
	var planErr error
	for _, t := range ts {
		m, err := b.plan(ctx, t, now)
		if err != nil {
			planErr = fmt.Errorf("firing timer %s/%d: %w", t.RunID, t.Item, err)
			break
		}
		moves = append(moves, m)
	}
	if len(moves) == 0 {
		return 0, planErr
	}
	slices.SortStableFunc(moves, func(a, b move) int { return strings.Compare(a.EnrollmentID, b.EnrollmentID) })
	ms := make([]store.JourneyMove, len(moves))
	for i, m := range moves {
		ms[i] = m.JourneyMove
	}
	moved, err := e.st.MoveEnrollments(ctx, ms)
	fired := len(moves)
	if err != nil {
		fired = 0
		if ctx.Err() != nil {
			return 0, err
		}
		e.logger.Warn("firing a batch of journey timers; firing them one by one", "timers", len(moves), "err", err)
		moved, err = make([]bool, len(moves)), nil
		for i, m := range ms {
			ok, merr := e.st.MoveEnrollment(ctx, m)
			if merr != nil {
				err = fmt.Errorf("firing timer %s/%d: %w", m.Timer.RunID, m.Timer.Item, merr)
				break
			}
			moved[i], fired = ok, i+1
		}
	}
	for i, m := range moves[:fired] {
		if moved[i] {
			e.done(ctx, m, now)
		}
	}
	if err != nil {
		return fired, err
	}
	return fired, planErr
}

// move is a planned move and the person it moves.
type move struct {
	store.JourneyMove
	websiteID, subscriberID string
}

// batch caches what a batch's timers read: the websites and the journey
// versions' definitions.
type batch struct {
	e        *Engine
	websites map[string]store.Website
	versions map[versionKey]*Definition
}

type versionKey struct {
	journey string
	version int
}

func (e *Engine) newBatch() *batch {
	return &batch{e: e, websites: map[string]store.Website{}, versions: map[versionKey]*Definition{}}
}

func (b *batch) website(ctx context.Context, id string) (store.Website, error) {
	if w, ok := b.websites[id]; ok {
		return w, nil
	}
	w, err := b.e.st.Website(ctx, id)
	if err != nil {
		return store.Website{}, err
	}
	b.websites[id] = w
	return w, nil
}

// version is the definition of a journey's version, read once a batch.
// The runner only reads it: a definition is never changed once stored
// under its version with enrolments in it.
func (b *batch) version(ctx context.Context, journeyID string, v int) (*Definition, error) {
	k := versionKey{journeyID, v}
	if d, ok := b.versions[k]; ok {
		return d, nil
	}
	d, err := version(ctx, b.e.st, journeyID, v)
	if err != nil {
		return nil, err
	}
	b.versions[k] = &d
	return &d, nil
}

// plan is the move a claimed timer makes: its enrolment run from where
// it is until it must wait or ends, or, for a stale timer (the enrolment
// moved on or ended), the timer's delete and nothing more.
func (b *batch) plan(ctx context.Context, t store.Timer, now time.Time) (move, error) {
	stale := move{JourneyMove: store.JourneyMove{EnrollmentID: t.RunID, Tick: -1, Timer: &t}}
	en, err := b.e.st.Enrollment(ctx, t.WebsiteID, t.RunID)
	if errors.Is(err, store.ErrNotFound) {
		return stale, nil
	}
	if err != nil {
		return move{}, err
	}
	if en.State != store.EnrollmentActive || en.Tick != t.Item {
		return stale, nil
	}
	d, err := b.version(ctx, en.JourneyID, en.Version)
	if err != nil {
		return move{}, err
	}
	w, err := b.website(ctx, t.WebsiteID)
	if err != nil {
		return move{}, err
	}
	p, err := b.e.st.Person(ctx, t.WebsiteID, en.SubscriberID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return move{}, err
	}
	r := runner{st: b.e.st, d: d, e: en, person: p, w: w, now: now}
	m, err := r.plan(ctx)
	if err != nil {
		return move{}, err
	}
	m.Timer = &t
	return move{JourneyMove: m, websiteID: t.WebsiteID, subscriberID: en.SubscriberID}, nil
}

// done is what follows a move that committed: its sends dispatched, the
// labels it set evaluated.
func (e *Engine) done(ctx context.Context, m move, now time.Time) {
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
		if err := e.tagsSet(ctx, m.websiteID, m.subscriberID, now); err != nil {
			e.logger.Warn("evaluating the labels a journey step set", "enrollment_id", m.EnrollmentID, "err", err)
		}
	}
}
