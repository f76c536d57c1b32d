package api

import (
	"net/url"
	"slices"
	"testing"
)

// The list's q finds titles and bodies in any case, for any Unicode text,
// on every store (store.FoldSearch), and answers text no title can hold
// (invalid UTF-8, NUL) without error.
func TestSearchUnicode(t *testing.T) {
	h := newHarness(t)
	key := auth(h.site.APIKey)
	for _, body := range []string{
		`{"title":"Über sale","body":"Everything must go"}`,
		`{"title":"News","body":"Straße fest"}`,
	} {
		if r := h.do("POST", "/api/v1/notifications", body, key...); r.status != 202 {
			t.Fatalf("send %s: %d %s", body, r.status, r.body)
		}
	}
	r := h.do("POST", "/api/v1/notifications", `{"draft":true,"title":"Plain"}`, key...)
	if r.status != 201 {
		t.Fatalf("draft: %d %s", r.status, r.body)
	}
	id := r.json(t)["notificationId"].(string)
	if r := h.do("PATCH", "/api/v1/notifications/"+id, `{"title":"Ärger"}`, key...); r.status != 200 {
		t.Fatalf("PATCH: %d %s", r.status, r.body)
	}

	f := func(q, status string, want ...string) {
		t.Helper()
		query := "?q=" + url.QueryEscape(q)
		if status != "" {
			query += "&status=" + status
		}
		if titles, _ := h.page(query); !slices.Equal(titles, want) {
			t.Errorf("q=%q: %q, want %q", q, titles, want)
		}
	}
	f("über", "", "Über sale")
	f("ÜBER SALE", "", "Über sale")
	f("MUST", "", "Über sale")
	f("STRASSE", "", "News")
	f("newsstraße", "")
	f("summer", "")
	f("\xc3", "")
	f("über\x00", "")
	f("ärger", "draft", "Ärger")
	f("plain", "draft")
}
