package goals

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/relaybell/relaybell/analytics"
	"github.com/relaybell/relaybell/store"
)

// Limits of a goal.
const (
	MaxName       = 100
	MinWindow     = 1
	MaxWindow     = 2160 // hours: 90 days
	DefaultWindow = 24   // hours: as conversions' default attribution window
	MaxLabelName  = 64   // spec 8.2's label limits
	MaxLabelValue = 256
)

// Codes of a refused goal, as the API's catalog answers them.
const (
	CodeNameRequired  = "name_required"
	CodeInvalidName   = "invalid_name"
	CodeInvalidGoal   = "invalid_goal"
	CodeEventRequired = "event_required"
	CodeInvalidLabel  = "invalid_label"
	CodeReservedLabel = "reserved_label"
	CodeInvalidWindow = "invalid_window"
)

// Error is a refused goal, with the code of the API's catalog.
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Tag is a tag goal's label and the value it reaches.
type Tag struct {
	Name  *string `json:"name"`
	Value *string `json:"value"`
}

// Body is the body of POST and PUT /goals: every member optional, so
// that a PUT changes only what it names. Naming event makes the goal an
// event goal, naming tag a tag goal; naming both is refused.
type Body struct {
	Name        *string `json:"name"`
	Event       *string `json:"event"`
	Tag         *Tag    `json:"tag"`
	WindowHours *int    `json:"windowHours"`
}

// Definition is a goal's settings with their defaults.
type Definition struct {
	Name        string
	Event       string
	TagName     string
	TagValue    string
	WindowHours int
}

// New is a new goal's definition: its default window.
func New() Definition { return Definition{WindowHours: DefaultWindow} }

// Of is a stored goal's definition.
func Of(g store.Goal) Definition {
	return Definition{Name: g.Name, Event: g.Event, TagName: g.TagName, TagValue: g.TagValue, WindowHours: g.WindowHours}
}

// Stored is g with d's settings.
func (d Definition) Stored(g store.Goal) store.Goal {
	g.Name, g.Event, g.TagName, g.TagValue, g.WindowHours = d.Name, d.Event, d.TagName, d.TagValue, d.WindowHours
	return g
}

// Apply sets the members the body names over d, and checks the result.
func (d *Definition) Apply(b Body) error {
	if b.Event != nil && b.Tag != nil {
		return &Error{CodeInvalidGoal, "a goal is an event or a tag, not both"}
	}
	if b.Name != nil {
		d.Name = *b.Name
	}
	if b.Event != nil {
		d.Event, d.TagName, d.TagValue = *b.Event, "", ""
	}
	if b.Tag != nil {
		if b.Tag.Name == nil || b.Tag.Value == nil || *b.Tag.Name == "" {
			return &Error{CodeInvalidLabel, "tag needs a name and a value (a string, \"\" for a label without one)"}
		}
		d.Event, d.TagName, d.TagValue = "", *b.Tag.Name, *b.Tag.Value
	}
	if b.WindowHours != nil {
		d.WindowHours = *b.WindowHours
	}
	return d.check(b.Event != nil)
}

// check validates d and trims its names.
func (d *Definition) check(eventNamed bool) error {
	d.Name = strings.TrimSpace(d.Name)
	switch {
	case d.Name == "":
		return &Error{CodeNameRequired, "a name is required"}
	case utf8.RuneCountInString(d.Name) > MaxName:
		return &Error{CodeInvalidName, fmt.Sprintf("a name is at most %d characters", MaxName)}
	}
	d.Event = strings.TrimSpace(d.Event)
	switch {
	case d.Event == "" && d.TagName == "" && eventNamed:
		return &Error{CodeEventRequired, "event must be an event name"}
	case d.Event == "" && d.TagName == "":
		return &Error{CodeInvalidGoal, "a goal needs an event or a tag"}
	case utf8.RuneCountInString(d.Event) > analytics.MaxBehaviorName:
		return &Error{CodeInvalidGoal, fmt.Sprintf("event is at most %d characters", analytics.MaxBehaviorName)}
	case d.TagName != "":
		n := utf8.RuneCountInString(d.TagName)
		if n > MaxLabelName || utf8.RuneCountInString(d.TagValue) > MaxLabelValue {
			return &Error{CodeInvalidLabel, fmt.Sprintf("a label name is 1-%d characters and its value up to %d", MaxLabelName, MaxLabelValue)}
		}
		if strings.HasPrefix(d.TagName, store.ReservedLabelPrefix) {
			return &Error{CodeReservedLabel, "labels starting with " + store.ReservedLabelPrefix + " are the service's"}
		}
	}
	if d.WindowHours < MinWindow || d.WindowHours > MaxWindow {
		return &Error{CodeInvalidWindow, fmt.Sprintf("windowHours is %d to %d", MinWindow, MaxWindow)}
	}
	return nil
}
