package deploy

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// feedBrowsers is how many browsers the feed fault test subscribes.
const feedBrowsers = 20

// TestClusterFeedPollSurvivesKill (issue 35): the node polling a feed
// dies with SIGKILL during a poll that finds 5 new items, after it sent
// two and before the third (the kill-in-feed-poll failpoint). Once its
// lease runs out a fan-out node's poller takes the feed over and sends
// the other three: each item goes out exactly once, to every browser
// once.
func TestClusterFeedPollSurvivesKill(t *testing.T) {
	var mu sync.Mutex
	items := []int{2, 1}
	feed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		var b strings.Builder
		b.WriteString(`<?xml version="1.0"?><rss version="2.0"><channel><title>Faults</title>`)
		for _, n := range items {
			fmt.Fprintf(&b, `<item><guid>urn:fault:%d</guid><title>Item %d</title><link>https://faults.example/%d</link></item>`, n, n, n)
		}
		b.WriteString(`</channel></rss>`)
		w.Header().Set("Content-Type", "application/rss+xml")
		fmt.Fprint(w, b.String())
	}))
	defer feed.Close()
	host := strings.TrimPrefix(feed.URL, "http://")
	c := startCluster(t, "RELAYBELL_WEBHOOK_ALLOW_HOSTS="+host, "RELAYBELL_FEEDS_LEASE=10s")
	var w website
	if code := call(t, "POST", c.apis[0]+"/admin/v1/websites", "test-admin-token", map[string]any{"name": "Feeds", "url": "https://feeds.example"}, &w); code != 201 {
		t.Fatalf("creating website: %d", code)
	}
	c.subscribe(w, feedBrowsers, 0)

	// The feed's first poll (by api-1, now) records the two items present.
	var f struct {
		ID string `json:"id"`
	}
	if code := call(t, "POST", c.apis[1]+"/api/v1/feeds", w.APIKey, map[string]any{"name": "Faults", "url": feed.URL + "/rss",
		"audience": map[string]any{"everyone": true}, "maxPerPoll": 10}, &f); code != 201 {
		t.Fatalf("creating feed: %d", code)
	}
	var first struct {
		HTTPStatus int `json:"httpStatus"`
		NewItems   int `json:"newItems"`
	}
	deadline := time.Now().Add(time.Minute)
	for call(t, "POST", c.apis[1]+"/api/v1/feeds/"+f.ID+"/poll", w.APIKey, nil, &first) != 200 { // 409 while a poller holds it
		if time.Now().After(deadline) {
			t.Fatal("no poll of the new feed within a minute")
		}
		time.Sleep(200 * time.Millisecond)
	}
	if first.HTTPStatus != 200 || first.NewItems != 0 {
		t.Fatalf("first poll: %+v", first)
	}

	// Five new items; api-0, restarted with the failpoint, polls and dies
	// before sending the third.
	mu.Lock()
	items = []int{7, 6, 5, 4, 3, 2, 1}
	mu.Unlock()
	c.kill9("api-0")
	if err := c.scriptEnv([]string{"RELAYBELL_FAILPOINT=kill-in-feed-poll"}, "node", "api-0"); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("POST", c.apis[0]+"/api/v1/feeds/"+f.ID+"/poll", bytes.NewReader(nil))
	req.Header.Set("Authorization", "Bearer "+w.APIKey)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("api-0 answered %d; the failpoint should have killed it", resp.StatusCode)
	}
	type listed struct {
		ID     string `json:"id"`
		Title  string `json:"title"`
		FeedID string `json:"feedId"`
	}
	list := func() []listed {
		var out struct {
			Items []listed `json:"items"`
		}
		call(t, "GET", c.apis[1]+"/api/v1/notifications?feedId="+f.ID, w.APIKey, nil, &out)
		return out.Items
	}
	if got := list(); len(got) != 2 {
		t.Fatalf("%d sends stored when the node died, want 2: %+v", len(got), got)
	}

	// A fan-out node's poller sends the other three once the lease (10s)
	// runs out.
	deadline = time.Now().Add(2 * time.Minute)
	var got []listed
	for got = list(); len(got) < 5; got = list() {
		if time.Now().After(deadline) {
			t.Fatalf("%d of 5 items sent two minutes after the kill: %+v", len(got), got)
		}
		time.Sleep(500 * time.Millisecond)
	}
	time.Sleep(2 * time.Second) // a second send of an item would show by now
	got = list()
	titles := map[string]int{}
	for _, n := range got {
		titles[n.Title]++
		if n.FeedID != f.ID {
			t.Fatalf("send %s without its feedId: %+v", n.ID, n)
		}
	}
	for i := 3; i <= 7; i++ {
		if titles[fmt.Sprintf("Item %d", i)] != 1 {
			t.Fatalf("item %d sent %d times: %+v", i, titles[fmt.Sprintf("Item %d", i)], got)
		}
	}
	if len(got) != 5 {
		t.Fatalf("%d sends, want 5: %+v", len(got), got)
	}
	for _, n := range got {
		d := c.waitSent(c.apis[1], w, n.ID, 2*time.Minute)
		s := c.stats(n.ID)
		if d.Notification.Status != "sent" || d.Notification.Sent != feedBrowsers || s.Browsers != feedBrowsers || s.Duplicates != 0 {
			t.Fatalf("%s: %+v, %d browsers, %d duplicates", n.Title, d.Notification, s.Browsers, s.Duplicates)
		}
	}
	var after struct {
		Pending  int `json:"pending"`
		Sent     int `json:"sent"`
		LastPoll struct {
			HTTPStatus int `json:"httpStatus"`
		} `json:"lastPoll"`
	}
	call(t, "GET", c.apis[1]+"/api/v1/feeds/"+f.ID, w.APIKey, nil, &after)
	if after.Pending != 0 || after.Sent != 5 || after.LastPoll.HTTPStatus != 200 {
		t.Fatalf("feed after the takeover: %+v", after)
	}
}
