package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/feeds"
	"github.com/relaybell/relaybell/store"
)

// Codes of the feed routes that section 7 leaves to the service.
const (
	CodeInvalidTemplate     = feeds.CodeInvalidTemplate
	CodeInvalidPollMinutes  = feeds.CodeInvalidPollMinutes
	CodeInvalidMaxPerPoll   = feeds.CodeInvalidMaxPerPoll
	CodeInvalidSendExisting = feeds.CodeInvalidSendExisting
	// CodePollInProgress answers POST /feeds/{id}/poll while another poll
	// of the feed (the poller's, or another request's) holds it.
	CodePollInProgress = "poll_in_progress"
	// CodeFeedPaused answers POST /feeds/{id}/poll for a paused feed.
	CodeFeedPaused = "feed_paused"
)

// feedJSON is a feed as the routes answer it.
type feedJSON struct {
	ID              string          `json:"id"`
	Name            string          `json:"name"`
	URL             string          `json:"url"`
	Audience        json.RawMessage `json:"audience"`
	Template        json.RawMessage `json:"template"`
	Status          string          `json:"status"`
	PausedReason    *string         `json:"pausedReason"`
	PollMinutes     int             `json:"pollMinutes"`
	MaxPerPoll      int             `json:"maxPerPoll"`
	SendExisting    int             `json:"sendExisting"`
	LastPoll        *feedPollJSON   `json:"lastPoll"`
	NextPollAt      *time.Time      `json:"nextPollAt"`
	FailingSince    *time.Time      `json:"failingSince"`
	BudgetRefusedAt *time.Time      `json:"budgetRefusedAt"`
	Pending         int64           `json:"pending"`
	Sent            int64           `json:"sent"`
	CreatedAt       time.Time       `json:"created_at"`
	UpdatedAt       time.Time       `json:"updated_at"`
}

// feedPollJSON is a poll's outcome: lastPoll of a feed.
type feedPollJSON struct {
	At         time.Time `json:"at"`
	HTTPStatus *int      `json:"httpStatus"` // null when no answer came
	NewItems   int       `json:"newItems"`
	Error      *string   `json:"error"`
}

func feedPollOut(p store.FeedPoll) *feedPollJSON {
	out := &feedPollJSON{At: p.At.UTC(), NewItems: p.NewItems, Error: nullIfEmpty(p.Error)}
	if p.HTTPStatus != 0 {
		out.HTTPStatus = &p.HTTPStatus
	}
	return out
}

func nullIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func feedOut(f store.Feed) feedJSON {
	out := feedJSON{ID: f.ID, Name: f.Name, URL: f.URL, Audience: f.Audience, Template: f.Template, Status: f.Status,
		PausedReason: nullIfEmpty(f.PausedReason), PollMinutes: f.PollMinutes, MaxPerPoll: f.MaxPerPoll,
		SendExisting: f.SendExisting, FailingSince: utcPtr(f.FailingSince), BudgetRefusedAt: utcPtr(f.BudgetRefusedAt),
		Pending: f.Pending, Sent: f.Sent, CreatedAt: f.CreatedAt.UTC(), UpdatedAt: f.UpdatedAt.UTC()}
	if f.LastPoll != nil {
		out.LastPoll = feedPollOut(*f.LastPoll)
	}
	if f.Status == store.FeedActive {
		next := f.NextPollAt.UTC()
		out.NextPollAt = &next
	}
	return out
}

// handleListFeeds serves GET /api/v1/feeds, newest first.
func (a *API) handleListFeeds(r *request) error {
	list, err := a.st.ListFeeds(r.ctx, r.owner.Website.ID)
	if err != nil {
		return err
	}
	return answerList(r, "feeds", list, always(feedOut))
}

// handleGetFeed serves GET /api/v1/feeds/{id}.
func (a *API) handleGetFeed(r *request) error {
	return answerOwn(r, a.st.Feed, always(feedOut))
}

// handleCreateFeed serves POST /api/v1/feeds: the feed is due at once;
// its first poll records the items present as seen (but the sendExisting
// newest).
func (a *API) handleCreateFeed(r *request) error {
	d := feeds.New()
	if err := a.checkFeed(r, &d, true); err != nil {
		return err
	}
	now := r.now.UTC().Truncate(time.Millisecond)
	f, err := d.Stored(store.Feed{ID: uuid.NewString(), WebsiteID: r.owner.Website.ID, NextPollAt: now, CreatedAt: now, UpdatedAt: now})
	if err != nil {
		return err
	}
	if err := a.st.CreateFeed(r.ctx, f); err != nil {
		return err
	}
	return a.answerFeed(r, http.StatusCreated, f.ID)
}

// handleUpdateFeed serves PUT /api/v1/feeds/{id}: the members given
// replace the stored ones and the result is checked as a whole. A feed
// turned on again, or given another url, is due at once; turned on, it
// forgets why it was paused.
func (a *API) handleUpdateFeed(r *request) error {
	f, err := loadOwn(r, "id", a.st.Feed)
	if err != nil {
		return err
	}
	d, err := feeds.Of(f)
	if err != nil {
		return err
	}
	wasActive, oldURL := f.Status == store.FeedActive, f.URL
	if err := a.checkFeed(r, &d, false); err != nil {
		return err
	}
	if f, err = d.Stored(f); err != nil {
		return err
	}
	now := r.now.UTC().Truncate(time.Millisecond)
	if f.Status == store.FeedActive && (!wasActive || f.URL != oldURL) {
		f.NextPollAt = now
	}
	if f.Status == store.FeedActive || wasActive {
		f.PausedReason = "" // turned on, or paused by a person
	}
	f.UpdatedAt = now
	if err := a.st.UpdateFeed(r.ctx, f); errors.Is(err, store.ErrNotFound) {
		return errCode(CodeNotFound)
	} else if err != nil {
		return err
	}
	return a.answerFeed(r, http.StatusOK, f.ID)
}

// handleDeleteFeed serves DELETE /api/v1/feeds/{id}: its ledger goes with
// it; its notifications stay.
func (a *API) handleDeleteFeed(r *request) error {
	f, err := loadOwn(r, "id", a.st.Feed)
	if err != nil {
		return err
	}
	if err := a.st.DeleteFeed(r.ctx, r.owner.Website.ID, f.ID); errors.Is(err, store.ErrNotFound) {
		return errCode(CodeNotFound)
	} else if err != nil {
		return err
	}
	return r.json(http.StatusOK, okAnswer{OK: true})
}

// pollAnswer is the answer of POST /feeds/{id}/poll: the poll's outcome,
// as lastPoll shows it, with what it sent.
type pollAnswer struct {
	feedPollJSON
	Sent          int     `json:"sent"`
	BudgetRefused bool    `json:"budgetRefused"`
	PausedReason  *string `json:"pausedReason"`
}

// handlePollFeed serves POST /api/v1/feeds/{id}/poll: it polls the feed
// now, as the poller would, and answers the outcome.
func (a *API) handlePollFeed(r *request) error {
	f, err := loadOwn(r, "id", a.st.Feed)
	if err != nil {
		return err
	}
	out, err := a.feeds.PollNow(r.ctx, r.owner.Website.ID, f.ID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return errCode(CodeNotFound)
	case errors.Is(err, feeds.ErrPaused):
		return errorf(CodeFeedPaused, "the feed is paused; turn it on with {\"status\": \"active\"} first")
	case errors.Is(err, feeds.ErrPollInProgress):
		return errorf(CodePollInProgress, "a poll of this feed is in progress; try again in a moment")
	case err != nil:
		return fmt.Errorf("polling feed: %w", err)
	}
	return r.json(http.StatusOK, pollAnswer{feedPollJSON: *feedPollOut(out.FeedPoll), Sent: out.Sent,
		BudgetRefused: out.BudgetRefused, PausedReason: nullIfEmpty(out.Paused)})
}

// checkFeed decodes the body strictly over d and checks the result, and
// its audience and template against the website.
func (a *API) checkFeed(r *request, d *feeds.Definition, create bool) error {
	var in feeds.Body
	if err := decodeJSON(r.fc.Request.Body(), &in, strict); err != nil {
		return err
	}
	err := d.Apply(in, create)
	if err == nil {
		err = a.feeds.Check(r.ctx, d, r.owner.Website)
	}
	var fe *feeds.Error
	if errors.As(err, &fe) {
		if _, ok := catalog[fe.Code]; !ok {
			return fmt.Errorf("feed error outside the catalog: %w", err)
		}
		return errorf(fe.Code, "%s", fe.Message)
	}
	return err
}

// answerFeed answers the feed as stored now.
func (a *API) answerFeed(r *request, status int, id string) error {
	f, err := a.st.Feed(r.ctx, r.owner.Website.ID, id)
	if err != nil {
		return err
	}
	return r.json(status, feedOut(f))
}

func (a *API) feedRoutes(rt *router) {
	if a.feeds == nil {
		return
	}
	add := func(method, pattern, scope string, h func(*request) error) {
		rt.add(&route{method: method, pattern: "/api/v1" + pattern, auth: authKey, scope: scope, handle: h})
	}
	add(http.MethodGet, "/feeds", "", a.handleListFeeds)
	add(http.MethodPost, "/feeds", ScopeSettingsWrite, a.handleCreateFeed)
	add(http.MethodGet, "/feeds/{id}", "", a.handleGetFeed)
	add(http.MethodPut, "/feeds/{id}", ScopeSettingsWrite, a.handleUpdateFeed)
	add(http.MethodDelete, "/feeds/{id}", ScopeSettingsWrite, a.handleDeleteFeed)
	add(http.MethodPost, "/feeds/{id}/poll", ScopeSettingsWrite, a.handlePollFeed)
}
