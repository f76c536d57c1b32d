package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/automations"
	"github.com/relaybell/relaybell/store"
)

// Codes of the automation routes that section 7 leaves to the service.
const (
	CodeInvalidTrigger    = "invalid_trigger"
	CodeInvalidStopEvents = "invalid_stop_events"
	CodeInvalidMessages   = "invalid_messages"
	CodeInvalidCaps       = "invalid_caps"
)

// automationJSON is an automation as the routes answer it.
type automationJSON struct {
	ID            string                `json:"id"`
	Name          string                `json:"name"`
	Status        string                `json:"status"`
	Trigger       automations.Trigger   `json:"trigger"`
	StopEvents    []string              `json:"stopEvents"`
	Restart       bool                  `json:"restart"`
	Messages      []automations.Message `json:"messages"`
	Caps          automations.Caps      `json:"caps"`
	Transactional bool                  `json:"transactional"`
	GoalID        *string               `json:"goalId"`
	Stats         automationStatsJSON   `json:"stats"`
	CreatedAt     time.Time             `json:"created_at"`
	UpdatedAt     time.Time             `json:"updated_at"`
}

type automationStatsJSON struct {
	Triggered int64   `json:"triggered"`
	Pending   int64   `json:"pending"`
	Sent      int64   `json:"sent"`
	Delivered int64   `json:"delivered"`
	Clicked   int64   `json:"clicked"`
	Converted int64   `json:"converted"`
	Revenue   float64 `json:"revenue"`
	Stopped   int64   `json:"stopped"`
}

func automationOut(a store.Automation) (automationJSON, error) {
	d, err := automations.Decode(a)
	if err != nil {
		return automationJSON{}, err
	}
	s := a.Stats
	var goalID *string
	if d.GoalID != "" {
		goalID = &d.GoalID
	}
	return automationJSON{GoalID: goalID, ID: a.ID, Name: a.Name, Status: a.Status, Trigger: d.Trigger, StopEvents: d.StopEvents,
		Restart: d.Restart, Messages: d.Messages, Caps: d.Caps, Transactional: d.Transactional,
		Stats: automationStatsJSON{Triggered: s.Triggered, Pending: s.Pending, Sent: s.Sent, Delivered: s.Delivered,
			Clicked: s.Clicked, Converted: s.Converted, Revenue: s.Revenue, Stopped: s.Stopped},
		CreatedAt: a.CreatedAt.UTC(), UpdatedAt: a.UpdatedAt.UTC()}, nil
}

// handleListAutomations serves GET /api/v1/automations, newest first.
func (a *API) handleListAutomations(r *request) error {
	list, err := a.st.ListAutomations(r.ctx, r.owner.Website.ID)
	if err != nil {
		return err
	}
	return answerList(r, "automations", list, automationOut)
}

// handleGetAutomation serves GET /api/v1/automations/{id}.
func (a *API) handleGetAutomation(r *request) error {
	au, err := a.ownAutomation(r)
	if err != nil {
		return err
	}
	return a.answerAutomation(r, http.StatusOK, au.ID)
}

// handleCreateAutomation serves POST /api/v1/automations.
func (a *API) handleCreateAutomation(r *request) error {
	d := automations.New()
	if err := a.checkAutomation(r, &d); err != nil {
		return err
	}
	now := r.now.UTC().Truncate(time.Millisecond)
	au, err := storedAutomation(d, store.Automation{ID: uuid.NewString(), WebsiteID: r.owner.Website.ID, CreatedAt: now, UpdatedAt: now})
	if err != nil {
		return err
	}
	if err := a.st.CreateAutomation(r.ctx, au); err != nil {
		return err
	}
	if err := a.watchSegment(r, au); err != nil {
		return err
	}
	return a.answerAutomation(r, http.StatusCreated, au.ID)
}

// handleUpdateAutomation serves PUT /api/v1/automations/{id}: the members
// given replace the stored ones, and the result is checked as a whole.
// Pending runs keep their timers; each message is read when it comes due.
func (a *API) handleUpdateAutomation(r *request) error {
	au, err := a.ownAutomation(r)
	if err != nil {
		return err
	}
	d, err := automations.Decode(au)
	if err != nil {
		return err
	}
	was := d.Trigger
	wasActive := au.Status == store.AutomationActive
	if err := a.checkAutomation(r, &d); err != nil {
		return err
	}
	au.UpdatedAt = r.now.UTC().Truncate(time.Millisecond)
	if au, err = storedAutomation(d, au); err != nil {
		return err
	}
	if err := a.st.UpdateAutomation(r.ctx, au); errors.Is(err, store.ErrNotFound) {
		return errCode(CodeNotFound)
	} else if err != nil {
		return err
	}
	if automations.StartsWatching(was, d.Trigger, wasActive, au.Status == store.AutomationActive) {
		if err := a.watchSegment(r, au); err != nil {
			return err
		}
	}
	return a.answerAutomation(r, http.StatusOK, au.ID)
}

// handleDeleteAutomation serves DELETE /api/v1/automations/{id}: its
// pending messages go with it; what it sent stays.
func (a *API) handleDeleteAutomation(r *request) error {
	au, err := a.ownAutomation(r)
	if err != nil {
		return err
	}
	if err := a.st.DeleteAutomation(r.ctx, r.owner.Website.ID, au.ID); errors.Is(err, store.ErrNotFound) {
		return errCode(CodeNotFound)
	} else if err != nil {
		return err
	}
	return r.json(http.StatusOK, okAnswer{OK: true})
}

// checkAutomation decodes the body strictly over d and checks the result.
func (a *API) checkAutomation(r *request, d *automations.Definition) error {
	var in automations.Body
	if err := decodeJSON(r.fc.Request.Body(), &in, strict); err != nil {
		return err
	}
	d.Apply(in)
	err := d.Check(r.ctx, r.owner.Website, a.st, r.now)
	var ae *automations.Error
	if errors.As(err, &ae) {
		return errorf(ae.Code, "%s", ae.Message)
	}
	return err
}

// storedAutomation is au with d's name, status, trigger and definition.
func storedAutomation(d automations.Definition, au store.Automation) (store.Automation, error) {
	def, err := json.Marshal(d)
	if err != nil {
		return store.Automation{}, err
	}
	au.Name, au.Status, au.TriggerType, au.Definition = d.Name, d.Status, d.Trigger.Type, def
	return au, nil
}

// ownAutomation loads the {id} automation of the caller's website.
func (a *API) ownAutomation(r *request) (store.Automation, error) {
	return loadOwn(r, "id", a.st.Automation)
}

// answerAutomation answers the automation as stored now, with its stats.
func (a *API) answerAutomation(r *request, status int, id string) error {
	au, err := a.st.Automation(r.ctx, r.owner.Website.ID, id)
	if err != nil {
		return err
	}
	out, err := automationOut(au)
	if err != nil {
		return err
	}
	return r.json(status, out)
}

func (a *API) automationRoutes(rt *router) {
	add := func(method, pattern, scope string, h func(*request) error) {
		rt.add(&route{method: method, pattern: "/api/v1" + pattern, auth: authKey, scope: scope, handle: h})
	}
	add(http.MethodGet, "/automations", "", a.handleListAutomations)
	add(http.MethodPost, "/automations", ScopeSettingsWrite, a.handleCreateAutomation)
	add(http.MethodGet, "/automations/{id}", "", a.handleGetAutomation)
	add(http.MethodPut, "/automations/{id}", ScopeSettingsWrite, a.handleUpdateAutomation)
	add(http.MethodDelete, "/automations/{id}", ScopeSettingsWrite, a.handleDeleteAutomation)
}

// watchSegment records who is in a segment_entered automation's segment
// as it starts watching it: they are in already, and do not enter.
func (a *API) watchSegment(r *request, au store.Automation) error {
	if a.automations == nil || au.TriggerType != automations.TriggerSegmentEntered {
		return nil
	}
	if err := a.automations.WatchSegment(r.ctx, au); err != nil {
		return fmt.Errorf("reading the automation's segment: %w", err)
	}
	return nil
}
