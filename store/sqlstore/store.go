package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/relaybell/relaybell/store"
)

// Store is the one implementation of store.Store, over an engine's DB and
// Dialect (store/sqlite, store/postgres).
type Store struct {
	db  DB
	d   Dialect
	log *slog.Logger
}

// New returns the store over db. The engine's Open makes db and d, and
// migrates the schema (Migrate) before handing the store out.
func New(db DB, d Dialect, logger *slog.Logger) *Store {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Store{db: db, d: d, log: logger}
}

// Close closes the engine's connections. No call may be in progress or
// follow.
func (s *Store) Close() error { return s.db.Close() }

// DB returns the engine's connections, for the engine's own fast paths and
// tests.
func (s *Store) DB() DB { return s.db }

// WithDB returns the store over db, with the same dialect: a test wraps
// the engine's connections (DB) to see the statements a call runs.
func (s *Store) WithDB(db DB) *Store { return &Store{db: db, d: s.d, log: s.log} }

// time is the stored form of t.
func (s *Store) time(t time.Time) any { return s.d.Time(t) }

// timePtr is the stored form of an optional time: NULL or the time.
func (s *Store) timePtr(t *time.Time) any {
	if t == nil {
		return nil
	}
	return s.d.Time(*t)
}

// now is the stored form of t, or of the current time when t is zero.
func (s *Store) now(t time.Time) any { return s.d.Time(nowOr(t)) }

// nowOr returns t, or the current time when t is zero.
func nowOr(t time.Time) time.Time {
	if t.IsZero() {
		return time.Now()
	}
	return t
}

// mapErr turns no row into store.ErrNotFound and constraint violations
// into the store's sentinels (Dialect.MapErr).
func (s *Store) mapErr(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, sql.ErrNoRows) {
		return store.ErrNotFound
	}
	return s.d.MapErr(err)
}

// affected returns store.ErrNotFound when a statement changed no row.
func affected(n int64, err error) error {
	if err != nil {
		return err
	}
	if n == 0 {
		return store.ErrNotFound
	}
	return nil
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
	return string(b)
}

// jsonText is the stored form of v as JSON text, which both engines take
// for a JSON column.
func jsonText(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("encoding JSON: %w", err)
	}
	return string(b), nil
}

// limitArg is the argument of a LIMIT: the limit, or for 0 or less no
// limit (the largest bigint, which both engines take; SQLite refuses NULL
// and PostgreSQL a negative limit).
func limitArg(limit int) int64 {
	if limit <= 0 {
		return math.MaxInt64
	}
	return int64(limit)
}

// CollectRows reads every row of a query into a T, scanning each into
// dest(&t), and closes rows. It takes Query's results as they are, so that
// `rows, err := c.Query(…); out, err := CollectRows(rows, err, dest)` needs
// no check in between.
func CollectRows[T any](rows Rows, err error, dest func(*T) []any) ([]T, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		var t T
		if err := rows.Scan(dest(&t)...); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// Piped is a statement of a pipeline (Pipeline): Read reads its rows
// (and may leave them open: the pipeline closes them); a statement
// without Read is executed, its rows (none) unread.
type Piped struct {
	SQL  string
	Args []any
	Read func(rows Rows) error
}

// Pipeliner is a Conn that sends several statements in one round trip:
// PostgreSQL's, whose statements each wait for their answer otherwise
// (BenchmarkRegisterCPU: a batch of registrations cost PostgreSQL about
// 1 ms whatever its size, most of it its round trips). SQLite's
// statements are calls inside the process, best run one by one.
type Pipeliner interface {
	Pipeline(ctx context.Context, queries []Piped) error
}

// Pipeline runs queries in tx, in order, handing each one's rows to its
// Read, and returns the first error (the statements after it are not
// run): in one round trip where tx is a Pipeliner.
func Pipeline(ctx context.Context, tx Conn, queries []Piped) error {
	if p, ok := tx.(Pipeliner); ok && len(queries) > 1 {
		return p.Pipeline(ctx, queries)
	}
	for _, q := range queries {
		if q.Read == nil {
			if _, err := tx.Exec(ctx, q.SQL, q.Args...); err != nil {
				return err
			}
			continue
		}
		rows, err := tx.Query(ctx, q.SQL, q.Args...)
		if err != nil {
			return err
		}
		err = q.Read(rows)
		rows.Close()
		if err == nil {
			err = rows.Err()
		}
		if err != nil {
			return err
		}
	}
	return nil
}
