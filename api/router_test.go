package api

import (
	"bytes"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"
)

func TestRouterMatch(t *testing.T) {
	rt := &router{}
	h := func(*request) error { return nil }
	rt.add(&route{method: "GET", pattern: "/api/v1/notifications/{id}", handle: h})
	rt.add(&route{method: "GET", pattern: "/api/v1/notifications/export.csv", handle: h})
	rt.add(&route{method: "POST", pattern: "/api/v1/notifications", handle: h})
	rt.add(&route{method: "POST", pattern: "/api/v1/projects/{projectId}/subscriptions", cors: true, handle: h})
	rt.add(&route{method: "DELETE", pattern: "/api/v1/projects/{projectId}/subscriptions", cors: true, handle: h})

	f := func(method, path, wantPattern, wantParams, wantAllowed string) {
		t.Helper()
		r, ps, allowed, _ := rt.match(method, path)
		got := ""
		if r != nil {
			got = r.pattern
		}
		if got != wantPattern {
			t.Errorf("%s %s: route %q, want %q", method, path, got, wantPattern)
		}
		var p []string
		for _, x := range ps {
			p = append(p, x.name+"="+x.value)
		}
		if strings.Join(p, ",") != wantParams {
			t.Errorf("%s %s: params %v, want %s", method, path, p, wantParams)
		}
		if strings.Join(allowed, ",") != wantAllowed {
			t.Errorf("%s %s: allowed %v, want %s", method, path, allowed, wantAllowed)
		}
	}
	f("GET", "/api/v1/notifications/abc", "/api/v1/notifications/{id}", "id=abc", "")
	f("HEAD", "/api/v1/notifications/abc", "/api/v1/notifications/{id}", "id=abc", "")
	f("GET", "/api/v1/notifications/export.csv", "/api/v1/notifications/export.csv", "", "")
	f("GET", "/api/v1/notifications", "", "", "POST")
	f("GET", "/api/v1/notifications/", "", "", "")
	f("GET", "/api/v1/notifications/a/b", "", "", "")
	f("PUT", "/api/v1/projects/p/subscriptions", "", "", "POST,DELETE")
	f("GET", "", "", "", "")
	f("GET", "nope", "", "", "")
}

func TestNotFoundAndMethodNotAllowed(t *testing.T) {
	h := newHarness(t)
	expectError(t, h.do("GET", "/api/v1/nope", ""), 404, "not_found", "")
	expectError(t, h.do("GET", "/nothing-here", ""), 404, "not_found", "")
	r := h.do("DELETE", "/healthz", "")
	expectError(t, r, 405, "method_not_allowed", `,"message":"DELETE is not allowed here"`)
	if r.header["Allow"] != "GET" {
		t.Errorf("Allow %q", r.header["Allow"])
	}
}

func TestRequestID(t *testing.T) {
	h := newHarness(t)
	r := h.do("GET", "/healthz", "", "X-Request-Id", "abc-DEF_123")
	if r.header["X-Request-Id"] != "abc-DEF_123" {
		t.Errorf("sane id not echoed: %q", r.header["X-Request-Id"])
	}
	for _, bad := range []string{strings.Repeat("a", 65), "has space", "semi;colon", "ünï"} {
		r := h.do("GET", "/api/v1/nope", "", "X-Request-Id", bad)
		id := r.header["X-Request-Id"]
		if id == bad || len(id) != 32 {
			t.Errorf("bad id %q: got %q", bad, id)
		}
		expectError(t, r, 404, "not_found", "")
	}
	a, b := h.do("GET", "/healthz", ""), h.do("GET", "/healthz", "")
	if a.header["X-Request-Id"] == b.header["X-Request-Id"] {
		t.Error("generated ids repeat")
	}
}

func TestPanicBecomes500(t *testing.T) {
	h := newHarness(t)
	h.api.router.add(&route{method: "GET", pattern: "/boom", handle: func(*request) error { panic("kaboom") }})
	h.api.router.add(&route{method: "GET", pattern: "/fail", handle: func(*request) error { return errors.New("db down") }})
	expectError(t, h.do("GET", "/boom", ""), 500, "internal_error", "")
	expectError(t, h.do("GET", "/fail", ""), 500, "internal_error", "")
}

func TestPayloadTooLargeInHandler(t *testing.T) {
	h := newHarness(t, func(c *testConfig) { c.MaxBodyBytes = 100 })
	body := `{"name":"` + strings.Repeat("x", 100) + `"}`
	expectError(t, h.do("POST", "/api/v1/notifications", body, auth(h.site.APIKey)...), 413, "payload_too_large",
		`,"message":"the body exceeds 100 bytes"`)
	// The limit applies before authentication and on public routes too.
	expectError(t, h.do("POST", "/api/v1/projects/"+h.site.ProjectID+"/subscriptions", body), 413, "payload_too_large",
		`,"message":"the body exceeds 100 bytes"`)
}

// serveInMemory runs a.Server() on an in-memory listener.
func serveInMemory(t *testing.T, a *API) *fasthttp.Client {
	t.Helper()
	ln := fasthttputil.NewInmemoryListener()
	srv := a.Server()
	go srv.Serve(ln) //nolint:errcheck // ends with the listener
	t.Cleanup(func() { srv.Shutdown(); ln.Close() })
	return &fasthttp.Client{
		Dial:         func(string) (net.Conn, error) { return ln.Dial() },
		ReadTimeout:  5 * time.Second,
		WriteTimeout: 5 * time.Second,
	}
}

func TestServerBodyLimits(t *testing.T) {
	h := newHarness(t)
	c := serveInMemory(t, h.api)
	post := func(n int) (int, []byte, string) {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(resp)
		req.SetRequestURI("http://relaybell/api/v1/notifications")
		req.Header.SetMethod("POST")
		req.Header.Set("Authorization", "Bearer "+h.site.APIKey)
		req.SetBody(bytes.Repeat([]byte(" "), n))
		if err := c.DoTimeout(req, resp, 5*time.Second); err != nil {
			t.Fatalf("%d bytes: %v", n, err)
		}
		return resp.StatusCode(), bytes.Clone(resp.Body()), string(resp.Header.Peek("X-Request-Id"))
	}
	// Just over the limit: answered by the handler.
	status, body, id := post(DefaultMaxBodyBytes + 1)
	if status != 413 || !bytes.Contains(body, []byte(`"error":"payload_too_large"`)) || !bytes.Contains(body, []byte(id)) || id == "" {
		t.Errorf("1 MB + 1: %d %s (id %q)", status, body, id)
	}
	// Exactly the limit: accepted for reading (then it is not JSON).
	status, body, _ = post(DefaultMaxBodyBytes)
	if status != 400 || !bytes.Contains(body, []byte(`"error":"invalid_json"`)) {
		t.Errorf("1 MB: %d %s", status, body)
	}
}

func TestTransportError(t *testing.T) {
	h := newHarness(t)
	var fc fasthttp.RequestCtx
	fc.Request.Header.Set("X-Request-Id", "r1")
	h.api.transportError(&fc, fasthttp.ErrBodyTooLarge)
	want := `{"error":"payload_too_large","message":"the body exceeds 1048576 bytes","request_id":"r1"}`
	if fc.Response.StatusCode() != 413 || string(fc.Response.Body()) != want {
		t.Errorf("%d %s", fc.Response.StatusCode(), fc.Response.Body())
	}
	fc.Response.Reset()
	h.api.transportError(&fc, errors.New("garbage"))
	if fc.Response.StatusCode() != 400 || string(fc.Response.Header.Peek("X-Request-Id")) != "r1" {
		t.Errorf("%d %s", fc.Response.StatusCode(), fc.Response.Body())
	}
}

func TestConfigValidate(t *testing.T) {
	f := func(c Config, ok bool) {
		t.Helper()
		if err := c.Validate(); (err == nil) != ok {
			t.Errorf("%+v: err %v", c, err)
		}
	}
	f(Config{}, true)
	f(Config{AdminToken: "x y"}, false)
	f(Config{MaxBodyBytes: -1}, false)
	f(Config{KeyCacheTTL: -time.Second}, false)
	f(Config{KeyCacheSize: -1}, false)
	f(Config{CountryHeader: "CF-IPCountry"}, true)
	f(Config{CountryHeader: "bad header"}, false)
	if d := (Config{}).withDefaults(); d.MaxBodyBytes != 1<<20 || d.KeyCacheTTL != 30*time.Second || d.KeyCacheSize != 10000 {
		t.Errorf("defaults %+v", d)
	}
}

// A connection that sends no whole request within the read timeout is
// closed without an answer, whether it sent nothing or half a request.
func TestReadTimeoutClosesWithoutAnswer(t *testing.T) {
	h := newHarness(t)
	srv := h.api.Server()
	srv.ReadTimeout = 100 * time.Millisecond
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Shutdown() })
	for _, sent := range []string{"", "GET /v1/notifications HTTP/1.1\r\nHost: x\r\n"} {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(c, sent); err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		got, err := io.ReadAll(c)
		c.Close()
		if err != nil || len(got) != 0 {
			t.Errorf("after %q: read %q, %v; want the connection closed without an answer", sent, got, err)
		}
	}
}
