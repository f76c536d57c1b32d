package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relaybell/relaybell/pusher"
	"github.com/relaybell/relaybell/webhooks/signature"
	"github.com/relaybell/relaybell/webpush/webpushtest"
)

// testServer is an embedded RelayBell in this process, talking to a fake
// push service over TLS and HTTP/2.
type testServer struct {
	t    *testing.T
	base string
	push *webpushtest.Server
	srv  *Server
}

const adminToken = "test-admin-token"

func startServer(t *testing.T, mutate ...func(*Config)) *testServer {
	t.Helper()
	push := webpushtest.NewServer()
	t.Cleanup(push.Close)
	u, _ := url.Parse(push.URL)
	cfg := Config{
		Roles:          All,
		HTTPAddr:       "127.0.0.1:0",
		DataDir:        t.TempDir(),
		AdminToken:     adminToken,
		PushAllowHosts: u.Host,
		NodeName:       "test",
		ShutdownGrace:  5 * time.Second,
		Pusher: pusher.Config{
			TLSConfig:   push.TLSConfig(),
			BaseBackoff: 20 * time.Millisecond,
			MaxBackoff:  2 * time.Second,
		},
	}
	for _, f := range mutate {
		f(&cfg)
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		logger = slog.New(slog.NewTextHandler(&testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	ctx, cancel := context.WithCancel(context.Background())
	s, err := New(ctx, cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	addr, err := s.Listen()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("server: %v", err)
		}
		s.Close()
	})
	return &testServer{t: t, base: "http://" + addr.String(), push: push, srv: s}
}

type testWriter struct{ t *testing.T }

func (w *testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// call sends a request and decodes the JSON answer into out (when not nil).
func (ts *testServer) call(method, path, token string, body any, out any) int {
	ts.t.Helper()
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			ts.t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, ts.base+path, rd)
	if err != nil {
		ts.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		ts.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.Header.Get("X-Request-Id") == "" {
		ts.t.Errorf("%s %s: no X-Request-Id", method, path)
	}
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			ts.t.Fatalf("%s %s: %d %s: %v", method, path, resp.StatusCode, data, err)
		}
	}
	return resp.StatusCode
}

type website struct {
	AccountID      string `json:"accountId"`
	WebsiteID      string `json:"websiteId"`
	ProjectID      string `json:"projectId"`
	APIKey         string `json:"apiKey"`
	VAPIDPublicKey string `json:"vapidPublicKey"`
}

func (ts *testServer) createWebsite() website {
	ts.t.Helper()
	var w website
	if code := ts.call("POST", "/admin/v1/websites", adminToken, map[string]any{"name": "Shop", "url": "https://shop.example"}, &w); code != 201 {
		ts.t.Fatalf("create website: %d", code)
	}
	return w
}

type subscribed struct {
	SubscriberID string `json:"subscriberId"`
	EndpointID   string `json:"endpointId"`
}

func (ts *testServer) subscribe(w website, b *webpushtest.Browser, extra map[string]any) subscribed {
	ts.t.Helper()
	sub := b.Subscription()
	body := map[string]any{"endpoint": sub.Endpoint, "keys": map[string]string{"p256dh": sub.P256dh, "auth": sub.Auth}}
	for k, v := range extra {
		body[k] = v
	}
	var out subscribed
	if code := ts.call("POST", "/api/v1/projects/"+w.ProjectID+"/subscriptions", "", body, &out); code != 201 {
		ts.t.Fatalf("subscribe: %d", code)
	}
	return out
}

type detail struct {
	Notification struct {
		ID         string `json:"id"`
		Status     string `json:"status"`
		Recipients int64  `json:"recipients"`
		Processed  int64  `json:"processed"`
		Sent       int64  `json:"sent"`
		Failed     int64  `json:"failed"`
		Pruned     int64  `json:"pruned"`
		Delivered  int64  `json:"delivered"`
		Clicked    int64  `json:"clicked"`
	} `json:"notification"`
	Funnel  map[string]int64 `json:"funnel"`
	Errors  []map[string]any `json:"errors"`
	Devices []map[string]any `json:"devices"`
}

func (ts *testServer) send(w website, body map[string]any) string {
	ts.t.Helper()
	var out struct {
		OK             bool   `json:"ok"`
		NotificationID string `json:"notificationId"`
		Status         string `json:"status"`
	}
	if code := ts.call("POST", "/api/v1/notifications", w.APIKey, body, &out); code != 202 || !out.OK || out.Status != "queued" {
		ts.t.Fatalf("send: %d %+v", code, out)
	}
	return out.NotificationID
}

func (ts *testServer) waitSent(w website, id string) detail {
	ts.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var d detail
		if code := ts.call("GET", "/api/v1/notifications/"+id, w.APIKey, nil, &d); code != 200 {
			ts.t.Fatalf("detail: %d", code)
		}
		if d.Notification.Status == "sent" || d.Notification.Status == "failed" {
			return d
		}
		if time.Now().After(deadline) {
			ts.t.Fatalf("send %s still %s: %+v", id, d.Notification.Status, d.Notification)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type payload struct {
	NotificationID     string `json:"notificationId"`
	EndpointID         string `json:"endpointId"`
	Title              string `json:"title"`
	Body               string `json:"body"`
	URL                string `json:"url"`
	Icon               string `json:"icon"`
	Actions            []any  `json:"actions"`
	RequireInteraction bool   `json:"requireInteraction"`
	Tag                string `json:"tag"`
	Variant            any    `json:"variant"`
}

func received(t *testing.T, b *webpushtest.Browser, notificationID string) []payload {
	t.Helper()
	var out []payload
	for _, d := range b.Received() {
		var p payload
		if err := json.Unmarshal(d.Payload, &p); err != nil {
			t.Fatalf("payload %s: %v", d.Payload, err)
		}
		if p.NotificationID == notificationID {
			out = append(out, p)
		}
	}
	return out
}

func TestBroadcastReachesEveryBrowserEncrypted(t *testing.T) {
	ts := startServer(t)
	w := ts.createWebsite()

	const healthy = 8
	browsers := make([]*webpushtest.Browser, healthy)
	endpoints := make([]string, healthy)
	for i := range browsers {
		browsers[i] = ts.push.NewBrowser(w.VAPIDPublicKey)
		endpoints[i] = ts.subscribe(w, browsers[i], map[string]any{"language": "en-US"}).EndpointID
	}
	// One browser retried after a 429 with Retry-After, one gone (410),
	// one that refuses the payload (413).
	flaky := ts.push.NewBrowser(w.VAPIDPublicKey)
	flaky.SetBehavior(webpushtest.Behavior{Status: 429, RetryAfter: "0", Times: 1})
	gone := ts.push.NewBrowser(w.VAPIDPublicKey)
	gone.SetBehavior(webpushtest.Behavior{Status: 410})
	tooBig := ts.push.NewBrowser(w.VAPIDPublicKey)
	tooBig.SetBehavior(webpushtest.Behavior{Status: 413})
	for _, b := range []*webpushtest.Browser{flaky, gone, tooBig} {
		ts.subscribe(w, b, nil)
	}

	id := ts.send(w, map[string]any{"title": "Sale", "body": "Everything must go", "ttl": 3600, "tag": "sale",
		"actions": []map[string]string{{"title": "Shop", "url": "https://shop.example/sale"}}})
	d := ts.waitSent(w, id)

	n := d.Notification
	if n.Status != "sent" || n.Recipients != 11 || n.Sent != 9 || n.Failed != 1 || n.Pruned != 1 || n.Processed != 11 {
		t.Fatalf("counters: %+v", n)
	}
	if n.Recipients != n.Sent+n.Failed+n.Pruned {
		t.Fatalf("recipients %d != sent+failed+pruned", n.Recipients)
	}
	if d.Funnel["expired"] != 1 || d.Funnel["sent"] != 9 {
		t.Fatalf("funnel %v", d.Funnel)
	}
	for i, b := range append(browsers, flaky) {
		got := received(t, b, id)
		if len(got) != 1 {
			t.Fatalf("browser %d got %d pushes", i, len(got))
		}
		p := got[0]
		if p.Title != "Sale" || p.Body != "Everything must go" || p.URL != "https://shop.example" || p.Tag != "sale" || len(p.Actions) != 1 || p.Variant != nil {
			t.Fatalf("browser %d payload %+v", i, p)
		}
		if i < healthy && p.EndpointID != endpoints[i] {
			t.Fatalf("browser %d endpointId %s, want %s", i, p.EndpointID, endpoints[i])
		}
	}
	for _, dl := range browsers[0].Received() {
		if dl.TTL != 3600 || dl.Urgency != "normal" || dl.Proto != "HTTP/2.0" {
			t.Fatalf("delivery headers: ttl %d urgency %q proto %s", dl.TTL, dl.Urgency, dl.Proto)
		}
	}
	if errs := fmt.Sprint(d.Errors); !strings.Contains(errs, "413") || !strings.Contains(errs, "expired") {
		t.Fatalf("errors %v", d.Errors)
	}

	// The pruned subscription is gone: the next broadcast skips it.
	id2 := ts.send(w, map[string]any{"title": "Again"})
	d2 := ts.waitSent(w, id2)
	if d2.Notification.Recipients != 10 || len(received(t, gone, id2)) != 0 {
		t.Fatalf("second send: %+v", d2.Notification)
	}
}

func TestTargetingExternalIDsAndFilters(t *testing.T) {
	ts := startServer(t)
	w := ts.createWebsite()

	laptop := ts.push.NewBrowser(w.VAPIDPublicKey)
	phone := ts.push.NewBrowser(w.VAPIDPublicKey)
	other := ts.push.NewBrowser(w.VAPIDPublicKey)
	german := ts.push.NewBrowser(w.VAPIDPublicKey)
	a := ts.subscribe(w, laptop, map[string]any{"externalId": "user-1", "language": "en"})
	b := ts.subscribe(w, phone, map[string]any{"externalId": "user-1", "language": "en",
		"userAgent": "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 Chrome/130 Mobile Safari/537.36"})
	ts.subscribe(w, other, map[string]any{"externalId": "user-2", "language": "en"})
	ts.subscribe(w, german, map[string]any{"language": "de-DE"})
	if a.SubscriberID != b.SubscriberID || a.EndpointID == b.EndpointID {
		t.Fatalf("one person on two browsers: %+v %+v", a, b)
	}

	id := ts.send(w, map[string]any{"title": "For you", "externalId": "user-1"})
	d := ts.waitSent(w, id)
	if d.Notification.Recipients != 2 || d.Notification.Sent != 2 {
		t.Fatalf("externalId send: %+v", d.Notification)
	}
	if len(received(t, laptop, id)) != 1 || len(received(t, phone, id)) != 1 || len(received(t, other, id)) != 0 {
		t.Fatal("externalId send reached the wrong browsers")
	}

	id = ts.send(w, map[string]any{"title": "Hallo", "filters": map[string]any{"rules": []map[string]any{{"field": "language", "op": "contains", "value": "DE"}}}})
	if d := ts.waitSent(w, id); d.Notification.Sent != 1 || len(received(t, german, id)) != 1 {
		t.Fatalf("filter send: %+v", d.Notification)
	}

	id = ts.send(w, map[string]any{"title": "Not for user-1", "externalIds": []string{"user-1", "user-2"},
		"excludeFilters": map[string]any{"rules": []map[string]any{{"field": "external_id", "value": "user-1"}}}})
	if d := ts.waitSent(w, id); d.Notification.Sent != 1 || len(received(t, other, id)) != 1 {
		t.Fatalf("exclude send: %+v", d.Notification)
	}
}

func TestScheduledSendGoesOutWhenDue(t *testing.T) {
	ts := startServer(t)
	w := ts.createWebsite()
	b := ts.push.NewBrowser(w.VAPIDPublicKey)
	ts.subscribe(w, b, nil)
	var out struct {
		NotificationID string `json:"notificationId"`
		Status         string `json:"status"`
	}
	at := time.Now().Add(1500 * time.Millisecond).UTC().Format(time.RFC3339Nano)
	if code := ts.call("POST", "/api/v1/notifications", w.APIKey, map[string]any{"title": "Later", "sendAt": at}, &out); code != 202 || out.Status != "scheduled" {
		t.Fatalf("schedule: %d %+v", code, out)
	}
	if len(received(t, b, out.NotificationID)) != 0 {
		t.Fatal("sent before its time")
	}
	d := ts.waitSent(w, out.NotificationID)
	if d.Notification.Sent != 1 || len(received(t, b, out.NotificationID)) != 1 {
		t.Fatalf("scheduled send: %+v", d.Notification)
	}
}

// waitReceived waits until the browser got the notification once.
func waitReceived(t *testing.T, b *webpushtest.Browser, notificationID string) payload {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if got := received(t, b, notificationID); len(got) > 0 {
			if len(got) > 1 {
				t.Fatalf("notification %s received %d times", notificationID, len(got))
			}
			return got[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("notification %s never received", notificationID)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Each browser gets a per-time-zone send at the local time: the one whose
// clock reads it now at once (the outbox sweep releases its wave), the one
// in Tokyo hours later, so the send stays sending.
func TestPerTimezoneSendReachesEachZoneAtItsTime(t *testing.T) {
	ts := startServer(t)
	w := ts.createWebsite()
	here := ts.push.NewBrowser(w.VAPIDPublicKey)
	tokyo := ts.push.NewBrowser(w.VAPIDPublicKey)
	ts.subscribe(w, here, map[string]any{"timezone": "UTC"})
	ts.subscribe(w, tokyo, map[string]any{"timezone": "Asia/Tokyo"})
	if time.Now().Second() > 50 {
		time.Sleep(time.Duration(61-time.Now().Second()) * time.Second) // the minute must not turn meanwhile
	}
	id := ts.send(w, map[string]any{"title": "Good morning", "perTimezone": true, "localTime": time.Now().UTC().Format("15:04")})
	waitReceived(t, here, id)
	time.Sleep(300 * time.Millisecond)
	if got := received(t, tokyo, id); len(got) != 0 {
		t.Fatal("Tokyo got the send at another local time")
	}
	var d detail
	ts.call("GET", "/api/v1/notifications/"+id, w.APIKey, nil, &d)
	if d.Notification.Status != "sending" || d.Notification.Sent != 1 {
		t.Fatalf("detail after the first zone: %+v", d.Notification)
	}
}

// A subscription counts as a visit, so a smart-time send reaches a new
// subscriber in the hour they subscribed in, whatever their zone.
func TestSmartTimeSendLearnsFromVisits(t *testing.T) {
	ts := startServer(t)
	w := ts.createWebsite()
	a := ts.push.NewBrowser(w.VAPIDPublicKey)
	b := ts.push.NewBrowser(w.VAPIDPublicKey)
	ts.subscribe(w, a, map[string]any{"timezone": "America/Chicago"})
	ts.subscribe(w, b, map[string]any{"timezone": "Asia/Kolkata"})
	id := ts.send(w, map[string]any{"title": "Now is your time", "smartTime": true})
	waitReceived(t, a, id)
	waitReceived(t, b, id)
	if d := ts.waitSent(w, id); d.Notification.Sent != 2 {
		t.Fatalf("smart send: %+v", d.Notification)
	}
}

// A webhook receiver on loopback (allow-listed) gets the events of a
// subscription and a broadcast, signed with the secret POST /webhooks
// showed, from the engine the embedded default runs.
func TestWebhookReceivesSignedEvents(t *testing.T) {
	var (
		mu     sync.Mutex
		events = map[string][]byte{}
		heads  = map[string]http.Header{}
	)
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		events[r.Header.Get(signature.HeaderEvent)] = body
		heads[r.Header.Get(signature.HeaderEvent)] = r.Header.Clone()
		mu.Unlock()
	}))
	defer rc.Close()
	u, _ := url.Parse(rc.URL)
	ts := startServer(t, func(c *Config) { c.WebhookAllowHosts = u.Host })
	w := ts.createWebsite()
	var created struct {
		Webhook struct {
			ID     string `json:"id"`
			Secret string `json:"secret"`
		} `json:"webhook"`
	}
	if code := ts.call("POST", "/api/v1/webhooks", w.APIKey, map[string]any{"url": rc.URL + "/in"}, &created); code != 201 {
		t.Fatalf("create webhook: %d", code)
	}
	b := ts.push.NewBrowser(w.VAPIDPublicKey)
	sub := ts.subscribe(w, b, nil)
	id := ts.send(w, map[string]any{"title": "Hello"})
	ts.waitSent(w, id)
	wait := func(event string) ([]byte, http.Header) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			mu.Lock()
			body, h := events[event], heads[event]
			mu.Unlock()
			if body != nil {
				return body, h
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatalf("no %s event", event)
		return nil, nil
	}
	v := signature.Verifier{Secret: created.Webhook.Secret}
	body, h := wait("notification.sent")
	if err := v.Verify(h.Get(signature.HeaderWebhookSignature), h.Get(signature.HeaderDelivery), body); err != nil {
		t.Fatalf("notification.sent signature: %v", err)
	}
	var sent struct {
		Event     string          `json:"event"`
		Data      json.RawMessage `json:"data"`
		ProjectID string          `json:"projectId"`
	}
	if err := json.Unmarshal(body, &sent); err != nil {
		t.Fatal(err)
	}
	want := `{"notificationId":"` + id + `","recipients":1,"sent":1,"failed":0,"pruned":0}`
	if sent.Event != "notification.sent" || string(sent.Data) != want || sent.ProjectID != w.ProjectID {
		t.Fatalf("notification.sent body %s", body)
	}
	body, _ = wait("subscriber.created")
	if !strings.Contains(string(body), `"subscriberId":"`+sub.SubscriberID+`"`) {
		t.Fatalf("subscriber.created body %s", body)
	}
}
