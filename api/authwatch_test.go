package api

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/relaybell/relaybell/store"
)

// authStore is the real store with AuthVersion failures, counts of the
// key lookups and version reads, and a gate that holds one KeyOwner call
// after it has read the store.
type authStore struct {
	store.Store

	mu         sync.Mutex
	versionErr error
	versions   int
	keyOwners  int
	gate       *keyOwnerGate
}

// keyOwnerGate holds one KeyOwner call: read is closed once it has its
// answer, and it returns when release is closed.
type keyOwnerGate struct{ read, release chan struct{} }

func (s *authStore) AuthVersion(ctx context.Context) (int64, error) {
	s.mu.Lock()
	s.versions++
	err := s.versionErr
	s.mu.Unlock()
	if err != nil {
		return 0, err
	}
	return s.Store.AuthVersion(ctx)
}

func (s *authStore) KeyOwner(ctx context.Context, hash string) (store.KeyOwner, error) {
	s.mu.Lock()
	s.keyOwners++
	g := s.gate
	s.gate = nil
	s.mu.Unlock()
	o, err := s.Store.KeyOwner(ctx, hash)
	if g != nil {
		close(g.read)
		<-g.release
	}
	return o, err
}

func (s *authStore) hold() *keyOwnerGate {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gate = &keyOwnerGate{read: make(chan struct{}), release: make(chan struct{})}
	return s.gate
}

func (s *authStore) failVersion(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.versionErr = err
}

func (s *authStore) counts() (keyOwners, versions int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keyOwners, s.versions
}

// authNode is one API node over an authStore with a website of its own.
type authNode struct {
	t     *testing.T
	api   *API
	st    *authStore
	clock *testClock
	reg   *prometheus.Registry
	site  WebsiteCreated
	stop  func() // ends the poller and waits for it
}

func newAuthNode(t *testing.T, cfg Config) *authNode {
	t.Helper()
	st, an := openStores(t)
	n := &authNode{t: t, st: &authStore{Store: st}, clock: &testClock{now: testStart}, reg: prometheus.NewRegistry()}
	cfg.AdminToken = testAdminToken
	a, err := newAPI(t, testConfig{Config: cfg, Stop: &n.stop}, n.st, an, nil, nil, n.reg, WithClock(n.clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	n.api = a
	n.site, err = CreateWebsite(context.Background(), st, NewWebsite{Name: "Shop", URL: "https://shop.example"}, testStart)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// get asks GET /api/v1/notifications with key.
func (n *authNode) get(key string) response {
	return serveOnce(n.api.Handler(), "GET", "/api/v1/notifications", "", auth(key)...)
}

// sync reads the auth version as a poll would.
func (n *authNode) sync() bool {
	n.t.Helper()
	changed, err := n.api.readAuthVersion(context.Background())
	if err != nil {
		n.t.Fatalf("reading auth version: %v", err)
	}
	return changed
}

// expect checks the status and error code ("" for none) of r.
func expectAnswer(t *testing.T, what string, r response, status int, code string) {
	t.Helper()
	if code != "" {
		expectCode(t, r, status, code)
		return
	}
	if r.status != status {
		t.Fatalf("%s: status %d, want %d (body %s)", what, r.status, status, r.body)
	}
}

// A lookup that read the store before a change and comes back after the
// cache was purged for it must not put the old answer back: the next
// request sees the change, whether the purge came from a poll (the change
// was made through another node) or from this node's own admin call.
func TestKeyLookupRacingAPurge(t *testing.T) {
	f := func(name string, change func(n *authNode)) {
		t.Run(name, func(t *testing.T) {
			// The poller stays silent for the test; n.sync plays its part.
			n := newAuthNode(t, Config{AuthPoll: time.Hour})
			n.sync()
			g := n.st.hold()
			first := make(chan response)
			go func() { first <- n.get(n.site.APIKey) }()
			<-g.read // the lookup has read the account, not suspended yet
			change(n)
			close(g.release)
			// It read the store before the change: either answer is fair.
			if r := <-first; r.status != 200 && r.status != 403 {
				t.Fatalf("lookup in flight: %d %s", r.status, r.body)
			}
			expectCode(t, n.get(n.site.APIKey), 403, CodeAccountSuspended)
			expectCode(t, n.get(n.site.APIKey), 403, CodeAccountSuspended)
		})
	}
	f("another node's change, seen by a poll", func(n *authNode) {
		if err := n.st.Store.SetAccountSuspended(context.Background(), n.site.AccountID, true); err != nil {
			t.Fatal(err)
		}
		if !n.sync() {
			t.Fatal("the suspension did not move the auth version")
		}
	})
	f("this node's admin call", func(n *authNode) {
		r := serveOnce(n.api.Handler(), "POST", "/admin/v1/accounts/"+n.site.AccountID+"/suspend", "", auth(testAdminToken)...)
		if r.status != 200 {
			t.Fatalf("suspend: %d %s", r.status, r.body)
		}
	})
}

// Changes made in the store by another node (here: straight in the store)
// reach a node that has the key cached, or cached as unknown, within a few
// polls; the embedded store runs the same code as the cluster's. Ending
// its module's context stops the poller.
func TestAuthPollSeesOtherNodesChanges(t *testing.T) {
	n := newAuthNode(t, Config{AuthPoll: 10 * time.Millisecond})
	ctx := context.Background()
	await := func(what, key string, status int, code string) {
		t.Helper()
		deadline := time.Now().Add(3 * time.Second)
		for {
			r := n.get(key)
			if r.status == status && (code == "" || strings.Contains(string(r.body), `"error":"`+code+`"`)) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: still %d %s, want %d %s", what, r.status, r.body, status, code)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	await("warm", n.site.APIKey, 200, "")
	if err := n.st.Store.SetAccountSuspended(ctx, n.site.AccountID, true); err != nil {
		t.Fatal(err)
	}
	await("suspended", n.site.APIKey, 403, CodeAccountSuspended)
	if err := n.st.Store.SetAccountSuspended(ctx, n.site.AccountID, false); err != nil {
		t.Fatal(err)
	}
	await("reinstated", n.site.APIKey, 200, "")

	secret, key, err := NewAPIKey(n.site.WebsiteID, "later", []string{ScopeFull}, nil, testStart)
	if err != nil {
		t.Fatal(err)
	}
	expectCode(t, n.get(secret), 401, CodeInvalidAPIKey) // cached as unknown
	if err := n.st.Store.CreateAPIKey(ctx, key); err != nil {
		t.Fatal(err)
	}
	await("created", secret, 200, "")

	if text := metricsOf(t, n.api); !strings.Contains(text, `relaybell_api_auth_version_reads_total{result="changed"}`) {
		t.Errorf("metrics lack the changed reads:\n%s", text)
	}
	n.stop()
	_, before := n.st.counts()
	time.Sleep(50 * time.Millisecond)
	if _, after := n.st.counts(); after != before {
		t.Errorf("%d auth version reads after Close", after-before)
	}
}

// A node that cannot read the auth version keeps serving its cache for
// the trust bound (4 polls), then asks the store for every key, so a
// change it cannot hear of still holds; once it reads the version again it
// caches again.
func TestAuthPollFailing(t *testing.T) {
	// Polls an hour apart keep the poller out of the way (n.sync is the
	// poll); the cache's TTL outlasts the trust bound of 4 polls.
	n := newAuthNode(t, Config{AuthPoll: time.Hour, KeyCacheTTL: 24 * time.Hour})
	n.sync()
	lookups := func(want int) {
		t.Helper()
		if got, _ := n.st.counts(); got != want {
			t.Fatalf("%d key lookups in the store, want %d", got, want)
		}
	}
	expectAnswer(t, "warm", n.get(n.site.APIKey), 200, "")
	expectAnswer(t, "cached", n.get(n.site.APIKey), 200, "")
	lookups(1)

	down := errors.New("connection refused")
	n.st.failVersion(down)
	if _, err := n.api.readAuthVersion(context.Background()); !errors.Is(err, down) {
		t.Fatalf("reading auth version: %v, want %v", err, down)
	}
	if err := n.st.Store.SetAccountSuspended(context.Background(), n.site.AccountID, true); err != nil {
		t.Fatal(err)
	}
	// Within the bound the cache still answers (what a poll interval costs).
	n.clock.Add(authTrust(time.Hour) - time.Second)
	expectAnswer(t, "within the bound", n.get(n.site.APIKey), 200, "")
	lookups(1)
	// Past it, every request asks the store.
	n.clock.Add(time.Second)
	expectCode(t, n.get(n.site.APIKey), 403, CodeAccountSuspended)
	expectCode(t, n.get(n.site.APIKey), 403, CodeAccountSuspended)
	lookups(3)

	n.st.failVersion(nil)
	if !n.sync() {
		t.Fatal("the suspension did not move the auth version")
	}
	expectCode(t, n.get(n.site.APIKey), 403, CodeAccountSuspended)
	expectCode(t, n.get(n.site.APIKey), 403, CodeAccountSuspended)
	lookups(4)
	text := metricsOf(t, n.api)
	for _, want := range []string{
		`relaybell_api_auth_version_reads_total{result="error"} 1`,
		`relaybell_api_auth_version_reads_total{result="changed"} 3`, // New, n.sync after the website, after recovery
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// The cache's own rules: a purge (or a moved version) drops what lookups
// in flight read, and the trust bound.
func TestKeyCacheGenerations(t *testing.T) {
	c := newKeyCache(time.Minute, 10)
	c.trustFor = time.Second
	owner := keyOwnerWithID("k")
	has := func(what string, now time.Time, want bool) {
		t.Helper()
		if _, _, ok := c.get("h", now); ok != want {
			t.Fatalf("%s: cached %v, want %v", what, ok, want)
		}
	}
	has("never read the version", testStart, false)
	if !c.observe(7, testStart) {
		t.Fatal("first version: not a change")
	}
	c.put("h", owner, true, testStart, c.generation())
	has("put", testStart, true)
	has("at the trust bound", testStart.Add(time.Second), false)
	if c.observe(7, testStart.Add(time.Second)) {
		t.Fatal("same version: a change")
	}
	has("same version read again", testStart.Add(time.Second), true)

	gen := c.generation()
	c.purge()
	c.put("h", owner, true, testStart, gen)
	has("put of before a purge", testStart, false)

	gen = c.generation()
	c.observe(8, testStart)
	c.put("h", owner, true, testStart, gen)
	has("put of before a new version", testStart, false)
	c.put("h", owner, true, testStart, c.generation())
	has("put after it", testStart, true)
	c.observe(8, testStart)
	has("same version", testStart, true)
	// A version that goes back (a store restored from a backup) is a change.
	if !c.observe(3, testStart) {
		t.Fatal("older version: not a change")
	}
	has("older version", testStart, false)
}

// metricsOf returns what a's /metrics serves.
func metricsOf(t *testing.T, a *API) string {
	t.Helper()
	r := serveOnce(a.Handler(), "GET", "/metrics", "")
	if r.status != 200 {
		t.Fatalf("metrics: %d", r.status)
	}
	return string(r.body)
}
