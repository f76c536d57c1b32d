package api

import (
	"strconv"
	"testing"
	"time"
)

// The browser SDK routes and pings take 120 requests a minute per visitor
// address (spec 8.1), with the RateLimit-* headers, and a 429 with
// Retry-After past them; the forwarded address counts only behind a
// trusted proxy.
func TestPublicRateLimit(t *testing.T) {
	h := newHarness(t, func(c *testConfig) { c.TrustProxy = true; c.RateSync = -1 })
	h.clock.Add(-20 * time.Second) // 11:59:40: 20 s left in the window
	config := "/api/v1/projects/" + h.site.ProjectID + "/config"
	for i := 1; i <= 120; i++ {
		r := h.do("GET", config, "", "X-Forwarded-For", "198.51.100.1")
		if r.status != 200 || r.header["Ratelimit-Limit"] != "120" || r.header["Ratelimit-Remaining"] != strconv.Itoa(120-i) ||
			r.header["Ratelimit-Reset"] != "20" {
			t.Fatalf("request %d: %d %v", i, r.status, r.header)
		}
	}
	// Every public route draws on the same count.
	for _, c := range []struct{ method, path, body string }{
		{"GET", config, ""},
		{"POST", "/api/v1/projects/" + h.site.ProjectID + "/pings/clicked", `{"notificationId":"x","endpointId":"y"}`},
		{"GET", "/api/v1/projects/" + h.site.ProjectID + "/sdk.js", ""},
	} {
		r := h.do(c.method, c.path, c.body, "X-Forwarded-For", "198.51.100.1")
		expectError(t, r, 429, CodeRateLimited, `,"message":"this address may call the browser SDK routes 120 times a minute"`)
		if r.header["Retry-After"] != "20" || r.header["Ratelimit-Remaining"] != "0" || r.header["Access-Control-Allow-Origin"] != "*" {
			t.Fatalf("%s: headers %v", c.path, r.header)
		}
	}
	// Another address, an IPv6 one per /64, and key routes are not held.
	if r := h.do("GET", config, "", "X-Forwarded-For", "198.51.100.2"); r.status != 200 {
		t.Fatalf("another address: %d", r.status)
	}
	for i := 0; i < 120; i++ {
		h.do("GET", config, "", "X-Forwarded-For", "2001:db8::"+strconv.Itoa(i))
	}
	expectCode(t, h.do("GET", config, "", "X-Forwarded-For", "2001:db8::ffff"), 429, CodeRateLimited)
	if r := h.do("GET", config, "", "X-Forwarded-For", "2001:db8:0:1::1"); r.status != 200 {
		t.Fatalf("another /64: %d", r.status)
	}
	if r := h.do("GET", "/api/v1/notifications", "", auth(h.site.APIKey)...); r.status != 200 || r.header["Ratelimit-Limit"] != "" {
		t.Fatalf("key route: %d %v", r.status, r.header)
	}
	// The next minute starts afresh.
	h.clock.Add(20 * time.Second)
	if r := h.do("GET", config, "", "X-Forwarded-For", "198.51.100.1"); r.status != 200 || r.header["Ratelimit-Remaining"] != "119" {
		t.Fatalf("next minute: %d %v", r.status, r.header)
	}
}

// Without a trusted proxy the forwarded address is the client's to make
// up: the connection's address counts.
func TestPublicRateLimitUntrustedForwarding(t *testing.T) {
	h := newHarness(t)
	config := "/api/v1/projects/" + h.site.ProjectID + "/config"
	for i := 0; i < 120; i++ {
		h.do("GET", config, "", "X-Forwarded-For", "198.51.100."+strconv.Itoa(i))
	}
	expectCode(t, h.do("GET", config, "", "X-Forwarded-For", "198.51.100.250"), 429, CodeRateLimited)
}

// Negative turns the limit off (the bench subscribes from one address).
func TestPublicRateLimitOff(t *testing.T) {
	h := newHarness(t, func(c *testConfig) { c.PublicRateLimit = -1 })
	config := "/api/v1/projects/" + h.site.ProjectID + "/config"
	for i := 0; i < 130; i++ {
		if r := h.do("GET", config, ""); r.status != 200 || r.header["Ratelimit-Limit"] != "" {
			t.Fatalf("request %d: %d %v", i, r.status, r.header)
		}
	}
}
