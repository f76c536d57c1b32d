package ratelimit

import (
	"context"
	"fmt"
	"testing"

	"github.com/relaybell/relaybell/store"
)

// BenchmarkTake is the cost of a public route's limit per request: the
// limiter's (in memory, shared by a sync every 250 ms) against the store's
// TakeRateLimits, which the send limits use (a transaction per request),
// on each engine, over 1,000 visitor addresses.
func BenchmarkTake(b *testing.B) {
	for _, engine := range []string{"sqlite", "postgres"} {
		open := func(b *testing.B) store.Store {
			if engine == "sqlite" {
				return openSQLite(b)
			}
			return openPostgres(b, postgresDSN(b))
		}
		b.Run(engine+"/limiter", func(b *testing.B) {
			lm := New(open(b), nil)
			i := 0
			for b.Loop() {
				lm.Take(limitOf(fmt.Sprintf("ip:%d", i%1000), 1<<40), t0)
				i++
			}
		})
		b.Run(engine+"/store", func(b *testing.B) {
			st := open(b)
			i := 0
			for b.Loop() {
				if _, _, err := st.TakeRateLimits(context.Background(), []store.RateLimit{limitOf(fmt.Sprintf("ip:%d", i%1000), 1<<40)}, 1, t0); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
		b.Run(engine+"/sync-1000-keys", func(b *testing.B) {
			lm := New(open(b), nil)
			for b.Loop() {
				for i := 0; i < 1000; i++ {
					lm.Take(limitOf(fmt.Sprintf("ip:%d", i), 1<<40), t0)
				}
				if err := lm.Sync(context.Background(), t0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
