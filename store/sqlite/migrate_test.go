package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/relaybell/relaybell/store"
	"github.com/relaybell/relaybell/store/storetest"
)

// makePrevious makes the database file at path with the previous release's
// migrations up to version upto, recording them as that release did (its
// own numbering: SQLite's 1–12, then 16–20), applied at 1 ms after the
// epoch, a time no migration run by Open has.
func makePrevious(t *testing.T, path string, upto int) {
	t.Helper()
	ctx := context.Background()
	db, err := openDB(ctx, path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    integer PRIMARY KEY,
			applied_at INTEGER NOT NULL
		)`); err != nil {
		t.Fatal(err)
	}
	for _, m := range storetest.PreviousMigrations(t, "testdata/previous", upto) {
		if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
			t.Fatalf("applying %s: %v", m.File, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES (?, 1)`, m.Version); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

var (
	sqlComment = regexp.MustCompile(`--[^\n]*`)
	sqlSpace   = regexp.MustCompile(`\s+`)
	sqlPadding = regexp.MustCompile(`\( | (\)|,)`)
)

// schemaOf describes the schema of the database file at path, one line per
// object of sqlite_master (its SQL without comments, with runs of white
// space made one space), then its recorded versions.
func schemaOf(t *testing.T, path string) []string {
	t.Helper()
	ctx := context.Background()
	db, err := openDB(ctx, path, true)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, `SELECT type, name, tbl_name, coalesce(sql, '') FROM sqlite_master ORDER BY type, name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var typ, name, table, sql string
		if err := rows.Scan(&typ, &name, &table, &sql); err != nil {
			t.Fatal(err)
		}
		sql = sqlSpace.ReplaceAllString(sqlComment.ReplaceAllString(sql, ""), " ")
		sql = sqlPadding.ReplaceAllStringFunc(strings.TrimSpace(sql), func(s string) string { return strings.TrimSpace(s) })
		lines = append(lines, fmt.Sprintf("%s %s ON %s: %s", typ, name, table, sql))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	var versions string
	if err := db.QueryRowContext(ctx, `SELECT group_concat(version, ' ') FROM (SELECT version FROM schema_migrations ORDER BY version)`).Scan(&versions); err != nil {
		t.Fatal(err)
	}
	return append(lines, "versions "+versions)
}

// A database the previous release made, at any of its versions, upgrades
// in place to exactly the schema of a fresh one, running only what it
// lacked.
func TestUpgradeFromPreviousRelease(t *testing.T) {
	ctx := context.Background()
	fresh := filepath.Join(t.TempDir(), "fresh.db")
	s, err := Open(ctx, fresh, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	want := schemaOf(t, fresh)
	if len(want) < 60 || want[len(want)-1] != "versions 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41" {
		t.Fatalf("fresh schema: %d lines, %s", len(want), want[len(want)-1])
	}
	// The previous release's SQLite versions, and what each is in the list.
	renumbered := map[int]int{10: 11, 11: 12, 12: 13}
	for _, upto := range []int{1, 9, 10, 11, 12, 16, 19, 20} {
		t.Run(fmt.Sprint(upto), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "previous.db")
			makePrevious(t, path, upto)
			var ran []int // what the previous release recorded, renumbered
			for _, m := range storetest.PreviousMigrations(t, "testdata/previous", upto) {
				v := m.Version
				if n, ok := renumbered[v]; ok {
					v = n
				}
				ran = append(ran, v)
			}
			for range 2 { // the second Open has nothing to do
				s, err := Open(ctx, path, nil)
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				storetest.SameSchema(t, want, schemaOf(t, path))
				// The versions the previous release applied keep their
				// rows: none ran again.
				if kept := queryInts(t, path, `SELECT version FROM schema_migrations WHERE applied_at = 1 ORDER BY version`); !slices.Equal(kept, ran) {
					t.Fatalf("versions recorded by the previous release: %v; want %v", kept, ran)
				}
			}
		})
	}
}

// queryInts returns the integers query reads from the database at path.
func queryInts(t *testing.T, path, query string) []int {
	t.Helper()
	ctx := context.Background()
	db, err := openDB(ctx, path, true)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, query)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ns []int
	for rows.Next() {
		var n int
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		ns = append(ns, n)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return ns
}

// The rows of a database at version 1 are filled in by the upgrade as the
// previous release did: consent times, labels, browser counts and the auth
// version.
func TestUpgradeFillsIn(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "previous.db")
	makePrevious(t, path, 1)
	db, err := openDB(ctx, path, false)
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.ExecContext(ctx, `
		INSERT INTO accounts (id, owner_email, created_at) VALUES ('acc', 'o@example.com', 1000);
		INSERT INTO websites (id, account_id, project_id, name, url, timezone, vapid_public_key, vapid_private_key, created_at)
			VALUES ('web', 'acc', 'prj', 'n', 'https://example.com', 'UTC', 'pub', 'priv', 1000);
		INSERT INTO subscribers (id, website_id, tags, shard, created_at, last_seen_at) VALUES
			('sub', 'web', '{"plan":"pro"}', 3, 1000, 1000),
			('none', 'web', '{}', 4, 1000, 1000);
		INSERT INTO endpoints (id, website_id, shard, subscriber_id, url, p256dh, auth, created_at, last_seen_at) VALUES
			('e2', 'web', 3, 'sub', 'https://push.example/2', 'k', 'a', 3000, 3000),
			('e1', 'web', 3, 'sub', 'https://push.example/1', 'k', 'a', 2000, 2000)`)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var got string
	if err := s.r.queryRow(ctx, `SELECT group_concat(id || ' ' || coalesce(consent_at, 'null') || ' ' || browsers, ', ')
		|| '; ' || (SELECT group_concat(subscriber_id || ' ' || key || '=' || value) FROM subscriber_labels)
		|| '; ' || (SELECT version FROM auth_version)
		FROM (SELECT * FROM subscribers ORDER BY id)`).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if want := "none null 0, sub 2000 2; sub plan=pro; 1"; got != want {
		t.Fatalf("after the upgrade: %q, want %q", got, want)
	}
}

// Migration 39 moves version 38's sent results into the push ledger.
func TestUpgradeToLedger(t *testing.T) {
	path := filepath.Join(t.TempDir(), "relaybell.db")
	open := func() *Store {
		s, err := Open(context.Background(), path, nil)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	s := open()
	storetest.UpgradeToLedger(t, s, "INTEGER", func(query string) {
		t.Helper()
		if _, err := s.w.db.ExecContext(context.Background(), query); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
	}, func() store.Store {
		s.Close()
		return open()
	})
}

// Deleting a website deletes its sends' push ledger.
func TestLedgerGoesWithWebsite(t *testing.T) {
	s := openTest(t)
	storetest.LedgerGoesWithWebsite(t, s, func(query string) int64 {
		t.Helper()
		var n int64
		if err := s.w.db.QueryRowContext(context.Background(), query).Scan(&n); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		return n
	})
}
