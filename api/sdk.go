package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/relaybell/relaybell/analytics"
	"github.com/relaybell/relaybell/netpolicy"
	"github.com/relaybell/relaybell/notification"
	"github.com/relaybell/relaybell/onsite"
	"github.com/relaybell/relaybell/sdk"
	"github.com/relaybell/relaybell/store"
	"github.com/relaybell/relaybell/webpush"
)

// Limits of browser-supplied fields.
const (
	maxEndpointLen   = 4096
	maxExternalIDLen = 256
	maxUserAgentLen  = 512
	maxPageURLLen    = 2048
	maxTopics        = 50
	maxSlugLen       = 64
)

// project resolves the public Project ID of an SDK route; anything unknown
// is 404 not_found.
func (a *API) project(r *request) (store.Website, error) {
	id := r.param("projectId")
	if !isUUID(id) {
		return store.Website{}, errCode(CodeNotFound)
	}
	// Projects are cached with the keys (keyCache, under a name no key
	// hash takes): a website's change moves the auth version, which drops
	// them on every node.
	cacheKey := "project:" + id
	if owner, found, ok := a.keys.get(cacheKey, r.now); ok && found {
		return owner.Website, nil
	}
	gen := a.keys.generation()
	w, err := a.st.WebsiteByProjectID(r.ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		// Not cached: these routes take no key, and made-up project ids
		// would push the keys out of the cache.
		return store.Website{}, errCode(CodeNotFound)
	}
	if err != nil {
		return store.Website{}, fmt.Errorf("loading project: %w", err)
	}
	a.keys.put(cacheKey, store.KeyOwner{Website: w}, true, r.now, gen)
	return w, nil
}

// handleSDKConfig serves GET /api/v1/projects/{projectId}/config.
func (a *API) handleSDKConfig(r *request) error {
	w, err := a.project(r)
	if err != nil {
		return err
	}
	type topic struct {
		Name string `json:"name"`
		Slug string `json:"slug"`
	}
	list, err := a.defs.Topics(r.ctx, w.ID) // cached, as the prompt
	if err != nil {
		return err
	}
	topics := make([]topic, len(list))
	for i, t := range list {
		topics[i] = topic{t.Name, t.Slug}
	}
	// logo is the website's logo (PUT /logo), for the prompt; null: none.
	var logo *string
	if l := w.Settings.Logo; l != nil {
		logo = &l.URL
	}
	// The prompt the SDK follows (issue 36); null while it is off.
	var prompt *onsite.Prompt
	if p, err := a.prompt(r, a.defs.SiteSettings, w.ID); err != nil {
		return err
	} else if p.Enabled {
		prompt = &p
	}
	return r.json(http.StatusOK, struct {
		VAPIDPublicKey string         `json:"vapidPublicKey"`
		Topics         []topic        `json:"topics"`
		Logo           *string        `json:"logo"`
		Prompt         *onsite.Prompt `json:"prompt"`
	}{w.VAPIDPublicKey, topics, logo, prompt})
}

// subscriptionRequest is the body of POST /subscriptions.
type subscriptionRequest struct {
	Endpoint string `json:"endpoint"`
	Keys     struct {
		P256dh string `json:"p256dh"`
		Auth   string `json:"auth"`
	} `json:"keys"`
	// Replaces is the endpoint URL this subscription renews
	// (pushsubscriptionchange), and ReplacesAuth that endpoint's auth
	// secret: only its browser knows it, so nobody else can take the
	// endpoint over by naming its URL.
	Replaces     string         `json:"replaces"`
	ReplacesAuth string         `json:"replacesAuth"`
	ExternalID   nullableString `json:"externalId"`
	Language     string         `json:"language"`
	Timezone     string         `json:"timezone"`
	UserAgent    string         `json:"userAgent"`
	URL          string         `json:"url"`
	// Topics, when given (an array, even empty), is the subscriber's whole
	// set of opt-ins; absent or null leaves them as they are.
	Topics []string `json:"topics"`
	// ExternalIDHash is the hex HMAC-SHA256 of ExternalID under one of the
	// website's identity secrets, computed by the customer's server: the
	// proof identity verification asks of a link (identity.go).
	ExternalIDHash string `json:"externalIdHash"`
}

// nullableString tells an explicit null (Null) from an absent member or a
// string (Value).
type nullableString struct {
	Null  bool
	Value string
}

func (n *nullableString) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		n.Null = true
		return nil
	}
	return json.Unmarshal(b, &n.Value)
}

// handleSubscribe serves POST /api/v1/projects/{projectId}/subscriptions:
// 201 for a new endpoint, 200 with the same ids for a known one, including
// one renewed through replaces or unlinked from its person by an
// externalId of null.
func (a *API) handleSubscribe(r *request) error {
	w, err := a.project(r)
	if err != nil {
		return err
	}
	var in subscriptionRequest
	if err := decodeJSON(r.fc.Request.Body(), &in, lenient); err != nil {
		return err
	}
	sub, apiErr := a.subscriptionInput(r, w, in)
	if apiErr != nil {
		return apiErr
	}
	// Linking an external id is refused as a whole without a valid hash
	// when the website enforces identity verification: nothing is stored.
	if sub.ExternalID != "" {
		if err := a.verifyExternalID(r, w, sub.ExternalID, in.ExternalIDHash); err != nil {
			return err
		}
	}
	// The SDK registers on every page view of a subscribed visitor: a visit.
	sub.Visit, sub.SiteTimezone = store.VisitWeight, w.Timezone
	// A new browser's welcome is queued with its registration (package
	// onsite): its timer commits with the endpoint or not at all.
	if sub.Welcome, err = a.welcomeDelay(r, w.ID); err != nil {
		return err
	}
	// Concurrent registrations share a transaction; each is answered
	// once the one holding it committed.
	res, err := a.subs.Do(r.ctx, sub)
	if err != nil {
		return fmt.Errorf("storing subscription: %w", err)
	}
	if err := a.startAutomations(r, w.ID, res); err != nil {
		return err
	}
	if err := a.journeysSubscribed(r, w.ID, res); err != nil {
		return fmt.Errorf("enrolling in journeys: %w", err)
	}
	status := http.StatusOK
	if res.Created {
		status = http.StatusCreated
	}
	return r.json(status, map[string]string{"subscriberId": res.SubscriberID, "endpointId": res.EndpointID})
}

// subscriptionInput validates and normalises what the browser sent.
func (a *API) subscriptionInput(r *request, w store.Website, in subscriptionRequest) (store.SubscriptionInput, *Error) {
	endpoint := strings.TrimSpace(in.Endpoint)
	if endpoint == "" || len(endpoint) > maxEndpointLen {
		return store.SubscriptionInput{}, errorf(CodeInvalidURL, "endpoint must be a push service URL")
	}
	if err := netpolicy.CheckPushEndpoint(endpoint, a.cfg.PushAllowHosts); err != nil {
		return store.SubscriptionInput{}, errorf(CodeInvalidURL, "endpoint refused: %v", err)
	}
	if in.Keys.P256dh == "" || in.Keys.Auth == "" {
		return store.SubscriptionInput{}, errorf(CodeInvalidJSON, "keys.p256dh and keys.auth are required")
	}
	target, err := webpush.ParseSubscription(webpush.Subscription{Endpoint: endpoint, P256dh: in.Keys.P256dh, Auth: in.Keys.Auth})
	if err != nil {
		// "keys.p256dh is 3 bytes, want 65" and the like.
		return store.SubscriptionInput{}, errorf(CodeInvalidJSON, "keys.%s", strings.TrimPrefix(err.Error(), webpush.ErrInvalidSubscription.Error()+": "))
	}
	p256dh, auth := target.Keys()
	externalID := in.ExternalID.Value
	if len(externalID) > maxExternalIDLen || !utf8.ValidString(externalID) {
		return store.SubscriptionInput{}, errorf(CodeInvalidJSON, "externalId must be text of at most %d bytes", maxExternalIDLen)
	}
	// A replaced URL longer than any stored endpoint's cannot match one,
	// and one without its auth secret replaces nothing.
	replaces := strings.TrimSpace(in.Replaces)
	replacesAuth, err := webpush.CanonicalKey(in.ReplacesAuth)
	if len(replaces) > maxEndpointLen || err != nil || replacesAuth == "" {
		replaces, replacesAuth = "", ""
	}
	ua := strings.TrimSpace(in.UserAgent)
	if ua == "" {
		ua = string(r.fc.Request.Header.UserAgent())
	}
	ua = cut(ua, maxUserAgentLen)
	tz := strings.TrimSpace(in.Timezone)
	if !validTimezone(tz) {
		tz = ""
	}
	return store.SubscriptionInput{
		WebsiteID:    w.ID,
		Endpoint:     endpoint,
		Replaces:     replaces,
		ReplacesAuth: replacesAuth,
		P256dh:       p256dh,
		Auth:         auth,
		ExternalID:   externalID,
		Logout:       in.ExternalID.Null,
		Language:     normalizeLanguage(in.Language),
		Timezone:     tz,
		Country:      a.country(r),
		UserAgent:    ua,
		Device:       deviceType(ua),
		URL:          pageURL(in.URL),
		Topics:       topicSlugs(in.Topics),
		SetTopics:    in.Topics != nil,
		At:           r.now.UTC(),
	}, nil
}

// pageURL keeps the last page seen when it is an http(s) URL.
func pageURL(s string) string {
	s = strings.TrimSpace(s)
	if s == "" || len(s) > maxPageURLLen {
		return ""
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return ""
	}
	return s
}

// topicSlugs keeps the first 50 distinct lower-cased slugs; the store
// decides which exist.
func topicSlugs(in []string) []string {
	var out []string
	seen := make(map[string]bool)
	for _, s := range in {
		s = strings.ToLower(strings.TrimSpace(s))
		if s == "" || len(s) > maxSlugLen || seen[s] {
			continue
		}
		seen[s] = true
		out = append(out, s)
		if len(out) == maxTopics {
			break
		}
	}
	return out
}

// normalizeLanguage writes a BCP 47 tag in its usual case ("en-US",
// "zh-Hant-TW"); what is not a plausible tag is dropped.
func normalizeLanguage(s string) string {
	s = strings.TrimSpace(s)
	if s == "" || len(s) > 35 {
		return ""
	}
	parts := strings.FieldsFunc(s, func(r rune) bool { return r == '-' || r == '_' })
	for i, p := range parts {
		if len(p) == 0 || len(p) > 8 || !isAlnum(p) {
			return ""
		}
		switch {
		case i == 0:
			if len(p) < 2 || len(p) > 3 || !isAlpha(p) {
				return ""
			}
			parts[i] = strings.ToLower(p)
		case len(p) == 2 && isAlpha(p):
			parts[i] = strings.ToUpper(p) // region
		case len(p) == 4 && isAlpha(p):
			parts[i] = strings.ToUpper(p[:1]) + strings.ToLower(p[1:]) // script
		default:
			parts[i] = strings.ToLower(p)
		}
	}
	return strings.Join(parts, "-")
}

func isAlpha(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i] | 0x20; c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}

func isAlnum(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9') && !(c|0x20 >= 'a' && c|0x20 <= 'z') {
			return false
		}
	}
	return true
}

// cut shortens s to at most n bytes without splitting a character.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// handleUnsubscribe serves DELETE /api/v1/projects/{projectId}/subscriptions:
// the visitor turned notifications off. An unknown endpoint is fine too.
func (a *API) handleUnsubscribe(r *request) error {
	w, err := a.project(r)
	if err != nil {
		return err
	}
	var in struct {
		Endpoint string `json:"endpoint"`
	}
	if err := decodeJSON(r.fc.Request.Body(), &in, lenient); err != nil {
		return err
	}
	endpoint := strings.TrimSpace(in.Endpoint)
	if endpoint == "" {
		return errorf(CodeInvalidJSON, "endpoint is required")
	}
	if _, err := a.st.DeleteSubscription(r.ctx, w.ID, endpoint); err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("deleting subscription: %w", err)
	}
	return r.json(http.StatusOK, okBody)
}

// pingRequest is the body of the delivered and clicked pings.
type pingRequest struct {
	NotificationID string `json:"notificationId"`
	EndpointID     string `json:"endpointId"`
}

// handlePing serves POST /pings/delivered and /pings/clicked: 204 whatever
// the ids name (unknown ones are not told apart), counted once per
// (notification, endpoint, kind).
func (a *API) handlePing(kind string) func(r *request) error {
	return func(r *request) error {
		w, err := a.project(r)
		if err != nil {
			return err
		}
		var in pingRequest
		if err := decodeJSON(r.fc.Request.Body(), &in, lenient); err != nil {
			return err
		}
		if !isUUID(in.NotificationID) || !isUUID(in.EndpointID) {
			return r.noContent()
		}
		in.NotificationID, in.EndpointID = strings.ToLower(in.NotificationID), strings.ToLower(in.EndpointID)
		// A click's webhook event names the variant the browser got, so the
		// notification is read first and the event stored with the click, in
		// one transaction, when the click is new. A delivered ping reads it
		// only when new, for its analytics event. The store's
		// RecordInteractions checks the notification is the website's.
		var (
			n     store.Notification
			event *store.WebhookEvent
		)
		if kind == store.InteractionClicked {
			n, err = a.sends.notification(r.ctx, a.st, w.ID, in.NotificationID)
			if errors.Is(err, store.ErrNotFound) {
				return r.noContent()
			}
			if err != nil {
				return fmt.Errorf("loading notification: %w", err)
			}
			if event, err = clickedEvent(n, in.EndpointID); err != nil {
				return err
			}
		}
		// Concurrent pings share the read of their browsers and a
		// transaction; each is answered once the one holding it committed.
		// A browser the website does not have records nothing.
		res, err := a.pings.Do(r.ctx, store.Ping{WebsiteID: w.ID, NotificationID: in.NotificationID,
			EndpointID: in.EndpointID, Kind: kind, At: r.now.UTC(), Event: event})
		if err != nil {
			return fmt.Errorf("recording %s ping: %w", kind, err)
		}
		if !res.isNew {
			return r.noContent()
		}
		ep := res.endpoint
		if event == nil {
			if n, err = a.sends.notification(r.ctx, a.st, w.ID, in.NotificationID); err != nil {
				return fmt.Errorf("loading notification: %w", err)
			}
		}
		a.recordPing(r, kind, n, ep)
		a.journeysPinged(r, kind, n)
		if kind == store.InteractionClicked {
			a.learnActivity(r, ep.SubscriberID, store.ClickWeight)
		}
		return r.noContent()
	}
}

// pingAnswer is what a ping's batch answers it: whether it was new, and
// its browser (when new).
type pingAnswer struct {
	isNew    bool
	endpoint store.Endpoint
}

// recordPings records a batch of pings: one read of their browsers a
// website, then the pings of known browsers in one transaction.
func (a *API) recordPings(ctx context.Context, pings []store.Ping) ([]pingAnswer, error) {
	bySite := map[string][]string{}
	for _, p := range pings {
		bySite[p.WebsiteID] = append(bySite[p.WebsiteID], p.EndpointID)
	}
	type siteEndpoint struct{ website, id string }
	known := map[siteEndpoint]store.Endpoint{}
	for site, ids := range bySite {
		eps, err := a.st.Endpoints(ctx, site, ids)
		if err != nil {
			return nil, err
		}
		for _, e := range eps {
			known[siteEndpoint{site, e.ID}] = e
		}
	}
	out := make([]pingAnswer, len(pings))
	var record []store.Ping
	var of []int // record's index in pings
	for i, p := range pings {
		if e, ok := known[siteEndpoint{p.WebsiteID, p.EndpointID}]; ok {
			out[i].endpoint = e
			record, of = append(record, p), append(of, i)
		}
	}
	if len(record) == 0 {
		return out, nil
	}
	isNew, err := a.st.RecordInteractions(ctx, record)
	if err != nil {
		return nil, err
	}
	for j, i := range of {
		out[i].isNew = isNew[j]
	}
	return out, nil
}

// recordOnePing records one ping of a batch that failed, or a lone one, as
// the batch would have (so that only the ping at fault fails).
func (a *API) recordOnePing(ctx context.Context, p store.Ping) (pingAnswer, error) {
	out, err := a.recordPings(ctx, []store.Ping{p})
	if err != nil {
		return pingAnswer{}, err
	}
	return out[0], nil
}

// learnActivity counts a click toward the subscriber's most active hour
// (smart time). The click is stored already, so a failure here is logged,
// not answered. (A registration's visit is learned in its own transaction:
// SubscriptionInput.Visit.)
func (a *API) learnActivity(r *request, subscriberID string, weight int) {
	if err := a.st.LearnActivity(r.ctx, subscriberID, r.now, weight); err != nil {
		a.log.Warn("learning activity", "request_id", r.id, "subscriber_id", subscriberID, "err", err)
	}
}

// recordPing adds a delivered or clicked event to the send's event log. The
// counter is already stored, so a failure here is logged, not answered.
func (a *API) recordPing(r *request, kind string, n store.Notification, ep store.Endpoint) {
	ev := analytics.Event{
		Kind:           analytics.KindDelivered,
		WebsiteID:      n.WebsiteID,
		NotificationID: n.ID,
		EndpointID:     ep.ID,
		SubscriberID:   ep.SubscriberID,
		Device:         ep.Device,
		At:             r.now.UTC(),
	}
	if kind == store.InteractionClicked {
		ev.Kind = analytics.KindClicked
	}
	ev.Variant = variantOf(n, ep.ID)
	record := a.an.Record
	if now, ok := a.an.(nowRecorder); ok {
		record = now.RecordNow // not behind the push results' write gap
	}
	if err := record(r.ctx, []analytics.Event{ev}); err != nil {
		a.log.Warn("recording ping event", "request_id", r.id, "notification_id", n.ID, "kind", kind, "err", err)
	}
}

// nowRecorder is an analytics store whose writes are spaced, which can
// also write events at once (analytics.Batched): a ping waits for its
// event's write.
type nowRecorder interface {
	RecordNow(ctx context.Context, events []analytics.Event) error
}

// variantOf is the version ("a" or "b") of an A/B send the endpoint got;
// "" for any other send.
func variantOf(n store.Notification, endpointID string) string {
	if !n.AB {
		return ""
	}
	c, err := notification.DecodeContent(n.Content)
	if err != nil {
		return ""
	}
	return c.Variant(n.ID, endpointID, n.ABWinner)
}

// clickedEvent is the notification.clicked webhook event of the endpoint's
// click on n.
func clickedEvent(n store.Notification, endpointID string) (*store.WebhookEvent, error) {
	d := store.NotificationClicked{NotificationID: n.ID}
	if v := variantOf(n, endpointID); v != "" {
		d.Variant = &v
	}
	data, err := json.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("encoding clicked event: %w", err)
	}
	return &store.WebhookEvent{Event: store.EventNotificationClicked, Data: data}, nil
}

func (a *API) sdkRoutes(rt *router) {
	const base = "/api/v1/projects/{projectId}"
	add := func(method, path string, h func(*request) error) {
		rt.add(&route{method: method, pattern: base + path, cors: true, handle: h})
	}
	add(http.MethodGet, "/config", a.handleSDKConfig)
	add(http.MethodPost, "/subscriptions", a.handleSubscribe)
	add(http.MethodDelete, "/subscriptions", a.handleUnsubscribe)
	add(http.MethodPost, "/pings/delivered", a.handlePing(store.InteractionDelivered))
	add(http.MethodPost, "/pings/clicked", a.handlePing(store.InteractionClicked))
	add(http.MethodGet, "/onsite", a.handleSDKOnsite)
	add(http.MethodPost, "/pings/onsite", a.handleOnsitePing)
	add(http.MethodGet, "/sdk.js", a.handleScript(sdk.SDK))
	add(http.MethodGet, "/sw.js", a.handleScript(sdk.Worker))
}

// startAutomations starts the person's runs of the automations a
// registration triggers: subscribed for a new browser, topic_opt_in for
// each topic it opted into. The store recorded those triggers with the
// registration (store.PendingTrigger): a retry of a request that failed
// after storing the browser finds and starts them. Then the person is
// evaluated for segment entry (automations' and journeys').
func (a *API) startAutomations(r *request, websiteID string, res store.SubscriptionResult) error {
	// The store tells whether the person has triggers pending: most
	// registrations have none, and read none.
	if a.automations != nil && res.Pending {
		if _, err := a.automations.Pending(r.ctx, websiteID, res.SubscriberID); err != nil {
			return fmt.Errorf("starting automations: %w", err)
		}
	}
	return a.peopleChanged(r, websiteID, []string{res.SubscriberID})
}

// peopleChanged evaluates the segment_entered automations and journeys
// of people whose attributes changed, each named by subscriber or
// external id.
func (a *API) peopleChanged(r *request, websiteID string, people []string) error {
	if a.segments == nil {
		return nil
	}
	if _, err := a.segments.PeopleChanged(r.ctx, websiteID, people, r.now); err != nil {
		return fmt.Errorf("evaluating segment entry: %w", err)
	}
	return nil
}
