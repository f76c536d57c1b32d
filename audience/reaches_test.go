package audience

import (
	"context"
	"testing"

	"github.com/relaybell/relaybell/filter"
	"github.com/relaybell/relaybell/store"
)

// shardWalker serves every shard the same page of browsers, half in
// French, and counts the shards read.
type shardWalker struct{ reads int }

func (w *shardWalker) Audience(_ context.Context, q store.AudienceQuery) ([]store.Recipient, error) {
	w.reads++
	out := make([]store.Recipient, 10)
	for i := range out {
		out[i].Subscriber.Language = []string{"fr", "en"}[i%2]
	}
	return out, nil
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
		w := &shardWalker{}
		got, err := Reaches(ctx, w, c.sel, c.n)
		if err != nil || got != c.want || w.reads != c.reads {
			t.Errorf("Reaches(%d) = %v, %v after %d shard reads; want %v after %d", c.n, got, err, w.reads, c.want, c.reads)
		}
	}
}
