package api

import (
	"bytes"
	"context"
	"crypto/ecdh"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"github.com/relaybell/relaybell/analytics"
	"github.com/relaybell/relaybell/store"
)

// memStore is an in-memory store.Store with just what the API calls.
// Methods the API never calls panic through the nil embedded interface.
type memStore struct {
	store.Store

	mu            sync.Mutex
	accounts      map[string]store.Account
	websites      map[string]store.Website
	keys          map[string]store.APIKey // by hash
	subscribers   map[string]store.Subscriber
	endpoints     map[string]store.Endpoint
	notifications map[string]store.Notification
	interactions  map[string]bool
	topics        map[string]bool // websiteID/slug
	segments      map[string]bool // websiteID/id
	seq           int64
	keyOwnerCalls int
	touches       []string
	fail          map[string]error // method name -> error to return
}

var _ store.Store = (*memStore)(nil)

func newMemStore() *memStore {
	return &memStore{
		accounts:      map[string]store.Account{},
		websites:      map[string]store.Website{},
		keys:          map[string]store.APIKey{},
		subscribers:   map[string]store.Subscriber{},
		endpoints:     map[string]store.Endpoint{},
		notifications: map[string]store.Notification{},
		interactions:  map[string]bool{},
		topics:        map[string]bool{},
		segments:      map[string]bool{},
		fail:          map[string]error{},
	}
}

func (m *memStore) failing(method string) error { return m.fail[method] }

func (m *memStore) CreateWebsite(_ context.Context, a store.Account, w store.Website, k store.APIKey) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.failing("CreateWebsite"); err != nil {
		return err
	}
	m.accounts[a.ID] = a
	m.websites[w.ID] = w
	m.keys[k.Hash] = k
	return nil
}

func (m *memStore) CreateAPIKey(_ context.Context, k store.APIKey) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.websites[k.WebsiteID]; !ok {
		return store.ErrNotFound
	}
	m.keys[k.Hash] = k
	return nil
}

func (m *memStore) KeyOwner(_ context.Context, hash string) (store.KeyOwner, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.keyOwnerCalls++
	if err := m.failing("KeyOwner"); err != nil {
		return store.KeyOwner{}, err
	}
	k, ok := m.keys[hash]
	if !ok {
		return store.KeyOwner{}, store.ErrNotFound
	}
	w := m.websites[k.WebsiteID]
	return store.KeyOwner{Key: k, Website: w, Account: m.accounts[w.AccountID]}, nil
}

func (m *memStore) TouchAPIKey(_ context.Context, id string, at time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.touches = append(m.touches, id)
	for h, k := range m.keys {
		if k.ID == id {
			k.LastUsedAt = &at
			m.keys[h] = k
		}
	}
	return nil
}

func (m *memStore) Website(_ context.Context, id string) (store.Website, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	w, ok := m.websites[id]
	if !ok {
		return store.Website{}, store.ErrNotFound
	}
	return w, nil
}

func (m *memStore) WebsiteByProjectID(_ context.Context, projectID string) (store.Website, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, w := range m.websites {
		if w.ProjectID == projectID {
			return w, nil
		}
	}
	return store.Website{}, store.ErrNotFound
}

func (m *memStore) Account(_ context.Context, id string) (store.Account, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.accounts[id]
	if !ok {
		return store.Account{}, store.ErrNotFound
	}
	return a, nil
}

func (m *memStore) SetAccountSuspended(_ context.Context, id string, suspended bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.accounts[id]
	if !ok {
		return store.ErrNotFound
	}
	a.Suspended = suspended
	m.accounts[id] = a
	return nil
}

func (m *memStore) SetAccountEmailVerified(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.accounts[id]
	if !ok {
		return store.ErrNotFound
	}
	a.EmailVerified = true
	m.accounts[id] = a
	return nil
}

func (m *memStore) UpsertSubscription(_ context.Context, in store.SubscriptionInput) (store.SubscriptionResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for id, ep := range m.endpoints {
		if ep.WebsiteID == in.WebsiteID && ep.URL == in.Endpoint {
			ep.P256dh, ep.Auth, ep.LastSeenAt = in.P256dh, in.Auth, in.At
			m.endpoints[id] = ep
			return store.SubscriptionResult{SubscriberID: ep.SubscriberID, EndpointID: id}, nil
		}
	}
	subID := ""
	if in.ExternalID != "" {
		for id, s := range m.subscribers {
			if s.WebsiteID == in.WebsiteID && s.ExternalID == in.ExternalID {
				subID = id
			}
		}
	}
	if subID == "" {
		subID = uuid.NewString()
		m.subscribers[subID] = store.Subscriber{ID: subID, WebsiteID: in.WebsiteID, ExternalID: in.ExternalID,
			Country: in.Country, Language: in.Language, Timezone: in.Timezone, URL: in.URL, CreatedAt: in.At}
	}
	ep := store.Endpoint{ID: uuid.NewString(), SubscriberID: subID, WebsiteID: in.WebsiteID, URL: in.Endpoint,
		P256dh: in.P256dh, Auth: in.Auth, Device: in.Device, UserAgent: in.UserAgent, CreatedAt: in.At, LastSeenAt: in.At}
	m.endpoints[ep.ID] = ep
	return store.SubscriptionResult{SubscriberID: subID, EndpointID: ep.ID, Created: true}, nil
}

func (m *memStore) DeleteSubscription(_ context.Context, websiteID, endpointURL string) (store.Endpoint, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for id, ep := range m.endpoints {
		if ep.WebsiteID == websiteID && ep.URL == endpointURL {
			delete(m.endpoints, id)
			return ep, nil
		}
	}
	return store.Endpoint{}, store.ErrNotFound
}

func (m *memStore) Endpoint(_ context.Context, websiteID, id string) (store.Endpoint, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ep, ok := m.endpoints[id]
	if !ok || ep.WebsiteID != websiteID {
		return store.Endpoint{}, store.ErrNotFound
	}
	return ep, nil
}

func (m *memStore) RecordInteraction(_ context.Context, websiteID, notificationID, endpointID, kind string, _ time.Time) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := websiteID + "/" + notificationID + "/" + endpointID + "/" + kind
	if m.interactions[k] {
		return false, nil
	}
	m.interactions[k] = true
	n := m.notifications[notificationID]
	if kind == store.InteractionClicked {
		n.Clicked++
	} else {
		n.Delivered++
	}
	m.notifications[notificationID] = n
	return true, nil
}

func (m *memStore) SegmentExists(_ context.Context, websiteID, id string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.segments[websiteID+"/"+id], nil
}

func (m *memStore) TopicExists(_ context.Context, websiteID, idOrSlug string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.topics[websiteID+"/"+idOrSlug], nil
}

func (m *memStore) CreateNotification(_ context.Context, n *store.Notification) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.failing("CreateNotification"); err != nil {
		return err
	}
	m.seq++
	n.Seq = m.seq
	m.notifications[n.ID] = *n
	return nil
}

func (m *memStore) Notification(_ context.Context, websiteID, id string) (store.Notification, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.notifications[id]
	if !ok || n.WebsiteID != websiteID {
		return store.Notification{}, store.ErrNotFound
	}
	return n, nil
}

func (m *memStore) ListNotifications(_ context.Context, q store.ListQuery) ([]store.Notification, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []store.Notification
	for _, n := range m.notifications {
		if n.WebsiteID != q.WebsiteID || (q.BeforeSeq > 0 && n.Seq >= q.BeforeSeq) {
			continue
		}
		if len(q.Statuses) == 0 && n.Status == store.StatusDraft ||
			len(q.Statuses) > 0 && !slices.Contains(q.Statuses, n.Status) {
			continue
		}
		out = append(out, n)
	}
	slices.SortFunc(out, func(a, b store.Notification) int { return int(b.Seq - a.Seq) })
	if len(out) > q.Limit {
		out = out[:q.Limit]
	}
	return out, nil
}

func (m *memStore) notificationCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.notifications)
}

// memAnalytics records events in memory.
type memAnalytics struct {
	mu     sync.Mutex
	events []analytics.Event
	err    error
}

func (m *memAnalytics) Record(_ context.Context, events []analytics.Event) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.events = append(m.events, events...)
	return nil
}

func (m *memAnalytics) Report(context.Context, string, string) (analytics.Report, error) {
	return analytics.Report{}, m.err
}

func (m *memAnalytics) Close() error { return nil }

func (m *memAnalytics) recorded() []analytics.Event {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.events)
}

// memDispatcher remembers what it was asked to publish.
type memDispatcher struct {
	mu   sync.Mutex
	sent []store.Notification
	err  error
}

func (d *memDispatcher) Dispatch(_ context.Context, n store.Notification) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.sent = append(d.sent, n)
	return d.err
}

func (d *memDispatcher) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.sent)
}

// testClock is a settable clock.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

var testStart = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// harness is an API over in-memory peers with one website and a full key.
type harness struct {
	t     testing.TB
	api   *API
	st    *memStore
	an    *memAnalytics
	disp  *memDispatcher
	clock *testClock
	reg   *prometheus.Registry
	site  WebsiteCreated
}

const testAdminToken = "test-admin-token-0123456789"

func newHarness(t testing.TB, mutate ...func(*Config)) *harness {
	t.Helper()
	h := &harness{t: t, st: newMemStore(), an: &memAnalytics{}, disp: &memDispatcher{},
		clock: &testClock{now: testStart}, reg: prometheus.NewRegistry()}
	cfg := Config{AdminToken: testAdminToken}
	for _, f := range mutate {
		f(&cfg)
	}
	a, err := New(cfg, h.st, h.an, h.disp, nil, h.reg, WithClock(h.clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	h.api = a
	h.site, err = CreateWebsite(context.Background(), h.st, NewWebsite{Name: "Shop", URL: "https://shop.example"}, testStart)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// key adds an API key to the harness website.
func (h *harness) key(scopes []string, expires *time.Time) string {
	h.t.Helper()
	secret, k, err := NewAPIKey(h.site.WebsiteID, "test", scopes, expires, h.clock.Now())
	if err != nil {
		h.t.Fatal(err)
	}
	if err := h.st.CreateAPIKey(context.Background(), k); err != nil {
		h.t.Fatal(err)
	}
	return secret
}

// response is what a request got back.
type response struct {
	status int
	header map[string]string
	body   []byte
}

func (r response) json(t *testing.T) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatalf("body %q: %v", r.body, err)
	}
	return v
}

// do runs one request through the handler. headers are name, value pairs.
func (h *harness) do(method, uri, body string, headers ...string) response {
	h.t.Helper()
	return serveOnce(h.api.Handler(), method, uri, body, headers...)
}

func serveOnce(handler fasthttp.RequestHandler, method, uri, body string, headers ...string) response {
	var req fasthttp.Request
	req.Header.SetMethod(method)
	req.SetRequestURI(uri)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	if body != "" {
		req.SetBodyString(body)
		req.Header.SetContentType("application/json")
	}
	var fc fasthttp.RequestCtx
	fc.Init(&req, &net.TCPAddr{IP: net.IPv4(203, 0, 113, 7), Port: 4444}, nil)
	handler(&fc)
	out := response{status: fc.Response.StatusCode(), header: map[string]string{}, body: bytes.Clone(fc.Response.Body())}
	for k, v := range fc.Response.Header.All() {
		out.header[string(k)] = string(v)
	}
	return out
}

// auth is the Authorization header pair for a key.
func auth(key string) []string { return []string{"Authorization", "Bearer " + key} }

// expectError checks an exact error body and that request_id equals the
// X-Request-Id header.
func expectError(t *testing.T, r response, status int, code string, extra string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d (body %s)", r.status, status, r.body)
	}
	id := r.header["X-Request-Id"]
	if id == "" {
		t.Fatalf("no X-Request-Id")
	}
	want := fmt.Sprintf(`{"error":%q%s,"request_id":%q}`, code, extra, id)
	if string(r.body) != want {
		t.Fatalf("body\n %s\nwant\n %s", r.body, want)
	}
}

// expectCode checks status and error code, whatever the message.
func expectCode(t *testing.T, r response, status int, code string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d (body %s)", r.status, status, r.body)
	}
	v := r.json(t)
	if v["error"] != code {
		t.Fatalf("error %v, want %s (body %s)", v["error"], code, r.body)
	}
	if v["request_id"] != r.header["X-Request-Id"] || v["request_id"] == "" {
		t.Fatalf("request_id %v, header %q", v["request_id"], r.header["X-Request-Id"])
	}
}

// browserKeys returns a valid p256dh and auth pair in base64url.
func browserKeys(t testing.TB) (string, string) {
	t.Helper()
	priv, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	auth := make([]byte, 16)
	rand.Read(auth)
	return base64.RawURLEncoding.EncodeToString(priv.PublicKey().Bytes()), base64.RawURLEncoding.EncodeToString(auth)
}

func keyOwnerWithID(id string) store.KeyOwner { return store.KeyOwner{Key: store.APIKey{ID: id}} }

func hashOf(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// metricsText returns what /metrics serves.
func (h *harness) metricsText() string {
	h.t.Helper()
	r := h.do("GET", "/metrics", "")
	if r.status != 200 {
		h.t.Fatalf("metrics: %d", r.status)
	}
	return string(r.body)
}
