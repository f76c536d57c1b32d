package wal_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/relaybell/relaybell/store/sqlite/wal"
)

// open opens path as the stores do: WAL, the writer's autocheckpoint at
// wal.Backstop, one connection.
func open(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)"+
		"&_pragma=busy_timeout(10000)&_pragma=wal_autocheckpoint("+strconv.Itoa(wal.Backstop)+")")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	return db
}

// writeRounds writes rounds transactions of about 100 pages each, each
// followed by wrote and then wait.
func writeRounds(t *testing.T, db *sql.DB, rounds int, wrote, wait func()) {
	t.Helper()
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	v := strings.Repeat("x", 2000)
	for r := range rounds {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 200 {
			if _, err := tx.ExecContext(ctx, `INSERT INTO t (id, v) VALUES (?, ?)`, r*200+i, v); err != nil {
				t.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		wrote()
		wait()
	}
}

// waitPast waits until c has made more than n checkpoints.
func waitPast(t *testing.T, c *wal.Checkpointer, n int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for c.Checkpoints() <= n {
		if time.Now().After(deadline) {
			t.Fatalf("no checkpoint within 10 s of a write (%d made)", n)
		}
		time.Sleep(time.Millisecond)
	}
}

func walSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// The log stays about one round long with a Checkpointer: each round's
// pages are copied into the file, and the next write starts the log
// again from its beginning. Without one, 30 rounds (about 3,000 pages,
// under the writer's backstop) are all still in the log.
func TestCheckpointerKeepsTheLogShort(t *testing.T) {
	const rounds = 30
	const round = 200 * 2000 // bytes of rows a round

	t.Run("without", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "f.db")
		db := open(t, path)
		defer db.Close()
		writeRounds(t, db, rounds, func() {}, func() {})
		if got := walSize(t, path); got < rounds*round {
			t.Fatalf("the log without a checkpointer is %d bytes, want at least %d: the test shows nothing", got, rounds*round)
		}
	})

	t.Run("with", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "f.db")
		db := open(t, path)
		defer db.Close()
		c := wal.Start(open(t, path), db, time.Millisecond, nil)
		defer c.Close()
		// Each round waits for a checkpoint made after the one seen
		// before its write.
		seen := c.Checkpoints()
		writeRounds(t, db, rounds, c.Wrote, func() {
			waitPast(t, c, seen)
			seen = c.Checkpoints()
		})
		if got := walSize(t, path); got > 3*round {
			t.Fatalf("the log is %d bytes after %d rounds of %d, want at most 3 rounds' worth", got, rounds, round)
		}
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM t`).Scan(&n); err != nil || n != rounds*200 {
			t.Fatalf("rows: %d, %v; want %d", n, err, rounds*200)
		}
	})
}

// Under writes without a pause, no write ever begins with the whole log
// copied, so PASSIVE checkpoints alone never start it again: it grows to
// the writer's backstop. The checkpoint on the writer at RestartAt pages
// has the next write start it again, so it stays well under the backstop.
func TestCheckpointerRestartsABusyLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.db")
	db := open(t, path)
	defer db.Close()
	c := wal.Start(open(t, path), db, time.Millisecond, nil)
	defer c.Close()
	// 2.5 times RestartAt pages, about 100 a write, back to back. How far
	// the log gets past RestartAt depends on how many writes go by while
	// the Checkpointer copies and restarts it: gap, the most writes seen
	// between two of its checkpoints in this run, however busy the
	// machine is.
	rounds := wal.RestartAt * 5 / 2 / 100
	var round int64 // bytes of log one write appends
	var gap, since int
	last := c.Checkpoints()
	writeRounds(t, db, rounds, func() {
		if round == 0 {
			round = walSize(t, path)
		}
		if n := c.Checkpoints(); n != last {
			last, since = n, 0
		} else if since++; since > gap {
			gap = since
		}
		c.Wrote()
	}, func() {})
	const page = 4096 + 24 // a frame of the log
	// The log restarts within two of the Checkpointer's checkpoints of
	// reaching RestartAt (one that finds it there, the write then in
	// progress); without a restart it would reach the backstop.
	most := int64(wal.RestartAt)*page + int64(2*gap+2)*round
	if backstop := int64(wal.Backstop) * page; most >= backstop {
		t.Logf("the Checkpointer lagged %d writes: the log's bound, %d bytes, is past the backstop's %d, so its size shows nothing here", gap, most, backstop)
		return
	}
	// (A Checkpointer that busy a machine leaves that far behind may never
	// look at the log while it is past RestartAt: so this is checked
	// second.)
	if c.Restarts() == 0 {
		t.Fatalf("no checkpoint on the writer after %d writes of about 100 pages (%d checkpoints)", rounds, c.Checkpoints())
	}
	if got := walSize(t, path); got > most {
		t.Fatalf("the log is %d bytes after %d writes of %d, want at most %d (RestartAt and two Checkpointer lags of %d writes)", got, rounds, round, most, gap)
	}
}

// An idle file is never checkpointed, and each write wakes one checkpoint
// however many writes there were in the meantime.
func TestCheckpointerOnlyAfterWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.db")
	db := open(t, path)
	defer db.Close()
	c := wal.Start(open(t, path), db, 20*time.Millisecond, nil)
	time.Sleep(60 * time.Millisecond)
	if n := c.Checkpoints(); n != 0 {
		t.Fatalf("%d checkpoints with no write", n)
	}
	writeRounds(t, db, 5, c.Wrote, func() {})
	waitPast(t, c, 0)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	n := c.Checkpoints()
	if n > 5 {
		t.Fatalf("%d checkpoints for 5 writes", n)
	}
	c.Wrote() // after Close: nothing, and no panic
	if got := c.Checkpoints(); got != n {
		t.Fatalf("a checkpoint after Close: %d, then %d", n, got)
	}
}
