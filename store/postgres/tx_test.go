package postgres

import (
	"context"
	"errors"
	"net"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/relaybell/relaybell/store/sqlstore"
	"github.com/relaybell/relaybell/store/storetest"
)

// countingConn counts the writes to PostgreSQL: pgx writes once a round
// trip.
type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countingConn) Write(b []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(b)
}

// txPool is a pool of one connection to a schema of the test's own,
// holding table t (id int primary key), and the count of its writes.
func txPool(t *testing.T) (*pgxpool.Pool, *atomic.Int64) {
	t.Helper()
	ctx := context.Background()
	dsn, err := WithSearchPath(storetest.PostgresDSN(), storetest.PostgresSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1
	writes := new(atomic.Int64)
	var d net.Dialer
	cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return countingConn{c, writes}, nil
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if _, err := pool.Exec(ctx, `CREATE TABLE t (id int PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	return pool, writes
}

func ids(t *testing.T, pool *pgxpool.Pool) []int {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT id FROM t ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// insertOne inserts row 1 each way a statement can be run, checking the
// row returned.
func insertOne(ctx context.Context) map[string]func(q querier) error {
	return map[string]func(q querier) error{
		"exec": func(q querier) error {
			_, err := q.Exec(ctx, `INSERT INTO t VALUES (1)`)
			return err
		},
		"query": func(q querier) error {
			rows, err := q.Query(ctx, `INSERT INTO t VALUES (1) RETURNING id`)
			if err != nil {
				return err
			}
			got, err := pgx.CollectRows(rows, pgx.RowTo[int])
			if err == nil && (len(got) != 1 || got[0] != 1) {
				err = errors.New("not the inserted row")
			}
			return err
		},
		"queryrow": func(q querier) error {
			var id int
			if err := q.QueryRow(ctx, `INSERT INTO t VALUES (1) RETURNING id`).Scan(&id); err != nil {
				return err
			}
			if id != 1 {
				return errors.New("not the inserted row")
			}
			return nil
		},
	}
}

// TestTxBeginsWithItsFirstStatement: BEGIN goes out with the first
// statement, whichever way it is run, and the statements after it run in
// the same transaction, committed at the end.
func TestTxBeginsWithItsFirstStatement(t *testing.T) {
	ctx := context.Background()
	pool, writes := txPool(t)
	first := insertOne(ctx)
	for name, run := range first {
		t.Run(name, func(t *testing.T) {
			// Twice: the first run prepares the statements (pgx's cache).
			for i := range 2 {
				warm := i == 1
				if _, err := pool.Exec(ctx, `DELETE FROM t`); err != nil {
					t.Fatal(err)
				}
				before := writes.Load()
				var inside string
				_, err := inTx(ctx, pool, pgx.TxOptions{}, func(q querier) error {
					if err := run(q); err != nil {
						return err
					}
					if _, err := q.Exec(ctx, `INSERT INTO t VALUES (2)`); err != nil {
						return err
					}
					// Still in one transaction: another connection would not
					// see the rows, and this one's status says so.
					return q.QueryRow(ctx, `SELECT CASE WHEN now() = statement_timestamp() THEN 'alone' ELSE 'in a transaction' END`).Scan(&inside)
				})
				if err != nil {
					t.Fatal(err)
				}
				// BEGIN with the first statement, the second, the third, COMMIT.
				if n := writes.Load() - before; n != 4 && warm {
					t.Errorf("%d writes to PostgreSQL, want 4", n)
				}
				if inside != "in a transaction" {
					t.Errorf("the statements ran %s", inside)
				}
				if got := ids(t, pool); len(got) != 2 {
					t.Errorf("rows %v, want [1 2]", got)
				}
			}
		})
	}
}

// TestTxRollsBack: an error from fn rolls every statement back, and an
// error in the first statement comes back as PostgreSQL's (the store's
// retries and sentinel errors read its code), leaving the connection
// usable.
func TestTxRollsBack(t *testing.T) {
	ctx := context.Background()
	pool, _ := txPool(t)
	errStop := errors.New("stop")
	_, err := inTx(ctx, pool, pgx.TxOptions{}, func(q querier) error {
		if _, err := q.Exec(ctx, `INSERT INTO t VALUES (1)`); err != nil {
			return err
		}
		return errStop
	})
	if !errors.Is(err, errStop) {
		t.Fatalf("inTx = %v", err)
	}
	if got := ids(t, pool); len(got) != 0 {
		t.Fatalf("rows %v after a rollback", got)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO t VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	for name, run := range insertOne(ctx) {
		t.Run(name, func(t *testing.T) {
			_, err := inTx(ctx, pool, pgx.TxOptions{}, run)
			var pe *pgconn.PgError
			if !errors.As(err, &pe) || pe.Code != "23505" {
				t.Fatalf("inTx = %v, want a unique violation", err)
			}
			if got := ids(t, pool); len(got) != 1 {
				t.Fatalf("rows %v", got)
			}
		})
	}
	// An error fn swallows still aborts the transaction: COMMIT says so.
	_, err = inTx(ctx, pool, pgx.TxOptions{}, func(q querier) error {
		q.Exec(ctx, `INSERT INTO t VALUES (2)`)
		q.Exec(ctx, `INSERT INTO t VALUES (1)`)
		return nil
	})
	if !errors.Is(err, pgx.ErrTxCommitRollback) {
		t.Fatalf("inTx = %v, want ErrTxCommitRollback", err)
	}
	if got := ids(t, pool); len(got) != 1 {
		t.Fatalf("rows %v", got)
	}
}

// TestTxOptionsAndNothing: the options go out with BEGIN, and a
// transaction that runs nothing sends nothing.
func TestTxOptionsAndNothing(t *testing.T) {
	ctx := context.Background()
	pool, writes := txPool(t)
	before := writes.Load()
	if _, err := inTx(ctx, pool, pgx.TxOptions{}, func(querier) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if n := writes.Load() - before; n != 0 {
		t.Errorf("%d writes for an empty transaction", n)
	}
	var level, readOnly string
	_, err := inTx(ctx, pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(q querier) error {
		if err := q.QueryRow(ctx, `SHOW transaction_isolation`).Scan(&level); err != nil {
			return err
		}
		if err := q.QueryRow(ctx, `SHOW transaction_read_only`).Scan(&readOnly); err != nil {
			return err
		}
		_, err := q.Exec(ctx, `INSERT INTO t VALUES (1)`)
		return err
	})
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "25006" { // read_only_sql_transaction
		t.Fatalf("inTx = %v, want a read-only transaction's error", err)
	}
	if level != "repeatable read" || readOnly != "on" {
		t.Errorf("isolation %q, read only %q", level, readOnly)
	}
}

// TestTxBatchFirst: a pipeline as the first statement (conn.Pipeline)
// runs in the transaction too.
func TestTxBatchFirst(t *testing.T) {
	ctx := context.Background()
	two := []sqlstore.Piped{{SQL: `INSERT INTO t VALUES ($1)`, Args: []any{1}}, {SQL: `INSERT INTO t VALUES ($1)`, Args: []any{2}}}
	pool, _ := txPool(t)
	_, err := inTx(ctx, pool, pgx.TxOptions{}, func(q querier) error {
		if err := (conn{q}).Pipeline(ctx, two); err != nil {
			return err
		}
		return errors.New("stop")
	})
	if err == nil || err.Error() != "stop" {
		t.Fatalf("inTx = %v", err)
	}
	if got := ids(t, pool); len(got) != 0 {
		t.Fatalf("rows %v after a rollback", got)
	}
	if _, err := inTx(ctx, pool, pgx.TxOptions{}, func(q querier) error {
		return (conn{q}).Pipeline(ctx, two)
	}); err != nil {
		t.Fatal(err)
	}
	if got := ids(t, pool); len(got) != 2 {
		t.Fatalf("rows %v", got)
	}
}

// TestPipelineIsOneRoundTrip: a pipeline's statements go to the server in
// one write once the connection has them prepared (the first time, pgx
// prepares the new ones first: a write more), run in order, each one's
// rows read by its Read; the first error ends them and comes back as
// PostgreSQL's (a unique violation, for RetryUnique), the statements
// after it not run.
func TestPipelineIsOneRoundTrip(t *testing.T) {
	ctx := context.Background()
	pool, writes := txPool(t)
	insert := func(id int) sqlstore.Piped { return sqlstore.Piped{SQL: `INSERT INTO t VALUES ($1)`, Args: []any{id}} }
	var got []int
	for i, want := range []int64{2, 1} { // prepared, then as prepared
		if _, err := pool.Exec(ctx, `DELETE FROM t`); err != nil {
			t.Fatal(err)
		}
		if _, err := inTx(ctx, pool, pgx.TxOptions{}, func(q querier) error {
			if _, err := q.Exec(ctx, `INSERT INTO t VALUES (1)`); err != nil { // BEGIN goes with it
				return err
			}
			before := writes.Load()
			err := (conn{q}).Pipeline(ctx, []sqlstore.Piped{insert(2), insert(3), {SQL: `SELECT id FROM t ORDER BY id`,
				Read: func(rows sqlstore.Rows) error {
					var err error
					got, err = sqlstore.CollectRows(rows, nil, func(id *int) []any { return []any{id} })
					return err
				}}})
			if n := writes.Load() - before; n != want {
				t.Errorf("run %d: a pipeline of 3 statements took %d writes, want %d", i+1, n, want)
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if want := []int{1, 2, 3}; !slices.Equal(got, want) {
			t.Fatalf("the pipeline's read %v, want %v (the inserts before it run first)", got, want)
		}
	}

	ran := false
	_, err := inTx(ctx, pool, pgx.TxOptions{}, func(q querier) error {
		if _, err := q.Exec(ctx, `INSERT INTO t VALUES (4)`); err != nil {
			return err
		}
		return (conn{q}).Pipeline(ctx, []sqlstore.Piped{insert(5), insert(1), {SQL: `SELECT 1`,
			Read: func(sqlstore.Rows) error { ran = true; return nil }}})
	})
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "23505" {
		t.Fatalf("a pipeline inserting a row twice: %v, want a unique violation", err)
	}
	if ran {
		t.Error("the statement after the failed one ran")
	}
	if got := ids(t, pool); !slices.Equal(got, []int{1, 2, 3}) {
		t.Fatalf("rows %v after the failed pipeline's rollback, want 1 2 3", got)
	}
}

// TestPipelineAloneIsOneTransaction: a pipeline on the pool, outside any
// transaction (TxOptions.Alone, as WriteEvents runs its statements), is
// one round trip once its statements are prepared, and atomic: pgx sends
// the batch with one Sync, so the server runs it as one implicit
// transaction, and a statement that fails takes back those before it.
func TestPipelineAloneIsOneTransaction(t *testing.T) {
	ctx := context.Background()
	pool, writes := txPool(t)
	insert := func(id int) sqlstore.Piped { return sqlstore.Piped{SQL: `INSERT INTO t VALUES ($1)`, Args: []any{id}} }
	for i, want := range []int64{2, 1} { // prepared, then as prepared
		before := writes.Load()
		if err := (conn{pool}).Pipeline(ctx, []sqlstore.Piped{insert(2*i + 1), insert(2*i + 2)}); err != nil {
			t.Fatal(err)
		}
		if n := writes.Load() - before; n != want {
			t.Errorf("run %d: a pipeline of 2 statements alone took %d writes, want %d", i+1, n, want)
		}
	}
	err := (conn{pool}).Pipeline(ctx, []sqlstore.Piped{insert(5), insert(6), insert(1)})
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "23505" {
		t.Fatalf("a pipeline inserting a row twice: %v, want a unique violation", err)
	}
	if got := ids(t, pool); !slices.Equal(got, []int{1, 2, 3, 4}) {
		t.Fatalf("rows %v after the failed pipeline, want 1 2 3 4 (5 and 6 taken back with it)", got)
	}
}
