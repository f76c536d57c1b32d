package postgres

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/relaybell/relaybell/store"
	"github.com/relaybell/relaybell/store/storetest"
)

// preparedNames lists the statements prepared on c, but the one asking.
func preparedNames(t *testing.T, c *pgx.Conn) []string {
	t.Helper()
	const ask = `SELECT name FROM pg_prepared_statements WHERE statement NOT LIKE '%pg_prepared_statements%' ORDER BY name`
	rows, err := c.Query(context.Background(), ask, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// A connection forgets its prepared statements first p.first after it
// connected, then at doubling intervals up to p.most, and not between.
func TestPlanRefresh(t *testing.T) {
	ctx := context.Background()
	c, err := pgx.Connect(ctx, storetest.PostgresDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(ctx) })
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	p := planRefresh{first: time.Second, most: 5 * time.Second, now: func() time.Time { return at }}
	p.start(c)
	use := func() {
		t.Helper()
		var n int
		if err := c.QueryRow(ctx, `SELECT $1::int + 1`, 1).Scan(&n); err != nil || n != 2 {
			t.Fatalf("query: %d, %v", n, err)
		}
	}
	// step moves the clock by d and hands the connection out as the pool
	// does; it reports whether the connection forgot its statements.
	step := func(d time.Duration) bool {
		t.Helper()
		use()
		if len(preparedNames(t, c)) != 1 {
			t.Fatalf("prepared before the step: %v, want the one query", preparedNames(t, c))
		}
		at = at.Add(d)
		ok, err := p.prepare(ctx, c)
		if !ok || err != nil {
			t.Fatalf("prepare: %v, %v", ok, err)
		}
		return len(preparedNames(t, c)) == 0
	}
	var got []bool
	for _, d := range []time.Duration{999 * time.Millisecond, time.Millisecond, // forgets at 1s
		1999 * time.Millisecond, time.Millisecond, // then 2s later
		3 * time.Second, time.Second, // then 4s later
		4999 * time.Millisecond, time.Millisecond, // then at most 5s apart
		5 * time.Second} {
		got = append(got, step(d))
	}
	want := []bool{false, true, false, true, false, true, false, true, true}
	if !slices.Equal(got, want) {
		t.Fatalf("forgot at steps %v, want %v", got, want)
	}
	// The statement is prepared again when next used, and answers.
	use()
	if names := preparedNames(t, c); len(names) != 1 {
		t.Fatalf("prepared after a refresh and a use: %v", names)
	}
}

// A connection the pool hands out gets the refresh: statements prepared on
// it are forgotten when the pool hands it out once its time has come, and
// not before.
func TestPoolRefreshesPlans(t *testing.T) {
	s := openAt(t, testSchema(t)+"&pool_max_conns=1") // one connection: the same each time
	ctx := context.Background()
	// acquire hands the connection out, runs a prepared statement on it
	// and returns how many statements it held before that.
	acquire := func(past bool) int {
		t.Helper()
		conn, err := s.pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Release()
		c := conn.Conn()
		held := len(preparedNames(t, c))
		var n int
		if err := c.QueryRow(ctx, `SELECT $1::int + 1`, 1).Scan(&n); err != nil || n != 2 {
			t.Fatalf("query: %d, %v", n, err)
		}
		age, ok := c.PgConn().CustomData()[planKey].(*planAge)
		if !ok {
			t.Fatal("a pooled connection has no plan age")
		}
		if past {
			age.next = time.Now().Add(-time.Millisecond)
		}
		return held
	}
	acquire(false)
	if held := acquire(true); held == 0 {
		t.Fatal("the connection forgot its statements before its time")
	}
	if held := acquire(false); held != 0 {
		t.Fatalf("the connection held %d statements once its time had come", held)
	}
}

// The events' batched statements (a VALUES list of a row per event:
// interests, attributions) take
// a few texts whatever their batches' sizes: batches of 1 to 16 rows are
// five texts each (1, 2, 4, 8 and 16 rows), and a text run more than
// five times gets a kept plan.
func TestBatchStatementsArePadded(t *testing.T) {
	s := openAt(t, testSchema(t)+"&pool_max_conns=1") // one connection: the same each time
	ctx := context.Background()
	at := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	for n := 1; n <= 16; n++ {
		interests := make([]store.ProductInterest, n)
		queries := make([]store.Attribution, n)
		for i := range n {
			id := strconv.Itoa(i)
			interests[i] = store.ProductInterest{WebsiteID: "w", SubscriberID: "nobody-" + id, ProductID: "p", Kind: store.InterestPriceDrop, CreatedAt: at}
			queries[i] = store.Attribution{EventID: "e-" + id, SubscriberID: "nobody-" + id, Since: at, At: at, Value: 1}
		}
		if err := s.AddInterests(ctx, interests); err != nil {
			t.Fatalf("AddInterests of %d: %v", n, err)
		}
		found, err := s.Attribute(ctx, "w", queries)
		if err != nil || len(found) != n || slices.ContainsFunc(found, func(f store.Interaction) bool { return f.NotificationID != "" }) {
			t.Fatalf("Attribute of %d: %v, %v", n, found, err)
		}
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	for _, like := range []string{"INSERT INTO product_interests%", "INSERT INTO conversion_credits%"} {
		var texts, generic int
		if err := conn.Conn().QueryRow(ctx, `SELECT count(*), coalesce(sum(generic_plans), 0) FROM pg_prepared_statements
			WHERE ltrim(statement) LIKE $1`, pgx.QueryExecModeSimpleProtocol, like).Scan(&texts, &generic); err != nil {
			t.Fatal(err)
		}
		if texts != 5 {
			t.Errorf("%s: %d texts for batches of 1 to 16, want 5", like, texts)
		}
		if generic == 0 {
			t.Errorf("%s: no run used a kept plan", like)
		}
	}
}

// A transaction that moved the people version returns only once every
// node's lease on a version read before it ran out (PeopleLease); one that
// did not, or rolled back, does not wait, and leaves no mark on its
// connection for the next.
func TestPeopleChangesOutlastTheLease(t *testing.T) {
	s := openAt(t, testSchema(t)+"&pool_max_conns=1") // one connection: the same each time
	storetest.BenchSetup(t, s)
	ctx := context.Background()
	if _, err := s.pool.Exec(ctx, `INSERT INTO subscribers (id, website_id, shard, created_at, last_seen_at)
		VALUES ('sub', $1, 0, now(), now())`, storetest.BenchWebsite); err != nil {
		t.Fatal(err)
	}
	errStop := errors.New("stop")
	for _, c := range []struct {
		name  string
		query string
		err   error // fn's: the transaction rolls back
		waits bool
	}{
		{"an external id set", `UPDATE subscribers SET external_id = 'ann' WHERE id = 'sub'`, nil, true},
		{"the same external id", `UPDATE subscribers SET external_id = 'ann' WHERE id = 'sub'`, nil, false},
		{"labels", `UPDATE subscribers SET tags = '{"a":"b"}' WHERE id = 'sub'`, nil, false},
		{"a change rolled back", `UPDATE subscribers SET external_id = 'bob' WHERE id = 'sub'`, errStop, false},
		{"after it", `UPDATE subscribers SET tags = '{}' WHERE id = 'sub'`, nil, false},
		{"an erasure", `DELETE FROM subscribers WHERE id = 'sub'`, nil, true},
	} {
		before, start := s.leasesOutlasted.Load(), time.Now()
		err := s.inTx(ctx, false, func(q querier) error {
			if _, err := q.Exec(ctx, c.query); err != nil {
				return err
			}
			return c.err
		})
		took := time.Since(start)
		if !errors.Is(err, c.err) {
			t.Fatalf("%s: %v", c.name, err)
		}
		if waited := s.leasesOutlasted.Load() - before; waited != map[bool]int64{false: 0, true: 1}[c.waits] {
			t.Errorf("%s: waited out the leases %d times", c.name, waited)
		}
		if c.waits && took < s.PeopleLease() {
			t.Errorf("%s: returned %s after it began, within the lease (%s)", c.name, took, s.PeopleLease())
		}
	}
}
