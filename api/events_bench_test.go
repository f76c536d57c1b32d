package api

import (
	"fmt"
	"testing"
)

// BenchmarkPostEvent: POST /events naming a known person, a third with a
// product (an interest), on the harness's store (SQLite; PostgreSQL with
// RELAYBELL_TEST_STORE=postgres), one request at a time. For a profile of
// the request's path: go test -run '^$' -bench PostEvent -cpuprofile.
func BenchmarkPostEvent(b *testing.B) {
	h := newHarness(b, func(c *testConfig) { c.EventRateLimit = -1 })
	const people = 50
	for i := range people {
		benchP256dh, benchAuth := browserKeys(b)
		body := fmt.Sprintf(`{"endpoint":"https://fcm.googleapis.com/fcm/send/bench-%d","keys":{"p256dh":%q,"auth":%q},"externalId":"u-%d"}`,
			i, benchP256dh, benchAuth, i)
		if r := h.do("POST", "/api/v1/projects/"+h.site.ProjectID+"/subscriptions", body); r.status != 201 {
			b.Fatalf("subscribe: %d %s", r.status, r.body)
		}
	}
	key := auth(h.site.APIKey)
	bodies := make([]string, 300)
	for i := range bodies {
		props := fmt.Sprintf(`{"path":"/p/%d"}`, i)
		if i%3 == 0 {
			props = fmt.Sprintf(`{"productId":"sku-%d"}`, i%40)
		}
		bodies[i] = fmt.Sprintf(`{"event":"page.viewed","externalId":"u-%d","properties":%s}`, i%people, props)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if r := h.do("POST", "/api/v1/events", bodies[i%len(bodies)], key...); r.status != 202 {
			b.Fatalf("%d %s", r.status, r.body)
		}
	}
}
