package templates

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/relaybell/relaybell/notification"
	"github.com/relaybell/relaybell/store"
)

// MaxName is the longest template name, in characters.
const MaxName = 100

// Codes of a refused template, as the API's catalog answers them; a
// content refusal carries the notification package's code (invalid_url,
// invalid_actions, invalid_translations, payload_too_large).
const (
	CodeNameRequired    = "name_required"
	CodeInvalidName     = "invalid_name"
	CodeNothingToUpdate = "nothing_to_update"
	// CodeTemplateNotFound answers a templateId that names no template
	// of the website (a send's, an automation message's, a journey
	// step's), as segment_not_found answers a segmentId.
	CodeTemplateNotFound = "template_not_found"
	// CodeTemplateInUse answers the deletion of a template something
	// names.
	CodeTemplateInUse = "template_in_use"
)

// Error is a refused template, with the code of the API's catalog.
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Body is the body of POST and PUT /templates: a name and the content
// members. Decoded strictly by the API, it tells which members a body
// names; PUT applies the body's JSON object itself (Definition.Patch).
type Body struct {
	Name *string `json:"name"`
	notification.TemplateContent
}

// Definition is a template's name and content as stored.
type Definition struct {
	Name    string
	Content notification.TemplateContent
}

// Of is a stored template's definition.
func Of(t store.Template) (Definition, error) {
	c, err := notification.DecodeTemplateContent(t.Content)
	if err != nil {
		return Definition{}, err
	}
	return Definition{Name: t.Name, Content: *c}, nil
}

// New is a new template's definition from a POST body.
func New(b Body) Definition {
	d := Definition{Content: b.TemplateContent}
	if b.Name != nil {
		d.Name = *b.Name
	}
	return d
}

// Patch applies a PUT body, a JSON object already decoded strictly as a
// Body, over d: each member given replaces the stored one, null clears a
// content member, and members left out stay. An empty object is refused
// (nothing_to_update).
func (d *Definition) Patch(body []byte) error {
	var changes map[string]json.RawMessage
	if err := json.Unmarshal(body, &changes); err != nil {
		return fmt.Errorf("reading a checked body: %w", err)
	}
	if len(changes) == 0 {
		return &Error{CodeNothingToUpdate, "name or a content member is required"}
	}
	if raw, ok := changes["name"]; ok {
		delete(changes, "name")
		var name *string
		if err := json.Unmarshal(raw, &name); err != nil {
			return fmt.Errorf("reading a checked name: %w", err)
		}
		if name == nil {
			name = new(string)
		}
		d.Name = *name
	}
	stored, err := json.Marshal(d.Content)
	if err != nil {
		return err
	}
	fields := map[string]json.RawMessage{}
	if err := json.Unmarshal(stored, &fields); err != nil {
		return err
	}
	for k, v := range changes {
		if bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			delete(fields, k)
		} else {
			fields[k] = v
		}
	}
	merged, err := json.Marshal(fields)
	if err != nil {
		return err
	}
	var c notification.TemplateContent
	if err := json.Unmarshal(merged, &c); err != nil {
		return fmt.Errorf("reading a checked body: %w", err)
	}
	d.Content = c
	return nil
}

// Check validates d for website w and puts it in its stored form: the
// name trimmed, 1 to MaxName characters (name_required, invalid_name);
// the content normalized (notification.TemplateContent.Normalize) and
// checked (notification.CheckTemplate).
func (d *Definition) Check(w store.Website) error {
	d.Name = strings.TrimSpace(d.Name)
	switch {
	case d.Name == "":
		return &Error{CodeNameRequired, "a name is required"}
	case utf8.RuneCountInString(d.Name) > MaxName:
		return &Error{CodeInvalidName, fmt.Sprintf("a name is at most %d characters", MaxName)}
	}
	d.Content.Normalize()
	return notification.CheckTemplate(&d.Content, w)
}

// Stored is t with d's name and content.
func (d Definition) Stored(t store.Template) (store.Template, error) {
	content, err := json.Marshal(d.Content)
	if err != nil {
		return store.Template{}, fmt.Errorf("encoding template content: %w", err)
	}
	t.Name, t.Content = d.Name, content
	return t, nil
}

// Lookup finds a template of a website.
type Lookup interface {
	Template(ctx context.Context, websiteID, id string) (store.Template, error)
}

// With is lk answering t for t's own id and website: what the users of
// the template read once t is stored, for checking a change before it is
// made.
func With(lk Lookup, t store.Template) Lookup { return with{lk, t} }

type with struct {
	Lookup
	t store.Template
}

func (w with) Template(ctx context.Context, websiteID, id string) (store.Template, error) {
	if websiteID == w.t.WebsiteID && id == w.t.ID {
		return w.t, nil
	}
	return w.Lookup.Template(ctx, websiteID, id)
}

// CanonicalID is id in its canonical form, and whether it is a UUID in
// its 36-character form (any other id names no template).
func CanonicalID(id string) (string, bool) {
	if !notification.IsUUID(id) {
		return id, false
	}
	return strings.ToLower(id), true // a UUID's canonical form is its lower case
}

// Find loads the website's template id: an error wrapping
// store.ErrNotFound for an id that is not a UUID, an unknown one or
// another website's.
func Find(ctx context.Context, lk Lookup, websiteID, id string) (store.Template, error) {
	canonical, ok := CanonicalID(id)
	if !ok {
		return store.Template{}, fmt.Errorf("template %q: %w", id, store.ErrNotFound)
	}
	t, err := lk.Template(ctx, websiteID, canonical)
	if err != nil {
		return store.Template{}, fmt.Errorf("template %q: %w", id, err)
	}
	return t, nil
}

// Apply fills every content member of req that req leaves out from the
// website's template templateID (members given in req override the
// template's) and clears req.TemplateID: req is then the resolved
// request, which is what a send stores. An unknown template, or another
// website's, is an error wrapping store.ErrNotFound.
func Apply(ctx context.Context, lk Lookup, websiteID, templateID string, req *notification.Request) error {
	t, err := Find(ctx, lk, websiteID, templateID)
	if err != nil {
		return err
	}
	c, err := notification.DecodeTemplateContent(t.Content)
	if err != nil {
		return err
	}
	c.Fill(req)
	req.TemplateID = nil
	return nil
}

// Resolve applies req's own templateId, if it names one (Apply); a
// request without one is left as it is.
func Resolve(ctx context.Context, lk Lookup, websiteID string, req *notification.Request) error {
	if req.TemplateID == nil {
		return nil
	}
	return Apply(ctx, lk, websiteID, *req.TemplateID, req)
}

// NotFound is the refusal of a templateId that names no template of the
// website, for err from Apply, Resolve or Find; nil for any other error.
func NotFound(err error, id string) *Error {
	if !errors.Is(err, store.ErrNotFound) {
		return nil
	}
	return &Error{CodeTemplateNotFound, fmt.Sprintf("no template %q on this website", id)}
}

// Service is the templates of the websites, for the API and for the
// engines that send from them (feeds, schedules).
type Service struct {
	st Lookup
}

// NewService returns a Service over st.
func NewService(st Lookup) *Service { return &Service{st: st} }

// Apply fills every content member of req that the request did not set
// from the website's template templateID (members given in the request
// override the template's) and clears req.TemplateID. It returns an
// error wrapping store.ErrNotFound for an unknown template or another
// website's. The caller stores the notification prepared from req, which
// keeps the resolved content.
func (s *Service) Apply(ctx context.Context, websiteID, templateID string, req *notification.Request) error {
	return Apply(ctx, s.st, websiteID, templateID, req)
}

// Resolve applies req's own templateId, if any (Apply).
func (s *Service) Resolve(ctx context.Context, websiteID string, req *notification.Request) error {
	return Resolve(ctx, s.st, websiteID, req)
}
