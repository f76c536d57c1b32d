package api

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestAuthErrors(t *testing.T) {
	h := newHarness(t)
	list := func(headers ...string) response { return h.do("GET", "/api/v1/notifications", "", headers...) }

	expectError(t, list(), 401, "not_authenticated", "")
	expectError(t, list("Authorization", "Basic dXNlcjpwYXNz"), 401, "not_authenticated", "")
	expectError(t, list("Authorization", "Bearer "), 401, "not_authenticated", "")
	expectError(t, list(auth("rb_live_unknownunknownunknownunknownunknown")...), 401, "invalid_api_key", "")
	expectError(t, list(auth("not a key; drop table")...), 401, "invalid_api_key", "")

	past := testStart.Add(-time.Second)
	expectError(t, list(auth(h.key(nil, &past))...), 401, "api_key_expired", "")
	now := testStart // expiry at exactly now counts as expired
	expectError(t, list(auth(h.key(nil, &now))...), 401, "api_key_expired", "")

	sendOnly := h.key([]string{ScopeSend}, nil)
	eventsOnly := h.key([]string{ScopeEventsWrite}, nil)
	expectError(t, h.do("POST", "/api/v1/notifications", `{"title":"x"}`, auth(eventsOnly)...), 403, "insufficient_scope", `,"required":"send"`)
	// Reads need any key; send needs send (or full, or no scopes at all).
	if r := list(auth(eventsOnly)...); r.status != 200 {
		t.Errorf("read with events:write key: %d %s", r.status, r.body)
	}
	if r := h.do("POST", "/api/v1/notifications", `{"title":"x"}`, auth(sendOnly)...); r.status != 202 {
		t.Errorf("send with send key: %d %s", r.status, r.body)
	}

	// A revoked key is unknown.
	revoked, k, err := NewAPIKey(h.site.WebsiteID, "revoked", nil, nil, testStart)
	if err != nil {
		t.Fatal(err)
	}
	revokedAt := testStart
	k.RevokedAt = &revokedAt
	if err := h.st.CreateAPIKey(context.Background(), k); err != nil {
		t.Fatal(err)
	}
	expectError(t, list(auth(revoked)...), 401, "invalid_api_key", "")

	// Bearer is case-insensitive.
	if r := list("Authorization", "bearer "+h.site.APIKey); r.status != 200 {
		t.Errorf("lower-case bearer: %d", r.status)
	}
}

func TestSuspensionTakesEffectAtOnce(t *testing.T) {
	h := newHarness(t)
	key := auth(h.site.APIKey)
	if r := h.do("GET", "/api/v1/notifications", "", key...); r.status != 200 {
		t.Fatalf("before: %d", r.status)
	}
	admin := auth(testAdminToken)
	if r := h.do("POST", "/admin/v1/accounts/"+h.site.AccountID+"/suspend", "", admin...); r.status != 200 || string(r.body) != `{"ok":true}` {
		t.Fatalf("suspend: %d %s", r.status, r.body)
	}
	// The key is cached, yet the suspension shows at once.
	expectError(t, h.do("GET", "/api/v1/notifications", "", key...), 403, "account_suspended", "")
	expectError(t, h.do("POST", "/api/v1/notifications", `{"title":"x"}`, key...), 403, "account_suspended", "")
	if r := h.do("POST", "/admin/v1/accounts/"+h.site.AccountID+"/unsuspend", "", admin...); r.status != 200 {
		t.Fatalf("unsuspend: %d", r.status)
	}
	if r := h.do("GET", "/api/v1/notifications", "", key...); r.status != 200 {
		t.Fatalf("after: %d", r.status)
	}
}

func TestKeyCache(t *testing.T) {
	// It counts the store's answers: no auth version poll may purge the
	// cache meanwhile (the harness makes its website after New).
	h := newHarness(t, func(c *testConfig) { c.AuthPoll = -1 })
	key := auth(h.site.APIKey)
	for range 5 {
		h.do("GET", "/api/v1/notifications", "", key...)
	}
	if n := h.st.keyOwnerCount(); n != 1 {
		t.Errorf("store asked %d times within the TTL, want 1", n)
	}
	h.clock.Add(DefaultKeyCacheTTL)
	h.do("GET", "/api/v1/notifications", "", key...)
	if n := h.st.keyOwnerCount(); n != 2 {
		t.Errorf("store asked %d times after the TTL, want 2", n)
	}

	// Unknown keys are remembered briefly.
	unknown := auth("rb_live_nonenonenonenonenonenonenonenonenone")
	h.do("GET", "/api/v1/notifications", "", unknown...)
	h.do("GET", "/api/v1/notifications", "", unknown...)
	if n := h.st.keyOwnerCount(); n != 3 {
		t.Errorf("unknown key: %d store calls, want 3", n)
	}
	h.clock.Add(negativeTTL)
	h.do("GET", "/api/v1/notifications", "", unknown...)
	if n := h.st.keyOwnerCount(); n != 4 {
		t.Errorf("unknown key after negative TTL: %d store calls, want 4", n)
	}

	// A store failure is a 500, and not cached.
	h.st.setFail("KeyOwner", errors.New("db down"))
	h.clock.Add(DefaultKeyCacheTTL)
	expectError(t, h.do("GET", "/api/v1/notifications", "", key...), 500, "internal_error", "")
	h.st.setFail("KeyOwner", nil)
	if r := h.do("GET", "/api/v1/notifications", "", key...); r.status != 200 {
		t.Errorf("after recovery: %d", r.status)
	}
}

func TestKeyCacheBounded(t *testing.T) {
	c := newKeyCache(time.Minute, 10)
	for i := range 100 {
		c.put(string(rune('a'+i)), keyOwnerWithID("k"), true, testStart, c.generation())
		if len(c.entries) > 10 {
			t.Fatalf("cache grew to %d", len(c.entries))
		}
	}
}

func TestLastUsedAtOncePerMinute(t *testing.T) {
	h := newHarness(t)
	key := auth(h.site.APIKey)
	// lastUsed is the stored last_used_at once pending writes are done.
	lastUsed := func() *time.Time {
		h.api.touches.Wait()
		owner, err := h.st.KeyOwner(context.Background(), hashOf(h.site.APIKey))
		if err != nil {
			t.Fatal(err)
		}
		return owner.Key.LastUsedAt
	}
	h.do("GET", "/api/v1/notifications", "", key...)
	if at := lastUsed(); at == nil || !at.Equal(testStart) {
		t.Fatalf("last used %v, want %v", at, testStart)
	}
	// Later requests within the minute write nothing.
	h.clock.Add(time.Second)
	h.do("GET", "/api/v1/notifications", "", key...)
	if at := lastUsed(); at == nil || !at.Equal(testStart) {
		t.Fatalf("last used %v after 1s, want %v", at, testStart)
	}
	h.clock.Add(58 * time.Second)
	h.do("GET", "/api/v1/notifications", "", key...)
	if at := lastUsed(); at == nil || !at.Equal(testStart) {
		t.Fatalf("last used %v after 59s, want %v", at, testStart)
	}
	h.clock.Add(time.Second)
	h.do("GET", "/api/v1/notifications", "", key...)
	if at := lastUsed(); at == nil || !at.Equal(testStart.Add(time.Minute)) {
		t.Errorf("last used %v after a minute, want %v", at, testStart.Add(time.Minute))
	}
}

func TestHasScope(t *testing.T) {
	f := func(have []string, need string, want bool) {
		t.Helper()
		if got := hasScope(have, need); got != want {
			t.Errorf("hasScope(%v, %q) = %v", have, need, got)
		}
	}
	f(nil, ScopeSend, true) // keys made before scopes existed
	f([]string{ScopeFull}, ScopeWebhooksWrite, true)
	f([]string{ScopeSend}, ScopeSend, true)
	f([]string{ScopeSend}, ScopeEventsWrite, false)
	f([]string{ScopeEventsWrite}, "", true)
}

func TestAdminAuth(t *testing.T) {
	h := newHarness(t)
	path := "/admin/v1/accounts/" + h.site.AccountID + "/verify-email"
	expectError(t, h.do("POST", path, ""), 401, "not_authenticated", "")
	expectError(t, h.do("POST", path, "", auth("wrong")...), 401, "invalid_api_key", "")
	expectError(t, h.do("POST", path, "", auth(h.site.APIKey)...), 401, "invalid_api_key", "")
	if r := h.do("POST", path, "", auth(testAdminToken)...); r.status != 200 {
		t.Errorf("admin token: %d %s", r.status, r.body)
	}

	// Without a token the admin API does not exist.
	off := newHarness(t, func(c *testConfig) { c.AdminToken = "" })
	expectError(t, off.do("POST", path, "", auth("")...), 404, "not_found", "")
	expectError(t, off.do("POST", "/admin/v1/websites", `{}`, auth("anything")...), 404, "not_found", "")
}
