package webpush_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/relaybell/relaybell/webpush"
	"github.com/relaybell/relaybell/webpush/webpushtest"
)

// fixture is a fake push service with a Client and Signer that reach it.
type fixture struct {
	server *webpushtest.Server
	client *webpush.Client
	key    *webpush.VAPIDKey
	signer *webpush.Signer
}

// newSigner makes a VAPID key and a Signer for it.
func newSigner(t *testing.T) (*webpush.VAPIDKey, *webpush.Signer) {
	t.Helper()
	key, err := webpush.GenerateVAPIDKey()
	if err != nil {
		t.Fatal(err)
	}
	signer, err := webpush.NewSigner(key, "mailto:ops@relaybell.example")
	if err != nil {
		t.Fatal(err)
	}
	return key, signer
}

func newFixture(t *testing.T, opts ...webpush.Option) *fixture {
	t.Helper()
	server := webpushtest.NewServer()
	t.Cleanup(server.Close)
	key, signer := newSigner(t)
	client, err := webpush.NewClient(append([]webpush.Option{webpush.WithTLSConfig(server.TLSConfig())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	return &fixture{server: server, client: client, key: key, signer: signer}
}

// browser subscribes a new browser with the fixture's key and parses it.
func (f *fixture) browser(t *testing.T) (*webpushtest.Browser, *webpush.Target) {
	t.Helper()
	b := f.server.NewBrowser(f.key.PublicKey())
	target, err := webpush.ParseSubscription(b.Subscription())
	if err != nil {
		t.Fatal(err)
	}
	return b, target
}

func TestClientSendDelivers(t *testing.T) {
	f := newFixture(t)
	b, target := f.browser(t)
	msg := webpush.Message{Payload: []byte(samplePayload), TTL: 3600, Urgency: webpush.UrgencyHigh, Topic: "order-1042"}

	res, err := f.client.Send(context.Background(), target, msg, f.signer)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusCreated || res.RetryAfter != 0 {
		t.Errorf("result = %+v, want 201 and no Retry-After", res)
	}
	got := b.Received()
	if len(got) != 1 {
		t.Fatalf("received %d messages, want 1 (rejections: %+v)", len(got), f.server.Rejections())
	}
	d := got[0]
	if string(d.Payload) != samplePayload || d.TTL != 3600 || d.Urgency != "high" || d.Topic != "order-1042" {
		t.Errorf("delivery = %q ttl=%d urgency=%q topic=%q", d.Payload, d.TTL, d.Urgency, d.Topic)
	}
	if d.Claims.Aud != f.server.URL || d.Claims.Sub != "mailto:ops@relaybell.example" || d.Claims.Key != f.key.PublicKey() {
		t.Errorf("claims = %+v", d.Claims)
	}
	if d.Proto != "HTTP/2.0" {
		t.Errorf("proto = %s, want HTTP/2.0", d.Proto)
	}
}

func TestClientSendStatuses(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		name      string
		behavior  webpushtest.Behavior
		forget    bool // unsubscribe the browser first
		want      int
		wantRetry time.Duration
		wantBody  string
	}{
		{name: "accepted", want: 201},
		{name: "unknown subscription", forget: true, want: 404, wantBody: "no such subscription\n"},
		{name: "gone", behavior: webpushtest.Behavior{Status: 410}, want: 410, wantBody: "behavior: answered 410\n"},
		{name: "too large", behavior: webpushtest.Behavior{Status: 413}, want: 413},
		{name: "rate limited", behavior: webpushtest.Behavior{Status: 429, RetryAfter: "120"}, want: 429, wantRetry: 2 * time.Minute},
		{name: "unavailable with date", behavior: webpushtest.Behavior{Status: 503,
			RetryAfter: time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)}, want: 503, wantRetry: time.Hour},
		{name: "server error", behavior: webpushtest.Behavior{Status: 500, RetryAfter: "soon"}, want: 500},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, target := f.browser(t)
			b.SetBehavior(tt.behavior)
			if tt.forget {
				b.Unsubscribe()
			}
			res, err := f.client.Send(context.Background(), target, webpush.Message{Payload: []byte("x")}, f.signer)
			if err != nil {
				t.Fatal(err)
			}
			if res.StatusCode != tt.want {
				t.Errorf("status = %d, want %d (body %q)", res.StatusCode, tt.want, res.Body)
			}
			// An HTTP date has one-second resolution and the clock moved on.
			if res.RetryAfter > tt.wantRetry || res.RetryAfter < tt.wantRetry-2*time.Second {
				t.Errorf("RetryAfter = %v, want %v", res.RetryAfter, tt.wantRetry)
			}
			if tt.wantBody != "" && res.Body != tt.wantBody {
				t.Errorf("body = %q, want %q", res.Body, tt.wantBody)
			}
			if wantDelivered := tt.want == 201; (len(b.Received()) == 1) != wantDelivered {
				t.Errorf("received %d, want delivered=%v", len(b.Received()), wantDelivered)
			}
		})
	}
}

func TestClientSendFailsThenSucceeds(t *testing.T) {
	f := newFixture(t)
	b, target := f.browser(t)
	b.SetBehavior(webpushtest.Behavior{Status: 503, Times: 2})
	var got []int
	for range 3 {
		res, err := f.client.Send(context.Background(), target, webpush.Message{Payload: []byte("x")}, f.signer)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, res.StatusCode)
	}
	if want := []int{503, 503, 201}; !slices.Equal(got, want) {
		t.Errorf("statuses = %v, want %v", got, want)
	}
}

func TestClientSendWrongKeyIsForbidden(t *testing.T) {
	f := newFixture(t)
	other, _ := webpush.GenerateVAPIDKey()
	b := f.server.NewBrowser(other.PublicKey()) // subscribed with another application server key
	target, _ := webpush.ParseSubscription(b.Subscription())
	res, err := f.client.Send(context.Background(), target, webpush.Message{Payload: []byte("x")}, f.signer)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("status = %d, want 403", res.StatusCode)
	}
}

func TestClientBoundsConcurrencyPerOrigin(t *testing.T) {
	f := newFixture(t, webpush.WithMaxPerOrigin(3))
	b, target := f.browser(t)
	b.SetBehavior(webpushtest.Behavior{Delay: 50 * time.Millisecond})
	var wg sync.WaitGroup
	for range 12 {
		wg.Go(func() {
			res, err := f.client.Send(context.Background(), target, webpush.Message{Payload: []byte("x")}, f.signer)
			if err != nil || res.StatusCode != 201 {
				t.Errorf("Send = %+v, %v", res, err)
			}
		})
	}
	wg.Wait()
	if got := f.server.MaxInFlight(); got != 3 {
		t.Errorf("at most %d requests in flight, want 3", got)
	}
	if f.server.Count() != 12 {
		t.Errorf("delivered %d, want 12", f.server.Count())
	}
}

func TestClientSendWaitsForSlotUntilContextDone(t *testing.T) {
	f := newFixture(t, webpush.WithMaxPerOrigin(1))
	b, target := f.browser(t)
	b.SetBehavior(webpushtest.Behavior{Delay: 500 * time.Millisecond})
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.client.Send(context.Background(), target, webpush.Message{}, f.signer)
	}()
	defer func() { <-done }()
	// Let it take the only slot: wait until the push service has it.
	for deadline := time.Now().Add(10 * time.Second); f.server.MaxInFlight() < 1 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := f.client.Send(ctx, target, webpush.Message{}, f.signer)
	// Without the limit the request would reach the push service and time
	// out there, with the same wrapped error; the message and the service's
	// peak concurrency tell the two apart.
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "waiting for a connection slot") {
		t.Errorf("err = %v, want deadline exceeded waiting for a slot", err)
	}
	if got := f.server.MaxInFlight(); got != 1 {
		t.Errorf("push service saw %d requests at once, want 1", got)
	}
}

func TestClientTimeout(t *testing.T) {
	f := newFixture(t, webpush.WithTimeout(100*time.Millisecond))
	b, target := f.browser(t)
	b.SetBehavior(webpushtest.Behavior{Delay: 2 * time.Second})
	start := time.Now()
	_, err := f.client.Send(context.Background(), target, webpush.Message{}, f.signer)
	if err == nil {
		t.Fatal("Send succeeded, want a timeout")
	}
	if elapsed := time.Since(start); elapsed > time.Second {
		t.Errorf("Send took %v with a 100ms timeout", elapsed)
	}
}

func TestClientDialContext(t *testing.T) {
	var dials atomic.Int32
	refuse := errors.New("address refused by filter")
	f := newFixture(t, webpush.WithDialContext(func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		if !strings.HasPrefix(addr, "127.0.0.1:") {
			return nil, refuse
		}
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}))
	_, target := f.browser(t)
	for range 5 {
		if res, err := f.client.Send(context.Background(), target, webpush.Message{}, f.signer); err != nil || res.StatusCode != 201 {
			t.Fatalf("Send = %+v, %v", res, err)
		}
	}
	if n := dials.Load(); n != 1 {
		t.Errorf("dialed %d times for 5 sends over HTTP/2, want 1", n)
	}

	elsewhere, _ := webpush.ParseSubscription(webpush.Subscription{Endpoint: "https://localhost:1/push/x", P256dh: uaPublic, Auth: uaAuth})
	if _, err := f.client.Send(context.Background(), elsewhere, webpush.Message{}, f.signer); !errors.Is(err, refuse) {
		t.Errorf("err = %v, want the dial filter's error", err)
	}
}

func TestNewClientValidates(t *testing.T) {
	for _, opt := range []webpush.Option{webpush.WithMaxPerOrigin(0), webpush.WithTimeout(0), webpush.WithDialContext(nil)} {
		if _, err := webpush.NewClient(opt); err == nil {
			t.Error("NewClient accepted an invalid option")
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	f := func(v string, want time.Duration) {
		t.Helper()
		if got := webpush.ParseRetryAfter(v, now); got != want {
			t.Errorf("ParseRetryAfter(%q) = %v, want %v", v, got, want)
		}
	}
	f("", 0)
	f("0", 0)
	f("30", 30*time.Second)
	f("-5", 0)
	f("1.5", 0)
	f("tomorrow", 0)
	f("99999999999999999", time.Duration(1<<63-1)/time.Second*time.Second)
	f("Sun, 01 Mar 2026 12:02:00 GMT", 2*time.Minute)
	f("Sunday, 01-Mar-26 12:00:10 GMT", 10*time.Second) // RFC 850
	f("Sun Mar  1 13:00:00 2026", time.Hour)            // asctime
	f("Sun, 01 Mar 2026 11:00:00 GMT", 0)               // past
}

// countDials returns a dial option that counts its dials and fails the
// ones fail says to.
func countDials(dials *atomic.Int32, fail func(n int32) bool) webpush.Option {
	return webpush.WithDialContext(func(ctx context.Context, network, addr string) (net.Conn, error) {
		if n := dials.Add(1); fail != nil && fail(n) {
			return nil, errors.New("dial refused by the test")
		}
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	})
}

// sendAtOnce sends n pushes to target at once and returns how many had a
// 201.
func sendAtOnce(f *fixture, target *webpush.Target, n int) int {
	var ok atomic.Int32
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			if res, err := f.client.Send(context.Background(), target, webpush.Message{}, f.signer); err == nil && res.StatusCode == 201 {
				ok.Add(1)
			}
		})
	}
	wg.Wait()
	return int(ok.Load())
}

// A cold origin gets one connection, shared over HTTP/2 by the requests
// that waited for it; and again once its connections went idle. (200 at
// once: the test server allows 250 streams a connection, and requests past
// that open new connections, as they must.)
func TestClientColdOriginDialsOnce(t *testing.T) {
	var dials atomic.Int32
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	var clock atomic.Pointer[time.Time]
	clock.Store(&now)
	f := newFixture(t, webpush.WithMaxPerOrigin(256), countDials(&dials, nil), webpush.WithProbeWait(time.Minute),
		webpush.WithClientClock(func() time.Time { return *clock.Load() }))
	_, target := f.browser(t)
	if got := sendAtOnce(f, target, 200); got != 200 {
		t.Fatalf("%d of 200 delivered", got)
	}
	if n := dials.Load(); n != 1 {
		t.Errorf("200 sends at once to a new origin dialed %d times, want 1", n)
	}

	// Its connections closed by the server, and the idle time passed: cold
	// again. (Not Client.Close, which makes the origin cold by itself.)
	f.server.CloseClientConnections()
	time.Sleep(50 * time.Millisecond) // for the client to see the close: a request sent on the dying connection fails
	later := now.Add(91 * time.Second)
	clock.Store(&later)
	if got := sendAtOnce(f, target, 64); got != 64 {
		t.Fatalf("%d of 64 delivered", got)
	}
	if n := dials.Load(); n != 2 {
		t.Errorf("after the idle time, dialed %d times in all, want 2", n)
	}
}

// When the request probing a cold origin fails, the ones waiting for it go
// out then, not after the probe wait.
func TestClientColdOriginProbeFails(t *testing.T) {
	var dials atomic.Int32
	f := newFixture(t, webpush.WithMaxPerOrigin(8), webpush.WithProbeWait(time.Minute),
		countDials(&dials, func(n int32) bool {
			if n == 1 {
				time.Sleep(200 * time.Millisecond) // the others are waiting by then
			}
			return n == 1
		}))
	_, target := f.browser(t)
	start := time.Now()
	if got := sendAtOnce(f, target, 8); got != 7 {
		t.Errorf("%d of 8 delivered, want all but the probe", got)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("took %s: the waiters were not released when the probe failed", took)
	}
	if f.server.Count() != 7 {
		t.Errorf("the push service got %d, want 7", f.server.Count())
	}
}

// An origin that answers over HTTP/1.1 shares no connection, so its
// requests don't wait for a probe: a slow answer holds up no other.
func TestClientHTTP1OriginIsNotProbed(t *testing.T) {
	srv := httptest.NewUnstartedServer(nil)
	h := webpushtest.NewHandler("https://" + srv.Listener.Addr().String())
	srv.Config.Handler = h
	srv.StartTLS() // HTTP/1.1 only
	t.Cleanup(srv.Close)
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	client, err := webpush.NewClient(webpush.WithTLSConfig(&tls.Config{RootCAs: roots}), webpush.WithProbeWait(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	key, signer := newSigner(t)
	target := func(b *webpushtest.Browser) *webpush.Target {
		tg, err := webpush.ParseSubscription(b.Subscription())
		if err != nil {
			t.Fatal(err)
		}
		return tg
	}
	slowBrowser, fastBrowser := h.NewBrowser(key.PublicKey()), h.NewBrowser(key.PublicKey())
	slow, fast := target(slowBrowser), target(fastBrowser)
	if res, err := client.Send(context.Background(), slow, webpush.Message{}, signer); err != nil || res.StatusCode != 201 {
		t.Fatalf("Send = %+v, %v", res, err)
	}
	client.Close() // cold again
	slowBrowser.SetBehavior(webpushtest.Behavior{Delay: 2 * time.Second})
	done := make(chan struct{})
	go func() {
		defer close(done)
		client.Send(context.Background(), slow, webpush.Message{}, signer)
	}()
	time.Sleep(100 * time.Millisecond) // the slow one is out
	start := time.Now()
	if res, err := client.Send(context.Background(), fast, webpush.Message{}, signer); err != nil || res.StatusCode != 201 {
		t.Fatalf("Send = %+v, %v", res, err)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("the second request took %s: it waited for the slow one", took)
	}
	<-done
}
