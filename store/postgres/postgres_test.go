package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/relaybell/relaybell/defcache"
	"github.com/relaybell/relaybell/store"
	"github.com/relaybell/relaybell/store/sqlstore"
	"github.com/relaybell/relaybell/store/storetest"
)

// testSchema is storetest.PostgresSchema made into a DSN that uses it.
func testSchema(t testing.TB) string {
	t.Helper()
	return dsnOf(t, storetest.PostgresSchema(t))
}

// openAt opens a store on dsn, closed when the test ends (before its schema
// is dropped: cleanups run last registered first).
func openAt(t testing.TB, dsn string) *Store {
	t.Helper()
	s, err := Open(context.Background(), dsn, nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// openTest opens a store on a new schema of the test's own, dropped when
// it ends: what the tests of plans and the benchmarks do to their schema
// (statistics, an index dropped, a key added) goes with it.
func openTest(t testing.TB) *Store {
	t.Helper()
	return openAt(t, testSchema(t))
}

// openPooled opens a store on a migrated schema from storetest's pool,
// emptied for the next test when this one ends: the conformance cases,
// which change rows and nothing else.
func openPooled(t testing.TB) *Store {
	t.Helper()
	return openAt(t, dsnOf(t, storetest.PostgresStoreSchema(t, func(ctx context.Context, schema string) error {
		s, err := Open(ctx, dsnOf(t, schema), nil)
		if err != nil {
			return err
		}
		return s.Close()
	})))
}

func TestConformance(t *testing.T) {
	storetest.NewPeopleCache = func(base store.Store) storetest.PeopleCache { return defcache.NewPeople(base, nil) }
	storetest.Run(t, func(t *testing.T) store.Store { return openPooled(t) })
}

// Nodes starting together apply each migration once.
func TestMigrationsApplyOnce(t *testing.T) {
	ctx := context.Background()
	dsn := testSchema(t)
	var wg sync.WaitGroup
	stores := make([]*Store, 4)
	errs := make([]error, len(stores))
	for i := range stores {
		wg.Go(func() { stores[i], errs[i] = Open(ctx, dsn, nil) })
	}
	wg.Wait()
	for i, s := range stores {
		if errs[i] != nil {
			t.Fatalf("concurrent Open: %v", errs[i])
		}
		s.Close()
	}
	for range 2 {
		s := openAt(t, dsn)
		var n, version int
		if err := s.pool.QueryRow(ctx, `SELECT count(*), max(version) FROM schema_migrations`).Scan(&n, &version); err != nil {
			t.Fatalf("reading schema_migrations: %v", err)
		}
		if wantN, wantV := embeddedMigrations(t); n != wantN || version != wantV {
			t.Fatalf("schema_migrations has %d rows, version %d; want %d, %d", n, version, wantN, wantV)
		}
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	ctx := context.Background()
	dsn := testSchema(t)
	s, err := Open(ctx, dsn, nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if _, err := s.pool.Exec(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES (9999, now())`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s, err := Open(ctx, dsn, nil); err == nil {
		s.Close()
		t.Fatal("Open of a database from a newer binary succeeded")
	}
}

func TestOpenBadDSN(t *testing.T) {
	if s, err := Open(context.Background(), "postgres://postgres@127.0.0.1:1/test?sslmode=disable&connect_timeout=2", nil); err == nil {
		s.Close()
		t.Fatal("Open of an unreachable server succeeded")
	}
}

// Times are kept to the microsecond, rounded, and come back in UTC.
func TestTimes(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Skip(err)
	}
	created := time.Date(2025, 3, 14, 10, 26, 53, 123_456_789, paris)
	acc := store.Account{ID: "acc", OwnerEmail: "o@example.com", CreatedAt: created}
	web := store.Website{ID: "web", AccountID: "acc", ProjectID: "prj", Name: "n", URL: "https://example.com", Timezone: "UTC"}
	if err := s.CreateWebsite(ctx, acc, web, store.APIKey{ID: "key", Hash: "h"}); err != nil {
		t.Fatal(err)
	}
	a, err := s.Account(ctx, "acc")
	if err != nil {
		t.Fatal(err)
	}
	want := time.Date(2025, 3, 14, 9, 26, 53, 123_457_000, time.UTC)
	if a.CreatedAt != want || a.CreatedAt.Location() != time.UTC {
		t.Fatalf("CreatedAt = %v (%v), want %v in UTC", a.CreatedAt, a.CreatedAt.Location(), want)
	}
	n := store.Notification{WebsiteID: "web", Status: store.StatusScheduled, ScheduledAt: &created}
	if err := s.CreateNotification(ctx, &n); err != nil {
		t.Fatal(err)
	}
	got, err := s.NotificationByID(ctx, n.ID)
	if err != nil {
		t.Fatal(err)
	}
	if *got.ScheduledAt != want || got.CreatedAt != n.CreatedAt {
		t.Fatalf("ScheduledAt %v, CreatedAt %v; want %v, %v", got.ScheduledAt, got.CreatedAt, want, n.CreatedAt)
	}
	// The time DueScheduled compares with is rounded the same way.
	due, err := s.DueScheduled(ctx, created, 10)
	if err != nil || len(due) != 1 {
		t.Fatalf("DueScheduled at the scheduled time = %d sends, err %v; want 1", len(due), err)
	}
}

// TestQueryPlans keeps the hot queries on their indexes (with sequential
// scans priced out, since the tables of a test are tiny).
func TestQueryPlans(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SET enable_seqscan = off`); err != nil {
		t.Fatal(err)
	}
	defer conn.Exec(ctx, `RESET enable_seqscan`)
	f := func(name, query string, args ...any) {
		t.Helper()
		rows, err := conn.Query(ctx, "EXPLAIN "+query, args...)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, step := range plan {
			if strings.Contains(step, "Seq Scan") || strings.Contains(step, "Sort") {
				t.Fatalf("%s does not follow an index:\n%s", name, strings.Join(plan, "\n"))
			}
		}
	}
	f("audience", sqlstore.AudienceSQL(dialect, false), "w", 1, "", 10, "")
	f("audience of a topic", sqlstore.AudienceSQL(dialect, false), "w", 1, "", 10, "t")
	f("audience of one endpoint", sqlstore.EndpointAudienceSQL, "w", 1, "", 10, "", "e")
	f("lean audience", sqlstore.LeanAudienceSQL, "w", 1, "", 10, "")
	f("lean audience of a topic", sqlstore.LeanAudienceSQL, "w", 1, "", 10, "t")
	f("push ledger", sqlstore.LedgerQuery(1), "n", 1, "a", "b", "c")
	f("push ledger of four shards", sqlstore.LedgerQuery(4), "n", 1, "a", "b", "c", 2, "a", "b", "c", 3, "a", "b", "c", -1, "", "", "")
	f("frequency cap", sqlstore.CappedQuery, "w", time.Now(), "n", 1, "a", "b", "c")
	f("last integration error", sqlstore.LastIntegrationErrorSQL, "w", "shopify")
	// A report's count of failed and pruned pushes (it sorts its few
	// groups) reads push_ledger_trouble, not each send's every run.
	rows, err := conn.Query(ctx, "EXPLAIN "+sqlstore.DeliveryTroubleQuery(dialect), "w", []string{"a"})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || !strings.Contains(strings.Join(plan, "\n"), "push_ledger_trouble") {
		t.Fatalf("delivery trouble does not read push_ledger_trouble (%v):\n%s", err, strings.Join(plan, "\n"))
	}
	// Attribution looks a person's browsers' interactions up by endpoint
	// (interactions.endpoint_id and endpoints.id compare in one collation:
	// under two, the join read every interaction of the window).
	rows, err = conn.Query(ctx, "EXPLAIN "+sqlstore.LastInteractionQuery, "s", "w", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	plan, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if joined := strings.Join(plan, "\n"); err != nil || !strings.Contains(joined, "interactions_endpoint") || strings.Contains(joined, "Seq Scan on interactions") {
		t.Fatalf("the last interaction does not look interactions up by endpoint (%v):\n%s", err, joined)
	}
	// GET /integrations' last error reads the failed deliveries only.
	rows, err = conn.Query(ctx, "EXPLAIN "+sqlstore.LastIntegrationErrorSQL, "w", "shopify")
	if err != nil {
		t.Fatal(err)
	}
	plan, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || !strings.Contains(strings.Join(plan, "\n"), "integration_deliveries_failed") {
		t.Fatalf("the last integration error does not read integration_deliveries_failed (%v):\n%s", err, strings.Join(plan, "\n"))
	}
}

// A batch's check of the push ledger reads the runs of its own stretch of
// the shard, not every run after it: push_ledger here holds 48 runs of
// one send and shard, three in each of 16 buckets, never analyzed, as
// during a broadcast on a new store; the batch is the ids of one run.
func TestLedgerReadIsBounded(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	acc := store.Account{ID: "acc", OwnerEmail: "o@example.com", CreatedAt: time.Now()}
	web := store.Website{ID: "web", AccountID: "acc", ProjectID: "prj", Name: "n", URL: "https://example.com", Timezone: "UTC"}
	if err := s.CreateWebsite(ctx, acc, web, store.APIKey{ID: "key", Hash: "h"}); err != nil {
		t.Fatal(err)
	}
	n := store.Notification{WebsiteID: "web", Status: store.StatusSending}
	if err := s.CreateNotification(ctx, &n); err != nil {
		t.Fatal(err)
	}
	id := func(write, i int) string { return fmt.Sprintf("%c%04d-%04d", "0123456789abcdef"[write%16], write, i) }
	for w := range 48 {
		results := make([]store.PushResult, 100)
		for i := range results {
			results[i] = store.PushResult{EndpointID: id(w, i), Outcome: store.OutcomeSent}
		}
		if err := s.RecordResults(ctx, n.ID, results); err != nil {
			t.Fatal(err)
		}
	}
	var seq int64
	if err := s.pool.QueryRow(ctx, `SELECT seq FROM notifications WHERE id = $1`, n.ID).Scan(&seq); err != nil {
		t.Fatal(err)
	}
	batch := []store.ShardEndpoint{{ID: id(5, 0)}, {ID: id(5, 50)}, {ID: id(5, 99)}, {ID: "5x"}}
	got, err := s.Undelivered(ctx, n.ID, batch)
	if err != nil || !slices.Equal(got, []string{"5x"}) {
		t.Fatalf("Undelivered = %v, %v; want [5x]", got, err)
	}
	var plan []map[string]any
	if err := s.pool.QueryRow(ctx, "EXPLAIN (ANALYZE, FORMAT JSON) "+sqlstore.LedgerQuery(2), n.ID, 0, id(5, 0), "5x", "6", -1, "", "", "").Scan(&plan); err != nil {
		t.Fatal(err)
	}
	// Bucket 5's runs from the batch's first id on: its own and the two
	// written later (writes 21 and 37), not those of buckets 6 to f.
	read := 0.0
	walkPlan(plan, func(node map[string]any) {
		if node["Index Name"] == "push_ledger_pkey" {
			removed, _ := node["Rows Removed by Filter"].(float64)
			read += node["Actual Rows"].(float64) + removed
		}
	})
	if read == 0 || read > 3 {
		t.Fatalf("the ledger read %v runs; want at most 3:\n%v", read, plan)
	}
}

// walkPlan calls f with every node of an EXPLAIN (FORMAT JSON) plan.
func walkPlan(plan []map[string]any, f func(node map[string]any)) {
	var walk func(node map[string]any)
	walk = func(node map[string]any) {
		f(node)
		children, _ := node["Plans"].([]any)
		for _, c := range children {
			walk(c.(map[string]any))
		}
	}
	walk(plan[0]["Plan"].(map[string]any))
}

// A page of the audience looks each endpoint's subscriber up by key,
// whatever the statistics: over 50,000 analyzed subscribers, a page of the
// fan-out's size (2,000) was planned as a hash join over every subscriber.
func TestAudienceLooksEachSubscriberUp(t *testing.T) {
	if testing.Short() {
		t.Skip("seeds 50,000 subscribers")
	}
	ctx := context.Background()
	s := benchStore(t)
	seedAudience(t, s, 50_000)
	var plan []map[string]any
	if err := s.pool.QueryRow(ctx, "EXPLAIN (ANALYZE, FORMAT JSON) "+sqlstore.AudienceSQL(dialect, false), storetest.BenchWebsite, 5, "", 2000, "").Scan(&plan); err != nil {
		t.Fatal(err)
	}
	lookups := 0
	walkPlan(plan, func(node map[string]any) {
		if node["Relation Name"] == "subscribers" {
			if node["Index Name"] != "subscribers_pkey" || node["Actual Rows"].(float64) > 1 {
				t.Fatalf("%s on subscribers (%v) read %v rows a loop; want one key lookup per endpoint:\n%v", node["Node Type"], node["Index Name"], node["Actual Rows"], plan)
			}
			lookups = int(node["Actual Loops"].(float64))
		}
	})
	if lookups < 500 {
		t.Fatalf("%d subscriber lookups; want one per endpoint of the shard's page (about 780)", lookups)
	}
}

// embeddedMigrations returns how many migrations Open applies, and the
// last one's version.
func embeddedMigrations(t *testing.T) (int, int) {
	t.Helper()
	vs, err := sqlstore.MigrationVersions()
	if err != nil || len(vs) == 0 {
		t.Fatalf("listing migrations: %d, %v", len(vs), err)
	}
	return len(vs), vs[len(vs)-1]
}

// PostgreSQL keeps a statement's generic plan when it costs no more than
// planning each run (see Open and planRefresh), unless the DSN says
// otherwise.
func TestPlanCacheMode(t *testing.T) {
	ctx := context.Background()
	show := func(s *Store) string {
		var mode string
		if err := s.pool.QueryRow(ctx, `SHOW plan_cache_mode`).Scan(&mode); err != nil {
			t.Fatal(err)
		}
		return mode
	}
	dsn := testSchema(t)
	if got := show(openAt(t, dsn)); got != "auto" {
		t.Fatalf("plan_cache_mode = %q, want auto", got)
	}
	if got := show(openAt(t, dsn+"&plan_cache_mode=force_custom_plan")); got != "force_custom_plan" {
		t.Fatalf("plan_cache_mode from the DSN = %q, want force_custom_plan", got)
	}
}

// TestTxAlone: a statement run with TxOptions.Alone is its own
// transaction (no BEGIN before it: PostgreSQL's transaction and statement
// timestamps are the same only in a transaction's first command), and
// without it the statement runs in a transaction begun before it.
func TestTxAlone(t *testing.T) {
	ctx := context.Background()
	s := openPooled(t)
	for _, alone := range []bool{true, false} {
		var first bool
		err := s.DB().Tx(ctx, sqlstore.TxOptions{Alone: alone}, func(c sqlstore.Conn) error {
			// The simple protocol: one message, whose arrival starts both
			// (the extended protocol's Parse and Bind come apart).
			return c.QueryRow(ctx, `SELECT transaction_timestamp() = statement_timestamp()`, pgx.QueryExecModeSimpleProtocol).Scan(&first)
		})
		if err != nil {
			t.Fatal(err)
		}
		if first != alone {
			t.Errorf("Alone %v: the statement was its transaction's first command: %v", alone, first)
		}
	}
}
