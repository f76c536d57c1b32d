package feeds

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/automations/enginetest"
	"github.com/relaybell/relaybell/netpolicy"
	"github.com/relaybell/relaybell/notification"
	"github.com/relaybell/relaybell/store"
)

// feedServer is a local feed: its body, content type and validators can
// change between polls; it records the conditional headers it got.
type feedServer struct {
	mu          sync.Mutex
	body        string
	contentType string
	etag        string
	lastMod     string
	status      int // 0: 200
	gotINM      []string
	gotIMS      []string
	srv         *httptest.Server
}

func newFeedServer(t *testing.T, contentType, body string) *feedServer {
	fs := &feedServer{body: body, contentType: contentType}
	fs.srv = httptest.NewServer(http.HandlerFunc(fs.serve))
	t.Cleanup(fs.srv.Close)
	return fs
}

func (fs *feedServer) serve(w http.ResponseWriter, r *http.Request) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.gotINM = append(fs.gotINM, r.Header.Get("If-None-Match"))
	fs.gotIMS = append(fs.gotIMS, r.Header.Get("If-Modified-Since"))
	if fs.status != 0 {
		w.WriteHeader(fs.status)
		return
	}
	if fs.etag != "" {
		w.Header().Set("ETag", fs.etag)
		if r.Header.Get("If-None-Match") == fs.etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	if fs.lastMod != "" {
		w.Header().Set("Last-Modified", fs.lastMod)
	}
	w.Header().Set("Content-Type", fs.contentType)
	fmt.Fprint(w, fs.body)
}

func (fs *feedServer) set(body string) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.body = body
}

func (fs *feedServer) url() string { return fs.srv.URL + "/feed" }

// allowOf is the allow list holding the servers' host:port.
func allowOf(t *testing.T, urls ...string) netpolicy.AllowList {
	var hosts []string
	for _, u := range urls {
		p, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		hosts = append(hosts, p.Host)
	}
	a, err := netpolicy.ParseAllowList(strings.Join(hosts, ","))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

type rssItem struct{ guid, title, link, desc, extra string }

func rss(items ...rssItem) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0"?><rss version="2.0" xmlns:media="http://search.yahoo.com/mrss/"><channel><title>Blog</title><link>https://blog.example.com/</link>`)
	for _, it := range items {
		fmt.Fprintf(&b, `<item><guid>%s</guid><title>%s</title><link>%s</link><description>%s</description>%s</item>`,
			it.guid, it.title, it.link, it.desc, it.extra)
	}
	b.WriteString(`</channel></rss>`)
	return b.String()
}

func item(n int) rssItem {
	return rssItem{guid: fmt.Sprintf("urn:post:%d", n), title: fmt.Sprintf("Post %d", n),
		link: fmt.Sprintf("https://blog.example.com/posts/%d", n), desc: fmt.Sprintf("&lt;p&gt;Summary of post %d&lt;/p&gt;", n)}
}

// env is one store, a website, a clock and a poller on them.
type env struct {
	t      *testing.T
	st     store.Store
	w      store.Website
	clock  *enginetest.Clock
	poller *Poller
	disp   *dispatcher
	tpl    Templates
}

type dispatcher struct {
	mu  sync.Mutex
	ids []string
}

func (d *dispatcher) Dispatch(_ context.Context, n store.Notification) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ids = append(d.ids, n.ID)
	return nil
}

func newEnv(t *testing.T, st store.Store, allow netpolicy.AllowList, tpl Templates) *env {
	t.Helper()
	e := &env{t: t, st: st, w: enginetest.Website(t, st), clock: enginetest.NewClock(enginetest.Start), disp: &dispatcher{}, tpl: tpl}
	p, err := NewPoller(Config{Now: e.clock.Now, Lease: time.Minute, Fetch: FetchConfig{Allow: allow, Timeout: 2 * time.Second}},
		st, e.disp, tpl, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	e.poller = p
	return e
}

// feed creates an active feed of the website from a request body.
func (e *env) feed(body string) store.Feed {
	e.t.Helper()
	var b Body
	if err := json.Unmarshal([]byte(body), &b); err != nil {
		e.t.Fatal(err)
	}
	d := New()
	if err := d.Apply(b, true); err != nil {
		e.t.Fatal(err)
	}
	if err := NewService(e.st, e.tpl, e.poller).Check(context.Background(), &d, e.w); err != nil {
		e.t.Fatal(err)
	}
	now := e.clock.Now()
	f, err := d.Stored(store.Feed{ID: uuid.NewString(), WebsiteID: e.w.ID, NextPollAt: now, CreatedAt: now, UpdatedAt: now})
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.st.CreateFeed(context.Background(), f); err != nil {
		e.t.Fatal(err)
	}
	return f
}

// poll polls the feed now and fails on an error.
func (e *env) poll(f store.Feed) Outcome {
	e.t.Helper()
	out, err := e.poller.PollNow(context.Background(), e.w.ID, f.ID)
	if err != nil {
		e.t.Fatalf("PollNow: %v", err)
	}
	return out
}

// sent lists the titles of the feed's notifications, oldest first.
func (e *env) sent(f store.Feed) []string {
	e.t.Helper()
	list, err := e.st.ListNotifications(context.Background(), store.ListQuery{WebsiteID: e.w.ID, FeedID: f.ID, Limit: 1000})
	if err != nil {
		e.t.Fatal(err)
	}
	out := []string{}
	for i := len(list) - 1; i >= 0; i-- {
		out = append(out, list[i].Title)
	}
	return out
}

func wantStrings(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "|") != strings.Join(want, "|") || len(got) != len(want) {
		t.Fatalf("%s = %q, want %q", what, got, want)
	}
}

func wantOutcome(t *testing.T, what string, got Outcome, want Outcome) {
	t.Helper()
	want.At = got.At
	if got != want {
		t.Fatalf("%s: outcome %+v, want %+v", what, got, want)
	}
}

func eachStore(t *testing.T, f func(t *testing.T, st store.Store)) {
	for _, s := range enginetest.Stores {
		t.Run(s.Name, func(t *testing.T) { f(t, s.Open(t)) })
	}
}

const everyone = `"audience": {"everyone": true}`

func TestPollRSS(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		fs := newFeedServer(t, "application/rss+xml", rss(item(3), item(2), item(1)))
		e := newEnv(t, st, allowOf(t, fs.srv.URL), nil)
		f := e.feed(`{"name": "Blog", "url": "` + fs.url() + `", ` + everyone + `}`)
		// A new feed with old items sends none of them.
		wantOutcome(t, "first poll", e.poll(f), Outcome{FeedPoll: store.FeedPoll{HTTPStatus: 200}})
		wantStrings(t, "sent after the first poll", e.sent(f), nil)
		// Two new items, with an image from media:content and from an
		// enclosure: sent oldest first.
		i4, i5 := item(4), item(5)
		i4.extra = `<media:content url="https://cdn.example.com/4.jpg" medium="image"/>`
		i5.extra = `<enclosure url="https://cdn.example.com/5.png" type="image/png" length="10"/>`
		fs.set(rss(i5, i4, item(3), item(2), item(1)))
		e.clock.Add(time.Minute)
		wantOutcome(t, "second poll", e.poll(f), Outcome{FeedPoll: store.FeedPoll{HTTPStatus: 200, NewItems: 2}, Sent: 2})
		wantStrings(t, "sent", e.sent(f), []string{"Post 4", "Post 5"})
		list, _ := st.ListNotifications(context.Background(), store.ListQuery{WebsiteID: e.w.ID, FeedID: f.ID, Limit: 10})
		for i, want := range []struct{ body, url, image string }{
			{"Summary of post 5", "https://blog.example.com/posts/5", "https://cdn.example.com/5.png"},
			{"Summary of post 4", "https://blog.example.com/posts/4", "https://cdn.example.com/4.jpg"},
		} {
			n := list[i]
			c, err := notification.DecodeContent(n.Content)
			if err != nil {
				t.Fatal(err)
			}
			if n.Body != want.body || !strings.HasPrefix(c.URL, want.url) || c.Image != want.image || n.FeedID != f.ID || n.Status != store.StatusQueued {
				t.Fatalf("notification %d: body %q url %q image %q feed %q status %q, want %+v", i, n.Body, c.URL, c.Image, n.FeedID, n.Status, want)
			}
		}
		if len(e.disp.ids) != 2 {
			t.Fatalf("dispatched %d, want 2", len(e.disp.ids))
		}
		// An edited item (same GUID), a reordered feed, an item dropped
		// and re-added: nothing is sent again.
		edited := item(5)
		edited.title = "Post 5, corrected"
		for i, body := range []string{
			rss(edited, i4, item(3), item(2), item(1)),
			rss(item(1), item(3), edited, item(2), i4),
			rss(item(3), item(2)),
			rss(edited, i4, item(3), item(2), item(1)),
		} {
			fs.set(body)
			e.clock.Add(time.Minute)
			wantOutcome(t, fmt.Sprintf("poll %d", i), e.poll(f), Outcome{FeedPoll: store.FeedPoll{HTTPStatus: 200}})
		}
		wantStrings(t, "sent after edits, reordering, re-adding", e.sent(f), []string{"Post 4", "Post 5"})
		got, _ := st.Feed(context.Background(), e.w.ID, f.ID)
		if got.LastPoll == nil || got.LastPoll.HTTPStatus != 200 || got.LastPoll.Error != "" || got.Sent != 2 || got.Pending != 0 {
			t.Fatalf("feed after polls: %+v", got)
		}
	})
}

const atomFeed = `<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom" xmlns:media="http://search.yahoo.com/mrss/">
<title>Atom blog</title><id>urn:blog</id><updated>2026-03-01T12:00:00Z</updated>
%s
</feed>`

func atomEntry(n int) string {
	return fmt.Sprintf(`<entry><id>urn:entry:%d</id><title>Entry %d</title><link href="https://atom.example.com/%d"/>
<updated>2026-03-01T12:00:00Z</updated><summary>Entry %d summary</summary>
<media:thumbnail url="https://cdn.example.com/e%d.jpg"/></entry>`, n, n, n, n, n)
}

func TestPollAtom(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		fs := newFeedServer(t, "application/atom+xml", fmt.Sprintf(atomFeed, atomEntry(2)+atomEntry(1)))
		e := newEnv(t, st, allowOf(t, fs.srv.URL), nil)
		f := e.feed(`{"name": "Atom", "url": "` + fs.url() + `", ` + everyone + `, "sendExisting": 1,
			"template": {"title": "New: {item.title}", "body": "{item.summary} (read more)"}}`)
		// sendExisting 1: the newest item present goes out.
		wantOutcome(t, "first poll", e.poll(f), Outcome{FeedPoll: store.FeedPoll{HTTPStatus: 200, NewItems: 1}, Sent: 1})
		fs.set(fmt.Sprintf(atomFeed, atomEntry(3)+atomEntry(2)+atomEntry(1)))
		e.clock.Add(time.Minute)
		wantOutcome(t, "second poll", e.poll(f), Outcome{FeedPoll: store.FeedPoll{HTTPStatus: 200, NewItems: 1}, Sent: 1})
		wantStrings(t, "sent", e.sent(f), []string{"New: Entry 2", "New: Entry 3"})
		list, _ := st.ListNotifications(context.Background(), store.ListQuery{WebsiteID: e.w.ID, FeedID: f.ID, Limit: 1})
		c, _ := notification.DecodeContent(list[0].Content)
		if list[0].Body != "Entry 3 summary (read more)" || c.Image != "https://cdn.example.com/e3.jpg" {
			t.Fatalf("atom send: body %q image %q", list[0].Body, c.Image)
		}
	})
}

func TestPollJSONFeed(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		doc := func(ids ...int) string {
			var items []string
			for _, n := range ids {
				items = append(items, fmt.Sprintf(`{"id": "j%d", "url": "https://json.example.com/%d", "title": "JSON %d",
					"content_text": "Text %d", "image": "https://cdn.example.com/j%d.webp"}`, n, n, n, n, n))
			}
			return `{"version": "https://jsonfeed.org/version/1.1", "title": "JSON blog", "items": [` + strings.Join(items, ",") + `]}`
		}
		fs := newFeedServer(t, "application/feed+json", doc(1))
		e := newEnv(t, st, allowOf(t, fs.srv.URL), nil)
		f := e.feed(`{"name": "JSON", "url": "` + fs.url() + `", ` + everyone + `}`)
		e.poll(f)
		fs.set(doc(2, 1))
		e.clock.Add(time.Minute)
		wantOutcome(t, "second poll", e.poll(f), Outcome{FeedPoll: store.FeedPoll{HTTPStatus: 200, NewItems: 1}, Sent: 1})
		list, _ := st.ListNotifications(context.Background(), store.ListQuery{WebsiteID: e.w.ID, FeedID: f.ID, Limit: 1})
		c, _ := notification.DecodeContent(list[0].Content)
		if list[0].Title != "JSON 2" || list[0].Body != "Text 2" || c.Image != "https://cdn.example.com/j2.webp" {
			t.Fatalf("JSON feed send: %q %q %q", list[0].Title, list[0].Body, c.Image)
		}
	})
}

func TestPollConditionalGET(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		fs := newFeedServer(t, "application/rss+xml", rss(item(1)))
		fs.etag, fs.lastMod = `"v1"`, "Sun, 01 Mar 2026 11:00:00 GMT"
		e := newEnv(t, st, allowOf(t, fs.srv.URL), nil)
		f := e.feed(`{"name": "Blog", "url": "` + fs.url() + `", ` + everyone + `}`)
		e.poll(f)
		e.clock.Add(time.Minute)
		wantOutcome(t, "not modified", e.poll(f), Outcome{FeedPoll: store.FeedPoll{HTTPStatus: 304}})
		fs.mu.Lock()
		inm, ims := fs.gotINM, fs.gotIMS
		fs.mu.Unlock()
		wantStrings(t, "If-None-Match sent", inm, []string{"", `"v1"`})
		wantStrings(t, "If-Modified-Since sent", ims, []string{"", "Sun, 01 Mar 2026 11:00:00 GMT"})
		// A changed feed answers in full, with new validators.
		fs.mu.Lock()
		fs.etag, fs.body = `"v2"`, rss(item(2), item(1))
		fs.mu.Unlock()
		e.clock.Add(time.Minute)
		wantOutcome(t, "modified", e.poll(f), Outcome{FeedPoll: store.FeedPoll{HTTPStatus: 200, NewItems: 1}, Sent: 1})
		got, _ := st.Feed(context.Background(), e.w.ID, f.ID)
		if got.ETag != `"v2"` {
			t.Fatalf("stored ETag %q", got.ETag)
		}
	})
}

func TestPollFailures(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		fs := newFeedServer(t, "application/rss+xml", rss(item(1)))
		hang := make(chan struct{})
		hanging := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-hang:
			case <-r.Context().Done():
			}
		}))
		t.Cleanup(hanging.Close)
		t.Cleanup(func() { close(hang) })
		// A redirect to a loopback address that is not allow-listed: the
		// dialer refuses it before connecting.
		redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "http://127.0.0.2:9/private", http.StatusFound)
		}))
		t.Cleanup(redirect.Close)
		e := newEnv(t, st, allowOf(t, fs.srv.URL, hanging.URL, redirect.URL), nil)
		p, err := NewPoller(Config{Now: e.clock.Now, Lease: time.Minute, Fetch: FetchConfig{Allow: allowOf(t, fs.srv.URL, hanging.URL, redirect.URL),
			Timeout: 300 * time.Millisecond}}, st, e.disp, nil, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		e.poller = p
		for _, c := range []struct {
			name, url string
			want      Outcome
		}{
			{"500", fs.url(), Outcome{FeedPoll: store.FeedPoll{HTTPStatus: 500, Error: "the feed answered 500"}}},
			{"hanging", hanging.URL + "/feed", Outcome{FeedPoll: store.FeedPoll{Error: "timeout: no answer in time"}}},
			{"redirect to a private address", redirect.URL + "/feed", Outcome{FeedPoll: store.FeedPoll{HTTPStatus: 0,
				Error: "refused: the address is private or internal and not allow-listed"}}},
		} {
			fs.mu.Lock()
			fs.status = 500
			fs.mu.Unlock()
			f := e.feed(`{"name": "` + c.name + `", "url": "` + c.url + `", ` + everyone + `}`)
			wantOutcome(t, c.name, e.poll(f), c.want)
			got, _ := st.Feed(context.Background(), e.w.ID, f.ID)
			if got.LastPoll == nil || got.LastPoll.Error != c.want.Error || got.FailingSince == nil || got.Status != store.FeedActive {
				t.Fatalf("%s: feed %+v", c.name, got)
			}
		}
		// A feed failing for a day is paused, with a feed.paused event and
		// a mail to the owners.
		if err := st.CreateWebhook(context.Background(), store.Webhook{ID: uuid.NewString(), WebsiteID: e.w.ID,
			URL: "https://hooks.example.com/x", Secret: "whsec_x", Enabled: true, CreatedAt: enginetest.Start}); err != nil {
			t.Fatal(err)
		}
		f := e.feed(`{"name": "Broken", "url": "` + fs.url() + `", ` + everyone + `}`)
		e.poll(f)
		e.clock.Add(PauseAfter - time.Minute)
		if out := e.poll(f); out.Paused != "" {
			t.Fatalf("paused before a day: %+v", out)
		}
		e.clock.Add(time.Minute)
		out := e.poll(f)
		if out.Paused != store.FeedPausedFailing {
			t.Fatalf("after a day of failures: %+v", out)
		}
		got, _ := st.Feed(context.Background(), e.w.ID, f.ID)
		if got.Status != store.FeedPaused || got.PausedReason != store.FeedPausedFailing {
			t.Fatalf("feed after a day of failures: %+v", got)
		}
		events, _ := st.WebhookEvents(context.Background(), 0, 0)
		last := events[len(events)-1]
		wantData := `{"feedId":"` + f.ID + `","name":"Broken","url":"` + fs.url() + `","reason":"failing_for_1_day","error":"the feed answered 500"}`
		if last.Event != store.EventFeedPaused || string(last.Data) != wantData {
			t.Fatalf("last event %s %s, want feed.paused %s", last.Event, last.Data, wantData)
		}
		mails, _ := st.Emails(context.Background(), true, 10)
		acct, _ := st.Account(context.Background(), e.w.AccountID)
		if len(mails) == 0 || mails[0].To != acct.OwnerEmail || !strings.Contains(mails[0].Subject, "paused the feed Broken") {
			t.Fatalf("owner mail: %+v", mails)
		}
		if _, err := e.poller.PollNow(context.Background(), e.w.ID, f.ID); !errors.Is(err, ErrPaused) {
			t.Fatalf("PollNow of a paused feed: %v", err)
		}
	})
}

func TestPollBudgetAndMaxPerPoll(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		fs := newFeedServer(t, "application/rss+xml", rss(item(1)))
		e := newEnv(t, st, allowOf(t, fs.srv.URL), nil)
		f := e.feed(`{"name": "Blog", "url": "` + fs.url() + `", ` + everyone + `, "maxPerPoll": 2}`)
		e.poll(f)
		// The website's broadcast budget has room for one more send this hour.
		ctx := context.Background()
		if _, ok, err := st.TakeRateLimits(ctx, []store.RateLimit{notification.BroadcastBudget(e.w.ID)}, notification.BroadcastsPerHour-1, e.clock.Now()); err != nil || !ok {
			t.Fatalf("using the budget: %v %v", ok, err)
		}
		fs.set(rss(item(5), item(4), item(3), item(2), item(1)))
		e.clock.Add(time.Minute) // 12:01
		out := e.poll(f)
		wantOutcome(t, "refused by the budget", out, Outcome{FeedPoll: store.FeedPoll{HTTPStatus: 200, NewItems: 4}, Sent: 1, BudgetRefused: true})
		got, _ := st.Feed(ctx, e.w.ID, f.ID)
		nextHour := time.Date(2026, 3, 1, 13, 0, 0, 0, time.UTC)
		if got.BudgetRefusedAt == nil || !got.BudgetRefusedAt.Equal(e.clock.Now()) || got.Pending != 3 ||
			!got.NextPollAt.Equal(e.clock.Now().Add(15*time.Minute)) {
			t.Fatalf("feed after a refusal: %+v", got)
		}
		// Polls within the hour still find no room; the waiting items go
		// at the next hour, two a poll.
		e.clock.Add(15 * time.Minute) // 12:16
		if n, _ := e.poller.RunDue(ctx); n != 1 {
			t.Fatalf("polled %d feeds at 12:16, want 1", n)
		}
		wantStrings(t, "sent within the hour", e.sent(f), []string{"Post 2"})
		got, _ = st.Feed(ctx, e.w.ID, f.ID)
		if !got.NextPollAt.Equal(time.Date(2026, 3, 1, 12, 31, 0, 0, time.UTC)) {
			t.Fatalf("next poll %v", got.NextPollAt)
		}
		e.clock.Set(nextHour.Add(-time.Minute))
		e.poller.RunDue(ctx) // 12:59: refused again, next poll at the hour
		got, _ = st.Feed(ctx, e.w.ID, f.ID)
		if !got.NextPollAt.Equal(nextHour) {
			t.Fatalf("next poll after a refusal at 12:59: %v, want the hour", got.NextPollAt)
		}
		e.clock.Set(nextHour)
		if n, _ := e.poller.RunDue(ctx); n != 1 {
			t.Fatalf("polled %d feeds at the next hour, want 1", n)
		}
		wantStrings(t, "sent", e.sent(f), []string{"Post 2", "Post 3", "Post 4"})
		e.clock.Add(15 * time.Minute)
		e.poller.RunDue(ctx)
		wantStrings(t, "sent, nothing lost", e.sent(f), []string{"Post 2", "Post 3", "Post 4", "Post 5"})
	})
}

func TestTopicDeletedPausesFeed(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		fs := newFeedServer(t, "application/rss+xml", rss(item(1)))
		e := newEnv(t, st, allowOf(t, fs.srv.URL), nil)
		topic, _, err := st.SaveTopic(ctx, store.Topic{ID: uuid.NewString(), WebsiteID: e.w.ID, Name: "News", Slug: "news", CreatedAt: enginetest.Start})
		if err != nil {
			t.Fatal(err)
		}
		f := e.feed(`{"name": "News", "url": "` + fs.url() + `", "audience": {"topicId": "` + topic.ID + `"}}`)
		e.poll(f)
		fs.set(rss(item(2), item(1)))
		e.clock.Add(time.Minute)
		e.poll(f)
		list, _ := st.ListNotifications(ctx, store.ListQuery{WebsiteID: e.w.ID, FeedID: f.ID, Limit: 1})
		if len(list) != 1 || !strings.Contains(string(list[0].Target), topic.ID) {
			t.Fatalf("topic send: %+v", list)
		}
		if err := st.DeleteTopic(ctx, e.w.ID, topic.ID); err != nil {
			t.Fatal(err)
		}
		got, _ := st.Feed(ctx, e.w.ID, f.ID)
		if got.Status != store.FeedPaused || got.PausedReason != store.FeedPausedTopicDeleted {
			t.Fatalf("feed after its topic went: %q %q", got.Status, got.PausedReason)
		}
	})
}

// fakeTemplates is one saved template of one website.
type fakeTemplates struct{ websiteID, id string }

func (f fakeTemplates) Apply(_ context.Context, websiteID, templateID string, req *notification.Request) error {
	if websiteID != f.websiteID || templateID != f.id {
		return fmt.Errorf("template %s: %w", templateID, store.ErrNotFound)
	}
	title, icon := "Blog: {item.title}", "https://blog.example.com/icon.png"
	if req.Title == nil {
		req.Title = &title
	}
	if req.Icon == nil {
		req.Icon = &icon
	}
	return nil
}

func TestTemplateID(t *testing.T) {
	st := enginetest.OpenSQLite(t)
	fs := newFeedServer(t, "application/rss+xml", rss(item(1)))
	e := newEnv(t, st, allowOf(t, fs.srv.URL), nil)
	tplID := uuid.NewString()
	e.tpl = fakeTemplates{websiteID: e.w.ID, id: tplID}
	p, _ := NewPoller(Config{Now: e.clock.Now, Lease: time.Minute, Fetch: FetchConfig{Allow: allowOf(t, fs.srv.URL)}}, st, e.disp, e.tpl, nil, nil)
	e.poller = p
	f := e.feed(`{"name": "Blog", "url": "` + fs.url() + `", ` + everyone + `, "template": {"templateId": "` + tplID + `"}}`)
	e.poll(f)
	fs.set(rss(item(2), item(1)))
	e.poll(f)
	wantStrings(t, "sent through the template", e.sent(f), []string{"Blog: Post 2"})
	list, _ := st.ListNotifications(context.Background(), store.ListQuery{WebsiteID: e.w.ID, FeedID: f.ID, Limit: 1})
	c, _ := notification.DecodeContent(list[0].Content)
	if c.Icon != "https://blog.example.com/icon.png" || list[0].Body != "Summary of post 2" {
		t.Fatalf("template send: icon %q body %q", c.Icon, list[0].Body)
	}
	// An unknown template, or none wired, is refused when the feed is saved.
	d := New()
	other := uuid.NewString()
	if err := d.Apply(Body{Name: ptr("x"), URL: ptr(fs.url()), Audience: &notification.Audience{Everyone: ptr(true)}, Template: &Template{TemplateID: &other}}, true); err != nil {
		t.Fatal(err)
	}
	for _, tpl := range []Templates{e.tpl, nil} {
		var fe *Error
		if err := NewService(st, tpl, p).Check(context.Background(), &d, e.w); !errors.As(err, &fe) || fe.Code != CodeTemplateNotFound {
			t.Fatalf("unknown templateId: %v", err)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// TestPollersOnTwoNodes: two nodes' pollers on one PostgreSQL. Only one
// claims a due feed; and two polls of one feed at once (a lease that ran
// out under a slow poll) still send each item once.
func TestPollersOnTwoNodes(t *testing.T) {
	sts := enginetest.OpenPostgres(t, 2)
	fs := newFeedServer(t, "application/rss+xml", rss(item(1)))
	e := newEnv(t, sts[0], allowOf(t, fs.srv.URL), nil)
	other, err := NewPoller(Config{Now: e.clock.Now, Lease: time.Minute, Fetch: FetchConfig{Allow: allowOf(t, fs.srv.URL)}}, sts[1], e.disp, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := e.feed(`{"name": "Blog", "url": "` + fs.url() + `", ` + everyone + `, "maxPerPoll": 10}`)
	if polled := enginetest.RunAtOnce(t, []*Poller{e.poller, other}); polled[0]+polled[1] != 1 {
		t.Fatalf("the due feed was polled %v times, want once", polled)
	}
	fs.set(rss(item(6), item(5), item(4), item(3), item(2), item(1)))
	e.clock.Add(time.Minute)
	ctx := context.Background()
	got, _ := sts[0].Feed(ctx, e.w.ID, f.ID)
	var wg sync.WaitGroup
	sent := make([]int, 2)
	for i, p := range []*Poller{e.poller, other} {
		wg.Go(func() {
			out, err := p.Poll(ctx, got)
			if err != nil {
				t.Error(err)
			}
			sent[i] = out.Sent
		})
	}
	wg.Wait()
	if sent[0]+sent[1] != 5 {
		t.Fatalf("the two polls sent %v, want 5 in all", sent)
	}
	titles := e.sent(f)
	slices.Sort(titles) // the two polls' sends interleave
	wantStrings(t, "sent once each", titles, []string{"Post 2", "Post 3", "Post 4", "Post 5", "Post 6"})
}

// A new account's first large broadcast from a feed waits for review, as
// a send through the API or a schedule's does (package review); once the
// account is no longer new, the next item goes.
func TestPollReview(t *testing.T) {
	st := enginetest.OpenSQLite(t)
	ctx := context.Background()
	fs := newFeedServer(t, "application/rss+xml", rss(item(1)))
	e := newEnv(t, st, allowOf(t, fs.srv.URL), nil)
	p, err := NewPoller(Config{Now: e.clock.Now, Lease: time.Minute, ReviewThreshold: 2,
		Fetch: FetchConfig{Allow: allowOf(t, fs.srv.URL), Timeout: 2 * time.Second}}, st, e.disp, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	e.poller = p
	for i := range 2 {
		if _, err := st.UpsertSubscription(ctx, store.SubscriptionInput{WebsiteID: e.w.ID, Endpoint: fmt.Sprintf("https://push.example/%d", i),
			P256dh: "p", Auth: "a", Device: "desktop", At: enginetest.Start}); err != nil {
			t.Fatal(err)
		}
	}
	f := e.feed(`{"name": "Blog", "url": "` + fs.url() + `", ` + everyone + `}`)
	e.poll(f)
	fs.set(rss(item(2), item(1)))
	e.clock.Add(time.Hour)
	wantOutcome(t, "new account", e.poll(f), Outcome{FeedPoll: store.FeedPoll{HTTPStatus: 200, NewItems: 1}, Sent: 1})
	fs.set(rss(item(3), item(2), item(1)))
	e.clock.Set(enginetest.Start.Add(15 * 24 * time.Hour))
	wantOutcome(t, "older account", e.poll(f), Outcome{FeedPoll: store.FeedPoll{HTTPStatus: 200, NewItems: 1}, Sent: 1})
	list, err := st.ListNotifications(ctx, store.ListQuery{WebsiteID: e.w.ID, FeedID: f.ID, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[1].Title != "Post 2" || list[1].Status != store.StatusHeldForReview ||
		list[0].Title != "Post 3" || list[0].Status != store.StatusQueued {
		t.Fatalf("sends %+v", list)
	}
	if len(e.disp.ids) != 1 || e.disp.ids[0] != list[0].ID {
		t.Fatalf("dispatched %v, want only %s", e.disp.ids, list[0].ID)
	}
}

// An account whose e-mail address is not verified sends nothing, as POST
// /notifications refuses it: the new items wait, and go once it is.
func TestPollUnverified(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		fs := newFeedServer(t, "application/rss+xml", rss(item(1)))
		e := newEnv(t, st, allowOf(t, fs.srv.URL), nil)
		id := uuid.NewString()
		a := store.Account{ID: uuid.NewString(), OwnerEmail: id[:8] + "@example.com", CreatedAt: enginetest.Start}
		e.w = store.Website{ID: id, AccountID: a.ID, ProjectID: "prj_" + id[:12], Name: "New", URL: "https://new.example",
			Timezone: "UTC", VAPIDPublicKey: "pub" + id, VAPIDPrivateKey: "priv" + id, CreatedAt: enginetest.Start}
		if err := st.CreateWebsite(ctx, a, e.w, store.APIKey{}); err != nil {
			t.Fatal(err)
		}
		f := e.feed(`{"name": "Blog", "url": "` + fs.url() + `", ` + everyone + `}`)
		e.poll(f)
		fs.set(rss(item(2), item(1)))
		e.clock.Add(time.Minute)
		wantOutcome(t, "unverified", e.poll(f), Outcome{FeedPoll: store.FeedPoll{HTTPStatus: 200, NewItems: 1,
			Error: ErrNotVerified.Error(), Waiting: true}})
		wantStrings(t, "sent while unverified", e.sent(f), nil)
		// Waiting on the account is not failing: a day and more of it
		// pauses nothing.
		e.clock.Add(PauseAfter + time.Hour)
		wantOutcome(t, "unverified a day later", e.poll(f), Outcome{FeedPoll: store.FeedPoll{HTTPStatus: 200,
			Error: ErrNotVerified.Error(), Waiting: true}})
		if err := st.SetAccountEmailVerified(ctx, a.ID); err != nil {
			t.Fatal(err)
		}
		e.clock.Add(time.Minute)
		wantOutcome(t, "verified", e.poll(f), Outcome{FeedPoll: store.FeedPoll{HTTPStatus: 200}, Sent: 1})
		wantStrings(t, "sent once verified", e.sent(f), []string{"Post 2"})
	})
}
