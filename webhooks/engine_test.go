package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relaybell/relaybell/webhooks/smtptest"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/netpolicy"
	"github.com/relaybell/relaybell/store"
	"github.com/relaybell/relaybell/store/postgres"
	"github.com/relaybell/relaybell/store/postgres/pgtest"
	"github.com/relaybell/relaybell/store/sqlite"
	"github.com/relaybell/relaybell/webhooks/signature"
)

// openStore opens SQLite in a temporary directory, or with
// RELAYBELL_TEST_STORE=postgres a schema of its own in PostgreSQL (make
// test runs the package both ways).
func openStore(t *testing.T) store.Store {
	t.Helper()
	ctx := context.Background()
	var (
		st  store.Store
		err error
	)
	switch kind := os.Getenv("RELAYBELL_TEST_STORE"); kind {
	case "", "sqlite":
		st, err = sqlite.Open(ctx, filepath.Join(t.TempDir(), "store.db"), nil)
	case "postgres":
		st, err = postgres.Open(ctx, pgtest.DSN(t), nil)
	default:
		t.Fatalf("RELAYBELL_TEST_STORE=%q: want sqlite or postgres", kind)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// receiver is a webhook receiver on loopback that records every request
// and answers with its handler (200 when nil).
type receiver struct {
	*httptest.Server
	mu       sync.Mutex
	requests []received
	handler  func(w http.ResponseWriter, r *http.Request, n int)
}

type received struct {
	header http.Header
	body   []byte
}

func newReceiver(t *testing.T) *receiver {
	rc := &receiver{}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.requests = append(rc.requests, received{r.Header.Clone(), body})
		n, h := len(rc.requests), rc.handler
		rc.mu.Unlock()
		if h != nil {
			h(w, r, n)
		}
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) got() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.requests...)
}

func (rc *receiver) answer(h func(w http.ResponseWriter, r *http.Request, n int)) {
	rc.mu.Lock()
	rc.handler = h
	rc.mu.Unlock()
}

func (rc *receiver) hostPort() string { return strings.TrimPrefix(rc.URL, "http://") }

func status(code int) func(http.ResponseWriter, *http.Request, int) {
	return func(w http.ResponseWriter, _ *http.Request, _ int) { w.WriteHeader(code) }
}

// rig is an engine on a real store with a fake clock and a receiver on
// loopback that the allow-list opens.
type rig struct {
	t     *testing.T
	ctx   context.Context
	st    store.Store
	clock time.Time
	mu    sync.Mutex
	e     *Engine
	rc    *receiver
	acct  store.Account
	site  store.Website
	hook  store.Webhook
}

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func newRig(t *testing.T, extraAllow ...string) *rig {
	t.Helper()
	r := &rig{t: t, ctx: context.Background(), st: openStore(t), clock: t0, rc: newReceiver(t)}
	r.e = r.engine(extraAllow...)
	r.acct = store.Account{ID: uuid.NewString(), OwnerEmail: "owner@shop.example", EmailVerified: true, CreatedAt: t0}
	r.site = store.Website{ID: uuid.NewString(), AccountID: r.acct.ID, ProjectID: "prj_" + uuid.NewString()[:8],
		Name: "Shop", URL: "https://shop.example", Timezone: "UTC", CreatedAt: t0}
	key := store.APIKey{ID: uuid.NewString(), WebsiteID: r.site.ID, Name: "k", Prefix: "rb_live_abcd",
		Hash: uuid.NewString(), Scopes: []string{"full"}, CreatedAt: t0}
	if err := r.st.CreateWebsite(r.ctx, r.acct, r.site, key); err != nil {
		t.Fatal(err)
	}
	r.hook = r.webhook(r.rc.URL+"/hooks", nil)
	return r
}

// engine returns another engine on the rig's store and clock.
func (r *rig) engine(extraAllow ...string) *Engine {
	allow, err := netpolicy.ParseAllowList(strings.Join(append([]string{r.rc.hostPort()}, extraAllow...), ","))
	if err != nil {
		r.t.Fatal(err)
	}
	e := New(Config{Allow: allow, Timeout: 500 * time.Millisecond}, r.st, slog.New(slog.DiscardHandler), nil)
	e.now = r.now
	e.jitter = func() float64 { return 0.5 } // no jitter: 0.8 + 0.4*0.5 = 1
	return e
}

func (r *rig) now() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.clock
}

func (r *rig) advance(d time.Duration) {
	r.mu.Lock()
	r.clock = r.clock.Add(d)
	r.mu.Unlock()
}

func (r *rig) webhook(rawURL string, events []string) store.Webhook {
	r.t.Helper()
	h := store.Webhook{ID: uuid.NewString(), WebsiteID: r.site.ID, URL: rawURL, Events: events,
		Secret: "whsec_" + uuid.NewString(), Enabled: true, CreatedAt: r.now()}
	if err := r.st.CreateWebhook(r.ctx, h); err != nil {
		r.t.Fatal(err)
	}
	return h
}

// event adds an outbox event of the rig's website.
func (r *rig) event(name, data string) store.WebhookEvent {
	r.t.Helper()
	ev := store.WebhookEvent{ID: uuid.NewString(), WebsiteID: r.site.ID, Event: name, Data: json.RawMessage(data), CreatedAt: r.now()}
	if err := r.st.AddWebhookEvent(r.ctx, ev); err != nil {
		r.t.Fatal(err)
	}
	return ev
}

// step runs one pass of the engine: queue, then deliver what is due.
func (r *rig) step() int {
	r.t.Helper()
	if err := r.e.Queue(r.ctx); err != nil {
		r.t.Fatal(err)
	}
	n, err := r.e.Deliver(r.ctx)
	if err != nil {
		r.t.Fatal(err)
	}
	return n
}

func (r *rig) deliveries(hookID string) []store.WebhookDelivery {
	r.t.Helper()
	ds, err := r.st.WebhookDeliveries(r.ctx, hookID, 0, 100)
	if err != nil {
		r.t.Fatal(err)
	}
	return ds
}

func (r *rig) only(hookID string) store.WebhookDelivery {
	r.t.Helper()
	ds := r.deliveries(hookID)
	if len(ds) != 1 {
		r.t.Fatalf("%d deliveries, want 1", len(ds))
	}
	return ds[0]
}

func (r *rig) hookNow(id string) store.Webhook {
	r.t.Helper()
	h, err := r.st.Webhook(r.ctx, r.site.ID, id)
	if err != nil {
		r.t.Fatal(err)
	}
	return h
}

func (r *rig) emails() []store.Email {
	r.t.Helper()
	ms, err := r.st.Emails(r.ctx, false, 100)
	if err != nil {
		r.t.Fatal(err)
	}
	return ms
}

const sentData = `{"notificationId":"9b2f0c1e-4c2a-4f7e-9d55-0f4d1b8e7a10","recipients":3,"sent":2,"failed":1,"pruned":0}`

func TestDeliversSignedEvents(t *testing.T) {
	r := newRig(t)
	clicksOnly := r.webhook(r.rc.URL+"/clicks", []string{EventNotificationClicked})
	off := r.webhook(r.rc.URL+"/off", nil)
	if _, err := r.st.UpdateWebhook(r.ctx, r.site.ID, off.ID, func(h *store.Webhook) error { h.Enabled = false; return nil }); err != nil {
		t.Fatal(err)
	}
	ev := r.event(store.EventNotificationSent, sentData)
	r.advance(1500 * time.Millisecond)
	if n := r.step(); n != 1 {
		t.Fatalf("ran %d attempts, want 1 (only the webhook subscribed to every event)", n)
	}
	got := r.rc.got()
	if len(got) != 1 {
		t.Fatalf("receiver got %d requests", len(got))
	}
	d := r.only(r.hook.ID)
	wantBody := `{"event":"notification.sent","data":` + sentData + `,"projectId":"` + r.site.ProjectID + `","at":"2026-03-01T12:00:00.000Z"}`
	if string(got[0].body) != wantBody || string(d.Body) != wantBody {
		t.Fatalf("body %s\nwant %s", got[0].body, wantBody)
	}
	h := got[0].header
	for k, want := range map[string]string{
		"Content-Type":         "application/json",
		"X-Relaybell-Event":    "notification.sent",
		"X-Relaybell-Delivery": d.ID,
		"X-Relaybell-Signature": func() string {
			_, legacy := signature.Sign(r.hook.Secret, r.now(), got[0].body)
			return legacy
		}(),
	} {
		if h.Get(k) != want {
			t.Errorf("header %s = %q, want %q", k, h.Get(k), want)
		}
	}
	v := signature.Verifier{Secret: r.hook.Secret, Now: r.now}
	if err := v.Verify(h.Get(signature.HeaderWebhookSignature), d.ID, got[0].body); err != nil {
		t.Fatalf("signature does not verify: %v", err)
	}
	if !strings.HasPrefix(h.Get(signature.HeaderWebhookSignature), fmt.Sprintf("t=%d,v1=", r.now().Unix())) {
		t.Fatalf("signature header %q", h.Get(signature.HeaderWebhookSignature))
	}
	if d.EventID != ev.ID || d.Status != store.DeliverySucceeded || d.Attempts != 1 || d.LastStatusCode == nil ||
		*d.LastStatusCode != 200 || d.Error != "" || d.DeliveredAt == nil || d.NextAttemptAt != nil {
		t.Fatalf("delivery %+v", d)
	}
	if d.RequestHeaders[signature.HeaderWebhookSignature] != h.Get(signature.HeaderWebhookSignature) {
		t.Fatalf("logged headers %v", d.RequestHeaders)
	}
	for k, v := range d.RequestHeaders {
		if strings.Contains(v, r.hook.Secret) {
			t.Fatalf("header %s carries the secret", k)
		}
	}
	hook := r.hookNow(r.hook.ID)
	if hook.LastStatus == nil || *hook.LastStatus != 200 || hook.LastFiredAt == nil || !hook.LastFiredAt.Equal(r.now()) {
		t.Fatalf("webhook after success: %+v", hook)
	}
	if len(r.deliveries(clicksOnly.ID)) != 0 || len(r.deliveries(off.ID)) != 0 {
		t.Fatal("an unsubscribed or disabled webhook got a delivery")
	}

	// The clicked event reaches both; queuing again adds nothing.
	r.event(store.EventNotificationClicked, `{"notificationId":"9b2f0c1e-4c2a-4f7e-9d55-0f4d1b8e7a10","variant":null}`)
	r.step()
	r.step()
	if len(r.rc.got()) != 3 || len(r.deliveries(clicksOnly.ID)) != 1 || len(r.deliveries(r.hook.ID)) != 2 {
		t.Fatalf("after a click: %d requests", len(r.rc.got()))
	}
}

// retried runs the attempt due now and returns the delivery after it.
func (r *rig) retried() store.WebhookDelivery {
	r.t.Helper()
	if n := r.step(); n != 1 {
		r.t.Fatalf("ran %d attempts at %s, want 1", n, r.now())
	}
	return r.only(r.hook.ID)
}

func TestRetriesFollowTheScheduleThenFail(t *testing.T) {
	r := newRig(t)
	r.rc.answer(status(503))
	r.event(store.EventNotificationSent, sentData)
	d := r.retried()
	start := r.now()
	if d.Status != store.DeliveryRetrying || d.Attempts != 1 || *d.LastStatusCode != 503 || d.Error != "receiver answered 503" ||
		!d.NextAttemptAt.Equal(start.Add(time.Minute)) {
		t.Fatalf("after the first attempt: %+v", d)
	}
	if h := r.hookNow(r.hook.ID); h.ConsecutiveFailures != 0 || h.FailingSince == nil || !h.FailingSince.Equal(start) {
		t.Fatalf("webhook after a failed attempt: failures %d since %v", h.ConsecutiveFailures, h.FailingSince)
	}
	at := start
	signatures := map[string]bool{}
	for i, delay := range RetryDelays {
		r.advance(delay - time.Second)
		if n := r.step(); n != 0 {
			t.Fatalf("retry %d ran %d attempts a second early", i+1, n)
		}
		r.advance(time.Second)
		at = at.Add(delay)
		d = r.retried()
		if d.Attempts != i+2 {
			t.Fatalf("retry %d: %d attempts", i+1, d.Attempts)
		}
		if i < len(RetryDelays)-1 {
			if d.Status != store.DeliveryRetrying || !d.NextAttemptAt.Equal(at.Add(RetryDelays[i+1])) {
				t.Fatalf("retry %d: %s, next %v", i+1, d.Status, d.NextAttemptAt)
			}
		}
	}
	if d.Status != store.DeliveryFailed || d.NextAttemptAt != nil || d.Attempts != 6 {
		t.Fatalf("after every retry: %+v", d)
	}
	got := r.rc.got()
	if len(got) != 6 {
		t.Fatalf("receiver got %d attempts, want 6", len(got))
	}
	for _, g := range got {
		if g.header.Get(signature.HeaderDelivery) != d.ID || string(g.body) != string(got[0].body) {
			t.Fatal("a retry changed the delivery id or the body")
		}
		signatures[g.header.Get(signature.HeaderWebhookSignature)] = true
	}
	if len(signatures) != 6 {
		t.Fatalf("%d distinct signatures over 6 attempts, want a fresh one each", len(signatures))
	}
	if h := r.hookNow(r.hook.ID); h.ConsecutiveFailures != 1 || !h.Enabled {
		t.Fatalf("webhook after a failed delivery: %+v", h)
	}
	r.advance(24 * time.Hour)
	if n := r.step(); n != 0 {
		t.Fatalf("a failed delivery ran %d more attempts", n)
	}
}

func TestRetriesSurviveARestart(t *testing.T) {
	r := newRig(t)
	r.rc.answer(status(500))
	r.event(store.EventNotificationSent, sentData)
	r.step()
	r.e = r.engine() // the node restarts: a new engine on the same store
	r.rc.answer(nil)
	r.advance(time.Minute)
	if d := r.retried(); d.Status != store.DeliverySucceeded || d.Attempts != 2 {
		t.Fatalf("after the restart: %+v", d)
	}
	if h := r.hookNow(r.hook.ID); h.FailingSince != nil || h.ConsecutiveFailures != 0 {
		t.Fatalf("a success left failures %d since %v", h.ConsecutiveFailures, h.FailingSince)
	}
}

func TestReceiversThatFailWithoutAnAnswer(t *testing.T) {
	r := newRig(t)
	release := make(chan struct{})
	defer close(release)
	r.rc.answer(func(w http.ResponseWriter, req *http.Request, n int) {
		switch n {
		case 1: // hangs past the deadline
			select {
			case <-release:
			case <-req.Context().Done():
			}
		case 2: // resets the connection
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.(*net.TCPConn).SetLinger(0)
				conn.Close()
			}
		}
	})
	r.event(store.EventNotificationSent, sentData)
	began := time.Now()
	d := r.retried()
	if waited := time.Since(began); waited < 500*time.Millisecond || waited > 5*time.Second {
		t.Fatalf("a hanging receiver held the attempt %s, want the 500ms deadline", waited)
	}
	if d.Status != store.DeliveryRetrying || d.LastStatusCode != nil || !strings.HasPrefix(d.Error, "timeout") {
		t.Fatalf("after a hang: status %s code %v error %q", d.Status, d.LastStatusCode, d.Error)
	}
	if h := r.hookNow(r.hook.ID); h.LastStatus == nil || *h.LastStatus != 0 {
		t.Fatalf("last_status after no answer: %v, want 0", h.LastStatus)
	}
	r.advance(time.Minute)
	d = r.retried()
	if d.Status != store.DeliveryRetrying || d.LastStatusCode != nil || d.Error == "" || d.Attempts != 2 {
		t.Fatalf("after a reset: status %s code %v error %q", d.Status, d.LastStatusCode, d.Error)
	}
}

// privateServer is a receiver on a loopback address the allow-list does
// not open: nothing may ever reach it.
func privateServer(t *testing.T) *receiver {
	t.Helper()
	rc := newReceiver(t)
	t.Cleanup(func() {
		if n := len(rc.got()); n != 0 {
			t.Errorf("a private address got %d requests", n)
		}
	})
	return rc
}

func TestNoRequestReachesAPrivateAddress(t *testing.T) {
	r := newRig(t)
	private := privateServer(t)
	u, _ := url.Parse(private.URL)
	targets := []string{
		private.URL + "/direct",
		"http://localhost:" + u.Port() + "/name",
		"http://[::ffff:127.0.0.1]:" + u.Port() + "/mapped",
	}
	var hooks []store.Webhook
	for _, target := range targets {
		hooks = append(hooks, r.webhook(target, nil))
	}
	// An allow-listed receiver redirecting to the private one.
	r.rc.answer(func(w http.ResponseWriter, req *http.Request, _ int) {
		http.Redirect(w, req, private.URL+"/via-redirect", http.StatusTemporaryRedirect)
	})
	r.event(store.EventNotificationSent, sentData)
	if n := r.step(); n != len(targets)+1 {
		t.Fatalf("ran %d attempts", n)
	}
	for _, h := range append(hooks, r.hook) {
		d := r.only(h.ID)
		if d.Status != store.DeliveryRetrying || d.LastStatusCode != nil || !strings.Contains(d.Error, "refused") {
			t.Errorf("%s: status %s code %v error %q", h.URL, d.Status, d.LastStatusCode, d.Error)
		}
		if got := r.hookNow(h.ID); got.LastStatus == nil || *got.LastStatus != 0 {
			t.Errorf("%s: last_status %v, want 0", h.URL, got.LastStatus)
		}
	}
}

func TestRedirectsAreFollowedFourTimes(t *testing.T) {
	r := newRig(t)
	r.rc.answer(func(w http.ResponseWriter, req *http.Request, _ int) {
		var hop int
		fmt.Sscanf(req.URL.Query().Get("hop"), "%d", &hop)
		if req.URL.Path == "/hooks" || hop < 4 {
			http.Redirect(w, req, fmt.Sprintf("/next?hop=%d", hop+1), http.StatusPermanentRedirect)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	r.event(store.EventNotificationSent, sentData)
	if d := r.retried(); d.Status != store.DeliverySucceeded || *d.LastStatusCode != 204 {
		t.Fatalf("after 4 redirects: %+v", d)
	}
	got := r.rc.got()
	if len(got) != 5 || string(got[4].body) != string(got[0].body) {
		t.Fatalf("%d requests; the last kept the body: %v", len(got), len(got) == 5 && string(got[4].body) == string(got[0].body))
	}
	// Five redirects are one too many.
	r.rc.answer(func(w http.ResponseWriter, req *http.Request, _ int) {
		http.Redirect(w, req, "/again", http.StatusTemporaryRedirect)
	})
	r.event(store.EventNotificationSent, sentData)
	r.step()
	ds := r.deliveries(r.hook.ID)
	if ds[0].Status != store.DeliveryRetrying || !strings.Contains(ds[0].Error, "redirects") {
		t.Fatalf("endless redirects: %s %q", ds[0].Status, ds[0].Error)
	}
}

func TestGoneTurnsTheWebhookOff(t *testing.T) {
	r := newRig(t)
	r.rc.answer(status(410))
	r.event(store.EventNotificationSent, sentData)
	r.event(store.EventNotificationSent, sentData)
	if err := r.e.Queue(r.ctx); err != nil {
		t.Fatal(err)
	}
	// One delivery meets the 410; the other, waiting, fails with it.
	ds, err := r.st.ClaimWebhookDeliveries(r.ctx, r.now(), time.Minute, 1)
	if err != nil || len(ds) != 1 {
		t.Fatalf("claim: %v %v", ds, err)
	}
	if err := r.e.attempt(r.ctx, ds[0]); err != nil {
		t.Fatal(err)
	}
	h := r.hookNow(r.hook.ID)
	if h.Enabled || h.DisabledReason != "" || h.DisabledAt == nil || !h.DisabledAt.Equal(r.now()) {
		t.Fatalf("webhook after 410: %+v", h)
	}
	for _, d := range r.deliveries(r.hook.ID) {
		if d.Status != store.DeliveryFailed || d.NextAttemptAt != nil {
			t.Fatalf("delivery %s after 410: %s next %v", d.ID, d.Status, d.NextAttemptAt)
		}
	}
	mail := r.emails()
	if len(mail) != 1 || mail[0].To != "owner@shop.example" || !strings.Contains(mail[0].Body, "410") {
		t.Fatalf("mail %+v", mail)
	}
	// While off, no new events are queued for it.
	r.event(store.EventNotificationSent, sentData)
	r.step()
	if n := len(r.deliveries(r.hook.ID)); n != 2 {
		t.Fatalf("%d deliveries, want still 2", n)
	}
}

// oneShot adds a test delivery waiting for its single attempt now.
func (r *rig) oneShot() store.WebhookDelivery {
	r.t.Helper()
	now := r.now()
	body, err := Body(EventTest, r.site.ProjectID, json.RawMessage(`{"webhookId":"`+r.hook.ID+`","message":"hi"}`), now)
	if err != nil {
		r.t.Fatal(err)
	}
	d := store.WebhookDelivery{ID: uuid.NewString(), WebhookID: r.hook.ID, WebsiteID: r.site.ID, Event: EventTest,
		Body: body, Status: store.DeliveryPending, OneShot: true, CreatedAt: now, NextAttemptAt: &now}
	if err := r.st.AddWebhookDelivery(r.ctx, d); err != nil {
		r.t.Fatal(err)
	}
	return d
}

func TestTestsAndResendsNeverCountTowardDisabling(t *testing.T) {
	r := newRig(t)
	r.rc.answer(status(410))
	d := r.oneShot()
	r.step()
	got, err := r.st.WebhookDelivery(r.ctx, r.hook.ID, d.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != store.DeliveryFailed || got.Attempts != 1 || got.NextAttemptAt != nil {
		t.Fatalf("test delivery after 410: %+v", got)
	}
	if h := r.hookNow(r.hook.ID); !h.Enabled || h.ConsecutiveFailures != 0 || h.FailingSince != nil {
		t.Fatalf("a test's 410 changed the webhook: %+v", h)
	}
	// A resend that fails is one attempt, and counts for nothing either.
	r.rc.answer(status(500))
	if _, err := r.st.ResendWebhookDelivery(r.ctx, r.hook.ID, d.ID, r.now()); err != nil {
		t.Fatal(err)
	}
	r.step()
	r.advance(time.Hour)
	r.step()
	got, _ = r.st.WebhookDelivery(r.ctx, r.hook.ID, d.ID)
	if got.Status != store.DeliveryFailed || got.Attempts != 2 {
		t.Fatalf("resent delivery: %+v", got)
	}
	// But a success from one clears the count.
	if _, err := r.st.UpdateWebhook(r.ctx, r.site.ID, r.hook.ID, func(h *store.Webhook) error {
		h.ConsecutiveFailures, h.FailingSince = 12, ptr(t0)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	r.rc.answer(nil)
	r.oneShot()
	r.step()
	if h := r.hookNow(r.hook.ID); h.ConsecutiveFailures != 0 || h.FailingSince != nil {
		t.Fatalf("a test's success left failures %d since %v", h.ConsecutiveFailures, h.FailingSince)
	}
	// A test goes out even while the webhook is off.
	if _, err := r.st.UpdateWebhook(r.ctx, r.site.ID, r.hook.ID, func(h *store.Webhook) error { h.Enabled = false; return nil }); err != nil {
		t.Fatal(err)
	}
	before := len(r.rc.got())
	r.oneShot()
	r.step()
	if len(r.rc.got()) != before+1 {
		t.Fatal("a test to a disabled webhook was not sent")
	}
}

func ptr[T any](v T) *T { return &v }

func TestFiftyFailedDeliveriesInARowTurnItOff(t *testing.T) {
	r := newRig(t)
	r.rc.answer(status(500))
	if _, err := r.st.UpdateWebhook(r.ctx, r.site.ID, r.hook.ID, func(h *store.Webhook) error {
		h.ConsecutiveFailures = DisableAfterFailures - 1
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	r.event(store.EventNotificationSent, sentData)
	r.step()
	for _, delay := range RetryDelays {
		if h := r.hookNow(r.hook.ID); !h.Enabled {
			t.Fatal("turned off before the delivery failed for good")
		}
		r.advance(delay)
		r.step()
	}
	h := r.hookNow(r.hook.ID)
	if h.Enabled || h.DisabledReason != store.DisabledFailed50 || h.ConsecutiveFailures != DisableAfterFailures {
		t.Fatalf("after the 50th failed delivery: %+v", h)
	}
	if mail := r.emails(); len(mail) != 1 || !strings.Contains(mail[0].Body, "50 deliveries in a row") {
		t.Fatalf("mail %+v", mail)
	}
}

func TestThreeDaysOfFailureTurnItOff(t *testing.T) {
	r := newRig(t)
	r.rc.answer(status(500))
	if _, err := r.st.UpdateWebhook(r.ctx, r.site.ID, r.hook.ID, func(h *store.Webhook) error {
		h.FailingSince = ptr(r.now().Add(-DisableAfterFailing + time.Minute))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	r.event(store.EventNotificationSent, sentData)
	r.step()
	if h := r.hookNow(r.hook.ID); !h.Enabled {
		t.Fatal("turned off a minute early")
	}
	r.advance(time.Minute)
	r.step()
	h := r.hookNow(r.hook.ID)
	if h.Enabled || h.DisabledReason != store.DisabledFailing3Day {
		t.Fatalf("after 3 days of failure: %+v", h)
	}
	if d := r.only(r.hook.ID); d.Status != store.DeliveryFailed {
		t.Fatalf("the waiting retry is %s, want failed", d.Status)
	}
}

func TestEnginesShareTheWorkWithoutRepeats(t *testing.T) {
	r := newRig(t)
	second := r.engine()
	for range 60 {
		r.event(store.EventNotificationSent, sentData)
	}
	var wg sync.WaitGroup
	for _, e := range []*Engine{r.e, second, r.engine()} {
		wg.Go(func() {
			for range 10 {
				if err := e.Queue(r.ctx); err != nil {
					t.Error(err)
				}
				if _, err := e.Deliver(r.ctx); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	seen := map[string]int{}
	for _, g := range r.rc.got() {
		seen[g.header.Get(signature.HeaderDelivery)]++
	}
	if len(seen) != 60 {
		t.Fatalf("%d deliveries reached the receiver, want 60", len(seen))
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("delivery %s attempted %d times", id, n)
		}
	}
}

func TestPruneRemovesOldRecords(t *testing.T) {
	r := newRig(t)
	r.event(store.EventNotificationSent, sentData)
	r.step()
	r.advance(Retention - time.Minute)
	if n, err := r.e.Prune(r.ctx); err != nil || n != 0 {
		t.Fatalf("pruned %d, %v before 30 days", n, err)
	}
	r.advance(2 * time.Minute)
	if n, err := r.e.Prune(r.ctx); err != nil || n != 1 {
		t.Fatalf("pruned %d, %v after 30 days", n, err)
	}
	if len(r.deliveries(r.hook.ID)) != 0 {
		t.Fatal("the delivery outlived the retention")
	}
}

func TestOwnerMailGoesThroughSMTP(t *testing.T) {
	r := newRig(t)
	srv := smtptest.New(t)
	r.e.cfg.Mailer = &SMTP{Addr: srv.Addr, From: "relaybell@ops.example"}
	r.rc.answer(status(410))
	r.event(store.EventNotificationSent, sentData)
	r.step()
	if err := r.e.Mail(r.ctx); err != nil {
		t.Fatal(err)
	}
	msgs := srv.Messages()
	if len(msgs) != 1 || !strings.Contains(msgs[0], "To: owner@shop.example\r\n") ||
		!strings.Contains(msgs[0], "Subject: RelayBell turned off a webhook of Shop\r\n") {
		t.Fatalf("messages %q", msgs)
	}
	if mail := r.emails(); len(mail) != 1 || mail[0].SentAt == nil {
		t.Fatalf("outbox after sending: %+v", mail)
	}
	if err := r.e.Mail(r.ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(srv.Messages()); n != 1 {
		t.Fatalf("the message went out %d times", n)
	}
}
