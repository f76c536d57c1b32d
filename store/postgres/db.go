package postgres

import (
	"context"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/relaybell/relaybell/store/sqlstore"
)

// db is the pool as sqlstore.DB: reads and writes share it.
type db struct {
	pool *pgxpool.Pool
	s    *Store // for inTx
}

func (d *db) Read() sqlstore.Conn  { return conn{d.pool} }
func (d *db) Write() sqlstore.Conn { return conn{d.pool} }

func (d *db) Tx(ctx context.Context, opt sqlstore.TxOptions, fn func(tx sqlstore.Conn) error) error {
	if opt.Alone {
		return d.s.retry(ctx, opt.RetryUnique, func() error { return fn(conn{d.pool}) })
	}
	return d.s.inTx(ctx, opt.RetryUnique, func(tx querier) error { return fn(conn{tx}) })
}

// Snapshot runs fn in a REPEATABLE READ, READ ONLY transaction: its
// reads share the snapshot its first statement took.
func (d *db) Snapshot(ctx context.Context, fn func(read sqlstore.Conn) error) error {
	_, err := inTx(ctx, d.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly},
		func(tx querier) error { return fn(conn{tx}) })
	return err
}

func (d *db) Close() error {
	d.pool.Close()
	return nil
}

// conn is the pool or a transaction as sqlstore.Conn. pgx's rows and row
// are sqlstore's as they are.
type conn struct{ q querier }

func (c conn) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	tag, err := c.q.Exec(ctx, query, args...)
	return tag.RowsAffected(), err
}

func (c conn) Query(ctx context.Context, query string, args ...any) (sqlstore.Rows, error) {
	return c.q.Query(ctx, query, args...)
}

func (c conn) QueryRow(ctx context.Context, query string, args ...any) sqlstore.Row {
	return c.q.QueryRow(ctx, query, args...)
}

// dialect is PostgreSQL's sqlstore.Dialect.
var dialect = sqlstore.Dialect{
	Engine: "postgres",
	Time:   func(t time.Time) any { return ts(t) },
	DDL: sqlstore.DDL{
		Time:        "timestamptz",
		Bool:        "boolean",
		False:       "false",
		Bigint:      "bigint",
		Float:       "double precision",
		Bytes:       "bytea",
		JSON:        "json",
		JSONB:       "jsonb",
		Serial:      "bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY",
		SeqTiebreak: ", seq",
		ByteOrder:   ` COLLATE "C"`,
	},
	List: func(ss []string) any {
		if ss == nil {
			return []string{}
		}
		return ss
	},
	In:    func(col, arg string) string { return col + " = ANY (" + arg + "::text[])" },
	Elems: func(arg string) string { return "unnest(" + arg + "::text[]) AS value" },
	ForUpdate: func(of ...string) string {
		if len(of) == 0 {
			return "FOR UPDATE"
		}
		return "FOR UPDATE OF " + strings.Join(of, ", ")
	},
	SkipLocked: func(of ...string) string {
		if len(of) == 0 {
			return "FOR UPDATE SKIP LOCKED"
		}
		return "FOR UPDATE OF " + strings.Join(of, ", ") + " SKIP LOCKED"
	},
	Lock: func(ctx context.Context, tx sqlstore.Conn, keys ...int64) error {
		if len(keys) == 0 {
			return nil
		}
		// unnest gives the keys in the array's order.
		_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(k, hashtext(current_schema()))
			FROM unnest(CAST($1 AS integer[])) AS k`, keys)
		return err
	},
	// lower() folds by the database's ctype: the store's notification
	// search is folded in Go (store.FoldSearch) for that reason.
	ContainsFold: func(col, arg string) string {
		return "lower(" + col + `) LIKE ('%' || replace(replace(replace(lower(` + arg + `::text), '\', '\\'), '%', '\%'), '_', '\_') || '%')`
	},
	MapErr: mapErr,
	LockRows: func(strength string, of ...string) string {
		if len(of) == 0 {
			return "FOR " + strength
		}
		return "FOR " + strength + " OF " + strings.Join(of, ", ")
	},
	MergeJSON: func(a, b string) string { return a + " || " + b },
	NewSeq:    func(string) string { return "DEFAULT" },
	Contains:  func(col, arg string) string { return "strpos(" + col + ", " + arg + ") > 0" },
	// The fast paths a benchmark justifies (fast_*.go).
	AudienceFrom:  audienceFrom,
	AddRateCounts: addRateCounts,
	ScanTime:      scanTime,
	CounterShards: 16,
}
