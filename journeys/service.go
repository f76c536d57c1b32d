package journeys

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/automations"
	"github.com/relaybell/relaybell/store"
)

// Store is what the Service and the Engine read and write.
type Store interface {
	store.Journeys
	automations.Lookup
	automations.SegmentStore
	Website(ctx context.Context, id string) (store.Website, error)
	Person(ctx context.Context, websiteID, idOrExternalID string) (store.Person, error)
}

// Config is what the composition root gives a Service.
type Config struct {
	// Wake tells a local engine a timer may be due now (an enrolment
	// started or moved on); nil: the engine's poll finds it.
	Wake func()
}

// Service enrols people and moves their enrolments on as their events,
// browsers, pings and goals arrive. It runs on the API nodes, on the
// request's path; the Engine runs the steps.
type Service struct {
	st     Store
	cfg    Config
	logger *slog.Logger
}

// NewService returns a Service over st.
func NewService(st Store, cfg Config, logger *slog.Logger) *Service {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Service{st: st, cfg: cfg, logger: logger}
}

func (s *Service) wake() {
	if s.cfg.Wake != nil {
		s.cfg.Wake()
	}
}

// Decode reads a journey's current definition.
func Decode(j store.Journey) (Definition, error) {
	d := Definition{Name: j.Name, Status: j.Status}
	if err := json.Unmarshal(j.Definition, &d); err != nil {
		return Definition{}, fmt.Errorf("decoding journey %s: %w", j.ID, err)
	}
	return d, nil
}

// version reads the definition of one version of a journey.
func version(ctx context.Context, st Store, journeyID string, v int) (Definition, error) {
	raw, err := st.JourneyVersion(ctx, journeyID, v)
	if err != nil {
		return Definition{}, err
	}
	return DecodeVersion(journeyID, v, raw)
}

// DecodeVersion reads the stored definition of a journey's version v.
func DecodeVersion(journeyID string, v int, raw []byte) (Definition, error) {
	var d Definition
	if err := json.Unmarshal(raw, &d); err != nil {
		return Definition{}, fmt.Errorf("decoding journey %s version %d: %w", journeyID, v, err)
	}
	return d, nil
}

// Enroll enters the person into the journey at its first step; the
// engine runs it from there. refused is store.RefusedAlreadyEnrolled or
// store.RefusedNotActive when it did not.
func (s *Service) Enroll(ctx context.Context, j store.Journey, subscriberID string, at time.Time) (id, refused string, err error) {
	for range 5 {
		d, err := Decode(j)
		if err != nil {
			return "", "", err
		}
		id = uuid.NewString()
		refused, err = s.st.Enroll(ctx, store.Enroll{WebsiteID: j.WebsiteID, JourneyID: j.ID, SubscriberID: subscriberID,
			EnrollmentID: id, Version: j.Version, FirstStep: d.Steps[0].ID, ReenterAfter: d.ReenterAfter(), At: at})
		if !errors.Is(err, store.ErrConflict) {
			if err == nil && refused == "" {
				s.wake()
			}
			return id, refused, err
		}
		// Changed meanwhile (a new version): read it again.
		if j, err = s.st.Journey(ctx, j.WebsiteID, j.ID); err != nil {
			return "", "", err
		}
	}
	return "", "", errors.New("enrolling: the journey kept changing")
}

// enrollMatching enrols the person in the website's active journeys of
// an entry type that match, and returns how many took them.
func (s *Service) enrollMatching(ctx context.Context, websiteID, subscriberID, entry string, at time.Time, match func(Entry) bool) (int, error) {
	list, err := s.st.ActiveJourneys(ctx, websiteID, entry)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, j := range list {
		d, err := Decode(j)
		if err != nil {
			return n, err
		}
		if !match(d.Entry) {
			continue
		}
		_, refused, err := s.Enroll(ctx, j, subscriberID, at)
		switch {
		case errors.Is(err, store.ErrNotFound): // deleted meanwhile, or the person was erased
		case err != nil:
			return n, err
		case refused == "":
			n++
		}
	}
	return n, nil
}

// Event acts on a person's behavioral event: it ends the live enrolments
// whose version names it as an exit event, moves on those waiting for it
// (wait_until event), then enrols the person in the active journeys it
// enters (conditions on its properties included, as an automation's
// trigger). It returns how many journeys it enrolled them in.
func (s *Service) Event(ctx context.Context, websiteID, subscriberID, name string, properties json.RawMessage, at time.Time) (int, error) {
	var live []store.Enrollment
	has, err := s.st.HasJourneys(ctx, websiteID) // defcache answers it from its cache
	if err != nil {
		return 0, err
	}
	if has {
		if live, err = s.st.ListEnrollments(ctx, store.EnrollmentQuery{WebsiteID: websiteID, SubscriberID: subscriberID, LiveOnly: true}); err != nil {
			return 0, err
		}
	}
	for _, e := range live {
		if err := s.retry(ctx, e, func(e store.Enrollment, d *Definition) *store.JourneyMove {
			if slices.Contains(d.ExitEvents, name) {
				return ended(e, d, store.EnrollmentExited, "exit event "+name, at)
			}
			if st, ok := d.Step(e.CurrentStep); ok && e.Waiting && st.Type == StepWaitUntil && st.Event == name {
				return met(e, st, "event "+name+" arrived", at)
			}
			return nil
		}); err != nil {
			return 0, err
		}
	}
	return s.enrollMatching(ctx, websiteID, subscriberID, automations.TriggerEvent, at, func(e Entry) bool {
		return e.Event == name && automations.Matches(e.Conditions, properties)
	})
}

// Subscribed enrols a person whose browser just subscribed in the
// journeys entered so.
func (s *Service) Subscribed(ctx context.Context, websiteID, subscriberID string, at time.Time) (int, error) {
	return s.enrollMatching(ctx, websiteID, subscriberID, automations.TriggerSubscribed, at, func(Entry) bool { return true })
}

// TopicOptIn enrols a person in the topic_opt_in journeys of the topics
// they just opted into.
func (s *Service) TopicOptIn(ctx context.Context, websiteID, subscriberID string, topicIDs []string, at time.Time) (int, error) {
	if len(topicIDs) == 0 {
		return 0, nil
	}
	return s.enrollMatching(ctx, websiteID, subscriberID, automations.TriggerTopicOptIn, at, func(e Entry) bool {
		return slices.Contains(topicIDs, e.TopicID)
	})
}

// SegmentWatches lists the website's active segment_entered journeys as
// watchers of their segments (automations.Segments, which evaluates them
// with the automations as people change): entering one enrols the
// person, as its other entries do.
func (s *Service) SegmentWatches(ctx context.Context, websiteID string) ([]automations.Watch, error) {
	list, err := s.st.ActiveJourneys(ctx, websiteID, automations.TriggerSegmentEntered)
	if err != nil {
		return nil, err
	}
	out := make([]automations.Watch, 0, len(list))
	for _, j := range list {
		d, err := Decode(j)
		if err != nil {
			return nil, err
		}
		out = append(out, automations.Watch{ID: j.ID, SegmentID: d.Entry.SegmentID,
			Enter: func(ctx context.Context, subscriberID string, at time.Time) (bool, error) {
				_, refused, err := s.Enroll(ctx, j, subscriberID, at)
				if errors.Is(err, store.ErrNotFound) { // deleted meanwhile, or the person was erased
					return false, nil
				}
				return err == nil && refused == "", err
			}})
	}
	return out, nil
}

// WatchSegment records who is in the segment of a segment_entered journey
// now, when it starts watching it (created, its segment changed, or made
// active again): they are in it already and do not enter
// (automations.SeedSegment, as for an automation).
func (s *Service) WatchSegment(ctx context.Context, j store.Journey) error {
	d, err := Decode(j)
	if err != nil || d.Entry.Type != automations.TriggerSegmentEntered {
		return err
	}
	return automations.SeedSegment(ctx, s.st, j.WebsiteID, j.ID, d.Entry.SegmentID)
}

var _ automations.Watchers = (*Service)(nil)

// Interaction moves on the enrolment waiting for a send of its own to be
// delivered or clicked (wait_until delivered/clicked), when a ping of
// that send arrives. A click counts as a delivery too.
func (s *Service) Interaction(ctx context.Context, notificationID, kind string, at time.Time) error {
	e, stepID, err := s.st.EnrollmentOfSend(ctx, notificationID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	return s.retry(ctx, e, func(e store.Enrollment, d *Definition) *store.JourneyMove {
		st, ok := d.Step(e.CurrentStep)
		if !ok || !e.Waiting || st.Type != StepWaitUntil {
			return nil
		}
		switch {
		case st.Clicked == stepID && kind == store.InteractionClicked:
			return met(e, st, "clicked "+stepID, at)
		case st.Delivered == stepID:
			return met(e, st, "delivered "+stepID, at)
		}
		return nil
	})
}

// GoalReached ends the person's live enrolments in journeys whose goal is
// one of goalIDs with exitOnGoal (state goal_reached). The goals'
// composition root calls it when a goal is credited.
func (s *Service) GoalReached(ctx context.Context, websiteID, subscriberID string, goalIDs []string, at time.Time) error {
	live, err := s.st.ListEnrollments(ctx, store.EnrollmentQuery{WebsiteID: websiteID, SubscriberID: subscriberID, LiveOnly: true})
	if err != nil {
		return err
	}
	for _, e := range live {
		if err := s.retry(ctx, e, func(e store.Enrollment, d *Definition) *store.JourneyMove {
			if d.Goal != nil && d.Goal.ExitOnGoal && slices.Contains(goalIDs, d.Goal.GoalID) {
				return ended(e, d, store.EnrollmentGoalReached, "goal "+d.Goal.GoalID+" reached", at)
			}
			return nil
		}); err != nil {
			return err
		}
	}
	return nil
}

// End ends a live enrolment by the API (state exited). It reports
// whether it was live.
func (s *Service) End(ctx context.Context, e store.Enrollment, at time.Time) (bool, error) {
	done := false
	err := s.retry(ctx, e, func(e store.Enrollment, d *Definition) *store.JourneyMove {
		done = true
		return ended(e, d, store.EnrollmentExited, "ended by the API", at)
	})
	return done, err
}

// retry plans a move of a live enrolment and makes it; when another move
// went first (its tick moved on), it reads the enrolment again and plans
// again. plan returns nil for no move.
func (s *Service) retry(ctx context.Context, e store.Enrollment, plan func(store.Enrollment, *Definition) *store.JourneyMove) error {
	for range 10 {
		if e.State != store.EnrollmentActive {
			return nil
		}
		d, err := version(ctx, s.st, e.JourneyID, e.Version)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		m := plan(e, &d)
		if m == nil {
			return nil
		}
		moved, err := s.st.MoveEnrollment(ctx, *m)
		if err != nil || moved {
			if moved && m.Due != nil {
				s.wake()
			}
			return err
		}
		if e, err = s.st.Enrollment(ctx, e.WebsiteID, e.ID); errors.Is(err, store.ErrNotFound) {
			return nil
		} else if err != nil {
			return err
		}
	}
	return fmt.Errorf("enrolment %s kept moving", e.ID)
}

// ended is the move that ends an enrolment early, at its current step.
func ended(e store.Enrollment, d *Definition, state, outcome string, at time.Time) *store.JourneyMove {
	typ := ""
	if st, ok := d.Step(e.CurrentStep); ok {
		typ = st.Type
	}
	return &store.JourneyMove{EnrollmentID: e.ID, Tick: e.Tick, State: state, CurrentStep: e.CurrentStep, At: at,
		Steps: []store.JourneyStep{{StepID: e.CurrentStep, Type: typ, Outcome: outcome, Early: true}}}
}

// met is the move of a wait_until whose condition was met: on to its
// next step, which the engine runs at once.
func met(e store.Enrollment, st *Step, outcome string, at time.Time) *store.JourneyMove {
	m := &store.JourneyMove{EnrollmentID: e.ID, Tick: e.Tick, State: store.EnrollmentActive, CurrentStep: st.Next, At: at,
		Steps: []store.JourneyStep{{StepID: st.ID, Type: st.Type, Outcome: "met: " + outcome}}}
	if st.Next == "" {
		m.State, m.CurrentStep = store.EnrollmentCompleted, st.ID
		return m
	}
	m.Due = &at
	return m
}

// MigrateError refuses a migration: a live enrolment's step that the
// mapping leaves out, or maps to no step of the current version.
type MigrateError struct{ Message, Step string }

func (e *MigrateError) Error() string { return e.Message }

// Migrate moves the live enrolments of version from to the journey's
// current version, at the mapped steps (each entered afresh). Every
// current step of those enrolments must be mapped to a step of the
// current version, else nothing moves. The store checks the enrolments'
// steps in the transaction that moves them, so an enrolment that moves
// on to an unmapped step meanwhile is refused too, never half moved. It
// returns how many moved.
func (s *Service) Migrate(ctx context.Context, j store.Journey, from int, steps map[string]string, at time.Time) (int, error) {
	cur, err := Decode(j)
	if err != nil {
		return 0, err
	}
	for _, old := range slices.Sorted(maps.Keys(steps)) {
		to := steps[old]
		if _, ok := cur.Step(to); !ok {
			return 0, &MigrateError{Message: fmt.Sprintf("steps[%q] names %q, no step of version %d", old, to, j.Version), Step: to}
		}
	}
	n, err := s.st.MigrateEnrollments(ctx, j.WebsiteID, j.ID, from, j.Version, steps, at)
	var ue *store.UnmappedStepError
	if errors.As(err, &ue) {
		return 0, &MigrateError{Message: fmt.Sprintf("live enrolments of version %d are at step %q, which steps does not map", from, ue.Step), Step: ue.Step}
	}
	if err == nil && n > 0 {
		s.wake()
	}
	return n, err
}
