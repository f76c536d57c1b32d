package api

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestHealthAndReadiness(t *testing.T) {
	h := newHarness(t)
	f := func(method, path string, status int, body string) {
		t.Helper()
		r := h.do(method, path, "")
		if r.status != status || string(r.body) != body || r.header["X-Request-Id"] == "" {
			t.Errorf("%s %s: %d %q", method, path, r.status, r.body)
		}
	}
	f("GET", "/healthz", 200, `{"status":"ok"}`)
	f("HEAD", "/healthz", 200, `{"status":"ok"}`) // the server drops HEAD bodies on the wire
	f("GET", "/readyz", 503, `{"status":"not_ready"}`)
	h.api.SetReady(true)
	f("GET", "/readyz", 200, `{"status":"ok"}`)
	h.api.SetReady(false)
	f("GET", "/readyz", 503, `{"status":"not_ready"}`)
}

func TestMetrics(t *testing.T) {
	h := newHarness(t)
	h.do("GET", "/healthz", "")
	h.do("GET", "/api/v1/notifications", "")
	h.do("GET", "/api/v1/notifications/"+strings.Repeat("x", 10), "", auth(h.site.APIKey)...)
	h.do("GET", "/no/such/route", "")
	text := h.metricsText()
	if r := h.do("GET", "/metrics", ""); r.header["X-Request-Id"] == "" || !strings.HasPrefix(r.header["Content-Type"], "text/plain") {
		t.Errorf("metrics headers %v", r.header)
	}
	for _, want := range []string{
		`relaybell_api_requests_total{code="200",method="GET",route="/healthz"} 1`,
		`relaybell_api_requests_total{code="401",method="GET",route="/api/v1/notifications"} 1`,
		`relaybell_api_requests_total{code="404",method="GET",route="/api/v1/notifications/{id}"} 1`,
		`relaybell_api_requests_total{code="404",method="GET",route="unmatched"} 1`,
		`relaybell_api_request_duration_seconds_bucket{method="GET",route="/healthz",le="+Inf"} 1`,
		`relaybell_api_key_cache_total{result="miss"} 1`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	// Registered on the Registerer given to New.
	if mfs, err := h.reg.Gather(); err != nil || len(mfs) == 0 {
		t.Errorf("registry: %d families, %v", len(mfs), err)
	}
	// A Registerer that cannot be read back still gets the metrics, and
	// /metrics serves a registry of the API's own.
	reg := prometheus.NewRegistry()
	st, an := openStores(t)
	a, err := newAPI(t, testConfig{}, st, an, nil, nil, prometheus.WrapRegistererWithPrefix("", reg))
	if err != nil {
		t.Fatal(err)
	}
	serveOnce(a.Handler(), "GET", "/healthz", "")
	r := serveOnce(a.Handler(), "GET", "/metrics", "")
	if !strings.Contains(string(r.body), `relaybell_api_requests_total{code="200",method="GET",route="/healthz"} 1`) {
		t.Errorf("own registry: %s", r.body)
	}
	if _, err := newAPI(t, testConfig{}, st, an, nil, nil, reg); err == nil {
		t.Error("registering twice on one registry did not fail")
	}
	if _, err := newAPI(t, testConfig{}, st, an, nil, nil, nil); err != nil {
		t.Errorf("nil registerer: %v", err)
	}
}

func TestOpenAPIDocument(t *testing.T) {
	h := newHarness(t)
	r := h.do("GET", "/api/v1/openapi.json", "")
	if r.status != 200 || r.header["Content-Type"] != "application/json" {
		t.Fatalf("%d %v", r.status, r.header)
	}
	var doc struct {
		OpenAPI string `json:"openapi"`
		Info    struct {
			Version string `json:"version"`
		} `json:"info"`
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			Schemas   map[string]json.RawMessage `json:"schemas"`
			Responses map[string]json.RawMessage `json:"responses"`
		} `json:"components"`
	}
	if err := json.Unmarshal(r.body, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.OpenAPI != "3.1.0" || doc.Info.Version != "1.2.0" {
		t.Errorf("openapi %q version %q", doc.OpenAPI, doc.Info.Version)
	}
	// Every route is described, and nothing else.
	described := map[string]bool{}
	for path, ops := range doc.Paths {
		for method := range ops {
			described[strings.ToUpper(method)+" "+path] = true
		}
	}
	for _, rt := range h.api.router.routes {
		key := rt.method + " " + rt.pattern
		if !described[key] {
			t.Errorf("route %s missing from openapi.json", key)
		}
		delete(described, key)
	}
	for k := range described {
		t.Errorf("openapi.json describes %s, which is not served", k)
	}
	// Every $ref resolves.
	for _, m := range regexp.MustCompile(`"\$ref": ?"#/components/(schemas|responses)/([A-Za-z]+)"`).FindAllStringSubmatch(string(r.body), -1) {
		var ok bool
		if m[1] == "schemas" {
			_, ok = doc.Components.Schemas[m[2]]
		} else {
			_, ok = doc.Components.Responses[m[2]]
		}
		if !ok {
			t.Errorf("dangling $ref %s/%s", m[1], m[2])
		}
	}
}
