package api

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/notification"
	"github.com/relaybell/relaybell/store"
	"github.com/relaybell/relaybell/webhooks"
)

// Webhook limits (spec 4.6, 8.1, 8.2).
const (
	// webhookLogPerMinute bounds delivery-log reads, resends and test
	// events together, per website.
	webhookLogPerMinute = 30
	// maxWebhookBody is the stored request body shown in a delivery, and
	// the largest event a resend accepts.
	maxWebhookBody = 64 << 10
	// maxWebhookURL bounds a webhook URL.
	maxWebhookURL = 2048
	// webhookSecretPrefix starts every webhook secret (spec 2.9).
	webhookSecretPrefix = "whsec_"
	// testEventMessage is the message of a webhook.test event.
	testEventMessage = "This is a test event from RelayBell. Your endpoint is reachable."
)

// webhookJSON is the Webhook of spec 2.9 as lists and changes show it:
// never the secret.
type webhookJSON struct {
	ID                  string   `json:"id"`
	URL                 string   `json:"url"`
	Events              []string `json:"events"`
	Enabled             bool     `json:"enabled"`
	LastStatus          *int     `json:"last_status"`
	LastFiredAt         *string  `json:"last_fired_at"`
	CreatedAt           string   `json:"created_at"`
	ConsecutiveFailures int      `json:"consecutive_failures"`
	FailingSince        *string  `json:"failing_since"`
	DisabledReason      *string  `json:"disabled_reason"`
	DisabledAt          *string  `json:"disabled_at"`
}

func webhookOut(w store.Webhook) webhookJSON {
	return webhookJSON{
		ID:                  w.ID,
		URL:                 w.URL,
		Events:              nonNilEvents(w.Events),
		Enabled:             w.Enabled,
		LastStatus:          w.LastStatus,
		LastFiredAt:         notification.TimeOrNil(w.LastFiredAt),
		CreatedAt:           w.CreatedAt.UTC().Format(notification.TimeLayout),
		ConsecutiveFailures: w.ConsecutiveFailures,
		FailingSince:        notification.TimeOrNil(w.FailingSince),
		DisabledReason:      nonEmpty(w.DisabledReason),
		DisabledAt:          notification.TimeOrNil(w.DisabledAt),
	}
}

// webhookCreatedJSON is the webhook in the answer of POST /webhooks, the
// only one with the secret (spec 4.6 names exactly these members).
type webhookCreatedJSON struct {
	ID        string   `json:"id"`
	URL       string   `json:"url"`
	Events    []string `json:"events"`
	Secret    string   `json:"secret"`
	Enabled   bool     `json:"enabled"`
	CreatedAt string   `json:"created_at"`
}

func nonNilEvents(events []string) []string {
	if events == nil {
		return []string{}
	}
	return events
}

// deliveryJSON is the Webhook delivery of spec 2.10 as the log lists it.
type deliveryJSON struct {
	ID             string  `json:"id"`
	Event          string  `json:"event"`
	Status         string  `json:"status"`
	Attempts       int     `json:"attempts"`
	LastStatusCode *int    `json:"last_status_code"`
	DurationMS     *int64  `json:"duration_ms"`
	Error          *string `json:"error"`
	CreatedAt      string  `json:"created_at"`
	LastAttemptAt  *string `json:"last_attempt_at"`
	NextAttemptAt  *string `json:"next_attempt_at"`
	DeliveredAt    *string `json:"delivered_at"`
}

func deliveryOut(d store.WebhookDelivery) deliveryJSON {
	return deliveryJSON{
		ID:             d.ID,
		Event:          d.Event,
		Status:         d.Status,
		Attempts:       d.Attempts,
		LastStatusCode: d.LastStatusCode,
		DurationMS:     d.DurationMS,
		Error:          nonEmpty(d.Error),
		CreatedAt:      d.CreatedAt.UTC().Format(notification.TimeLayout),
		LastAttemptAt:  notification.TimeOrNil(d.LastAttemptAt),
		NextAttemptAt:  notification.TimeOrNil(d.NextAttemptAt),
		DeliveredAt:    notification.TimeOrNil(d.DeliveredAt),
	}
}

// deliveryDetailJSON is the single-delivery view: the extra members of
// spec 2.10. A delivery not attempted yet has request_headers {} and
// response_body "" (the spec gives them as an object and a string, not
// nullable).
type deliveryDetailJSON struct {
	deliveryJSON
	RequestBody      string            `json:"request_body"`
	RequestTruncated bool              `json:"request_truncated"`
	RequestHeaders   map[string]string `json:"request_headers"`
	ResponseBody     string            `json:"response_body"`
}

func deliveryDetailOut(d store.WebhookDelivery) deliveryDetailJSON {
	body, truncated := cutBody(d.Body, maxWebhookBody)
	headers := d.RequestHeaders
	if headers == nil {
		headers = map[string]string{}
	}
	return deliveryDetailJSON{deliveryJSON: deliveryOut(d), RequestBody: body, RequestTruncated: truncated,
		RequestHeaders: headers, ResponseBody: d.ResponseBody}
}

// cutBody returns b as text, cut to at most n bytes; a rune the cut would
// split is left out whole, so the text stays valid UTF-8.
func cutBody(b []byte, n int) (string, bool) {
	if len(b) <= n {
		return string(b), false
	}
	end := n
	for end > 0 && end > n-utf8.UTFMax && !utf8.RuneStart(b[end]) {
		end--
	}
	return string(b[:end]), true
}

// webhookBody is the body of POST and PUT /webhooks. Unknown members are
// ignored (spec 4.6 lists no unknown_field, as for segments and topics);
// a null member counts as left out.
type webhookBody struct {
	URL     *string   `json:"url"`
	Events  *[]string `json:"events"`
	Enabled *bool     `json:"enabled"`
}

// webhookURL accepts a URL that begins with http:// or https:// (scheme in
// any case) and names a host (spec 2.9, 4.6). A private or internal
// address is accepted: the delivery engine refuses to send to it.
func webhookURL(raw *string) (string, *Error) {
	const msg = "url must begin with http:// or https:// and name a host"
	if raw == nil {
		return "", errorf(CodeInvalidURL, msg)
	}
	s := strings.TrimSpace(*raw)
	if !notification.IsHTTPURL(s) || len(s) > maxWebhookURL {
		return "", errorf(CodeInvalidURL, msg)
	}
	return s, nil
}

// webhookEvents keeps the names of spec 6.2, each once, in the given
// order; the rest are dropped. An empty result, whether the list was empty
// or held only unknown names, means every event (spec 4.6). webhook.test
// is one of those names and is kept, although only a test request sends it.
func webhookEvents(names []string) []string {
	out := []string{}
	for _, n := range names {
		n = strings.TrimSpace(n)
		if webhooks.IsKind(n) && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// newWebhookSecret is whsec_ and 26 random base32 characters (130 bits).
func newWebhookSecret() string { return webhookSecretPrefix + rand.Text() }

// webhookList is the answer of GET /webhooks.
type webhookList struct {
	Webhooks []webhookJSON `json:"webhooks"`
	// Events are the names a webhook can subscribe to. webhook.test is
	// left out: the spec calls these "the subscribable event names", and a
	// test event is only sent on request, to one webhook, whatever it
	// subscribes to (spec 6.2).
	Events []string `json:"events"`
}

// handleListWebhooks serves GET /api/v1/webhooks, newest first.
func (a *API) handleListWebhooks(r *request) error {
	list, err := a.st.WebhooksOf(r.ctx, r.owner.Website.ID)
	if err != nil {
		return fmt.Errorf("listing webhooks: %w", err)
	}
	out := webhookList{Webhooks: make([]webhookJSON, len(list)), Events: webhooks.Subscribable}
	for i, w := range list {
		out.Webhooks[i] = webhookOut(w)
	}
	return r.json(http.StatusOK, out)
}

// handleCreateWebhook serves POST /api/v1/webhooks: a new, enabled
// webhook; the answer holds its secret, the only time it is shown.
func (a *API) handleCreateWebhook(r *request) error {
	var in webhookBody
	if err := decodeJSON(r.fc.Request.Body(), &in, lenient); err != nil {
		return err
	}
	u, apiErr := webhookURL(in.URL)
	if apiErr != nil {
		return apiErr
	}
	var events []string
	if in.Events != nil {
		events = *in.Events
	}
	w := store.Webhook{ID: uuid.NewString(), WebsiteID: r.owner.Website.ID, URL: u, Events: webhookEvents(events),
		Secret: newWebhookSecret(), Enabled: true, CreatedAt: r.now.UTC().Truncate(time.Millisecond)}
	if err := a.st.CreateWebhook(r.ctx, w); err != nil {
		return fmt.Errorf("creating webhook: %w", err)
	}
	return r.json(http.StatusCreated, map[string]webhookCreatedJSON{"webhook": {ID: w.ID, URL: w.URL,
		Events: w.Events, Secret: w.Secret, Enabled: w.Enabled, CreatedAt: w.CreatedAt.Format(notification.TimeLayout)}})
}

// ownWebhook loads the {id} webhook of the key's website; a malformed id
// and another website's are both 404 not_found.
func (a *API) ownWebhook(r *request) (store.Webhook, error) {
	id := r.param("id")
	if !isUUID(id) {
		return store.Webhook{}, errCode(CodeNotFound)
	}
	w, err := a.st.Webhook(r.ctx, r.owner.Website.ID, id)
	if errors.Is(err, store.ErrNotFound) {
		return store.Webhook{}, errCode(CodeNotFound)
	}
	if err != nil {
		return store.Webhook{}, fmt.Errorf("loading webhook: %w", err)
	}
	return w, nil
}

// handleUpdateWebhook serves PUT /api/v1/webhooks/{id}: url, events and
// enabled, each optional. Turning a webhook that was off back on clears
// its failure count, failure start and disabled reason and time (spec
// 3.3). Turning it off here is the user's doing: it gets no disabled
// reason or time, which stay the service's own.
func (a *API) handleUpdateWebhook(r *request) error {
	w, err := a.ownWebhook(r)
	if err != nil {
		return err
	}
	var in webhookBody
	if err := decodeJSON(r.fc.Request.Body(), &in, lenient); err != nil {
		return err
	}
	if in.URL == nil && in.Events == nil && in.Enabled == nil {
		return errorf(CodeNothingToUpdate, "give url, events or enabled")
	}
	var u string
	if in.URL != nil {
		var apiErr *Error
		if u, apiErr = webhookURL(in.URL); apiErr != nil {
			return apiErr
		}
	}
	w, err = a.st.UpdateWebhook(r.ctx, w.WebsiteID, w.ID, func(w *store.Webhook) error {
		if in.URL != nil {
			w.URL = u
		}
		if in.Events != nil {
			w.Events = webhookEvents(*in.Events)
		}
		if in.Enabled != nil {
			if *in.Enabled && !w.Enabled {
				w.ConsecutiveFailures, w.FailingSince, w.DisabledReason, w.DisabledAt = 0, nil, "", nil
			}
			w.Enabled = *in.Enabled
		}
		return nil
	})
	if errors.Is(err, store.ErrNotFound) {
		return errCode(CodeNotFound) // deleted meanwhile
	}
	if err != nil {
		return fmt.Errorf("updating webhook: %w", err)
	}
	return r.json(http.StatusOK, map[string]webhookJSON{"webhook": webhookOut(w)})
}

// handleDeleteWebhook serves DELETE /api/v1/webhooks/{id}: the webhook and
// its delivery log go. Any id, even one that is not a UUID, answers ok:
// spec 4.6 gives this route no 404.
func (a *API) handleDeleteWebhook(r *request) error {
	if id := r.param("id"); isUUID(id) {
		err := a.st.DeleteWebhook(r.ctx, r.owner.Website.ID, id)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("deleting webhook: %w", err)
		}
	}
	return r.json(http.StatusOK, okAnswer{OK: true})
}

// takeWebhookLogLimit counts one delivery-log read, resend or test event
// against the website's 30 a minute (spec 8.1) and sets the RateLimit-*
// headers; over the limit it answers 429 rate_limited with Retry-After.
// Every authorized call counts, whatever it answers then.
func (a *API) takeWebhookLogLimit(r *request) error {
	l := store.RateLimit{Key: "webhooks:website:" + r.owner.Website.ID + ":1m", Window: time.Minute, Max: webhookLogPerMinute}
	used, taken, err := a.st.TakeRateLimits(r.ctx, []store.RateLimit{l}, 1, r.now)
	if err != nil {
		return fmt.Errorf("counting webhook log use: %w", err)
	}
	if taken {
		setRateLimitHeaders(r, l, used[0])
		return nil
	}
	setRateLimitHeaders(r, l, l.Max)
	r.fc.Response.Header.Set("Retry-After", strconv.Itoa(secondsUntil(r.now, l.WindowEnd(r.now))))
	return errorf(CodeRateLimited, "delivery-log reads, resends and test events are limited to %d a minute per website",
		webhookLogPerMinute)
}

// deliveryList is the answer of GET /webhooks/{id}/deliveries.
type deliveryList struct {
	Deliveries []deliveryJSON `json:"deliveries"`
	NextCursor *string        `json:"nextCursor"`
}

// deliveryCursorKey binds a delivery-log cursor to its webhook.
func deliveryCursorKey(webhookID string) string { return "webhook deliveries " + webhookID }

// handleListDeliveries serves GET /api/v1/webhooks/{id}/deliveries: newest
// first, paged by an opaque cursor like the notification list.
func (a *API) handleListDeliveries(r *request) error {
	if err := a.takeWebhookLogLimit(r); err != nil {
		return err
	}
	w, err := a.ownWebhook(r)
	if err != nil {
		return err
	}
	args := r.fc.QueryArgs()
	limit := pageSize(string(args.Peek("limit")))
	before := int64(0)
	if args.Has("cursor") {
		seq, ok := decodeCursor(string(args.Peek("cursor")), w.WebsiteID, deliveryCursorKey(w.ID))
		if !ok {
			return errorf(CodeInvalidCursor, "cursor must be the nextCursor of the previous page of this webhook's deliveries")
		}
		before = seq
	}
	rows, err := a.st.WebhookDeliveries(r.ctx, w.ID, before, limit+1)
	if err != nil {
		return fmt.Errorf("listing webhook deliveries: %w", err)
	}
	out := deliveryList{Deliveries: make([]deliveryJSON, 0, min(len(rows), limit))}
	if len(rows) > limit {
		rows = rows[:limit]
		c := encodeCursor(rows[limit-1].Seq, w.WebsiteID, deliveryCursorKey(w.ID))
		out.NextCursor = &c
	}
	for _, d := range rows {
		out.Deliveries = append(out.Deliveries, deliveryOut(d))
	}
	return r.json(http.StatusOK, out)
}

// ownDelivery loads the {deliveryId} delivery of the {id} webhook of the
// key's website; 404 not_found otherwise.
func (a *API) ownDelivery(r *request) (store.Webhook, store.WebhookDelivery, error) {
	w, err := a.ownWebhook(r)
	if err != nil {
		return w, store.WebhookDelivery{}, err
	}
	id := r.param("deliveryId")
	if !isUUID(id) {
		return w, store.WebhookDelivery{}, errCode(CodeNotFound)
	}
	d, err := a.st.WebhookDelivery(r.ctx, w.ID, id)
	if errors.Is(err, store.ErrNotFound) {
		return w, store.WebhookDelivery{}, errCode(CodeNotFound)
	}
	if err != nil {
		return w, store.WebhookDelivery{}, fmt.Errorf("loading webhook delivery: %w", err)
	}
	return w, d, nil
}

// handleDelivery serves GET /api/v1/webhooks/{id}/deliveries/{deliveryId}.
func (a *API) handleDelivery(r *request) error {
	if err := a.takeWebhookLogLimit(r); err != nil {
		return err
	}
	_, d, err := a.ownDelivery(r)
	if err != nil {
		return err
	}
	return r.json(http.StatusOK, map[string]deliveryDetailJSON{"delivery": deliveryDetailOut(d)})
}

// handleResendDelivery serves POST
// /api/v1/webhooks/{id}/deliveries/{deliveryId}/resend: one more attempt
// of the same body, now, with no retries after it. The delivery engine
// makes the attempt; this only queues it.
func (a *API) handleResendDelivery(r *request) error {
	if err := a.takeWebhookLogLimit(r); err != nil {
		return err
	}
	w, d, err := a.ownDelivery(r)
	if err != nil {
		return err
	}
	if len(d.Body) > maxWebhookBody {
		return errorf(CodeBodyTooLarge, "the event is %d bytes; only events up to %d bytes can be resent", len(d.Body), maxWebhookBody)
	}
	d, err = a.st.ResendWebhookDelivery(r.ctx, w.ID, d.ID, r.now.UTC().Truncate(time.Millisecond))
	switch {
	case errors.Is(err, store.ErrConflict):
		return errorf(CodeDeliveryInProgress, "an attempt of this delivery is already waiting to run")
	case errors.Is(err, store.ErrNotFound):
		return errCode(CodeNotFound)
	case err != nil:
		return fmt.Errorf("resending webhook delivery: %w", err)
	}
	return r.json(http.StatusAccepted, map[string]deliveryJSON{"delivery": deliveryOut(d)})
}

// testEventData is the data of a webhook.test event (spec 6.2).
type testEventData struct {
	WebhookID string `json:"webhookId"`
	Message   string `json:"message"`
}

// handleTestWebhook serves POST /api/v1/webhooks/{id}/test: queues one
// webhook.test event to this webhook, due now, with no retries, even when
// the webhook is off or does not subscribe to it.
func (a *API) handleTestWebhook(r *request) error {
	if err := a.takeWebhookLogLimit(r); err != nil {
		return err
	}
	w, err := a.ownWebhook(r)
	if err != nil {
		return err
	}
	now := r.now.UTC().Truncate(time.Millisecond)
	data, err := json.Marshal(testEventData{WebhookID: w.ID, Message: testEventMessage})
	if err != nil {
		return fmt.Errorf("building test event: %w", err)
	}
	body, err := webhooks.Body(webhooks.EventTest, r.owner.Website.ProjectID, data, now)
	if err != nil {
		return err
	}
	d := store.WebhookDelivery{ID: uuid.NewString(), WebhookID: w.ID, WebsiteID: w.WebsiteID, Event: webhooks.EventTest,
		Body: body, Status: store.DeliveryPending, OneShot: true, CreatedAt: now, NextAttemptAt: &now}
	err = a.st.AddWebhookDelivery(r.ctx, d)
	if errors.Is(err, store.ErrNotFound) {
		return errCode(CodeNotFound) // deleted meanwhile
	}
	if err != nil {
		return fmt.Errorf("queuing test event: %w", err)
	}
	return r.json(http.StatusAccepted, map[string]deliveryJSON{"delivery": deliveryOut(d)})
}

func (a *API) webhookRoutes(rt *router) {
	const base = "/api/v1/webhooks"
	rt.add(&route{method: http.MethodGet, pattern: base, auth: authKey, handle: a.handleListWebhooks})
	rt.add(&route{method: http.MethodPost, pattern: base, auth: authKey, scope: ScopeWebhooksWrite, handle: a.handleCreateWebhook})
	rt.add(&route{method: http.MethodPut, pattern: base + "/{id}", auth: authKey, scope: ScopeWebhooksWrite, handle: a.handleUpdateWebhook})
	rt.add(&route{method: http.MethodDelete, pattern: base + "/{id}", auth: authKey, scope: ScopeWebhooksWrite, handle: a.handleDeleteWebhook})
	rt.add(&route{method: http.MethodGet, pattern: base + "/{id}/deliveries", auth: authKey, scope: ScopeWebhooksWrite, handle: a.handleListDeliveries})
	rt.add(&route{method: http.MethodGet, pattern: base + "/{id}/deliveries/{deliveryId}", auth: authKey, scope: ScopeWebhooksWrite, handle: a.handleDelivery})
	rt.add(&route{method: http.MethodPost, pattern: base + "/{id}/deliveries/{deliveryId}/resend", auth: authKey, scope: ScopeWebhooksWrite, handle: a.handleResendDelivery})
	rt.add(&route{method: http.MethodPost, pattern: base + "/{id}/test", auth: authKey, scope: ScopeWebhooksWrite, handle: a.handleTestWebhook})
}
