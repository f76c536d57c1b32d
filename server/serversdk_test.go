package server

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/relaybell/relaybell/client"
)

// sdkWebhookReceiver is a loopback receiver that keeps each delivery's
// body and headers, for the SDKs' verifiers.
type sdkWebhookReceiver struct {
	srv   *httptest.Server
	mu    sync.Mutex
	got   []sdkDelivery
	added chan struct{}
}

type sdkDelivery struct {
	Header http.Header
	Body   []byte
}

func newSDKWebhookReceiver(t *testing.T) *sdkWebhookReceiver {
	rc := &sdkWebhookReceiver{added: make(chan struct{}, 16)}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.got = append(rc.got, sdkDelivery{r.Header.Clone(), body})
		rc.mu.Unlock()
		rc.added <- struct{}{}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

// next waits for the next delivery; the test fails after a minute without
// one, which no correct server takes.
func (rc *sdkWebhookReceiver) next(t *testing.T) sdkDelivery {
	t.Helper()
	select {
	case <-rc.added:
	case <-time.After(time.Minute):
		t.Fatal("no webhook delivery")
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.got[len(rc.got)-1]
}

// scopedKey is a new key of w with only scopes.
func (ts *testServer) scopedKey(w website, scopes ...string) string {
	ts.t.Helper()
	var out struct {
		APIKey string `json:"apiKey"`
	}
	if code := ts.call("POST", "/admin/v1/websites/"+w.WebsiteID+"/keys", adminToken, map[string]any{"name": "scoped", "scopes": scopes}, &out); code != 201 {
		ts.t.Fatalf("create key: %d", code)
	}
	return out.APIKey
}

// The Go SDK against an embedded RelayBell: sending, listing by pages,
// detail, cancel, events with an Idempotency-Key, segments, topics,
// identity hashes, typed errors, and the verifier over a delivery
// RelayBell signed.
func TestGoSDKAgainstServer(t *testing.T) {
	rc := newSDKWebhookReceiver(t)
	u, _ := url.Parse(rc.srv.URL)
	ts := startServer(t, func(c *Config) { c.WebhookAllowHosts = u.Host })
	w := ts.createWebsite()
	b := ts.push.NewBrowser(w.VAPIDPublicKey)
	ts.subscribe(w, b, map[string]any{"externalId": "user-1"})
	ctx := context.Background()
	c := client.New(ts.base, w.APIKey)

	// Send, then page through the list one at a time.
	var ids []string
	for _, title := range []string{"One", "Two", "Three"} {
		acc, err := c.Send(ctx, client.SendRequest{Title: title, ExternalID: client.String("user-1")})
		if err != nil || !acc.OK || acc.Status != "queued" {
			t.Fatalf("Send %s: %+v %v", title, acc, err)
		}
		ids = append(ids, acc.NotificationID)
	}
	var titles []string
	for n, err := range c.Notifications(ctx, url.Values{"limit": {"1"}}) {
		if err != nil {
			t.Fatalf("Notifications: %v", err)
		}
		titles = append(titles, n.Title)
	}
	if want := []string{"Three", "Two", "One"}; len(titles) != 3 || titles[0] != want[0] || titles[1] != want[1] || titles[2] != want[2] {
		t.Fatalf("pages gave %q, want %q", titles, want)
	}
	d, err := c.GetNotification(ctx, ids[0])
	if err != nil || d.Notification.ID != ids[0] || d.Notification.Title != "One" {
		t.Fatalf("GetNotification: %+v %v", d, err)
	}

	// A scheduled send is canceled.
	acc, err := c.Send(ctx, client.SendRequest{Title: "Later", ExternalID: client.String("user-1"), SendAt: time.Now().Add(48 * time.Hour).UTC().Format(time.RFC3339)})
	if err != nil || acc.Status != "scheduled" {
		t.Fatalf("scheduled Send: %+v %v", acc, err)
	}
	if err := c.CancelNotification(ctx, acc.NotificationID); err != nil {
		t.Fatalf("CancelNotification: %v", err)
	}
	if d, err := c.GetNotification(ctx, acc.NotificationID); err != nil || d.Notification.Status != "canceled" {
		t.Fatalf("after cancel: %+v %v", d, err)
	}

	// Typed errors: an unknown id, an empty title.
	_, err = c.GetNotification(ctx, "00000000-0000-4000-8000-000000000000")
	var e *client.Error
	if !errors.As(err, &e) || e.Status != 404 || e.Code != "not_found" || e.RequestID == "" {
		t.Fatalf("unknown id: %v", err)
	}
	// An empty user id is refused, never a send to everyone.
	if _, err := c.Send(ctx, client.SendRequest{Title: "x", ExternalID: client.String("")}); !client.IsCode(err, "external_ids_empty") {
		t.Fatalf("an empty externalId: %v", err)
	}
	if _, err := c.Send(ctx, client.SendRequest{Title: "x", ExternalIDs: []string{}}); !client.IsCode(err, "external_ids_empty") {
		t.Fatalf("an empty externalIds: %v", err)
	}
	if _, err := c.Send(ctx, client.SendRequest{}); !client.IsCode(err, "title_required") {
		t.Fatalf("no title: %v", err)
	}
	eventsOnly := client.New(ts.base, ts.scopedKey(w, "events:write"))
	_, err = eventsOnly.Send(ctx, client.SendRequest{Title: "x"})
	if !errors.As(err, &e) || e.Status != 403 || e.Code != "insufficient_scope" || e.Required != "send" || e.RequestID == "" {
		t.Fatalf("events-only key sends: %v", err)
	}

	// Events: the same Idempotency-Key stores one event.
	ev := client.Event{Event: "purchase", ExternalID: "user-1", Properties: map[string]any{"value": 12.5, "currency": "EUR"}}
	first, err := c.Track(ctx, ev, "order-1001")
	if err != nil || !first.OK || first.EventID == "" {
		t.Fatalf("Track: %+v %v", first, err)
	}
	again, err := c.Track(ctx, ev, "order-1001")
	if err != nil || again.EventID != first.EventID {
		t.Fatalf("Track again: %+v %v, want event %s", again, err, first.EventID)
	}
	events, err := c.ListEvents(ctx)
	if err != nil || len(events) != 1 || events[0]["id"] != first.EventID {
		t.Fatalf("ListEvents: %v %v", events, err)
	}

	// Segments and topics through the typed lists and the generic calls.
	var seg client.Segment
	if err := c.Post(ctx, "/segments", map[string]any{"name": "German speakers", "filters": map[string]any{"match": "all", "rules": []any{map[string]any{"field": "language", "op": "is", "value": "de"}}}}, &seg); err != nil || seg.ID == "" {
		t.Fatalf("create segment: %+v %v", seg, err)
	}
	segs, err := c.ListSegments(ctx)
	if err != nil || len(segs) != 1 || segs[0].ID != seg.ID || segs[0].Name != "German speakers" {
		t.Fatalf("ListSegments: %+v %v", segs, err)
	}
	var topic client.Topic
	if err := c.Post(ctx, "/topics", map[string]any{"name": "Release notes"}, &topic); err != nil || topic.Slug == "" {
		t.Fatalf("create topic: %+v %v", topic, err)
	}
	topics, err := c.ListTopics(ctx)
	if err != nil || len(topics) != 1 || topics[0].Name != "Release notes" {
		t.Fatalf("ListTopics: %+v %v", topics, err)
	}
	if _, err := c.Stats(ctx, nil); err != nil {
		t.Fatalf("Stats: %v", err)
	}

	// Identity verification: a hash from IdentityHash links; another is refused.
	var ident struct {
		Mode      string `json:"mode"`
		NewSecret struct {
			Secret string `json:"secret"`
		} `json:"newSecret"`
	}
	if err := c.Put(ctx, "/identity", map[string]any{"addSecret": true, "mode": "enforce"}, &ident); err != nil || ident.NewSecret.Secret == "" || ident.Mode != "enforce" {
		t.Fatalf("PUT /identity: %+v %v", ident, err)
	}
	sub := ts.push.NewBrowser(w.VAPIDPublicKey).Subscription()
	reg := map[string]any{"endpoint": sub.Endpoint, "keys": map[string]string{"p256dh": sub.P256dh, "auth": sub.Auth}, "externalId": "user-2",
		"externalIdHash": client.IdentityHash(ident.NewSecret.Secret, "user-2")}
	if code := ts.call("POST", "/api/v1/projects/"+w.ProjectID+"/subscriptions", "", reg, nil); code != 201 {
		t.Fatalf("subscribe with IdentityHash: %d", code)
	}
	reg["externalIdHash"] = client.IdentityHash(ident.NewSecret.Secret, "user-3")
	if code := ts.call("POST", "/api/v1/projects/"+w.ProjectID+"/subscriptions", "", reg, nil); code != 403 {
		t.Fatalf("subscribe with another id's hash: %d, want 403", code)
	}

	// A webhook test delivery, signed by RelayBell, passes the verifier;
	// tampered or with another secret it does not.
	hook, err := c.CreateWebhook(ctx, rc.srv.URL+"/in", []string{"webhook.test"})
	if err != nil || hook.Secret == "" {
		t.Fatalf("CreateWebhook: %+v %v", hook, err)
	}
	delivery, err := c.TestWebhook(ctx, hook.ID)
	if err != nil || delivery.ID == "" || delivery.Event != "webhook.test" {
		t.Fatalf("TestWebhook: %+v %v", delivery, err)
	}
	got := rc.next(t)
	if got.Header.Get(client.HeaderDelivery) != delivery.ID {
		t.Fatalf("delivery id %q, want %q", got.Header.Get(client.HeaderDelivery), delivery.ID)
	}
	v := client.Verifier{Secrets: []string{hook.Secret}}
	if err := v.Verify(got.Header.Get(client.HeaderWebhookSignature), got.Body); err != nil {
		t.Fatalf("verify RelayBell's delivery: %v (header %q)", err, got.Header.Get(client.HeaderWebhookSignature))
	}
	if got.Header.Get(client.HeaderSignature) == "" || got.Header.Get(client.HeaderEvent) != "webhook.test" {
		t.Fatalf("delivery headers %v", got.Header)
	}
	if err := v.Verify(got.Header.Get(client.HeaderWebhookSignature), append(got.Body, ' ')); !errors.Is(err, client.ErrMismatch) {
		t.Fatalf("tampered body: %v", err)
	}
	other := client.Verifier{Secrets: []string{"whsec_other"}}
	if err := other.Verify(got.Header.Get(client.HeaderWebhookSignature), got.Body); !errors.Is(err, client.ErrMismatch) {
		t.Fatalf("other secret: %v", err)
	}
	hooks, err := c.ListWebhooks(ctx)
	if err != nil || len(hooks) != 1 || hooks[0].ID != hook.ID || hooks[0].Secret != "" {
		t.Fatalf("ListWebhooks: %+v %v", hooks, err)
	}
	var log []string
	for d, err := range c.WebhookDeliveries(ctx, hook.ID) {
		if err != nil {
			t.Fatalf("WebhookDeliveries: %v", err)
		}
		log = append(log, d.ID+" "+d.Event)
	}
	if len(log) != 1 || log[0] != delivery.ID+" webhook.test" {
		t.Fatalf("delivery log %q", log)
	}
}
