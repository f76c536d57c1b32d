package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/audience"
	"github.com/relaybell/relaybell/onsite"
	"github.com/relaybell/relaybell/store"
)

// Codes of the prompt, welcome and on-site message routes (issue 36),
// which section 7 leaves to the service.
const (
	CodeInvalidPrompt        = onsite.CodeInvalidPrompt
	CodeInvalidWelcome       = onsite.CodeInvalidWelcome
	CodeInvalidOnsiteMessage = onsite.CodeInvalidMessage
	// CodeTooManyOnsiteMessages refuses a website's message past
	// onsite.MaxMessages.
	CodeTooManyOnsiteMessages = "too_many_onsite_messages"
)

// onsiteError maps a refused definition to the catalog.
func onsiteError(err error) error {
	var oe *onsite.Error
	if errors.As(err, &oe) {
		return errorf(oe.Code, "%s", oe.Message)
	}
	return err
}

// handleGetPrompt serves GET /api/v1/prompt: the stored prompt, or the
// default (off) one.
func (a *API) handleGetPrompt(r *request) error {
	p, err := a.prompt(r, a.st.SiteSettings, r.owner.Website.ID)
	if err != nil {
		return err
	}
	return r.json(http.StatusOK, p)
}

// settingsReader reads one of a website's settings documents: the store's
// for the routes that change them, the definitions cache's for the
// browser SDK's.
type settingsReader func(ctx context.Context, websiteID, name string) ([]byte, error)

func (a *API) prompt(r *request, read settingsReader, websiteID string) (onsite.Prompt, error) {
	b, err := read(r.ctx, websiteID, store.SettingsPrompt)
	if err != nil {
		return onsite.Prompt{}, err
	}
	return onsite.ReadPrompt(b)
}

// handlePutPrompt serves PUT /api/v1/prompt: the members given replace the
// stored ones (texts member by member), and the result is checked whole.
func (a *API) handlePutPrompt(r *request) error {
	p, err := a.prompt(r, a.st.SiteSettings, r.owner.Website.ID)
	if err != nil {
		return err
	}
	// translations given replace the stored ones as a whole (decoding
	// into the stored map would only add languages).
	var probe map[string]json.RawMessage
	if err := decodeJSON(r.fc.Request.Body(), &probe, lenient); err != nil {
		return err
	}
	if _, ok := probe["translations"]; ok {
		p.Translations = nil
	}
	if err := decodeJSON(r.fc.Request.Body(), &p, strict); err != nil {
		return err
	}
	if err := p.Check(); err != nil {
		return onsiteError(err)
	}
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	if err := a.st.PutSiteSettings(r.ctx, r.owner.Website.ID, store.SettingsPrompt, b, r.now); err != nil {
		return err
	}
	return r.json(http.StatusOK, p)
}

func (a *API) welcome(r *request, read settingsReader, websiteID string) (onsite.Welcome, error) {
	b, err := read(r.ctx, websiteID, store.SettingsWelcome)
	if err != nil {
		return onsite.Welcome{}, err
	}
	return onsite.ReadWelcome(b)
}

// handleGetWelcome serves GET /api/v1/welcome.
func (a *API) handleGetWelcome(r *request) error {
	w, err := a.welcome(r, a.st.SiteSettings, r.owner.Website.ID)
	if err != nil {
		return err
	}
	return r.json(http.StatusOK, w)
}

// handlePutWelcome serves PUT /api/v1/welcome: enabled, delaySeconds and
// templateId replace the stored ones when given; content members replace
// the stored content as a whole.
func (a *API) handlePutWelcome(r *request) error {
	w, err := a.welcome(r, a.st.SiteSettings, r.owner.Website.ID)
	if err != nil {
		return err
	}
	// The body is checked strictly as a whole (exact member names, types,
	// no unknown member at any depth) as it is decoded, once, then set
	// over the stored one.
	var body onsite.WelcomeBody
	if err := decodeJSON(r.fc.Request.Body(), &body, strict); err != nil {
		return err
	}
	w.Set(body)
	if err := w.Check(r.ctx, r.owner.Website, a.templates, r.now); err != nil {
		return onsiteError(err)
	}
	b, err := json.Marshal(w)
	if err != nil {
		return err
	}
	if err := a.st.PutSiteSettings(r.ctx, r.owner.Website.ID, store.SettingsWelcome, b, r.now); err != nil {
		return err
	}
	return r.json(http.StatusOK, w)
}

// welcomeDelay is the delay of the website's welcome when it is on (for
// a registration), nil when off: read from the definitions cache.
func (a *API) welcomeDelay(r *request, websiteID string) (*time.Duration, error) {
	w, err := a.welcome(r, a.defs.SiteSettings, websiteID)
	if err != nil || !w.Enabled {
		return nil, err
	}
	d := time.Duration(w.DelaySeconds) * time.Second
	return &d, nil
}

// onsiteJSON is an on-site message as the routes answer it.
type onsiteJSON struct {
	ID string `json:"id"`
	onsite.Message
	Stats     onsiteStats `json:"stats"`
	CreatedAt time.Time   `json:"created_at"`
	UpdatedAt time.Time   `json:"updated_at"`
}

type onsiteStats struct {
	Impressions int64 `json:"impressions"`
	Clicks      int64 `json:"clicks"`
	Dismissals  int64 `json:"dismissals"`
}

func onsiteOut(m store.OnsiteMessage) (onsiteJSON, error) {
	d, err := onsite.ReadMessage(m.Definition)
	if err != nil {
		return onsiteJSON{}, err
	}
	return onsiteJSON{ID: m.ID, Message: d, CreatedAt: m.CreatedAt.UTC(), UpdatedAt: m.UpdatedAt.UTC(),
		Stats: onsiteStats{m.Counts[store.OnsiteImpression], m.Counts[store.OnsiteClick], m.Counts[store.OnsiteDismiss]}}, nil
}

// handleListOnsite serves GET /api/v1/onsite, newest first.
func (a *API) handleListOnsite(r *request) error {
	list, err := a.st.ListOnsiteMessages(r.ctx, r.owner.Website.ID)
	if err != nil {
		return err
	}
	return answerList(r, "messages", list, onsiteOut)
}

// handleGetOnsite serves GET /api/v1/onsite/{id}.
func (a *API) handleGetOnsite(r *request) error {
	return answerOwn(r, a.st.OnsiteMessage, onsiteOut)
}

// handleCreateOnsite serves POST /api/v1/onsite.
func (a *API) handleCreateOnsite(r *request) error {
	d := onsite.NewMessage()
	if err := a.checkOnsite(r, &d); err != nil {
		return err
	}
	list, err := a.st.ListOnsiteMessages(r.ctx, r.owner.Website.ID)
	if err != nil {
		return err
	}
	if len(list) >= onsite.MaxMessages {
		return errorf(CodeTooManyOnsiteMessages, "a website has at most %d on-site messages", onsite.MaxMessages)
	}
	b, err := json.Marshal(d)
	if err != nil {
		return err
	}
	now := r.now.UTC().Truncate(time.Millisecond)
	m := store.OnsiteMessage{ID: uuid.NewString(), WebsiteID: r.owner.Website.ID, Name: d.Name, Status: d.Status,
		Definition: b, CreatedAt: now, UpdatedAt: now}
	if err := a.st.CreateOnsiteMessage(r.ctx, m); err != nil {
		return err
	}
	return a.answerOnsite(r, http.StatusCreated, m.ID)
}

// handleUpdateOnsite serves PUT /api/v1/onsite/{id}: the members given
// replace the stored ones, and the result is checked whole. Its counts
// stay.
func (a *API) handleUpdateOnsite(r *request) error {
	m, err := loadOwn(r, "id", a.st.OnsiteMessage)
	if err != nil {
		return err
	}
	d, err := onsite.ReadMessage(m.Definition)
	if err != nil {
		return err
	}
	if err := a.checkOnsite(r, &d); err != nil {
		return err
	}
	if m.Definition, err = json.Marshal(d); err != nil {
		return err
	}
	m.Name, m.Status, m.UpdatedAt = d.Name, d.Status, r.now.UTC().Truncate(time.Millisecond)
	if err := a.st.UpdateOnsiteMessage(r.ctx, m); errors.Is(err, store.ErrNotFound) {
		return errCode(CodeNotFound)
	} else if err != nil {
		return err
	}
	return a.answerOnsite(r, http.StatusOK, m.ID)
}

// handleDeleteOnsite serves DELETE /api/v1/onsite/{id}, with its counts.
func (a *API) handleDeleteOnsite(r *request) error {
	m, err := loadOwn(r, "id", a.st.OnsiteMessage)
	if err != nil {
		return err
	}
	if err := a.st.DeleteOnsiteMessage(r.ctx, r.owner.Website.ID, m.ID); errors.Is(err, store.ErrNotFound) {
		return errCode(CodeNotFound)
	} else if err != nil {
		return err
	}
	return r.json(http.StatusOK, okAnswer{OK: true})
}

// checkOnsite decodes the body strictly over d and checks the result; a
// segment it names is the website's.
func (a *API) checkOnsite(r *request, d *onsite.Message) error {
	if err := decodeJSON(r.fc.Request.Body(), d, strict); err != nil {
		return err
	}
	if err := d.Check(); err != nil {
		return onsiteError(err)
	}
	if id := d.Targeting.SegmentID; id != "" {
		if !isUUID(id) {
			return errCode(CodeSegmentNotFound)
		}
		d.Targeting.SegmentID = strings.ToLower(id)
		if _, err := a.st.Segment(r.ctx, r.owner.Website.ID, d.Targeting.SegmentID); errors.Is(err, store.ErrNotFound) {
			return errCode(CodeSegmentNotFound)
		} else if err != nil {
			return err
		}
	}
	return nil
}

func (a *API) answerOnsite(r *request, status int, id string) error {
	m, err := a.st.OnsiteMessage(r.ctx, r.owner.Website.ID, id)
	if err != nil {
		return err
	}
	out, err := onsiteOut(m)
	if err != nil {
		return err
	}
	return r.json(status, out)
}

func (a *API) onsiteRoutes(rt *router) {
	add := func(method, pattern, scope string, h func(*request) error) {
		rt.add(&route{method: method, pattern: "/api/v1" + pattern, auth: authKey, scope: scope, handle: h})
	}
	add(http.MethodGet, "/prompt", "", a.handleGetPrompt)
	add(http.MethodPut, "/prompt", ScopeSettingsWrite, a.handlePutPrompt)
	add(http.MethodGet, "/welcome", "", a.handleGetWelcome)
	add(http.MethodPut, "/welcome", ScopeSettingsWrite, a.handlePutWelcome)
	add(http.MethodGet, "/onsite", "", a.handleListOnsite)
	add(http.MethodPost, "/onsite", ScopeSettingsWrite, a.handleCreateOnsite)
	add(http.MethodGet, "/onsite/{id}", "", a.handleGetOnsite)
	add(http.MethodPut, "/onsite/{id}", ScopeSettingsWrite, a.handleUpdateOnsite)
	add(http.MethodDelete, "/onsite/{id}", ScopeSettingsWrite, a.handleDeleteOnsite)
}

// sdkMessage is an on-site message as the SDK gets it: what it renders
// and how often.
type sdkMessage struct {
	ID        string          `json:"id"`
	Kind      string          `json:"kind"`
	Title     string          `json:"title"`
	Text      string          `json:"text"`
	Image     string          `json:"image"`
	Buttons   []onsite.Button `json:"buttons"`
	Frequency string          `json:"frequency"`
}

// handleSDKOnsite serves GET /api/v1/projects/{projectId}/onsite?url=&
// subscribed=&subscriberId=: the website's active messages that apply to
// the page view, in one small answer the browser may keep a minute. The
// messages and the segments they target come from the definitions cache:
// only a known visitor is read, once, when a message targets a segment.
func (a *API) handleSDKOnsite(r *request) error {
	w, err := a.project(r)
	if err != nil {
		return err
	}
	args := r.fc.QueryArgs()
	page := cut(string(args.Peek("url")), maxPageURLLen)
	subscribed := string(args.Peek("subscribed")) == "1"
	subscriberID := strings.ToLower(string(args.Peek("subscriberId")))
	list, err := a.defs.ActiveOnsiteMessages(r.ctx, w.ID)
	if err != nil {
		return err
	}
	view := onsite.View{URL: page, Device: deviceType(string(r.fc.Request.Header.UserAgent())), Subscribed: subscribed, Now: r.now}
	if subscribed && isUUID(subscriberID) {
		var person *store.Person
		view.InSegment = func(segmentID string) (bool, error) {
			if person == nil {
				p, err := a.st.Person(r.ctx, w.ID, subscriberID)
				if errors.Is(err, store.ErrNotFound) {
					return false, nil
				} else if err != nil {
					return false, err
				}
				person = &p
			}
			sel, err := a.defs.SegmentSelector(r.ctx, w.ID, segmentID)
			if errors.Is(err, audience.ErrSegmentMissing) {
				return false, nil
			} else if err != nil {
				return false, err
			}
			return person.Status() == "subscribed" && sel.Selects(&person.Subscriber), nil
		}
	}
	out := []sdkMessage{}
	for _, m := range list { // oldest first
		ok, err := m.Applies(view)
		if err != nil {
			return fmt.Errorf("targeting on-site message: %w", err)
		}
		if ok {
			out = append(out, sdkMessage{ID: m.ID, Kind: m.Kind, Title: m.Title, Text: m.Text, Image: m.Image,
				Buttons: m.Buttons, Frequency: m.Frequency})
		}
	}
	r.fc.Response.Header.Set("Cache-Control", "private, max-age=60")
	return r.json(http.StatusOK, map[string]any{"messages": out})
}

// onsitePing is the body of POST /pings/onsite: a message's id or a prompt
// kind, and what happened.
type onsitePing struct {
	MessageID string `json:"messageId"`
	Prompt    string `json:"prompt"`
	Event     string `json:"event"`
}

// handleOnsitePing serves POST /api/v1/projects/{projectId}/pings/onsite:
// counts a prompt's impression, accept or dismissal, or a message's
// impression, click or dismissal. Anything it does not know is 204 and
// counts nothing, as the other pings.
func (a *API) handleOnsitePing(r *request) error {
	w, err := a.project(r)
	if err != nil {
		return err
	}
	var in onsitePing
	if err := decodeJSON(r.fc.Request.Body(), &in, lenient); err != nil {
		return err
	}
	switch {
	case in.Prompt != "":
		switch in.Prompt {
		case onsite.KindNative, onsite.KindSoft, onsite.KindBell:
		default:
			return r.noContent()
		}
		switch in.Event {
		case store.OnsiteImpression, store.OnsiteAccept, store.OnsiteDismiss:
		default:
			return r.noContent()
		}
		if err := a.st.CountOnsite(r.ctx, w.ID, "prompt:"+in.Prompt, in.Event, 1); err != nil {
			return err
		}
	case isUUID(in.MessageID):
		switch in.Event {
		case store.OnsiteImpression, store.OnsiteClick, store.OnsiteDismiss:
		default:
			return r.noContent()
		}
		id := strings.ToLower(in.MessageID)
		if _, err := a.st.OnsiteMessage(r.ctx, w.ID, id); errors.Is(err, store.ErrNotFound) {
			return r.noContent()
		} else if err != nil {
			return err
		}
		if err := a.st.CountOnsite(r.ctx, w.ID, id, in.Event, 1); err != nil {
			return err
		}
	}
	return r.noContent()
}

// promptStats are a prompt kind's counts in /stats: the subscription
// rate is accepts per impression.
type promptStats struct {
	Kind        string  `json:"kind"`
	Impressions int64   `json:"impressions"`
	Accepts     int64   `json:"accepts"`
	Dismissals  int64   `json:"dismissals"`
	Rate        float64 `json:"rate"`
}

// promptStats reads the website's prompt counts, one row per kind that
// was shown, in kind order.
func (a *API) promptStats(r *request, websiteID string) ([]promptStats, error) {
	counts, err := a.st.OnsiteCounts(r.ctx, websiteID, "prompt:")
	if err != nil {
		return nil, err
	}
	out := []promptStats{}
	for _, kind := range []string{onsite.KindBell, onsite.KindNative, onsite.KindSoft} {
		c, ok := counts["prompt:"+kind]
		if !ok {
			continue
		}
		s := promptStats{Kind: kind, Impressions: c[store.OnsiteImpression], Accepts: c[store.OnsiteAccept], Dismissals: c[store.OnsiteDismiss]}
		if s.Impressions > 0 {
			s.Rate = float64(int64(float64(s.Accepts)/float64(s.Impressions)*10000+0.5)) / 10000
		}
		out = append(out, s)
	}
	return out, nil
}
