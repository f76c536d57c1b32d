package bench

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/relaybell/relaybell/notification"
	"github.com/relaybell/relaybell/store"
	"github.com/relaybell/relaybell/webpush"
)

// bareNotification is the notification id in the bare sender's payload.
const bareNotification = "00000000-0000-4000-8000-000000000000"

// bare is the bare sender: the project's webpush code alone driving the
// fake push service, as the pusher does, to browsers of a key of its own.
type bare struct {
	push        *client
	client      *webpush.Client // kept across rounds, as a pusher keeps its own
	concurrency int
	targets     []*webpush.Target
	signer      *webpush.Signer
	payload     []byte
}

// newBare creates the bare sender's n browsers on the fake push service
// and its client, concurrency pushes in flight as the pusher's per-origin
// limit; tlsConfig is the client's (nil: the system's roots).
func newBare(push *client, n, concurrency int, tlsConfig *tls.Config) (*bare, error) {
	key, err := webpush.GenerateVAPIDKey()
	if err != nil {
		return nil, err
	}
	raw, err := browsers(push, key.PublicKey(), n)
	if err != nil {
		return nil, err
	}
	b := &bare{push: push, concurrency: concurrency, targets: make([]*webpush.Target, n)}
	for i, r := range raw {
		var s struct {
			Endpoint string `json:"endpoint"`
			Keys     struct {
				P256dh string `json:"p256dh"`
				Auth   string `json:"auth"`
			} `json:"keys"`
		}
		if err := json.Unmarshal(r, &s); err != nil {
			return nil, err
		}
		if b.targets[i], err = webpush.ParseSubscription(webpush.Subscription{Endpoint: s.Endpoint, P256dh: s.Keys.P256dh, Auth: s.Keys.Auth}); err != nil {
			return nil, err
		}
	}
	if b.signer, err = webpush.NewSigner(key, "mailto:bench@relaybell.invalid"); err != nil {
		return nil, err
	}
	// The payload RelayBell sends for the same broadcast.
	content := notification.Content{Title: broadcastTitle, Body: broadcastBody, URL: "https://bench.example"}
	if b.payload, err = json.Marshal(content.Payload(bareNotification, &store.Recipient{Endpoint: store.Endpoint{ID: "00000000-0000-4000-8000-000000000001"}}, "")); err != nil {
		return nil, err
	}
	// The pusher's client: the webpush package's own HTTP/2 connection to a
	// push service that negotiates h2 (the default), net/http's transport
	// for one that speaks HTTP/1.1 only (--push-http1).
	opts := []webpush.Option{webpush.WithMaxPerOrigin(concurrency), webpush.WithHTTP2(true)}
	if tlsConfig != nil {
		opts = append(opts, webpush.WithTLSConfig(tlsConfig))
	}
	b.client, err = webpush.NewClient(opts...)
	return b, err
}

// send pushes to every browser, b.concurrency pushes in flight over one
// client, as the pusher does, and returns how long that took and its pushes
// by HTTP version, as the fake service got them.
func (b *bare) send(ctx context.Context) (time.Duration, map[string]int, error) {
	if err := openWindow(b.push); err != nil {
		return 0, nil, err
	}
	n := len(b.targets)
	start := time.Now()
	var next, failed atomic.Int64
	var wg sync.WaitGroup
	for range b.concurrency {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				res, err := b.client.Send(ctx, b.targets[i], webpush.Message{Payload: b.payload, TTL: 86400, Urgency: webpush.UrgencyNormal}, b.signer)
				if err != nil || res.StatusCode != http.StatusCreated {
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if f := failed.Load(); f > 0 {
		return 0, nil, fmt.Errorf("bare sender: %d pushes failed", f)
	}
	w, err := readWindow(b.push)
	if err == nil {
		err = w.check(n, bareNotification)
	}
	if err != nil {
		return 0, nil, fmt.Errorf("bare sender: %w", err)
	}
	return elapsed, w.Protocols, nil
}
