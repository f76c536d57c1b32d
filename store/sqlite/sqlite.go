package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/relaybell/relaybell/store"
	"github.com/relaybell/relaybell/store/sqlite/stmtjournal"
	"github.com/relaybell/relaybell/store/sqlite/wal"
	"github.com/relaybell/relaybell/store/sqlstore"
)

var _ store.Store = (*Store)(nil)

// busyTimeout is how long a connection waits for a lock before SQLITE_BUSY.
// With one writer connection only checkpoints and other processes compete.
const busyTimeout = 10 * time.Second

// Store is the SQLite implementation of store.Store. Writes go through one
// connection (SQLite allows one writer at a time; queuing in Go avoids
// SQLITE_BUSY), reads through a pool of read-only connections.
type Store struct {
	*sqlstore.Store

	w      *pool // exactly one connection, BEGIN IMMEDIATE
	r      *pool // read-only connections
	logger *slog.Logger

	// started and done count the writer's transactions and statements
	// as each begins and once it is done (write, writerConn). people is
	// the people version read last and the writes done when it was read:
	// every change of the version is a write of this process's one writer,
	// so while none has begun or ended since, the version has not moved
	// (PeopleVersion).
	started, done atomic.Uint64
	people        atomic.Pointer[peopleVersion]

	// ckpt checkpoints the file's log beside the writer, woken by each
	// write as it is done (finished).
	ckpt *wal.Checkpointer
}

// finished counts a write of the writer connection done (committed or
// not) and wakes the checkpointer.
func (s *Store) finished() {
	s.done.Add(1)
	s.ckpt.Wrote()
}

// peopleVersion is a people version and Store.done when it was read.
type peopleVersion struct {
	writes  uint64
	version int64
}

// PeopleVersion is the store's people version, read from the file again
// only when a write began or ended since it was last read. The defcache's
// person lookups read it before every batch, one or two lookups a batch at
// the embedded default's rates: a read transaction each
// (docs/scale-out.md). While a write is going on (begun, not yet counted
// done: it may have committed) the file is read and nothing is kept, so a
// change committed before a call began is always seen. Writers in other
// processes are not counted: the embedded default's data directory is
// this process's (the admin commands that open it from another process
// write websites and users, never subscribers).
func (s *Store) PeopleVersion(ctx context.Context) (int64, error) {
	done := s.done.Load()
	idle := s.started.Load() == done
	if p := s.people.Load(); idle && p != nil && p.writes == done {
		return p.version, nil
	}
	v, err := s.Store.PeopleVersion(ctx)
	if err != nil {
		return 0, err
	}
	if idle {
		s.people.Store(&peopleVersion{writes: done, version: v})
	}
	return v, nil
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
	if err := stmtjournal.Err(); err != nil {
		logger.Warn("sqlite store: statement journals spill to files", "err", err)
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
	c, err := openDB(ctx, path, false)
	if err != nil {
		s.w.close()
		return nil, err
	}
	s.ckpt = wal.Start(c, w, wal.Every, logger)
	fail := func(err error) (*Store, error) {
		s.ckpt.Close()
		s.w.close()
		return nil, err
	}
	conns := &db{w: s.w, writer: s}
	s.Store = sqlstore.New(conns, dialect, logger)
	if err := s.Migrate(ctx); err != nil {
		return fail(err)
	}
	if err := s.BackfillSearch(ctx); err != nil {
		return fail(err)
	}
	r, err := openDB(ctx, path, true)
	if err != nil {
		return fail(err)
	}
	readers := max(4, runtime.GOMAXPROCS(0))
	r.SetMaxOpenConns(readers)
	r.SetMaxIdleConns(readers)
	r.SetConnMaxIdleTime(0)
	s.r = newPool(r)
	conns.r = s.r
	return s, nil
}

func openDB(ctx context.Context, path string, readOnly bool) (*sql.DB, error) {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout("+strconv.FormatInt(busyTimeout.Milliseconds(), 10)+")")
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", "mmap_size(0)") // see the package doc
	if readOnly {
		q.Add("_pragma", "query_only(1)")
	} else {
		q.Add("_pragma", "journal_mode(WAL)")
		// The checkpointer (wal) keeps the log short; the writer's own
		// checkpoint is only a backstop.
		q.Add("_pragma", "wal_autocheckpoint("+strconv.Itoa(wal.Backstop)+")")
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
	errs := []error{s.r.close(), s.ckpt.Close()}
	// Fold the WAL back into the database so the file is complete alone.
	if _, err := s.w.db.Exec("PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		s.logger.Warn("sqlite checkpoint at close", "err", err)
	}
	errs = append(errs, s.w.close())
	return errors.Join(errs...)
}

// write runs fn in a write transaction on the single writer connection,
// committing when fn returns nil. fn must use tx only: the writer pool has
// one connection, so asking it for another would wait forever.
func (s *Store) write(ctx context.Context, fn func(tx wtx) error) error {
	var missed []string
	s.started.Add(1)
	err := s.writeTx(ctx, &missed, fn)
	s.finished() // committed or not
	// Now that the connection is free, prepare what the transaction could
	// not find in the cache, for the next one.
	s.w.prepareAll(ctx, missed, s.logger)
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
