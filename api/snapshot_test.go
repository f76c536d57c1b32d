package api

import (
	"context"
	"database/sql"
	"fmt"
	"hash/maphash"
	"slices"
	"strings"
	"sync"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
	_ "modernc.org/sqlite"             // the "sqlite" database/sql driver
)

// storeDump reads back everything the metadata store and the analytics
// store hold, so that a test can check a refused request changed nothing.
type storeDump struct {
	sqlite   string // the metadata store's SQLite file, or
	postgres string // its PostgreSQL DSN (search_path on the test's schema)
	// analytics is the SQLite analytics store's file.
	analytics string

	mu  sync.Mutex
	dbs []*dumpedDB
}

// dumpedDB is one database read over one connection. It is dumped again
// only when its change marker moved: SQLite's data_version (per connection,
// moved by every commit of another one) or PostgreSQL's WAL insert position
// (no commit leaves it in place).
type dumpedDB struct {
	db     *sql.DB
	marker string // the query reading the change marker
	tables string // the query listing the tables
	seen   string // the marker at the last dump
	last   string
}

var dumpSeed = maphash.MakeSeed()

// volatile is what changes while no request is being served, or counts
// requests whatever their answer: a key's last use is written after the
// request, off its path, a session's when it is presented, and a refused
// request may still count against a rate limit (a failed login must). (The
// analytics' person index, built a while after each write from the rows
// already there, is in a file of its own, not dumped: the rows it indexes
// are compared.)
var volatile = map[string]bool{"api_keys.last_used_at": true, "rate_counters": true, "sessions.last_seen_at": true}

// open opens the databases on first use.
func (d *storeDump) open(t testing.TB) {
	if d.dbs != nil {
		return
	}
	add := func(driver, dsn, marker, tables string) {
		db, err := sql.Open(driver, dsn)
		if err != nil {
			t.Fatal(err)
		}
		db.SetMaxOpenConns(1) // data_version is per connection
		t.Cleanup(func() { db.Close() })
		d.dbs = append(d.dbs, &dumpedDB{db: db, marker: marker, tables: tables})
	}
	if d.postgres != "" {
		add("pgx", d.postgres, `SELECT pg_current_wal_insert_lsn()::text`, `SELECT table_name FROM information_schema.tables
			WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY 1`)
	}
	for _, file := range []string{d.sqlite, d.analytics} {
		if file != "" {
			add("sqlite", "file:"+file+"?mode=ro", `PRAGMA data_version`,
				`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY 1`)
		}
	}
}

// take returns every table's rows, sorted, as text.
func (d *storeDump) take(t testing.TB) string {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	d.open(t)
	ctx := context.Background()
	var b strings.Builder
	for _, db := range d.dbs {
		var marker string
		if err := db.db.QueryRowContext(ctx, db.marker).Scan(&marker); err != nil {
			t.Fatalf("reading the change marker: %v", err)
		}
		if marker != db.seen || db.last == "" {
			var tb strings.Builder
			if err := dumpTables(ctx, db.db, db.tables, &tb); err != nil {
				t.Fatalf("dumping: %v", err)
			}
			db.seen, db.last = marker, tb.String()
		}
		b.WriteString(db.last)
	}
	return b.String()
}

// dumpTables writes the rows of every table the query lists, but the
// volatile ones.
func dumpTables(ctx context.Context, db *sql.DB, list string, b *strings.Builder) error {
	var tables []string
	rows, err := db.QueryContext(ctx, list)
	if err != nil {
		return err
	}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return err
		}
		tables = append(tables, name)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for _, table := range tables {
		if volatile[table] {
			continue
		}
		rows, err := db.QueryContext(ctx, `SELECT * FROM "`+table+`"`)
		if err != nil {
			return err
		}
		cols, err := rows.Columns()
		if err != nil {
			rows.Close()
			return err
		}
		var lines []string
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				rows.Close()
				return err
			}
			lines = append(lines, dumpRow(table, cols, vals))
		}
		if err := rows.Err(); err != nil {
			return err
		}
		slices.Sort(lines)
		fmt.Fprintf(b, "== %s (%d)\n", table, len(lines))
		for _, l := range lines {
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
	return nil
}

func dumpRow(table string, cols []string, vals []any) string {
	var parts []string
	for i, c := range cols {
		if volatile[table+"."+c] {
			continue
		}
		v := vals[i]
		if bs, ok := v.([]byte); ok {
			v = string(bs)
		}
		text := fmt.Sprint(v)
		if len(text) > 100 {
			// Long values as a hash: a dump stays small enough to take
			// after every request, and still changes with them.
			text = fmt.Sprintf("%.40s…(%d bytes, hash %x)", text, len(text), maphash.String(dumpSeed, text))
		}
		parts = append(parts, c+"="+text)
	}
	return strings.Join(parts, " ")
}

// TestStoreDumpSeesChanges: the dump the robustness suite compares moves
// with a change on either store, and only then.
func TestStoreDumpSeesChanges(t *testing.T) {
	h := newHarness(t)
	key := auth(h.site.APIKey)
	before := h.dump.take(t)
	expectCode(t, h.do("POST", "/api/v1/segments", `{"name":""}`, key...), 400, "name_required")
	if after := h.dump.take(t); after != before {
		t.Fatalf("a refused request moved the dump:\n%s", dumpDiff(before, after))
	}
	if r := h.do("PUT", "/api/v1/settings", `{"timezone":"Europe/Paris"}`, key...); r.status != 200 {
		t.Fatalf("settings: %d %s", r.status, r.body)
	}
	after := h.dump.take(t)
	if after == before || !strings.Contains(dumpDiff(before, after), "Europe/Paris") {
		t.Fatalf("a change to a website did not move the dump:\n%s", dumpDiff(before, after))
	}
	// A title over 100 bytes is kept as a hash, which still moves.
	long := strings.Repeat("x", 300)
	r := h.do("POST", "/api/v1/notifications", `{"draft":true,"title":"`+long+`"}`, key...)
	id := r.json(t)["notificationId"].(string)
	before = h.dump.take(t)
	if r := h.do("PATCH", "/api/v1/notifications/"+id, `{"title":"`+long[:299]+`y"}`, key...); r.status != 200 {
		t.Fatalf("PATCH: %d %s", r.status, r.body)
	}
	if after := h.dump.take(t); after == before {
		t.Fatal("changing the end of a long title did not move the dump")
	}
}
