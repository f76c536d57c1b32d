package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/relaybell/relaybell/store"
	"github.com/relaybell/relaybell/store/storetest"
)

// previousAppliedAt is the applied_at that makePrevious records, a time no
// migration run by Open has.
var previousAppliedAt = time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)

// connect opens a connection to the test database whose search_path is
// schema, closed when the test ends.
func connect(t *testing.T, schema string) *pgx.Conn {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, dsnOf(t, schema))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(ctx) })
	return c
}

// makePrevious makes schema's tables with the previous release's
// migrations up to version upto, recording them as that release did.
func makePrevious(t *testing.T, schema string, upto int) {
	t.Helper()
	ctx := context.Background()
	err := pgx.BeginFunc(ctx, connect(t, schema), func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    integer PRIMARY KEY,
			applied_at timestamptz NOT NULL
		)`); err != nil {
			return err
		}
		for _, m := range storetest.PreviousMigrations(t, "testdata/previous", upto) {
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return fmt.Errorf("applying %s: %w", m.File, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $2)`, m.Version, previousAppliedAt); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// schemaQueries describe a schema ($1), one row per object, each row's
// columns joined into a line: columns, constraints, indexes, triggers,
// functions, relations with their storage options, and sequences.
var schemaQueries = []string{
	`SELECT table_name, column_name, ordinal_position, data_type, udt_name, is_nullable,
		coalesce(column_default, ''), coalesce(collation_name, ''), is_identity, coalesce(identity_generation, '')
	FROM information_schema.columns WHERE table_schema = $1 ORDER BY table_name, ordinal_position`,
	`SELECT c.conrelid::regclass::text, c.conname, c.contype, pg_get_constraintdef(c.oid)
	FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace WHERE n.nspname = $1 ORDER BY 1, 2`,
	`SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = $1 ORDER BY 1, 2`,
	`SELECT t.tgname, pg_get_triggerdef(t.oid)
	FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
	WHERE n.nspname = $1 AND NOT t.tgisinternal ORDER BY 1`,
	`SELECT p.proname, pg_get_functiondef(p.oid)
	FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = $1 ORDER BY 1`,
	`SELECT c.relname, c.relkind, coalesce(array_to_string(c.reloptions, ','), '')
	FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 ORDER BY 1`,
	`SELECT sequencename, data_type::text, start_value, increment_by, max_value, cycle
	FROM pg_sequences WHERE schemaname = $1 ORDER BY 1`,
}

// schemaOf describes schema, its name replaced by S, and its recorded
// versions.
func schemaOf(t *testing.T, schema string) []string {
	t.Helper()
	ctx := context.Background()
	c := connect(t, schema)
	var lines []string
	for _, q := range schemaQueries {
		rows, err := c.Query(ctx, q, schema)
		if err != nil {
			t.Fatalf("%v:\n%s", err, q)
		}
		for rows.Next() {
			vals, err := rows.Values()
			if err != nil {
				t.Fatal(err)
			}
			line := strings.ReplaceAll(fmt.Sprintln(vals...), schema, "S")
			lines = append(lines, strings.TrimSpace(line))
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
	}
	var versions string
	if err := c.QueryRow(ctx, `SELECT string_agg(version::text, ' ' ORDER BY version) FROM schema_migrations`).Scan(&versions); err != nil {
		t.Fatal(err)
	}
	return append(lines, "versions "+versions)
}

// A schema the previous release made, at any of its versions, upgrades in
// place to exactly the schema of a fresh one, running only what it lacked.
func TestUpgradeFromPreviousRelease(t *testing.T) {
	ctx := context.Background()
	fresh := storetest.PostgresSchema(t)
	openAt(t, dsnOf(t, fresh))
	want := schemaOf(t, fresh)
	if len(want) < 300 || want[len(want)-1] != "versions 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41" {
		t.Fatalf("fresh schema: %d lines, %s", len(want), want[len(want)-1])
	}
	for _, upto := range []int{1, 9, 10, 13, 15, 19, 20} {
		t.Run(fmt.Sprint(upto), func(t *testing.T) {
			schema := storetest.PostgresSchema(t)
			makePrevious(t, schema, upto)
			var ran []int // PostgreSQL's numbering is the list's
			for _, m := range storetest.PreviousMigrations(t, "testdata/previous", upto) {
				ran = append(ran, m.Version)
			}
			for range 2 { // the second Open has nothing to do
				s, err := Open(ctx, dsnOf(t, schema), nil)
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				s.Close()
				storetest.SameSchema(t, want, schemaOf(t, schema))
				// The versions the previous release applied keep their
				// rows: none ran again.
				rows, _ := connect(t, schema).Query(ctx, `SELECT version FROM schema_migrations WHERE applied_at = $1 ORDER BY version`, previousAppliedAt)
				kept, err := pgx.CollectRows(rows, pgx.RowTo[int])
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(kept, ran) {
					t.Fatalf("versions recorded by the previous release: %v; want %v", kept, ran)
				}
			}
		})
	}
}

// dsnOf is the test DSN with schema as its search_path.
func dsnOf(t testing.TB, schema string) string {
	t.Helper()
	dsn, err := WithSearchPath(storetest.PostgresDSN(), schema)
	if err != nil {
		t.Fatal(err)
	}
	return dsn
}

// The rows of a schema at version 1 are filled in by the upgrade as the
// previous release did: consent times, labels, browser counts and the auth
// version.
func TestUpgradeFillsIn(t *testing.T) {
	ctx := context.Background()
	schema := storetest.PostgresSchema(t)
	makePrevious(t, schema, 1)
	if _, err := connect(t, schema).Exec(ctx, `
		INSERT INTO accounts (id, owner_email, created_at) VALUES ('acc', 'o@example.com', '2001-01-01 00:00:01Z');
		INSERT INTO websites (id, account_id, project_id, name, url, timezone, vapid_public_key, vapid_private_key, created_at)
			VALUES ('web', 'acc', 'prj', 'n', 'https://example.com', 'UTC', 'pub', 'priv', '2001-01-01 00:00:01Z');
		INSERT INTO subscribers (id, website_id, tags, shard, created_at, last_seen_at) VALUES
			('sub', 'web', '{"plan":"pro"}', 3, '2001-01-01 00:00:01Z', '2001-01-01 00:00:01Z'),
			('none', 'web', '{}', 4, '2001-01-01 00:00:01Z', '2001-01-01 00:00:01Z');
		INSERT INTO endpoints (id, website_id, shard, subscriber_id, url, p256dh, auth, created_at, last_seen_at) VALUES
			('e2', 'web', 3, 'sub', 'https://push.example/2', 'k', 'a', '2001-01-01 00:00:03Z', '2001-01-01 00:00:03Z'),
			('e1', 'web', 3, 'sub', 'https://push.example/1', 'k', 'a', '2001-01-01 00:00:02Z', '2001-01-01 00:00:02Z')`); err != nil {
		t.Fatal(err)
	}
	s := openAt(t, dsnOf(t, schema))
	var got string
	if err := s.pool.QueryRow(ctx, `SELECT string_agg(id || ' ' || coalesce(extract(epoch FROM consent_at)::text, 'null') || ' ' || browsers, ', ' ORDER BY id)
		|| '; ' || (SELECT string_agg(subscriber_id || ' ' || key || '=' || value, ',') FROM subscriber_labels)
		|| '; ' || (SELECT version FROM auth_version)
		FROM subscribers`).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if want := "none null 0, sub 978307202.000000 2; sub plan=pro; 1"; got != want {
		t.Fatalf("after the upgrade: %q, want %q", got, want)
	}
}

// Migration 39 moves version 38's sent results into the push ledger.
func TestUpgradeToLedger(t *testing.T) {
	dsn := testSchema(t)
	s := openAt(t, dsn)
	storetest.UpgradeToLedger(t, s, "timestamptz", func(query string) {
		t.Helper()
		if _, err := s.pool.Exec(context.Background(), query); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
	}, func() store.Store { return openAt(t, dsn) })
}

// Deleting a website deletes its sends' push ledger.
func TestLedgerGoesWithWebsite(t *testing.T) {
	s := openTest(t)
	storetest.LedgerGoesWithWebsite(t, s, func(query string) int64 {
		t.Helper()
		var n int64
		if err := s.pool.QueryRow(context.Background(), query).Scan(&n); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		return n
	})
}
