package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/relaybell/relaybell/pusher"
	"github.com/relaybell/relaybell/server"
	"github.com/relaybell/relaybell/webpush"
	"github.com/relaybell/relaybell/webpush/webpushtest"
)

// Options describe one run.
type Options struct {
	// Audience is how many browsers subscribe (default 10,000).
	Audience int
	// Concurrency is the pushes in flight, for RelayBell's pusher and the
	// bare sender alike (default 256).
	Concurrency int
	// DataDir holds the embedded storage; a temporary directory by default.
	DataDir string
	Logger  *slog.Logger
}

// Result is what a run measured.
type Result struct {
	Audience       int
	EndToEnd       time.Duration // POST to the last push received
	FirstPush      time.Duration // POST to the first push received
	PushesPerSec   float64
	Bare           time.Duration // the bare sender, same audience
	BarePerSec     float64
	Ratio          float64 // PushesPerSec / BarePerSec
	PeakHeapMiB    float64 // peak Go heap in use during the broadcast
	SubscribeTotal time.Duration
}

func (r Result) String() string {
	return fmt.Sprintf("audience %d: end-to-end %.0f pushes/s (%v, first push after %v), bare sender %.0f pushes/s (%v), ratio %.2f, peak heap %.1f MiB",
		r.Audience, r.PushesPerSec, r.EndToEnd.Round(time.Millisecond), r.FirstPush.Round(time.Millisecond),
		r.BarePerSec, r.Bare.Round(time.Millisecond), r.Ratio, r.PeakHeapMiB)
}

// Embedded runs a broadcast on the embedded default in this process.
func Embedded(ctx context.Context, opts Options) (Result, error) {
	if opts.Audience <= 0 {
		opts.Audience = 10000
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = 256
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.DataDir == "" {
		dir, err := os.MkdirTemp("", "relaybell-bench-")
		if err != nil {
			return Result{}, err
		}
		defer os.RemoveAll(dir)
		opts.DataDir = dir
	}
	push := webpushtest.NewServer()
	defer push.Close()
	u, _ := url.Parse(push.URL)
	const token = "bench-admin-token"
	cfg := server.Config{
		Roles: server.All, HTTPAddr: "127.0.0.1:0", DataDir: opts.DataDir, AdminToken: token,
		PushAllowHosts: u.Host, NodeName: "bench", ShutdownGrace: 5 * time.Second,
		Pusher: pusher.Config{TLSConfig: push.TLSConfig(), Concurrency: opts.Concurrency, MaxPerOrigin: opts.Concurrency},
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	srv, err := server.New(ctx, cfg, opts.Logger)
	if err != nil {
		return Result{}, err
	}
	defer srv.Close()
	addr, err := srv.Listen()
	if err != nil {
		return Result{}, err
	}
	served := make(chan error, 1)
	go func() { served <- srv.Run(ctx) }()
	defer func() { cancel(); <-served }()
	c := &client{base: "http://" + addr.String()}

	var site struct {
		ProjectID      string `json:"projectId"`
		APIKey         string `json:"apiKey"`
		VAPIDPublicKey string `json:"vapidPublicKey"`
	}
	if err := c.do("POST", "/admin/v1/websites", token, map[string]any{"name": "Bench", "url": "https://bench.example"}, 201, &site); err != nil {
		return Result{}, err
	}
	res := Result{Audience: opts.Audience}
	start := time.Now()
	browsers, err := subscribe(ctx, c, push, site.ProjectID, site.VAPIDPublicKey, opts.Audience)
	if err != nil {
		return Result{}, err
	}
	res.SubscribeTotal = time.Since(start)

	peak := watchHeap()
	start = time.Now()
	if err := c.do("POST", "/api/v1/notifications", site.APIKey, map[string]any{"title": "Bench", "body": "A broadcast"}, 202, nil); err != nil {
		return Result{}, err
	}
	if err := push.WaitFor(ctx, 1); err != nil {
		return Result{}, err
	}
	res.FirstPush = time.Since(start)
	if err := push.WaitFor(ctx, opts.Audience); err != nil {
		return Result{}, err
	}
	res.EndToEnd = time.Since(start)
	res.PeakHeapMiB = peak()
	res.PushesPerSec = float64(opts.Audience) / res.EndToEnd.Seconds()

	key, err := webpush.GenerateVAPIDKey()
	if err != nil {
		return Result{}, err
	}
	if res.Bare, err = bareSender(ctx, push, key, browsers, opts.Concurrency); err != nil {
		return Result{}, err
	}
	res.BarePerSec = float64(opts.Audience) / res.Bare.Seconds()
	res.Ratio = res.PushesPerSec / res.BarePerSec
	return res, nil
}

// subscribe registers n browsers through the SDK route, a few at a time.
func subscribe(ctx context.Context, c *client, push *webpushtest.Server, projectID, vapid string, n int) ([]*webpushtest.Browser, error) {
	browsers := make([]*webpushtest.Browser, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n && ctx.Err() == nil; i = int(next.Add(1) - 1) {
				b := push.NewBrowser(vapid)
				sub := b.Subscription()
				body := map[string]any{"endpoint": sub.Endpoint, "keys": map[string]string{"p256dh": sub.P256dh, "auth": sub.Auth}, "language": "en"}
				if err := c.do("POST", "/api/v1/projects/"+projectID+"/subscriptions", "", body, 201, nil); err != nil {
					errs <- err
					return
				}
				browsers[i] = b
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return nil, err
	}
	return browsers, ctx.Err()
}

// bareSender pushes one message to every browser with the pusher's webpush
// code alone: parse, encrypt, sign (cached), send; the same concurrency.
func bareSender(ctx context.Context, push *webpushtest.Server, key *webpush.VAPIDKey, browsers []*webpushtest.Browser, concurrency int) (time.Duration, error) {
	// The browsers subscribed with the website's key; re-key them to the
	// bare sender's so the fake push service accepts its signatures.
	targets := make([]*webpush.Target, len(browsers))
	for i := range browsers {
		b := push.NewBrowser(key.PublicKey())
		t, err := webpush.ParseSubscription(b.Subscription())
		if err != nil {
			return 0, err
		}
		targets[i] = t
	}
	client, err := webpush.NewClient(webpush.WithTLSConfig(push.TLSConfig()), webpush.WithMaxPerOrigin(concurrency))
	if err != nil {
		return 0, err
	}
	defer client.Close()
	signer, err := webpush.NewSigner(key, "mailto:bench@relaybell.invalid")
	if err != nil {
		return 0, err
	}
	before := push.Count()
	payload := []byte(`{"notificationId":"00000000-0000-4000-8000-000000000000","endpointId":"00000000-0000-4000-8000-000000000001","title":"Bench","body":"A broadcast","url":"https://bench.example","icon":"","image":"","badge":"","actions":[],"requireInteraction":false,"tag":"","variant":null}`)
	start := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Int64
	for range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < len(targets); i = int(next.Add(1) - 1) {
				res, err := client.Send(ctx, targets[i], webpush.Message{Payload: payload, Urgency: webpush.UrgencyNormal}, signer)
				if err != nil || res.StatusCode != http.StatusCreated {
					failed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if n := failed.Load(); n > 0 {
		return 0, fmt.Errorf("bare sender: %d pushes failed", n)
	}
	if got := push.Count() - before; got != len(targets) {
		return 0, fmt.Errorf("bare sender: push service got %d pushes, want %d", got, len(targets))
	}
	return elapsed, nil
}

// watchHeap samples the heap until the returned function is called, which
// reports the peak in MiB.
func watchHeap() func() float64 {
	var peak atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	return func() float64 {
		close(stop)
		<-done
		return float64(peak.Load()) / (1 << 20)
	}
}

type client struct{ base string }

func (c *client) do(method, path, token string, body any, want int, out any) error {
	data, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequest(method, c.base+path, bytes.NewReader(data))
	if err != nil {
		return err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, answer)
	}
	if out != nil {
		return json.Unmarshal(answer, out)
	}
	return nil
}
