package automations

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/analytics"
	"github.com/relaybell/relaybell/filter"
	"github.com/relaybell/relaybell/notification"
	"github.com/relaybell/relaybell/store"
	"github.com/relaybell/relaybell/templates"
)

// Limits of an automation.
const (
	MaxName       = 100
	MaxMessages   = 10
	MaxDelay      = 31_536_000 // seconds: a year
	MaxStopEvents = 20
	MaxConditions = 20
	MaxCap        = 1000
)

// Trigger types.
const (
	TriggerEvent          = "event"
	TriggerSubscribed     = store.TriggerSubscribed
	TriggerTopicOptIn     = store.TriggerTopicOptIn
	TriggerSegmentEntered = "segment_entered"
)

// Error is a refused automation, with the code of the API's catalog the
// API answers it with.
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

func errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Body is the body of POST and PUT /automations: every member optional,
// so that a PUT changes only what it names (Apply).
type Body struct {
	Name          *string   `json:"name"`
	Status        *string   `json:"status"`
	Trigger       *Trigger  `json:"trigger"`
	StopEvents    []string  `json:"stopEvents"`
	Restart       *bool     `json:"restart"`
	Messages      []Message `json:"messages"`
	Caps          *Caps     `json:"caps"`
	Transactional *bool     `json:"transactional"`
	GoalID        GoalRef   `json:"goalId"`
}

// GoalRef is the body's goalId: a goal of the website, or null (or "")
// for none; absent leaves it as it is.
type GoalRef struct {
	Set bool
	ID  string
}

// UnmarshalJSON reads a goal id, or null.
func (g *GoalRef) UnmarshalJSON(b []byte) error {
	g.Set = true
	if string(b) == "null" {
		g.ID = ""
		return nil
	}
	return json.Unmarshal(b, &g.ID)
}

// Trigger is what starts a person's run.
type Trigger struct {
	Type string `json:"type"`
	// Event is the event name of an event trigger.
	Event string `json:"event,omitempty"`
	// Conditions narrow an event trigger by the event's properties.
	Conditions *filter.Filters `json:"conditions,omitempty"`
	TopicID    string          `json:"topicId,omitempty"`
	SegmentID  string          `json:"segmentId,omitempty"`
}

// Message is one push of an automation: its delay from the trigger and
// the content members of a send request (spec 2.1).
type Message struct {
	DelaySeconds *int64 `json:"delaySeconds"`
	notification.Request
}

// Caps bound an automation's messages to one person; nil is no bound.
type Caps struct {
	PerDay  *int `json:"perDay"`
	PerWeek *int `json:"perWeek"`
}

// Definition is an automation as stored: the body with its defaults,
// every member set.
type Definition struct {
	Name          string    `json:"-"`
	Status        string    `json:"-"`
	Trigger       Trigger   `json:"trigger"`
	StopEvents    []string  `json:"stopEvents"`
	Restart       bool      `json:"restart"`
	Messages      []Message `json:"messages"`
	Caps          Caps      `json:"caps"`
	Transactional bool      `json:"transactional"`
	// GoalID is the goal the automation is measured by; "" none.
	GoalID string `json:"goalId,omitempty"`
	// goalNamed says the body named goalId: Check looks it up (a goal
	// deleted since it was set does not refuse other changes).
	goalNamed bool
}

// New is the definition of a new automation: its defaults (status draft,
// restart true).
func New() Definition {
	return Definition{Status: store.AutomationDraft, Restart: true, StopEvents: []string{}}
}

// Apply sets the members the body names over d.
func (d *Definition) Apply(b Body) {
	if b.Name != nil {
		d.Name = *b.Name
	}
	if b.Status != nil {
		d.Status = *b.Status
	}
	if b.Trigger != nil {
		d.Trigger = *b.Trigger
	}
	if b.StopEvents != nil {
		d.StopEvents = b.StopEvents
	}
	if b.Restart != nil {
		d.Restart = *b.Restart
	}
	if b.Messages != nil {
		d.Messages = b.Messages
	}
	if b.Caps != nil {
		d.Caps = *b.Caps
	}
	if b.Transactional != nil {
		d.Transactional = *b.Transactional
	}
	if b.GoalID.Set {
		d.GoalID, d.goalNamed = b.GoalID.ID, true
	}
}

// Lookup is what Check reads of the website: its topics, segments and
// goals.
type Lookup interface {
	SegmentLookup
	GoalLookup
	templates.Lookup
	Topic(ctx context.Context, websiteID, idOrSlug string) (store.Topic, error)
}

// Check validates d for website w and puts it in its stored form (names
// trimmed, the topic's id for its slug, conditions normalized). A refusal
// is an *Error; any other error is the store's.
func (d *Definition) Check(ctx context.Context, w store.Website, lk Lookup, now time.Time) error {
	if err := CheckNameAndStatus(&d.Name, d.Status); err != nil {
		return err
	}
	if err := d.checkTrigger(ctx, w, lk); err != nil {
		return err
	}
	if err := CheckEventNames(d.StopEvents, MaxStopEvents, "invalid_stop_events", "stopEvents", "stop events"); err != nil {
		return err
	}
	if err := d.CheckMessages(ctx, w, lk, now); err != nil {
		return err
	}
	for _, c := range []struct {
		name string
		v    *int
	}{{"perDay", d.Caps.PerDay}, {"perWeek", d.Caps.PerWeek}} {
		if c.v != nil && (*c.v < 1 || *c.v > MaxCap) {
			return errorf("invalid_caps", "caps.%s is 1 to %d, or null for no bound", c.name, MaxCap)
		}
	}
	return d.checkGoal(ctx, w, lk)
}

// checkGoal looks up a goalId the body named: a goal of the website
// (goal_not_found otherwise, as segment_not_found for a segmentId).
func (d *Definition) checkGoal(ctx context.Context, w store.Website, lk Lookup) error {
	if !d.goalNamed || d.GoalID == "" {
		return nil
	}
	return CheckGoalID(ctx, lk, w.ID, &d.GoalID)
}

// CheckNameAndStatus trims *name and checks it and status as an
// automation's and a journey's are checked alike: a name of 1 to MaxName
// characters (name_required, invalid_name), a status draft, active or
// paused (invalid_status).
func CheckNameAndStatus(name *string, status string) error {
	*name = strings.TrimSpace(*name)
	switch {
	case *name == "":
		return errorf("name_required", "a name is required")
	case utf8.RuneCountInString(*name) > MaxName:
		return errorf("invalid_name", "a name is at most %d characters", MaxName)
	}
	switch status {
	case store.AutomationDraft, store.AutomationActive, store.AutomationPaused:
		return nil
	}
	return errorf("invalid_status", "status is draft, active or paused")
}

// CheckEventNames trims, in place, the event names of a list that stops
// or ends a run (an automation's stopEvents, a journey's exitEvents) and
// checks there are at most max, each 1 to analytics.MaxBehaviorName
// characters; a refusal has the code given (invalid_stop_events,
// invalid_exit_events) and names the list by its member and in words.
func CheckEventNames(names []string, max int, code, member, words string) error {
	if len(names) > max {
		return errorf(code, "at most %d %s", max, words)
	}
	for i, name := range names {
		name = strings.TrimSpace(name)
		if name == "" || utf8.RuneCountInString(name) > analytics.MaxBehaviorName {
			return errorf(code, "%s[%d] must be an event name of 1 to %d characters", member, i, analytics.MaxBehaviorName)
		}
		names[i] = name
	}
	return nil
}

func (d *Definition) checkTrigger(ctx context.Context, w store.Website, lk Lookup) error {
	t := &d.Trigger
	needs := map[string]string{TriggerEvent: "event", TriggerTopicOptIn: "topicId", TriggerSegmentEntered: "segmentId"}
	if _, ok := needs[t.Type]; !ok && t.Type != TriggerSubscribed {
		return errorf("invalid_trigger", "trigger.type is event, subscribed, topic_opt_in or segment_entered")
	}
	for _, m := range []struct {
		name string
		set  bool
	}{{"event", t.Event != ""}, {"topicId", t.TopicID != ""}, {"segmentId", t.SegmentID != ""}, {"conditions", t.Conditions != nil}} {
		if m.set && m.name != needs[t.Type] && !(m.name == "conditions" && t.Type == TriggerEvent) {
			return errorf("invalid_trigger", "a %s trigger takes no %s", t.Type, m.name)
		}
	}
	switch t.Type {
	case TriggerEvent:
		t.Event = strings.TrimSpace(t.Event)
		if t.Event == "" || utf8.RuneCountInString(t.Event) > analytics.MaxBehaviorName {
			return errorf("invalid_trigger", "an event trigger needs trigger.event, an event name of 1 to %d characters", analytics.MaxBehaviorName)
		}
		if t.Conditions != nil {
			f, err := checkConditions(*t.Conditions)
			if err != nil {
				return err
			}
			t.Conditions = &f
		}
	case TriggerTopicOptIn:
		topic, err := lk.Topic(ctx, w.ID, t.TopicID)
		if errors.Is(err, store.ErrNotFound) || err == nil && t.TopicID == "" {
			return errorf("unknown_topic", "no topic %q on this website", t.TopicID)
		}
		if err != nil {
			return fmt.Errorf("looking up topic: %w", err)
		}
		t.TopicID = topic.ID
	case TriggerSegmentEntered:
		return CheckSegmentID(ctx, lk, w.ID, &t.SegmentID)
	}
	return nil
}

// SegmentLookup finds a segment of a website.
type SegmentLookup interface {
	Segment(ctx context.Context, websiteID, id string) (store.Segment, error)
}

// GoalLookup finds a goal of a website.
type GoalLookup interface {
	Goal(ctx context.Context, websiteID, id string) (store.Goal, error)
}

// CheckSegmentID puts *id in its canonical form and checks it names a
// segment of the website (segment_not_found otherwise, as for an id that
// is not a UUID).
func CheckSegmentID(ctx context.Context, lk SegmentLookup, websiteID string, id *string) error {
	return checkRecordID(id, "segment_not_found", "segment", func(id string) error {
		_, err := lk.Segment(ctx, websiteID, id)
		return err
	})
}

// CheckGoalID puts *id in its canonical form and checks it names a goal
// of the website (goal_not_found otherwise, as for an id that is not a
// UUID).
func CheckGoalID(ctx context.Context, lk GoalLookup, websiteID string, id *string) error {
	return checkRecordID(id, "goal_not_found", "goal", func(id string) error {
		_, err := lk.Goal(ctx, websiteID, id)
		return err
	})
}

// checkRecordID puts *id, a UUID in its 36-character form, in canonical
// form and looks it up with find; any other id, or none found, is refused
// with code. Other errors are the store's.
func checkRecordID(id *string, code, noun string, find func(id string) error) error {
	err := store.ErrNotFound
	if u, perr := uuid.Parse(*id); perr == nil && len(*id) == 36 {
		*id = u.String()
		err = find(*id)
	}
	if errors.Is(err, store.ErrNotFound) {
		return errorf(code, "no %s %q on this website", noun, *id)
	}
	if err != nil {
		return fmt.Errorf("looking up %s: %w", noun, err)
	}
	return nil
}

// CheckMessages validates each message's delay and its content as a send
// validates it (notification.Prepare): a message takes a send's content
// members and nothing that chooses who gets it or when.
//
// A message naming a templateId is checked with the template's content
// filled in (templates.Fill), and the id is kept, in its canonical form:
// the engine fills the content again when it sends the message, so a
// change to the template reaches the messages sent after it. Check runs
// it; a change to a template runs it again over the automations that name
// it, with the changed template (templates.With).
func (d *Definition) CheckMessages(ctx context.Context, w store.Website, lk templates.Lookup, now time.Time) error {
	if len(d.Messages) == 0 || len(d.Messages) > MaxMessages {
		return errorf("invalid_messages", "messages holds 1 to %d messages", MaxMessages)
	}
	for i := range d.Messages {
		m := &d.Messages[i]
		if m.DelaySeconds == nil {
			m.DelaySeconds = new(int64)
		}
		if *m.DelaySeconds < 0 || *m.DelaySeconds > MaxDelay {
			return errorf("invalid_messages", "messages[%d].delaySeconds is 0 to %d", i, MaxDelay)
		}
		if name := m.AudienceOrTiming(); name != "" {
			return errorf("unknown_field", "unknown field messages[%d].%s: a message goes to the person who triggered it", i, name)
		}
		resolved, err := CheckTemplate(ctx, lk, w.ID, &m.Request)
		if err != nil {
			var ae *Error
			if errors.As(err, &ae) {
				ae.Message = fmt.Sprintf("messages[%d]: %s", i, ae.Message)
			}
			return err
		}
		check := Message{DelaySeconds: m.DelaySeconds, Request: resolved}
		if _, err := check.Prepare(ctx, w, false, now); err != nil {
			var ne *notification.Error
			if errors.As(err, &ne) {
				return errorf(ne.Code, "messages[%d]: %s", i, ne.Message)
			}
			return err
		}
	}
	return nil
}

// CheckTemplate puts the templateId r names, if any, in its canonical
// form and checks it names a template of the website (template_not_found
// otherwise, as for an id that is not a UUID). It returns r with the
// template's content filled in (templates.Apply), for checking it as a
// send: r itself keeps the id and its own members. Other errors are the
// store's.
func CheckTemplate(ctx context.Context, lk templates.Lookup, websiteID string, r *notification.Request) (notification.Request, error) {
	resolved := *r
	if r.TemplateID == nil {
		return resolved, nil
	}
	id := *r.TemplateID
	if err := templates.Apply(ctx, lk, websiteID, id, &resolved); err != nil {
		if te := templates.NotFound(err, id); te != nil {
			return resolved, &Error{Code: te.Code, Message: te.Message}
		}
		return resolved, fmt.Errorf("looking up template: %w", err)
	}
	canonical, _ := templates.CanonicalID(id)
	r.TemplateID = &canonical
	return resolved, nil
}

// Prepare is the message's send as notification.Prepare makes it: its
// content resolved against the website's defaults, queued, or scheduled
// when the website's quiet hours hold it (not transactional).
func (m *Message) Prepare(ctx context.Context, w store.Website, transactional bool, now time.Time) (*store.Notification, error) {
	r := m.Request
	if transactional {
		r.Transactional = &transactional
	}
	return notification.Prepare(ctx, &r, w, nil, now)
}
