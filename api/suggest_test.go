package api

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/relaybell/relaybell/netpolicy"
	"github.com/relaybell/relaybell/suggestions"
)

// POST /ai/suggest (issue 36, item 6): the offline rules by default, an
// OpenAI-compatible endpoint when configured with the rules as fallback,
// the refusals, and spec 8.1's 30 an hour per address.

const offlineSuggestions = `{"suggestions":[` +
	`{"title":"Today only: new arrivals","message":"See what came in. Don't miss out.","why":"A deadline gives a reason to act now rather than later; use it only when it is true."},` +
	`{"title":"New arrivals","message":"Hi {first_name|there}, see what came in.","why":"A name catches the eye: {first_name|there} puts in each subscriber's first_name tag, or \"there\" for those without one."},` +
	`{"title":"Have you heard? New arrivals","message":"See what came in. Want to take a look?","why":"A question invites an answer: people open the notification to find it."}]}`

const suggestBody = `{"title":"New arrivals","message":"See what came in.","url":"https://shop.example/new"}`

func TestSuggestOffline(t *testing.T) {
	h := newHarness(t, func(c *testConfig) { c.RateSync = -1 })
	// Any key may ask.
	events := h.key([]string{ScopeEventsWrite}, nil)
	for _, key := range []string{h.site.APIKey, events} {
		r := h.do("POST", "/api/v1/ai/suggest", suggestBody, auth(key)...)
		if r.status != 200 || string(r.body) != offlineSuggestions {
			t.Fatalf("%d\n %s\nwant\n %s", r.status, r.body, offlineSuggestions)
		}
	}
	before := h.dump.take(t)
	for _, c := range []struct{ body, code, extra string }{
		{`{"title":"  ","message":"x"}`, CodeTitleRequired, `,"message":"title is required"`},
		{`{"message":"x"}`, CodeTitleRequired, `,"message":"title is required"`},
		{`{"title":"a","tone":"angry"}`, CodeInvalidTone, `,"message":"tone must be friendly, urgent or formal"`},
		{`{"title":"` + strings.Repeat("é", 201) + `"}`, CodeTextTooLong, `,"message":"title is over 200 characters"`},
		{`{"title":"a","message":"` + strings.Repeat("x", 1001) + `"}`, CodeTextTooLong, `,"message":"message is over 1000 characters"`},
		{`{"title":"a","model":"gpt"}`, CodeUnknownField, `,"message":"unknown field \"model\""`},
	} {
		expectError(t, h.do("POST", "/api/v1/ai/suggest", c.body, auth(h.site.APIKey)...), 400, c.code, c.extra)
	}
	expectCode(t, h.do("POST", "/api/v1/ai/suggest", `{"title":`, auth(h.site.APIKey)...), 400, CodeInvalidJSON)
	expectError(t, h.do("POST", "/api/v1/ai/suggest", suggestBody), 401, CodeNotAuthenticated, "")
	if h.dump.take(t) != before {
		t.Fatal("suggestions changed the stores")
	}
}

// Against a fake OpenAI-compatible server that answers, times out and
// answers garbage: its suggestions, else the rules'.
func TestSuggestAIEndpoint(t *testing.T) {
	var mode atomic.Value // the test sets it, the server's goroutines read it
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		switch mode.Load() {
		case "answer":
			content, _ := json.Marshal(`{"suggestions":[{"title":"Fresh in","message":"New jackets and coats.","why":"Says what is new."}]}`)
			io.WriteString(w, `{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":`+string(content)+`}}]}`)
		case "timeout":
			<-r.Context().Done()
		case "garbage":
			io.WriteString(w, `{"choices":[{"message":{"content":"I cannot help with that."}}]}`)
		}
	}))
	t.Cleanup(srv.Close)
	allow, err := netpolicy.ParseAllowList(strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := suggestions.New(suggestions.Config{URL: srv.URL + "/v1", Key: "sk-test", Timeout: 300 * time.Millisecond, Allow: allow}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, func(c *testConfig) { c.Suggestions = s })
	for _, c := range []struct{ mode, want string }{
		{"answer", `{"suggestions":[{"title":"Fresh in","message":"New jackets and coats.","why":"Says what is new."}]}`},
		{"timeout", offlineSuggestions},
		{"garbage", offlineSuggestions},
	} {
		mode.Store(c.mode)
		r := h.do("POST", "/api/v1/ai/suggest", suggestBody, auth(h.site.APIKey)...)
		if r.status != 200 || string(r.body) != c.want {
			t.Fatalf("%s: %d\n %s\nwant\n %s", c.mode, r.status, r.body, c.want)
		}
	}
}

// Spec 8.1: 30 an hour per IP address, with the RateLimit-* headers, and
// 429 rate_limited with Retry-After past them.
func TestSuggestRateLimit(t *testing.T) {
	h := newHarness(t, func(c *testConfig) { c.TrustProxy = true; c.RateSync = -1 })
	h.clock.Add(-30 * time.Minute) // 11:30: 1800 s left in the hour
	key := auth(h.site.APIKey)
	for i := 1; i <= 30; i++ {
		r := h.do("POST", "/api/v1/ai/suggest", suggestBody, append(key, "X-Forwarded-For", "198.51.100.1")...)
		if r.status != 200 || r.header["Ratelimit-Limit"] != "30" || r.header["Ratelimit-Remaining"] != strconv.Itoa(30-i) ||
			r.header["Ratelimit-Reset"] != "1800" {
			t.Fatalf("request %d: %d %v", i, r.status, r.header)
		}
	}
	r := h.do("POST", "/api/v1/ai/suggest", suggestBody, append(key, "X-Forwarded-For", "198.51.100.1")...)
	expectError(t, r, 429, CodeRateLimited, `,"message":"this address may ask for suggestions 30 times an hour"`)
	if r.header["Retry-After"] != "1800" || r.header["Ratelimit-Remaining"] != "0" {
		t.Fatalf("429 headers %v", r.header)
	}
	// Uploads count apart; another address is not held.
	if r := h.doBytes("POST", "/api/v1/upload", "image/png", pngOf(t, 8, 8), append(key, "X-Forwarded-For", "198.51.100.1")...); r.status != 201 ||
		r.header["Ratelimit-Remaining"] != "59" {
		t.Fatalf("upload: %d %v", r.status, r.header)
	}
	if r := h.do("POST", "/api/v1/ai/suggest", suggestBody, append(key, "X-Forwarded-For", "198.51.100.2")...); r.status != 200 {
		t.Fatalf("another address: %d", r.status)
	}
}
