package api

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/goals"
	"github.com/relaybell/relaybell/store"
)

// Codes of the goal routes, and of an automation's goalId, that section 7
// leaves to the service.
const (
	CodeInvalidGoal   = goals.CodeInvalidGoal
	CodeInvalidWindow = goals.CodeInvalidWindow
	// CodeGoalNotFound answers an automation's goalId that names no goal
	// of the website, as segment_not_found answers a segmentId.
	CodeGoalNotFound = "goal_not_found"
)

// goalJSON is a goal as the routes answer it.
type goalJSON struct {
	ID          string           `json:"id"`
	Name        string           `json:"name"`
	Event       *string          `json:"event"`
	Tag         *goalTagJSON     `json:"tag"`
	WindowHours int              `json:"windowHours"`
	Results     []goalResultJSON `json:"results"`
	CreatedAt   time.Time        `json:"created_at"`
	UpdatedAt   time.Time        `json:"updated_at"`
}

type goalTagJSON struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type goalResultJSON struct {
	Source      string  `json:"source"`
	ID          string  `json:"id"`
	Conversions int64   `json:"conversions"`
	Revenue     float64 `json:"revenue"`
}

func goalOut(g store.Goal) goalJSON {
	out := goalJSON{ID: g.ID, Name: g.Name, WindowHours: g.WindowHours, Results: make([]goalResultJSON, len(g.Results)),
		CreatedAt: g.CreatedAt.UTC(), UpdatedAt: g.UpdatedAt.UTC()}
	if g.TagName != "" {
		out.Tag = &goalTagJSON{Name: g.TagName, Value: g.TagValue}
	} else {
		out.Event = &g.Event
	}
	for i, r := range g.Results {
		out.Results[i] = goalResultJSON{Source: r.Source, ID: r.ID, Conversions: r.Conversions, Revenue: r.Revenue}
	}
	return out
}

// handleListGoals serves GET /api/v1/goals, newest first.
func (a *API) handleListGoals(r *request) error {
	list, err := a.st.ListGoals(r.ctx, r.owner.Website.ID)
	if err != nil {
		return err
	}
	return answerList(r, "goals", list, always(goalOut))
}

// handleGetGoal serves GET /api/v1/goals/{id}.
func (a *API) handleGetGoal(r *request) error {
	g, err := a.ownGoal(r)
	if err != nil {
		return err
	}
	return r.json(http.StatusOK, goalOut(g))
}

// handleCreateGoal serves POST /api/v1/goals.
func (a *API) handleCreateGoal(r *request) error {
	d := goals.New()
	if err := checkGoal(r, &d); err != nil {
		return err
	}
	now := r.now.UTC().Truncate(time.Millisecond)
	g := d.Stored(store.Goal{ID: uuid.NewString(), WebsiteID: r.owner.Website.ID, CreatedAt: now, UpdatedAt: now})
	if err := a.st.CreateGoal(r.ctx, g); err != nil {
		return err
	}
	return a.answerGoal(r, http.StatusCreated, g.ID)
}

// handleUpdateGoal serves PUT /api/v1/goals/{id}: the members given
// replace the stored ones (event or tag replaces the other), and the
// result is checked as a whole. Recorded reaches stay.
func (a *API) handleUpdateGoal(r *request) error {
	g, err := a.ownGoal(r)
	if err != nil {
		return err
	}
	d := goals.Of(g)
	if err := checkGoal(r, &d); err != nil {
		return err
	}
	g = d.Stored(g)
	g.UpdatedAt = r.now.UTC().Truncate(time.Millisecond)
	if err := a.st.UpdateGoal(r.ctx, g); errors.Is(err, store.ErrNotFound) {
		return errCode(CodeNotFound)
	} else if err != nil {
		return err
	}
	return a.answerGoal(r, http.StatusOK, g.ID)
}

// handleDeleteGoal serves DELETE /api/v1/goals/{id}: its results go with
// it. An automation that names it keeps the id.
func (a *API) handleDeleteGoal(r *request) error {
	g, err := a.ownGoal(r)
	if err != nil {
		return err
	}
	if err := a.st.DeleteGoal(r.ctx, r.owner.Website.ID, g.ID); errors.Is(err, store.ErrNotFound) {
		return errCode(CodeNotFound)
	} else if err != nil {
		return err
	}
	return r.json(http.StatusOK, okAnswer{OK: true})
}

// checkGoal decodes the body strictly over d and checks the result.
func checkGoal(r *request, d *goals.Definition) error {
	var in goals.Body
	if err := decodeJSON(r.fc.Request.Body(), &in, strict); err != nil {
		return err
	}
	err := d.Apply(in)
	var ge *goals.Error
	if errors.As(err, &ge) {
		return errorf(ge.Code, "%s", ge.Message)
	}
	return err
}

// ownGoal loads the {id} goal of the caller's website.
func (a *API) ownGoal(r *request) (store.Goal, error) {
	return loadOwn(r, "id", a.st.Goal)
}

// answerGoal answers the goal as stored now, with its results.
func (a *API) answerGoal(r *request, status int, id string) error {
	g, err := a.st.Goal(r.ctx, r.owner.Website.ID, id)
	if err != nil {
		return err
	}
	return r.json(status, goalOut(g))
}

func (a *API) goalRoutes(rt *router) {
	add := func(method, pattern, scope string, h func(*request) error) {
		rt.add(&route{method: method, pattern: "/api/v1" + pattern, auth: authKey, scope: scope, handle: h})
	}
	add(http.MethodGet, "/goals", "", a.handleListGoals)
	add(http.MethodPost, "/goals", ScopeSettingsWrite, a.handleCreateGoal)
	add(http.MethodGet, "/goals/{id}", "", a.handleGetGoal)
	add(http.MethodPut, "/goals/{id}", ScopeSettingsWrite, a.handleUpdateGoal)
	add(http.MethodDelete, "/goals/{id}", ScopeSettingsWrite, a.handleDeleteGoal)
}

// tagsChanged records the tag goals people reached as their labels
// changed, each named by subscriber or external id.
func (a *API) tagsChanged(r *request, websiteID string, people []string) error {
	if a.goals == nil {
		return nil
	}
	if err := a.goals.PeopleTagsChanged(r.ctx, websiteID, people, r.now); err != nil {
		return fmt.Errorf("recording goals: %w", err)
	}
	return nil
}
