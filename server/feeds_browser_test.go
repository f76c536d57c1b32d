package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestDashboardFeeds adds a feed on the Feeds page, found by role and
// name: a refusal shows the API's message at its field and stores
// nothing; the stored feed is what the form says; "Poll now" polls it and
// shows the last poll's result (none sent of the items present, then the
// new one); the feed's name shows as text; pause and delete.
func TestDashboardFeeds(t *testing.T) {
	var mu sync.Mutex
	items := []int{2, 1}
	feed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		var b strings.Builder
		b.WriteString(`<?xml version="1.0"?><rss version="2.0"><channel><title>Blog</title>`)
		for _, n := range items {
			fmt.Fprintf(&b, `<item><guid>urn:%d</guid><title>Post %d</title><link>https://shop.example/blog/%d</link><description>About post %d</description></item>`, n, n, n, n)
		}
		b.WriteString(`</channel></rss>`)
		w.Header().Set("Content-Type", "application/rss+xml")
		fmt.Fprint(w, b.String())
	}))
	t.Cleanup(feed.Close)
	u, _ := url.Parse(feed.URL)
	// The background poller looks once at start, then hourly: the test's
	// "Poll now" is the only poll of the feed.
	ts := startServer(t, func(c *Config) { c.WebhookAllowHosts = u.Host; c.Feeds.Every = time.Hour })
	b, _ := startDashboard(t, ts)
	role, heading := b.role, b.heading

	role("link", "Feeds", "click")
	heading("Feeds")
	waitFor(t, "the empty state", func() bool { return strings.Contains(b.mainText(), "No feeds yet.") })
	b.shoot("feeds-empty")

	// An address that is not http(s): the refusal shows at its field.
	role("button", "New feed", "click")
	role("textbox", "Feed name", "fill", "Blog <b>news</b>")
	role("textbox", "Feed address", "fill", "ftp://shop.example/feed")
	role("button", "Add feed", "click")
	waitFor(t, "the refusal at the address", func() bool { return role("textbox", "Feed address", "invalid") == "true" })
	if got, want := role("textbox", "Feed address", "description"),
		"url must be an absolute http or https address of at most 2048 characters The RSS, Atom or JSON feed’s http or https address."; got != want {
		t.Fatalf("address described %q, want %q", got, want)
	}
	type feedJSON struct {
		ID       string         `json:"id"`
		Name     string         `json:"name"`
		URL      string         `json:"url"`
		Audience map[string]any `json:"audience"`
		Template map[string]any `json:"template"`
		Status   string         `json:"status"`
		Sent     int            `json:"sent"`
	}
	var list struct {
		Feeds []feedJSON `json:"feeds"`
	}
	if b.api("GET", "/feeds", "", &list); len(list.Feeds) != 0 {
		t.Fatalf("a refused feed was stored: %v", list.Feeds)
	}
	role("textbox", "Feed address", "fill", feed.URL+"/rss")
	role("textbox", "Title", "fill", "New: {item.title}")
	role("button", "Add feed", "click")
	heading("Blog <b>news</b>") // the name as text, not markup
	b.api("GET", "/feeds", "", &list)
	if len(list.Feeds) != 1 {
		t.Fatalf("feeds %v", list.Feeds)
	}
	f := list.Feeds[0]
	if f.Name != "Blog <b>news</b>" || f.URL != feed.URL+"/rss" || fmt.Sprint(f.Audience) != "map[everyone:true]" ||
		fmt.Sprint(f.Template) != "map[title:New: {item.title}]" || f.Status != "active" {
		t.Fatalf("stored %+v", f)
	}
	if !strings.Contains(b.mainText(), "Not polled yet") {
		t.Fatalf("no last poll shown: %s", b.mainText())
	}

	// Poll now: the items present are recorded, none sent.
	role("button", "Poll now Blog <b>news</b>", "click")
	waitFor(t, "the first poll's result", func() bool { return strings.Contains(b.mainText(), "HTTP 200, 0 new items; 0 sent") })
	// A new item: the next poll sends it.
	mu.Lock()
	items = []int{3, 2, 1}
	mu.Unlock()
	role("button", "Poll now Blog <b>news</b>", "click")
	waitFor(t, "the second poll's result", func() bool { return strings.Contains(b.mainText(), "HTTP 200, 1 new item; 1 sent") })
	waitFor(t, "the feed's counts", func() bool { return strings.Contains(b.mainText(), "1 sent, 0 waiting") })
	b.shoot("feeds")
	var sends struct {
		Items []struct {
			Title  string `json:"title"`
			FeedID string `json:"feedId"`
		} `json:"items"`
	}
	b.api("GET", "/notifications?feedId="+f.ID, "", &sends)
	if len(sends.Items) != 1 || sends.Items[0].Title != "New: Post 3" || sends.Items[0].FeedID != f.ID {
		t.Fatalf("the feed's sends: %+v", sends.Items)
	}
	if href := role("link", "Its notifications", "href"); !strings.HasSuffix(href, "#/notifications?feedId="+f.ID) {
		t.Fatalf("link to its notifications: %s", href)
	}

	// Change: an unknown placeholder is refused at the title; then every
	// 30 minutes with the item's own title.
	role("button", "Change feed Blog <b>news</b>", "click")
	role("textbox", "Title", "fill", "{item.author}")
	role("button", "Save feed", "click")
	waitFor(t, "the refusal at the title", func() bool { return role("textbox", "Title", "invalid") == "true" })
	role("textbox", "Title", "fill", "")
	role("spinbutton", "Poll every (minutes)", "fill", "30")
	role("button", "Save feed", "click")
	waitFor(t, "saved", func() bool { return strings.Contains(b.mainText(), "On, every 30 min") })
	var changed struct {
		PollMinutes int            `json:"pollMinutes"`
		Template    map[string]any `json:"template"`
	}
	b.api("GET", "/feeds/"+f.ID, "", &changed)
	if changed.PollMinutes != 30 || len(changed.Template) != 0 {
		t.Fatalf("changed feed %+v", changed)
	}

	// Change: a saved template instead of the fields, and an audience by
	// rules made with the rules builder; the stored feed names both.
	var tpl struct {
		ID string `json:"id"`
	}
	b.api("POST", "/templates", `{name: 'House style', title: 'Read: {item.title}', icon: 'https://shop.example/bell.png'}`, &tpl)
	role("button", "Change feed Blog <b>news</b>", "click")
	role("combobox", "Template", "select", tpl.ID)
	if role("textbox", "Title", "count") != "0" {
		t.Fatal("the template's fields still shown with a template chosen")
	}
	role("radio", "People matching rules", "click")
	role("combobox", "Field of audience rule 1", "select", "language")
	role("combobox", "Condition of audience rule 1", "select", "in")
	role("textbox", "Value of audience rule 1", "fill", "fr, de")
	b.shoot("feeds-form-template")
	role("button", "Save feed", "click")
	waitFor(t, "saved with rules", func() bool { return strings.Contains(b.mainText(), "Filters: language is one of fr, de") })
	var templated struct {
		Audience json.RawMessage `json:"audience"`
		Template json.RawMessage `json:"template"`
	}
	b.api("GET", "/feeds/"+f.ID, "", &templated)
	if string(templated.Template) != `{"templateId":"`+tpl.ID+`"}` ||
		string(templated.Audience) != `{"filters":{"match":"all","rules":[{"field":"language","op":"in","value":["fr","de"]}]}}` {
		t.Fatalf("feed with a template and rules: template %s audience %s", templated.Template, templated.Audience)
	}
	// The form shows them again as stored.
	role("button", "Change feed Blog <b>news</b>", "click")
	if got := role("combobox", "Template", "value"); got != tpl.ID {
		t.Fatalf("the template chosen shows as %q, want %s", got, tpl.ID)
	}
	if got := role("textbox", "Value of audience rule 1", "value"); got != "fr, de" {
		t.Fatalf("the rule's value shows as %q", got)
	}
	role("button", "Cancel", "click")

	// Pause, then delete (the confirmation is accepted).
	role("button", "Pause feed Blog <b>news</b>", "click")
	waitFor(t, "paused", func() bool { return role("button", "Turn on feed Blog <b>news</b>", "count") == "1" })
	if role("button", "Poll now Blog <b>news</b>", "count") != "0" {
		t.Fatal("Poll now offered for a paused feed")
	}
	b.shoot("feeds-paused")
	role("button", "Delete feed Blog <b>news</b>", "click")
	waitFor(t, "the empty state again", func() bool { return strings.Contains(b.mainText(), "No feeds yet.") })
	if b.api("GET", "/feeds", "", &list); len(list.Feeds) != 0 {
		t.Fatalf("feeds after delete: %v", list.Feeds)
	}
}
