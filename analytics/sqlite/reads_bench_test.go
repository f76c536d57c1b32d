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
	s, err := Open(ctx, filepath.Join(b.TempDir(), "analytics.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	at := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	const audience = 100_000
	sent := make([]analytics.Event, 0, 1000)
	for i := range audience {
		sent = append(sent, analytics.Event{Kind: analytics.KindSent, WebsiteID: "w1", NotificationID: "n1", EndpointID: fmt.Sprintf("e%d", i),
			SubscriberID: fmt.Sprintf("s%d", i), Device: []string{"desktop", "mobile"}[i%2], Language: "en", At: at})
		if i%10 == 0 {
			sent = append(sent, analytics.Event{Kind: analytics.KindClicked, WebsiteID: "w1", NotificationID: "n1",
				EndpointID: fmt.Sprintf("e%d", i), SubscriberID: fmt.Sprintf("s%d", i), At: at})
		}
		if len(sent) >= 1000 || i == audience-1 {
			if err := s.Record(ctx, sent); err != nil {
				b.Fatal(err)
			}
			sent = sent[:0]
		}
	}
	if err := s.indexPeople(ctx); err != nil {
		b.Fatal(err)
	}

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
		bh := analytics.Behavior{ID: fmt.Sprintf("b%d", i), WebsiteID: "w1", Name: "page.viewed", SubscriberID: fmt.Sprintf("s%d", i%audience),
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
