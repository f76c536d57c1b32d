package sqlstore

import (
	"context"
	"time"
)

// Dialect is what differs between the engines, and nothing else: the store
// writes each query once, and asks the dialect only for these.
type Dialect struct {
	// Engine is "sqlite" or "postgres": it picks the migration files of
	// that engine, and names it in messages.
	Engine string
	// Time is the stored form of a time: SQLite keeps unix milliseconds,
	// PostgreSQL a timestamptz to the microsecond. Scanning needs no
	// dialect: the scanners of scan.go read both forms.
	Time func(t time.Time) any
	// TimeType is the column type of a time, for the tables the store
	// makes itself (schema_migrations).
	TimeType string
	// List is the argument form of a list of strings, for In and Elems:
	// JSON text on SQLite, a text[] on PostgreSQL.
	List func(ss []string) any
	// In is the condition that the expression col is one of the list
	// argument arg (a placeholder such as $3).
	In func(col, arg string) string
	// Elems is a table of the elements of the list argument arg, with one
	// column named value, to select or join from.
	Elems func(arg string) string
	// ForUpdate locks the rows a SELECT reads, of the tables named (all
	// when none): "FOR UPDATE [OF …]" on PostgreSQL, "" on SQLite, whose
	// one writer already runs alone.
	ForUpdate func(of ...string) string
	// SkipLocked is FOR UPDATE SKIP LOCKED (OF the tables named) on
	// PostgreSQL: rows another transaction holds are passed over. "" on
	// SQLite.
	SkipLocked func(of ...string) string
	// Lock takes a lock held until tx ends, serialising the transactions
	// that take the same key (pg_advisory_xact_lock keyed by the schema).
	// SQLite's one writer serialises every write: it does nothing there.
	Lock func(ctx context.Context, tx Conn, key int64) error
	// ContainsFold is the condition that the text expression col contains
	// the text argument arg in any letter case.
	ContainsFold func(col, arg string) string
	// MapErr turns the engine's constraint violations into the store's
	// sentinels: a duplicate into store.ErrConflict, a missing parent into
	// store.ErrNotFound. Other errors are returned as they are.
	MapErr func(err error) error
}
