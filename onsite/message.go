package onsite

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Message kinds, statuses, button actions, frequencies and the visitor's
// subscribed state a message targets.
const (
	Banner  = "banner"
	Modal   = "modal"
	SlideIn = "slide-in"

	StatusDraft  = "draft"
	StatusActive = "active"
	StatusPaused = "paused"

	ActionLink      = "link"
	ActionSubscribe = "subscribe"
	ActionClose     = "close"

	FrequencyOnce    = "once"    // once per visitor
	FrequencySession = "session" // once per browser session
	FrequencyEvery   = "every"   // every page view

	SubscribedAny = "any"
	SubscribedYes = "yes"
	SubscribedNo  = "no"
)

// Limits of a message.
const (
	MaxMessageName  = 100
	MaxMessageTitle = 200
	MaxMessageText  = 1000
	MaxButtonLabel  = 40
	MaxURL          = 2048
	MaxButtons      = 2
	MaxMessages     = 100 // a website's
)

// Button is one of a message's buttons.
type Button struct {
	Label  string `json:"label"`
	Action string `json:"action"`
	URL    string `json:"url,omitempty"`
}

// Targeting chooses the page views a message shows on.
type Targeting struct {
	Include []string `json:"include"`
	Exclude []string `json:"exclude"`
	// Devices are the device types (the subscription's: desktop, android,
	// ios, mobile, other); empty is every device.
	Devices    []string `json:"devices"`
	Subscribed string   `json:"subscribed"`
	// SegmentID, when set, shows the message to known subscribers in the
	// segment only.
	SegmentID string `json:"segmentId"`
}

// Message is an on-site message as the routes take and answer it (its
// id, counts and times are the route's).
type Message struct {
	Name      string     `json:"name"`
	Status    string     `json:"status"`
	Kind      string     `json:"kind"`
	Title     string     `json:"title"`
	Text      string     `json:"text"`
	Image     string     `json:"image"`
	Buttons   []Button   `json:"buttons"`
	StartAt   *time.Time `json:"startAt"`
	EndAt     *time.Time `json:"endAt"`
	Targeting Targeting  `json:"targeting"`
	Frequency string     `json:"frequency"`
}

// NewMessage is a message's defaults before its body applies.
func NewMessage() Message {
	return Message{Status: StatusDraft, Kind: Banner, Buttons: []Button{}, Frequency: FrequencyOnce,
		Targeting: Targeting{Include: []string{}, Exclude: []string{}, Devices: []string{}, Subscribed: SubscribedAny}}
}

// ReadMessage reads a stored definition.
func ReadMessage(b []byte) (Message, error) {
	m := NewMessage()
	if err := json.Unmarshal(b, &m); err != nil {
		return Message{}, fmt.Errorf("reading on-site message: %w", err)
	}
	return m, nil
}

// devices are the device types a message may target.
var devices = map[string]bool{"desktop": true, "android": true, "ios": true, "mobile": true, "other": true}

// Check refuses what the message cannot be and trims its texts.
func (m *Message) Check() error {
	bad := func(format string, args ...any) error { return errorf(CodeInvalidMessage, format, args...) }
	m.Name, m.Title, m.Text = strings.TrimSpace(m.Name), strings.TrimSpace(m.Title), strings.TrimSpace(m.Text)
	if m.Name == "" {
		return errorf("name_required", "name is required")
	}
	for _, f := range []struct {
		name, s string
		max     int
	}{{"name", m.Name, MaxMessageName}, {"title", m.Title, MaxMessageTitle}, {"text", m.Text, MaxMessageText}} {
		if err := checkText(CodeInvalidMessage, f.name, f.s, f.max); err != nil {
			return err
		}
	}
	if m.Title == "" && m.Text == "" {
		return bad("a message has a title or a text")
	}
	switch m.Status {
	case StatusDraft, StatusActive, StatusPaused:
	default:
		return bad("status is draft, active or paused")
	}
	switch m.Kind {
	case Banner, Modal, SlideIn:
	default:
		return bad("kind is banner, modal or slide-in")
	}
	if m.Image != "" && !httpsURL(m.Image) {
		return bad("image is an https URL")
	}
	if m.Buttons == nil {
		m.Buttons = []Button{}
	}
	if len(m.Buttons) > MaxButtons {
		return bad("buttons holds at most %d buttons", MaxButtons)
	}
	for i := range m.Buttons {
		b := &m.Buttons[i]
		b.Label = strings.TrimSpace(b.Label)
		if b.Label == "" {
			return bad("buttons[%d].label is required", i)
		}
		if err := checkText(CodeInvalidMessage, fmt.Sprintf("buttons[%d].label", i), b.Label, MaxButtonLabel); err != nil {
			return err
		}
		switch b.Action {
		case ActionLink:
			if !webURL(b.URL) {
				return bad("buttons[%d].url is an http or https URL", i)
			}
		case ActionSubscribe, ActionClose:
			if b.URL != "" {
				return bad("buttons[%d].url is for a link only", i)
			}
		default:
			return bad("buttons[%d].action is link, subscribe or close", i)
		}
	}
	if m.StartAt != nil && m.EndAt != nil && !m.EndAt.After(*m.StartAt) {
		return bad("endAt is after startAt")
	}
	t := &m.Targeting
	if t.Include == nil {
		t.Include = []string{}
	}
	if t.Exclude == nil {
		t.Exclude = []string{}
	}
	if t.Devices == nil {
		t.Devices = []string{}
	}
	if _, err := ParsePatterns(t.Include, t.Exclude); err != nil {
		return bad("targeting.%s", err)
	}
	for _, d := range t.Devices {
		if !devices[d] {
			return bad("targeting.devices: %q is not desktop, android, ios, mobile or other", d)
		}
	}
	switch t.Subscribed {
	case "":
		t.Subscribed = SubscribedAny
	case SubscribedAny, SubscribedYes, SubscribedNo:
	default:
		return bad("targeting.subscribed is any, yes or no")
	}
	switch m.Frequency {
	case FrequencyOnce, FrequencySession, FrequencyEvery:
	default:
		return bad("frequency is once, session or every")
	}
	return nil
}

func httpsURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && len(s) <= MaxURL && u.Scheme == "https" && u.Host != ""
}

func webURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && len(s) <= MaxURL && (u.Scheme == "https" || u.Scheme == "http") && u.Host != ""
}

// View is one page view the SDK asks about.
type View struct {
	URL        string
	Device     string
	Subscribed bool
	// InSegment reports whether the visitor, when known, is in the
	// segment; nil for a visitor not known.
	InSegment func(segmentID string) (bool, error)
	Now       time.Time
}

// Applies reports whether the message shows on the page view.
func (m *Message) Applies(v View) (bool, error) {
	if m.Status != StatusActive {
		return false, nil
	}
	if m.StartAt != nil && v.Now.Before(*m.StartAt) || m.EndAt != nil && !v.Now.Before(*m.EndAt) {
		return false, nil
	}
	t := m.Targeting
	ps, err := ParsePatterns(t.Include, t.Exclude)
	if err != nil || !ps.Match(v.URL) {
		return false, nil
	}
	if len(t.Devices) > 0 {
		ok := false
		for _, d := range t.Devices {
			ok = ok || d == v.Device
		}
		if !ok {
			return false, nil
		}
	}
	if t.Subscribed == SubscribedYes && !v.Subscribed || t.Subscribed == SubscribedNo && v.Subscribed {
		return false, nil
	}
	if t.SegmentID != "" {
		if v.InSegment == nil {
			return false, nil
		}
		return v.InSegment(t.SegmentID)
	}
	return true, nil
}
