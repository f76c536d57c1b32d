package postgres

import (
	"context"

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
// committing when fn returns nil and rolling back otherwise.
func inTx(ctx context.Context, pool *pgxpool.Pool, opts pgx.TxOptions, fn func(q querier) error) error {
	c, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	// A connection left in a transaction (a rollback that failed) or busy
	// is closed by Release, not returned to the pool.
	defer c.Release()
	t := &tx{conn: c.Conn(), opts: opts}
	if err := fn(t); err != nil {
		if t.tx != nil {
			_ = t.tx.Rollback(ctx) // pgx closes the connection if this fails
		}
		return err
	}
	if t.tx == nil {
		return nil
	}
	// A transaction that an error left aborted is rolled back by COMMIT:
	// pgx returns ErrTxCommitRollback for it.
	return t.tx.Commit(ctx)
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

// SendBatch is the transaction's, for execBatch; a batch that comes first
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
