//go:build unix

package pusher

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/relaybell/relaybell/analytics"
	"github.com/relaybell/relaybell/cputime"
	"github.com/relaybell/relaybell/netpolicy"
	"github.com/relaybell/relaybell/notification"
	"github.com/relaybell/relaybell/store"
	"github.com/relaybell/relaybell/webpush"
)

// BenchmarkPushOverhead measures what the pusher adds to the webpush code
// it drives: bare sends pushes with webpush.Client alone, 256 in flight,
// as the bench command's bare sender does; pusher pushes the same browsers
// in batches of 500, four batches at once, through Push, with a store and
// an analytics store that keep nothing. Both push to a push service that
// only reads the request and answers 201 (plain HTTP/1.1 on loopback, in
// this process). cpu-ns/push is the process's CPU time per push, push
// service included: the difference is the pusher's own cost (batches,
// payloads, parsing each subscription, the recorder). ns/push is the wall
// time; the pusher's includes each round's wait for its outcomes to be
// recorded (RecordAfter).
func BenchmarkPushOverhead(b *testing.B) {
	var pushes atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		pushes.Add(1)
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	key, err := webpush.GenerateVAPIDKey()
	if err != nil {
		b.Fatal(err)
	}
	const n = 2000
	recipients := make([]store.Recipient, n)
	targets := make([]*webpush.Target, n)
	for i := range recipients {
		sub := benchSubscription(b, srv.URL+"/push/"+fmt.Sprint(i))
		recipients[i] = store.Recipient{
			Endpoint:   store.Endpoint{ID: fmt.Sprintf("00000000-0000-4000-8000-%012d", i), URL: sub.Endpoint, P256dh: sub.P256dh, Auth: sub.Auth, Device: "desktop"},
			Subscriber: store.Subscriber{ID: fmt.Sprintf("10000000-0000-4000-8000-%012d", i), Language: "en"},
		}
		if targets[i], err = webpush.ParseSubscription(sub); err != nil {
			b.Fatal(err)
		}
	}
	content := notification.Content{Title: "Bench", Body: "A broadcast", URL: "https://bench.example", TTL: 86400}
	raw, _ := json.Marshal(content)
	st := &nullStore{
		site: store.Website{ID: "site", VAPIDPrivateKey: key.PrivateKey()},
		n:    store.Notification{ID: "00000000-0000-4000-8000-00000000000a", WebsiteID: "site", Content: raw},
	}
	allow, _ := netpolicy.ParseAllowList(u.Host)

	b.Run("bare", func(b *testing.B) {
		c, err := webpush.NewClient(webpush.WithMaxPerOrigin(256), webpush.WithDialContext((&netpolicy.Dialer{Allow: allow}).DialContext))
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		signer, err := webpush.NewSigner(key, "mailto:bench@relaybell.invalid")
		if err != nil {
			b.Fatal(err)
		}
		payload, _ := json.Marshal(content.Payload(st.n.ID, &recipients[0], ""))
		b.ReportAllocs()
		cpu, before := cputime.Process(), pushes.Load()
		for b.Loop() {
			var next atomic.Int64
			var wg sync.WaitGroup
			for range 256 {
				wg.Go(func() {
					for i := next.Add(1) - 1; i < n; i = next.Add(1) - 1 {
						res, err := c.Send(context.Background(), targets[i], webpush.Message{Payload: payload, TTL: 86400, Urgency: webpush.UrgencyNormal}, signer)
						if err != nil || res.StatusCode != http.StatusCreated {
							b.Errorf("push: %d, %v", res.StatusCode, err)
							return
						}
					}
				})
			}
			wg.Wait()
		}
		reportPerPush(b, cpu, n)
		if got := pushes.Load() - before; got != int64(b.N*n) {
			b.Fatalf("%d pushes arrived, want %d", got, b.N*n)
		}
	})

	b.Run("pusher", func(b *testing.B) {
		p, err := New(Config{Allow: allow}, st, nullAnalytics{}, slog.New(slog.DiscardHandler), nil)
		if err != nil {
			b.Fatal(err)
		}
		defer p.Close()
		b.ReportAllocs()
		cpu, before := cputime.Process(), pushes.Load()
		for b.Loop() {
			var wg sync.WaitGroup
			for i := 0; i < n; i += 500 {
				wg.Go(func() {
					if err := p.Push(context.Background(), Batch{NotificationID: st.n.ID, WebsiteID: "site", Recipients: recipients[i : i+500]}); err != nil {
						b.Error(err)
					}
				})
			}
			wg.Wait()
		}
		reportPerPush(b, cpu, n)
		if got := pushes.Load() - before; got != int64(b.N*n) {
			b.Fatalf("%d pushes arrived, want %d", got, b.N*n)
		}
	})
}

// reportPerPush reports the wall time and the process's CPU time (both
// sides, push service included) per push since cpu was read.
func reportPerPush(b *testing.B, cpu time.Duration, n int) {
	pushes := float64(b.N * n)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/pushes, "ns/push")
	b.ReportMetric(float64((cputime.Process()-cpu).Nanoseconds())/pushes, "cpu-ns/push")
}

// benchSubscription is a browser's subscription to endpoint with fresh keys.
func benchSubscription(b *testing.B, endpoint string) webpush.Subscription {
	b.Helper()
	ua, err := webpush.GenerateVAPIDKey() // any P-256 key pair will do for a browser
	if err != nil {
		b.Fatal(err)
	}
	return webpush.Subscription{Endpoint: endpoint, P256dh: ua.PublicKey(), Auth: "AAAAAAAAAAAAAAAAAAAAAA"}
}

// nullStore serves one website and notification and records nothing:
// every endpoint is undelivered, every push again.
type nullStore struct {
	site store.Website
	n    store.Notification
}

func (s *nullStore) Website(context.Context, string) (store.Website, error) { return s.site, nil }
func (s *nullStore) NotificationByID(context.Context, string) (store.Notification, error) {
	return s.n, nil
}
func (s *nullStore) Undelivered(_ context.Context, _ string, endpoints []store.ShardEndpoint) ([]string, error) {
	ids := make([]string, len(endpoints))
	for i, e := range endpoints {
		ids[i] = e.ID
	}
	return ids, nil
}
func (s *nullStore) RecordResults(context.Context, string, []store.PushResult) error { return nil }

// nullAnalytics keeps no events.
type nullAnalytics struct{ analytics.Store }

func (nullAnalytics) Record(context.Context, []analytics.Event) error { return nil }
func (nullAnalytics) Close() error                                    { return nil }
