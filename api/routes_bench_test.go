package api

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/relaybell/relaybell/cputime"
)

// BenchmarkRoutes is the API's own cost of the routes the API bench
// (relaybell bench --api) loads, in-process on the test store (SQLite, or
// PostgreSQL with RELAYBELL_TEST_STORE=postgres), one request at a time:
// no network, no load generator, and a send stops at the dispatcher
// (memDispatcher), so the fan-out and the push are not in it. The limits
// of spec 8.1 are off, as in the bench. 100 people with a browser each;
// each send goes to one of them by externalId.
func BenchmarkRoutes(b *testing.B) {
	h := newHarness(b, func(c *testConfig) {
		c.PublicRateLimit, c.EventRateLimit, c.NoSendLimits = -1, -1, true
	})
	handler := h.api.Handler()
	project := "/api/v1/projects/" + h.site.ProjectID + "/subscriptions"
	const people = 100
	for i := range people {
		body := subscribeBody(b, "https://fcm.googleapis.com/fcm/send/person-"+strconv.Itoa(i), `,"externalId":"u-`+strconv.Itoa(i)+`"`)
		if r := h.do("POST", project, body); r.status != 201 {
			b.Fatalf("subscribing: %d %s", r.status, r.body)
		}
	}
	for i := range 50 {
		if r := h.do("POST", "/api/v1/notifications", `{"title":"Order shipped","body":"Order `+strconv.Itoa(i)+`","externalId":"u-1"}`, auth(h.site.APIKey)...); r.status != 202 {
			b.Fatalf("sending: %d %s", r.status, r.body)
		}
	}
	// Fresh browsers for the registrations: keys made before the timer.
	const fresh = 20_000
	subs := make([]string, fresh)
	for i := range subs {
		subs[i] = subscribeBody(b, "https://fcm.googleapis.com/fcm/send/new-"+strconv.Itoa(i), "")
	}
	nextSub := 0
	run := func(name string, want int, req func(i int, r *fasthttp.Request)) {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			var r fasthttp.Request
			var fc fasthttp.RequestCtx
			cpu := cputime.Process()
			for i := 0; b.Loop(); i++ {
				r.Reset()
				req(i, &r)
				fc.Init(&r, nil, nil)
				handler(&fc)
				if fc.Response.StatusCode() != want {
					b.Fatalf("%d %s", fc.Response.StatusCode(), fc.Response.Body())
				}
			}
			// The process's CPU, background work included (the events'
			// folder, SQLite's checkpoints): on a machine shared with other
			// work, a steadier figure than the wall time of ns/op.
			b.ReportMetric(float64(cputime.Process()-cpu)/float64(b.N)/1e3, "cpu-µs/op")
		})
	}
	withKey := func(r *fasthttp.Request, method, uri, body string) {
		r.Header.SetMethod(method)
		r.SetRequestURI(uri)
		r.Header.Set("Authorization", "Bearer "+h.site.APIKey)
		if body != "" {
			r.Header.SetContentType("application/json")
			r.SetBodyString(body)
		}
	}
	run("subscribe", 201, func(_ int, r *fasthttp.Request) {
		if nextSub == fresh {
			b.Fatalf("more than %d registrations: raise fresh", fresh)
		}
		r.Header.SetMethod("POST")
		r.SetRequestURI(project)
		r.Header.SetContentType("application/json")
		r.SetBodyString(subs[nextSub])
		nextSub++
	})
	run("events", 202, func(i int, r *fasthttp.Request) {
		withKey(r, "POST", "/api/v1/events", fmt.Sprintf(`{"event":"product.viewed","externalId":"u-%d","properties":{"productId":"sku-%d"}}`, i%people, i%200))
	})
	run("notify", 202, func(i int, r *fasthttp.Request) {
		withKey(r, "POST", "/api/v1/notifications", fmt.Sprintf(`{"title":"Order shipped","body":"Order %d is on its way","externalId":"u-%d"}`, i, i%people))
	})
	run("list", 200, func(_ int, r *fasthttp.Request) {
		withKey(r, "GET", "/api/v1/notifications", "")
	})
}
