package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/relaybell/relaybell/store"
	"github.com/relaybell/relaybell/store/sqlstore"
)

var _ store.Store = (*Store)(nil)

// maxAttempts bounds how often a transaction is run again after a deadlock
// or serialization failure.
const maxAttempts = 4

// Store is the PostgreSQL implementation of store.Store, over a pgxpool.
type Store struct {
	*sqlstore.Store

	pool   *pgxpool.Pool
	logger *slog.Logger
	// leasesOutlasted counts the transactions that moved the people
	// version and waited (outlastLeases), for the tests.
	leasesOutlasted atomic.Int64
}

// Open connects to the database named by dsn (a libpq URL or key=value
// string; pool settings such as pool_max_conns and runtime parameters such
// as search_path are taken from it) and applies pending schema migrations.
func Open(ctx context.Context, dsn string, logger *slog.Logger) (*Store, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("opening postgres store: %w", err)
	}
	// JIT compilation pays off for long analytic queries, not for the
	// store's short ones: the planner's estimates of the frequency-cap check
	// pass jit_above_cost for any website, and compiling takes 240 ms for a
	// query that runs in 7 (BenchmarkCappedEndpoints/year-jit). A DSN may
	// still turn it on.
	if _, set := cfg.ConnConfig.RuntimeParams["jit"]; !set {
		cfg.ConnConfig.RuntimeParams["jit"] = "off"
	}
	// Statements are prepared on each connection, and PostgreSQL keeps a
	// generic plan of one after five runs when it costs no more than
	// planning each run (plan_cache_mode auto, unless the DSN says
	// otherwise); each connection forgets its statements at doubling
	// intervals so that no kept plan outlives the tables it was made for
	// by long (planRefresh, plans.go).
	if _, set := cfg.ConnConfig.RuntimeParams["plan_cache_mode"]; !set {
		cfg.ConnConfig.RuntimeParams["plan_cache_mode"] = "auto"
	}
	cfg.PrepareConn = plans.prepare
	cfg.AfterConnect = func(_ context.Context, c *pgx.Conn) error {
		plans.start(c)
		// Times come back in UTC, as the store.Store interface speaks them.
		c.TypeMap().RegisterType(&pgtype.Type{
			Name: "timestamptz", OID: pgtype.TimestamptzOID,
			Codec: &pgtype.TimestamptzCodec{ScanLocation: time.UTC},
		})
		return nil
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("opening postgres store: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("opening postgres store: %w", err)
	}
	s := &Store{pool: pool, logger: logger}
	// A schema named first on the DSN's search_path is created when
	// missing, so one database can hold several clusters' stores.
	if first, _, _ := strings.Cut(cfg.ConnConfig.RuntimeParams["search_path"], ","); strings.Trim(first, ` "`) != "" {
		name := pgx.Identifier{strings.Trim(first, ` "`)}.Sanitize()
		if _, err := pool.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+name); err != nil {
			pool.Close()
			return nil, fmt.Errorf("creating schema %s: %w", name, err)
		}
	}
	s.Store = sqlstore.New(&db{pool: pool, s: s}, dialect, logger)
	if err := s.Migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	if err := s.BackfillSearch(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

// WithSearchPath returns dsn (a URL or key=value string) with its
// search_path set to schema, which Open creates when missing: one database
// then holds several stores, one per schema.
func WithSearchPath(dsn, schema string) (string, error) {
	if !strings.HasPrefix(dsn, "postgres://") && !strings.HasPrefix(dsn, "postgresql://") {
		return dsn + " search_path=" + schema, nil
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return "", fmt.Errorf("parsing PostgreSQL URL: %w", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// Close closes the pool, waiting for connections in use to be returned.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

// inTx runs fn in a read-committed transaction, committing when fn returns
// nil, and runs it again (fn must start from scratch) after a deadlock or a
// serialization failure, or after a unique violation when retryUnique is
// set (an upsert that lost a race to insert the same row finds it next time).
func (s *Store) inTx(ctx context.Context, retryUnique bool, fn func(tx querier) error) error {
	var moved bool
	err := s.retry(ctx, retryUnique, func() (err error) {
		moved, err = inTx(ctx, s.pool, pgx.TxOptions{}, fn)
		return err
	})
	if err == nil && moved {
		s.outlastLeases(ctx)
	}
	return err
}

// PeopleLease is how long a node's person cache (defcache.People) trusts
// a read of the people version, from when the read was sent: lookups in
// that time answer from what the node found before without reading the
// version again, where a read for every batch of lookups was most of the
// statements of an event (docs/scale-out.md, "The people version
// leased").
//
// A transaction that moved the version returns only PeopleLease after its
// commit (outlastLeases), by when every read sent before the commit has
// lost its trust on every node: a change whose call returned is seen by
// every lookup that begins after, on any node, as a read of the store
// would see it. Only the nodes' clocks' pace matters, not their times.
func (s *Store) PeopleLease() time.Duration { return peopleLease }

// peopleLease is PeopleLease: version reads at most 20 a second on each
// node, and a call that changes whom a key names (an external id set,
// changed or cleared; a subscriber erased) 50 ms longer.
const peopleLease = 50 * time.Millisecond

// outlastLeases waits out the nodes' leases on the people version after
// a transaction that moved it, with a margin for their clocks' pace. A
// caller gone meanwhile is not waited for.
func (s *Store) outlastLeases(ctx context.Context) {
	s.leasesOutlasted.Add(1)
	t := time.NewTimer(peopleLease + peopleLease/10 + time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// retry runs do, and again (at most maxAttempts in all) after a deadlock
// or a serialization failure, and with retryUnique after a unique
// violation: inTx's transaction, or a statement alone (TxOptions.Alone).
func (s *Store) retry(ctx context.Context, retryUnique bool, do func() error) error {
	for attempt := 1; ; attempt++ {
		err := do()
		if err == nil || attempt >= maxAttempts || ctx.Err() != nil {
			return err
		}
		var pe *pgconn.PgError
		if !errors.As(err, &pe) {
			return err
		}
		switch pe.Code {
		case "40P01", "40001": // deadlock_detected, serialization_failure
		case "23505": // unique_violation
			if !retryUnique {
				return err
			}
		default:
			return err
		}
		s.logger.Debug("retrying postgres transaction", "attempt", attempt, "code", pe.Code)
	}
}

// querier is what the pool and a transaction share.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// mapErr turns constraint violations into the store's sentinel errors: a
// duplicate into store.ErrConflict, a missing parent into store.ErrNotFound,
// and no row into store.ErrNotFound.
func mapErr(err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return store.ErrNotFound
	}
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return err
	}
	switch pe.Code {
	case "23505": // unique_violation
		return fmt.Errorf("%w: %w", store.ErrConflict, err)
	case "23503": // foreign_key_violation
		return fmt.Errorf("%w: %w", store.ErrNotFound, err)
	}
	return err
}

// ts is the stored form of a time: UTC, rounded to the microsecond that
// timestamptz keeps (pgx would truncate; rounding matches PostgreSQL's own
// parsing of text times).
func ts(t time.Time) time.Time { return t.Round(time.Microsecond).UTC() }
