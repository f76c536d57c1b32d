package postgres

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/relaybell/relaybell/store"
	"github.com/relaybell/relaybell/store/sqlstore"
)

// BenchmarkAddRateCounts is one API node's sync of its public-route counts
// (package ratelimit) for 1,000 visitor addresses: the dialect's one
// statement (hook) against the generic upsert per key (generic).
func BenchmarkAddRateCounts(b *testing.B) {
	start := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	counts := make([]store.RateCount, 1000)
	for i := range counts {
		counts[i] = store.RateCount{Limit: store.RateLimit{Key: fmt.Sprintf("public:ip:%04d", i), Window: time.Minute, Max: 120}, Start: start, N: 1}
	}
	for _, c := range []struct {
		name string
		hook bool
	}{{"hook", true}, {"generic", false}} {
		b.Run(c.name, func(b *testing.B) {
			s := openTest(b)
			d := dialect
			if !c.hook {
				d.AddRateCounts = nil
			}
			st := sqlstore.New(s.DB(), d, nil)
			for b.Loop() {
				if _, err := st.AddRateCounts(context.Background(), counts, start); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
