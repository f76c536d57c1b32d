package api

import (
	"bytes"
	"cmp"
	"context"
	"crypto/ecdh"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"github.com/relaybell/relaybell/accounts"
	"github.com/relaybell/relaybell/analytics"
	ansqlite "github.com/relaybell/relaybell/analytics/sqlite"
	"github.com/relaybell/relaybell/automations"
	"github.com/relaybell/relaybell/defcache"
	"github.com/relaybell/relaybell/events"
	"github.com/relaybell/relaybell/feeds"
	"github.com/relaybell/relaybell/goals"
	"github.com/relaybell/relaybell/integrations"
	"github.com/relaybell/relaybell/journeys"
	"github.com/relaybell/relaybell/onsite"
	"github.com/relaybell/relaybell/ratelimit"
	"github.com/relaybell/relaybell/schedules"
	"github.com/relaybell/relaybell/store"
	"github.com/relaybell/relaybell/store/postgres"
	"github.com/relaybell/relaybell/store/postgres/pgtest"
	"github.com/relaybell/relaybell/store/sqlite"
	"github.com/relaybell/relaybell/suggestions"
	"github.com/relaybell/relaybell/templates"
)

// openStores opens a real store and the SQLite analytics store, closed when
// the test ends. The store is SQLite in a temporary directory, or with
// RELAYBELL_TEST_STORE=postgres a schema of its own in PostgreSQL (make test
// runs the package both ways).
func openStores(t testing.TB) (store.Store, analytics.Store) {
	t.Helper()
	st, an, _ := openDumpableStores(t)
	return st, an
}

// openDumpableStores is openStores that also returns a snapshot of
// everything both stores hold (see dumpStores).
func openDumpableStores(t testing.TB) (store.Store, analytics.Store, *storeDump) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	var (
		st   store.Store
		err  error
		dump = &storeDump{analytics: filepath.Join(dir, "analytics.db")}
	)
	switch kind := os.Getenv("RELAYBELL_TEST_STORE"); kind {
	case "", "sqlite":
		dump.sqlite = filepath.Join(dir, "store.db")
		st, err = sqlite.Open(ctx, dump.sqlite, nil)
	case "postgres":
		dump.postgres = pgtest.DSN(t)
		st, err = postgres.Open(ctx, dump.postgres, nil)
	default:
		t.Fatalf("RELAYBELL_TEST_STORE=%q: want sqlite or postgres", kind)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	an, err := ansqlite.Open(ctx, dump.analytics, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { an.Close() })
	return st, an, dump
}

// failStore is the real store with failures injected into the methods
// tests need to fail. It also counts KeyOwner calls for the key cache test.
type failStore struct {
	store.Store

	mu            sync.Mutex
	fail          map[string]error // method name -> error to return
	keyOwnerCalls int
	// beforeMigrate runs once at the start of the next
	// MigrateEnrollments: what a concurrent engine does between the
	// handler's reads and the store's transaction.
	beforeMigrate func()
	// snapshots counts PeopleSnapshot calls; afterPage runs once after
	// the next page a snapshot's reader reads: a write between a page
	// and its count.
	snapshots int
	afterPage func()
}

func (s *failStore) setFail(method string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail == nil {
		s.fail = map[string]error{}
	}
	s.fail[method] = err
}

func (s *failStore) failing(method string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fail[method]
}

// RecordIntegrationDelivery fails as set: a delivery whose events are
// stored but not its ledger row, which the platform then retries.
func (s *failStore) RecordIntegrationDelivery(ctx context.Context, d store.IntegrationDelivery) error {
	if err := s.failing("RecordIntegrationDelivery"); err != nil {
		return err
	}
	return s.Store.RecordIntegrationDelivery(ctx, d)
}

func (s *failStore) PeopleSnapshot(ctx context.Context, fn func(store.PeopleReader) error) error {
	s.mu.Lock()
	s.snapshots++
	s.mu.Unlock()
	return s.Store.PeopleSnapshot(ctx, func(r store.PeopleReader) error { return fn(pageHook{r, s}) })
}

// pageHook is a snapshot's reader that runs its store's afterPage once
// after a page.
type pageHook struct {
	store.PeopleReader
	s *failStore
}

func (h pageHook) People(ctx context.Context, q store.PeopleQuery) ([]store.Person, error) {
	page, err := h.PeopleReader.People(ctx, q)
	h.s.mu.Lock()
	after := h.s.afterPage
	h.s.afterPage = nil
	h.s.mu.Unlock()
	if after != nil {
		after()
	}
	return page, err
}

// TemplateUses fails as set: what a template's change reads to check the
// things that name it.
func (s *failStore) TemplateUses(ctx context.Context, websiteID, templateID string) ([]store.TemplateUse, error) {
	if err := s.failing("TemplateUses"); err != nil {
		return nil, err
	}
	return s.Store.TemplateUses(ctx, websiteID, templateID)
}

func (s *failStore) KeyOwner(ctx context.Context, hash string) (store.KeyOwner, error) {
	s.mu.Lock()
	s.keyOwnerCalls++
	s.mu.Unlock()
	if err := s.failing("KeyOwner"); err != nil {
		return store.KeyOwner{}, err
	}
	return s.Store.KeyOwner(ctx, hash)
}

func (s *failStore) keyOwnerCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keyOwnerCalls
}

func (s *failStore) CreateNotification(ctx context.Context, n *store.Notification) error {
	if err := s.failing("CreateNotification"); err != nil {
		return err
	}
	return s.Store.CreateNotification(ctx, n)
}

func (s *failStore) MigrateEnrollments(ctx context.Context, websiteID, journeyID string, from, to int, steps map[string]string, at time.Time) (int, error) {
	s.mu.Lock()
	before := s.beforeMigrate
	s.beforeMigrate = nil
	s.mu.Unlock()
	if before != nil {
		before()
	}
	return s.Store.MigrateEnrollments(ctx, websiteID, journeyID, from, to, steps, at)
}

// failAnalytics is the real analytics store whose Report can be made to fail.
type failAnalytics struct {
	analytics.Store

	mu  sync.Mutex
	err error
}

func (a *failAnalytics) setErr(err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.err = err
}

func (a *failAnalytics) Report(ctx context.Context, websiteID, notificationID string) (analytics.Report, error) {
	a.mu.Lock()
	err := a.err
	a.mu.Unlock()
	if err != nil {
		return analytics.Report{}, err
	}
	return a.Store.Report(ctx, websiteID, notificationID)
}

// RecordBehaviors fails with the injected error, storing nothing.
func (a *failAnalytics) RecordBehaviors(ctx context.Context, bs []analytics.Behavior) error {
	a.mu.Lock()
	err := a.err
	a.mu.Unlock()
	if err != nil {
		return err
	}
	return a.Store.RecordBehaviors(ctx, bs)
}

var allStatuses = []string{store.StatusDraft, store.StatusScheduled, store.StatusQueued, store.StatusHeldForReview,
	store.StatusSending, store.StatusSent, store.StatusFailed, store.StatusCanceled}

// notificationCount is how many notifications, drafts included, a website
// has in the store (the harness website by default).
func (h *harness) notificationCount(websiteID ...string) int {
	h.t.Helper()
	id := h.site.WebsiteID
	if len(websiteID) > 0 {
		id = websiteID[0]
	}
	ns, err := h.st.ListNotifications(context.Background(), store.ListQuery{WebsiteID: id, Limit: 10000, Statuses: allStatuses})
	if err != nil {
		h.t.Fatal(err)
	}
	return len(ns)
}

// subscriber reads a subscriber of the harness website back through its
// audience shard; it must have an endpoint.
func (h *harness) subscriber(id string) store.Subscriber {
	h.t.Helper()
	q := store.AudienceQuery{WebsiteID: h.site.WebsiteID, Shard: store.ShardOf(id), Limit: 1000}
	for {
		page, err := h.st.Audience(context.Background(), q)
		if err != nil {
			h.t.Fatal(err)
		}
		for _, r := range page {
			if r.Subscriber.ID == id {
				return r.Subscriber
			}
		}
		if len(page) < q.Limit {
			h.t.Fatalf("subscriber %s not in the audience", id)
		}
		q.AfterID = page[len(page)-1].Endpoint.ID
	}
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

// harness is an API over the SQLite store and analytics store with one
// website and a full key.
type harness struct {
	t     testing.TB
	api   *API
	st    *failStore
	an    *failAnalytics
	disp  *memDispatcher
	clock *testClock
	reg   *prometheus.Registry
	site  WebsiteCreated
	dump  *storeDump
}

const testAdminToken = "test-admin-token-0123456789"

// testConfig is an API's Config with what the tests tune of the services
// beside it.
type testConfig struct {
	Config
	Accounts accounts.Config
	AlertMax int // events.Config.AlertMax
	// Templates fills a welcome's and a schedule's templateId (nil: refused).
	Templates onsite.Templates
	// SavedTemplates sets Templates to the templates package's Service
	// over the harness's store.
	SavedTemplates bool
	// RateSync is how often the rate counts are shared between nodes
	// (ratelimit.DefaultSync when 0); negative: never.
	RateSync time.Duration
	// FoldByHand leaves the conversion folder off: the test folds with
	// events.Service.Fold, which would skip the credits a running folder
	// holds at that moment.
	FoldByHand bool
	// Suggestions is the copy suggester (nil: the rules).
	Suggestions suggestions.Suggester
	// Stop, when set, is given a function that ends the loops and waits
	// for them before the test ends.
	Stop *func()
	// FeedFetch tunes the feeds' fetches (the allow list of the local
	// feed servers); FeedTemplates is the feeds' saved templates (nil:
	// the templates package's Service).
	FeedFetch     feeds.FetchConfig
	FeedTemplates feeds.Templates
	// DefinitionsTTL is how long the definitions cache trusts a read of
	// the version (0: it reads it before every cached answer).
	DefinitionsTTL time.Duration
}

// newAPI builds an API with its services, as the composition root (package
// server) does, and runs their loops (the conversion folder, the rate
// counts' sync, the auth version poller) until the test ends.
func newAPI(t testing.TB, tc testConfig, st Store, an analytics.Store, d Dispatcher, logger *slog.Logger, reg prometheus.Registerer, opts ...Option) (*API, error) {
	// The definitions cache reads the version before every answer here
	// (unless tc.DefinitionsTTL says otherwise), so that a test changing
	// the store directly is seen at once.
	defs := defcache.New(st, tc.DefinitionsTTL, logger)
	autos := automations.NewService(defs, logger)
	js := journeys.NewService(defs, journeys.Config{}, logger)
	gs := goals.NewService(defs, js.GoalReached, logger)
	var a *API
	if tc.SavedTemplates {
		tc.Templates = templates.NewService(st)
	}
	if tc.FeedTemplates == nil {
		tc.FeedTemplates = templates.NewService(st)
	}
	poller, err := feeds.NewPoller(feeds.Config{Now: func() time.Time { return a.now() }, Fetch: tc.FeedFetch}, st, d, tc.FeedTemplates, logger, nil)
	if err != nil {
		return nil, err
	}
	svc := Services{
		Accounts:    accounts.New(st, tc.Accounts, logger),
		Events:      events.New(st, an, d, logger, events.Config{AlertMax: tc.AlertMax, Automations: autos, Goals: gs, Journeys: js}),
		Public:      ratelimit.New(st, logger),
		Automations: autos,
		Goals:       gs,
		Journeys:    js,
		Segments:    automations.NewSegments(defs, logger, autos, js),
		Schedules:   schedules.NewService(st, tc.Templates),
		Definitions: defs,
		Suggestions: tc.Suggestions,
		Templates:   tc.Templates,
		Feeds:       feeds.NewService(st, tc.FeedTemplates, poller),
	}
	svc.Integrations = integrations.New(st, svc.Events)
	a, err = New(tc.Config, st, an, d, svc, logger, reg, opts...)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	if !tc.FoldByHand {
		wg.Go(func() { svc.Events.Run(ctx) })
	}
	wg.Go(func() { a.WatchAuth(ctx) })
	if tc.RateSync >= 0 {
		wg.Go(func() { svc.Public.Run(ctx, cmp.Or(tc.RateSync, ratelimit.DefaultSync), a.now) })
	}
	stop := func() {
		cancel()
		wg.Wait()
	}
	if tc.Stop != nil {
		*tc.Stop = stop
	}
	t.Cleanup(func() {
		stop()
		a.Close()
	})
	return a, nil
}

func newHarness(t testing.TB, mutate ...func(*testConfig)) *harness {
	t.Helper()
	st, an, dump := openDumpableStores(t)
	h := &harness{t: t, st: &failStore{Store: st}, an: &failAnalytics{Store: an}, disp: &memDispatcher{},
		clock: &testClock{now: testStart}, reg: prometheus.NewRegistry(), dump: dump}
	cfg := testConfig{Config: Config{AdminToken: testAdminToken}}
	for _, f := range mutate {
		f(&cfg)
	}
	a, err := newAPI(t, cfg, h.st, h.an, h.disp, nil, h.reg, WithClock(h.clock.Now))
	if err != nil {
		t.Fatal(err)
	}
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

func (r response) json(t testing.TB) map[string]any {
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
