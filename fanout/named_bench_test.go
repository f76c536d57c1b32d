package fanout

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/relaybell/relaybell/store"
)

// BenchmarkNamedSend is the fan-out's part of a send to one external id
// (its intent and shard tasks, the pushes recorded as a pusher would) on
// SQLite, among 1,000 named people with a browser each: "inline" names
// the one person (expanded in the intent's handler), "shard-tasks" names
// them with 64 unknown ids too, which keeps the broadcast path's 64 shard
// tasks (what every such send took before). Compare the two in one run:
//
//	go test -run '^$' -bench BenchmarkNamedSend ./fanout/
func BenchmarkNamedSend(b *testing.B) {
	r := newRig(b)
	const people = 1000
	for i := range people {
		r.subscriber("en", "u-"+strconv.Itoa(i))
	}
	unknown := make([]string, inlineNames)
	for i := range unknown {
		unknown[i] = "nobody-" + strconv.Itoa(i)
	}
	for _, c := range []struct {
		name  string
		extra []string
	}{{"inline", nil}, {"shard-tasks", unknown}} {
		b.Run(c.name, func(b *testing.B) {
			i := 0
			for b.Loop() {
				target, _ := json.Marshal(map[string]any{"externalIds": append([]string{"u-" + strconv.Itoa(i%people)}, c.extra...)})
				n := r.notification(string(target))
				if pushed := r.send(n); len(pushed) != 1 {
					b.Fatalf("pushed %v, want one browser", pushed)
				}
				if got := r.get(n.ID); got.Status != store.StatusSent {
					b.Fatalf("status %s, want sent", got.Status)
				}
				i++
			}
		})
	}
}
