package bench

import (
	"context"
	"maps"
	"net/url"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/relaybell/relaybell/store/storetest"
)

// TestSettleVacuumsAndAnalyzesTheRunsTables requires settle to vacuum and
// analyze every table of the run's schema, and no table of another schema.
func TestSettleVacuumsAndAnalyzesTheRunsTables(t *testing.T) {
	schemas := []string{storetest.PostgresSchema(t), storetest.PostgresSchema(t)}
	ctx := context.Background()
	dsn := storetest.PostgresDSN()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, schema := range schemas {
		s := pgx.Identifier{schema}.Sanitize()
		for _, q := range []string{
			`CREATE TABLE ` + s + `.a (id int PRIMARY KEY)`,
			`CREATE TABLE ` + s + `."B" (id int PRIMARY KEY)`,
			`INSERT INTO ` + s + `.a SELECT generate_series(1, 1000)`,
			`INSERT INTO ` + s + `."B" SELECT generate_series(1, 10)`,
		} {
			if _, err := conn.Exec(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
	if err := settle(ctx, dsn, schemas[0]); err != nil {
		t.Fatal(err)
	}
	// VACUUM and ANALYZE report their runs to the statistics at once;
	// clearing the snapshot makes each read see them.
	type state struct{ vacuumed, analyzed bool }
	read := func(schema string) map[string]state {
		t.Helper()
		if _, err := conn.Exec(ctx, `SELECT pg_stat_clear_snapshot()`); err != nil {
			t.Fatal(err)
		}
		rows, err := conn.Query(ctx, `SELECT relname, last_vacuum IS NOT NULL, last_analyze IS NOT NULL
			FROM pg_stat_user_tables WHERE schemaname = $1`, schema)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		got := map[string]state{}
		for rows.Next() {
			var (
				table string
				s     state
			)
			if err := rows.Scan(&table, &s.vacuumed, &s.analyzed); err != nil {
				t.Fatal(err)
			}
			got[table] = s
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return got
	}
	want := map[string]state{"a": {true, true}, "B": {true, true}}
	if got := read(schemas[0]); !maps.Equal(got, want) {
		t.Errorf("the run's schema after settle: %v, want %v", got, want)
	}
	want = map[string]state{"a": {false, false}, "B": {false, false}}
	if got := read(schemas[1]); !maps.Equal(got, want) {
		t.Errorf("another schema after settle: %v, want %v", got, want)
	}
	if err := settle(ctx, dsn, "rb_settle_missing"); err == nil {
		t.Error("settle of a schema without tables succeeded")
	}
}

// TestConnectTakesTheNodesPoolSettings requires the bench's own
// connections to accept a DSN that sets the nodes' pools, which a plain
// connection refuses.
func TestConnectTakesTheNodesPoolSettings(t *testing.T) {
	schema := storetest.PostgresSchema(t)
	ctx := context.Background()
	u, err := url.Parse(storetest.PostgresDSN())
	if err != nil {
		t.Skipf("RELAYBELL_TEST_POSTGRES is not a URL: %v", err)
	}
	q := u.Query()
	q.Set("pool_max_conns", "2")
	u.RawQuery = q.Encode()
	dsn := u.String()
	if conn, err := pgx.Connect(ctx, dsn); err == nil {
		conn.Close(ctx)
		t.Fatal("a plain connection took pool_max_conns: this test no longer tells connect's reason")
	}
	conn, err := connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE TABLE `+pgx.Identifier{schema, "t"}.Sanitize()+` (id int)`); err != nil {
		t.Fatal(err)
	}
	if err := settle(ctx, dsn, schema); err != nil {
		t.Errorf("settle: %v", err)
	}
	if _, err := runProcesses(ctx, dsn, schema); err != nil {
		t.Errorf("runProcesses: %v", err)
	}
}
