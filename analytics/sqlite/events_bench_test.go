//go:build unix

package sqlite

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/relaybell/relaybell/analytics"
	"github.com/relaybell/relaybell/cputime"
)

// BenchmarkRecordEvents records broadcasts' push events as the pusher
// hands them over, 500 a write, to browsers and people of random ids, as
// real ones are (ids in order would go in at the indexes' ends, far
// cheaper than any broadcast's). Each send reaches the same 100,000
// browsers, so the file grows as a site's does. ns/op and cpu-µs/op are
// per event; cpu-µs/op counts the person index's passes, the last one
// after the loop included.
func BenchmarkRecordEvents(b *testing.B) {
	s, err := Open(context.Background(), filepath.Join(b.TempDir(), "analytics.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	id := func() string {
		return fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", rng.Uint32(), rng.Uint32()&0xffff, rng.Uint32()&0xfff,
			rng.Uint32()&0xfff, rng.Uint64()&0xffffffffffff)
	}
	const audience = 100_000
	endpoints, people := make([]string, audience), make([]string, audience)
	for i := range endpoints {
		endpoints[i], people[i] = id(), id()
	}
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	batch := make([]analytics.Event, 500)
	send := id()
	b.ReportAllocs()
	cpu := int64(cputime.Process())
	n := 0
	for b.Loop() {
		if n%audience == 0 {
			send = id()
		}
		i := n % len(batch)
		batch[i] = analytics.Event{Kind: analytics.KindSent, WebsiteID: "00000000-0000-4000-8000-0000000000aa",
			NotificationID: send, EndpointID: endpoints[n%audience], SubscriberID: people[n%audience],
			Device: "desktop", Language: "en", At: at}
		n++
		if i == len(batch)-1 {
			if err := s.Record(context.Background(), batch); err != nil {
				b.Fatal(err)
			}
		}
	}
	// What the indexer has not indexed yet (people.go) counts too.
	if err := s.indexPeople(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(int64(cputime.Process())-cpu)/float64(b.N)/1e3, "cpu-µs/op")
}
