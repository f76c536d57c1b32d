package sqlite

import (
	"context"
	"testing"

	"github.com/relaybell/relaybell/store/storetest"
)

// BenchmarkCappedEndpoints measures the frequency-cap check of a 500-browser
// batch over storetest's cap history of a month (month), then once a year
// of older sends is added (year), and the same without the index on the
// notifications' start time (year-no-started-index): the pick of the recent
// sends then reads every send of the website.
func BenchmarkCappedEndpoints(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	storetest.SeedCapHistory(b, s)
	exec := func(q string, args ...any) {
		b.Helper()
		if _, err := s.w.db.ExecContext(ctx, q, args...); err != nil {
			b.Fatal(err)
		}
	}
	exec(`ANALYZE`)
	b.Run("month", func(b *testing.B) { storetest.BenchCapped(b, s.CappedEndpoints) })
	exec(`WITH RECURSIVE i (n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM i WHERE n < ?1 - 1)
		INSERT INTO notifications (id, website_id, status, created_at, started_at)
		SELECT 'old-' || n, ?2, 'sent', ?3 + n * 86400000 / ?4, ?3 + n * 86400000 / ?4 FROM i`,
		storetest.CapBenchOld, storetest.BenchWebsite, storetest.CapBenchOldStart.UnixMilli(), storetest.CapBenchSingles)
	exec(`ANALYZE`)
	b.Run("year", func(b *testing.B) { storetest.BenchCapped(b, s.CappedEndpoints) })
	exec(`DROP INDEX notifications_started`)
	exec(`ANALYZE`)
	b.Run("year-no-started-index", func(b *testing.B) { storetest.BenchCapped(b, s.CappedEndpoints) })
}
