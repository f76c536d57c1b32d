package api

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relaybell/relaybell/feeds"
	"github.com/relaybell/relaybell/netpolicy"
	"github.com/relaybell/relaybell/store"
)

// Feeds (issue 35, part 2): the routes, their refusals, a poll now and
// what feeds make, through the API, against a local feed server.

type localFeed struct {
	mu   sync.Mutex
	body string
	srv  *httptest.Server
}

func newLocalFeed(t *testing.T, body string) *localFeed {
	lf := &localFeed{body: body}
	lf.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		lf.mu.Lock()
		defer lf.mu.Unlock()
		w.Header().Set("Content-Type", "application/rss+xml")
		fmt.Fprint(w, lf.body)
	}))
	t.Cleanup(lf.srv.Close)
	return lf
}

func (lf *localFeed) set(body string) {
	lf.mu.Lock()
	defer lf.mu.Unlock()
	lf.body = body
}

func rssOf(ids ...int) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0"?><rss version="2.0"><channel><title>Blog</title>`)
	for _, n := range ids {
		fmt.Fprintf(&b, `<item><guid>urn:%d</guid><title>Post %d</title><link>https://blog.example.com/%d</link><description>About %d</description></item>`, n, n, n, n)
	}
	b.WriteString(`</channel></rss>`)
	return b.String()
}

func feedHarness(t *testing.T, lf *localFeed) *harness {
	u, _ := url.Parse(lf.srv.URL)
	allow, err := netpolicy.ParseAllowList(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	return newHarness(t, func(c *testConfig) { c.FeedFetch = feeds.FetchConfig{Allow: allow} })
}

func TestFeedRoutes(t *testing.T) {
	lf := newLocalFeed(t, rssOf(2, 1))
	h := feedHarness(t, lf)
	key := auth(h.site.APIKey)
	feedURL := lf.srv.URL + "/feed.xml"
	r := h.do("POST", "/api/v1/feeds", `{"name":" Blog ","url":"`+feedURL+`","audience":{"everyone":true}}`, key...)
	if r.status != 201 {
		t.Fatalf("POST: %d %s", r.status, r.body)
	}
	id := r.json(t)["id"].(string)
	want := fmt.Sprintf(`{"id":%q,"name":"Blog","url":%q,"audience":{"everyone":true},"template":{},"status":"active",`+
		`"pausedReason":null,"pollMinutes":15,"maxPerPoll":3,"sendExisting":0,"lastPoll":null,"nextPollAt":"2026-03-01T12:00:00Z",`+
		`"failingSince":null,"budgetRefusedAt":null,"pending":0,"sent":0,"created_at":"2026-03-01T12:00:00Z","updated_at":"2026-03-01T12:00:00Z"}`, id, feedURL)
	if string(r.body) != want {
		t.Fatalf("POST body\n %s\nwant\n %s", r.body, want)
	}
	// The first poll records the items present: nothing is sent.
	r = h.do("POST", "/api/v1/feeds/"+id+"/poll", "", key...)
	if want := `{"at":"2026-03-01T12:00:00Z","httpStatus":200,"newItems":0,"error":null,"sent":0,"budgetRefused":false,"pausedReason":null}`; r.status != 200 || string(r.body) != want {
		t.Fatalf("first poll: %d %s", r.status, r.body)
	}
	// A new item is sent, with its feedId.
	lf.set(rssOf(3, 2, 1))
	h.clock.Add(time.Minute)
	r = h.do("POST", "/api/v1/feeds/"+id+"/poll", "", key...)
	if want := `{"at":"2026-03-01T12:01:00Z","httpStatus":200,"newItems":1,"error":null,"sent":1,"budgetRefused":false,"pausedReason":null}`; r.status != 200 || string(r.body) != want {
		t.Fatalf("second poll: %d %s", r.status, r.body)
	}
	r = h.do("GET", "/api/v1/feeds/"+id, "", key...)
	got := r.json(t)
	if fmt.Sprint(got["lastPoll"]) != "map[at:2026-03-01T12:01:00Z error:<nil> httpStatus:200 newItems:1]" || got["sent"] != 1.0 ||
		got["nextPollAt"] != "2026-03-01T12:16:00Z" {
		t.Fatalf("GET after the poll: %s", r.body)
	}
	r = h.do("GET", "/api/v1/notifications?feedId="+id, "", key...)
	list := decode[struct {
		Items []map[string]any `json:"items"`
	}](t, r)
	if len(list.Items) != 1 || list.Items[0]["title"] != "Post 3" || list.Items[0]["feedId"] != id {
		t.Fatalf("notifications of the feed: %s", r.body)
	}
	nid := list.Items[0]["id"].(string)
	r = h.do("GET", "/api/v1/notifications/"+nid, "", key...)
	if !strings.Contains(string(r.body), `"feedId":"`+id+`"`) {
		t.Fatalf("detail without feedId: %s", r.body)
	}
	if h.disp.count() != 1 {
		t.Fatalf("dispatched %d", h.disp.count())
	}
	expectError(t, h.do("GET", "/api/v1/notifications?feedId=nope", "", key...), 400, CodeInvalidID, `,"message":"feedId must be a feed's id"`)
	expectError(t, h.do("GET", "/api/v1/notifications?scheduleId=", "", key...), 400, CodeInvalidID, `,"message":"scheduleId must be a recurring schedule's id"`)
	if r := h.do("GET", "/api/v1/notifications?feedId=00000000-0000-4000-8000-000000000000", "", key...); string(r.body) != `{"items":[],"nextCursor":null}` {
		t.Fatalf("another feed's sends: %s", r.body)
	}

	// PUT: paused by a person, then on again (due at once).
	h.clock.Add(time.Minute)
	r = h.do("PUT", "/api/v1/feeds/"+id, `{"status":"paused","template":{"title":"New: {item.title}"},"pollMinutes":60}`, key...)
	if got := r.json(t); r.status != 200 || got["status"] != "paused" || got["nextPollAt"] != nil || got["pollMinutes"] != 60.0 ||
		fmt.Sprint(got["template"]) != "map[title:New: {item.title}]" {
		t.Fatalf("PUT paused: %d %s", r.status, r.body)
	}
	expectError(t, h.do("POST", "/api/v1/feeds/"+id+"/poll", "", key...), 409, CodeFeedPaused,
		`,"message":"the feed is paused; turn it on with {\"status\": \"active\"} first"`)
	r = h.do("PUT", "/api/v1/feeds/"+id, `{"status":"active"}`, key...)
	if got := r.json(t); r.status != 200 || got["nextPollAt"] != "2026-03-01T12:02:00Z" {
		t.Fatalf("PUT active: %d %s", r.status, r.body)
	}

	// Reads with any key; changes need settings:write.
	send := h.key([]string{ScopeSend}, nil)
	for _, path := range []string{"/api/v1/feeds", "/api/v1/feeds/" + id} {
		if r := h.do("GET", path, "", auth(send)...); r.status != 200 {
			t.Fatalf("GET %s with a send key: %d %s", path, r.status, r.body)
		}
	}
	before := h.dump.take(t)
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/api/v1/feeds", `{"name":"x","url":"https://x.example/feed","audience":{"everyone":true}}`},
		{"PUT", "/api/v1/feeds/" + id, `{"name":"x"}`},
		{"DELETE", "/api/v1/feeds/" + id, ""},
		{"POST", "/api/v1/feeds/" + id + "/poll", ""},
	} {
		expectError(t, h.do(c.method, c.path, c.body, auth(send)...), 403, CodeInsufficientScope, `,"required":"settings:write"`)
	}
	if h.dump.take(t) != before {
		t.Fatal("a refused change changed the stores")
	}
	// Another website's id, an unknown one, and no UUID: 404 not_found.
	other, err := CreateWebsite(context.Background(), h.st, NewWebsite{Name: "Other", URL: "https://other.example"}, testStart)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ method, path, body, key string }{
		{"GET", "/api/v1/feeds/" + id, "", other.APIKey},
		{"PUT", "/api/v1/feeds/" + id, `{"name":"x"}`, other.APIKey},
		{"DELETE", "/api/v1/feeds/" + id, "", other.APIKey},
		{"POST", "/api/v1/feeds/" + id + "/poll", "", other.APIKey},
		{"GET", "/api/v1/feeds/00000000-0000-4000-8000-000000000000", "", h.site.APIKey},
		{"PUT", "/api/v1/feeds/nope", `{"name":"x"}`, h.site.APIKey},
	} {
		expectCode(t, h.do(c.method, c.path, c.body, auth(c.key)...), 404, CodeNotFound)
	}
	if r := h.do("GET", "/api/v1/feeds", "", auth(other.APIKey)...); string(r.body) != `{"feeds":[]}` {
		t.Fatalf("the other website's list: %s", r.body)
	}
	r = h.do("DELETE", "/api/v1/feeds/"+id, "", key...)
	if r.status != 200 || string(r.body) != `{"ok":true}` {
		t.Fatalf("DELETE: %d %s", r.status, r.body)
	}
	expectCode(t, h.do("GET", "/api/v1/feeds/"+id, "", key...), 404, CodeNotFound)
	// Its notifications stay.
	if r := h.do("GET", "/api/v1/notifications/"+nid, "", key...); r.status != 200 {
		t.Fatalf("the feed's notification after the delete: %d", r.status)
	}
}

// TestFeedRefusals: each invalid member answers its exact code and
// changes nothing, on POST and on PUT.
func TestFeedRefusals(t *testing.T) {
	lf := newLocalFeed(t, rssOf(1))
	h := feedHarness(t, lf)
	key := auth(h.site.APIKey)
	r := h.do("POST", "/api/v1/feeds", `{"name":"Base","url":"https://blog.example.com/feed","audience":{"everyone":true}}`, key...)
	id := r.json(t)["id"].(string)
	const base = `"name":"B","url":"https://blog.example.com/feed"`
	f := func(body, code, message string) {
		t.Helper()
		before := h.dump.take(t)
		for _, path := range []string{"/api/v1/feeds", "/api/v1/feeds/" + id} {
			method := "POST"
			if path != "/api/v1/feeds" {
				method = "PUT"
			}
			r := h.do(method, path, body, key...)
			if message == "" {
				expectCode(t, r, 400, code)
			} else {
				expectError(t, r, 400, code, `,"message":`+message)
			}
		}
		if h.dump.take(t) != before {
			t.Fatalf("%s changed the stores", body)
		}
	}
	f(`{`+base+`,"audience":{"everyone":true},"color":"red"}`, CodeUnknownField, "")
	f(`{`+base+`,"audience":{"everyone":true,"nope":1}}`, CodeUnknownField, "")
	f(`{`+base+`,"audience":{"everyone":true},"pollMinutes":"5"}`, CodeInvalidJSON, "")
	f(`{"name":"","url":"https://blog.example.com/feed","audience":{"everyone":true}}`, CodeNameRequired, `"a name is required"`)
	f(`{"name":"B","url":"file:///etc/passwd","audience":{"everyone":true}}`, CodeInvalidURL, `"url must be an absolute http or https address of at most 2048 characters"`)
	f(`{`+base+`,"audience":{}}`, CodeInvalidAudience, `"audience is {\"everyone\": true} or exactly one of topicId, segmentId, filters"`)
	f(`{`+base+`,"audience":{"everyone":false}}`, CodeInvalidAudience, `"everyone is true or left out: an audience never defaults to everyone"`)
	f(`{`+base+`,"audience":{"topicId":"nope"}}`, CodeUnknownTopic, "")
	f(`{`+base+`,"audience":{"segmentId":"00000000-0000-4000-8000-000000000000"}}`, CodeSegmentNotFound, "")
	f(`{`+base+`,"audience":{"filters":{"rules":[]}}}`, CodeInvalidFilters, "")
	f(`{`+base+`,"audience":{"everyone":true},"template":{"title":"{item.author}"}}`, CodeInvalidTemplate,
		`"template.title: unknown placeholder {item.author} (use {item.title}, {item.summary}, {item.link} or {item.image})"`)
	f(`{`+base+`,"audience":{"everyone":true},"template":{"templateId":"00000000-0000-4000-8000-000000000000"}}`, CodeTemplateNotFound,
		`"templateId names no template of this website"`)
	f(`{`+base+`,"audience":{"everyone":true},"pollMinutes":4}`, CodeInvalidPollMinutes, `"pollMinutes is from 5 to 1440"`)
	f(`{`+base+`,"audience":{"everyone":true},"maxPerPoll":11}`, CodeInvalidMaxPerPoll, `"maxPerPoll is from 1 to 10"`)
	f(`{`+base+`,"audience":{"everyone":true},"sendExisting":51}`, CodeInvalidSendExisting, `"sendExisting is from 0 to 50"`)
	f(`{`+base+`,"audience":{"everyone":true},"status":"on"}`, CodeInvalidStatus, `"status is active or paused"`)
	expectError(t, h.do("POST", "/api/v1/feeds", `{"name":"B","url":"https://blog.example.com/feed"}`, key...), 400, CodeInvalidAudience,
		`,"message":"audience is required: {\"everyone\": true} or exactly one of topicId, segmentId, filters"`)
}

// TestFeedUses: a segment an active feed uses cannot be deleted (the real
// feeds count), and a topic deleted pauses the feeds that target it.
func TestFeedUses(t *testing.T) {
	lf := newLocalFeed(t, rssOf(1))
	h := feedHarness(t, lf)
	key := auth(h.site.APIKey)
	sg := h.do("POST", "/api/v1/segments", `{"name":"FR","filters":{"rules":[{"field":"country","value":"FR"}]}}`, key...).json(t)["id"].(string)
	for _, aud := range []string{`{"segmentId":"` + sg + `"}`, `{"everyone":true,"excludeSegmentId":"` + sg + `"}`} {
		if r := h.do("POST", "/api/v1/feeds", `{"name":"F","url":"https://blog.example.com/feed","audience":`+aud+`}`, key...); r.status != 201 {
			t.Fatalf("POST: %d %s", r.status, r.body)
		}
	}
	expectError(t, h.do("DELETE", "/api/v1/segments/"+sg, "", key...), 409, CodeSegmentInUse,
		`,"message":"2 active feeds use this segment","feeds":2,"schedules":0,"pending":0`)
	topic := h.do("POST", "/api/v1/topics", `{"name":"News"}`, key...).json(t)
	r := h.do("POST", "/api/v1/feeds", `{"name":"N","url":"https://blog.example.com/feed","audience":{"topicId":"news"}}`, key...)
	id := r.json(t)["id"].(string)
	if r := h.do("POST", "/api/v1/webhooks", `{"url":"https://hooks.example/in","events":["feed.paused"]}`, key...); r.status != 201 {
		t.Fatalf("POST webhook: %d %s", r.status, r.body)
	}
	if r := h.do("DELETE", "/api/v1/topics/"+topic["id"].(string), "", key...); r.status != 200 {
		t.Fatalf("DELETE topic: %d %s", r.status, r.body)
	}
	got := h.do("GET", "/api/v1/feeds/"+id, "", key...).json(t)
	if got["status"] != store.FeedPaused || got["pausedReason"] != store.FeedPausedTopicDeleted {
		t.Fatalf("feed of a deleted topic: %v", got)
	}
	// The pause's webhook event, written with it.
	events, err := h.st.WebhookEvents(context.Background(), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 1 || events[0].Event != store.EventFeedPaused || string(events[0].Data) !=
		`{"feedId":"`+id+`","name":"N","url":"https://blog.example.com/feed","reason":"topic_deleted","error":"its topic \"News\" was deleted"}` {
		t.Fatalf("webhook events %+v", events)
	}
}

// TestFeedTemplate: a feed whose template is a saved template sends the
// template's content with the item's placeholders filled, and the
// template cannot be deleted while the feed names it.
func TestFeedTemplate(t *testing.T) {
	lf := newLocalFeed(t, rssOf(1))
	h := feedHarness(t, lf)
	key := auth(h.site.APIKey)
	r := h.do("POST", "/api/v1/templates", `{"name":"House","title":"Blog: {item.title}","icon":"https://shop.example/icon.png"}`, key...)
	if r.status != 201 {
		t.Fatalf("POST /templates: %d %s", r.status, r.body)
	}
	tpl := r.json(t)["id"].(string)
	r = h.do("POST", "/api/v1/feeds", `{"name":"Blog","url":"`+lf.srv.URL+`/rss","audience":{"everyone":true},"template":{"templateId":"`+tpl+`"}}`, key...)
	if r.status != 201 {
		t.Fatalf("POST /feeds: %d %s", r.status, r.body)
	}
	id := r.json(t)["id"].(string)
	h.do("POST", "/api/v1/feeds/"+id+"/poll", "", key...)
	lf.set(rssOf(2, 1))
	if r := h.do("POST", "/api/v1/feeds/"+id+"/poll", "", key...); r.json(t)["sent"] != 1.0 {
		t.Fatalf("poll: %s", r.body)
	}
	list := decode[struct {
		Items []struct {
			ID    string `json:"id"`
			Title string `json:"title"`
		} `json:"items"`
	}](t, h.do("GET", "/api/v1/notifications?feedId="+id, "", key...))
	if len(list.Items) != 1 || list.Items[0].Title != "Blog: Post 2" {
		t.Fatalf("the feed's sends: %+v", list.Items)
	}
	detail := h.do("GET", "/api/v1/notifications/"+list.Items[0].ID, "", key...)
	if !strings.Contains(string(detail.body), `"icon":"https://shop.example/icon.png"`) || !strings.Contains(string(detail.body), `"body":"About 2"`) {
		t.Fatalf("detail: %s", detail.body)
	}
	r = h.do("DELETE", "/api/v1/templates/"+tpl, "", key...)
	if r.status != 409 || !strings.Contains(string(r.body), `{"kind":"feed","id":"`+id+`","name":"Blog"}`) {
		t.Fatalf("DELETE template used by a feed: %d %s", r.status, r.body)
	}
}
