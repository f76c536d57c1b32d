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

	"github.com/jackc/pgx/v5"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver
)

// storeDump reads back everything the metadata store and the analytics
// store hold, so that a test can check a refused request changed nothing.
type storeDump struct {
	sqlite   string // the metadata store's SQLite file, or
	postgres string // its PostgreSQL DSN (search_path on the test's schema)
	// analytics is the SQLite analytics store's file.
	analytics string

	mu   sync.Mutex
	dbs  map[string]*sqliteDump
	conn *pgx.Conn
	// lsn and last are PostgreSQL's WAL insert position at the last dump
	// and that dump: no change is committed without moving it.
	lsn, last string
}

// sqliteDump reads one SQLite file over one connection, and dumps it again
// only when another connection committed since (PRAGMA data_version).
type sqliteDump struct {
	db      *sql.DB
	version int64
	last    string
}

var dumpSeed = maphash.MakeSeed()

// volatile is what changes while no request is being served, or counts
// requests whatever their answer: a key's last use is written after the
// request, off its path, and a refused request may still count against a
// rate limit.
var volatile = map[string]bool{"api_keys.last_used_at": true, "rate_counters": true}

// take returns every table's rows, sorted, as text.
func (d *storeDump) take(t testing.TB) string {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	ctx := context.Background()
	var b strings.Builder
	if d.postgres != "" {
		if d.conn == nil {
			conn, err := pgx.Connect(ctx, d.postgres)
			if err != nil {
				t.Fatal(err)
			}
			d.conn = conn
			t.Cleanup(func() { conn.Close(context.Background()) })
		}
		var lsn string
		if err := d.conn.QueryRow(ctx, `SELECT pg_current_wal_insert_lsn()::text`).Scan(&lsn); err != nil {
			t.Fatalf("reading PostgreSQL's WAL position: %v", err)
		}
		if lsn != d.lsn {
			var pb strings.Builder
			if err := dumpPostgres(ctx, d.conn, &pb); err != nil {
				t.Fatalf("dumping PostgreSQL: %v", err)
			}
			d.lsn, d.last = lsn, pb.String()
		}
		b.WriteString(d.last)
	}
	for _, file := range []string{d.sqlite, d.analytics} {
		if file == "" {
			continue
		}
		sd := d.dbs[file]
		if sd == nil {
			db, err := sql.Open("sqlite", "file:"+file+"?mode=ro")
			if err != nil {
				t.Fatal(err)
			}
			db.SetMaxOpenConns(1) // data_version is per connection
			if d.dbs == nil {
				d.dbs = map[string]*sqliteDump{}
			}
			sd = &sqliteDump{db: db, version: -1}
			d.dbs[file] = sd
			t.Cleanup(func() { db.Close() })
		}
		var version int64
		if err := sd.db.QueryRowContext(ctx, `PRAGMA data_version`).Scan(&version); err != nil {
			t.Fatalf("reading %s: %v", file, err)
		}
		if version != sd.version {
			var fb strings.Builder
			if err := dumpSQLite(ctx, sd.db, &fb); err != nil {
				t.Fatalf("dumping %s: %v", file, err)
			}
			sd.version, sd.last = version, fb.String()
		}
		b.WriteString(sd.last)
	}
	return b.String()
}

func dumpPostgres(ctx context.Context, conn *pgx.Conn, b *strings.Builder) error {
	rows, err := conn.Query(ctx, `SELECT table_name FROM information_schema.tables
		WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY 1`)
	if err != nil {
		return err
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	for _, table := range tables {
		if volatile[table] {
			continue
		}
		rows, err := conn.Query(ctx, `SELECT * FROM `+pgx.Identifier{table}.Sanitize())
		if err != nil {
			return err
		}
		var cols []string
		for _, f := range rows.FieldDescriptions() {
			cols = append(cols, f.Name)
		}
		var lines []string
		for rows.Next() {
			vals, err := rows.Values()
			if err != nil {
				rows.Close()
				return err
			}
			lines = append(lines, dumpRow(table, cols, vals))
		}
		if err := rows.Err(); err != nil {
			return err
		}
		writeTable(b, table, lines)
	}
	return nil
}

func dumpSQLite(ctx context.Context, db *sql.DB, b *strings.Builder) error {
	var tables []string
	rows, err := db.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY 1`)
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
		writeTable(b, table, lines)
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

func writeTable(b *strings.Builder, table string, lines []string) {
	slices.Sort(lines)
	fmt.Fprintf(b, "== %s (%d)\n", table, len(lines))
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
}
