package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"time"

	"github.com/relaybell/relaybell/store/sqlstore"
)

// db is the store's connections as sqlstore.DB: the one writer, and the
// read-only pool. Both reuse prepared statements (pool, wtx).
type db struct {
	w, r   *pool
	writer *Store // for write, which prepares what a transaction missed
}

func (d *db) Read() sqlstore.Conn  { return poolConn{d.r} }
func (d *db) Write() sqlstore.Conn { return writerConn{poolConn{d.w}, d.writer} }

// Tx runs fn in a write transaction on the writer. SQLite's one writer
// never deadlocks or loses a race, so fn runs once.
func (d *db) Tx(ctx context.Context, _ sqlstore.TxOptions, fn func(tx sqlstore.Conn) error) error {
	return d.writer.write(ctx, func(tx wtx) error { return fn(txConn{tx}) })
}

// Snapshot runs fn in a read transaction on one of the readers: in WAL
// mode its snapshot is taken at its first read and held to its end. Its
// statements are the readers' prepared ones where they have them (wtx);
// the others are parsed in the transaction, and prepared on the readers
// once it has ended, for the next time.
func (d *db) Snapshot(ctx context.Context, fn func(read sqlstore.Conn) error) error {
	var missed []string
	err := d.snapshot(ctx, &missed, fn)
	d.r.prepareAll(ctx, missed, d.writer.logger)
	return err
}

func (d *db) snapshot(ctx context.Context, missed *[]string, fn func(read sqlstore.Conn) error) error {
	tx, err := d.r.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := fn(txConn{wtx{ctx: ctx, tx: tx, p: d.r, missed: missed}}); err != nil {
		return err
	}
	return tx.Commit()
}

func (d *db) Close() error { return d.writer.Close() }

// poolConn runs statements on a pool, prepared once per text. A statement
// without arguments runs unprepared: it may be a script of several.
type poolConn struct{ p *pool }

func (c poolConn) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	var (
		res sql.Result
		err error
	)
	if len(args) == 0 {
		res, err = c.p.db.ExecContext(ctx, query)
	} else {
		res, err = c.p.exec(ctx, query, args...)
	}
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (c poolConn) Query(ctx context.Context, query string, args ...any) (sqlstore.Rows, error) {
	rows, err := c.p.query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return sqlRows{rows}, nil
}

func (c poolConn) QueryRow(ctx context.Context, query string, args ...any) sqlstore.Row {
	return c.p.queryRow(ctx, query, args...)
}

// writerConn is the writer's poolConn that counts each statement in
// Store.started as it begins and in Store.done once it is done (its rows
// closed, its row scanned): its implicit transaction has committed then.
type writerConn struct {
	poolConn
	s *Store
}

func (c writerConn) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	c.s.started.Add(1)
	defer c.s.finished()
	return c.poolConn.Exec(ctx, query, args...)
}

func (c writerConn) Query(ctx context.Context, query string, args ...any) (sqlstore.Rows, error) {
	c.s.started.Add(1)
	rows, err := c.poolConn.Query(ctx, query, args...)
	if err != nil {
		c.s.finished()
		return nil, err
	}
	return &countedRows{Rows: rows, s: c.s}, nil
}

func (c writerConn) QueryRow(ctx context.Context, query string, args ...any) sqlstore.Row {
	c.s.started.Add(1)
	return countedRow{c.poolConn.QueryRow(ctx, query, args...), c.s}
}

// countedRows counts its statement done at its first Close.
type countedRows struct {
	sqlstore.Rows
	s      *Store
	closed bool
}

func (r *countedRows) Close() {
	r.Rows.Close()
	if !r.closed {
		r.closed = true
		r.s.finished()
	}
}

type countedRow struct {
	sqlstore.Row
	s *Store
}

func (r countedRow) Scan(dest ...any) error {
	defer r.s.finished()
	return r.Row.Scan(dest...)
}

// txConn runs statements in a transaction (wtx).
type txConn struct{ tx wtx }

func (c txConn) Exec(_ context.Context, query string, args ...any) (int64, error) {
	var (
		res sql.Result
		err error
	)
	if len(args) == 0 {
		res, err = c.tx.tx.ExecContext(c.tx.ctx, query)
	} else {
		res, err = c.tx.exec(query, args...)
	}
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (c txConn) Query(_ context.Context, query string, args ...any) (sqlstore.Rows, error) {
	rows, err := c.tx.query(query, args...)
	if err != nil {
		return nil, err
	}
	return sqlRows{rows}, nil
}

func (c txConn) QueryRow(_ context.Context, query string, args ...any) sqlstore.Row {
	return c.tx.queryRow(query, args...)
}

// sqlRows is *sql.Rows as sqlstore.Rows.
type sqlRows struct{ *sql.Rows }

func (r sqlRows) Close() { r.Rows.Close() }

// dialect is SQLite's sqlstore.Dialect.
var dialect = sqlstore.Dialect{
	Engine: "sqlite",
	Time:   func(t time.Time) any { return t.UnixMilli() },
	DDL: sqlstore.DDL{
		Time:         "INTEGER",
		Bool:         "INTEGER",
		False:        "0",
		Bigint:       "INTEGER",
		Float:        "REAL",
		Bytes:        "BLOB",
		JSON:         "TEXT",
		JSONB:        "TEXT",
		Serial:       "INTEGER PRIMARY KEY AUTOINCREMENT",
		WithoutRowid: " WITHOUT ROWID",
	},
	List: func(ss []string) any {
		if ss == nil {
			return "[]"
		}
		b, _ := json.Marshal(ss) // strings always encode
		return string(b)
	},
	In:         func(col, arg string) string { return col + " IN (SELECT value FROM json_each(" + arg + "))" },
	Elems:      func(arg string) string { return "json_each(" + arg + ")" },
	ForUpdate:  func(...string) string { return "" },
	SkipLocked: func(...string) string { return "" },
	Lock:       func(context.Context, sqlstore.Conn, ...int64) error { return nil },
	// lower() folds ASCII only: the store's notification search is folded
	// in Go (store.FoldSearch) for that reason.
	ContainsFold: func(col, arg string) string { return "instr(lower(" + col + "), lower(" + arg + ")) > 0" },
	MapErr:       mapErr,
	LockRows:     func(string, ...string) string { return "" },
	MergeJSON:    func(a, b string) string { return "json_patch(" + a + ", " + b + ")" },
	NewSeq:       func(table string) string { return "(SELECT max(seq) + 1 FROM " + table + ")" },
	Contains:     func(col, arg string) string { return "instr(" + col + ", " + arg + ") > 0" },
}
