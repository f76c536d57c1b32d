package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/relaybell/relaybell/analytics"
)

// BenchmarkWriteBesideReports writes behaviors one at a time, as POST
// /events does, while a dashboard reads the report of a send to 100,000
// browsers again and again (GET /notifications/{id}). ns/op is a write's
// time; the p99 and the longest are reported too, and the reports read
// meanwhile. The store's writes must not wait for its reads.
func BenchmarkWriteBesideReports(b *testing.B) {
	ctx := context.Background()
	s := sentTo(b, reportAudience)
	at := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

	stop := make(chan struct{})
	var reports int
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := s.Report(ctx, "w1", "n1"); err != nil {
				b.Error(err)
				return
			}
			reports++
		}
	})
	props := json.RawMessage(`{"path":"/"}`)
	took := make([]time.Duration, 0, b.N)
	i := 0
	for b.Loop() {
		i++
		bh := analytics.Behavior{ID: fmt.Sprintf("b%d", i), WebsiteID: "w1", Name: "page.viewed", SubscriberID: fmt.Sprintf("s%d", i%reportAudience),
			Properties: props, Source: "server", At: at.Add(time.Duration(i) * time.Millisecond)}
		start := time.Now()
		if err := s.RecordBehaviors(ctx, []analytics.Behavior{bh}); err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(start))
		time.Sleep(time.Millisecond) // a write every millisecond or so, not back to back
	}
	close(stop)
	wg.Wait()
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1e3, "p99-ms")
	b.ReportMetric(float64(took[len(took)-1].Microseconds())/1e3, "max-ms")
	b.ReportMetric(float64(reports), "reports")
}

// reportAudience is the browsers the benchmarks' send reached.
const reportAudience = 100_000

// sentTo opens a new file holding a send (n1 of website w1) to audience
// browsers, half on desktops and half on phones, one in ten of whom
// clicked, every row indexed by person.
func sentTo(b *testing.B, audience int) *Store {
	b.Helper()
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(b.TempDir(), "analytics.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	at := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	events := make([]analytics.Event, 0, 1000)
	for i := range audience {
		endpoint, subscriber := fmt.Sprintf("e%d", i), fmt.Sprintf("s%d", i)
		events = append(events, analytics.Event{Kind: analytics.KindSent, WebsiteID: "w1", NotificationID: "n1", EndpointID: endpoint,
			SubscriberID: subscriber, Device: []string{"desktop", "mobile"}[i%2], Language: "en", At: at})
		if i%10 == 0 {
			events = append(events, analytics.Event{Kind: analytics.KindClicked, WebsiteID: "w1", NotificationID: "n1",
				EndpointID: endpoint, SubscriberID: subscriber, At: at})
		}
		if len(events) >= 1000 || i == audience-1 {
			if err := s.Record(ctx, events); err != nil {
				b.Fatal(err)
			}
			events = events[:0]
		}
	}
	if err := s.indexPeople(ctx); err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkReport reads the report of a send to 100,000 browsers
// (GET /notifications/{id} on the embedded default). ns/op is a report.
func BenchmarkReport(b *testing.B) {
	s := sentTo(b, reportAudience)
	for b.Loop() {
		r, err := s.Report(context.Background(), "w1", "n1")
		if err != nil {
			b.Fatal(err)
		}
		if len(r.Devices) != 2 || r.Devices[0].Sent+r.Devices[1].Sent != reportAudience {
			b.Fatalf("report %+v", r.Devices)
		}
	}
}
