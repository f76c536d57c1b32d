package api

import (
	"testing"

	"github.com/valyala/fasthttp"
)

// BenchmarkKeyRoute measures the fixed cost of an authenticated request
// (routing, request id, cached key, scope check, metrics) on a route that
// does no store work past the key: a 404 for a malformed id.
func BenchmarkKeyRoute(b *testing.B) {
	h := newHarness(b)
	handler := h.api.Handler()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var req fasthttp.Request
		req.Header.SetMethod("GET")
		req.SetRequestURI("/api/v1/notifications/not-a-uuid")
		req.Header.Set("Authorization", "Bearer "+h.site.APIKey)
		var fc fasthttp.RequestCtx
		for pb.Next() {
			fc.Init(&req, nil, nil)
			handler(&fc)
			if fc.Response.StatusCode() != 404 {
				b.Fatal(fc.Response.StatusCode())
			}
		}
	})
}

// BenchmarkHealthz is the floor: routing, request id and metrics only.
func BenchmarkHealthz(b *testing.B) {
	h := newHarness(b)
	handler := h.api.Handler()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var req fasthttp.Request
		req.Header.SetMethod("GET")
		req.SetRequestURI("/healthz")
		var fc fasthttp.RequestCtx
		for pb.Next() {
			fc.Init(&req, nil, nil)
			handler(&fc)
		}
	})
}
