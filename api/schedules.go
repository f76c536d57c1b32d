package api

import (
	"errors"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/notification"
	"github.com/relaybell/relaybell/schedules"
	"github.com/relaybell/relaybell/store"
)

// Codes of the schedule routes that section 7 leaves to the service.
const (
	CodeInvalidRule     = schedules.CodeInvalidRule
	CodeInvalidAudience = schedules.CodeInvalidAudience
	CodeInvalidSchedule = schedules.CodeInvalidSchedule
)

// scheduleHistory is how many of the latest occurrences the detail shows.
const scheduleHistory = 20

// scheduleNextRuns is how many next occurrences the detail shows.
const scheduleNextRuns = 5

// scheduleJSON is a schedule as the routes answer it.
type scheduleJSON struct {
	ID             string                `json:"id"`
	Name           string                `json:"name"`
	Status         string                `json:"status"`
	PausedReason   *string               `json:"pausedReason"`
	Audience       notification.Audience `json:"audience"`
	Content        *schedules.Content    `json:"content"`
	TemplateID     *string               `json:"templateId"`
	Rule           string                `json:"rule"`
	Timezone       string                `json:"timezone"`
	PerTimezone    bool                  `json:"perTimezone"`
	CatchUpMinutes int                   `json:"catchUpMinutes"`
	StartsAt       *string               `json:"startsAt"`
	EndsAt         *string               `json:"endsAt"`
	NextRun        *string               `json:"nextRun"`
	LastRefusal    *scheduleRefusalJSON  `json:"lastRefusal"`
	CreatedAt      string                `json:"created_at"`
	UpdatedAt      string                `json:"updated_at"`
}

type scheduleRefusalJSON struct {
	At         string  `json:"at"`
	Occurrence string  `json:"occurrence"`
	RetryAt    *string `json:"retryAt"`
	Reason     string  `json:"reason"`
}

type scheduleOccurrenceJSON struct {
	Occurrence     string  `json:"occurrence"`
	Outcome        string  `json:"outcome"`
	NotificationID *string `json:"notificationId"`
	At             string  `json:"at"`
}

func apiTime(t time.Time) string { return t.UTC().Format(notification.TimeLayout) }

func scheduleOut(sc store.Schedule) (scheduleJSON, error) {
	d, err := schedules.Decode(sc)
	if err != nil {
		return scheduleJSON{}, err
	}
	out := scheduleJSON{ID: sc.ID, Name: sc.Name, Status: sc.Status, Audience: d.Audience, Content: d.Content,
		Rule: d.Rule, Timezone: d.Timezone, PerTimezone: d.PerTimezone, CatchUpMinutes: d.CatchUpMinutes,
		StartsAt: notification.TimeOrNil(d.StartsAt), EndsAt: notification.TimeOrNil(d.EndsAt),
		CreatedAt: apiTime(sc.CreatedAt), UpdatedAt: apiTime(sc.UpdatedAt)}
	if sc.PausedReason != "" {
		out.PausedReason = &sc.PausedReason
	}
	if d.TemplateID != "" {
		out.TemplateID = &d.TemplateID
	}
	if sc.Status == store.ScheduleActive {
		out.NextRun = notification.TimeOrNil(sc.NextAt)
	}
	if r := sc.Refusal; r != nil {
		out.LastRefusal = &scheduleRefusalJSON{At: apiTime(r.At), Occurrence: apiTime(r.Occurrence), Reason: r.Reason}
		if !r.RetryAt.IsZero() {
			out.LastRefusal.RetryAt = notification.TimeOrNil(&r.RetryAt)
		}
	}
	return out, nil
}

// handleListSchedules serves GET /api/v1/schedules, newest first.
func (a *API) handleListSchedules(r *request) error {
	list, err := a.st.ListSchedules(r.ctx, r.owner.Website.ID)
	if err != nil {
		return err
	}
	return answerList(r, "schedules", list, scheduleOut)
}

// handleGetSchedule serves GET /api/v1/schedules/{id}: the schedule with
// its next five runs and its latest occurrences (sent or skipped).
func (a *API) handleGetSchedule(r *request) error {
	sc, err := loadOwn(r, "id", a.st.Schedule)
	if err != nil {
		return err
	}
	return a.answerSchedule(r, http.StatusOK, sc)
}

// handleCreateSchedule serves POST /api/v1/schedules.
func (a *API) handleCreateSchedule(r *request) error {
	var b schedules.Body
	if err := decodeJSON(r.fc.Request.Body(), &b, strict); err != nil {
		return err
	}
	sc, err := a.schedules.Create(r.ctx, r.owner.Website, uuid.NewString(), b, r.now)
	if err != nil {
		return scheduleError(err)
	}
	return a.answerSchedule(r, http.StatusCreated, sc)
}

// handleUpdateSchedule serves PUT /api/v1/schedules/{id}: the members
// given replace the stored ones, the whole is checked again, and the next
// run is computed from now.
func (a *API) handleUpdateSchedule(r *request) error {
	sc, err := loadOwn(r, "id", a.st.Schedule)
	if err != nil {
		return err
	}
	var b schedules.Body
	if err := decodeJSON(r.fc.Request.Body(), &b, strict); err != nil {
		return err
	}
	sc, err = a.schedules.Update(r.ctx, r.owner.Website, sc, b, r.now)
	if errors.Is(err, store.ErrNotFound) {
		return errCode(CodeNotFound)
	} else if err != nil {
		return scheduleError(err)
	}
	return a.answerSchedule(r, http.StatusOK, sc)
}

// handleDeleteSchedule serves DELETE /api/v1/schedules/{id}: its history
// goes with it, its notifications stay.
func (a *API) handleDeleteSchedule(r *request) error {
	sc, err := loadOwn(r, "id", a.st.Schedule)
	if err != nil {
		return err
	}
	if err := a.st.DeleteSchedule(r.ctx, r.owner.Website.ID, sc.ID); errors.Is(err, store.ErrNotFound) {
		return errCode(CodeNotFound)
	} else if err != nil {
		return err
	}
	return r.json(http.StatusOK, okAnswer{OK: true})
}

// answerSchedule answers the schedule as stored now, with its next runs
// and history.
func (a *API) answerSchedule(r *request, status int, sc store.Schedule) error {
	sc, err := a.st.Schedule(r.ctx, r.owner.Website.ID, sc.ID)
	if err != nil {
		return err
	}
	out, err := scheduleOut(sc)
	if err != nil {
		return err
	}
	runs, err := schedules.NextRuns(sc, r.now, scheduleNextRuns)
	if err != nil {
		return err
	}
	detail := scheduleDetailJSON{scheduleJSON: out, NextRuns: make([]string, len(runs))}
	for i, t := range runs {
		detail.NextRuns[i] = apiTime(t)
	}
	history, err := a.st.ScheduleRuns(r.ctx, r.owner.Website.ID, sc.ID, scheduleHistory)
	if err != nil {
		return err
	}
	detail.History = make([]scheduleOccurrenceJSON, len(history))
	for i, h := range history {
		detail.History[i] = scheduleOccurrenceJSON{Occurrence: apiTime(h.Occurrence), Outcome: h.Outcome, At: apiTime(h.At)}
		if h.NotificationID != "" {
			detail.History[i].NotificationID = &h.NotificationID
		}
	}
	return r.json(status, detail)
}

// scheduleDetailJSON is a schedule as GET /schedules/{id}, POST and PUT
// answer it: with its next five runs (nextRuns, none when paused or
// ended) and its latest occurrences, the latest first (history: sent, or
// skipped as missed by more than catchUpMinutes).
type scheduleDetailJSON struct {
	scheduleJSON
	NextRuns []string                 `json:"nextRuns"`
	History  []scheduleOccurrenceJSON `json:"history"`
}

// scheduleError maps the schedules package's refusals onto the catalog.
func scheduleError(err error) error {
	var se *schedules.Error
	if errors.As(err, &se) {
		return errorf(se.Code, "%s", se.Message)
	}
	var ne *notification.Error
	if errors.As(err, &ne) {
		return fromNotificationError(err)
	}
	return err
}

func (a *API) scheduleRoutes(rt *router) {
	if a.schedules == nil {
		return
	}
	add := func(method, pattern, scope string, h func(*request) error) {
		rt.add(&route{method: method, pattern: "/api/v1" + pattern, auth: authKey, scope: scope, handle: h})
	}
	add(http.MethodGet, "/schedules", "", a.handleListSchedules)
	add(http.MethodPost, "/schedules", ScopeSettingsWrite, a.handleCreateSchedule)
	add(http.MethodGet, "/schedules/{id}", "", a.handleGetSchedule)
	add(http.MethodPut, "/schedules/{id}", ScopeSettingsWrite, a.handleUpdateSchedule)
	add(http.MethodDelete, "/schedules/{id}", ScopeSettingsWrite, a.handleDeleteSchedule)
}
