package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/relaybell/relaybell/store/storetest"
)

// BenchmarkCappedEndpoints measures the frequency-cap check of a 500-browser
// batch over storetest's cap history of a month (month), then once a year
// of older sends is added (year), and the same without the index on the
// notifications' start time (year-no-started-index: the pick of the recent
// sends then reads every send of the website).
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
	exec(`VACUUM ANALYZE notifications, push_ledger`)
	b.Run("month", func(b *testing.B) { storetest.BenchCapped(b, s.CappedEndpoints) })
	exec(`INSERT INTO notifications (id, website_id, status, created_at, started_at)
		SELECT 'old-' || n, $1, 'sent', t, t
		FROM generate_series(0, $2 - 1) AS n, LATERAL (SELECT $3::timestamptz + n * $4::interval) AS a (t)`,
		storetest.BenchWebsite, storetest.CapBenchOld, storetest.CapBenchOldStart, 24*time.Hour/storetest.CapBenchSingles)
	exec(`VACUUM ANALYZE notifications`)
	b.Run("year", func(b *testing.B) { storetest.BenchCapped(b, s.CappedEndpoints) })
	exec(`DROP INDEX notifications_started`)
	exec(`VACUUM ANALYZE notifications`)
	b.Run("year-no-started-index", func(b *testing.B) { storetest.BenchCapped(b, s.CappedEndpoints) })
}
