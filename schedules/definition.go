package schedules

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/relaybell/relaybell/notification"
	"github.com/relaybell/relaybell/store"
)

// Codes of the schedule routes that section 7 leaves to the service.
const (
	CodeInvalidRule     = "invalid_rule"
	CodeInvalidAudience = notification.CodeInvalidAudience
	CodeInvalidSchedule = "invalid_schedule"
	// CodeTemplateNotFound answers a templateId that names no template of
	// the website (or a server without templates).
	CodeTemplateNotFound = "template_not_found"
	// codeInvalidTZ is the catalog's invalid_tz.
	codeInvalidTZ    = "invalid_tz"
	codeNameRequired = "name_required"
)

// DefaultCatchUpMinutes is how late an occurrence may still go.
const DefaultCatchUpMinutes = 60

// maxCatchUpMinutes bounds catchUpMinutes: a week.
const maxCatchUpMinutes = 7 * 24 * 60

// maxName bounds a schedule's name, in bytes.
const maxName = 200

// Error is a schedule the routes refuse, with its catalog code.
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

func errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Content is a schedule's message: the content members of a send request
// (spec 2.1), merge tags included.
type Content struct {
	Title              *string                             `json:"title,omitempty"`
	Body               *string                             `json:"body,omitempty"`
	URL                *string                             `json:"url,omitempty"`
	Icon               *string                             `json:"icon,omitempty"`
	Image              *string                             `json:"image,omitempty"`
	Badge              *string                             `json:"badge,omitempty"`
	Actions            []notification.Action               `json:"actions,omitempty"`
	RequireInteraction *bool                               `json:"requireInteraction,omitempty"`
	Tag                *string                             `json:"tag,omitempty"`
	TTL                *int64                              `json:"ttl,omitempty"`
	Translations       map[string]notification.Translation `json:"translations,omitempty"`
}

// Body is the body of POST and PUT /schedules: on PUT the members given
// replace the stored ones (null clears content, templateId, startsAt,
// endsAt).
type Body struct {
	Name           *string                        `json:"name"`
	Status         *string                        `json:"status"`
	Audience       *notification.Audience         `json:"audience"`
	Content        notification.Nullable[Content] `json:"content"`
	TemplateID     notification.Nullable[string]  `json:"templateId"`
	Rule           *string                        `json:"rule"`
	Timezone       *string                        `json:"timezone"`
	PerTimezone    *bool                          `json:"perTimezone"`
	CatchUpMinutes *int                           `json:"catchUpMinutes"`
	StartsAt       notification.Nullable[string]  `json:"startsAt"`
	EndsAt         notification.Nullable[string]  `json:"endsAt"`
}

// Definition is a schedule as the store keeps it (store.Schedule's
// Definition); the name and status are the store's own columns.
type Definition struct {
	Audience       notification.Audience `json:"audience"`
	Content        *Content              `json:"content,omitempty"`
	TemplateID     string                `json:"templateId,omitempty"`
	Rule           string                `json:"rule"`
	Timezone       string                `json:"timezone"`
	PerTimezone    bool                  `json:"perTimezone"`
	CatchUpMinutes int                   `json:"catchUpMinutes"`
	StartsAt       *time.Time            `json:"startsAt,omitempty"`
	EndsAt         *time.Time            `json:"endsAt,omitempty"`
}

// Decode reads a stored schedule's definition.
func Decode(s store.Schedule) (Definition, error) {
	var d Definition
	if err := json.Unmarshal(s.Definition, &d); err != nil {
		return Definition{}, fmt.Errorf("decoding schedule %s: %w", s.ID, err)
	}
	return d, nil
}

// Timing is when the schedule's occurrences are. The definition was
// checked when stored: a rule or zone that no longer reads is an error.
func (d Definition) Timing(s store.Schedule) (Timing, error) {
	r, err := ParseRule(d.Rule)
	if err != nil {
		return Timing{}, err
	}
	loc, err := time.LoadLocation(d.Timezone)
	if err != nil {
		return Timing{}, fmt.Errorf("schedule %s: time zone %q: %w", s.ID, d.Timezone, err)
	}
	anchor := s.CreatedAt
	if d.StartsAt != nil {
		anchor = *d.StartsAt
	}
	return Timing{Rule: r, Loc: loc, Anchor: anchor, StartsAt: d.StartsAt, EndsAt: d.EndsAt}, nil
}

// CatchUp is how late an occurrence may still go.
func (d Definition) CatchUp() time.Duration {
	if d.CatchUpMinutes <= 0 {
		return DefaultCatchUpMinutes * time.Minute
	}
	return time.Duration(d.CatchUpMinutes) * time.Minute
}

// Request is the send request of the occurrence at (its wall time, for
// perTimezone, in the schedule's zone): the content and the audience, the
// template's content not yet applied.
func (d Definition) Request(at time.Time) *notification.Request {
	req := &notification.Request{}
	if c := d.Content; c != nil {
		req.Title, req.Body, req.URL, req.Icon, req.Image, req.Badge = c.Title, c.Body, c.URL, c.Icon, c.Image, c.Badge
		req.Actions, req.RequireInteraction, req.Tag, req.TTL, req.Translations = c.Actions, c.RequireInteraction, c.Tag, c.TTL, c.Translations
	}
	d.Audience.Apply(req)
	if d.PerTimezone {
		yes := true
		local := at.UTC().Format("15:04")
		if loc, err := time.LoadLocation(d.Timezone); err == nil {
			local = at.In(loc).Format("15:04")
		}
		req.PerTimezone, req.LocalTime = &yes, &local
	}
	return req
}

// Store is what the schedules package reads and writes.
type Store interface {
	notification.Lookup
	store.Schedules
	Website(ctx context.Context, id string) (store.Website, error)
	// For the review of a new account's first large broadcast.
	Account(ctx context.Context, id string) (store.Account, error)
	LargestSend(ctx context.Context, websiteID string) (int64, error)
	Reachable(ctx context.Context, q store.ReachQuery, fn func(sub *store.Subscriber, browsers int)) error
}

// Templates fills a send request's content from a template (package
// templates' Service): the members the request did not set. An unknown
// template, or another website's, is an error wrapping store.ErrNotFound.
type Templates interface {
	Apply(ctx context.Context, websiteID, templateID string, req *notification.Request) error
}

// Service checks and stores schedules for the API.
type Service struct {
	st        Store
	templates Templates
}

// NewService returns the service. templates may be nil: a templateId is
// then refused (template_not_found, saying templates are not available).
func NewService(st Store, templates Templates) *Service {
	return &Service{st: st, templates: templates}
}

// applyTemplate fills req from the template, when d names one.
func applyTemplate(ctx context.Context, t Templates, websiteID string, d Definition, req *notification.Request) error {
	if d.TemplateID == "" {
		return nil
	}
	if t == nil {
		return errorf(CodeTemplateNotFound, "templates are not available on this server; give content instead of templateId")
	}
	err := t.Apply(ctx, websiteID, d.TemplateID, req)
	if errors.Is(err, store.ErrNotFound) {
		return errorf(CodeTemplateNotFound, "no template %s on this website", d.TemplateID)
	}
	return err
}

// Create checks a new schedule's body and stores it, with its first
// occurrence after now. Refusals are *Error or *notification.Error.
func (s *Service) Create(ctx context.Context, w store.Website, id string, b Body, now time.Time) (store.Schedule, error) {
	now = now.UTC().Truncate(time.Millisecond)
	sc := store.Schedule{ID: id, WebsiteID: w.ID, Status: store.ScheduleActive, CreatedAt: now, UpdatedAt: now}
	d := Definition{Timezone: w.Timezone, CatchUpMinutes: DefaultCatchUpMinutes}
	if b.Name == nil {
		return store.Schedule{}, errorf(codeNameRequired, "a schedule needs a name")
	}
	if b.Audience == nil {
		return store.Schedule{}, notification.ErrAudienceRequired
	}
	if b.Rule == nil {
		return store.Schedule{}, errorf(CodeInvalidRule, "rule is required, e.g. FREQ=DAILY;BYHOUR=9;BYMINUTE=0")
	}
	if !b.Content.Valued() && !b.TemplateID.Valued() {
		return store.Schedule{}, errorf(CodeInvalidSchedule, "give content, templateId, or both (content then overrides the template's)")
	}
	if err := s.apply(ctx, w, &sc, &d, b, now); err != nil {
		return store.Schedule{}, err
	}
	if err := s.st.CreateSchedule(ctx, sc); err != nil {
		return store.Schedule{}, err
	}
	return sc, nil
}

// Update applies a PUT body to a stored schedule and stores it, with its
// next occurrence recomputed from now; an occurrence waiting for the
// budget stays (unless the schedule is paused): it is not lost.
func (s *Service) Update(ctx context.Context, w store.Website, sc store.Schedule, b Body, now time.Time) (store.Schedule, error) {
	now = now.UTC().Truncate(time.Millisecond)
	d, err := Decode(sc)
	if err != nil {
		return store.Schedule{}, err
	}
	if !b.set() {
		return store.Schedule{}, &Error{Code: "nothing_to_update", Message: "give at least one member to change"}
	}
	if err := s.apply(ctx, w, &sc, &d, b, now); err != nil {
		return store.Schedule{}, err
	}
	sc.UpdatedAt = now
	if err := s.st.UpdateSchedule(ctx, sc); err != nil {
		return store.Schedule{}, err
	}
	return sc, nil
}

// CheckSend checks the send a stored schedule's occurrences make as
// saving it does, its template filled in by tpl: a change to a template
// runs it again over the schedules that name it, with the changed
// template. Refusals are *Error or *notification.Error.
func (s *Service) CheckSend(ctx context.Context, w store.Website, sc store.Schedule, tpl Templates, now time.Time) error {
	d, err := Decode(sc)
	if err != nil {
		return err
	}
	return s.checkSend(ctx, w, d, tpl, now)
}

// checkSend checks the send of d's occurrences, as a send is checked.
func (s *Service) checkSend(ctx context.Context, w store.Website, d Definition, tpl Templates, now time.Time) error {
	req := d.Request(now)
	if err := applyTemplate(ctx, tpl, w.ID, d, req); err != nil {
		return err
	}
	_, err := notification.Prepare(ctx, req, w, s.st, now)
	return err
}

// apply puts b's members over sc and d, checks the whole, and sets sc's
// definition, audience ids and next occurrence.
func (s *Service) apply(ctx context.Context, w store.Website, sc *store.Schedule, d *Definition, b Body, now time.Time) error {
	wasActive := sc.Status == store.ScheduleActive
	if b.Name != nil {
		name := strings.TrimSpace(*b.Name)
		if name == "" || len(name) > maxName {
			return errorf(codeNameRequired, "name must be 1 to %d characters", maxName)
		}
		sc.Name = name
	}
	if b.Status != nil {
		switch *b.Status {
		case store.ScheduleActive, store.SchedulePaused:
			sc.Status = *b.Status
			sc.PausedReason = ""
		default:
			return errorf(CodeInvalidSchedule, "status must be active or paused")
		}
	}
	if b.Audience != nil {
		a := *b.Audience
		if err := a.Check(); err != nil {
			return err
		}
		if err := a.ResolveTopic(ctx, s.st, w.ID); err != nil {
			return err
		}
		d.Audience = a
	}
	if b.Content.Set {
		d.Content = nil
		if b.Content.Valued() {
			c := b.Content.Value
			d.Content = &c
		}
	}
	if b.TemplateID.Set {
		d.TemplateID = ""
		if b.TemplateID.Valued() {
			d.TemplateID = strings.TrimSpace(b.TemplateID.Value)
		}
	}
	if b.Rule != nil {
		r, err := ParseRule(*b.Rule)
		if err != nil {
			return err
		}
		d.Rule = r.String()
	}
	if b.Timezone != nil {
		if *b.Timezone == "" || len(*b.Timezone) > 64 || strings.EqualFold(*b.Timezone, "local") {
			return errorf(codeInvalidTZ, "timezone must be an IANA time zone name, such as Europe/Paris")
		}
		if _, err := time.LoadLocation(*b.Timezone); err != nil {
			return errorf(codeInvalidTZ, "unknown time zone %q", *b.Timezone)
		}
		d.Timezone = *b.Timezone
	}
	if b.PerTimezone != nil {
		d.PerTimezone = *b.PerTimezone
	}
	if b.CatchUpMinutes != nil {
		if *b.CatchUpMinutes < 1 || *b.CatchUpMinutes > maxCatchUpMinutes {
			return errorf(CodeInvalidSchedule, "catchUpMinutes must be 1 to %d", maxCatchUpMinutes)
		}
		d.CatchUpMinutes = *b.CatchUpMinutes
	}
	for _, m := range []struct {
		name string
		in   notification.Nullable[string]
		out  **time.Time
	}{{"startsAt", b.StartsAt, &d.StartsAt}, {"endsAt", b.EndsAt, &d.EndsAt}} {
		if !m.in.Set {
			continue
		}
		*m.out = nil
		if m.in.Valued() {
			t, err := time.Parse(time.RFC3339Nano, m.in.Value)
			if err != nil {
				return errorf(CodeInvalidSchedule, "%s must be an RFC 3339 date-time, such as 2026-05-01T09:00:00Z", m.name)
			}
			t = t.UTC().Truncate(time.Millisecond)
			*m.out = &t
		}
	}
	if d.StartsAt != nil && d.EndsAt != nil && !d.EndsAt.After(*d.StartsAt) {
		return errorf(CodeInvalidSchedule, "endsAt must be after startsAt")
	}
	if d.Content == nil && d.TemplateID == "" {
		return errorf(CodeInvalidSchedule, "give content, templateId, or both")
	}
	// The send each occurrence makes must pass a send's checks now.
	timing, err := d.Timing(*sc)
	if err != nil {
		return err
	}
	if err := s.checkSend(ctx, w, *d, s.templates, now); err != nil {
		return err
	}
	def, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("encoding schedule: %w", err)
	}
	sc.Definition = def
	sc.TopicID, sc.SegmentID, sc.ExcludeSegmentID = d.Audience.IDs()
	sc.TemplateID = d.TemplateID
	switch {
	case sc.Status == store.ScheduleActive && wasActive && sc.BudgetWait && sc.NextAt != nil:
		// An occurrence waiting for the budget stays promised: it goes
		// when there is room, and the (new) rule's follow it.
	case sc.Status == store.ScheduleActive:
		sc.NextAt, sc.BudgetWait = nil, false
		if next, ok := timing.Next(now); ok {
			sc.NextAt = &next
		}
	default:
		sc.NextAt, sc.BudgetWait = nil, false
	}
	return nil
}

// NextRuns is up to n of the schedule's next occurrences after now: none
// for a paused schedule. An occurrence waiting (for the budget, or about
// to go) comes first.
func NextRuns(sc store.Schedule, now time.Time, n int) ([]time.Time, error) {
	out := []time.Time{}
	if sc.Status != store.ScheduleActive || sc.NextAt == nil {
		return out, nil
	}
	d, err := Decode(sc)
	if err != nil {
		return nil, err
	}
	t, err := d.Timing(sc)
	if err != nil {
		return nil, err
	}
	from := now
	if sc.NextAt.Before(now) || sc.NextAt.Equal(now) {
		out = append(out, sc.NextAt.UTC())
		from = *sc.NextAt
	}
	return append(out, t.NextN(from, n-len(out))...), nil
}

// set reports whether the body gives any member.
func (b Body) set() bool {
	return b.Name != nil || b.Status != nil || b.Audience != nil || b.Content.Set || b.TemplateID.Set || b.Rule != nil ||
		b.Timezone != nil || b.PerTimezone != nil || b.CatchUpMinutes != nil || b.StartsAt.Set || b.EndsAt.Set
}
