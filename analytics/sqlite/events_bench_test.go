package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/relaybell/relaybell/analytics"
)

// BenchmarkRecordEvents records a broadcast's push events as the pusher
// hands them over, 500 a write (ns/op is per event).
func BenchmarkRecordEvents(b *testing.B) {
	s, err := Open(context.Background(), filepath.Join(b.TempDir(), "analytics.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	batch := make([]analytics.Event, 500)
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		i := n % len(batch)
		batch[i] = analytics.Event{Kind: analytics.KindSent, WebsiteID: "00000000-0000-4000-8000-0000000000aa",
			NotificationID: "00000000-0000-4000-8000-0000000000bb", EndpointID: fmt.Sprintf("00000000-0000-4000-8000-%012d", n),
			SubscriberID: fmt.Sprintf("10000000-0000-4000-8000-%012d", n), Device: "desktop", Language: "en", At: at}
		n++
		if i == len(batch)-1 {
			if err := s.Record(context.Background(), batch); err != nil {
				b.Fatal(err)
			}
		}
	}
}
