package api

import (
	"errors"
	"net/http"
	"time"

	"github.com/relaybell/relaybell/integrations"
	"github.com/relaybell/relaybell/store"
)

// The commerce platforms' receivers (issue 37, part 2): POST
// /integrations/shopify/{projectId} and /integrations/woocommerce/{projectId}
// take no key, the body signed with the website's commerce signing secret
// instead; GET /integrations shows them; POST /integrations/secret/rotate
// rotates the secret. What a delivery does is package integrations'.

// recentDeliveries is how many deliveries GET /integrations lists per
// platform.
const recentDeliveries = 10

// Config.CommerceRateLimit bounds the requests to the receivers from one
// address (an IPv6 one's /64), both platforms and every project
// together, counted before any signature or store read, so that a flood
// of unsigned requests costs a counter each past it (the default's
// reasons: DefaultCommerceRateLimit).

func (a *API) integrationRoutes(rt *router) {
	if a.integrations == nil {
		return
	}
	for _, p := range integrations.Platforms {
		rt.add(&route{method: http.MethodPost, pattern: "/api/v1/integrations/" + p + "/{projectId}", handle: a.receiver(p)})
	}
	rt.add(&route{method: http.MethodGet, pattern: "/api/v1/integrations", auth: authKey, handle: a.handleListIntegrations})
	rt.add(&route{method: http.MethodPost, pattern: "/api/v1/integrations/secret/rotate", auth: authKey, scope: ScopeSettingsWrite, handle: a.handleRotateCommerceSecret})
}

// receiveAnswer is the 200 body of a receiver.
type receiveAnswer struct {
	OK       bool                       `json:"ok"`
	Replayed bool                       `json:"replayed"`
	Events   []integrations.ResultEvent `json:"events"`
	Ignored  *string                    `json:"ignored"`
}

// receiver serves POST /api/v1/integrations/{platform}/{projectId}.
// Another website's or an unknown project answers 404; a wrong or missing
// signature 401 invalid_signature, and neither does anything. Past
// Config.CommerceRateLimit from one address (unless negative): 429
// rate_limited with Retry-After, before anything else.
func (a *API) receiver(platform string) func(r *request) error {
	names := integrations.HeaderNames[platform]
	return func(r *request) error {
		if limit := a.cfg.CommerceRateLimit; limit >= 0 {
			if err := a.takeShared(r, a.ipLimit(r, "commerce", time.Minute, limit),
				"this address may call the commerce receivers %d times a minute"); err != nil {
				return err
			}
		}
		w, err := a.project(r)
		if err != nil {
			return err
		}
		body := r.fc.Request.Body()
		if len(body) > integrations.MaxBody {
			return errorf(CodePayloadTooLarge, "a delivery is at most %d bytes", integrations.MaxBody)
		}
		h := &r.fc.Request.Header
		res, err := a.integrations.Receive(r.ctx, integrations.Delivery{Website: w, Platform: platform, Body: body, At: r.now,
			Headers: integrations.Headers{Signature: string(h.Peek(names.Signature)), DeliveryID: string(h.Peek(names.DeliveryID)),
				Topic: string(h.Peek(names.Topic))}})
		switch {
		case errors.Is(err, integrations.ErrSignature):
			return errorf(CodeInvalidSignature, "%s must be the base64 HMAC-SHA256 of the body under the commerce signing secret", names.Signature)
		case errors.Is(err, integrations.ErrBody):
			return errorf(CodeInvalidJSON, "the body must be one JSON object in UTF-8, as the platform sends it")
		case errors.Is(err, integrations.ErrDeliveryID):
			return errorf(CodeDeliveryIDMissing, "%s is required (at most %d characters)", names.DeliveryID, integrations.MaxDeliveryID)
		case err != nil:
			return err
		}
		return r.json(http.StatusOK, receiveAnswer{OK: true, Replayed: res.Replayed, Events: res.Events, Ignored: nonEmpty(res.Ignored)})
	}
}

// inboundJSON is a delivery as GET /integrations lists it.
type inboundJSON struct {
	DeliveryID string    `json:"deliveryId"`
	Topic      string    `json:"topic"`
	Event      *string   `json:"event"`
	Error      *string   `json:"error"`
	ReceivedAt time.Time `json:"receivedAt"`
}

// integrationJSON is one platform in GET /integrations.
type integrationJSON struct {
	Platform     string        `json:"platform"`
	ReceiverURL  string        `json:"receiverUrl"`
	LastDelivery *inboundJSON  `json:"lastDelivery"`
	LastError    *inboundJSON  `json:"lastError"`
	Deliveries   []inboundJSON `json:"deliveries"`
}

// handleListIntegrations serves GET /api/v1/integrations: each platform's
// receiver URL, its latest deliveries, the last and the last that failed
// (however long ago: an ignored topic or nothing to track is no failure).
func (a *API) handleListIntegrations(r *request) error {
	w := r.owner.Website
	out := make([]integrationJSON, 0, len(integrations.Platforms))
	for _, p := range integrations.Platforms {
		ds, err := a.st.IntegrationDeliveries(r.ctx, w.ID, p, recentDeliveries)
		if err != nil {
			return err
		}
		in := integrationJSON{Platform: p, ReceiverURL: a.publicURL(r) + "/api/v1/integrations/" + p + "/" + w.ProjectID,
			Deliveries: make([]inboundJSON, len(ds))}
		for i, d := range ds {
			in.Deliveries[i] = viewInbound(d)
		}
		if len(ds) > 0 {
			in.LastDelivery = &in.Deliveries[0]
		}
		switch last, err := a.st.LastIntegrationError(r.ctx, w.ID, p); {
		case err == nil:
			v := viewInbound(last)
			in.LastError = &v
		case !errors.Is(err, store.ErrNotFound):
			return err
		}
		out = append(out, in)
	}
	by := w.Settings.CommerceExternalID
	if by == "" {
		by = integrations.ByCustomerID
	}
	return r.json(http.StatusOK, map[string]any{"integrations": out, "externalId": by,
		"previousSecretValidUntil": validUntil(w.Settings, r.now)})
}

func viewInbound(d store.IntegrationDelivery) inboundJSON {
	return inboundJSON{DeliveryID: d.DeliveryID, Topic: d.Topic, Event: nonEmpty(d.Event), Error: nonEmpty(d.Error), ReceivedAt: d.ReceivedAt.UTC()}
}

// validUntil is when the previous secret stops being valid, nil when
// none is valid any more.
func validUntil(s store.Settings, now time.Time) *time.Time {
	if t := integrations.PreviousValidUntil(s); t != nil && now.Before(*t) {
		return t
	}
	return nil
}

// handleRotateCommerceSecret serves POST /api/v1/integrations/secret/rotate
// (settings:write): a new secret, shown in the answer (and to full or
// settings:write keys by GET /settings), the old one still valid for 24
// hours.
func (a *API) handleRotateCommerceSecret(r *request) error {
	if len(r.fc.Request.Body()) > 0 {
		if err := decodeJSON(r.fc.Request.Body(), &struct{}{}, strict); err != nil {
			return err
		}
	}
	w, err := a.st.UpdateWebsite(r.ctx, r.owner.Website.ID, func(w *store.Website) error {
		integrations.Rotate(&w.Settings, r.now)
		return nil
	})
	if err != nil {
		return err
	}
	a.keys.purge()
	return r.json(http.StatusOK, map[string]any{"commerceSigningSecret": w.Settings.CommerceSecret,
		"previousSecretValidUntil": validUntil(w.Settings, r.now)})
}
