package onsite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/relaybell/relaybell/notification"
	"github.com/relaybell/relaybell/store"
	"github.com/relaybell/relaybell/templates"
)

// MaxWelcomeDelay bounds the welcome's delay: a day.
const MaxWelcomeDelay = 86400

// Templates fills a send's content from one of the website's templates.
// The templates package implements it; nil on a server without templates,
// where a welcome naming a template is refused.
type Templates interface {
	Apply(ctx context.Context, websiteID, templateID string, req *notification.Request) error
}

// Welcome is a website's welcome notification (GET/PUT /welcome): on or
// off, the delay after a new browser subscribes, and the content members
// of a send, or a template's id.
type Welcome struct {
	Enabled      bool
	DelaySeconds int64
	TemplateID   string
	Content      notification.Request
}

// WelcomeBody is a welcome as JSON holds it, a PUT body or the stored
// form, decoded once: its own members, each nil or unset when left out,
// and the content members of a send, Request nil when none is given
// (encoding/json allocates the embedded pointer for any of its members,
// null included).
type WelcomeBody struct {
	Enabled      *bool                         `json:"enabled"`
	DelaySeconds *int64                        `json:"delaySeconds"`
	TemplateID   notification.Nullable[string] `json:"templateId"`
	*notification.Request
}

// MarshalJSON writes {enabled, delaySeconds, templateId, ...content}.
func (w Welcome) MarshalJSON() ([]byte, error) {
	content, err := json.Marshal(w.Content)
	if err != nil {
		return nil, err
	}
	var tmpl any
	if w.TemplateID != "" {
		tmpl = w.TemplateID
	}
	head, err := json.Marshal(struct {
		Enabled      bool  `json:"enabled"`
		DelaySeconds int64 `json:"delaySeconds"`
		TemplateID   any   `json:"templateId"`
	}{w.Enabled, w.DelaySeconds, tmpl})
	if err != nil {
		return nil, err
	}
	if string(content) == "{}" {
		return head, nil
	}
	return append(append(head[:len(head)-1], ','), content[1:]...), nil
}

// ReadWelcome is the stored welcome; off when none was stored.
func ReadWelcome(b []byte) (Welcome, error) {
	var w Welcome
	if b == nil {
		return w, nil
	}
	var body WelcomeBody
	if err := json.Unmarshal(b, &body); err != nil {
		return Welcome{}, fmt.Errorf("reading welcome: %w", err)
	}
	w.Set(body)
	return w, nil
}

// Set puts a decoded body over w: the members given replace the stored
// ones; content members replace the stored content as a whole (and clear
// the template), a templateId clears the content.
func (w *Welcome) Set(b WelcomeBody) {
	if b.Enabled != nil {
		w.Enabled = *b.Enabled
	}
	if b.DelaySeconds != nil {
		w.DelaySeconds = *b.DelaySeconds
	}
	if b.TemplateID.Set {
		w.TemplateID = ""
		if b.TemplateID.Valued() {
			w.TemplateID = b.TemplateID.Value
			w.Content = notification.Request{}
		}
	}
	if b.Request != nil {
		w.Content, w.TemplateID = *b.Request, ""
	}
}

// Check refuses what the welcome cannot be: a delay out of range, a
// member that chooses who gets it or when, content that would not send
// (notification.Prepare, when there is no template), a template on a
// server without templates (tmpl nil).
func (w *Welcome) Check(ctx context.Context, site store.Website, tmpl Templates, now time.Time) error {
	if w.DelaySeconds < 0 || w.DelaySeconds > MaxWelcomeDelay {
		return errorf(CodeInvalidWelcome, "delaySeconds is 0 to %d", MaxWelcomeDelay)
	}
	if name := w.Content.AudienceOrTiming(); name != "" {
		return errorf(CodeInvalidWelcome, "%s: a welcome goes to the browser that just subscribed, after delaySeconds", name)
	}
	req := w.Content
	if w.TemplateID != "" {
		if tmpl == nil {
			return errorf(CodeInvalidWelcome, "templateId: templates are not available on this server; give the content members instead")
		}
		// Stored canonical, as every user of a template, so that
		// TemplateUses finds it; checked filled in, as it will send (a
		// template may leave the title to the send).
		id, ok := templates.CanonicalID(w.TemplateID)
		if !ok {
			return errorf(templates.CodeTemplateNotFound, "templateId names no template of this website")
		}
		w.TemplateID = id
		if err := tmpl.Apply(ctx, site.ID, id, &req); errors.Is(err, store.ErrNotFound) {
			return errorf(templates.CodeTemplateNotFound, "templateId names no template of this website")
		} else if err != nil {
			return err
		}
	} else if !w.Enabled && w.Content.Title == nil {
		return nil // off and empty: nothing to check
	}
	if _, err := notification.Prepare(ctx, &req, site, nil, now); err != nil {
		var ne *notification.Error
		if errors.As(err, &ne) {
			return errorf(ne.Code, "%s", ne.Message)
		}
		return err
	}
	return nil
}

// Notification is the welcome send of a timer's browser: the content (a
// template's, when named) resolved as a send, welcome true, to that one
// endpoint (the browser that subscribed) and nobody else, not even its
// person's other browsers.
func (w Welcome) Notification(ctx context.Context, site store.Website, tmpl Templates, endpointID string, now time.Time) (*store.Notification, error) {
	if endpointID == "" { // an empty target is everyone: never
		return nil, &notification.Error{Code: CodeInvalidWelcome, Message: "a welcome timer names no browser"}
	}
	req := w.Content
	if w.TemplateID != "" {
		if tmpl == nil {
			return nil, &notification.Error{Code: CodeInvalidWelcome, Message: "the welcome names a template and this server has no templates"}
		}
		if err := tmpl.Apply(ctx, site.ID, w.TemplateID, &req); err != nil {
			return nil, fmt.Errorf("applying welcome template: %w", err)
		}
	}
	n, err := notification.Prepare(ctx, &req, site, nil, now)
	if err != nil {
		return nil, fmt.Errorf("preparing welcome: %w", err)
	}
	n.Welcome, n.Automation, n.SendBody = true, true, nil
	target := notification.Target{EndpointID: endpointID}
	n.TargetSummary = target.Summary()
	if n.Target, err = json.Marshal(target); err != nil {
		return nil, fmt.Errorf("encoding welcome target: %w", err)
	}
	return n, nil
}
