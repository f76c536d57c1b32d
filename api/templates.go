package api

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/notification"
	"github.com/relaybell/relaybell/store"
	"github.com/relaybell/relaybell/templates"
)

// Codes of the template routes, and of a templateId that names no
// template, that section 7 leaves to the service.
const (
	CodeTemplateNotFound    = templates.CodeTemplateNotFound
	CodeTemplateInUse       = templates.CodeTemplateInUse
	CodeTooManyTemplates    = "too_many_templates"
	CodeInvalidActions      = "invalid_actions"
	CodeInvalidTranslations = "invalid_translations"
)

// maxTemplates is how many templates a website keeps.
const maxTemplates = 500

// templateJSON is a template as the routes answer it: its id and name and
// its content members at the top level, as a send request holds them.
type templateJSON struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	notification.TemplateContent
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// templateUseJSON is one thing a template_in_use names.
type templateUseJSON struct {
	Kind string `json:"kind"`
	ID   string `json:"id"`
	Name string `json:"name"`
}

func templateOut(t store.Template) (templateJSON, error) {
	d, err := templates.Of(t)
	if err != nil {
		return templateJSON{}, err
	}
	return templateJSON{ID: t.ID, Name: d.Name, TemplateContent: d.Content,
		CreatedAt: t.CreatedAt.UTC(), UpdatedAt: t.UpdatedAt.UTC()}, nil
}

// handleListTemplates serves GET /api/v1/templates, newest first.
func (a *API) handleListTemplates(r *request) error {
	list, err := a.st.ListTemplates(r.ctx, r.owner.Website.ID)
	if err != nil {
		return err
	}
	return answerList(r, "templates", list, templateOut)
}

// handleGetTemplate serves GET /api/v1/templates/{id}.
func (a *API) handleGetTemplate(r *request) error {
	return answerOwn(r, a.st.Template, templateOut)
}

// handleCreateTemplate serves POST /api/v1/templates.
func (a *API) handleCreateTemplate(r *request) error {
	var in templates.Body
	if err := decodeJSON(r.fc.Request.Body(), &in, strict); err != nil {
		return err
	}
	d := templates.New(in)
	if err := checkTemplate(r, &d); err != nil {
		return err
	}
	list, err := a.st.ListTemplates(r.ctx, r.owner.Website.ID)
	if err != nil {
		return err
	}
	if len(list) >= maxTemplates {
		return errorf(CodeTooManyTemplates, "a website keeps at most %d templates; delete some", maxTemplates)
	}
	now := r.now.UTC().Truncate(time.Millisecond)
	t, err := d.Stored(store.Template{ID: uuid.NewString(), WebsiteID: r.owner.Website.ID, CreatedAt: now, UpdatedAt: now})
	if err != nil {
		return err
	}
	if err := a.st.CreateTemplate(r.ctx, t); err != nil {
		return err
	}
	return a.answerTemplate(r, http.StatusCreated, t.ID)
}

// handleUpdateTemplate serves PUT /api/v1/templates/{id}: each member
// given replaces the stored one, null clears a content member, and the
// result is checked as a whole, then, when its content changed, each
// thing that names the template is checked with it (brokenUses): 409
// template_in_use names those whose content it would leave unsendable.
// Past sends keep the content they were sent with; what names the
// template sends the new content from now on.
func (a *API) handleUpdateTemplate(r *request) error {
	t, err := loadOwn(r, "id", a.st.Template)
	if err != nil {
		return err
	}
	body := r.fc.Request.Body()
	if err := decodeJSON(body, new(templates.Body), strict); err != nil {
		return err
	}
	d, err := templates.Of(t)
	if err != nil {
		return err
	}
	if err := fromTemplateError(d.Patch(body)); err != nil {
		return err
	}
	if err := checkTemplate(r, &d); err != nil {
		return err
	}
	content := t.Content
	if t, err = d.Stored(t); err != nil {
		return err
	}
	// A change of the name alone leaves every use's content as it is.
	if !bytes.Equal(t.Content, content) {
		broken, err := a.brokenUses(r, t)
		if err != nil {
			return err
		}
		if len(broken) > 0 {
			return templateBreaks(broken)
		}
	}
	t.UpdatedAt = r.now.UTC().Truncate(time.Millisecond)
	if err := a.st.UpdateTemplate(r.ctx, t); errors.Is(err, store.ErrNotFound) {
		return errCode(CodeNotFound)
	} else if err != nil {
		return err
	}
	return a.answerTemplate(r, http.StatusOK, t.ID)
}

// handleDeleteTemplate serves DELETE /api/v1/templates/{id}: refused with
// 409 template_in_use, naming each automation and journey that names it,
// while anything does.
func (a *API) handleDeleteTemplate(r *request) error {
	t, err := loadOwn(r, "id", a.st.Template)
	if err != nil {
		return err
	}
	uses, err := a.st.DeleteTemplate(r.ctx, r.owner.Website.ID, t.ID)
	switch {
	case errors.Is(err, store.ErrConflict) && len(uses) > 0:
		return templateInUse(uses)
	case errors.Is(err, store.ErrNotFound):
		return errCode(CodeNotFound)
	case err != nil:
		return err
	}
	return r.json(http.StatusOK, okAnswer{OK: true})
}

// templateInUse is the 409 naming what uses a template.
func templateInUse(uses []store.TemplateUse) *Error {
	e := &Error{Code: CodeTemplateInUse, UsedBy: make([]templateUseJSON, len(uses))}
	names := make([]string, len(uses))
	for i, u := range uses {
		e.UsedBy[i] = templateUseJSON{Kind: u.Kind, ID: u.ID, Name: u.Name}
		names[i] = fmt.Sprintf("%s %q", u.Kind, u.Name)
	}
	e.Message = "the template is used by " + strings.Join(names, ", ") + "; remove it from them first"
	return e
}

// templateBreaks is the 409 naming what a change to a template would
// break, with why.
func templateBreaks(broken []brokenUse) *Error {
	e := &Error{Code: CodeTemplateInUse, UsedBy: make([]templateUseJSON, len(broken))}
	names := make([]string, len(broken))
	for i, b := range broken {
		e.UsedBy[i] = templateUseJSON{Kind: b.use.Kind, ID: b.use.ID, Name: b.use.Name}
		names[i] = fmt.Sprintf("%s %q (%s)", b.use.Kind, b.use.Name, b.why)
	}
	e.Message = "the change would leave content that cannot be sent in " + strings.Join(names, ", ") +
		"; change them first, or the template otherwise"
	return e
}

// checkTemplate checks d for the caller's website.
func checkTemplate(r *request, d *templates.Definition) error {
	return fromTemplateError(d.Check(r.owner.Website))
}

// fromTemplateError maps a refused template onto the catalog.
func fromTemplateError(err error) error {
	var te *templates.Error
	if errors.As(err, &te) {
		return errorf(te.Code, "%s", te.Message)
	}
	var ne *notification.Error
	if errors.As(err, &ne) {
		return fromNotificationError(err)
	}
	return err
}

// resolveTemplate fills a send request's content from the template its
// templateId names (400 template_not_found for none of the website's),
// so that what is stored is the resolved content.
func (a *API) resolveTemplate(r *request, req *notification.Request) error {
	if req.TemplateID == nil {
		return nil
	}
	id := *req.TemplateID
	if err := templates.Resolve(r.ctx, a.st, r.owner.Website.ID, req); err != nil {
		if te := templates.NotFound(err, id); te != nil {
			return errorf(te.Code, "%s", te.Message)
		}
		return fmt.Errorf("resolving template: %w", err)
	}
	return nil
}

// answerTemplate answers the template as stored now.
func (a *API) answerTemplate(r *request, status int, id string) error {
	t, err := a.st.Template(r.ctx, r.owner.Website.ID, id)
	if err != nil {
		return err
	}
	out, err := templateOut(t)
	if err != nil {
		return err
	}
	return r.json(status, out)
}

func (a *API) templateRoutes(rt *router) {
	add := func(method, pattern, scope string, h func(*request) error) {
		rt.add(&route{method: method, pattern: "/api/v1" + pattern, auth: authKey, scope: scope, handle: h})
	}
	add(http.MethodGet, "/templates", "", a.handleListTemplates)
	add(http.MethodPost, "/templates", ScopeSettingsWrite, a.handleCreateTemplate)
	add(http.MethodGet, "/templates/{id}", "", a.handleGetTemplate)
	add(http.MethodPut, "/templates/{id}", ScopeSettingsWrite, a.handleUpdateTemplate)
	add(http.MethodDelete, "/templates/{id}", ScopeSettingsWrite, a.handleDeleteTemplate)
}
