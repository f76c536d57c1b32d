package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	ansqlite "github.com/relaybell/relaybell/analytics/sqlite"
	"github.com/relaybell/relaybell/store"
	"github.com/relaybell/relaybell/store/postgres"
	"github.com/relaybell/relaybell/store/postgres/pgtest"
	"github.com/relaybell/relaybell/store/storetest"
)

// clusterDeadline is how long a change made through one node may take to
// hold on another. The nodes poll every 500 ms (the default), so a change
// shows in about that; this bound is generous on purpose (the test is not
// a speed test), yet below both the key cache's TTL (30 s) and its TTL for
// unknown keys (5 s), which is what a node without the version check takes.
const clusterDeadline = 3 * time.Second

// clusterNode is one API node of a cluster test, served on its own
// 127.0.0.1 listener over a store (connection pool) of its own.
type clusterNode struct {
	t    *testing.T
	name string
	api  *API
	st   store.Store
	base string
	c    *fasthttp.Client
}

// clusterPostgres returns the DSN of a new schema of its own in the test
// PostgreSQL. It skips under -short, and when PostgreSQL is unreachable
// unless CI is set (then it fails).
func clusterPostgres(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("two-node test on PostgreSQL (-short)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, storetest.PostgresDSN())
	if err != nil {
		if os.Getenv("CI") == "" {
			t.Skipf("PostgreSQL unreachable: %v", err)
		}
		t.Fatalf("PostgreSQL unreachable (CI is set): %v", err)
	}
	conn.Close(ctx)
	return pgtest.DSN(t)
}

// newClusterNode starts an API node over the store at dsn with cfg (the
// admin token is set).
func newClusterNode(t *testing.T, name, dsn string, cfg testConfig) *clusterNode {
	t.Helper()
	ctx := context.Background()
	st, err := postgres.Open(ctx, dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	an, err := ansqlite.Open(ctx, filepath.Join(t.TempDir(), "analytics.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { an.Close() })
	cfg.AdminToken = testAdminToken
	a, err := newAPI(t, cfg, st, an, nil, nil, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	base := serveLingering(t, a)
	a.SetReady(true)
	return &clusterNode{t: t, name: name, api: a, st: st, base: base,
		c: &fasthttp.Client{ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second}}
}

// call sends a request to the node and returns the status and the error
// code of the answer ("" when none).
func (n *clusterNode) call(method, path, token, body string, out any) (int, string) {
	n.t.Helper()
	status, answer := n.send(method, path, body, "Authorization", "Bearer "+token)
	var e struct {
		Error string `json:"error"`
	}
	json.Unmarshal(answer, &e) //nolint:errcheck // not every answer is an object
	if out != nil && status < 300 {
		if err := json.Unmarshal(answer, out); err != nil {
			n.t.Fatalf("node %s: %s %s: %s: %v", n.name, method, path, answer, err)
		}
	}
	return status, e.Error
}

// send sends a request with the header pairs and returns the status and
// the body of the answer.
func (n *clusterNode) send(method, path, body string, headers ...string) (int, []byte) {
	n.t.Helper()
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(n.base + path)
	req.Header.SetMethod(method)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	if body != "" {
		req.Header.SetContentType("application/json")
		req.SetBodyString(body)
	}
	if err := n.c.DoTimeout(req, resp, 5*time.Second); err != nil {
		n.t.Fatalf("node %s: %s %s: %v", n.name, method, path, err)
	}
	return resp.StatusCode(), bytes.Clone(resp.Body())
}

// await asks the node with key until it answers status and code, and
// fails when that takes longer than clusterDeadline. It returns how long
// it took.
func (n *clusterNode) await(what, key string, status int, code string) time.Duration {
	n.t.Helper()
	start := time.Now()
	for {
		got, gotCode := n.call("GET", "/api/v1/notifications", key, "", nil)
		if got == status && gotCode == code {
			took := time.Since(start)
			n.t.Logf("%s: node %s answered %d %s after %s", what, n.name, status, code, took.Round(time.Millisecond))
			return took
		}
		if time.Since(start) > clusterDeadline {
			n.t.Fatalf("%s: node %s still answers %d %q after %s, want %d %q",
				what, n.name, got, gotCode, clusterDeadline, status, code)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestClusterAuthChanges runs two API nodes over one PostgreSQL store: a
// suspension, a reinstatement and a new key made through node A hold on
// node B within a second or so, though node B has the key cached.
func TestClusterAuthChanges(t *testing.T) {
	dsn := clusterPostgres(t)
	a := newClusterNode(t, "A", dsn, testConfig{})
	b := newClusterNode(t, "B", dsn, testConfig{})

	var site WebsiteCreated
	if s, code := a.call("POST", "/admin/v1/websites", testAdminToken,
		`{"name":"Shop","url":"https://shop.example"}`, &site); s != 201 {
		t.Fatalf("creating website on A: %d %s", s, code)
	}
	b.await("warm", site.APIKey, 200, "") // B has the key cached from here on

	if s, code := a.call("POST", "/admin/v1/accounts/"+site.AccountID+"/suspend", testAdminToken, "", nil); s != 200 {
		t.Fatalf("suspending on A: %d %s", s, code)
	}
	b.await("suspend", site.APIKey, 403, CodeAccountSuspended)

	if s, code := a.call("POST", "/admin/v1/accounts/"+site.AccountID+"/unsuspend", testAdminToken, "", nil); s != 200 {
		t.Fatalf("unsuspending on A: %d %s", s, code)
	}
	b.await("unsuspend", site.APIKey, 200, "")

	// A key B has looked up before it existed (so B remembers it as
	// unknown), then made through node A's store, as POST /keys will.
	secret, key, err := NewAPIKey(site.WebsiteID, "second", []string{ScopeFull}, nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	b.await("unknown", secret, 401, CodeInvalidAPIKey)
	if err := a.st.CreateAPIKey(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	b.await("new key", secret, 200, "")
}

// sessionCall sends a request with a session cookie (and the CSRF
// header) instead of a key, naming the project when it is not "".
func (n *clusterNode) sessionCall(method, path, token, project, body string) (int, []byte) {
	n.t.Helper()
	headers := []string{"Cookie", sessionCookie + "=" + token, csrfHeader, "1"}
	if project != "" {
		headers = append(headers, projectHeader, project)
	}
	return n.send(method, path, body, headers...)
}

// TestClusterSessionAndKeyRevocation runs two API nodes over one
// PostgreSQL store: a session revoked through node A is refused by node B
// at its next request, and a key revoked through A within about a second
// though B has it cached.
func TestClusterSessionAndKeyRevocation(t *testing.T) {
	dsn := clusterPostgres(t)
	a := newClusterNode(t, "A", dsn, testConfig{})
	b := newClusterNode(t, "B", dsn, testConfig{})
	var site WebsiteCreated
	if s, code := a.call("POST", "/admin/v1/websites", testAdminToken, `{"name":"Shop","url":"https://shop.example"}`, &site); s != 201 {
		t.Fatalf("creating website on A: %d %s", s, code)
	}
	ctx := context.Background()
	u, _, err := a.api.accounts.CreateUser(ctx, "ann@example.com", "correct horse battery", "Ann", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := a.st.SetMember(ctx, store.Member{AccountID: site.AccountID, UserID: u.ID, Role: store.RoleOwner}); err != nil {
		t.Fatal(err)
	}
	login := func(n *clusterNode) string {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(resp)
		req.SetRequestURI(n.base + "/api/v1/auth/login")
		req.Header.SetMethod("POST")
		req.Header.Set(csrfHeader, "1")
		req.SetBodyString(`{"email":"ann@example.com","password":"correct horse battery"}`)
		if err := n.c.DoTimeout(req, resp, 5*time.Second); err != nil || resp.StatusCode() != 200 {
			t.Fatalf("login on %s: %v %d %s", n.name, err, resp.StatusCode(), resp.Body())
		}
		var c fasthttp.Cookie
		if err := c.ParseBytes(resp.Header.PeekCookie(sessionCookie)); err != nil {
			t.Fatal(err)
		}
		return string(c.Value())
	}
	first, second := login(a), login(b)
	if s, body := b.sessionCall("GET", "/api/v1/notifications", second, site.ProjectID, ""); s != 200 {
		t.Fatalf("B with the second session: %d %s", s, body)
	}

	// The first session, through A, revokes the second; B refuses it at once.
	_, body := a.sessionCall("GET", "/api/v1/auth/sessions", first, "", "")
	var list struct{ Sessions []sessionView }
	if err := json.Unmarshal(body, &list); err != nil || len(list.Sessions) != 2 {
		t.Fatalf("sessions %s %v", body, err)
	}
	var secondID string
	for _, s := range list.Sessions {
		if !s.Current {
			secondID = s.ID
		}
	}
	if s, body := a.sessionCall("DELETE", "/api/v1/auth/sessions/"+secondID, first, "", ""); s != 200 {
		t.Fatalf("revoking on A: %d %s", s, body)
	}
	if s, body := b.sessionCall("GET", "/api/v1/notifications", second, site.ProjectID, ""); s != 401 {
		t.Fatalf("B with the revoked session: %d %s", s, body)
	}

	// A key made and revoked from the session through A; B has it cached.
	s, body := a.sessionCall("POST", "/api/v1/keys", first, site.ProjectID, `{"name":"server"}`)
	var made struct {
		APIKey string  `json:"apiKey"`
		Key    KeyView `json:"key"`
	}
	if s != 201 || json.Unmarshal(body, &made) != nil {
		t.Fatalf("POST /keys on A: %d %s", s, body)
	}
	b.await("warm", made.APIKey, 200, "")
	if s, body := a.sessionCall("DELETE", "/api/v1/keys/"+made.Key.ID, first, site.ProjectID, ""); s != 200 {
		t.Fatalf("revoking the key on A: %d %s", s, body)
	}
	b.await("revoked key", made.APIKey, 401, CodeInvalidAPIKey)
}

// TestClusterPublicRateLimit: two API nodes draw on the same per-address
// counts; what one admitted, the other refuses within a sync or two.
func TestClusterPublicRateLimit(t *testing.T) {
	dsn := clusterPostgres(t)
	cfg := testConfig{RateSync: 50 * time.Millisecond}
	a := newClusterNode(t, "A", dsn, cfg)
	b := newClusterNode(t, "B", dsn, cfg)
	var site WebsiteCreated
	if s, code := a.call("POST", "/admin/v1/websites", testAdminToken, `{"name":"Shop","url":"https://shop.example"}`, &site); s != 201 {
		t.Fatalf("creating website: %d %s", s, code)
	}
	config := "/api/v1/projects/" + site.ProjectID + "/config"
	sharedLimit(t, a, b, 100, 20, func(n *clusterNode) int {
		s, _ := n.send("GET", config, "")
		return s
	})
}

// TestClusterEventRateLimit: POST and GET /events of one key draw on one
// count across the API nodes.
func TestClusterEventRateLimit(t *testing.T) {
	dsn := clusterPostgres(t)
	cfg := testConfig{Config: Config{EventRateLimit: 30}, RateSync: 50 * time.Millisecond}
	a := newClusterNode(t, "A", dsn, cfg)
	b := newClusterNode(t, "B", dsn, cfg)
	var site WebsiteCreated
	if s, code := a.call("POST", "/admin/v1/websites", testAdminToken, `{"name":"Shop","url":"https://shop.example"}`, &site); s != 201 {
		t.Fatalf("creating website: %d %s", s, code)
	}
	i := 0
	sharedLimit(t, a, b, 20, 10, func(n *clusterNode) int {
		i++
		if i%2 == 0 {
			s, _ := n.call("GET", "/api/v1/events", site.APIKey, "", nil)
			return s
		}
		s, _ := n.call("POST", "/api/v1/events", site.APIKey, `{"event":"page.viewed"}`, nil)
		return s
	})
}

// sharedLimit checks a limit of total requests a minute that two nodes
// share: after first requests through a, b admits the total's rest once it
// has read a's count, and no more; then a refuses too. request sends one
// request to a node and returns the status.
func sharedLimit(t *testing.T, a, b *clusterNode, first, rest int, request func(*clusterNode) int) {
	t.Helper()
	// Start early in a minute, so the window does not turn during the test.
	if s := time.Now().Second(); s > 45 {
		time.Sleep(time.Duration(61-s) * time.Second)
	}
	for i := 0; i < first; i++ {
		if s := request(a); s/100 != 2 {
			t.Fatalf("A request %d: %d", i, s)
		}
	}
	// Each node's counts reach the store, and the other reads them, as its
	// periodic sync does; the exact count below needs a sync after every
	// request (on a loaded machine a periodic one can come late).
	sync := func(n *clusterNode) {
		if err := n.api.public.Sync(context.Background(), time.Now()); err != nil {
			t.Fatalf("%s syncing: %v", n.name, err)
		}
	}
	sync(a)
	start, admitted := time.Now(), 0
	for {
		s := request(b)
		if s == 429 {
			break
		}
		sync(b)
		admitted++
		if time.Since(start) > clusterDeadline {
			t.Fatalf("B still admits after %s", clusterDeadline)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("B admitted %d, then refused after %s", admitted, time.Since(start).Round(time.Millisecond))
	if admitted != rest {
		t.Fatalf("B admitted %d after A's %d, want %d", admitted, first, rest)
	}
	sync(a) // A reads the total
	if s := request(a); s != 429 {
		t.Fatalf("A: %d after the total reached the limit", s)
	}
}

// TestClusterPeopleChanges runs two API nodes over one PostgreSQL store:
// node B has the people its events named cached, and its next event after
// a change made through node A (a browser's first external id, an
// erasure) names the person as the store does, with no delay.
func TestClusterPeopleChanges(t *testing.T) {
	dsn := clusterPostgres(t)
	a := newClusterNode(t, "A", dsn, testConfig{})
	b := newClusterNode(t, "B", dsn, testConfig{})
	var site WebsiteCreated
	if s, code := a.call("POST", "/admin/v1/websites", testAdminToken, `{"name":"Shop","url":"https://shop.example"}`, &site); s != 201 {
		t.Fatalf("creating website: %d %s", s, code)
	}
	register := func(body string) string {
		t.Helper()
		var out browser
		if s, code := a.call("POST", "/api/v1/projects/"+site.ProjectID+"/subscriptions", "", body, &out); s != 201 && s != 200 {
			t.Fatalf("registering on A: %d %s", s, code)
		}
		return out.SubscriberID
	}
	p256dh, authKey := browserKeys(t)
	anonymous := fmt.Sprintf(`{"endpoint":"https://fcm.googleapis.com/fcm/send/x-%s","keys":{"p256dh":%q,"auth":%q}`,
		strings.ReplaceAll(authKey, "-", "x"), p256dh, authKey)
	x := register(anonymous + `}`)
	p256dh, authKey = browserKeys(t)
	ann := register(fmt.Sprintf(`{"endpoint":"https://fcm.googleapis.com/fcm/send/y-%s","keys":{"p256dh":%q,"auth":%q},"externalId":"ann"}`,
		strings.ReplaceAll(authKey, "-", "x"), p256dh, authKey))
	// track posts an event to B and returns whom it named ("" for nobody)
	// and the external id B's event log kept.
	track := func(name, member, key string) (string, string) {
		t.Helper()
		var out struct{ SubscriberID *string }
		if s, code := b.call("POST", "/api/v1/events", site.APIKey, fmt.Sprintf(`{"event":%q,%q:%q}`, name, member, key), &out); s != 202 {
			t.Fatalf("POST /events on B: %d %s", s, code)
		}
		var list struct{ Events []eventJSON }
		if s, code := b.call("GET", "/api/v1/events", site.APIKey, "", &list); s != 200 || len(list.Events) == 0 || list.Events[0].Name != name {
			t.Fatalf("GET /events on B: %d %s %+v", s, code, list.Events)
		}
		ext := ""
		if e := list.Events[0].ExternalID; e != nil {
			ext = *e
		}
		if out.SubscriberID == nil {
			return "", ext
		}
		return *out.SubscriberID, ext
	}
	check := func(name, member, key, wantID, wantExt string) {
		t.Helper()
		if id, ext := track(name, member, key); id != wantID || ext != wantExt {
			t.Fatalf("%s (%s %s): named %q with external id %q, want %q and %q", name, member, key, id, ext, wantID, wantExt)
		}
	}
	for range 2 { // the second time from B's cache
		check("warm", "subscriberId", x, x, "")
		check("warm", "externalId", "ann", ann, "ann")
		check("warm", "subscriberId", ann, ann, "ann")
	}

	register(anonymous + `,"externalId":"bob"}`) // x's first external id
	check("identified", "subscriberId", x, x, "bob")
	check("identified", "externalId", "bob", x, "bob")

	if s, code := a.call("DELETE", "/api/v1/subscribers/ann", site.APIKey, "", nil); s != 200 {
		t.Fatalf("erasing on A: %d %s", s, code)
	}
	check("erased", "externalId", "ann", "", "ann")
	check("erased", "subscriberId", ann, "", "")
	check("erased", "subscriberId", x, x, "bob")
}
