package pgtest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/relaybell/relaybell/store/postgres"
	"github.com/relaybell/relaybell/store/storetest"
)

// contents reads every table of the DSN's schema (schema_migrations
// included) and the next value of each identity, as JSON.
func contents(t *testing.T, dsn string) map[string]string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, table := range tables {
		var v *string
		if err := conn.QueryRow(ctx, `SELECT json_agg(t ORDER BY t::text)::text FROM `+pgx.Identifier{table}.Sanitize()+` t`).Scan(&v); err != nil {
			t.Fatal(err)
		}
		if v != nil {
			out[table] = *v
		}
	}
	// The next identity a row takes (nextval moves it: read it after).
	var seq int64
	if err := conn.QueryRow(ctx, `SELECT nextval(pg_get_serial_sequence('webhook_events', 'seq'))`).Scan(&seq); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(seq)
	out["next webhook_events.seq"] = string(b)
	return out
}

// TestReusedSchemaIsNew: a schema handed to a second test, after the first
// stored a website, an event with an identity, and moved the version
// rows, holds what the just-migrated schema held; a third test while the
// second still holds it gets another schema.
func TestReusedSchemaIsNew(t *testing.T) {
	ctx := context.Background()
	var first string
	var pristine map[string]string
	t.Run("first", func(t *testing.T) {
		first = DSN(t)
		pristine = contents(t, first)
		st, err := postgres.Open(ctx, first, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		storetest.BenchSetup(t, st)
		conn, err := pgx.Connect(ctx, first)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, `INSERT INTO webhook_events (id, website_id, event, data, created_at)
			VALUES ('e1', $1, 'x', '{}', $2)`, storetest.BenchWebsite, time.Now()); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, `UPDATE definitions_version SET version = version + 5;
			UPDATE people_version SET version = version + 5; UPDATE webhook_cursor SET seq = 7`); err != nil {
			t.Fatal(err)
		}
		if got := contents(t, first); got["websites"] == "" || got["webhook_events"] == "" {
			t.Fatalf("the first test's rows are not there: %v", got)
		}
	})
	t.Run("second", func(t *testing.T) {
		second := DSN(t)
		if second != first {
			t.Fatalf("the idle schema was not reused: %s, then %s", first, second)
		}
		got := contents(t, second)
		for table, want := range pristine {
			if got[table] != want {
				t.Errorf("%s: %s, want %s as just migrated", table, got[table], want)
			}
		}
		for table, rows := range got {
			if _, ok := pristine[table]; !ok {
				t.Errorf("%s holds %s, empty when just migrated", table, rows)
			}
		}
		if third := DSN(t); third == second {
			t.Errorf("a schema in use was handed out again")
		}
	})
}

// TestWorkInFlightIsEnded: a transaction still open on a schema when its
// test ends (a client gone without waiting for its statement) is ended
// before the schema is emptied: its write never reaches the next test.
func TestWorkInFlightIsEnded(t *testing.T) {
	ctx := context.Background()
	var first string
	var left *pgx.Conn
	t.Run("first", func(t *testing.T) {
		first = DSN(t)
		var err error
		if left, err = pgx.Connect(ctx, first); err != nil {
			t.Fatal(err)
		}
		if _, err := left.Exec(ctx, `BEGIN; UPDATE people_version SET version = 99`); err != nil {
			t.Fatal(err)
		}
	})
	defer left.Close(ctx)
	t.Run("second", func(t *testing.T) {
		second := DSN(t)
		if second != first {
			t.Fatalf("the idle schema was not reused: %s, then %s", first, second)
		}
		if _, err := left.Exec(ctx, `COMMIT`); err == nil {
			t.Errorf("the transaction left open committed after its schema was handed on")
		}
		if got := contents(t, second)["people_version"]; got != `[{"id":true,"version":1}]` {
			t.Errorf("people_version: %s", got)
		}
	})
}
