package api

import (
	"strings"
	"testing"
)

func TestSDKScripts(t *testing.T) {
	h := newHarness(t)
	base := "/api/v1/projects/" + h.site.ProjectID
	want := `const BASE = "http://push.example.com` + base + `";`
	for _, name := range []string{"sdk.js", "sw.js"} {
		r := h.do("GET", base+"/"+name, "", "Host", "push.example.com")
		if r.status != 200 || r.header["Content-Type"] != "text/javascript; charset=utf-8" {
			t.Fatalf("%s: %d %q", name, r.status, r.header["Content-Type"])
		}
		if !strings.HasPrefix(string(r.body), "// RelayBell") || !strings.Contains(string(r.body), want) {
			t.Errorf("%s: no %s in\n%.300s", name, want, r.body)
		}
		etag := r.header["Etag"]
		if len(etag) != 26 || r.header["Cache-Control"] != "public, max-age=300" ||
			r.header["Access-Control-Allow-Origin"] != "*" || r.header["X-Content-Type-Options"] != "nosniff" {
			t.Errorf("%s: headers %v", name, r.header)
		}
		if got, want := r.header["Service-Worker-Allowed"], map[bool]string{true: "/"}[name == "sw.js"]; got != want {
			t.Errorf("%s: Service-Worker-Allowed %q, want %q", name, got, want)
		}
		// Revalidation: the same ETag is 304 without a body; another
		// host renders another script, so another ETag.
		r = h.do("GET", base+"/"+name, "", "Host", "push.example.com", "If-None-Match", `"x", W/`+etag)
		if r.status != 304 || len(r.body) != 0 || r.header["Etag"] != etag {
			t.Errorf("%s revalidated: %d %q %v", name, r.status, r.body, r.header)
		}
		if r = h.do("GET", base+"/"+name, "", "Host", "other.example", "If-None-Match", etag); r.status != 200 || r.header["Etag"] == etag {
			t.Errorf("%s on another host: %d, etag %s", name, r.status, r.header["Etag"])
		}
	}
	expectError(t, h.do("GET", "/api/v1/projects/00000000-0000-4000-8000-000000000000/sdk.js", ""), 404, "not_found", "")
	expectError(t, h.do("POST", base+"/sw.js", ""), 405, "method_not_allowed", `,"message":"POST is not allowed here"`)
}

func TestSDKScriptBase(t *testing.T) {
	f := func(cfg Config, headers []string, want string) {
		t.Helper()
		h := newHarness(t, func(c *testConfig) { c.PublicURL, c.TrustProxy = cfg.PublicURL, cfg.TrustProxy })
		path := "/api/v1/projects/" + h.site.ProjectID
		r := h.do("GET", path+"/sw.js", "", append([]string{"Host", "relaybell.internal:8080"}, headers...)...)
		if line := `const BASE = "` + want + path + `";`; r.status != 200 || !strings.Contains(string(r.body), line) {
			t.Errorf("%+v %v: %d, no %s", cfg, headers, r.status, line)
		}
	}
	f(Config{}, nil, "http://relaybell.internal:8080")
	// X-Forwarded-Proto counts only behind a trusted proxy.
	f(Config{}, []string{"X-Forwarded-Proto", "https"}, "http://relaybell.internal:8080")
	f(Config{TrustProxy: true}, []string{"X-Forwarded-Proto", "https, http"}, "https://relaybell.internal:8080")
	f(Config{TrustProxy: true}, []string{"X-Forwarded-Proto", "gopher"}, "http://relaybell.internal:8080")
	f(Config{PublicURL: "https://push.example.com/"}, nil, "https://push.example.com")
	f(Config{PublicURL: "https://example.com/relaybell", TrustProxy: true}, []string{"X-Forwarded-Proto", "http"}, "https://example.com/relaybell")

	for _, bad := range []string{"push.example.com", "ftp://push.example.com", "https://push.example.com/?a=1", "https://u@push.example.com"} {
		if err := (Config{PublicURL: bad}).Validate(); err == nil {
			t.Errorf("public url %q accepted", bad)
		}
	}
}
