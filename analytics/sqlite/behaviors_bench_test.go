//go:build unix

package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/relaybell/relaybell/analytics"
	"github.com/relaybell/relaybell/cputime"
)

// BenchmarkRecordBehaviors records behaviors one at a time from many
// callers, as POST /events does: each in a transaction of its own
// ("direct"), and through analytics.Batched's group commit ("batched"),
// which the server puts in front of this store. cpu-µs/op is the
// process's CPU per behavior, the person index's passes included (the
// last one after the loop).
func BenchmarkRecordBehaviors(b *testing.B) {
	props := json.RawMessage(`{"productId":"sku-1234","value":49.9,"currency":"EUR"}`)
	at := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name  string
		store func(*Store) analytics.Store
	}{
		{"direct", func(s *Store) analytics.Store { return s }},
		{"batched", func(s *Store) analytics.Store { return analytics.NewBatched(s, 0, 0) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			lite, err := Open(context.Background(), filepath.Join(b.TempDir(), "analytics.db"), nil)
			if err != nil {
				b.Fatal(err)
			}
			s := c.store(lite)
			defer s.Close()
			var n atomic.Int64
			b.ReportAllocs()
			b.SetParallelism(16) // callers waiting on SQLite, not CPUs
			cpu := int64(cputime.Process())
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := n.Add(1)
					bh := analytics.Behavior{ID: fmt.Sprintf("b%d", i), WebsiteID: fmt.Sprintf("w%d", i%50), Name: "purchase",
						SubscriberID: fmt.Sprintf("s%d", i%5000), Properties: props, Source: "server", At: at.Add(time.Duration(i) * time.Millisecond)}
					if err := s.RecordBehaviors(context.Background(), []analytics.Behavior{bh}); err != nil {
						b.Error(err)
						return
					}
				}
			})
			// What the indexer has not indexed yet (people.go) counts too.
			if err := lite.indexPeople(context.Background()); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(int64(cputime.Process())-cpu)/float64(b.N)/1e3, "cpu-µs/op")
		})
	}
}
