package api

import (
	"fmt"
	"testing"
)

// TestNoSendLimits: with Config.NoSendLimits (RELAYBELL_NO_SEND_LIMITS=true,
// for load runs) a key sends past its 600 an hour and the website past
// its 1,000 sends to specific users an hour, every send stored and
// dispatched.
func TestNoSendLimits(t *testing.T) {
	h := newHarness(t, func(c *testConfig) { c.NoSendLimits = true })
	const n = specificUserSendsPerHour + 1
	for i := range n {
		r := h.post(h.site.APIKey, fmt.Sprintf(`{"title":"hi","externalId":"user-%d"}`, i))
		if r.status != 202 || r.header["Ratelimit-Limit"] != "" {
			t.Fatalf("send %d: %d %s (RateLimit-Limit %q)", i, r.status, r.body, r.header["Ratelimit-Limit"])
		}
	}
	if got := h.notificationCount(); got != n {
		t.Fatalf("%d notifications stored, want %d", got, n)
	}
	if got := h.disp.count(); got != n {
		t.Fatalf("%d dispatched, want %d", got, n)
	}
}
