package api

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/analytics"
	"github.com/relaybell/relaybell/events"
	"github.com/relaybell/relaybell/notification"
	"github.com/relaybell/relaybell/store"
)

// Behavioral events (spec 4.2): POST and GET /events with a key, and the
// browser's own events under /projects/{projectId}/events. What an event
// does is package events'; this is only their HTTP side.
const (
	// DefaultEventRateLimit is spec 8.1's limit of POST and GET /events
	// per key (per account for a dashboard session).
	DefaultEventRateLimit = 3000
	// recentEvents is how many events GET /events lists (spec 8.2).
	recentEvents = 100
	// maxIdempotencyKey bounds an Idempotency-Key header.
	maxIdempotencyKey = 255
	// idempotencyScope names POST /events' keys in the store.
	idempotencyScope = "events"
	// idempotencyStale is how long a claim with no answer holds before its
	// request counts as dead and a retry runs it again.
	idempotencyStale = time.Minute
	// idempotencyWait bounds how long a retry waits for the first request
	// with its key to finish.
	idempotencyWait = 10 * time.Second
	// idempotencySettle bounds storing a request's answer under its key.
	idempotencySettle = 5 * time.Second
)

// idempotencyKeyRe is what an Idempotency-Key may hold.
var idempotencyKeyRe = regexp.MustCompile(`^[\x21-\x7e]{1,255}$`)

// idempotencySpace is the UUID namespace of the event ids derived from a
// website and an Idempotency-Key.
var idempotencySpace = uuid.MustParse("0d5e3f8e-6a55-4c61-9a3e-6c1c0b7e2f41")

// eventRequest is the body of POST /events (spec 4.2). The members that
// name a person are Nullable: present at all, even null or blank, they
// rule out a product alert.
type eventRequest struct {
	eventFields
	ExternalID   notification.Nullable[string] `json:"externalId"`
	SubscriberID notification.Nullable[string] `json:"subscriberId"`
	Endpoint     notification.Nullable[string] `json:"endpoint"`
}

// eventFields are the members every event post has.
type eventFields struct {
	Event      *string         `json:"event"`
	Name       *string         `json:"name"`
	Properties json.RawMessage `json:"properties"`
}

// decodeEvent decodes an event post into in (whose eventFields are f)
// and checks its name and properties.
func decodeEvent(r *request, in any, f *eventFields) (name string, props json.RawMessage, err error) {
	if err := decodeJSON(r.fc.Request.Body(), in, lenient); err != nil {
		return "", nil, err
	}
	if name, err = eventName(f.Event, f.Name); err != nil {
		return "", nil, err
	}
	props, err = checkProperties(f.Properties)
	return name, props, err
}

// browserEventRequest is the body of the browser's POST
// /projects/{projectId}/events: its endpoint's id and auth secret prove
// the event is that browser's own.
type browserEventRequest struct {
	eventFields
	EndpointID string `json:"endpointId"`
	Auth       string `json:"auth"`
}

// eventName is the event's name as kept (event, else its alias name);
// 400 event_required when neither names one.
func eventName(event, name *string) (string, error) {
	n := ""
	switch {
	case event != nil:
		n = *event
	case name != nil:
		n = *name
	}
	if n = events.CutName(n); n == "" {
		return "", errorf(CodeEventRequired, "event (or name) is required")
	}
	return n, nil
}

// checkProperties refuses properties that are not an object; null is none.
func checkProperties(raw json.RawMessage) (json.RawMessage, error) {
	props, err := events.Properties(raw)
	if err != nil {
		return nil, errorf(CodeInvalidJSON, "properties must be a JSON object")
	}
	return props, nil
}

// handlePostEvent serves POST /api/v1/events.
func (a *API) handlePostEvent(r *request) error {
	if err := a.takeEventLimit(r); err != nil {
		return err
	}
	var in eventRequest
	name, props, err := decodeEvent(r, &in, &in.eventFields)
	if err != nil {
		return err
	}
	ev := events.Input{Website: r.owner.Website, Name: name, Properties: props, Source: events.SourceServer, At: r.now,
		ExternalID: strings.TrimSpace(in.ExternalID.Value), Addressed: in.ExternalID.Set || in.SubscriberID.Set || in.Endpoint.Set}
	if len(ev.ExternalID) > maxExternalIDLen {
		return errorf(CodeInvalidJSON, "externalId must be text of at most %d bytes", maxExternalIDLen)
	}
	if id := strings.TrimSpace(in.SubscriberID.Value); id != "" {
		if !isUUID(id) {
			return errorf(CodeInvalidJSON, "subscriberId must be a UUID")
		}
		ev.SubscriberID = strings.ToLower(id)
	}
	return a.idempotent(r, &ev, func() (any, error) { return a.track(r, ev) })
}

// track runs events.Track, its refusals mapped onto the catalog.
func (a *API) track(r *request, ev events.Input) (events.Answer, error) {
	ans, err := a.events.Track(r.ctx, ev)
	switch {
	case errors.Is(err, events.ErrTooLarge):
		return ans, errorf(CodePayloadTooLarge, "an event holds at most %d bytes", analytics.MaxBehaviorBytes)
	case errors.Is(err, events.ErrProperties):
		return ans, errorf(CodeInvalidJSON, "properties must be a JSON object")
	case errors.Is(err, events.ErrValue):
		return ans, errorf(CodeInvalidJSON, "properties.value and properties.revenue are at most 1e12 either way")
	}
	return ans, err
}

// idempotent runs track once per Idempotency-Key of the website: a retry
// with the key and the same body answers what the first request answered
// (202, the same body, Idempotent-Replayed: true) and stores nothing again,
// as the event keeps one id (derived from the website and the key) however
// often it runs; one that comes while the first still runs waits for it.
// The key with another body answers 409 idempotency_key_reused. Without
// the header track just runs.
func (a *API) idempotent(r *request, ev *events.Input, track func() (any, error)) error {
	key := string(r.fc.Request.Header.Peek("Idempotency-Key"))
	if key == "" {
		ans, err := track()
		if err != nil {
			return err
		}
		return r.json(http.StatusAccepted, ans)
	}
	if !idempotencyKeyRe.MatchString(key) {
		return errorf(CodeBadRequest, "Idempotency-Key is 1-%d printable ASCII characters", maxIdempotencyKey)
	}
	websiteID := r.owner.Website.ID
	ev.ID = uuid.NewSHA1(idempotencySpace, []byte(websiteID+"\x00"+key)).String()
	sum := sha256.Sum256(r.fc.Request.Body())
	request := hex.EncodeToString(sum[:])
	deadline := time.Now().Add(idempotencyWait)
	for {
		now := a.now()
		answer, claimed, err := a.st.ClaimIdempotency(r.ctx, websiteID, idempotencyScope, key, request, now, now.Add(-idempotencyStale))
		if errors.Is(err, store.ErrConflict) {
			return errorf(CodeIdempotencyKeyReused, "this Idempotency-Key came with another request")
		}
		if err != nil {
			return err
		}
		if answer != nil {
			r.fc.Response.Header.Set("Idempotent-Replayed", "true")
			return r.rawJSON(http.StatusAccepted, answer)
		}
		if claimed {
			break
		}
		if time.Now().After(deadline) {
			return errorf(CodeIdempotencyInProgress, "a request with this Idempotency-Key is still running; try again")
		}
		select {
		case <-r.ctx.Done():
			return r.ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	ans, err := track()
	var body []byte
	if err == nil {
		body, err = encodeJSON(ans)
	}
	// The claim is settled even when the request's own time ran out: left
	// open it would hold back retries until it goes stale.
	settle, cancel := context.WithTimeout(context.WithoutCancel(r.ctx), idempotencySettle)
	defer cancel()
	if err != nil {
		if serr := a.st.SettleIdempotency(settle, websiteID, idempotencyScope, key, nil); serr != nil {
			a.log.Warn("releasing an idempotency key", "request_id", r.id, "err", serr)
		}
		return err
	}
	if err := a.st.SettleIdempotency(settle, websiteID, idempotencyScope, key, body); err != nil {
		// The event is stored: answer it; a retry runs it again under the
		// same event id, which stores and credits nothing twice.
		a.log.Warn("storing an idempotent answer", "request_id", r.id, "err", err)
	}
	return r.rawJSON(http.StatusAccepted, body)
}

// handleBrowserEvent serves POST /api/v1/projects/{projectId}/events: an
// event of the subscribed browser itself (RelayBell.track). It names
// only that browser's subscriber, never makes a product alert, and is
// marked as coming from the browser. A wrong endpoint or secret answers
// 404 not_found, whichever it was.
func (a *API) handleBrowserEvent(r *request) error {
	w, err := a.project(r)
	if err != nil {
		return err
	}
	var in browserEventRequest
	name, props, err := decodeEvent(r, &in, &in.eventFields)
	if err != nil {
		return err
	}
	if !isUUID(in.EndpointID) || in.Auth == "" {
		return errorf(CodeInvalidJSON, "endpointId and auth (the subscription's auth secret) are required")
	}
	ep, err := a.st.Endpoint(r.ctx, w.ID, strings.ToLower(in.EndpointID))
	if errors.Is(err, store.ErrNotFound) || err == nil && subtle.ConstantTimeCompare([]byte(ep.Auth), []byte(in.Auth)) != 1 {
		return errCode(CodeNotFound)
	}
	if err != nil {
		return fmt.Errorf("loading endpoint: %w", err)
	}
	ans, err := a.track(r, events.Input{Website: w, Name: name, SubscriberID: ep.SubscriberID,
		Addressed: true, Properties: props, Source: events.SourceBrowser, At: r.now})
	if err != nil {
		return err
	}
	return r.json(http.StatusAccepted, ans)
}

// eventJSON is the listed form of an event (spec 2.8), with where it
// came from.
type eventJSON struct {
	ID           string          `json:"id"`
	Name         string          `json:"name"`
	ExternalID   *string         `json:"external_id"`
	SubscriberID *string         `json:"subscriber_id"`
	Properties   json.RawMessage `json:"properties"`
	Source       string          `json:"source"`
	CreatedAt    time.Time       `json:"created_at"`
}

// handleListEvents serves GET /api/v1/events: the website's latest 100
// events, newest first.
func (a *API) handleListEvents(r *request) error {
	if err := a.takeEventLimit(r); err != nil {
		return err
	}
	bs, err := a.an.Behaviors(r.ctx, analytics.BehaviorQuery{WebsiteID: r.owner.Website.ID, Limit: recentEvents})
	if err != nil {
		return err
	}
	out := make([]eventJSON, len(bs))
	for i, b := range bs {
		out[i] = eventJSON{ID: b.ID, Name: b.Name, ExternalID: nonEmpty(b.ExternalID), SubscriberID: nonEmpty(b.SubscriberID),
			Properties: json.RawMessage(b.PropertiesText()), Source: b.Source, CreatedAt: b.At.UTC()}
	}
	return r.json(http.StatusOK, map[string]any{"events": out})
}

// personEvent is an event in a person's data and profile.
type personEvent struct {
	Name       string          `json:"name"`
	Properties json.RawMessage `json:"properties"`
	Source     string          `json:"source"`
	CreatedAt  time.Time       `json:"created_at"`
}

// personEvents are the person's latest events, newest first: those of
// their subscriber and those logged under their external id before they
// subscribed.
func (a *API) personEvents(r *request, p *store.Person, limit int) ([]personEvent, error) {
	bs, err := a.an.Behaviors(r.ctx, analytics.BehaviorQuery{WebsiteID: r.owner.Website.ID,
		SubscriberIDs: []string{p.ID}, ExternalID: p.ExternalID, Limit: limit})
	if err != nil {
		return nil, err
	}
	out := make([]personEvent, len(bs))
	for i, b := range bs {
		out[i] = personEvent{Name: b.Name, Properties: json.RawMessage(b.PropertiesText()), Source: b.Source, CreatedAt: b.At.UTC()}
	}
	return out, nil
}

// eventLimit is the request rate of POST and GET /events: per key, or per
// account for a dashboard session.
func (a *API) eventLimit(r *request) store.RateLimit {
	who := "key:" + r.owner.Key.ID
	if r.bySession() {
		who = "account:" + r.owner.Account.ID
	}
	return store.RateLimit{Key: "events:" + who, Window: time.Minute, Max: int64(a.cfg.EventRateLimit)}
}

// takeEventLimit counts a call of POST or GET /events against its key's
// limit, through the same shared counters as the public routes (no store
// round trip per request).
func (a *API) takeEventLimit(r *request) error {
	if a.cfg.EventRateLimit < 0 {
		return nil
	}
	return a.takeShared(r, a.eventLimit(r), "this key may call /events %d times a minute")
}

func (a *API) eventRoutes(rt *router) {
	rt.add(&route{method: http.MethodPost, pattern: "/api/v1/events", auth: authKey, scope: ScopeEventsWrite, handle: a.handlePostEvent})
	rt.add(&route{method: http.MethodGet, pattern: "/api/v1/events", auth: authKey, scope: ScopeSubscribersRead, handle: a.handleListEvents})
	rt.add(&route{method: http.MethodPost, pattern: "/api/v1/projects/{projectId}/events", cors: true, handle: a.handleBrowserEvent})
}
