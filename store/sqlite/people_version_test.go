package sqlite

import (
	"context"
	"strings"
	"testing"

	"github.com/relaybell/relaybell/store/sqlstore"
)

// TestPeopleVersionReadAfterWrites: the people version is read from the
// file once, then again only after a write was done (a transaction, or a
// statement alone through Write, its rows closed or its row scanned), and
// each change of it is seen by the next call; while a write is going on
// (it may have committed) every call reads the file.
func TestPeopleVersionReadAfterWrites(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	var stmts []recordedStmt
	s.Store = s.Store.WithDB(stmtRecorder{s.DB(), &stmts})
	reads := func() int {
		n := 0
		for _, st := range stmts {
			if strings.Contains(st.query, "FROM people_version") {
				n++
			}
		}
		stmts = stmts[:0]
		return n
	}
	version := func(what string, wantReads int) int64 {
		t.Helper()
		v, err := s.PeopleVersion(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := reads(); got != wantReads {
			t.Errorf("%s: %d reads of the version, want %d", what, got, wantReads)
		}
		return v
	}
	first := version("the first call", 1)
	version("again, nothing written", 0)

	// A statement alone that moves the version (the trigger's own table
	// here: the people_version triggers do the same).
	if _, err := s.DB().Write().Exec(ctx, `UPDATE people_version SET version = version + 1`); err != nil {
		t.Fatal(err)
	}
	if v := version("after a statement alone", 1); v != first+1 {
		t.Errorf("after a statement alone: version %d, want %d", v, first+1)
	}
	version("again", 0)

	// A statement alone with RETURNING, through Query and through QueryRow.
	rows, err := s.DB().Write().Query(ctx, `UPDATE people_version SET version = version + 1 RETURNING version`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
	}
	rows.Close()
	if v := version("after a query alone", 1); v != first+2 {
		t.Errorf("after a query alone: version %d, want %d", v, first+2)
	}
	var got int64
	if err := s.DB().Write().QueryRow(ctx, `UPDATE people_version SET version = version + 1 RETURNING version`).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if v := version("after a row alone", 1); v != first+3 || got != v {
		t.Errorf("after a row alone: version %d (returned %d), want %d", v, got, first+3)
	}

	// A transaction, and one that fails: read again after either.
	if err := s.DB().Tx(ctx, sqlstore.TxOptions{}, func(tx sqlstore.Conn) error {
		_, err := tx.Exec(ctx, `UPDATE people_version SET version = version + 1`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if v := version("after a transaction", 1); v != first+4 {
		t.Errorf("after a transaction: version %d, want %d", v, first+4)
	}
	if err := s.DB().Tx(ctx, sqlstore.TxOptions{}, func(tx sqlstore.Conn) error {
		_, err := tx.Exec(ctx, `UPDATE nowhere SET x = 1`)
		return err
	}); err == nil {
		t.Fatal("a failing transaction did not fail")
	}
	if v := version("after a failed transaction", 1); v != first+4 {
		t.Errorf("after a failed transaction: version %d, want %d", v, first+4)
	}

	// A statement alone whose rows are still open: going on, so every
	// call reads the file and keeps nothing; closed, read once more.
	rows, err = s.DB().Write().Query(ctx, `UPDATE people_version SET version = version + 1 RETURNING version`)
	if err != nil {
		t.Fatal(err)
	}
	version("while a write is going on", 1)
	version("again while it is going on", 1)
	rows.Close()
	rows.Close() // counted done once
	if v := version("after it is done", 1); v != first+5 {
		t.Errorf("after it is done: version %d, want %d", v, first+5)
	}
	version("and again", 0)
}
