package api

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzHandler throws hostile requests at every route. Panics are recovered
// into 500s, so a 500 here (the SQLite store does not fail on its own) means a
// panic.
func FuzzHandler(f *testing.F) {
	h := newHarness(f)
	project := h.site.ProjectID
	for _, seed := range []struct{ method, path, body string }{
		{"POST", "/api/v1/notifications", `{"title":"x","externalIds":["a"],"ttl":5}`},
		{"POST", "/api/v1/notifications", `{"draft":true,"actions":[{"title":"a"},{"title":"b"},{"title":"c"}]}`},
		{"GET", "/api/v1/notifications?limit=3&status=sent,queued&cursor=AQ&tz=UTC", ``},
		{"GET", "/api/v1/notifications/00000000-0000-4000-8000-000000000000", ``},
		{"POST", "/api/v1/projects/" + project + "/subscriptions", `{"endpoint":"https://p.example/1","keys":{"p256dh":"BA","auth":"AA"}}`},
		{"DELETE", "/api/v1/projects/" + project + "/subscriptions", `{"endpoint":"https://p.example/1"}`},
		{"POST", "/api/v1/projects/" + project + "/pings/clicked", `{"notificationId":"x","endpointId":"y"}`},
		{"OPTIONS", "/api/v1/projects/" + project + "/config", ``},
		{"POST", "/admin/v1/websites", `{"name":"a","url":"https://a.example","timezone":"../../etc/passwd"}`},
		{"POST", "/admin/v1/websites/" + h.site.WebsiteID + "/keys", `{"scopes":["full"],"expiresAt":"2026-03-02"}`},
		{"GET", "//api//v1/../v1/notifications", `[`},
	} {
		f.Add(seed.method, seed.path, seed.body)
	}
	f.Fuzz(func(t *testing.T, method, path, body string) {
		token := h.site.APIKey
		if strings.HasPrefix(path, "/admin") {
			token = testAdminToken
		}
		r := serveOnce(h.api.Handler(), method, path, body, "Authorization", "Bearer "+token)
		id := r.header["X-Request-Id"]
		if id == "" {
			t.Fatalf("%s %q: no request id", method, path)
		}
		if r.status == 500 {
			t.Fatalf("%s %q %q: 500 %s", method, path, body, r.body)
		}
		if r.status >= 400 {
			var e map[string]any
			if err := json.Unmarshal(r.body, &e); err != nil || e["request_id"] != id || e["error"] == "" {
				t.Fatalf("%s %q: error body %s", method, path, r.body)
			}
		}
	})
}

// FuzzDecodeJSON checks the strict decoder never panics and only ever
// answers the two codes it may.
func FuzzDecodeJSON(f *testing.F) {
	for _, s := range []string{`{}`, `{"name":1}`, `{"a":`, `[]`, `{"name":"x"} x`, "\x00", `{"scopes":[1]}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		var v keyRequest
		if err := decodeJSON([]byte(body), &v, strict); err != nil && err.Code != CodeInvalidJSON && err.Code != CodeUnknownField {
			t.Fatalf("%q: %v", body, err)
		}
	})
}
