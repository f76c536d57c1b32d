package feeds

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/relaybell/relaybell/notification"
	"github.com/relaybell/relaybell/store"
)

// Limits of a feed's settings.
const (
	MinPollMinutes     = 5
	MaxPollMinutes     = 1440
	DefaultPollMinutes = 15
	MinPerPoll         = 1
	MaxPerPollLimit    = 10
	DefaultMaxPerPoll  = 3
	MaxSendExisting    = 50
	MaxName            = 200
	MaxURL             = 2048
	MaxTemplateField   = 1000
)

// Codes of a refused feed, as the API's catalog answers them.
const (
	CodeNameRequired        = "name_required"
	CodeInvalidName         = "invalid_name"
	CodeInvalidURL          = "invalid_url"
	CodeInvalidAudience     = notification.CodeInvalidAudience
	CodeInvalidTemplate     = "invalid_template"
	CodeTemplateNotFound    = "template_not_found"
	CodeInvalidPollMinutes  = "invalid_poll_minutes"
	CodeInvalidMaxPerPoll   = "invalid_max_per_poll"
	CodeInvalidSendExisting = "invalid_send_existing"
	CodeInvalidStatus       = "invalid_status"
)

// Error is a refused feed definition.
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Template maps an item to a send: each member may hold the placeholders
// {item.title}, {item.summary}, {item.link} and {item.image}; a member left
// out is its placeholder (the item's title, summary, link and image).
// TemplateID takes the content from a saved template instead (its members
// may hold the placeholders too).
type Template struct {
	Title      *string `json:"title,omitempty"`
	Body       *string `json:"body,omitempty"`
	URL        *string `json:"url,omitempty"`
	Image      *string `json:"image,omitempty"`
	TemplateID *string `json:"templateId,omitempty"`
}

// Body is a feed as a request writes it: every member of a create, any of
// an update.
type Body struct {
	Name         *string                `json:"name"`
	URL          *string                `json:"url"`
	Audience     *notification.Audience `json:"audience"`
	Template     *Template              `json:"template"`
	Status       *string                `json:"status"`
	PollMinutes  *int                   `json:"pollMinutes"`
	MaxPerPoll   *int                   `json:"maxPerPoll"`
	SendExisting *int                   `json:"sendExisting"`
}

// Definition is a feed's settings, checked.
type Definition struct {
	Name         string
	URL          string
	Audience     notification.Audience
	Template     Template
	Status       string
	PollMinutes  int
	MaxPerPoll   int
	SendExisting int
}

// New is the definition a create starts from.
func New() Definition {
	return Definition{Status: store.FeedActive, PollMinutes: DefaultPollMinutes, MaxPerPoll: DefaultMaxPerPoll}
}

// Of is a stored feed's definition.
func Of(f store.Feed) (Definition, error) {
	d := Definition{Name: f.Name, URL: f.URL, Status: f.Status, PollMinutes: f.PollMinutes, MaxPerPoll: f.MaxPerPoll,
		SendExisting: f.SendExisting}
	if err := json.Unmarshal(f.Audience, &d.Audience); err != nil {
		return Definition{}, fmt.Errorf("decoding feed audience: %w", err)
	}
	if err := json.Unmarshal(f.Template, &d.Template); err != nil {
		return Definition{}, fmt.Errorf("decoding feed template: %w", err)
	}
	return d, nil
}

// Stored writes d into f (audience, template and their ids, settings).
func (d Definition) Stored(f store.Feed) (store.Feed, error) {
	var err error
	f.Name, f.URL, f.Status, f.PollMinutes, f.MaxPerPoll, f.SendExisting = d.Name, d.URL, d.Status, d.PollMinutes,
		d.MaxPerPoll, d.SendExisting
	if f.Audience, err = json.Marshal(d.Audience); err != nil {
		return f, fmt.Errorf("encoding feed audience: %w", err)
	}
	if f.Template, err = json.Marshal(d.Template); err != nil {
		return f, fmt.Errorf("encoding feed template: %w", err)
	}
	f.TopicID, f.SegmentID, f.ExcludeSegmentID = d.Audience.IDs()
	f.TemplateID = deref(d.Template.TemplateID)
	return f, nil
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// Apply sets the members b gives over d and checks the result as a whole.
// create requires name, url and audience.
func (d *Definition) Apply(b Body, create bool) error {
	if create {
		switch {
		case b.Name == nil:
			return &Error{CodeNameRequired, "a name is required"}
		case b.URL == nil:
			return &Error{CodeInvalidURL, "url is required: the feed's http or https address"}
		case b.Audience == nil:
			return audienceError(notification.ErrAudienceRequired)
		}
	}
	if b.Name != nil {
		d.Name = strings.TrimSpace(*b.Name)
	}
	if b.URL != nil {
		d.URL = strings.TrimSpace(*b.URL)
	}
	if b.Audience != nil {
		d.Audience = *b.Audience
	}
	if b.Template != nil {
		d.Template = *b.Template
	}
	if b.Status != nil {
		d.Status = *b.Status
	}
	if b.PollMinutes != nil {
		d.PollMinutes = *b.PollMinutes
	}
	if b.MaxPerPoll != nil {
		d.MaxPerPoll = *b.MaxPerPoll
	}
	if b.SendExisting != nil {
		d.SendExisting = *b.SendExisting
	}
	return d.Check()
}

// Check reports what is wrong with d (the audience's topic, segment and
// filters are checked against the website when a send is prepared).
func (d *Definition) Check() error {
	switch {
	case d.Name == "":
		return &Error{CodeNameRequired, "a name is required"}
	case utf8.RuneCountInString(d.Name) > MaxName:
		return &Error{CodeInvalidName, fmt.Sprintf("a name is at most %d characters", MaxName)}
	case len(d.URL) > MaxURL || !notification.IsHTTPURL(d.URL):
		return &Error{CodeInvalidURL, fmt.Sprintf("url must be an absolute http or https address of at most %d characters", MaxURL)}
	case d.Status != store.FeedActive && d.Status != store.FeedPaused:
		return &Error{CodeInvalidStatus, "status is active or paused"}
	case d.PollMinutes < MinPollMinutes || d.PollMinutes > MaxPollMinutes:
		return &Error{CodeInvalidPollMinutes, fmt.Sprintf("pollMinutes is from %d to %d", MinPollMinutes, MaxPollMinutes)}
	case d.MaxPerPoll < MinPerPoll || d.MaxPerPoll > MaxPerPollLimit:
		return &Error{CodeInvalidMaxPerPoll, fmt.Sprintf("maxPerPoll is from %d to %d", MinPerPoll, MaxPerPollLimit)}
	case d.SendExisting < 0 || d.SendExisting > MaxSendExisting:
		return &Error{CodeInvalidSendExisting, fmt.Sprintf("sendExisting is from 0 to %d", MaxSendExisting)}
	}
	if err := d.Audience.Check(); err != nil {
		return audienceError(err)
	}
	return d.Template.check()
}

// audienceError is notification.Audience's refusal as this package's.
func audienceError(err error) error {
	var ne *notification.Error
	if errors.As(err, &ne) {
		return &Error{Code: ne.Code, Message: ne.Message}
	}
	return err
}

// placeholderRe finds {item.NAME} placeholders.
var placeholderRe = regexp.MustCompile(`\{item\.([A-Za-z]*)\}`)

var placeholders = map[string]bool{"title": true, "summary": true, "link": true, "image": true}

func (t Template) check() error {
	if t.TemplateID != nil {
		if t.Title != nil || t.Body != nil || t.URL != nil || t.Image != nil {
			return &Error{CodeInvalidTemplate, "template is either templateId or title, body, url and image"}
		}
		if !notification.IsUUID(*t.TemplateID) {
			return &Error{CodeTemplateNotFound, "templateId names no template of this website"}
		}
		return nil
	}
	for _, f := range []struct {
		name string
		v    *string
	}{{"title", t.Title}, {"body", t.Body}, {"url", t.URL}, {"image", t.Image}} {
		if f.v == nil {
			continue
		}
		if utf8.RuneCountInString(*f.v) > MaxTemplateField {
			return &Error{CodeInvalidTemplate, fmt.Sprintf("template.%s is at most %d characters", f.name, MaxTemplateField)}
		}
		for _, m := range placeholderRe.FindAllStringSubmatch(*f.v, -1) {
			if !placeholders[m[1]] {
				return &Error{CodeInvalidTemplate, fmt.Sprintf("template.%s: unknown placeholder %s (use {item.title}, {item.summary}, {item.link} or {item.image})", f.name, m[0])}
			}
		}
	}
	if t.Title != nil && strings.TrimSpace(*t.Title) == "" {
		return &Error{CodeInvalidTemplate, "template.title must not be empty"}
	}
	return nil
}
