package webpushtest_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relaybell/relaybell/webpush"
	"github.com/relaybell/relaybell/webpush/webpushtest"
)

func mustSigner(t *testing.T, key *webpush.VAPIDKey, opts ...webpush.SignerOption) *webpush.Signer {
	t.Helper()
	s, err := webpush.NewSigner(key, "mailto:ops@relaybell.example", opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestHandlerRefuses(t *testing.T) {
	now := time.Now()
	server := webpushtest.NewServer(webpushtest.WithClock(func() time.Time { return now }))
	defer server.Close()
	key, _ := webpush.GenerateVAPIDKey()
	otherKey, _ := webpush.GenerateVAPIDKey()
	signer := mustSigner(t, key)

	tests := []struct {
		name       string
		signer     *webpush.Signer
		origin     string              // aud to sign for; "" means the server's
		edit       func(*http.Request) // changes the valid request
		unknown    bool                // send to a browser that unsubscribed
		wantStatus int
		wantReason string
	}{
		{name: "valid", wantStatus: 201},
		{name: "unknown subscription", unknown: true, wantStatus: 404, wantReason: "no such subscription"},
		{name: "no authorization", edit: func(r *http.Request) { r.Header.Del("Authorization") }, wantStatus: 401, wantReason: "not vapid"},
		{name: "bearer scheme", edit: func(r *http.Request) { r.Header.Set("Authorization", "Bearer x") }, wantStatus: 401, wantReason: "not vapid"},
		{name: "no k", edit: func(r *http.Request) {
			h, _, _ := strings.Cut(r.Header.Get("Authorization"), ",")
			r.Header.Set("Authorization", h)
		}, wantStatus: 401, wantReason: "lacks t= or k="},
		{name: "tampered signature", edit: func(r *http.Request) {
			h := r.Header.Get("Authorization")
			i := strings.Index(h, ", k=") - 2
			c := byte('A')
			if h[i] == 'A' {
				c = 'B'
			}
			r.Header.Set("Authorization", h[:i]+string(c)+h[i+1:])
		}, wantStatus: 401, wantReason: "signature"},
		{name: "other aud", origin: "https://fcm.googleapis.com", wantStatus: 401, wantReason: "aud"},
		{name: "expired", signer: mustSigner(t, key, webpush.WithClock(func() time.Time { return now.Add(-13 * time.Hour) })),
			wantStatus: 401, wantReason: "expired"},
		{name: "exp beyond 24h", signer: mustSigner(t, key, webpush.WithTokenLifetime(24*time.Hour),
			webpush.WithClock(func() time.Time { return now.Add(time.Hour) })), wantStatus: 401, wantReason: "more than 24h"},
		{name: "other key", signer: mustSigner(t, otherKey), wantStatus: 403, wantReason: "applicationServerKey"},
		{name: "no TTL", edit: func(r *http.Request) { r.Header.Del("TTL") }, wantStatus: 400, wantReason: "TTL"},
		{name: "negative TTL", edit: func(r *http.Request) { r.Header.Set("TTL", "-1") }, wantStatus: 400, wantReason: "TTL"},
		{name: "aesgcm encoding", edit: func(r *http.Request) { r.Header.Set("Content-Encoding", "aesgcm") }, wantStatus: 415, wantReason: "aes128gcm"},
		{name: "bad urgency", edit: func(r *http.Request) { r.Header.Set("Urgency", "asap") }, wantStatus: 400, wantReason: "Urgency"},
		{name: "garbage body", edit: func(r *http.Request) { setBody(r, bytes.Repeat([]byte{7}, 200)) }, wantStatus: 400, wantReason: "decrypting"},
		{name: "tampered body", edit: func(r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			body[len(body)-1] ^= 1
			setBody(r, body)
		}, wantStatus: 400, wantReason: "decrypting"},
		{name: "body over 4096", edit: func(r *http.Request) { setBody(r, make([]byte, 4097)) }, wantStatus: 413, wantReason: "4096"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := server.NewBrowser(key.PublicKey())
			target, err := webpush.ParseSubscription(b.Subscription())
			if err != nil {
				t.Fatal(err)
			}
			s := signer
			if tt.signer != nil {
				s = tt.signer
			}
			req, err := webpush.NewRequest(context.Background(), target, webpush.Message{Payload: []byte("hello")}, s)
			if err != nil {
				t.Fatal(err)
			}
			if tt.origin != "" {
				auth, _ := s.Authorization(tt.origin)
				req.Header.Set("Authorization", auth)
			}
			if tt.edit != nil {
				tt.edit(req)
			}
			if tt.unknown {
				b.Unsubscribe()
			}
			before := len(server.Rejections())

			resp, err := server.HTTPClient().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.wantStatus {
				t.Errorf("status = %d, want %d; rejections %+v", resp.StatusCode, tt.wantStatus, server.Rejections()[before:])
			}
			if tt.wantStatus == 201 {
				if got := b.Received(); len(got) != 1 || string(got[0].Payload) != "hello" || !got[0].Time.Equal(now) {
					t.Errorf("received %+v", got)
				}
				if loc := resp.Header.Get("Location"); !strings.HasPrefix(loc, server.URL+"/message/") {
					t.Errorf("Location = %q", loc)
				}
				return
			}
			rej := server.Rejections()[before:]
			if len(rej) != 1 || rej[0].BrowserID != b.ID || rej[0].Status != tt.wantStatus || !strings.Contains(rej[0].Reason, tt.wantReason) {
				t.Errorf("rejections = %+v, want one for %s with %d containing %q", rej, b.ID, tt.wantStatus, tt.wantReason)
			}
			if len(b.Received()) != 0 {
				t.Errorf("refused push was recorded as delivered")
			}
		})
	}
}

func setBody(r *http.Request, body []byte) {
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	r.GetBody = nil
}

func TestHandlerConcurrentDeliveriesAndWaitFor(t *testing.T) {
	server := webpushtest.NewServer()
	defer server.Close()
	key, _ := webpush.GenerateVAPIDKey()
	signer := mustSigner(t, key)
	client, err := webpush.NewClient(webpush.WithTLSConfig(server.TLSConfig()))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()

	browsers := make([]*webpushtest.Browser, 5)
	for i := range browsers {
		browsers[i] = server.NewBrowser(key.PublicKey())
	}
	const perBrowser = 20
	var wg sync.WaitGroup
	for _, b := range browsers {
		target, err := webpush.ParseSubscription(b.Subscription())
		if err != nil {
			t.Fatal(err)
		}
		for range perBrowser {
			wg.Go(func() {
				if res, err := client.Send(context.Background(), target, webpush.Message{Payload: []byte(b.ID)}, signer); err != nil || res.StatusCode != 201 {
					t.Errorf("Send = %+v, %v", res, err)
				}
			})
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := server.WaitFor(ctx, len(browsers)*perBrowser); err != nil {
		t.Fatalf("WaitFor: %v (count %d)", err, server.Count())
	}
	wg.Wait()
	for _, b := range browsers {
		got := server.Received(b.ID)
		if len(got) != perBrowser {
			t.Errorf("browser %s received %d, want %d", b.ID, len(got), perBrowser)
		}
		for _, d := range got {
			if string(d.Payload) != b.ID {
				t.Errorf("browser %s received %q", b.ID, d.Payload)
			}
		}
	}
	if n := len(server.Deliveries()); n != len(browsers)*perBrowser || server.Count() != n {
		t.Errorf("Deliveries() has %d, Count() = %d", n, server.Count())
	}

	short, cancelShort := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancelShort()
	if err := server.WaitFor(short, len(browsers)*perBrowser+1); err == nil {
		t.Error("WaitFor for more deliveries than sent returned nil")
	}
}

func TestNewHandlerServesAnyServer(t *testing.T) {
	h := webpushtest.NewHandler("https://push.example.net")
	key, _ := webpush.GenerateVAPIDKey()
	b := h.NewBrowser(key.PublicKey())
	if !strings.HasPrefix(b.Endpoint, "https://push.example.net/push/") || b.ID == "" || !strings.HasSuffix(b.Endpoint, b.ID) {
		t.Errorf("endpoint %q, id %q", b.Endpoint, b.ID)
	}
	if sub := b.Subscription(); len(sub.P256dh) != 87 || len(sub.Auth) != 22 {
		t.Errorf("subscription keys %q %q are not raw base64url of 65 and 16 bytes", sub.P256dh, sub.Auth)
	}
	defer func() {
		if recover() == nil {
			t.Error("NewBrowser accepted an invalid applicationServerKey")
		}
	}()
	h.NewBrowser("not-a-key")
}

func TestHandlerSampleAndWindow(t *testing.T) {
	server := webpushtest.NewServer(webpushtest.WithSample(3))
	defer server.Close()
	key, _ := webpush.GenerateVAPIDKey()
	signer := mustSigner(t, key)
	browsers := make([]*webpushtest.Browser, 4)
	for i := range browsers {
		browsers[i] = server.NewBrowser(key.PublicKey())
	}
	send := func(b *webpushtest.Browser, payload string, edit func(*http.Request)) int {
		t.Helper()
		target, err := webpush.ParseSubscription(b.Subscription())
		if err != nil {
			t.Fatal(err)
		}
		req, err := webpush.NewRequest(context.Background(), target, webpush.Message{Payload: []byte(payload), TTL: 60}, signer)
		if err != nil {
			t.Fatal(err)
		}
		if edit != nil {
			edit(req)
		}
		resp, err := server.HTTPClient().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}

	// One at a time, so that the window's pushes 1, 3, 6 and 9 are the
	// ones checked in full and kept.
	for i := range 10 {
		if got := send(browsers[i%4], "p"+string(rune('0'+i)), nil); got != 201 {
			t.Fatalf("push %d: status %d", i, got)
		}
	}
	w := server.Window()
	var sample []string
	for _, d := range w.Sample {
		sample = append(sample, string(d.Payload))
	}
	if w.Pushes != 10 || w.Browsers != 4 || w.Duplicates != 6 || len(w.Protocols) != 1 || w.Protocols["HTTP/2.0"] != 10 ||
		w.First.IsZero() || w.Last.Before(w.First) || strings.Join(sample, " ") != "p0 p2 p5 p8" {
		t.Fatalf("window %+v, sample %q", w, sample)
	}
	if server.Count() != 10 || len(server.Deliveries()) != 4 || len(browsers[0].Received()) != 2 { // p0 and p8
		t.Fatalf("Count %d, Deliveries %d, browser 0 kept %d", server.Count(), len(server.Deliveries()), len(browsers[0].Received()))
	}

	// A new window: its first push is checked in full, and a bad signature
	// refused; the next is not, and one with a bad signature is counted;
	// an Authorization that is not VAPID is refused either way.
	server.OpenWindow()
	tamper := func(r *http.Request) {
		h := r.Header.Get("Authorization")
		i := strings.Index(h, ", k=") - 2
		c := byte('A')
		if h[i] == 'A' {
			c = 'B'
		}
		r.Header.Set("Authorization", h[:i]+string(c)+h[i+1:])
	}
	bearer := func(r *http.Request) { r.Header.Set("Authorization", "Bearer x") }
	for i, tc := range []struct {
		edit func(*http.Request)
		want int
	}{{tamper, 401}, {tamper, 201}, {bearer, 401}, {bearer, 401}} {
		if got := send(browsers[1], "q", tc.edit); got != tc.want {
			t.Errorf("window push %d: status %d, want %d", i+1, got, tc.want)
		}
	}
	w = server.Window()
	if w.Pushes != 1 || w.Browsers != 1 || w.Duplicates != 0 || len(w.Sample) != 0 || server.Count() != 11 || len(server.Deliveries()) != 4 {
		t.Fatalf("second window %+v, Count %d, Deliveries %d", w, server.Count(), len(server.Deliveries()))
	}
}
