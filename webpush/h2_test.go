package webpush_test

import (
	"bytes"
	"context"
	"crypto/ecdh"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/relaybell/relaybell/webpush"
	"github.com/relaybell/relaybell/webpush/webpushtest"
)

// The HTTP/2 path against Go's HTTP/2 server: every push over one
// connection, with its headers and body as sent, and the answers (201,
// 429 with Retry-After and a body) as the current client reports them.
func TestH2AgainstGoServer(t *testing.T) {
	var conns atomic.Int32
	type seen struct {
		proto, path, enc, ctype, ttl, auth, urgency, topic string
		length                                             int64
		body                                               int
	}
	var mu sync.Mutex
	var got []seen
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, seen{r.Proto, r.URL.Path, r.Header.Get("Content-Encoding"), r.Header.Get("Content-Type"), r.Header.Get("TTL"),
			r.Header.Get("Authorization"), r.Header.Get("Urgency"), r.Header.Get("Topic"), r.ContentLength, len(body)})
		mu.Unlock()
		if strings.HasSuffix(r.URL.Path, "/busy") {
			w.Header().Set("Retry-After", "120")
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, "slow down")
			return
		}
		w.WriteHeader(http.StatusCreated)
	}))
	srv.EnableHTTP2 = true
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	client, err := webpush.NewClient(webpush.WithTLSConfig(&tls.Config{RootCAs: roots}), webpush.WithMaxPerOrigin(64))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	key, signer := newSigner(t)
	sub := newSubscription(t)
	target := func(path string) *webpush.Target {
		s := sub
		s.Endpoint = srv.URL + path
		tg, err := webpush.ParseSubscription(s)
		if err != nil {
			t.Fatal(err)
		}
		return tg
	}

	const n = 300
	msg := webpush.Message{Payload: []byte("hello"), TTL: 60, Urgency: webpush.UrgencyHigh, Topic: "news"}
	var wg sync.WaitGroup
	var ok atomic.Int32
	for i := range n {
		wg.Go(func() {
			res, err := client.Send(context.Background(), target("/push/"+strconv.Itoa(i)), msg, signer)
			if err != nil || res != (webpush.Result{StatusCode: 201}) {
				t.Errorf("Send %d = %+v, %v", i, res, err)
				return
			}
			ok.Add(1)
		})
	}
	wg.Wait()
	if ok.Load() != n || len(got) != n {
		t.Fatalf("%d sent, server saw %d, want %d", ok.Load(), len(got), n)
	}
	if conns.Load() != 1 {
		t.Errorf("%d connections, want 1", conns.Load())
	}
	auth, _ := signer.Authorization(target("/").Origin())
	paths := map[string]bool{}
	for _, s := range got {
		paths[s.path] = true
		want := seen{"HTTP/2.0", s.path, "aes128gcm", "application/octet-stream", "60", auth, "high", "news", int64(5 + 103), 5 + 103}
		if s != want {
			t.Fatalf("server saw %+v, want %+v", s, want)
		}
	}
	if len(paths) != n {
		t.Errorf("%d distinct paths, want %d", len(paths), n)
	}
	_ = key

	res, err := client.Send(context.Background(), target("/push/busy"), webpush.Message{}, signer)
	if err != nil || res != (webpush.Result{StatusCode: 429, RetryAfter: 120 * time.Second, Body: "slow down"}) {
		t.Errorf("Send = %+v, %v; want 429, 2m0s, slow down", res, err)
	}
}

// An origin that speaks HTTP/1.1 only goes through net/http's transport,
// chosen by ALPN; the HTTP/2 path is used only for h2.
func TestH2ALPNPicksHTTP1(t *testing.T) {
	var protos sync.Map
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		protos.Store(r.Proto, true)
		w.WriteHeader(http.StatusCreated)
	}))
	srv.StartTLS() // HTTP/1.1 only
	t.Cleanup(srv.Close)
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	client, err := webpush.NewClient(webpush.WithTLSConfig(&tls.Config{RootCAs: roots}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	_, signer := newSigner(t)
	sub := newSubscription(t)
	sub.Endpoint = srv.URL + "/push/1"
	target, err := webpush.ParseSubscription(sub)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if res, err := client.Send(context.Background(), target, webpush.Message{}, signer); err != nil || res.StatusCode != 201 {
			t.Fatalf("Send = %+v, %v", res, err)
		}
	}
	var got []string
	protos.Range(func(k, _ any) bool { got = append(got, k.(string)); return true })
	if len(got) != 1 || got[0] != "HTTP/1.1" {
		t.Errorf("protocols %v, want [HTTP/1.1]", got)
	}
}

// The fake push service decrypts and checks what the HTTP/2 path sends,
// many pushes at once over one connection.
func TestH2AgainstFakePushService(t *testing.T) {
	f := newFixture(t, webpush.WithMaxPerOrigin(32))
	const n = 100
	browsers := make([]*webpushtest.Browser, n)
	targets := make([]*webpush.Target, n)
	for i := range n {
		browsers[i], targets[i] = f.browser(t)
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			res, err := f.client.Send(context.Background(), targets[i], webpush.Message{Payload: []byte("push " + strconv.Itoa(i))}, f.signer)
			if err != nil || res.StatusCode != 201 {
				t.Errorf("Send %d = %+v, %v", i, res, err)
			}
		})
	}
	wg.Wait()
	if f.server.Count() != n {
		t.Fatalf("push service got %d, want %d", f.server.Count(), n)
	}
	for i, b := range browsers {
		got := b.Received()
		if len(got) != 1 || string(got[0].Payload) != "push "+strconv.Itoa(i) || got[0].Proto != "HTTP/2.0" {
			t.Errorf("browser %d got %+v", i, got)
		}
	}
}

// badServer is an HTTP/2 server written with http2.Framer that misbehaves
// as each test says: its SETTINGS, its windows, when it answers, resets,
// goes away or stays silent.
type badServer struct {
	t        *testing.T
	ln       net.Listener
	url      string
	roots    *x509.CertPool
	settings []http2.Setting
	// onRequest is called when a request's body is complete (in the
	// connection's reader); default: answer 201.
	onRequest func(c *badConn, id uint32, path string, body []byte)
	// onHeaders, if set, is called when a request's headers arrive; false
	// means the stream is dealt with (reset, ignored) and goes no further.
	onHeaders func(c *badConn, id uint32, path string) bool
	// flow: grant the connection's window back only once nearly used up,
	// and check the client never exceeds a window.
	flow    bool
	noPings bool // never answer a PING

	conns  atomic.Int32
	resets atomic.Int32  // RST_STREAM frames from the client
	closed chan struct{} // one value each time a client closes a connection

	mu         sync.Mutex
	open       int // streams with headers and no answer or reset yet
	maxOpen    int
	limit      int // the MAX_CONCURRENT_STREAMS in force (acknowledged), 0 none
	violations []string
	answered   int
}

func newBadServer(t *testing.T, settings ...http2.Setting) *badServer {
	t.Helper()
	// A certificate for 127.0.0.1, from httptest.
	hs := httptest.NewUnstartedServer(nil)
	hs.StartTLS()
	cert := hs.TLS.Certificates[0]
	roots := x509.NewCertPool()
	roots.AddCert(hs.Certificate())
	hs.Close()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	s := &badServer{t: t, ln: ln, url: "https://" + ln.Addr().String(), roots: roots, settings: settings, closed: make(chan struct{}, 100)}
	for _, st := range settings {
		if st.ID == http2.SettingMaxConcurrentStreams {
			s.limit = int(st.Val)
		}
	}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			s.conns.Add(1)
			go s.serve(conn)
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return s
}

func (s *badServer) violation(what string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.violations = append(s.violations, what)
}

// newSubscription is a browser's subscription (keys of its own) on a
// placeholder endpoint.
func newSubscription(t testing.TB) webpush.Subscription {
	t.Helper()
	browserKey, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	auth := make([]byte, 16)
	rand.Read(auth)
	return webpush.Subscription{
		Endpoint: "https://push.invalid/",
		P256dh:   base64.RawURLEncoding.EncodeToString(browserKey.PublicKey().Bytes()),
		Auth:     base64.RawURLEncoding.EncodeToString(auth),
	}
}

// badConn is one client connection to a badServer.
type badConn struct {
	srv  *badServer
	conn net.Conn
	wmu  sync.Mutex
	fr   *http2.Framer // writes under wmu; reads by serve only
	enc  *hpack.Encoder
	ebuf bytes.Buffer
	// serve's own state
	streams    map[uint32]*badStream
	connWindow int
}

type badStream struct {
	path   string
	body   []byte
	window int
}

func (s *badServer) serve(conn net.Conn) {
	defer func() {
		conn.Close()
		s.closed <- struct{}{}
	}()
	preface := make([]byte, len(http2.ClientPreface))
	if _, err := io.ReadFull(conn, preface); err != nil || string(preface) != http2.ClientPreface {
		return
	}
	c := &badConn{srv: s, conn: conn, streams: map[uint32]*badStream{}, connWindow: 65535}
	c.fr = http2.NewFramer(conn, conn)
	c.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	c.enc = hpack.NewEncoder(&c.ebuf)
	c.write(func() error { return c.fr.WriteSettings(s.settings...) })
	initWindow := 65535
	for _, st := range s.settings {
		if st.ID == http2.SettingInitialWindowSize {
			initWindow = int(st.Val)
		}
	}
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			return
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				c.write(func() error { return c.fr.WriteSettingsAck() })
			}
		case *http2.PingFrame:
			if !f.IsAck() && !s.noPings {
				c.write(func() error { return c.fr.WritePing(true, f.Data) })
			}
		case *http2.MetaHeadersFrame:
			id := f.StreamID
			path := f.PseudoValue("path")
			s.mu.Lock()
			s.open++
			s.maxOpen = max(s.maxOpen, s.open)
			if s.limit > 0 && s.open > s.limit {
				s.violations = append(s.violations, "stream "+strconv.Itoa(int(id))+" opened over the limit of "+strconv.Itoa(s.limit))
			}
			s.mu.Unlock()
			if s.onHeaders != nil && !s.onHeaders(c, id, path) {
				continue
			}
			c.streams[id] = &badStream{path: path, window: initWindow}
			if f.StreamEnded() {
				c.complete(id)
			}
		case *http2.DataFrame:
			st := c.streams[f.StreamID]
			n := int(f.Length)
			if s.flow {
				if st != nil && n > st.window {
					s.violation("stream window exceeded")
				}
				if n > c.connWindow {
					s.violation("connection window exceeded")
				}
				c.connWindow -= n
				// The connection's window is given back only once nearly
				// used up, so the client has to wait for it.
				if c.connWindow < 8000 {
					grant := 65535 - c.connWindow
					c.connWindow += grant
					c.write(func() error { return c.fr.WriteWindowUpdate(0, uint32(grant)) })
				}
			}
			if st == nil {
				continue
			}
			st.window -= n
			st.body = append(st.body, f.Data()...)
			if !f.StreamEnded() && n > 0 {
				st.window += n
				c.write(func() error { return c.fr.WriteWindowUpdate(f.StreamID, uint32(n)) })
			}
			if !s.flow && n > 0 {
				c.write(func() error { return c.fr.WriteWindowUpdate(0, uint32(n)) })
				c.connWindow += n
			}
			if f.StreamEnded() {
				c.complete(f.StreamID)
			}
		case *http2.RSTStreamFrame:
			s.resets.Add(1)
			if _, ok := c.streams[f.StreamID]; ok {
				delete(c.streams, f.StreamID)
				s.mu.Lock()
				s.open--
				s.mu.Unlock()
			}
		}
	}
}

func (c *badConn) complete(id uint32) {
	st := c.streams[id]
	delete(c.streams, id)
	if c.srv.onRequest != nil {
		c.srv.onRequest(c, id, st.path, st.body)
		return
	}
	c.respond(id, 201, nil, "")
}

func (c *badConn) write(f func() error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	f()
}

// respond answers stream id with status, headers and body.
func (c *badConn) respond(id uint32, status int, header []string, body string) {
	c.srv.mu.Lock()
	c.srv.open--
	c.srv.answered++
	c.srv.mu.Unlock()
	c.write(func() error {
		c.ebuf.Reset()
		c.enc.WriteField(hpack.HeaderField{Name: ":status", Value: strconv.Itoa(status)})
		for i := 0; i+1 < len(header); i += 2 {
			c.enc.WriteField(hpack.HeaderField{Name: header[i], Value: header[i+1]})
		}
		if err := c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: c.ebuf.Bytes(), EndHeaders: true, EndStream: body == ""}); err != nil {
			return err
		}
		if body != "" {
			return c.fr.WriteData(id, true, []byte(body))
		}
		return nil
	})
}

// reset resets stream id with code.
func (c *badConn) reset(id uint32, code http2.ErrCode) {
	c.srv.mu.Lock()
	c.srv.open--
	c.srv.mu.Unlock()
	c.write(func() error { return c.fr.WriteRSTStream(id, code) })
}

func (s *badServer) client(t *testing.T, opts ...webpush.Option) *webpush.Client {
	t.Helper()
	client, err := webpush.NewClient(append([]webpush.Option{webpush.WithTLSConfig(&tls.Config{RootCAs: s.roots})}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	return client
}

func (s *badServer) target(t *testing.T, path string) *webpush.Target {
	t.Helper()
	sub := newSubscription(t)
	sub.Endpoint = s.url + path
	tg, err := webpush.ParseSubscription(sub)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

// sendMany sends n pushes at once (payload of size bytes) and returns
// their results and errors.
func sendMany(t *testing.T, client *webpush.Client, s *badServer, n, size int) ([]webpush.Result, []error) {
	t.Helper()
	_, signer := newSigner(t)
	results, errs := make([]webpush.Result, n), make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		target := s.target(t, "/push/"+strconv.Itoa(i))
		wg.Go(func() {
			results[i], errs[i] = client.Send(context.Background(), target, webpush.Message{Payload: bytes.Repeat([]byte{'x'}, size)}, signer)
		})
	}
	wg.Wait()
	return results, errs
}

func (s *badServer) check(t *testing.T) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.violations) > 0 {
		t.Errorf("the client broke the rules: %v", s.violations)
	}
}

func allCreated(t *testing.T, results []webpush.Result, errs []error) {
	t.Helper()
	for i := range results {
		if errs[i] != nil || results[i].StatusCode != 201 {
			t.Errorf("push %d: %+v, %v", i, results[i], errs[i])
		}
	}
}

// A server allowing one stream at a time gets one at a time, all of them
// answered.
func TestH2MaxConcurrentStreams(t *testing.T) {
	s := newBadServer(t, http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: 1})
	results, errs := sendMany(t, s.client(t), s, 20, 10)
	allCreated(t, results, errs)
	s.check(t)
	if s.maxOpen != 1 || s.answered != 20 {
		t.Errorf("at most %d streams at once, %d answered; want 1, 20", s.maxOpen, s.answered)
	}
}

// The stream limit lowered mid-connection is honoured once acknowledged.
func TestH2SettingsChangeMidFlight(t *testing.T) {
	s := newBadServer(t, http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: 8})
	var once sync.Once
	lowered := make(chan struct{})
	s.onRequest = func(c *badConn, id uint32, path string, body []byte) {
		once.Do(func() {
			// Lower the limit to 2, then answer the streams open so far
			// once the client has seen it (its next frame is the ack, which
			// this reader cannot read while here: answer from elsewhere).
			c.write(func() error { return c.fr.WriteSettings(http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: 2}) })
			close(lowered)
		})
		c.respond(id, 201, nil, "")
	}
	client := s.client(t)
	// Streams opened before the client reads the new limit may exceed it;
	// count from the second batch, sent after the change is known.
	results, errs := sendMany(t, client, s, 16, 10)
	allCreated(t, results, errs)
	<-lowered
	s.mu.Lock()
	s.limit, s.maxOpen = 2, 0
	s.mu.Unlock()
	results, errs = sendMany(t, client, s, 40, 10)
	allCreated(t, results, errs)
	s.check(t)
	if s.maxOpen > 2 {
		t.Errorf("%d streams at once after the limit went to 2", s.maxOpen)
	}
	if s.conns.Load() != 1 {
		t.Errorf("%d connections, want 1", s.conns.Load())
	}
}

// Small stream windows and a connection window given back only as
// requests complete: bodies wait for WINDOW_UPDATE and never exceed a
// window.
func TestH2FlowControl(t *testing.T) {
	s := newBadServer(t, http2.Setting{ID: http2.SettingInitialWindowSize, Val: 100}, http2.Setting{ID: http2.SettingMaxFrameSize, Val: 16384})
	s.flow = true
	var bodies atomic.Int64
	s.onRequest = func(c *badConn, id uint32, path string, body []byte) {
		bodies.Add(int64(len(body)))
		c.respond(id, 201, nil, "")
	}
	// 40 bodies of 3,103 bytes: 124 KB, twice the connection's window.
	results, errs := sendMany(t, s.client(t), s, 40, 3000)
	allCreated(t, results, errs)
	s.check(t)
	if bodies.Load() != 40*3103 {
		t.Errorf("server read %d body bytes, want %d", bodies.Load(), 40*3103)
	}
}

// GOAWAY with streams in flight: those up to its last stream id are
// answered on the old connection, the others sent again on a new one;
// none is lost, none processed twice.
func TestH2GoAwayMidFlight(t *testing.T) {
	s := newBadServer(t, http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: 100})
	var mu sync.Mutex
	processed := map[string]int{}
	var firstConn *badConn
	var firstOnce sync.Once
	type held struct {
		id   uint32
		path string
	}
	var first []held
	s.onRequest = func(c *badConn, id uint32, path string, body []byte) {
		firstOnce.Do(func() { firstConn = c })
		if c == firstConn {
			// First connection: hold the first 10 requests, then go away
			// with the 5th as the last; answer up to it, drop the rest.
			first = append(first, held{id, path})
			if len(first) < 10 {
				return
			}
			last := first[4].id
			c.write(func() error { return c.fr.WriteGoAway(last, http2.ErrCodeNo, nil) })
			for _, h := range first {
				if h.id <= last {
					mu.Lock()
					processed[h.path]++
					mu.Unlock()
					c.respond(h.id, 201, nil, "")
				} else {
					c.srv.mu.Lock()
					c.srv.open--
					c.srv.mu.Unlock()
				}
			}
			return
		}
		mu.Lock()
		processed[path]++
		mu.Unlock()
		c.respond(id, 201, nil, "")
	}
	results, errs := sendMany(t, s.client(t), s, 10, 10)
	allCreated(t, results, errs)
	if s.conns.Load() != 2 {
		t.Errorf("%d connections, want 2", s.conns.Load())
	}
	if len(processed) != 10 {
		t.Errorf("%d pushes processed, want 10: %v", len(processed), processed)
	}
	for p, n := range processed {
		if n != 1 {
			t.Errorf("%s processed %d times", p, n)
		}
	}
}

// RST_STREAM: REFUSED_STREAM is sent again and answered; any other code
// is an error for that push alone.
func TestH2ResetStream(t *testing.T) {
	s := newBadServer(t)
	var refused atomic.Int32
	s.onHeaders = func(c *badConn, id uint32, path string) bool {
		switch {
		case strings.HasSuffix(path, "/refuse-once") && refused.Add(1) == 1:
			c.reset(id, http2.ErrCodeRefusedStream)
			return false
		case strings.HasSuffix(path, "/broken"):
			c.reset(id, http2.ErrCodeInternal)
			return false
		}
		return true
	}
	client := s.client(t)
	_, signer := newSigner(t)
	res, err := client.Send(context.Background(), s.target(t, "/push/refuse-once"), webpush.Message{}, signer)
	if err != nil || res.StatusCode != 201 || refused.Load() != 2 {
		t.Errorf("refused once: %+v, %v after %d tries; want 201 after 2", res, err, refused.Load())
	}
	res, err = client.Send(context.Background(), s.target(t, "/push/broken"), webpush.Message{}, signer)
	if err == nil || !strings.Contains(err.Error(), "INTERNAL_ERROR") {
		t.Errorf("reset: %+v, %v; want an error naming INTERNAL_ERROR", res, err)
	}
	// The connection is still good.
	if res, err := client.Send(context.Background(), s.target(t, "/push/ok"), webpush.Message{}, signer); err != nil || res.StatusCode != 201 {
		t.Errorf("after the reset: %+v, %v", res, err)
	}
	if s.conns.Load() != 1 {
		t.Errorf("%d connections, want 1", s.conns.Load())
	}
}

// 429 with Retry-After (seconds or a date) and a body is a Result, as the
// current client reports it.
func TestH2TooManyRequests(t *testing.T) {
	s := newBadServer(t)
	now := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	s.onRequest = func(c *badConn, id uint32, path string, body []byte) {
		switch {
		case strings.HasSuffix(path, "/seconds"):
			c.respond(id, 429, []string{"retry-after", "30"}, "too many")
		case strings.HasSuffix(path, "/date"):
			c.respond(id, 429, []string{"retry-after", now.Add(90 * time.Second).Format(http.TimeFormat)}, "")
		default:
			c.respond(id, 410, nil, strings.Repeat("g", 1000))
		}
	}
	client := s.client(t, webpush.WithClientClock(func() time.Time { return now }))
	_, signer := newSigner(t)
	for path, want := range map[string]webpush.Result{
		"/seconds": {StatusCode: 429, RetryAfter: 30 * time.Second, Body: "too many"},
		"/date":    {StatusCode: 429, RetryAfter: 90 * time.Second},
		"/gone":    {StatusCode: 410, Body: strings.Repeat("g", 256)},
	} {
		res, err := client.Send(context.Background(), s.target(t, path), webpush.Message{}, signer)
		if err != nil || res != want {
			t.Errorf("%s: %+v, %v; want %+v", path, res, err, want)
		}
	}
}

// A server that goes silent (no answer, no PING ack) fails the pushes in
// flight through the ping, well before their timeout.
func TestH2SilentServer(t *testing.T) {
	s := newBadServer(t)
	s.noPings = true
	s.onRequest = func(*badConn, uint32, string, []byte) {} // never answers
	client := s.client(t, webpush.WithTimeout(time.Hour), webpush.WithHTTP2Upkeep(time.Hour, 50*time.Millisecond, 50*time.Millisecond))
	_, errs := sendMany(t, client, s, 3, 10)
	for i, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "ping") {
			t.Errorf("push %d: %v, want the unanswered ping", i, err)
		}
	}
}

// A push with no answer within the timeout fails with a deadline error
// and its stream is reset; the connection stays up for the next.
func TestH2Timeout(t *testing.T) {
	s := newBadServer(t)
	s.onRequest = func(c *badConn, id uint32, path string, body []byte) {
		if strings.HasSuffix(path, "/ok") {
			c.respond(id, 201, nil, "")
		}
	}
	client := s.client(t, webpush.WithTimeout(200*time.Millisecond))
	_, signer := newSigner(t)
	_, err := client.Send(context.Background(), s.target(t, "/push/slow"), webpush.Message{}, signer)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "no answer within 200ms") {
		t.Errorf("Send error %v, want no answer within 200ms (deadline exceeded)", err)
	}
	if res, err := client.Send(context.Background(), s.target(t, "/push/ok"), webpush.Message{}, signer); err != nil || res.StatusCode != 201 {
		t.Errorf("next Send = %+v, %v", res, err)
	}
	if s.resets.Load() != 1 || s.conns.Load() != 1 {
		t.Errorf("%d streams reset on %d connections, want 1 on 1", s.resets.Load(), s.conns.Load())
	}
}

// A canceled context ends its push at once, resetting the stream.
func TestH2ContextCanceled(t *testing.T) {
	s := newBadServer(t)
	arrived := make(chan struct{}, 1)
	s.onRequest = func(*badConn, uint32, string, []byte) { arrived <- struct{}{} }
	client := s.client(t, webpush.WithTimeout(time.Hour))
	_, signer := newSigner(t)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-arrived; cancel() }()
	_, err := client.Send(ctx, s.target(t, "/push/1"), webpush.Message{}, signer)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Send error %v, want canceled", err)
	}
	for deadline := time.Now().Add(10 * time.Second); s.resets.Load() == 0 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if s.resets.Load() != 1 {
		t.Errorf("%d streams reset, want 1", s.resets.Load())
	}
}

// An idle connection is closed after the idle timeout, and the next push
// opens a new one.
func TestH2IdleConnectionClosed(t *testing.T) {
	s := newBadServer(t)
	client := s.client(t, webpush.WithHTTP2Upkeep(50*time.Millisecond, time.Hour, time.Hour))
	_, signer := newSigner(t)
	target := s.target(t, "/push/1")
	if res, err := client.Send(context.Background(), target, webpush.Message{}, signer); err != nil || res.StatusCode != 201 {
		t.Fatalf("Send = %+v, %v", res, err)
	}
	select {
	case <-s.closed:
	case <-time.After(time.Minute):
		t.Fatal("the idle connection was not closed")
	}
	if res, err := client.Send(context.Background(), target, webpush.Message{}, signer); err != nil || res.StatusCode != 201 {
		t.Fatalf("Send after idle = %+v, %v", res, err)
	}
	if s.conns.Load() != 2 {
		t.Errorf("%d connections, want 2", s.conns.Load())
	}
}

// The connection dropped with pushes in flight fails them with an error,
// at once; the next push opens a new connection.
func TestH2ConnectionLost(t *testing.T) {
	s := newBadServer(t)
	var held atomic.Int32
	s.onRequest = func(c *badConn, id uint32, path string, body []byte) {
		if c.srv.conns.Load() == 1 {
			if held.Add(1) == 3 {
				c.conn.Close()
			}
			return
		}
		c.respond(id, 201, nil, "")
	}
	client := s.client(t, webpush.WithTimeout(time.Hour))
	_, errs := sendMany(t, client, s, 3, 10)
	for i, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "connection lost") {
			t.Errorf("push %d: %v, want connection lost", i, err)
		}
	}
	results, errs := sendMany(t, client, s, 3, 10)
	allCreated(t, results, errs)
}

// A dial error is the push's error, as with net/http.
func TestH2DialError(t *testing.T) {
	s := newBadServer(t)
	refused := errors.New("dial refused by the test")
	client := s.client(t, webpush.WithDialContext(func(context.Context, string, string) (net.Conn, error) { return nil, refused }))
	_, errs := sendMany(t, client, s, 2, 10)
	for _, err := range errs {
		if !errors.Is(err, refused) {
			t.Errorf("Send error %v, want the dial's", err)
		}
	}
}
