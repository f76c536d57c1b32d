package webpushtest_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/relaybell/relaybell/webpush"
	"github.com/relaybell/relaybell/webpush/webpushtest"
)

// leanServer serves h over TLS, its HTTP/2 connections with ServeH2.
func leanServer(t *testing.T, h func(origin string) http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	srv.Config.Handler = h("https://" + srv.Listener.Addr().String())
	srv.EnableHTTP2 = true
	srv.Config.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){
		"h2": func(_ *http.Server, c *tls.Conn, h http.Handler) { webpushtest.ServeH2(c, h) },
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// TestServeH2Pushes: RelayBell's sender pushes to the fake push service
// served by ServeH2, many at once over its HTTP/2 connection: each push
// is checked, decrypted and answered as the browser's behavior says.
func TestServeH2Pushes(t *testing.T) {
	var h *webpushtest.Handler
	srv := leanServer(t, func(origin string) http.Handler {
		h = webpushtest.NewHandler(origin)
		return h
	})
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	client, err := webpush.NewClient(webpush.WithTLSConfig(&tls.Config{RootCAs: roots}))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	key, _ := webpush.GenerateVAPIDKey()
	signer := mustSigner(t, key)

	browsers := make([]*webpushtest.Browser, 5)
	for i := range browsers {
		browsers[i] = h.NewBrowser(key.PublicKey())
	}
	gone := h.NewBrowser(key.PublicKey())
	gone.SetBehavior(webpushtest.Behavior{Status: http.StatusTooManyRequests, RetryAfter: "7"})
	const perBrowser = 40
	var wg sync.WaitGroup
	for _, b := range browsers {
		target, err := webpush.ParseSubscription(b.Subscription())
		if err != nil {
			t.Fatal(err)
		}
		for i := range perBrowser {
			wg.Go(func() {
				msg := webpush.Message{Payload: []byte(b.ID + " " + strconv.Itoa(i)), TTL: 60, Urgency: webpush.UrgencyHigh}
				if res, err := client.Send(context.Background(), target, msg, signer); err != nil || res.StatusCode != http.StatusCreated {
					t.Errorf("Send = %+v, %v", res, err)
				}
			})
		}
	}
	wg.Wait()
	for _, b := range browsers {
		got := h.Received(b.ID)
		if len(got) != perBrowser {
			t.Fatalf("browser %s received %d pushes, want %d", b.ID, len(got), perBrowser)
		}
		seen := map[string]bool{}
		for _, d := range got {
			seen[string(d.Payload)] = true
			if d.Proto != "HTTP/2.0" || d.TTL != 60 || d.Urgency != "high" {
				t.Errorf("delivery %+v", d)
			}
		}
		for i := range perBrowser {
			if !seen[b.ID+" "+strconv.Itoa(i)] {
				t.Errorf("browser %s lacks push %d", b.ID, i)
			}
		}
	}

	target, err := webpush.ParseSubscription(gone.Subscription())
	if err != nil {
		t.Fatal(err)
	}
	res, err := client.Send(context.Background(), target, webpush.Message{TTL: 60}, signer)
	if err != nil || res.StatusCode != http.StatusTooManyRequests || res.RetryAfter != 7*time.Second {
		t.Errorf("a browser answering 429: %+v, %v", res, err)
	}
	sub := gone.Subscription()
	sub.Endpoint = strings.Replace(sub.Endpoint, gone.ID, "nobody", 1)
	if target, err = webpush.ParseSubscription(sub); err != nil {
		t.Fatal(err)
	}
	if res, err := client.Send(context.Background(), target, webpush.Message{TTL: 60}, signer); err != nil || res.StatusCode != http.StatusNotFound {
		t.Errorf("an unknown browser: %+v, %v", res, err)
	}
}

// TestServeH2GoClient: Go's HTTP/2 client gets whole answers, bodies
// larger than a frame and than HTTP/2's default window among them, and
// its request bodies reach the handler whole.
func TestServeH2GoClient(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 20_000) // 320,000 bytes
	srv := leanServer(t, func(string) http.Handler {
		mux := http.NewServeMux()
		mux.HandleFunc("GET /big", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Path", r.URL.Path)
			w.Write(big)
		})
		mux.HandleFunc("POST /echo/{n}", func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			w.Header().Set("X-N", r.PathValue("n"))
			w.WriteHeader(http.StatusAccepted)
			w.Write(body)
		})
		return mux
	})
	hc := srv.Client()
	resp, err := hc.Get(srv.URL + "/big")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.ProtoMajor != 2 || resp.StatusCode != http.StatusOK || !bytes.Equal(body, big) ||
		resp.Header.Get("X-Path") != "/big" || resp.ContentLength != int64(len(big)) {
		t.Fatalf("GET /big: %s %d, %d bytes, header %v, %v", resp.Proto, resp.StatusCode, len(body), resp.Header, err)
	}

	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			sent := bytes.Repeat([]byte{byte('a' + i%26)}, 1000*i)
			resp, err := hc.Post(srv.URL+"/echo/"+strconv.Itoa(i), "text/plain", bytes.NewReader(sent))
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			got, err := io.ReadAll(resp.Body)
			if err != nil || resp.StatusCode != http.StatusAccepted || resp.Header.Get("X-N") != strconv.Itoa(i) || !bytes.Equal(got, sent) {
				t.Errorf("echo %d: %d, %d bytes, %v", i, resp.StatusCode, len(got), err)
			}
		})
	}
	wg.Wait()
	if resp, err := hc.Get(srv.URL + "/nothing"); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /nothing: %v, %v", resp, err)
	}
	// HEAD: the length, no body (a body would be a protocol error to the
	// client).
	if resp, err := hc.Head(srv.URL + "/big"); err != nil || resp.StatusCode != http.StatusOK || resp.ContentLength != int64(len(big)) {
		t.Errorf("HEAD /big: %v, %v", resp, err)
	}
	// A body larger than the server keeps is reset, and the connection
	// still serves the next request.
	if resp, err := hc.Post(srv.URL+"/echo/1", "text/plain", bytes.NewReader(make([]byte, 100_000))); err == nil {
		t.Errorf("a 100,000-byte body: %d, want the stream reset", resp.StatusCode)
		resp.Body.Close()
	}
	if resp, err := hc.Post(srv.URL+"/echo/2", "text/plain", strings.NewReader("after")); err != nil || resp.StatusCode != http.StatusAccepted {
		t.Errorf("after a reset: %v, %v", resp, err)
	}
}

// TestServeH2FlowControl: an answer's body goes out as far as the
// client's stream window allows, the rest once the client opens it.
func TestServeH2FlowControl(t *testing.T) {
	body := bytes.Repeat([]byte("x"), 4000)
	srv := leanServer(t, func(string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(body) })
	})
	conn, err := tls.Dial("tcp", srv.Listener.Addr().String(), &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(conn, conn)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	var block bytes.Buffer
	enc := hpack.NewEncoder(&block)
	for _, f := range [][2]string{{":method", "GET"}, {":scheme", "https"}, {":authority", "push.test"}, {":path", "/x"}} {
		enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	if err := fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1000}); err != nil {
		t.Fatal(err)
	}
	if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block.Bytes(), EndStream: true, EndHeaders: true}); err != nil {
		t.Fatal(err)
	}
	if err := fr.WritePing(false, [8]byte{1}); err != nil {
		t.Fatal(err)
	}
	// readUntil reads frames until stop says so, returning the stream's
	// body bytes and whether it ended.
	var got []byte
	var status string
	readUntil := func(stop func(http2.Frame) bool) (ended bool) {
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				t.Fatal(err)
			}
			switch f := f.(type) {
			case *http2.MetaHeadersFrame:
				status = f.PseudoValue("status")
				ended = ended || f.StreamEnded()
			case *http2.DataFrame:
				got = append(got, f.Data()...)
				ended = ended || f.StreamEnded()
			case *http2.SettingsFrame:
				if !f.IsAck() {
					fr.WriteSettingsAck()
				}
			}
			if stop(f) {
				return ended
			}
		}
	}
	pingAck := func(f http2.Frame) bool { p, ok := f.(*http2.PingFrame); return ok && p.IsAck() }
	if ended := readUntil(pingAck); ended || status != "200" || len(got) != 1000 {
		t.Fatalf("before the window opened: status %q, %d body bytes, ended %v; want 200, 1000, not ended", status, len(got), ended)
	}
	if err := fr.WriteWindowUpdate(1, 3000); err != nil {
		t.Fatal(err)
	}
	ended := readUntil(func(f http2.Frame) bool {
		return f.Header().Flags.Has(http2.FlagDataEndStream) && f.Header().Type == http2.FrameData
	})
	if !ended || !bytes.Equal(got, body) {
		t.Fatalf("after the window opened: %d body bytes, ended %v; want all %d", len(got), ended, len(body))
	}
}

// FuzzServeH2: whatever a client sends after the preface, ServeH2 neither
// panics nor hangs once the client is gone.
func FuzzServeH2(f *testing.F) {
	var seed bytes.Buffer
	fr := http2.NewFramer(&seed, nil)
	fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 10})
	var block bytes.Buffer
	enc := hpack.NewEncoder(&block)
	for _, hf := range [][2]string{{":method", "POST"}, {":scheme", "https"}, {":authority", "a"}, {":path", "/p"}} {
		enc.WriteField(hpack.HeaderField{Name: hf[0], Value: hf[1]})
	}
	fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block.Bytes(), EndHeaders: true})
	fr.WriteData(1, false, []byte("body"))
	fr.WriteWindowUpdate(0, 5)
	fr.WriteData(1, true, nil)
	fr.WriteRSTStream(3, http2.ErrCodeCancel)
	fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 5, BlockFragment: []byte{0xff, 0xff}, EndHeaders: true})
	f.Add(seed.Bytes())
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, in []byte) {
		client, server := net.Pipe()
		done := make(chan struct{})
		go func() {
			defer close(done)
			webpushtest.ServeH2(server, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(w, r.Body)
			}))
		}()
		go io.Copy(io.Discard, client)
		client.SetWriteDeadline(time.Now().Add(5 * time.Second))
		client.Write([]byte(http2.ClientPreface))
		client.Write(in)
		client.Close()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("ServeH2 did not return once the client was gone")
		}
	})
}
