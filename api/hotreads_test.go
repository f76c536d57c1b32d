package api

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/relaybell/relaybell/store"
	"github.com/relaybell/relaybell/store/postgres"
	"github.com/relaybell/relaybell/store/sqlite"
	"github.com/relaybell/relaybell/store/sqlstore"
)

// stmtCounter is a sqlstore.DB that counts the statements run through it.
type stmtCounter struct {
	sqlstore.DB
	n *stmtCount
}

// stmtCount counts statements and keeps them, their spaces collapsed,
// and counts transactions (but those of a statement alone:
// TxOptions.Alone).
type stmtCount struct {
	mu    sync.Mutex
	n     int
	last  []string
	txs   int
	trips int // round trips: a pipeline's statements (sqlstore.Pipeliner) go in one
}

// add counts the statements of one round trip: one, or a pipeline's.
func (c *stmtCount) add(queries ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.trips++
	for _, q := range queries {
		c.n++
		c.last = append(c.last, strings.Join(strings.Fields(q), " "))
	}
}

// take returns the count and the statements since the last take.
func (c *stmtCount) take() (int, []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, last := c.n, c.last
	c.n, c.last, c.txs, c.trips = 0, nil, 0, 0
	return n, last
}

// roundTrips is the number of round trips to the store's server since the
// last take (the same as the statements but where pipelines went).
func (c *stmtCount) roundTrips() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.trips
}

// transactions is the number of transactions begun since the last take.
func (c *stmtCount) transactions() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.txs
}

func (c stmtCounter) Read() sqlstore.Conn  { return countConn{c.DB.Read(), c.n} }
func (c stmtCounter) Write() sqlstore.Conn { return countConn{c.DB.Write(), c.n} }

func (c stmtCounter) Tx(ctx context.Context, opt sqlstore.TxOptions, fn func(tx sqlstore.Conn) error) error {
	if !opt.Alone {
		c.n.mu.Lock()
		c.n.txs++
		c.n.mu.Unlock()
	}
	return c.DB.Tx(ctx, opt, func(tx sqlstore.Conn) error { return fn(countConn{tx, c.n}) })
}

func (c stmtCounter) Snapshot(ctx context.Context, fn func(read sqlstore.Conn) error) error {
	return c.DB.Snapshot(ctx, func(read sqlstore.Conn) error { return fn(countConn{read, c.n}) })
}

type countConn struct {
	c sqlstore.Conn
	n *stmtCount
}

func (c countConn) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	c.n.add(query)
	return c.c.Exec(ctx, query, args...)
}

func (c countConn) Query(ctx context.Context, query string, args ...any) (sqlstore.Rows, error) {
	c.n.add(query)
	return c.c.Query(ctx, query, args...)
}

func (c countConn) QueryRow(ctx context.Context, query string, args ...any) sqlstore.Row {
	c.n.add(query)
	return c.c.QueryRow(ctx, query, args...)
}

// Pipeline counts each statement, and one round trip for them all when
// the connection it wraps pipelines them (PostgreSQL's).
func (c countConn) Pipeline(ctx context.Context, queries []sqlstore.Piped) error {
	if _, ok := c.c.(sqlstore.Pipeliner); !ok {
		// One by one, each counted: c as a plain Conn, which pipelines
		// nothing.
		return sqlstore.Pipeline(ctx, struct{ sqlstore.Conn }{c}, queries)
	}
	sqls := make([]string, len(queries))
	for i, q := range queries {
		sqls[i] = q.SQL
	}
	c.n.add(sqls...)
	return sqlstore.Pipeline(ctx, c.c, queries)
}

// countedHarness is a harness whose store counts its statements, with the
// definitions cache trusting its version an hour (a steady stream of
// requests while nothing changes). The API's loops (the auth version
// poller, the rate counts' sync, the conversion folder) read the store on
// their own: stop ends them, so that the count is the requests' alone.
func countedHarness(t *testing.T) (h *harness, n *stmtCount, stop func()) {
	t.Helper()
	st, an := openStores(t)
	n = new(stmtCount)
	switch s := st.(type) {
	case *sqlite.Store:
		s.Store = s.Store.WithDB(stmtCounter{s.DB(), n})
	case *postgres.Store:
		s.Store = s.Store.WithDB(stmtCounter{s.DB(), n})
	default:
		t.Fatalf("store %T", st)
	}
	h = &harness{t: t, st: &failStore{Store: st}, an: &failAnalytics{Store: an}, disp: &memDispatcher{},
		clock: &testClock{now: testStart}, reg: prometheus.NewRegistry()}
	cfg := testConfig{Config: Config{AdminToken: testAdminToken}, DefinitionsTTL: time.Hour, Stop: &stop}
	a, err := newAPI(t, cfg, h.st, h.an, h.disp, nil, h.reg, WithClock(h.clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	h.api = a
	if h.site, err = CreateWebsite(context.Background(), h.st, NewWebsite{Name: "Shop", URL: "https://shop.example"}, testStart); err != nil {
		t.Fatal(err)
	}
	return h, n, stop
}

// TestHotReadStatements counts the store statements of a browser's
// registration, of GET /config and of GET /onsite (a subscribed visitor,
// a message targeting a segment) once the caches are warm, a topic, the
// welcome, the prompt and three on-site messages set:
//
//	go test ./api/ -run TestHotReadStatements -v
func TestHotReadStatements(t *testing.T) {
	h, n, stop := countedHarness(t)
	key := auth(h.site.APIKey)
	seg := h.do("POST", "/api/v1/segments", `{"name":"French","filters":{"rules":[{"field":"language","value":"fr"}]}}`, key...)
	segID := seg.json(t)["id"].(string)
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/api/v1/topics", `{"name":"News","slug":"news"}`},
		{"PUT", "/api/v1/prompt", `{"enabled":true,"kind":"soft"}`},
		{"PUT", "/api/v1/welcome", `{"enabled":true,"delaySeconds":60,"title":"Welcome!","body":"Thanks"}`},
		{"POST", "/api/v1/onsite", `{"name":"a","title":"A","status":"active"}`},
		{"POST", "/api/v1/onsite", `{"name":"b","title":"B","status":"active","targeting":{"include":["/shop*"]}}`},
		{"POST", "/api/v1/onsite", `{"name":"fr","title":"Bonjour","status":"active","targeting":{"segmentId":"` + segID + `"}}`},
	} {
		if r := h.do(c.method, c.path, c.body, key...); r.status >= 300 {
			t.Fatalf("%s %s: %d %s", c.method, c.path, r.status, r.body)
		}
	}
	base := "/api/v1/projects/" + h.site.ProjectID
	i := 0
	register := func() string {
		i++
		r := h.do("POST", base+"/subscriptions", subscribeBody(t, fmt.Sprintf("https://fcm.googleapis.com/fcm/send/hot%d", i), `,"language":"fr"`))
		if r.status != 201 {
			t.Fatalf("subscribe: %d %s", r.status, r.body)
		}
		return r.json(t)["subscriberId"].(string)
	}
	sub := register()
	stop()
	config := func() {
		if r := h.do("GET", base+"/config", ""); r.status != 200 {
			t.Fatalf("config: %d %s", r.status, r.body)
		}
	}
	onsite := func() {
		r := h.do("GET", base+"/onsite?url=https%3A%2F%2Fshop.example%2Fshop%2Fx&subscribed=1&subscriberId="+sub, "")
		if r.status != 200 || len(r.json(t)["messages"].([]any)) != 3 {
			t.Fatalf("onsite: %d %s", r.status, r.body)
		}
	}
	// A steady request reads no definition: neither the settings, the
	// on-site messages (nor their counts), the segments, the topics (nor
	// their counts), nor the definitions version (trusted an hour here).
	definitions := []string{"site_settings", "onsite_messages", "onsite_counts", "segments", "topics", "definitions_version"}
	const rounds = 10
	per := func(what string, f func()) float64 {
		t.Helper()
		f() // warm
		n.take()
		for range rounds {
			f()
		}
		all, stmts := n.take()
		for _, q := range stmts {
			for _, table := range definitions {
				if strings.Contains(q+" ", " "+table+" ") {
					t.Errorf("%s reads %s: %s", what, table, q)
				}
			}
		}
		last := stmts[len(stmts)*(rounds-1)/rounds:]
		for i, q := range last {
			last[i] = q[:min(len(q), 80)]
		}
		t.Logf("%s: %.1f store statements a request; the last one's:\n\t%s", what,
			float64(all)/rounds, strings.Join(last, "\n\t"))
		return float64(all) / rounds
	}
	per("registration", func() { register() })
	if got := per("config", config); got != 0 {
		t.Errorf("config: %.1f statements a request, want none", got)
	}
	// The visitor is read live, once.
	if got := per("onsite", onsite); got != 1 {
		t.Errorf("onsite: %.1f statements a request, want 1", got)
	}
}

// TestHotReadsFollowChanges: the prompt and topics (GET /config), the welcome (a
// registration queues it) and the on-site messages and their segments
// (GET /onsite) are read from the definitions cache, yet a change made
// through the API holds at once on the node it was made through (its
// cache trusts its version an hour: the route purges it) and on another
// node over the same store at its next version check (every request here).
func TestHotReadsFollowChanges(t *testing.T) {
	h := newHarness(t, func(tc *testConfig) { tc.DefinitionsTTL = time.Hour })
	other, err := newAPI(t, testConfig{Config: Config{AdminToken: testAdminToken}}, h.st, h.an, h.disp, nil,
		prometheus.NewRegistry(), WithClock(h.clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	nodes := []struct {
		name    string
		handler func(method, uri, body string, headers ...string) response
	}{{"A", h.do}, {"B", func(method, uri, body string, headers ...string) response {
		return serveOnce(other.Handler(), method, uri, body, headers...)
	}}}
	key := auth(h.site.APIKey)
	change := func(method, path, body string) map[string]any {
		t.Helper()
		r := h.do(method, path, body, key...)
		if r.status >= 300 {
			t.Fatalf("%s %s: %d %s", method, path, r.status, r.body)
		}
		return r.json(t)
	}
	base := "/api/v1/projects/" + h.site.ProjectID
	// Each node answers want (after what changed).
	prompt := func(what, want string) {
		t.Helper()
		for _, n := range nodes {
			r := n.handler("GET", base+"/config", "")
			if r.status != 200 || !strings.Contains(string(r.body), `"prompt":`+want) {
				t.Fatalf("%s: node %s's config: %d %s, want the prompt %s", what, n.name, r.status, r.body, want)
			}
		}
	}
	i := 0
	welcome := func(what string, want bool) {
		t.Helper()
		for _, n := range nodes {
			i++
			r := n.handler("POST", base+"/subscriptions", subscribeBody(t, fmt.Sprintf("https://fcm.googleapis.com/fcm/send/follow%d", i), ""))
			if r.status != 201 {
				t.Fatalf("%s: node %s: subscribe: %d %s", what, n.name, r.status, r.body)
			}
			endpoint := r.json(t)["endpointId"].(string)
			timers, err := h.st.ClaimTimers(context.Background(), h.clock.Now().Add(48*time.Hour), time.Minute, 100)
			if err != nil {
				t.Fatal(err)
			}
			queued := false
			for _, tm := range timers {
				queued = queued || tm.Kind == store.TimerWelcome && tm.RunID == endpoint
			}
			if queued != want {
				t.Fatalf("%s: node %s queued a welcome: %v, want %v", what, n.name, queued, want)
			}
		}
	}
	r := h.do("POST", base+"/subscriptions", subscribeBody(t, "https://fcm.googleapis.com/fcm/send/fr", `,"language":"fr"`))
	fr := r.json(t)["subscriberId"].(string)
	onsite := func(what string, want ...string) {
		t.Helper()
		for _, n := range nodes {
			r := n.handler("GET", base+"/onsite?url=https%3A%2F%2Fshop.example%2F&subscribed=1&subscriberId="+fr, "")
			var got struct{ Messages []struct{ Title string } }
			if err := json.Unmarshal(r.body, &got); err != nil || r.status != 200 {
				t.Fatalf("%s: node %s: onsite: %d %s", what, n.name, r.status, r.body)
			}
			titles := []string{}
			for _, m := range got.Messages {
				titles = append(titles, m.Title)
			}
			if !slices.Equal(titles, want) {
				t.Fatalf("%s: node %s shows %v, want %v", what, n.name, titles, want)
			}
		}
	}

	// Warm caches.
	prompt("at first", "null}")
	welcome("at first", false)
	onsite("at first")

	change("PUT", "/api/v1/prompt", `{"enabled":true,"kind":"bell"}`)
	prompt("the prompt on", `{"enabled":true,"kind":"bell"`)
	change("PUT", "/api/v1/prompt", `{"enabled":false}`)
	prompt("the prompt off", "null}")

	// The topics of /config.
	topics := func(what, want string) {
		t.Helper()
		for _, n := range nodes {
			r := n.handler("GET", base+"/config", "")
			if r.status != 200 || !strings.Contains(string(r.body), `"topics":`+want+`,`) {
				t.Fatalf("%s: node %s's config: %d %s, want the topics %s", what, n.name, r.status, r.body, want)
			}
		}
	}
	topics("at first", "[]")
	topic := change("POST", "/api/v1/topics", `{"name":"News","slug":"news"}`)["id"].(string)
	topics("a topic created", `[{"name":"News","slug":"news"}]`)
	change("PUT", "/api/v1/topics/"+topic, `{"name":"Daily news"}`)
	topics("a topic renamed", `[{"name":"Daily news","slug":"news"}]`)
	change("DELETE", "/api/v1/topics/"+topic, "")
	topics("a topic deleted", "[]")

	change("PUT", "/api/v1/welcome", `{"enabled":true,"delaySeconds":60,"title":"Welcome!"}`)
	welcome("the welcome on", true)
	change("PUT", "/api/v1/welcome", `{"enabled":false}`)
	welcome("the welcome off", false)

	a := change("POST", "/api/v1/onsite", `{"name":"a","title":"A","status":"active"}`)["id"].(string)
	onsite("a message created", "A")
	change("PUT", "/api/v1/onsite/"+a, `{"status":"paused"}`)
	onsite("a message paused")
	change("PUT", "/api/v1/onsite/"+a, `{"status":"active","title":"A2"}`)
	onsite("a message active again", "A2")
	seg := change("POST", "/api/v1/segments", `{"name":"French","filters":{"rules":[{"field":"language","value":"fr"}]}}`)["id"].(string)
	h.clock.Add(time.Second) // after A2, oldest first
	change("POST", "/api/v1/onsite", `{"name":"fr","title":"Bonjour","status":"active","targeting":{"segmentId":"`+seg+`"}}`)
	onsite("a message for a segment", "A2", "Bonjour")
	change("PUT", "/api/v1/segments/"+seg, `{"filters":{"rules":[{"field":"language","value":"de"}]}}`)
	onsite("its segment changed", "A2")
	change("DELETE", "/api/v1/onsite/"+a, "")
	onsite("a message deleted")
}

// TestBatchedRegistrationStatements: a group-committed batch of 16 new
// browsers, then the same 16 registering again as their people (the
// SDK's page views), each take a few statements for the whole batch,
// where one by one they took three to five each: the store's multi-row
// ways (sqlstore's upsertBatch) were taken.
func TestBatchedRegistrationStatements(t *testing.T) {
	h, n, stop := countedHarness(t)
	stop()
	ctx := context.Background()
	batch := make([]store.SubscriptionInput, 16)
	for i := range batch {
		batch[i] = store.SubscriptionInput{WebsiteID: h.site.WebsiteID, P256dh: "BP256", Auth: "auth",
			Endpoint: fmt.Sprintf("https://fcm.googleapis.com/fcm/send/batch%d", i), ExternalID: fmt.Sprintf("person-%d", i),
			Device: "desktop", Visit: store.VisitWeight, SiteTimezone: "UTC", At: testStart}
	}
	// PostgreSQL's statements that depend on nothing of each other's go
	// in one round trip (sqlstore.Pipeline): the new browsers' inserts,
	// the known ones' two updates. SQLite's go one by one.
	_, pipelined := h.st.Store.(*postgres.Store)
	for _, round := range []struct {
		what    string
		created bool
		max     int
		trips   int // on PostgreSQL
	}{{"new browsers", true, 8, 4}, {"the same browsers again", false, 5, 3}} {
		n.take()
		res, err := h.st.UpsertSubscriptions(ctx, batch)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range res {
			if r.Created != round.created || r.EndpointID == "" {
				t.Fatalf("%s: %d: %+v", round.what, i, r)
			}
		}
		trips := n.roundTrips()
		got, stmts := n.take()
		if got > round.max {
			t.Errorf("%s: %d statements for a batch of %d, want at most %d:\n\t%s", round.what, got, len(batch), round.max,
				strings.Join(stmts, "\n\t"))
		}
		want := got // SQLite: a round trip a statement
		if pipelined {
			want = round.trips
		}
		if trips != want {
			t.Errorf("%s: %d round trips for its %d statements, want %d:\n\t%s", round.what, trips, got, want,
				strings.Join(stmts, "\n\t"))
		}
	}
}

// TestInterestsStatements: a batch of interests (what concurrent events
// naming products write together) is one statement alone
// (TxOptions.Alone: no BEGIN and COMMIT on PostgreSQL); past
// interestsChunk, a statement per chunk in one pipeline, alone too (on
// PostgreSQL one round trip, which the server runs as one transaction).
func TestInterestsStatements(t *testing.T) {
	h, n, stop := countedHarness(t)
	stop()
	ctx := context.Background()
	var people []string
	for i := range 3 {
		res, err := h.st.UpsertSubscriptions(ctx, []store.SubscriptionInput{{WebsiteID: h.site.WebsiteID, P256dh: "BP256", Auth: "auth",
			Endpoint: fmt.Sprintf("https://fcm.googleapis.com/fcm/send/i%d", i), Device: "desktop", SiteTimezone: "UTC", At: testStart}})
		if err != nil {
			t.Fatal(err)
		}
		people = append(people, res[0].SubscriberID)
	}
	interests := func(size int) []store.ProductInterest {
		list := make([]store.ProductInterest, size)
		for i := range list {
			list[i] = store.ProductInterest{WebsiteID: h.site.WebsiteID, SubscriberID: people[i%len(people)],
				ProductID: fmt.Sprintf("p-%d", i), Kind: store.InterestPriceDrop, CreatedAt: testStart}
		}
		return list
	}
	_, pipelined := h.st.Store.(*postgres.Store)
	for _, c := range []struct {
		size, stmts int
	}{{10, 1}, {400, 1}, {401, 2}} {
		n.take()
		if err := h.st.AddInterests(ctx, interests(c.size)); err != nil {
			t.Fatal(err)
		}
		txs, trips := n.transactions(), n.roundTrips()
		want := c.stmts // SQLite: a round trip a statement
		if pipelined {
			want = 1
		}
		if got, stmts := n.take(); got != c.stmts || txs != 0 || trips != want {
			t.Errorf("%d interests: %d statements in %d round trips and %d transactions, want %d in %d and none:\n\t%s",
				c.size, got, trips, txs, c.stmts, want, strings.Join(stmts, "\n\t"))
		}
	}
	got, err := h.st.Interests(ctx, h.site.WebsiteID, people, testStart, 1000)
	if err != nil || len(got) != 401 {
		t.Fatalf("Interests: %d, %v; want 401", len(got), err)
	}
}

// TestLedgerReadStatements: a pusher's check of a batch and a recorder's
// write read the push ledger once for up to store.Shards shards (they read
// it once a shard before), and the statement's text is one of a few
// (padded to a power of two).
//
//	go test ./api/ -run TestLedgerReadStatements -v
func TestLedgerReadStatements(t *testing.T) {
	h, n, stop := countedHarness(t)
	ctx := context.Background()
	r := h.do("POST", "/api/v1/notifications", `{"title":"Hi"}`, auth(h.site.APIKey)...)
	id := r.json(t)["notificationId"].(string)
	stop()
	ledgerReads := func(stmts []string) (reads int, texts map[string]bool) {
		texts = map[string]bool{}
		for _, q := range stmts {
			if strings.HasPrefix(q, "SELECT l.shard, l.endpoints") {
				reads++
				texts[q] = true
			}
		}
		return reads, texts
	}
	for _, c := range []struct{ shards, reads int }{{1, 1}, {5, 1}, {7, 1}, {store.Shards, 1}} {
		keys := make([]store.ShardEndpoint, 3*c.shards)
		results := make([]store.PushResult, len(keys))
		for i := range keys {
			keys[i] = store.ShardEndpoint{ID: store.NewID(), Shard: i % c.shards}
			results[i] = store.PushResult{EndpointID: keys[i].ID, Outcome: store.OutcomeSent, Shard: keys[i].Shard}
		}
		n.take()
		if got, err := h.st.Undelivered(ctx, id, keys); err != nil || len(got) != len(keys) {
			t.Fatalf("Undelivered: %d of %d, %v", len(got), len(keys), err)
		}
		_, stmts := n.take()
		if reads, _ := ledgerReads(stmts); reads != c.reads {
			t.Errorf("a check of %d shards: %d ledger reads, want %d:\n\t%s", c.shards, reads, c.reads, strings.Join(stmts, "\n\t"))
		}
		if err := h.st.RecordResults(ctx, id, results); err != nil {
			t.Fatal(err)
		}
		_, stmts = n.take()
		if reads, _ := ledgerReads(stmts); reads != c.reads {
			t.Errorf("a write of %d shards: %d ledger reads, want %d:\n\t%s", c.shards, reads, c.reads, strings.Join(stmts, "\n\t"))
		}
		if got, err := h.st.Undelivered(ctx, id, keys); err != nil || len(got) != 0 {
			t.Fatalf("Undelivered after the write: %v, %v; want none", got, err)
		}
	}
	// 5, 6 and 7 shards read with one text (8 ranges, the rest padding).
	texts := map[string]bool{}
	n.take()
	for _, shards := range []int{5, 6, 7} {
		keys := make([]store.ShardEndpoint, shards)
		for i := range keys {
			keys[i] = store.ShardEndpoint{ID: store.NewID(), Shard: i}
		}
		if _, err := h.st.Undelivered(ctx, id, keys); err != nil {
			t.Fatal(err)
		}
		_, stmts := n.take()
		_, ts := ledgerReads(stmts)
		maps.Copy(texts, ts)
	}
	if len(texts) != 1 {
		t.Errorf("5, 6 and 7 shards read with %d texts, want 1:\n%v", len(texts), slices.Collect(maps.Keys(texts)))
	}
}

// TestPingStatements: a broadcast's receipts read its send once a node
// (pingSends) and no journey's enrolment for a send no journey made; each
// is the browser's endpoint read and one transaction, its interaction
// inserted and counted. A send another website's ping names is not
// served from the cache, and changes nothing.
//
//	go test ./api/ -run TestPingStatements -v
func TestPingStatements(t *testing.T) {
	h, n, stop := countedHarness(t)
	ctx := context.Background()
	base := "/api/v1/projects/" + h.site.ProjectID
	var endpoints []string
	for i := range 3 {
		r := h.do("POST", base+"/subscriptions", subscribeBody(t, fmt.Sprintf("https://fcm.googleapis.com/fcm/send/ping%d", i), ""))
		if r.status != 201 {
			t.Fatalf("subscribe: %d %s", r.status, r.body)
		}
		endpoints = append(endpoints, r.json(t)["endpointId"].(string))
	}
	r := h.do("POST", "/api/v1/notifications", `{"title":"Hi"}`, auth(h.site.APIKey)...)
	id := r.json(t)["notificationId"].(string)
	stop()
	ping := func(project, endpointID string) {
		t.Helper()
		r := h.do("POST", "/api/v1/projects/"+project+"/pings/delivered", fmt.Sprintf(`{"notificationId":%q,"endpointId":%q}`, id, endpointID))
		if r.status != 204 {
			t.Fatalf("ping: %d %s", r.status, r.body)
		}
	}
	// reads counts the statements reading table's rows (an existence
	// check is not one).
	reads := func(stmts []string, table string) int {
		k := 0
		for _, q := range stmts {
			if strings.HasPrefix(q, "SELECT") && !strings.HasPrefix(q, "SELECT EXISTS") && strings.Contains(q, " FROM "+table+" ") {
				k++
			}
		}
		return k
	}
	// Queued, not sent yet: what a ping reads of it could still change.
	n.take()
	ping(h.site.ProjectID, endpoints[0])
	if _, stmts := n.take(); reads(stmts, "notifications") != 1 {
		t.Fatalf("a queued send's first receipt: %d reads of it, want 1:\n\t%s", reads(stmts, "notifications"), strings.Join(stmts, "\n\t"))
	}
	if _, err := h.st.StartSending(ctx, id, testStart); err != nil {
		t.Fatal(err)
	}
	ping(h.site.ProjectID, endpoints[1]) // reads the send, now sending, and keeps it
	n.take()
	ping(h.site.ProjectID, endpoints[2])
	txs := n.transactions()
	_, stmts := n.take()
	// The enrolment of a send is read by a join of journey_history.
	journeys := 0
	for _, q := range stmts {
		if strings.Contains(q, "journey_history") {
			journeys++
		}
	}
	if reads(stmts, "notifications") != 0 || journeys != 0 || reads(stmts, "endpoints") != 1 || txs != 1 {
		t.Errorf("a sending send's receipt: %d transactions, statements:\n\t%s", txs, strings.Join(stmts, "\n\t"))
	}
	got, err := h.st.Notification(ctx, h.site.WebsiteID, id)
	if err != nil || got.Delivered != 3 {
		t.Fatalf("delivered %d (%v), want 3", got.Delivered, err)
	}

	// Another website's browser names the send the cache holds.
	other, err := CreateWebsite(ctx, h.st, NewWebsite{Name: "Other", URL: "https://other.example"}, testStart)
	if err != nil {
		t.Fatal(err)
	}
	r = h.do("POST", "/api/v1/projects/"+other.ProjectID+"/subscriptions", subscribeBody(t, "https://fcm.googleapis.com/fcm/send/foreign", ""))
	if r.status != 201 {
		t.Fatalf("subscribe: %d %s", r.status, r.body)
	}
	foreign := r.json(t)["endpointId"].(string)
	for _, kind := range []string{"delivered", "clicked"} {
		n.take()
		r := h.do("POST", "/api/v1/projects/"+other.ProjectID+"/pings/"+kind, fmt.Sprintf(`{"notificationId":%q,"endpointId":%q}`, id, foreign))
		if r.status != 204 {
			t.Fatalf("foreign %s ping: %d %s", kind, r.status, r.body)
		}
		// A click reads the send for its event first: from the store,
		// for the other website, which finds nothing.
		if _, stmts := n.take(); kind == "clicked" && reads(stmts, "notifications") != 1 {
			t.Errorf("another website's click: %d reads of the send, want 1:\n\t%s", reads(stmts, "notifications"), strings.Join(stmts, "\n\t"))
		}
	}
	if got, err := h.st.Notification(ctx, h.site.WebsiteID, id); err != nil || got.Delivered != 3 || got.Clicked != 0 {
		t.Fatalf("after another website's pings: %+v (%v)", got.Counters, err)
	}
}

// TestPingSendsFinal: a send is kept for pings once it went out, an A/B
// test once its winner is set, and only what pings read of it.
func TestPingSendsFinal(t *testing.T) {
	for _, c := range []struct {
		n    store.Notification
		want bool
	}{
		{store.Notification{Status: store.StatusDraft}, false},
		{store.Notification{Status: store.StatusScheduled}, false},
		{store.Notification{Status: store.StatusQueued}, false},
		{store.Notification{Status: store.StatusHeldForReview}, false},
		{store.Notification{Status: store.StatusSending}, true},
		{store.Notification{Status: store.StatusSent}, true},
		{store.Notification{Status: store.StatusSent, AB: true}, false},
		{store.Notification{Status: store.StatusSending, AB: true, ABWinner: "b"}, true},
	} {
		if got := final(c.n); got != c.want {
			t.Errorf("final(%s, ab %v, winner %q) = %v", c.n.Status, c.n.AB, c.n.ABWinner, got)
		}
	}
	full := store.Notification{ID: "n", WebsiteID: "w", Status: store.StatusSent, Title: "Hi", Content: []byte(`{}`),
		SendBody: []byte(`{}`), JourneyID: "j", AB: false}
	if v := pingView(full); v.Title != "" || v.Content != nil || v.SendBody != nil || v.ID != "n" || v.WebsiteID != "w" || v.JourneyID != "j" {
		t.Errorf("pingView = %+v", v)
	}
	full.AB, full.ABWinner = true, "a"
	if v := pingView(full); string(v.Content) != `{}` || v.ABWinner != "a" || !v.AB {
		t.Errorf("pingView(A/B) = %+v", v)
	}
}
