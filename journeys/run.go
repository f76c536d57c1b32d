package journeys

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/relaybell/relaybell/audience"
	"github.com/relaybell/relaybell/filter"
	"github.com/relaybell/relaybell/notification"
	"github.com/relaybell/relaybell/store"
	"github.com/relaybell/relaybell/templates"
)

// maxRun bounds the steps one move takes: Check refuses a cycle with no
// wait in it, so a valid graph never reaches it.
const maxRun = 2 * MaxSteps

// runner plans a move of one enrolment: the steps it runs from where it
// is until it must wait or ends.
type runner struct {
	st     Store
	d      *Definition
	e      store.Enrollment
	person store.Person
	w      store.Website
	now    time.Time
}

// plan is the move of an enrolment whose timer fired: the wait it was in
// is over (its timeout, for a wait_until), or, when it was not waiting,
// it runs from its current step.
func (r *runner) plan(ctx context.Context) (store.JourneyMove, error) {
	m := store.JourneyMove{EnrollmentID: r.e.ID, Tick: r.e.Tick, State: store.EnrollmentActive, CurrentStep: r.e.CurrentStep, At: r.now}
	id := r.e.CurrentStep
	if r.e.Waiting {
		s, ok := r.d.Step(id)
		if !ok {
			return r.end(m, id), nil
		}
		switch s.Type {
		case StepWaitUntil:
			m.Steps = append(m.Steps, store.JourneyStep{StepID: s.ID, Type: s.Type, Outcome: fmt.Sprintf("timeout after %ds", *s.TimeoutSeconds)})
			id = s.TimeoutNext
		case StepWindow:
			m.Steps = append(m.Steps, store.JourneyStep{StepID: s.ID, Type: s.Type, Outcome: "window opened"})
			id = s.Next
		default:
			m.Steps = append(m.Steps, store.JourneyStep{StepID: s.ID, Type: s.Type, Outcome: "waited " + seconds(s.Seconds)})
			id = s.Next
		}
	}
	return r.from(ctx, m, id)
}

func seconds(p *int64) string {
	if p == nil {
		return "0s"
	}
	return fmt.Sprintf("%ds", *p)
}

// end ends the enrolment at step id (its journey's end).
func (r *runner) end(m store.JourneyMove, id string) store.JourneyMove {
	m.State, m.CurrentStep, m.Waiting, m.Due = store.EnrollmentCompleted, id, false, nil
	return m
}

// from runs the steps from id on, appending to m, until one waits or the
// enrolment ends.
func (r *runner) from(ctx context.Context, m store.JourneyMove, id string) (store.JourneyMove, error) {
	last := m.CurrentStep
	for range maxRun {
		if id == "" {
			return r.end(m, last), nil
		}
		s, ok := r.d.Step(id)
		if !ok {
			return r.end(m, last), nil
		}
		last, m.CurrentStep = id, id
		row := store.JourneyStep{StepID: s.ID, Type: s.Type}
		switch s.Type {
		case StepSend:
			n, err := r.send(ctx, s)
			var refused *notification.Error
			if errors.Is(err, errTemplateGone) {
				// Deleting a template a step names is refused; one gone all
				// the same (deleted meanwhile) skips the send, as an
				// automation's message is skipped.
				row.Outcome, id = "skipped: its template is gone", s.Next
				break
			} else if errors.As(err, &refused) {
				// Content checked when the step was saved, refused now (its
				// template changed since): skipped, as a template gone,
				// rather than failing the timer at every lease for ever.
				row.Outcome, id = "skipped: its content no longer sends: "+refused.Message, s.Next
				break
			}
			if err != nil {
				return m, err
			}
			row.Notification, row.Outcome = n, "sent "+n.ID
			if n.Status == store.StatusScheduled && n.ScheduledAt != nil {
				row.Outcome += " (held by quiet hours until " + n.ScheduledAt.UTC().Format(time.RFC3339) + ")"
			}
			id = s.Next
		case StepSetTags:
			if m.Tags == nil {
				m.Tags = map[string]string{}
			}
			var set []string
			for _, k := range slices.Sorted(maps.Keys(s.Tags)) {
				m.Tags[k] = s.Tags[k]
				set = append(set, k+"="+s.Tags[k])
			}
			row.Outcome = "tags set: " + strings.Join(set, ", ")
			id = s.Next
		case StepSplit:
			i := ChooseBranch(r.e.ID, s.ID, s.Branches)
			row.Outcome = fmt.Sprintf("branch %d of %d (weight %d)", i+1, len(s.Branches), s.Branches[i].Weight)
			id = s.Branches[i].Next
		case StepCondition:
			yes, why, err := r.condition(ctx, s)
			if err != nil {
				return m, err
			}
			row.Outcome, id = "no"+why, s.No
			if yes {
				row.Outcome, id = "yes"+why, s.Yes
			}
		case StepExit:
			row.Outcome = "exit step"
			m.Steps = append(m.Steps, row)
			return r.end(m, s.ID), nil
		case StepWait:
			due := r.now.Add(time.Duration(*s.Seconds) * time.Second)
			m.Waiting, m.Due = true, &due
			return m, nil
		case StepWaitUntil:
			met, err := r.alreadyMet(ctx, s)
			if err != nil {
				return m, err
			}
			if !met {
				due := r.now.Add(time.Duration(*s.TimeoutSeconds) * time.Second)
				m.Waiting, m.Due = true, &due
				return m, nil
			}
			row.Outcome = "met: " + metBy(s) + " already"
			id = s.Next
		case StepWindow:
			open, next := Window(s, r.location(), r.now)
			if !open {
				m.Waiting, m.Due = true, &next
				return m, nil
			}
			row.Outcome = "window open"
			id = s.Next
		}
		m.Steps = append(m.Steps, row)
	}
	return m, fmt.Errorf("enrolment %s: more than %d steps without a wait", r.e.ID, maxRun)
}

func metBy(s *Step) string {
	if s.Clicked != "" {
		return "clicked " + s.Clicked
	}
	return "delivered " + s.Delivered
}

// alreadyMet reports whether a wait_until on a send's delivery or click
// is met as the enrolment reaches it (the ping came during an earlier
// wait).
func (r *runner) alreadyMet(ctx context.Context, s *Step) (bool, error) {
	switch {
	case s.Delivered != "":
		return r.st.SendInteracted(ctx, r.e.ID, s.Delivered, store.InteractionDelivered)
	case s.Clicked != "":
		return r.st.SendInteracted(ctx, r.e.ID, s.Clicked, store.InteractionClicked)
	}
	return false, nil
}

// errTemplateGone is a send step whose template is no longer there.
var errTemplateGone = errors.New("the step's template is gone")

// send is a send step's notification: its content as a send's
// (notification.Prepare: quiet hours hold it unless the step is
// transactional; fan-out applies the frequency cap unless it is), to the
// enrolled person's browsers and nobody else's.
func (r *runner) send(ctx context.Context, s *Step) (*store.Notification, error) {
	if r.e.SubscriberID == "" { // an empty target is everyone: never
		return nil, errors.New("a journey step names no person")
	}
	req := *s.Content
	// A template the step names is filled in now: a change to it reaches
	// every send after it (deleting one a step names is refused).
	if err := templates.Resolve(ctx, r.st, r.w.ID, &req); errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("journey step %s: %w: %w", s.ID, errTemplateGone, err)
	} else if err != nil {
		return nil, fmt.Errorf("journey step %s: %w", s.ID, err)
	}
	if s.Transactional != nil && *s.Transactional {
		req.Transactional = s.Transactional
	}
	n, err := notification.Prepare(ctx, &req, r.w, nil, r.now)
	if err != nil {
		return nil, fmt.Errorf("preparing journey step %s: %w", s.ID, err)
	}
	n.Automation, n.JourneyID, n.JourneyStep, n.SendBody = true, r.e.JourneyID, s.ID, nil
	target := notification.Target{SubscriberID: r.e.SubscriberID}
	n.TargetSummary = target.Summary()
	if n.Target, err = json.Marshal(target); err != nil {
		return nil, fmt.Errorf("encoding journey target: %w", err)
	}
	return n, nil
}

// condition evaluates a condition step on the person: its filters, or
// its segment's (a segment deleted since is no).
func (r *runner) condition(ctx context.Context, s *Step) (bool, string, error) {
	f := s.Filters
	if s.SegmentID != "" {
		seg, err := r.st.Segment(ctx, r.w.ID, s.SegmentID)
		if errors.Is(err, store.ErrNotFound) {
			return false, " (the segment is gone)", nil
		}
		if err != nil {
			return false, "", err
		}
		parsed, err := filter.Parse(seg.Filters)
		if err != nil {
			return false, "", fmt.Errorf("segment %s filters: %w", s.SegmentID, err)
		}
		f = &parsed
	}
	return audience.ForFilters(r.w.ID, "", f).Selects(&r.person.Subscriber), "", nil
}

// location is the person's time zone, else the website's, else UTC.
func (r *runner) location() *time.Location {
	for _, name := range []string{r.person.Timezone, r.w.Timezone} {
		if name == "" {
			continue
		}
		if loc, err := time.LoadLocation(name); err == nil {
			return loc
		}
	}
	return time.UTC
}

// ChooseBranch is the split branch an enrolment takes at a step: chosen from a
// hash of (enrolment, step), so a redo takes the same one.
func ChooseBranch(enrollmentID, stepID string, branches []Branch) int {
	h := fnv.New32a()
	h.Write([]byte(enrollmentID + "\x00" + stepID))
	x := int(h.Sum32() % 100)
	for i, b := range branches {
		if x < b.Weight {
			return i
		}
		x -= b.Weight
	}
	return len(branches) - 1
}

// Window reports whether a window step is open at now in loc, and when
// not, when it next opens. A window whose to is before its from crosses
// midnight; its days are the days it opens.
func Window(s *Step, loc *time.Location, now time.Time) (bool, time.Time) {
	local := now.In(loc)
	from, to := minutes(s.From), minutes(s.To)
	day := func(t time.Time) bool {
		return len(s.Days) == 0 || slices.Contains(s.Days, dayNames[t.Weekday()])
	}
	m := local.Hour()*60 + local.Minute()
	midnight := time.Date(local.Year(), local.Month(), local.Day(), 0, 0, 0, 0, loc)
	if from < to {
		if m >= from && m < to && day(local) {
			return true, now
		}
	} else if m >= from && day(local) || m < to && day(midnight.AddDate(0, 0, -1)) {
		return true, now
	}
	for k := range 8 {
		d := midnight.AddDate(0, 0, k)
		opens := time.Date(d.Year(), d.Month(), d.Day(), from/60, from%60, 0, 0, loc)
		if opens.After(now) && day(d) {
			return false, opens
		}
	}
	return false, now.Add(24 * time.Hour) // unreachable: some day is allowed
}

func minutes(hhmm string) int {
	var h, m int
	fmt.Sscanf(hhmm, "%d:%d", &h, &m)
	return h*60 + m
}
