package api

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp/fasthttputil"
)

// serveLingering runs the API's server as production does: on a loopback
// TCP listener wrapped by Linger. It returns the base URL.
func serveLingering(t testing.TB, a *API) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := a.Server()
	go srv.Serve(Linger(ln)) //nolint:errcheck // ends with Shutdown
	t.Cleanup(func() { srv.Shutdown() })
	return "http://" + ln.Addr().String()
}

// Sizes of the bodies over the limit: far over it, refused by fasthttp
// from the Content-Length; just over it, read and refused by the handler.
const (
	farOverLimit  = DefaultMaxBodyBytes + DefaultMaxBodyBytes/10 // 1.1 MiB
	justOverLimit = DefaultMaxBodyBytes + 1<<10
)

func tooLargeBody(id string) string {
	return fmt.Sprintf(`{"error":"payload_too_large","message":"the body exceeds %d bytes","request_id":%q}`, DefaultMaxBodyBytes, id)
}

// dialSmallBuffers dials with a small send buffer, so that a body takes
// longer to send than the server takes to answer, as over a real network:
// on loopback the kernel's buffers would otherwise take the whole body at
// once, and the answer would come after the client sent it all.
func dialSmallBuffers(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	if err := c.(*net.TCPConn).SetWriteBuffer(16 << 10); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Issue 21: Go's net/http client read "connection reset by peer" instead of
// the 413 for bodies over the limit, because the server closed the
// connection with the client's bytes unread.
func TestPayloadTooLargeNotResetNetHTTP(t *testing.T) {
	h := newHarness(t)
	key := h.key(nil, nil)
	base := serveLingering(t, h.api)
	f := func(name string, dial func(context.Context, string, string) (net.Conn, error), size int, chunked bool) {
		t.Helper()
		tr := &http.Transport{DialContext: dial}
		defer tr.CloseIdleConnections()
		client := &http.Client{Transport: tr, Timeout: time.Minute}
		body := bytes.Repeat([]byte("x"), size)
		var failed []string
		for i := range 50 {
			id := fmt.Sprintf("%s-%d", name, i)
			var r io.Reader = bytes.NewReader(body)
			if chunked {
				r = struct{ io.Reader }{r} // no length known: sent chunked
			}
			req, err := http.NewRequest("POST", base+"/api/v1/segments", r)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+key)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Request-Id", id)
			resp, err := client.Do(req)
			if err != nil {
				failed = append(failed, err.Error())
				continue
			}
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			answered := resp.Header.Get("X-Request-Id")
			if chunked && answered != "" {
				// fasthttp drops the headers of a request whose chunked
				// body it gave up on: the id is a new one, and the body
				// must carry that one.
				id = answered
			}
			if err != nil || resp.StatusCode != 413 || string(got) != tooLargeBody(id) || answered != id {
				failed = append(failed, fmt.Sprintf("%d %s (X-Request-Id %q), %v", resp.StatusCode, got, answered, err))
			}
		}
		if len(failed) > 0 {
			t.Errorf("%s: %d of 50 posts of %d bytes did not read the 413; first: %s", name, len(failed), size, failed[0])
		}
	}
	f("far-over", dialSmallBuffers, farOverLimit, false)
	f("just-over", dialSmallBuffers, justOverLimit, false)
	f("chunked", dialSmallBuffers, farOverLimit, true)
	// Go's default dialer, as in the report: on loopback the body is
	// mostly in the kernel's buffers before the answer comes.
	f("far-over-default-dialer", nil, farOverLimit, false)
	f("chunked-default-dialer", nil, farOverLimit, true)
}

// curlRuns is how many times curl posts each body.
const curlRuns = 20

func TestPayloadTooLargeNotResetCurl(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl is not installed")
	}
	h := newHarness(t)
	key := h.key(nil, nil)
	base := serveLingering(t, h.api)
	f := func(name string, size int, args ...string) {
		t.Helper()
		file := filepath.Join(t.TempDir(), "body")
		if err := os.WriteFile(file, bytes.Repeat([]byte("x"), size), 0o600); err != nil {
			t.Fatal(err)
		}
		var failed []string
		for i := range curlRuns {
			id := fmt.Sprintf("%s-%d", name, i)
			cmd := exec.Command(curl, append([]string{"-sS", "--max-time", "60",
				"-H", "Authorization: Bearer " + key, "-H", "Content-Type: application/json", "-H", "X-Request-Id: " + id,
				"--data-binary", "@" + file, "-w", "\n%{http_code}", base + "/api/v1/segments"}, args...)...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if want := tooLargeBody(id) + "\n413"; err != nil || string(out) != want {
				failed = append(failed, fmt.Sprintf("%q, %v: %s", out, err, strings.TrimSpace(stderr.String())))
			}
		}
		if len(failed) > 0 {
			t.Errorf("%s: %d of %d posts of %d bytes did not read the 413; first: %s", name, len(failed), curlRuns, size, failed[0])
		}
	}
	f("far-over", farOverLimit) // curl asks Expect: 100-continue for such a body
	f("far-over-no-expect", farOverLimit, "-H", "Expect:")
	f("just-over", justOverLimit)
	// More than lingerBytes: curl stops sending once it has read the 413,
	// before the byte bound cuts it off.
	f("huge", 16<<20)
	f("huge-no-expect", 16<<20, "-H", "Expect:")
}

// lingerPair returns the server side (accepted from l) and the client side
// of a new loopback connection.
func lingerPair(t *testing.T, l *lingerListener) (net.Conn, net.Conn) {
	t.Helper()
	client, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	server, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := server.(*lingerConn); !ok {
		t.Fatalf("accepted a %T, want a *lingerConn", server)
	}
	return server, client
}

func newTestLingerListener(t *testing.T, total, idle time.Duration, maxBytes int64, maxConns int) *lingerListener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return newLingerListener(ln, total, idle, maxBytes, maxConns)
}

// Generous deadlines for what must happen: assertions are about behaviour,
// never about how fast the machine is.
const lingerWait = 20 * time.Second

// waitLingering polls cond until it holds or lingerWait passes.
func waitLingering(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(lingerWait); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("still not %s after %s", what, lingerWait)
		}
	}
}

// expectAnswerThenEOF reads what the server wrote before closing, then the
// FIN of its half-close.
func expectAnswerThenEOF(t *testing.T, client net.Conn, answer string) {
	t.Helper()
	client.SetReadDeadline(time.Now().Add(lingerWait))
	got, err := io.ReadAll(client)
	if err != nil || string(got) != answer {
		t.Fatalf("read %q, %v; want %q then EOF", got, err, answer)
	}
}

// expectCutOff writes to the client side until the server's reset makes a
// write fail.
func expectCutOff(t *testing.T, client net.Conn) {
	t.Helper()
	chunk := make([]byte, 1<<10)
	client.SetWriteDeadline(time.Now().Add(lingerWait))
	for {
		_, err := client.Write(chunk)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("the server still reads after %s", lingerWait)
		}
		if err != nil {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestLingerBoundsConnections(t *testing.T) {
	l := newTestLingerListener(t, time.Hour, time.Hour, 1<<30, 2)
	var clients []net.Conn
	for i := range 3 {
		server, client := lingerPair(t, l)
		if _, err := io.WriteString(server, "answer"); err != nil {
			t.Fatal(err)
		}
		if err := server.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := server.Write([]byte("late")); !errors.Is(err, net.ErrClosed) {
			t.Errorf("write after close: %v, want net.ErrClosed", err)
		}
		expectAnswerThenEOF(t, client, "answer")
		if got, want := len(l.slots), min(i+1, 2); got != want {
			t.Fatalf("after %d closes: %d lingering, want %d", i+1, got, want)
		}
		clients = append(clients, client)
	}
	// Past the bound the third was closed at once: what its client sends
	// now is answered with a reset. The first two still read and discard.
	expectCutOff(t, clients[2])
	for range 3 {
		for _, c := range clients[:2] {
			if _, err := c.Write(make([]byte, 16<<10)); err != nil {
				t.Fatalf("a lingering connection refused bytes: %v", err)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	// A client that closes after the FIN ends its lingering.
	clients[0].Close()
	waitLingering(t, "one lingering", func() bool { return len(l.slots) == 1 })
	clients[1].Close()
	waitLingering(t, "none lingering", func() bool { return len(l.slots) == 0 })
}

func TestLingerCutsOff(t *testing.T) {
	f := func(name string, total, idle time.Duration, maxBytes int64, send bool) {
		t.Helper()
		l := newTestLingerListener(t, total, idle, maxBytes, 4)
		server, client := lingerPair(t, l)
		if err := server.Close(); err != nil {
			t.Fatal(err)
		}
		expectAnswerThenEOF(t, client, "")
		if send {
			expectCutOff(t, client) // the client never closes
		}
		waitLingering(t, name+": none lingering", func() bool { return len(l.slots) == 0 })
	}
	// A client that keeps sending, a little at a time, and never closes.
	f("total time", 300*time.Millisecond, time.Hour, 1<<30, true)
	// A client that sends nothing and never closes.
	f("idle", time.Hour, 200*time.Millisecond, 1<<30, false)
	// A client that sends more than the bound.
	f("bytes", time.Hour, time.Hour, 64<<10, true)
}

// A Close while the server is reading (fasthttp's Shutdown closing an idle
// connection) closes at once and ends the pending Read.
func TestLingerCloseDuringRead(t *testing.T) {
	l := newTestLingerListener(t, time.Hour, time.Hour, 1<<30, 4)
	server, client := lingerPair(t, l)
	read := make(chan error, 1)
	go func() {
		_, err := server.Read(make([]byte, 16))
		read <- err
	}()
	waitLingering(t, "reading", func() bool {
		c := server.(*lingerConn)
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.busy == 1
	})
	if err := server.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-read:
		if err == nil {
			t.Errorf("read after close: no error")
		}
	case <-time.After(lingerWait):
		t.Fatal("the pending read did not end")
	}
	if n := len(l.slots); n != 0 {
		t.Errorf("%d lingering, want 0", n)
	}
	expectAnswerThenEOF(t, client, "")
}

// Connections that are not TCP (an in-memory listener) are served as they
// are.
func TestLingerOnlyTCP(t *testing.T) {
	ln := fasthttputil.NewInmemoryListener()
	defer ln.Close()
	go func() {
		if c, err := ln.Dial(); err == nil {
			defer c.Close()
		}
	}()
	c, err := Linger(ln).Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, ok := c.(*lingerConn); ok {
		t.Errorf("an in-memory connection was wrapped")
	}
}
