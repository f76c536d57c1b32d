// Package audiencebench holds the benchmarks of the audience views (package
// audience) over a store, shared by every store's benchmark file so their
// figures compare. It lives above both: the store's own test helpers
// (storetest) know nothing of audience.
package audiencebench

import (
	"context"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/relaybell/relaybell/audience"
	"github.com/relaybell/relaybell/filter"
	"github.com/relaybell/relaybell/store"
	"github.com/relaybell/relaybell/store/storetest"
)

// People measures the audience views over a store seeded with
// SeedRows(total): the first page of the audience list, a page filtered on
// a label one row in ten carries, a search that matches a single person
// (a walk of everyone), the count of everyone, the facets, and a segment
// preview (one walk of every shard with the send engine).
func People(b *testing.B, s store.Store, total int) {
	ctx := context.Background()
	list := func(name string, q audience.Query, want int) {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				q.WebsiteID = storetest.BenchWebsite
				page, err := audience.List(ctx, s, &q, "", 25)
				if err != nil {
					b.Fatal(err)
				}
				if len(page.Items) != want {
					b.Fatalf("%d items, want %d", len(page.Items), want)
				}
			}
		})
	}
	list("list", audience.Query{}, 25)
	list("list-tag", audience.Query{PeopleFilter: store.PeopleFilter{Tags: []store.TagCondition{{Key: "plan", Value: "pro", HasValue: true}}}}, 25)
	list("list-search", audience.Query{PeopleFilter: store.PeopleFilter{Q: "user-" + strconv.Itoa(total-10)}}, 1)
	pro := filter.Filters{Rules: []filter.Rule{{Field: "tag:plan", Value: filter.Text("pro")}}}
	list("list-rules", audience.Query{Filters: &pro}, 25)
	count := func(name string, q audience.Query, want int) {
		b.Run(name, func(b *testing.B) {
			q.WebsiteID = storetest.BenchWebsite
			for b.Loop() {
				n, err := audience.Total(ctx, s, &q)
				if err != nil || n != int64(want) {
					b.Fatalf("Total = %d, %v; want %d", n, err, want)
				}
			}
		})
	}
	count("count", audience.Query{}, total)
	count("count-tag", audience.Query{PeopleFilter: store.PeopleFilter{Tags: []store.TagCondition{{Key: "plan", Value: "pro", HasValue: true}}}}, (total+9)/10)
	b.Run("facets", func(b *testing.B) {
		for b.Loop() {
			f, err := s.Facets(ctx, storetest.BenchWebsite, 20)
			if err != nil || len(f.Countries) != 20 || f.Countries[0].Count != int64((total+24)/25) || len(f.Tags) != 2 {
				b.Fatalf("Facets = %+v, %v", f, err)
			}
		}
	})
	// preview against preview-walk, its baseline in the same run: the
	// send engine's walk of every browser with its endpoint, shards read
	// in parallel, which is how preview counted before Reachable.
	sel := audience.ForFilters(storetest.BenchWebsite, "", &pro)
	wantPro := int64((total + 9) / 10)
	b.Run("preview-walk", func(b *testing.B) {
		for b.Loop() {
			var n atomic.Int64
			shards := make(chan int, store.Shards)
			for shard := range store.Shards {
				shards <- shard
			}
			close(shards)
			var wg sync.WaitGroup
			for range min(runtime.GOMAXPROCS(0)*2, 8) {
				wg.Go(func() {
					for shard := range shards {
						for after := ""; ; {
							page, err := s.Audience(ctx, store.AudienceQuery{WebsiteID: storetest.BenchWebsite, Shard: shard, AfterID: after, Limit: 2000})
							if err != nil {
								b.Error(err)
								return
							}
							for i := range page {
								if sel.Selects(&page[i].Subscriber) {
									n.Add(1)
								}
							}
							if len(page) < 2000 {
								break
							}
							after = page[len(page)-1].Endpoint.ID
						}
					}
				})
			}
			if wg.Wait(); n.Load() != wantPro {
				b.Fatalf("walk counted %d, want %d", n.Load(), wantPro)
			}
		}
	})
	b.Run("preview", func(b *testing.B) {
		for b.Loop() {
			n, err := audience.Count(ctx, s, sel, sel)
			if err != nil || n[0] != wantPro {
				b.Fatalf("Count = %v, %v; want %d", n, err, wantPro)
			}
		}
	})
	// A filter no store condition narrows (language), over everyone.
	fr := filter.Filters{Rules: []filter.Rule{{Field: "language", Op: filter.OpNeq, Value: filter.Text("xx")}}}
	b.Run("preview-unnarrowed", func(b *testing.B) {
		sel := audience.ForFilters(storetest.BenchWebsite, "", &fr)
		for b.Loop() {
			n, err := audience.Count(ctx, s, sel, sel)
			if err != nil || n[0] != int64(total) {
				b.Fatalf("Count = %v, %v; want %d", n, err, total)
			}
		}
	})
}
