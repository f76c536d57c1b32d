package store

import (
	"context"
	"time"
)

// Kinds of a TemplateUse: what names a template.
const (
	TemplateUseAutomation = "automation"
	TemplateUseJourney    = "journey"
	TemplateUseSchedule   = "schedule"
	TemplateUseWelcome    = "welcome" // the website's welcome notification; its id is the website's
	TemplateUseFeed       = "feed"
)

// Template is a website's saved content: a name and the content members
// of a send request (spec 2.1), merge tags included, as the JSON object
// the templates package writes (notification.TemplateContent).
type Template struct {
	ID        string
	WebsiteID string
	Name      string
	Content   []byte
	CreatedAt time.Time
	UpdatedAt time.Time
}

// TemplateUse is one thing that names a template and would break without
// it: its kind (TemplateUseAutomation, TemplateUseJourney, TemplateUseSchedule, TemplateUseWelcome), id and name.
type TemplateUse struct {
	Kind string
	ID   string
	Name string
}

// Templates holds templates.
type Templates interface {
	// ListTemplates lists the website's templates, newest first.
	ListTemplates(ctx context.Context, websiteID string) ([]Template, error)
	// Template finds one of the website's templates. ErrNotFound for
	// another website's or an unknown id.
	Template(ctx context.Context, websiteID, id string) (Template, error)
	// CreateTemplate stores a new template. ErrNotFound for an unknown
	// website.
	CreateTemplate(ctx context.Context, t Template) error
	// UpdateTemplate replaces a template's name, content and UpdatedAt.
	// ErrNotFound for an unknown id or another website's.
	UpdateTemplate(ctx context.Context, t Template) error
	// DeleteTemplate removes one of the website's templates unless
	// something names it: then it returns what does (and ErrConflict),
	// read in the delete's transaction. ErrNotFound for an unknown id.
	DeleteTemplate(ctx context.Context, websiteID, id string) ([]TemplateUse, error)
	// TemplateUses lists what names the website's template, by kind then
	// name then id: automations whose messages name it and journeys any
	// of whose versions' send steps name it (an enrolment may still run
	// an older version), and feeds whose template it is. Empty when
	// nothing does.
	TemplateUses(ctx context.Context, websiteID, templateID string) ([]TemplateUse, error)
}
