package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/relaybell/relaybell/store"
)

var _ store.Store = (*Store)(nil)

//go:embed migrations/*.sql
var migrations embed.FS

// busyTimeout is how long a connection waits for a lock before SQLITE_BUSY.
// With one writer connection only checkpoints and other processes compete.
const busyTimeout = 10 * time.Second

// Store is the SQLite implementation of store.Store. Writes go through one
// connection (SQLite allows one writer at a time; queuing in Go avoids
// SQLITE_BUSY), reads through a pool of read-only connections.
type Store struct {
	w      *pool // exactly one connection, BEGIN IMMEDIATE
	r      *pool // read-only connections
	logger *slog.Logger
}

// Open opens (creating it if needed) the database file at path and applies
// pending schema migrations. path must name a file: an in-memory database
// cannot be shared between the writer and the readers.
func Open(ctx context.Context, path string, logger *slog.Logger) (*Store, error) {
	if path == "" || strings.HasPrefix(path, ":memory:") || strings.Contains(path, "mode=memory") {
		return nil, fmt.Errorf("opening sqlite store: path must name a file, got %q", path)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Store{logger: logger}
	// The writer opens first: it switches the file to WAL, which readers
	// (query_only) could not do.
	w, err := openDB(ctx, path, false)
	if err != nil {
		return nil, err
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	s.w = newPool(w)
	if err := s.migrate(ctx); err != nil {
		s.w.close()
		return nil, err
	}
	if err := s.backfillSearch(ctx); err != nil {
		s.w.close()
		return nil, err
	}
	r, err := openDB(ctx, path, true)
	if err != nil {
		s.w.close()
		return nil, err
	}
	readers := max(4, runtime.GOMAXPROCS(0))
	r.SetMaxOpenConns(readers)
	r.SetMaxIdleConns(readers)
	r.SetConnMaxIdleTime(0)
	s.r = newPool(r)
	return s, nil
}

func openDB(ctx context.Context, path string, readOnly bool) (*sql.DB, error) {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout("+strconv.FormatInt(busyTimeout.Milliseconds(), 10)+")")
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", "mmap_size(268435456)")
	if readOnly {
		q.Add("_pragma", "query_only(1)")
	} else {
		q.Add("_pragma", "journal_mode(WAL)")
		q.Set("_txlock", "immediate")
	}
	// A URI filename: the characters URIs give a meaning must be escaped.
	dsn := "file:" + strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path) + "?" + q.Encode()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("opening sqlite %s: %w", path, err)
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("opening sqlite %s: %w", path, err)
	}
	return db, nil
}

// Close checkpoints the WAL into the database file and closes both pools.
// No call may be in progress or follow.
func (s *Store) Close() error {
	errs := []error{s.r.close()}
	// Fold the WAL back into the database so the file is complete alone.
	if _, err := s.w.db.Exec("PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		s.logger.Warn("sqlite checkpoint at close", "err", err)
	}
	errs = append(errs, s.w.close())
	return errors.Join(errs...)
}

// migrate applies the embedded migrations newer than the recorded version,
// each in its own transaction.
func (s *Store) migrate(ctx context.Context) error {
	if _, err := s.w.db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		applied_at INTEGER NOT NULL
	)`); err != nil {
		return fmt.Errorf("creating schema_migrations: %w", err)
	}
	files, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return fmt.Errorf("listing migrations: %w", err)
	}
	type migration struct {
		version int
		name    string
	}
	var list []migration
	for _, f := range files {
		base := strings.TrimPrefix(f, "migrations/")
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return fmt.Errorf("migration %s: name must start with a positive version and '_'", base)
		}
		list = append(list, migration{v, f})
	}
	sort.Slice(list, func(i, j int) bool { return list[i].version < list[j].version })
	for i := 1; i < len(list); i++ {
		if list[i].version == list[i-1].version {
			return fmt.Errorf("migrations %s and %s share a version", list[i-1].name, list[i].name)
		}
	}
	// A file migrated by a newer binary may hold what this one can't read.
	var newest sql.NullInt64
	if err := s.w.db.QueryRowContext(ctx, `SELECT max(version) FROM schema_migrations`).Scan(&newest); err != nil {
		return fmt.Errorf("reading schema version: %w", err)
	}
	if len(list) > 0 && newest.Int64 > int64(list[len(list)-1].version) {
		return fmt.Errorf("database schema version %d is newer than this binary's %d", newest.Int64, list[len(list)-1].version)
	}
	for _, m := range list {
		body, err := migrations.ReadFile(m.name)
		if err != nil {
			return fmt.Errorf("reading migration %s: %w", m.name, err)
		}
		applied := false
		err = s.write(ctx, func(tx wtx) error {
			// Re-checked inside the immediate transaction: another process
			// opening the same file may have applied it meanwhile.
			var n int
			if err := tx.tx.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations WHERE version = ?`, m.version).Scan(&n); err != nil {
				return err
			}
			if n > 0 {
				return nil
			}
			// A migration is several statements: not for the statement cache.
			if _, err := tx.tx.ExecContext(ctx, string(body)); err != nil {
				return err
			}
			if _, err := tx.tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`, m.version, ms(time.Now())); err != nil {
				return err
			}
			applied = true
			return nil
		})
		if err != nil {
			return fmt.Errorf("applying migration %s: %w", m.name, err)
		}
		if applied {
			s.logger.Info("applied sqlite migration", "version", m.version, "file", m.name)
		}
	}
	return nil
}

// write runs fn in a write transaction on the single writer connection,
// committing when fn returns nil. fn must use tx only: the writer pool has
// one connection, so asking it for another would wait forever.
func (s *Store) write(ctx context.Context, fn func(tx wtx) error) error {
	var missed []string
	err := s.writeTx(ctx, &missed, fn)
	// Now that the connection is free, prepare what the transaction could
	// not find in the cache, for the next one.
	for _, q := range missed {
		if _, perr := s.w.stmt(ctx, q); perr != nil {
			s.logger.Debug("preparing sqlite statement", "err", perr)
		}
	}
	return err
}

func (s *Store) writeTx(ctx context.Context, missed *[]string, fn func(tx wtx) error) error {
	tx, err := s.w.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	committed := false
	defer func() {
		if !committed {
			tx.Rollback() // also on a panic, which would otherwise leave the writer busy
		}
	}()
	if err := fn(wtx{ctx: ctx, tx: tx, p: s.w, missed: missed}); err != nil {
		return err
	}
	committed = true
	return tx.Commit()
}

// mapErr turns constraint violations into the store's sentinel errors: a
// duplicate into store.ErrConflict, a missing parent into store.ErrNotFound.
func mapErr(err error) error {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return err
	}
	switch se.Code() {
	case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
		return fmt.Errorf("%w: %w", store.ErrConflict, err)
	case sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
		return fmt.Errorf("%w: %w", store.ErrNotFound, err)
	}
	return err
}

// notFound maps sql.ErrNoRows to store.ErrNotFound.
func notFound(err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return store.ErrNotFound
	}
	return err
}

// affected returns store.ErrNotFound when res changed no row.
func affected(res sql.Result) error {
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return store.ErrNotFound
	}
	return nil
}

// ms is t as unix milliseconds (the stored form of every time).
func ms(t time.Time) int64 { return t.UnixMilli() }

// msPtr is the stored form of an optional time: NULL or unix milliseconds.
func msPtr(t *time.Time) any {
	if t == nil {
		return nil
	}
	return t.UnixMilli()
}

// now returns t, or the current time when t is zero.
func now(t time.Time) time.Time {
	if t.IsZero() {
		return time.Now()
	}
	return t
}

// nullString stores "" as NULL.
func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// nullBytes stores a nil slice as NULL.
func nullBytes(b []byte) any {
	if b == nil {
		return nil
	}
	return b
}

// msTime scans unix milliseconds into a UTC time; NULL leaves the zero time.
type msTime struct{ t *time.Time }

func (m msTime) Scan(v any) error {
	switch x := v.(type) {
	case nil:
		*m.t = time.Time{}
	case int64:
		*m.t = time.UnixMilli(x).UTC()
	default:
		return fmt.Errorf("scanning time: unexpected %T", v)
	}
	return nil
}

// msTimePtr scans nullable unix milliseconds into a *time.Time.
type msTimePtr struct{ p **time.Time }

func (m msTimePtr) Scan(v any) error {
	switch x := v.(type) {
	case nil:
		*m.p = nil
	case int64:
		t := time.UnixMilli(x).UTC()
		*m.p = &t
	default:
		return fmt.Errorf("scanning time: unexpected %T", v)
	}
	return nil
}

// optString scans a nullable TEXT into a string ("" for NULL).
type optString struct{ s *string }

func (o optString) Scan(v any) error {
	switch x := v.(type) {
	case nil:
		*o.s = ""
	case string:
		*o.s = x
	case []byte:
		*o.s = string(x)
	default:
		return fmt.Errorf("scanning text: unexpected %T", v)
	}
	return nil
}
