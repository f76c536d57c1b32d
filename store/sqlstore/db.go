package sqlstore

import "context"

// Conn runs statements: on the store's connections outside a transaction,
// or inside one transaction. Placeholders are $1…$n on both engines.
type Conn interface {
	// Exec runs a statement and returns how many rows it changed. Without
	// arguments it may hold several statements (a migration).
	Exec(ctx context.Context, query string, args ...any) (int64, error)
	Query(ctx context.Context, query string, args ...any) (Rows, error)
	// QueryRow runs a query whose first row Scan reads; no row is
	// sql.ErrNoRows (which pgx.ErrNoRows also is).
	QueryRow(ctx context.Context, query string, args ...any) Row
}

// Rows is a query's result (pgx.Rows is one).
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// Row is the first row of a query's result.
type Row interface {
	Scan(dest ...any) error
}

// DB is an engine's connections: what the store asks of SQLite's writer
// and readers, or of a PostgreSQL pool.
type DB interface {
	// Read is for reads outside a transaction. On SQLite it is the pool of
	// read-only connections: a statement that writes (RETURNING included)
	// goes through Write or Tx.
	Read() Conn
	// Write runs single statements that write, outside a transaction.
	Write() Conn
	// Tx runs fn in a write transaction and commits when it returns nil.
	// fn must use tx only (SQLite's one writer is held by the transaction),
	// and may run again from the start: PostgreSQL runs a transaction again
	// after a deadlock or a serialization failure, and with RetryUnique
	// after a unique violation.
	Tx(ctx context.Context, opt TxOptions, fn func(tx Conn) error) error
	// Snapshot runs fn in a read-only transaction: every read through
	// read sees the database as it was at the first, whatever commits
	// meanwhile (PostgreSQL's REPEATABLE READ; a SQLite read transaction
	// in WAL mode). fn must use read only.
	Snapshot(ctx context.Context, fn func(read Conn) error) error
	Close() error
}

// TxOptions tune one transaction.
type TxOptions struct {
	// RetryUnique runs the transaction again after a unique violation: an
	// upsert that lost a race to insert the same row finds it next time.
	RetryUnique bool
	// Alone says fn runs a single statement, or a single Pipeline, atomic
	// by itself: the engine may run it without BEGIN and COMMIT around it
	// (PostgreSQL: two round trips and two statements fewer; a pipeline is
	// one pgx batch, which the server runs as one implicit transaction),
	// retried as a transaction would be. SQLite's transaction costs no
	// round trip: it keeps it.
	Alone bool
}
