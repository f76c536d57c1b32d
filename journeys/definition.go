package journeys

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/relaybell/relaybell/analytics"
	"github.com/relaybell/relaybell/automations"
	"github.com/relaybell/relaybell/filter"
	"github.com/relaybell/relaybell/notification"
	"github.com/relaybell/relaybell/store"
	"github.com/relaybell/relaybell/templates"
)

// Limits of a journey.
const (
	MaxName       = 100
	MaxSteps      = 100
	MaxStepID     = 64
	MaxSeconds    = 31_536_000 // a year
	MaxExitEvents = 20
	MaxReentry    = 8760 // hours: a year
	MaxTags       = 20
	maxLabelName  = 64
	maxLabelValue = 256
)

// Entry types: the automations' trigger types, and api (enrolled by
// POST /journeys/{id}/enrollments alone).
const EntryAPI = "api"

// Step types.
const (
	StepSend      = "send"
	StepWait      = "wait"
	StepWaitUntil = "wait_until"
	StepWindow    = "window"
	StepSplit     = "split"
	StepCondition = "condition"
	StepSetTags   = "set_tags"
	StepExit      = "exit"
)

// Reentry modes.
const (
	ReentryNever = "never"
	ReentryAfter = "after"
)

// CodeInvalidGraph refuses a journey whose steps do not make a graph the
// engine can run; Error.Step names the step.
const CodeInvalidGraph = "invalid_graph"

// Error is a refused journey, with the code of the API's catalog the API
// answers it with and the step it is about ("" for none).
type Error struct {
	Code    string
	Message string
	Step    string
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

func errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// fromAutomations is err, a refusal of a check package automations makes
// for journeys too, as a journey's refusal about step ("" for none, else
// the message names it); other errors are returned as they are.
func fromAutomations(err error, step string) error {
	var ae *automations.Error
	if !errors.As(err, &ae) {
		return err
	}
	msg := ae.Message
	if step != "" {
		msg = fmt.Sprintf("step %q: %s", step, msg)
	}
	return &Error{Code: ae.Code, Message: msg, Step: step}
}

func graphError(step, format string, args ...any) *Error {
	return &Error{Code: CodeInvalidGraph, Message: fmt.Sprintf(format, args...), Step: step}
}

// Entry is what enrols a person: an automation trigger (package
// automations checks it), or {type: api}.
type Entry = automations.Trigger

// Reentry says when a person who went through the journey may enter it
// again: never, or Hours after their last entry.
type Reentry struct {
	Mode  string `json:"mode"`
	Hours *int   `json:"hours,omitempty"`
}

// Goal attaches a goal: reaching it ends the enrolment when ExitOnGoal.
type Goal struct {
	GoalID     string `json:"goalId"`
	ExitOnGoal bool   `json:"exitOnGoal"`
}

// Branch is one way out of a split, taken by Weight percent of people.
type Branch struct {
	Weight int    `json:"weight"`
	Next   string `json:"next,omitempty"`
}

// Step is one step of a journey; which members it takes depends on its
// Type (see Check).
type Step struct {
	ID   string `json:"id"`
	Type string `json:"type"`
	Next string `json:"next,omitempty"`
	// send
	Content       *notification.Request `json:"content,omitempty"`
	Transactional *bool                 `json:"transactional,omitempty"`
	// wait
	Seconds *int64 `json:"seconds,omitempty"`
	// wait_until
	Event          string `json:"event,omitempty"`
	Delivered      string `json:"delivered,omitempty"`
	Clicked        string `json:"clicked,omitempty"`
	TimeoutSeconds *int64 `json:"timeoutSeconds,omitempty"`
	TimeoutNext    string `json:"timeoutNext,omitempty"`
	// window
	From string   `json:"from,omitempty"`
	To   string   `json:"to,omitempty"`
	Days []string `json:"days,omitempty"`
	// split
	Branches []Branch `json:"branches,omitempty"`
	// condition
	Filters   *filter.Filters `json:"filters,omitempty"`
	SegmentID string          `json:"segmentId,omitempty"`
	Yes       string          `json:"yes,omitempty"`
	No        string          `json:"no,omitempty"`
	// set_tags
	Tags map[string]string `json:"tags,omitempty"`
}

// Body is the body of POST and PUT /journeys: every member optional, so
// that a PUT changes only what it names (Apply).
type Body struct {
	Name       *string  `json:"name"`
	Status     *string  `json:"status"`
	Entry      *Entry   `json:"entry"`
	Reentry    *Reentry `json:"reentry"`
	ExitEvents []string `json:"exitEvents"`
	// Goal null removes the journey's goal; left out, it stays.
	Goal  notification.Nullable[Goal] `json:"goal,omitzero"`
	Steps []Step                      `json:"steps"`
}

// Definition is a journey as stored (one version): the body with its
// defaults.
type Definition struct {
	Name       string   `json:"-"`
	Status     string   `json:"-"`
	Entry      Entry    `json:"entry"`
	Reentry    Reentry  `json:"reentry"`
	ExitEvents []string `json:"exitEvents"`
	Goal       *Goal    `json:"goal"`
	Steps      []Step   `json:"steps"`
}

// New is the definition of a new journey: draft, entered by the API,
// never re-entered.
func New() Definition {
	return Definition{Status: store.AutomationDraft, Entry: Entry{Type: EntryAPI}, Reentry: Reentry{Mode: ReentryNever}, ExitEvents: []string{}}
}

// Apply sets the members the body names over d.
func (d *Definition) Apply(b Body) {
	if b.Name != nil {
		d.Name = *b.Name
	}
	if b.Status != nil {
		d.Status = *b.Status
	}
	if b.Entry != nil {
		d.Entry = *b.Entry
	}
	if b.Reentry != nil {
		d.Reentry = *b.Reentry
	}
	if b.ExitEvents != nil {
		d.ExitEvents = b.ExitEvents
	}
	switch {
	case b.Goal.Null:
		d.Goal = nil
	case b.Goal.Set:
		g := b.Goal.Value
		d.Goal = &g
	}
	if b.Steps != nil {
		d.Steps = b.Steps
	}
}

// Lookup is what Check reads: the website's topics, segments and goals.
type Lookup interface {
	automations.Lookup
}

// ReenterAfter is how long after an entry the person may enter again; 0
// is never.
func (d *Definition) ReenterAfter() time.Duration {
	if d.Reentry.Mode != ReentryAfter || d.Reentry.Hours == nil {
		return 0
	}
	return time.Duration(*d.Reentry.Hours) * time.Hour
}

// Step finds a step by id.
func (d *Definition) Step(id string) (*Step, bool) {
	for i := range d.Steps {
		if d.Steps[i].ID == id {
			return &d.Steps[i], true
		}
	}
	return nil, false
}

// Check validates d for website w and puts it in its stored form. A
// refusal is an *Error; any other error is the store's.
func (d *Definition) Check(ctx context.Context, w store.Website, lk Lookup, now time.Time) error {
	if err := automations.CheckNameAndStatus(&d.Name, d.Status); err != nil {
		return fromAutomations(err, "")
	}
	if err := checkEntry(ctx, w, lk, &d.Entry); err != nil {
		return err
	}
	switch {
	case d.Reentry.Mode == ReentryNever && d.Reentry.Hours == nil:
	case d.Reentry.Mode == ReentryAfter && d.Reentry.Hours != nil && *d.Reentry.Hours >= 1 && *d.Reentry.Hours <= MaxReentry:
	default:
		return errorf("invalid_reentry", "reentry is {mode: never} or {mode: after, hours: 1 to %d}", MaxReentry)
	}
	if err := automations.CheckEventNames(d.ExitEvents, MaxExitEvents, "invalid_exit_events", "exitEvents", "exit events"); err != nil {
		return fromAutomations(err, "")
	}
	if d.Goal != nil {
		if err := automations.CheckGoalID(ctx, lk, w.ID, &d.Goal.GoalID); err != nil {
			return fromAutomations(err, "")
		}
	}
	return d.checkSteps(ctx, w, lk, now)
}

// checkEntry checks the entry as an automation's trigger, or {type: api}.
func checkEntry(ctx context.Context, w store.Website, lk Lookup, e *Entry) error {
	if e.Type == EntryAPI {
		if e.Event != "" || e.Conditions != nil || e.TopicID != "" || e.SegmentID != "" {
			return errorf("invalid_entry", "an api entry takes no other member")
		}
		return nil
	}
	err := automations.CheckTrigger(ctx, w, lk, e)
	var ae *automations.Error
	if errors.As(err, &ae) {
		code, msg := ae.Code, strings.ReplaceAll(ae.Message, "trigger", "entry")
		if code == "invalid_trigger" {
			code = "invalid_entry"
			if e.Type != automations.TriggerEvent && strings.HasPrefix(msg, "entry.type") {
				msg = "entry.type is api, event, subscribed, topic_opt_in or segment_entered"
			}
		}
		return &Error{Code: code, Message: msg}
	}
	return err
}

var hhmm = regexp.MustCompile(`^([01][0-9]|2[0-3]):[0-5][0-9]$`)

// Days of a window, Sunday first as time.Weekday counts.
var dayNames = []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}

// checkSteps validates every step's members, then the graph as a whole.
func (d *Definition) checkSteps(ctx context.Context, w store.Website, lk Lookup, now time.Time) error {
	if len(d.Steps) == 0 || len(d.Steps) > MaxSteps {
		return graphError("", "steps holds 1 to %d steps", MaxSteps)
	}
	ids := map[string]bool{}
	for i := range d.Steps {
		s := &d.Steps[i]
		if s.ID == "" || utf8.RuneCountInString(s.ID) > MaxStepID {
			return graphError(s.ID, "steps[%d].id must be 1 to %d characters", i, MaxStepID)
		}
		if ids[s.ID] {
			return graphError(s.ID, "step id %q is used twice", s.ID)
		}
		ids[s.ID] = true
	}
	for i := range d.Steps {
		if err := d.checkStep(ctx, w, lk, &d.Steps[i], now); err != nil {
			return err
		}
	}
	for _, s := range d.Steps {
		for _, ref := range s.refs() {
			if ref.to != "" && !ids[ref.to] {
				return graphError(s.ID, "%s %q of step %q names no step", ref.name, ref.to, s.ID)
			}
		}
	}
	if err := d.checkCycles(); err != nil {
		return err
	}
	return d.checkWaitsForSends()
}

type ref struct{ name, to string }

// refs are the steps a step may go to next.
func (s *Step) refs() []ref {
	switch s.Type {
	case StepSplit:
		out := make([]ref, len(s.Branches))
		for i, b := range s.Branches {
			out[i] = ref{fmt.Sprintf("branches[%d].next", i), b.Next}
		}
		return out
	case StepCondition:
		return []ref{{"yes", s.Yes}, {"no", s.No}}
	case StepWaitUntil:
		return []ref{{"next", s.Next}, {"timeoutNext", s.TimeoutNext}}
	case StepExit:
		return nil
	}
	return []ref{{"next", s.Next}}
}

// waits reports whether the step holds an enrolment until a later time.
func (s *Step) waits() bool {
	return s.Type == StepWait || s.Type == StepWaitUntil || s.Type == StepWindow
}

// CheckSends checks each send step's content as Check does (checkSend),
// its template read from lk: a change to a template runs it again over
// the versions of the journeys that name it, with the changed template
// (templates.With).
func (d *Definition) CheckSends(ctx context.Context, w store.Website, lk templates.Lookup, now time.Time) error {
	for i := range d.Steps {
		if s := &d.Steps[i]; s.Type == StepSend && s.Content != nil {
			if err := checkSend(ctx, w, lk, s, now); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkSend checks a send step's content as a send is checked, with its
// template's content filled in.
func checkSend(ctx context.Context, w store.Website, lk templates.Lookup, s *Step, now time.Time) error {
	if name := s.Content.AudienceOrTiming(); name != "" {
		return &Error{Code: "unknown_field", Step: s.ID,
			Message: fmt.Sprintf("unknown field content.%s of step %q: a step goes to the enrolled person (transactional is a member of the step)", name, s.ID)}
	}
	resolved, err := automations.CheckTemplate(ctx, lk, w.ID, s.Content)
	if err != nil {
		var ae *automations.Error
		if errors.As(err, &ae) {
			return &Error{Code: ae.Code, Step: s.ID, Message: fmt.Sprintf("step %q: %s", s.ID, ae.Message)}
		}
		return err
	}
	if _, err := notification.Prepare(ctx, &resolved, w, nil, now); err != nil {
		var ne *notification.Error
		if errors.As(err, &ne) {
			return &Error{Code: ne.Code, Step: s.ID, Message: fmt.Sprintf("step %q: %s", s.ID, ne.Message)}
		}
		return err
	}
	return nil
}

// checkStep checks one step's members: those of its type, and no other's.
func (d *Definition) checkStep(ctx context.Context, w store.Website, lk Lookup, s *Step, now time.Time) error {
	bad := func(format string, args ...any) error {
		return graphError(s.ID, "step %q: %s", s.ID, fmt.Sprintf(format, args...))
	}
	members := []struct {
		name  string
		set   bool
		types []string
	}{
		{"next", s.Next != "", []string{StepSend, StepWait, StepWaitUntil, StepWindow, StepSetTags}},
		{"content", s.Content != nil, []string{StepSend}},
		{"transactional", s.Transactional != nil, []string{StepSend}},
		{"seconds", s.Seconds != nil, []string{StepWait}},
		{"event", s.Event != "", []string{StepWaitUntil}},
		{"delivered", s.Delivered != "", []string{StepWaitUntil}},
		{"clicked", s.Clicked != "", []string{StepWaitUntil}},
		{"timeoutSeconds", s.TimeoutSeconds != nil, []string{StepWaitUntil}},
		{"timeoutNext", s.TimeoutNext != "", []string{StepWaitUntil}},
		{"from", s.From != "", []string{StepWindow}},
		{"to", s.To != "", []string{StepWindow}},
		{"days", s.Days != nil, []string{StepWindow}},
		{"branches", s.Branches != nil, []string{StepSplit}},
		{"filters", s.Filters != nil, []string{StepCondition}},
		{"segmentId", s.SegmentID != "", []string{StepCondition}},
		{"yes", s.Yes != "", []string{StepCondition}},
		{"no", s.No != "", []string{StepCondition}},
		{"tags", s.Tags != nil, []string{StepSetTags}},
	}
	known := []string{StepSend, StepWait, StepWaitUntil, StepWindow, StepSplit, StepCondition, StepSetTags, StepExit}
	if !slices.Contains(known, s.Type) {
		return bad("type is send, wait, wait_until, window, split, condition, set_tags or exit")
	}
	for _, m := range members {
		if m.set && !slices.Contains(m.types, s.Type) {
			return bad("a %s step takes no %s", s.Type, m.name)
		}
	}
	switch s.Type {
	case StepSend:
		if s.Content == nil {
			return bad("a send step needs content")
		}
		return checkSend(ctx, w, lk, s, now)
	case StepWait:
		if s.Seconds == nil || *s.Seconds < 1 || *s.Seconds > MaxSeconds {
			return bad("seconds is 1 to %d", MaxSeconds)
		}
	case StepWaitUntil:
		n := 0
		for _, set := range []bool{s.Event != "", s.Delivered != "", s.Clicked != ""} {
			if set {
				n++
			}
		}
		if n != 1 {
			return bad("a wait_until step takes exactly one of event, delivered and clicked")
		}
		s.Event = strings.TrimSpace(s.Event)
		if s.Delivered == "" && s.Clicked == "" && (s.Event == "" || utf8.RuneCountInString(s.Event) > analytics.MaxBehaviorName) {
			return bad("event is an event name of 1 to %d characters", analytics.MaxBehaviorName)
		}
		if s.TimeoutSeconds == nil || *s.TimeoutSeconds < 1 || *s.TimeoutSeconds > MaxSeconds {
			return bad("timeoutSeconds is 1 to %d", MaxSeconds)
		}
	case StepWindow:
		if !hhmm.MatchString(s.From) || !hhmm.MatchString(s.To) || s.From == s.To {
			return bad("from and to are two different times HH:MM")
		}
		for _, day := range s.Days {
			if !slices.Contains(dayNames, day) {
				return bad("days are mon, tue, wed, thu, fri, sat or sun")
			}
		}
		if s.Days != nil && len(s.Days) == 0 {
			return bad("days lists at least one day; leave it out for every day")
		}
	case StepSplit:
		if len(s.Branches) < 2 || len(s.Branches) > 5 {
			return bad("a split has 2 to 5 branches")
		}
		sum := 0
		for i, b := range s.Branches {
			if b.Weight < 1 || b.Weight > 99 {
				return bad("branches[%d].weight is 1 to 99", i)
			}
			sum += b.Weight
		}
		if sum != 100 {
			return bad("the branches' weights sum to %d, not 100", sum)
		}
	case StepCondition:
		switch {
		case (s.Filters != nil) == (s.SegmentID != ""):
			return bad("a condition takes filters or segmentId")
		case s.Filters != nil:
			if !s.Filters.Complete() {
				return &Error{Code: "invalid_filters", Step: s.ID, Message: fmt.Sprintf("step %q: filters need at least one complete rule (a field and a value)", s.ID)}
			}
			f := s.Filters.Normalize()
			s.Filters = &f
		default:
			if err := automations.CheckSegmentID(ctx, lk, w.ID, &s.SegmentID); err != nil {
				return fromAutomations(err, s.ID)
			}
		}
	case StepSetTags:
		if len(s.Tags) == 0 || len(s.Tags) > MaxTags {
			return bad("tags sets 1 to %d labels", MaxTags)
		}
		for name, value := range s.Tags {
			n := utf8.RuneCountInString(name)
			if n < 1 || n > maxLabelName || utf8.RuneCountInString(value) > maxLabelValue || strings.HasPrefix(name, store.ReservedLabelPrefix) {
				return bad("label names are 1-%d characters, not starting with %q, and values up to %d", maxLabelName, store.ReservedLabelPrefix, maxLabelValue)
			}
		}
	}
	return nil
}

// checkCycles refuses a cycle no wait, wait_until or window breaks: the
// engine would run it round for ever in one transaction.
func (d *Definition) checkCycles() error {
	const (
		unseen = iota
		open
		done
	)
	state := map[string]int{}
	var visit func(id string) string
	visit = func(id string) string {
		state[id] = open
		s, _ := d.Step(id)
		if !s.waits() {
			for _, r := range s.refs() {
				if r.to == "" {
					continue
				}
				switch state[r.to] {
				case open:
					return r.to
				case unseen:
					if found := visit(r.to); found != "" {
						return found
					}
				}
			}
		}
		state[id] = done
		return ""
	}
	for _, s := range d.Steps {
		if state[s.ID] == unseen {
			if found := visit(s.ID); found != "" {
				return graphError(found, "step %q is on a cycle with no wait, wait_until or window in it", found)
			}
		}
	}
	return nil
}

// checkWaitsForSends refuses a wait_until on delivered or clicked whose
// step is not a send that comes before it on every path from the first
// step: the send must dominate the wait.
func (d *Definition) checkWaitsForSends() error {
	for _, s := range d.Steps {
		if s.Type != StepWaitUntil || s.Event != "" {
			continue
		}
		name, send := "delivered", s.Delivered
		if s.Clicked != "" {
			name, send = "clicked", s.Clicked
		}
		target, ok := d.Step(send)
		if !ok || target.Type != StepSend {
			return graphError(s.ID, "%s %q of step %q names no send step", name, send, s.ID)
		}
		if d.reachableAvoiding(s.ID, send) {
			return graphError(s.ID, "%s %q of step %q: that send does not come before it on every path from the first step", name, send, s.ID)
		}
	}
	return nil
}

// reachableAvoiding reports whether step to is reached from the first
// step on a path that does not go through avoid.
func (d *Definition) reachableAvoiding(to, avoid string) bool {
	first := d.Steps[0].ID
	if first == avoid {
		return false
	}
	seen := map[string]bool{first: true}
	queue := []string{first}
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		if id == to {
			return true
		}
		s, _ := d.Step(id)
		for _, r := range s.refs() {
			if r.to != "" && r.to != avoid && !seen[r.to] {
				seen[r.to] = true
				queue = append(queue, r.to)
			}
		}
	}
	return false
}
