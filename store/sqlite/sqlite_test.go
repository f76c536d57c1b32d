package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/relaybell/relaybell/defcache"
	"github.com/relaybell/relaybell/store"
	"github.com/relaybell/relaybell/store/sqlstore"
	"github.com/relaybell/relaybell/store/storetest"
)

func openTest(t testing.TB) *Store {
	t.Helper()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "relaybell.db"), nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func TestConformance(t *testing.T) {
	storetest.NewPeopleCache = func(base store.Store) storetest.PeopleCache { return defcache.NewPeople(base, nil) }
	storetest.Run(t, func(t *testing.T) store.Store { return openTest(t) })
}

func TestOpenSettings(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	f := func(db string, pragma, want string) {
		t.Helper()
		var got string
		pool := s.w.db
		if db == "reader" {
			pool = s.r.db
		}
		if err := pool.QueryRowContext(ctx, "PRAGMA "+pragma).Scan(&got); err != nil {
			t.Fatalf("PRAGMA %s: %v", pragma, err)
		}
		if got != want {
			t.Fatalf("%s PRAGMA %s = %q, want %q", db, pragma, got, want)
		}
	}
	for _, db := range []string{"writer", "reader"} {
		f(db, "journal_mode", "wal")
		f(db, "foreign_keys", "1")
		f(db, "synchronous", "1") // NORMAL
		f(db, "busy_timeout", "10000")
	}
	f("reader", "query_only", "1")
	f("writer", "query_only", "0")
}

func TestMigrationsApplyOnce(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "relaybell.db")
	for range 3 {
		s, err := Open(ctx, path, nil)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		var n, version int
		if err := s.r.queryRow(ctx, `SELECT count(*), max(version) FROM schema_migrations`).Scan(&n, &version); err != nil {
			t.Fatalf("reading schema_migrations: %v", err)
		}
		if wantN, wantV := embeddedMigrations(t); n != wantN || version != wantV {
			t.Fatalf("schema_migrations has %d rows, version %d; want %d, %d", n, version, wantN, wantV)
		}
		if err := s.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "relaybell.db")
	s, err := Open(ctx, path, nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if _, err := s.w.db.ExecContext(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES (9999, 0)`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s, err := Open(ctx, path, nil); err == nil {
		s.Close()
		t.Fatal("Open of a database from a newer binary succeeded")
	}
}

// A path with characters that mean something in a URI still names a file.
func TestOpenOddPath(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a?b#c%20d")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "relay bell.db")
	s, err := Open(context.Background(), path, nil)
	if err != nil {
		t.Fatalf("Open(%q): %v", path, err)
	}
	s.Close()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("database file: %v", err)
	}
}

func TestOpenRefusesMemory(t *testing.T) {
	for _, p := range []string{"", ":memory:", "file:x?mode=memory"} {
		if s, err := Open(context.Background(), p, nil); err == nil {
			s.Close()
			t.Fatalf("Open(%q) succeeded", p)
		}
	}
}

// embeddedMigrations returns how many migrations Open applies, and the
// last one's version.
func embeddedMigrations(t *testing.T) (int, int) {
	t.Helper()
	vs, err := sqlstore.MigrationVersions()
	if err != nil || len(vs) == 0 {
		t.Fatalf("listing migrations: %d, %v", len(vs), err)
	}
	return len(vs), vs[len(vs)-1]
}
