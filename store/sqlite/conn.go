package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"sync"
)

// pool is a *sql.DB whose statements are prepared once per query text and
// reused: modernc.org/sqlite would otherwise parse every statement anew,
// which costs more than running most of them. The query texts are constants
// of this package, so the cache stays small.
type pool struct {
	db    *sql.DB
	mu    sync.RWMutex
	stmts map[string]*sql.Stmt
}

func newPool(db *sql.DB) *pool {
	return &pool{db: db, stmts: map[string]*sql.Stmt{}}
}

// prepareAll prepares the queries a transaction ran unprepared (wtx's
// missed), once its connection is free, for the next one; a query that
// does not prepare is only logged: it ran, and runs unprepared again.
func (p *pool) prepareAll(ctx context.Context, queries []string, logger *slog.Logger) {
	for _, q := range queries {
		if _, err := p.stmt(ctx, q); err != nil {
			logger.Debug("preparing sqlite statement", "err", err)
		}
	}
}

// cached returns the prepared statement for query, or nil if there is none yet.
func (p *pool) cached(query string) *sql.Stmt {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.stmts[query]
}

// stmt returns the prepared statement for query, preparing it on first use.
// It must not be called for the writer inside a write transaction: preparing
// needs the pool's only connection, which the transaction holds.
func (p *pool) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	if st := p.cached(query); st != nil {
		return st, nil
	}
	// Prepared without holding mu: waiting for a connection while holding
	// it would block every other user of the cache.
	st, err := p.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if prev := p.stmts[query]; prev != nil {
		st.Close()
		return prev, nil
	}
	p.stmts[query] = st
	return st, nil
}

func (p *pool) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	st, err := p.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

func (p *pool) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := p.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

func (p *pool) queryRow(ctx context.Context, query string, args ...any) row {
	rows, err := p.query(ctx, query, args...)
	return row{rows, err}
}

// close closes the statements and the database.
func (p *pool) close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var errs []error
	for _, st := range p.stmts {
		errs = append(errs, st.Close())
	}
	p.stmts = map[string]*sql.Stmt{}
	errs = append(errs, p.db.Close())
	return errors.Join(errs...)
}

// wtx is a transaction using a pool's prepared statements: a write
// transaction on the writer, or a read transaction on a reader
// (db.Snapshot).
//
// The transaction holds its connection (the writer's only one), so a
// statement that is not cached yet cannot be prepared on the pool inside
// the transaction (on the writer that would wait for the connection
// forever): it runs on the transaction unprepared, and is noted in missed
// for Store.write (or db.Snapshot) to prepare once the transaction has
// ended. Each statement is parsed inside a transaction once, the first
// time it runs.
type wtx struct {
	ctx    context.Context
	tx     *sql.Tx
	p      *pool
	missed *[]string
}

func (t wtx) exec(query string, args ...any) (sql.Result, error) {
	if st := t.p.cached(query); st != nil {
		return t.tx.StmtContext(t.ctx, st).ExecContext(t.ctx, args...)
	}
	*t.missed = append(*t.missed, query)
	return t.tx.ExecContext(t.ctx, query, args...)
}

func (t wtx) query(query string, args ...any) (*sql.Rows, error) {
	if st := t.p.cached(query); st != nil {
		return t.tx.StmtContext(t.ctx, st).QueryContext(t.ctx, args...)
	}
	*t.missed = append(*t.missed, query)
	return t.tx.QueryContext(t.ctx, query, args...)
}

func (t wtx) queryRow(query string, args ...any) row {
	rows, err := t.query(query, args...)
	return row{rows, err}
}

// row is sql.Row for the cached statements: Scan reads the first row and
// reports sql.ErrNoRows when there is none.
type row struct {
	rows *sql.Rows
	err  error
}

func (r row) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	defer r.rows.Close()
	if !r.rows.Next() {
		if err := r.rows.Err(); err != nil {
			return err
		}
		return sql.ErrNoRows
	}
	if err := r.rows.Scan(dest...); err != nil {
		return err
	}
	return r.rows.Close()
}
