package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/automations"
	"github.com/relaybell/relaybell/journeys"
	"github.com/relaybell/relaybell/store"
)

// Codes of the journey routes that section 7 leaves to the service.
const (
	CodeInvalidGraph      = journeys.CodeInvalidGraph
	CodeInvalidEntry      = "invalid_entry"
	CodeInvalidReentry    = "invalid_reentry"
	CodeInvalidExitEvents = "invalid_exit_events"
	CodeUnmappedStep      = "unmapped_step"
	CodePersonRequired    = "person_required"
	CodeAlreadyEnrolled   = store.RefusedAlreadyEnrolled
	CodeJourneyNotActive  = store.RefusedNotActive
)

// journeyJSON is a journey as the routes answer it.
type journeyJSON struct {
	ID         string                   `json:"id"`
	Name       string                   `json:"name"`
	Status     string                   `json:"status"`
	Version    int                      `json:"version"`
	Entry      journeys.Entry           `json:"entry"`
	Reentry    journeys.Reentry         `json:"reentry"`
	ExitEvents []string                 `json:"exitEvents"`
	Goal       *journeys.Goal           `json:"goal"`
	Steps      []journeys.Step          `json:"steps"`
	Stats      map[string]stepStatsJSON `json:"stats,omitempty"`
	CreatedAt  time.Time                `json:"created_at"`
	UpdatedAt  time.Time                `json:"updated_at"`
}

type stepStatsJSON struct {
	Entered     int64   `json:"entered"`
	Waiting     int64   `json:"waiting"`
	Completed   int64   `json:"completed"`
	ExitedEarly int64   `json:"exitedEarly"`
	Sent        int64   `json:"sent"`
	Delivered   int64   `json:"delivered"`
	Clicked     int64   `json:"clicked"`
	Converted   int64   `json:"converted"`
	Revenue     float64 `json:"revenue"`
}

func journeyOut(j store.Journey) (journeyJSON, error) {
	d, err := journeys.Decode(j)
	if err != nil {
		return journeyJSON{}, err
	}
	return journeyJSON{ID: j.ID, Name: j.Name, Status: j.Status, Version: j.Version, Entry: d.Entry, Reentry: d.Reentry,
		ExitEvents: d.ExitEvents, Goal: d.Goal, Steps: d.Steps, CreatedAt: j.CreatedAt.UTC(), UpdatedAt: j.UpdatedAt.UTC()}, nil
}

// handleListJourneys serves GET /api/v1/journeys, newest first.
func (a *API) handleListJourneys(r *request) error {
	list, err := a.st.ListJourneys(r.ctx, r.owner.Website.ID)
	if err != nil {
		return err
	}
	return answerList(r, "journeys", list, journeyOut)
}

// handleGetJourney serves GET /api/v1/journeys/{id}, with per-step stats.
func (a *API) handleGetJourney(r *request) error {
	j, err := a.ownJourney(r)
	if err != nil {
		return err
	}
	return a.answerJourney(r, http.StatusOK, j)
}

// handleCreateJourney serves POST /api/v1/journeys.
func (a *API) handleCreateJourney(r *request) error {
	d := journeys.New()
	if err := a.checkJourney(r, &d); err != nil {
		return err
	}
	now := r.now.UTC().Truncate(time.Millisecond)
	j, err := storedJourney(d, store.Journey{ID: uuid.NewString(), WebsiteID: r.owner.Website.ID, Version: 1, CreatedAt: now, UpdatedAt: now})
	if err != nil {
		return err
	}
	if err := a.st.CreateJourney(r.ctx, j); err != nil {
		return err
	}
	if err := a.watchJourneySegment(r, j); err != nil {
		return err
	}
	return a.answerJourney(r, http.StatusCreated, j)
}

// handleUpdateJourney serves PUT /api/v1/journeys/{id}: the members given
// replace the stored ones and the result is checked as a whole. Once
// anyone entered the current version the change is a new version; live
// enrolments stay on theirs.
func (a *API) handleUpdateJourney(r *request) error {
	j, err := a.ownJourney(r)
	if err != nil {
		return err
	}
	d, err := journeys.Decode(j)
	if err != nil {
		return err
	}
	was, wasActive := d.Entry, j.Status == store.AutomationActive
	if err := a.checkJourney(r, &d); err != nil {
		return err
	}
	j.UpdatedAt = r.now.UTC().Truncate(time.Millisecond)
	if j, err = storedJourney(d, j); err != nil {
		return err
	}
	j, err = a.st.UpdateJourney(r.ctx, j)
	if errors.Is(err, store.ErrNotFound) {
		return errCode(CodeNotFound)
	} else if err != nil {
		return err
	}
	if automations.StartsWatching(was, d.Entry, wasActive, j.Status == store.AutomationActive) {
		if err := a.watchJourneySegment(r, j); err != nil {
			return err
		}
	}
	return a.answerJourney(r, http.StatusOK, j)
}

// handleDeleteJourney serves DELETE /api/v1/journeys/{id}: its
// enrolments and pending steps go with it; what it sent stays.
func (a *API) handleDeleteJourney(r *request) error {
	j, err := a.ownJourney(r)
	if err != nil {
		return err
	}
	if err := a.st.DeleteJourney(r.ctx, r.owner.Website.ID, j.ID); errors.Is(err, store.ErrNotFound) {
		return errCode(CodeNotFound)
	} else if err != nil {
		return err
	}
	return r.json(http.StatusOK, okAnswer{OK: true})
}

type migrateBody struct {
	FromVersion *int              `json:"fromVersion"`
	Steps       map[string]string `json:"steps"`
}

// handleMigrateJourney serves POST /api/v1/journeys/{id}/migrate: the
// live enrolments of fromVersion move to the current version at the
// mapped steps, or none does.
func (a *API) handleMigrateJourney(r *request) error {
	j, err := a.ownJourney(r)
	if err != nil {
		return err
	}
	var in migrateBody
	if err := decodeJSON(r.fc.Request.Body(), &in, strict); err != nil {
		return err
	}
	if in.FromVersion == nil || *in.FromVersion < 1 || *in.FromVersion >= j.Version {
		return errorf(CodeInvalidID, "fromVersion is an earlier version of this journey, 1 to %d", j.Version-1)
	}
	if in.Steps == nil {
		in.Steps = map[string]string{}
	}
	n, err := a.journeys.Migrate(r.ctx, j, *in.FromVersion, in.Steps, r.now.UTC())
	var me *journeys.MigrateError
	if errors.As(err, &me) {
		return &Error{Code: CodeUnmappedStep, Message: me.Message, Step: me.Step}
	}
	if err != nil {
		return err
	}
	return r.json(http.StatusOK, map[string]any{"ok": true, "moved": n})
}

// checkJourney decodes the body strictly over d and checks the result.
func (a *API) checkJourney(r *request, d *journeys.Definition) error {
	var in journeys.Body
	if err := decodeJSON(r.fc.Request.Body(), &in, strict); err != nil {
		return err
	}
	d.Apply(in)
	err := d.Check(r.ctx, r.owner.Website, a.st, r.now)
	var je *journeys.Error
	if errors.As(err, &je) {
		return &Error{Code: je.Code, Message: je.Message, Step: je.Step}
	}
	return err
}

// storedJourney is j with d's name, status, entry and definition.
func storedJourney(d journeys.Definition, j store.Journey) (store.Journey, error) {
	def, err := json.Marshal(d)
	if err != nil {
		return store.Journey{}, err
	}
	j.Name, j.Status, j.EntryType, j.Definition = d.Name, d.Status, d.Entry.Type, def
	return j, nil
}

// ownJourney loads the {id} journey of the caller's website.
func (a *API) ownJourney(r *request) (store.Journey, error) {
	return loadOwn(r, "id", a.st.Journey)
}

// answerJourney answers the journey with its per-step stats: every step
// of its current version, and the steps of older versions that have any.
func (a *API) answerJourney(r *request, status int, j store.Journey) error {
	out, err := journeyOut(j)
	if err != nil {
		return err
	}
	stats, err := a.st.JourneyStepStats(r.ctx, r.owner.Website.ID, j.ID)
	if err != nil {
		return err
	}
	out.Stats = map[string]stepStatsJSON{}
	for _, s := range out.Steps {
		out.Stats[s.ID] = stepStatsJSON{}
	}
	for id, s := range stats {
		out.Stats[id] = stepStatsJSON{Entered: s.Entered, Waiting: s.Waiting, Completed: s.Completed, ExitedEarly: s.ExitedEarly,
			Sent: s.Sent, Delivered: s.Delivered, Clicked: s.Clicked, Converted: s.Converted, Revenue: s.Revenue}
	}
	return r.json(status, out)
}

// enrollmentJSON is an enrolment as the routes answer it.
type enrollmentJSON struct {
	ID           string        `json:"id"`
	JourneyID    string        `json:"journeyId"`
	SubscriberID string        `json:"subscriberId"`
	ExternalID   *string       `json:"externalId"`
	Version      int           `json:"version"`
	State        string        `json:"state"`
	CurrentStep  string        `json:"currentStep"`
	Waiting      bool          `json:"waiting"`
	EnteredAt    time.Time     `json:"enteredAt"`
	UpdatedAt    time.Time     `json:"updatedAt"`
	EndedAt      *time.Time    `json:"endedAt"`
	History      []historyJSON `json:"history,omitempty"`
}

type historyJSON struct {
	StepID         string    `json:"stepId"`
	Type           string    `json:"type"`
	At             time.Time `json:"at"`
	Outcome        string    `json:"outcome"`
	NotificationID *string   `json:"notificationId"`
}

func enrollmentOut(e store.Enrollment) enrollmentJSON {
	out := enrollmentJSON{ID: e.ID, JourneyID: e.JourneyID, SubscriberID: e.SubscriberID, Version: e.Version, State: e.State,
		CurrentStep: e.CurrentStep, Waiting: e.Waiting, EnteredAt: e.EnteredAt.UTC(), UpdatedAt: e.UpdatedAt.UTC()}
	if e.ExternalID != "" {
		out.ExternalID = &e.ExternalID
	}
	if e.EndedAt != nil {
		t := e.EndedAt.UTC()
		out.EndedAt = &t
	}
	return out
}

type enrollBody struct {
	ExternalID   *string `json:"externalId"`
	SubscriberID *string `json:"subscriberId"`
}

// handleEnroll serves POST /api/v1/journeys/{id}/enrollments.
func (a *API) handleEnroll(r *request) error {
	j, err := a.ownJourney(r)
	if err != nil {
		return err
	}
	var in enrollBody
	if err := decodeJSON(r.fc.Request.Body(), &in, strict); err != nil {
		return err
	}
	p, err := a.enrollee(r, in)
	if err != nil {
		return err
	}
	id, refused, err := a.journeys.Enroll(r.ctx, j, p.ID, r.now.UTC().Truncate(time.Millisecond))
	switch {
	case errors.Is(err, store.ErrNotFound):
		return errCode(CodeNotFound)
	case err != nil:
		return err
	case refused == store.RefusedNotActive:
		return errorf(CodeJourneyNotActive, "the journey is %s; only an active journey enrols", j.Status)
	case refused != "":
		return errorf(CodeAlreadyEnrolled, "the person has a live enrolment in this journey, or its reentry rule keeps them out")
	}
	return r.json(http.StatusCreated, map[string]string{"enrollmentId": id})
}

// enrollee is the person a body names: exactly one of externalId and
// subscriberId.
func (a *API) enrollee(r *request, in enrollBody) (store.Person, error) {
	key, match := "", func(store.Person) bool { return false }
	switch {
	case (in.ExternalID == nil) == (in.SubscriberID == nil):
		return store.Person{}, errorf(CodePersonRequired, "name the person with exactly one of externalId and subscriberId")
	case in.ExternalID != nil:
		key = *in.ExternalID
		match = func(p store.Person) bool { return p.ExternalID == key }
	default:
		key = strings.ToLower(*in.SubscriberID)
		match = func(p store.Person) bool { return p.ID == key }
	}
	if strings.TrimSpace(key) == "" {
		return store.Person{}, errorf(CodePersonRequired, "name the person with exactly one of externalId and subscriberId")
	}
	p, err := a.st.Person(r.ctx, r.owner.Website.ID, key)
	if errors.Is(err, store.ErrNotFound) || err == nil && !match(p) {
		return store.Person{}, errorf(CodeNotFound, "no such person on this website")
	}
	return p, err
}

// handleListEnrollments serves GET /api/v1/journeys/{id}/enrollments,
// newest first, narrowed by externalId or subscriberId.
func (a *API) handleListEnrollments(r *request) error {
	j, err := a.ownJourney(r)
	if err != nil {
		return err
	}
	q := store.EnrollmentQuery{WebsiteID: r.owner.Website.ID, JourneyID: j.ID, Limit: maxEnrollmentList}
	args := r.fc.QueryArgs()
	if args.Has("externalId") || args.Has("subscriberId") {
		in := enrollBody{}
		if args.Has("externalId") {
			v := string(args.Peek("externalId"))
			in.ExternalID = &v
		}
		if args.Has("subscriberId") {
			v := string(args.Peek("subscriberId"))
			in.SubscriberID = &v
		}
		p, err := a.enrollee(r, in)
		var apiErr *Error
		if errors.As(err, &apiErr) && apiErr.Code == CodeNotFound {
			return r.json(http.StatusOK, map[string]any{"enrollments": []enrollmentJSON{}})
		}
		if err != nil {
			return err
		}
		q.SubscriberID = p.ID
	}
	return a.answerEnrollments(r, q)
}

// maxEnrollmentList bounds an enrolment list (newest first).
const maxEnrollmentList = 500

func (a *API) answerEnrollments(r *request, q store.EnrollmentQuery) error {
	list, err := a.st.ListEnrollments(r.ctx, q)
	if err != nil {
		return err
	}
	return answerList(r, "enrollments", list, always(enrollmentOut))
}

// handlePersonEnrollments serves GET /api/v1/subscribers/{externalId}/
// enrollments: a person's enrolments across journeys (the person's page),
// named by external id or subscriber id.
func (a *API) handlePersonEnrollments(r *request) error {
	p, err := a.st.Person(r.ctx, r.owner.Website.ID, r.param("externalId"))
	if errors.Is(err, store.ErrNotFound) {
		return errCode(CodeNotFound)
	}
	if err != nil {
		return err
	}
	return a.answerEnrollments(r, store.EnrollmentQuery{WebsiteID: r.owner.Website.ID, SubscriberID: p.ID, Limit: maxEnrollmentList})
}

// ownEnrollment loads the {enrollmentId} enrolment of the {id} journey.
func (a *API) ownEnrollment(r *request) (store.Enrollment, error) {
	j, err := a.ownJourney(r)
	if err != nil {
		return store.Enrollment{}, err
	}
	e, err := loadOwn(r, "enrollmentId", a.st.Enrollment)
	if err == nil && e.JourneyID != j.ID {
		return store.Enrollment{}, errCode(CodeNotFound)
	}
	return e, err
}

// handleGetEnrollment serves GET /api/v1/journeys/{id}/enrollments/
// {enrollmentId}: the enrolment with its history, each step taken and
// why.
func (a *API) handleGetEnrollment(r *request) error {
	e, err := a.ownEnrollment(r)
	if err != nil {
		return err
	}
	return a.answerEnrollment(r, e.ID)
}

func (a *API) answerEnrollment(r *request, id string) error {
	e, err := a.st.Enrollment(r.ctx, r.owner.Website.ID, id)
	if err != nil {
		return err
	}
	hist, err := a.st.EnrollmentHistory(r.ctx, e.ID)
	if err != nil {
		return err
	}
	out := enrollmentOut(e)
	out.History = make([]historyJSON, len(hist))
	for i, h := range hist {
		out.History[i] = historyJSON{StepID: h.StepID, Type: h.Type, At: h.At.UTC(), Outcome: h.Outcome}
		if h.NotificationID != "" {
			out.History[i].NotificationID = &hist[i].NotificationID
		}
	}
	return r.json(http.StatusOK, struct {
		enrollmentJSON
		History []historyJSON `json:"history"`
	}{out, out.History})
}

// handleEndEnrollment serves DELETE /api/v1/journeys/{id}/enrollments/
// {enrollmentId}: a live enrolment ends (state exited); it answers the
// enrolment now.
func (a *API) handleEndEnrollment(r *request) error {
	e, err := a.ownEnrollment(r)
	if err != nil {
		return err
	}
	if _, err := a.journeys.End(r.ctx, e, r.now.UTC().Truncate(time.Millisecond)); err != nil {
		return err
	}
	return a.answerEnrollment(r, e.ID)
}

func (a *API) journeyRoutes(rt *router) {
	if a.journeys == nil {
		return
	}
	add := func(method, pattern, scope string, h func(*request) error) {
		rt.add(&route{method: method, pattern: "/api/v1" + pattern, auth: authKey, scope: scope, handle: h})
	}
	add(http.MethodGet, "/journeys", "", a.handleListJourneys)
	add(http.MethodPost, "/journeys", ScopeSettingsWrite, a.handleCreateJourney)
	add(http.MethodGet, "/journeys/{id}", "", a.handleGetJourney)
	add(http.MethodPut, "/journeys/{id}", ScopeSettingsWrite, a.handleUpdateJourney)
	add(http.MethodDelete, "/journeys/{id}", ScopeSettingsWrite, a.handleDeleteJourney)
	add(http.MethodPost, "/journeys/{id}/migrate", ScopeSettingsWrite, a.handleMigrateJourney)
	add(http.MethodPost, "/journeys/{id}/enrollments", ScopeEventsWrite, a.handleEnroll)
	add(http.MethodGet, "/journeys/{id}/enrollments", "", a.handleListEnrollments)
	add(http.MethodGet, "/journeys/{id}/enrollments/{enrollmentId}", "", a.handleGetEnrollment)
	add(http.MethodDelete, "/journeys/{id}/enrollments/{enrollmentId}", ScopeEventsWrite, a.handleEndEnrollment)
	add(http.MethodGet, "/subscribers/{externalId}/enrollments", ScopeSubscribersRead, a.handlePersonEnrollments)
}

// watchJourneySegment records who is in a segment_entered journey's
// segment as it starts watching it: they are in already, and do not
// enter.
func (a *API) watchJourneySegment(r *request, j store.Journey) error {
	if j.EntryType != automations.TriggerSegmentEntered {
		return nil
	}
	if err := a.journeys.WatchSegment(r.ctx, j); err != nil {
		return fmt.Errorf("reading the journey's segment: %w", err)
	}
	return nil
}

// journeysSubscribed enrols a person whose browser just subscribed, or
// who opted into topics, in the journeys entered so (events reach the
// journeys through package events).
func (a *API) journeysSubscribed(r *request, websiteID string, res store.SubscriptionResult) error {
	if a.journeys == nil {
		return nil
	}
	if res.Created {
		if _, err := a.journeys.Subscribed(r.ctx, websiteID, res.SubscriberID, r.now); err != nil {
			return err
		}
	}
	_, err := a.journeys.TopicOptIn(r.ctx, websiteID, res.SubscriberID, res.OptedIn, r.now)
	return err
}

// journeysPinged moves on an enrolment waiting for the delivery or click
// of its send, a journey's (every journey send names its journey: the
// others, a broadcast's receipts, read nothing more). The ping is stored
// already, so a failure is logged.
func (a *API) journeysPinged(r *request, kind string, n store.Notification) {
	if a.journeys == nil || n.JourneyID == "" {
		return
	}
	if err := a.journeys.Interaction(r.ctx, n.ID, kind, r.now.UTC()); err != nil {
		a.log.Warn("moving a journey on a ping", "request_id", r.id, "notification_id", n.ID, "err", err)
	}
}
