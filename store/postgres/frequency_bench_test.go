package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/relaybell/relaybell/store/sqlstore"
	"github.com/relaybell/relaybell/store/storetest"
)

// BenchmarkCappedEndpoints measures the frequency-cap check of a 500-browser
// batch over storetest's cap history of a month (month), then once a year
// of older sends is added (year); over the year, the same query with JIT
// compilation left to the server (year-jit, the pool's jit = off turned
// back on), the store's generic query, which SQLite runs, reading the
// recent sends' results with notification_seq IN (the recent sends)
// (year-generic: Dialect.CappedQuery unset), and the query without the
// index on the notifications' start time (year-no-started-index: the pick
// of the recent sends then reads every send of the website). The history holds 270k results, far fewer than a
// real one; cappedQuery's comment has figures for 12M.
func BenchmarkCappedEndpoints(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	storetest.SeedCapHistory(b, s)
	exec := func(q string, args ...any) {
		b.Helper()
		if _, err := s.pool.Exec(ctx, q, args...); err != nil {
			b.Fatal(err)
		}
	}
	exec(`VACUUM ANALYZE notifications, deliveries`)
	b.Run("month", func(b *testing.B) { storetest.BenchCapped(b, s.CappedEndpoints) })
	exec(`INSERT INTO notifications (id, website_id, status, created_at, started_at)
		SELECT 'old-' || n, $1, 'sent', t, t
		FROM generate_series(0, $2 - 1) AS n, LATERAL (SELECT $3::timestamptz + n * $4::interval) AS a (t)`,
		storetest.BenchWebsite, storetest.CapBenchOld, storetest.CapBenchOldStart, 24*time.Hour/storetest.CapBenchSingles)
	exec(`VACUUM ANALYZE notifications`)
	b.Run("year", func(b *testing.B) { storetest.BenchCapped(b, s.CappedEndpoints) })
	b.Run("year-jit", func(b *testing.B) { storetest.BenchCapped(b, s.cappedWith(cappedQuery, "on")) })
	generic := dialect
	generic.CappedQuery = ""
	b.Run("year-generic", func(b *testing.B) {
		storetest.BenchCapped(b, s.cappedWith(sqlstore.CappedEndpointsQuery(generic), "off"))
	})
	exec(`DROP INDEX notifications_started`)
	exec(`VACUUM ANALYZE notifications`)
	b.Run("year-no-started-index", func(b *testing.B) { storetest.BenchCapped(b, s.CappedEndpoints) })
}

// cappedWith is CappedEndpoints running query with jit set to jit.
func (s *Store) cappedWith(query, jit string) storetest.CappedFunc {
	return func(ctx context.Context, websiteID, notificationID string, endpointIDs []string, since time.Time, max int) ([]string, error) {
		var ids []string
		err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SELECT set_config('jit', $1, true)`, jit); err != nil {
				return err
			}
			rows, err := tx.Query(ctx, query, websiteID, ts(since), notificationID, endpointIDs, max)
			if err != nil {
				return err
			}
			ids, err = pgx.CollectRows(rows, pgx.RowTo[string])
			return err
		})
		return ids, err
	}
}
