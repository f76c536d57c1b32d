package notification

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"strings"

	"github.com/relaybell/relaybell/store"
)

// TemplateContent is the content a template holds: the content members of
// a send request (spec 2.1), merge tags included, and nothing that chooses
// who gets a send or when.
type TemplateContent struct {
	Title              *string                `json:"title,omitempty"`
	Body               *string                `json:"body,omitempty"`
	URL                *string                `json:"url,omitempty"`
	Icon               *string                `json:"icon,omitempty"`
	Image              *string                `json:"image,omitempty"`
	Badge              *string                `json:"badge,omitempty"`
	Actions            []Action               `json:"actions,omitempty"`
	TTL                *int64                 `json:"ttl,omitempty"`
	Tag                *string                `json:"tag,omitempty"`
	RequireInteraction *bool                  `json:"requireInteraction,omitempty"`
	Translations       map[string]Translation `json:"translations,omitempty"`
}

// Fill sets every content member of r that r leaves out from c: members
// given in r override the template's. Slices and maps are copied, so
// that r never shares them with c.
func (c *TemplateContent) Fill(r *Request) {
	fill := func(dst **string, src *string) {
		if *dst == nil && src != nil {
			v := *src
			*dst = &v
		}
	}
	fill(&r.Title, c.Title)
	fill(&r.Body, c.Body)
	fill(&r.URL, c.URL)
	fill(&r.Icon, c.Icon)
	fill(&r.Image, c.Image)
	fill(&r.Badge, c.Badge)
	fill(&r.Tag, c.Tag)
	if r.Actions == nil && c.Actions != nil {
		r.Actions = append([]Action(nil), c.Actions...)
	}
	if r.TTL == nil && c.TTL != nil {
		v := *c.TTL
		r.TTL = &v
	}
	if r.RequireInteraction == nil && c.RequireInteraction != nil {
		v := *c.RequireInteraction
		r.RequireInteraction = &v
	}
	if r.Translations == nil && c.Translations != nil {
		r.Translations = maps.Clone(c.Translations)
	}
}

// Request is c as a send request of its content alone.
func (c *TemplateContent) Request() *Request {
	r := new(Request)
	c.Fill(r)
	return r
}

// DecodeTemplateContent reads a template's stored content.
func DecodeTemplateContent(raw []byte) (*TemplateContent, error) {
	c := new(TemplateContent)
	if len(bytes.TrimSpace(raw)) == 0 {
		return c, nil
	}
	if err := json.Unmarshal(raw, c); err != nil {
		return nil, fmt.Errorf("decoding template content: %w", err)
	}
	return c, nil
}

// Normalize puts c in its stored form: blank strings and empty lists are
// left out (a template member left out fills nothing), ttl is clamped to
// 1 to MaxTTL as a send's is, and translation keys are lower case.
func (c *TemplateContent) Normalize() {
	for _, p := range []**string{&c.Title, &c.Body, &c.URL, &c.Icon, &c.Image, &c.Badge, &c.Tag} {
		if *p != nil && **p == "" {
			*p = nil
		}
	}
	if len(c.Actions) == 0 {
		c.Actions = nil
	}
	if c.TTL != nil {
		v := min(max(*c.TTL, 1), MaxTTL)
		c.TTL = &v
	}
	if len(c.Translations) == 0 {
		c.Translations = nil
	} else {
		out := make(map[string]Translation, len(c.Translations))
		for k, v := range c.Translations {
			out[strings.ToLower(k)] = v
		}
		c.Translations = out
	}
}

// CheckTemplate validates a template's content for website w as a send's
// content is validated where that makes sense for content whose title
// a send may still give: every link an absolute http(s) URL (400
// invalid_url; url with its merge tags at their fallbacks), at most
// MaxActions buttons each with a title (400 invalid_actions), translation
// keys of two letters (400 invalid_translations), and the push, resolved
// against the website's defaults, within the payload budget with every
// merge tag at its fallback (413 payload_too_large).
func CheckTemplate(c *TemplateContent, w store.Website) error {
	r := c.Request()
	if err := checkLinks(r); err != nil {
		return err
	}
	if len(c.Actions) > MaxActions {
		return &Error{Code: "invalid_actions", Message: fmt.Sprintf("at most %d actions", MaxActions)}
	}
	for i, a := range c.Actions {
		if a.Title == "" {
			return &Error{Code: "invalid_actions", Message: fmt.Sprintf("actions[%d].title is required", i)}
		}
	}
	for k := range c.Translations {
		if len(k) != 2 {
			return &Error{Code: "invalid_translations", Message: fmt.Sprintf("translation key %q is not a two-letter language", k)}
		}
	}
	content, err := resolveContent(r, w)
	if err != nil {
		return err
	}
	return content.checkSize()
}
