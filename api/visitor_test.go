package api

import (
	"net"
	"net/netip"
	"testing"

	"github.com/valyala/fasthttp"
)

func TestCountryOf(t *testing.T) {
	for _, tc := range []struct{ ip, want string }{
		{"8.8.8.8", "US"},
		{"81.2.69.142", "GB"},
		{"133.242.0.3", "JP"},
		{"217.160.0.1", "DE"},
		{"::ffff:81.2.69.142", "GB"},
		{"2001:4860:4860::8888", "US"},
		{"2a00:1450:4001:80b::200e", "DE"},
		// Private, loopback, reserved: no country.
		{"10.0.0.1", ""},
		{"192.168.1.20", ""},
		{"172.16.5.4", ""},
		{"127.0.0.1", ""},
		{"100.64.0.1", ""},
		{"203.0.113.7", ""},
		{"::1", ""},
		{"fd00::1", ""},
		{"fe80::1", ""},
	} {
		if got := countryOf(netip.MustParseAddr(tc.ip)); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.ip, got, tc.want)
		}
	}
	if got := countryOf(netip.Addr{}); got != "" {
		t.Errorf("no address: %q", got)
	}
}

func TestVisitorCountry(t *testing.T) {
	f := func(cfg Config, remote string, headers []string, wantIP, wantCountry string) {
		t.Helper()
		var req fasthttp.Request
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		var fc fasthttp.RequestCtx
		fc.Init(&req, &net.TCPAddr{IP: net.ParseIP(remote), Port: 4444}, nil)
		a := &API{cfg: cfg}
		r := &request{fc: &fc}
		if got := a.visitorIP(r); got.String() != wantIP {
			t.Errorf("%+v from %s %v: visitor %s, want %s", cfg, remote, headers, got, wantIP)
		}
		if got := a.country(r); got != wantCountry {
			t.Errorf("%+v from %s %v: country %q, want %q", cfg, remote, headers, got, wantCountry)
		}
	}
	trust := Config{TrustProxy: true}
	both := Config{TrustProxy: true, CountryHeader: "CF-IPCountry"}

	f(Config{}, "8.8.8.8", nil, "8.8.8.8", "US")
	f(Config{}, "::ffff:8.8.8.8", nil, "8.8.8.8", "US")
	f(Config{}, "2a00:1450:4001:80b::200e", nil, "2a00:1450:4001:80b::200e", "DE")
	f(Config{}, "10.1.2.3", nil, "10.1.2.3", "")
	f(Config{}, "127.0.0.1", nil, "127.0.0.1", "")
	// X-Forwarded-For is the browser's word unless a trusted proxy set it.
	f(Config{}, "10.1.2.3", []string{"X-Forwarded-For", "81.2.69.142"}, "10.1.2.3", "")
	f(trust, "10.1.2.3", []string{"X-Forwarded-For", "81.2.69.142, 10.9.9.9"}, "81.2.69.142", "GB")
	// What the browser put before the proxy's own entry is not believed.
	f(trust, "10.1.2.3", []string{"X-Forwarded-For", "8.8.8.8, 81.2.69.142"}, "81.2.69.142", "GB")
	f(trust, "10.1.2.3", []string{"X-Forwarded-For", "81.2.69.142, 10.0.0.1, 192.168.1.1"}, "81.2.69.142", "GB")
	f(trust, "10.1.2.3", []string{"X-Forwarded-For", " 2001:4860:4860::8888 "}, "2001:4860:4860::8888", "US")
	f(trust, "10.1.2.3", []string{"X-Forwarded-For", "192.168.0.7"}, "192.168.0.7", "")
	f(trust, "8.8.8.8", []string{"X-Forwarded-For", "unknown"}, "8.8.8.8", "US")
	f(trust, "8.8.8.8", nil, "8.8.8.8", "US")
	// The proxy's country header wins over any address, and when it does
	// not know the country no address is guessed from.
	f(both, "10.1.2.3", []string{"X-Forwarded-For", "81.2.69.142", "CF-IPCountry", "fr"}, "81.2.69.142", "FR")
	f(both, "8.8.8.8", []string{"CF-IPCountry", "XX"}, "8.8.8.8", "")
	f(both, "8.8.8.8", nil, "8.8.8.8", "")
	f(Config{CountryHeader: "CF-IPCountry"}, "8.8.8.8", []string{"CF-IPCountry", "T1"}, "8.8.8.8", "")
}

// TestSubscribeCountryFromIP checks the lookup is what subscriptions store.
func TestSubscribeCountryFromIP(t *testing.T) {
	h := newHarness(t, func(c *testConfig) { c.TrustProxy = true })
	r := h.do("POST", "/api/v1/projects/"+h.site.ProjectID+"/subscriptions", subscribeBody(t, "https://push.example/ip", ""),
		"X-Forwarded-For", "133.242.0.3")
	if r.status != 201 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if got := h.subscriber(r.json(t)["subscriberId"].(string)).Country; got != "JP" {
		t.Errorf("country %q, want JP", got)
	}
}
