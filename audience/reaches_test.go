package audience

import (
	"context"
	"testing"

	"github.com/relaybell/relaybell/filter"
	"github.com/relaybell/relaybell/store"
)

// shardReader serves every shard the same ten people, half in French,
// each with one browser, and counts the shards read.
type shardReader struct{ reads int }

func (r *shardReader) Reachable(_ context.Context, q store.ReachQuery, fn func(*store.Subscriber, int)) error {
	r.reads++
	for i := range 10 {
		fn(&store.Subscriber{Language: []string{"fr", "en"}[i%2]}, 1)
	}
	return nil
}

func TestReaches(t *testing.T) {
	ctx := context.Background()
	fr := filter.Filters{Rules: []filter.Rule{{Field: "language", Value: filter.Text("fr")}}}
	for _, c := range []struct {
		sel   *Selector
		n     int64
		want  bool
		reads int
	}{
		{ForFilters("w", "", nil), 25, true, 3},              // 10 a shard: the third reaches 25
		{ForFilters("w", "", &fr), 25, true, 5},              // 5 a shard
		{ForFilters("w", "", &fr), 321, false, store.Shards}, // 320 in all
		{ForFilters("w", "", &fr), 320, true, store.Shards},
	} {
		w := &shardReader{}
		got, err := Reaches(ctx, w, c.sel, c.n)
		if err != nil || got != c.want || w.reads != c.reads {
			t.Errorf("Reaches(%d) = %v, %v after %d shard reads; want %v after %d", c.n, got, err, w.reads, c.want, c.reads)
		}
	}
}
