package bench

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// connect opens the bench's own connection to the cluster's PostgreSQL.
// The DSN is the nodes' too, so it may carry pool settings
// (pool_max_conns, ...) that a plain connection refuses: they are read
// as the nodes' pools read them, and left out.
func connect(ctx context.Context, dsn string) (*pgx.Conn, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	return pgx.ConnectConfig(ctx, cfg.ConnConfig)
}

// dropSchema removes a cluster run's schema.
func dropSchema(dsn, schema string) {
	ctx := context.Background()
	conn, err := connect(ctx, dsn)
	if err != nil {
		return
	}
	defer conn.Close(ctx)
	conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`)
}

// settle does to a cluster run's schema, once its audience has subscribed,
// what a PostgreSQL left to its defaults does on its own after a bulk of
// inserts: autovacuum vacuums and analyzes the tables that grew (setting hint
// bits and the visibility map, and giving the planner statistics), and the
// checkpointer writes the dirty buffers out. The test machines run
// PostgreSQL with autovacuum off, so without this the first broadcast after
// a million registrations would pay for them.
func settle(ctx context.Context, dsn, schema string) error {
	conn, err := connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT tablename FROM pg_tables WHERE schemaname = $1 ORDER BY tablename`, schema)
	if err != nil {
		return err
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	if len(names) == 0 {
		return fmt.Errorf("settle: schema %s has no tables", schema)
	}
	tables := make([]string, len(names))
	for i, n := range names {
		tables[i] = pgx.Identifier{schema, n}.Sanitize()
	}
	if _, err := conn.Exec(ctx, `VACUUM (ANALYZE) `+strings.Join(tables, ", ")); err != nil {
		return fmt.Errorf("settle: vacuum: %w", err)
	}
	if _, err := conn.Exec(ctx, `CHECKPOINT`); err != nil {
		return fmt.Errorf("settle: checkpoint: %w", err)
	}
	return nil
}

// withApplicationName names the connections of dsn (a URL or key=value
// pairs): pg_stat_activity then tells the run's backends apart from any
// other of the server.
func withApplicationName(dsn, name string) (string, error) {
	if !strings.HasPrefix(dsn, "postgres://") && !strings.HasPrefix(dsn, "postgresql://") {
		return dsn + " application_name=" + name, nil
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return "", err
	}
	q := u.Query()
	q.Set("application_name", name)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// runProcesses lists the PostgreSQL processes whose CPU a cluster run
// counts: the backends of its own connections (named app by
// application_name) and the server's own processes (checkpointer, WAL
// writer, background writer, autovacuum), not the backends of other
// clients sharing the server.
func runProcesses(ctx context.Context, dsn, app string) ([]int, error) {
	conn, err := connect(ctx, dsn)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE application_name = $1 OR backend_type <> 'client backend'`, app)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int])
}
