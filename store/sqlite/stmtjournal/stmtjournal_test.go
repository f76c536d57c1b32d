package stmtjournal_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/relaybell/relaybell/store/sqlite/stmtjournal"
)

// writes is the number of write system calls this process has made
// (/proc/self/io's syscw).
func writes(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "syscw: "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no syscw in /proc/self/io")
	return 0
}

// TestStatementInMemory runs, inside a transaction, a statement that
// changes about 2 MB of pages and may fail part-way (a unique column), so
// SQLite keeps a statement journal of them. Past SQLite's own 64 KiB that
// journal went to a temporary file, two writes a page; under Spill it
// writes nothing until the commit.
func TestStatementInMemory(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("counts write system calls in /proc/self/io")
	}
	if err := stmtjournal.Err(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "t.db")+
		"?_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=cache_size(-65536)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, `CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT NOT NULL UNIQUE, v TEXT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5000)
		INSERT INTO t (id, k, v) SELECT i, 'k' || i, printf('%.300c', 'v') FROM n`); err != nil {
		t.Fatal(err)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `UPDATE t SET k = 'x' || k WHERE id > 0`); err != nil { // a first statement: the transaction's own journal
		t.Fatal(err)
	}
	before := writes(t)
	if _, err := tx.ExecContext(ctx, `UPDATE t SET k = 'y' || k, v = v || 'w' WHERE id > 0`); err != nil {
		t.Fatal(err)
	}
	if n := writes(t) - before; n > 20 {
		t.Errorf("the statement made %d write system calls before its commit: its journal went to a file", n)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	var k string
	if err := db.QueryRowContext(ctx, `SELECT k FROM t WHERE id = 5000`).Scan(&k); err != nil || k != "yxk5000" {
		t.Fatalf("k = %q, %v; want yxk5000", k, err)
	}
}
