package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// tx is a transaction whose BEGIN goes out with its first statement, the
// two in one round trip (pgx's Batch.BeginTx), where pgx.BeginFunc spends
// a round trip of its own on it. Registrations, events and a broadcast's
// recorders each run many short transactions; BEGIN alone was 8% of an
// API node's CPU in the cluster's registrations (docs/scale-out.md).
//
// A transaction that runs no statement sends nothing: there is nothing to
// commit or roll back.
type tx struct {
	conn *pgx.Conn
	opts pgx.TxOptions
	tx   pgx.Tx // once begun
}

// inTx runs fn in a transaction of opts on a connection of pool,
// committing when fn returns nil and rolling back otherwise. It tells
// whether the transaction moved the people version (never for a read-only
// one).
func inTx(ctx context.Context, pool *pgxpool.Pool, opts pgx.TxOptions, fn func(q querier) error) (moved bool, err error) {
	c, err := pool.Acquire(ctx)
	if err != nil {
		return false, err
	}
	// A connection left in a transaction (a rollback that failed) or busy
	// is closed by Release, not returned to the pool.
	defer c.Release()
	t := &tx{conn: c.Conn(), opts: opts}
	if err := fn(t); err != nil {
		if t.tx != nil {
			_ = t.tx.Rollback(ctx) // pgx closes the connection if this fails
		}
		return false, err
	}
	if t.tx == nil {
		return false, nil
	}
	if opts.AccessMode == pgx.ReadOnly {
		return false, t.tx.Commit(ctx)
	}
	return t.commit(ctx)
}

// commitMoved commits and reads and clears the mark a transaction that
// moved the people version leaves on its connection (migration 41), as one
// query of the simple protocol: one round trip, and nothing to prepare.
const commitMoved = `COMMIT; SELECT coalesce(current_setting('relaybell.people_moved', true) = 'y', false), set_config('relaybell.people_moved', '', false)`

// commit commits the transaction and tells whether it moved the people
// version. A transaction that an error left aborted is rolled back:
// ErrTxCommitRollback, as pgx's Commit returns.
func (t *tx) commit(ctx context.Context) (moved bool, err error) {
	if t.conn.PgConn().TxStatus() != 'T' { // 'E': aborted
		return false, t.tx.Commit(ctx)
	}
	results, err := t.conn.PgConn().Exec(ctx, commitMoved).ReadAll()
	if err != nil {
		return false, err
	}
	if len(results) != 2 || len(results[1].Rows) != 1 || len(results[1].Rows[0]) != 2 {
		return false, fmt.Errorf("committing: %d results", len(results))
	}
	if results[0].CommandTag.String() == "ROLLBACK" {
		return false, pgx.ErrTxCommitRollback
	}
	return string(results[1].Rows[0][0]) == "t", nil
}

// first sends BEGIN and the transaction's first statement in one batch
// and reads BEGIN's result; br holds the statement's. br is nil when the
// statement is not the first (the transaction is begun: run it there), or
// is given pgx's options (a query exec mode, result formats), which a
// batch does not take: it then follows a BEGIN of its own.
func (t *tx) first(ctx context.Context, sql string, args []any) (br pgx.BatchResults, err error) {
	if t.tx != nil {
		return nil, nil
	}
	if len(args) > 0 {
		switch args[0].(type) {
		case pgx.QueryExecMode, pgx.QueryResultFormats, pgx.QueryResultFormatsByOID:
			t.tx, err = t.conn.BeginTx(ctx, t.opts)
			return nil, err
		}
	}
	b := &pgx.Batch{}
	b.BeginTx(t.opts)
	b.Queue(sql, args...)
	br = t.conn.SendBatch(ctx, b)
	t.tx = br.Tx()
	if _, err := br.Exec(); err != nil {
		br.Close() // the same error, or none
		return nil, err
	}
	return br, nil
}

func (t *tx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	br, err := t.first(ctx, sql, args)
	switch {
	case err != nil:
		return pgconn.CommandTag{}, err
	case br == nil:
		return t.tx.Exec(ctx, sql, args...)
	}
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return tag, err
}

func (t *tx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	br, err := t.first(ctx, sql, args)
	switch {
	case err != nil:
		return nil, err
	case br == nil:
		return t.tx.Query(ctx, sql, args...)
	}
	rows, err := br.Query()
	if err != nil {
		br.Close() // the same error, or none
		return nil, err
	}
	return &batchRows{Rows: rows, br: br}, nil
}

func (t *tx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	br, err := t.first(ctx, sql, args)
	switch {
	case err != nil:
		return errRow{err}
	case br == nil:
		return t.tx.QueryRow(ctx, sql, args...)
	}
	return batchRow{br: br, row: br.QueryRow()}
}

// SendBatch is the transaction's, for conn.Pipeline; a batch that comes first
// follows a BEGIN of its own.
func (t *tx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if t.tx == nil {
		var err error
		if t.tx, err = t.conn.BeginTx(ctx, t.opts); err != nil {
			return pgx.FailedBatchResults(b, err)
		}
	}
	return t.tx.SendBatch(ctx, b)
}

// batchRows are the first statement's rows: the batch is closed, and the
// transaction free for the next statement, once they are read or closed.
type batchRows struct {
	pgx.Rows
	br   pgx.BatchResults
	err  error
	done bool
}

func (r *batchRows) Next() bool {
	if r.Rows.Next() {
		return true
	}
	r.Close()
	return false
}

func (r *batchRows) Close() {
	if r.done {
		return
	}
	r.done = true
	r.Rows.Close()
	r.err = r.br.Close()
}

func (r *batchRows) Err() error {
	if err := r.Rows.Err(); err != nil {
		return err
	}
	return r.err
}

// batchRow is the first statement's row: Scan closes the batch.
type batchRow struct {
	br  pgx.BatchResults
	row pgx.Row
}

func (r batchRow) Scan(dest ...any) error {
	err := r.row.Scan(dest...)
	if cerr := r.br.Close(); err == nil {
		err = cerr
	}
	return err
}

// errRow is a row whose statement was never run.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }
