package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/relaybell/relaybell/store"
	"github.com/relaybell/relaybell/webpush"
)

// The browser test runs the SDK and the service worker in Debian's
// Chromium, driven by sdk/browsertest/driver.mjs (playwright-core), against
// RelayBell in this process. It needs /usr/bin/chromium, node and
// `npm ci` in sdk/browsertest; without them it skips, except under CI,
// where it fails (.ci/run installs them).
const chromiumPath = "/usr/bin/chromium"

// TestBrowserSDK: a page at one origin loads sdk.js from RelayBell at
// another; the SDK registers the site's worker (which imports sw.js),
// subscribes and registers; login links the site's user and setTopics sets
// the opt-ins; a send is pushed through the real pusher to the fake push
// service, handed to the worker, shown with every field and not shown
// twice; a click pings and opens the right URL; the counts reach the
// notification's detail; a renewed subscription keeps the endpoint; logout
// leaves the user for a new anonymous subscriber.
func TestBrowserSDK(t *testing.T) {
	started := time.Now()
	d := startDriver(t)
	ts := startServer(t)
	w := ts.createWebsite()
	for _, slug := range []string{"news", "sale"} {
		if code := ts.call("POST", "/api/v1/topics", w.APIKey, map[string]string{"name": slug, "slug": slug}, nil); code != 201 {
			t.Fatalf("creating topic %s: %d", slug, code)
		}
	}
	rb := startRecorder(t, ts.base)
	site := startSite(t, rb.URL, w.ProjectID)
	b := ts.push.NewBrowser(w.VAPIDPublicKey)
	sub := b.Subscription()

	d.call("launch", map[string]any{
		"executablePath": chromiumPath, "origin": site.URL, "locale": "de-DE", "timezoneId": "Europe/Paris",
		"subscription": map[string]string{"endpoint": sub.Endpoint, "p256dh": sub.P256dh, "auth": sub.Auth},
	}, nil)
	d.call("goto", map[string]string{"url": site.URL + "/"}, nil)

	// The page load subscribed with the website's VAPID key and registered.
	var ready struct {
		Supported    bool   `json:"supported"`
		Permission   string `json:"permission"`
		Subscribed   bool   `json:"subscribed"`
		SubscriberID string `json:"subscriberId"`
		EndpointID   string `json:"endpointId"`
		Error        string `json:"error"`
	}
	d.page("RelayBell.ready", &ready)
	if !ready.Supported || ready.Permission != "granted" || !ready.Subscribed || ready.EndpointID == "" || ready.Error != "" {
		t.Fatalf("RelayBell.ready: %+v", ready)
	}
	var with struct {
		UserVisibleOnly      bool   `json:"userVisibleOnly"`
		ApplicationServerKey string `json:"applicationServerKey"`
	}
	d.page("window.__subscribedWith", &with)
	if !with.UserVisibleOnly || with.ApplicationServerKey != w.VAPIDPublicKey {
		t.Fatalf("subscribed with %+v, want the website's key %s", with, w.VAPIDPublicKey)
	}
	base := "/api/v1/projects/" + w.ProjectID
	reg := rb.only(t, "POST", base+"/subscriptions")
	if reg.Origin != site.URL {
		t.Errorf("registered from origin %q, want %q (cross-origin)", reg.Origin, site.URL)
	}
	var body map[string]any
	json.Unmarshal(reg.Body, &body)
	ua, _ := body["userAgent"].(string)
	if !strings.Contains(ua, "Chrome/") {
		t.Errorf("user agent %q", ua)
	}
	// pageRegistration is the exact body the page sends for sub.
	pageRegistration := func(sub webpush.Subscription, extra string) string {
		return fmt.Sprintf(`{"endpoint":%q,"keys":{"p256dh":%q,"auth":%q},"language":"de-DE","timezone":"Europe/Paris","userAgent":%q,"url":%q%s}`,
			sub.Endpoint, sub.P256dh, sub.Auth, ua, site.URL+"/", extra)
	}
	if want := pageRegistration(sub, ""); string(reg.Body) != want {
		t.Errorf("registration %s\nwant         %s", reg.Body, want)
	}
	for _, path := range []string{base + "/sdk.js", base + "/sw.js", base + "/config"} {
		rb.only(t, "GET", path)
	}
	var topics []map[string]string
	d.page("RelayBell.topics()", &topics)
	slices.SortFunc(topics, func(a, b map[string]string) int { return strings.Compare(a["slug"], b["slug"]) })
	if !reflect.DeepEqual(topics, []map[string]string{{"name": "news", "slug": "news"}, {"name": "sale", "slug": "sale"}}) {
		t.Errorf("topics %v", topics)
	}

	// login links the site's user id; setTopics sets the opt-ins, each
	// time the whole set.
	type ids struct {
		SubscriberID string `json:"subscriberId"`
		EndpointID   string `json:"endpointId"`
	}
	same := ids{ready.SubscriberID, ready.EndpointID}
	for _, c := range []struct {
		call, extra string
		optins      []string
	}{
		{"RelayBell.login('user-42')", `,"externalId":"user-42"`, []string{}},
		{"RelayBell.setTopics(['news', 'sale'])", `,"externalId":"user-42","topics":["news","sale"]`, []string{"news", "sale"}},
		{"RelayBell.setTopics(['sale'])", `,"externalId":"user-42","topics":["sale"]`, []string{"sale"}},
	} {
		var got ids
		d.page(c.call, &got)
		if got != same {
			t.Fatalf("%s: %+v, want the same ids %+v", c.call, got, same)
		}
		regs := rb.all("POST", base+"/subscriptions")
		if want := pageRegistration(sub, c.extra); string(regs[len(regs)-1].Body) != want {
			t.Fatalf("%s registered %s\nwant %s", c.call, regs[len(regs)-1].Body, want)
		}
		if got := ts.optins(w, ready.SubscriberID); !reflect.DeepEqual(got, c.optins) {
			t.Fatalf("%s: opt-ins %q, want %q", c.call, got, c.optins)
		}
	}
	rec := ts.recipient(w, ready.SubscriberID)
	if rec.Subscriber.ExternalID != "user-42" || rec.Subscriber.Language != "de-DE" || rec.Subscriber.Timezone != "Europe/Paris" ||
		rec.Subscriber.URL != site.URL+"/" || rec.Subscriber.Country != "" || rec.Endpoint.ID != ready.EndpointID ||
		rec.Endpoint.URL != sub.Endpoint || rec.Endpoint.Device != "desktop" || !strings.Contains(rec.Endpoint.UserAgent, "Chrome/") {
		t.Fatalf("stored %+v", rec)
	}

	// A send with every field goes through the pusher to the fake push
	// service, which decrypts it with the subscription's private key.
	id := ts.send(w, map[string]any{
		"title": "Sale", "body": "Everything must go", "url": site.URL + "/sale",
		"icon": site.URL + "/icon.png", "image": site.URL + "/image.png", "badge": site.URL + "/badge.png",
		"actions": []map[string]string{
			{"action": "buy", "title": "Buy now", "url": site.URL + "/buy"},
			{"title": "Later", "url": site.URL + "/later"},
		},
		"requireInteraction": true, "tag": "sale",
	})
	if dt := ts.waitSent(w, id); dt.Notification.Sent != 1 {
		t.Fatalf("send: %+v", dt.Notification)
	}
	var plaintext []byte
	for _, dl := range b.Received() {
		if bytes.Contains(dl.Payload, []byte(id)) {
			plaintext = dl.Payload
		}
	}
	var p payload
	if err := json.Unmarshal(plaintext, &p); err != nil || p.NotificationID != id || p.EndpointID != ready.EndpointID {
		t.Fatalf("push payload %s: %v", plaintext, err)
	}

	// Hand the push to the worker, as the browser does on a push message.
	registrationID := d.registrationID(site.URL + "/")
	deliver := func() {
		t.Helper()
		n := site.pushes.Load()
		d.call("cdp", map[string]any{"method": "ServiceWorker.deliverPushMessage",
			"params": map[string]string{"origin": site.URL, "registrationId": registrationID, "data": string(plaintext)}}, nil)
		waitFor(t, "the worker to get the push", func() bool { return site.pushes.Load() > n })
	}
	deliver()
	// The worker pings once showNotification resolved; only then is the
	// notification read. A getNotifications call that overlaps
	// showNotification makes Chromium leave that notification out of
	// getNotifications for good (about one in three with calls in a loop,
	// none once showNotification resolved), so polling for it meanwhile
	// failed this test now and then.
	waitFor(t, "the delivered ping", func() bool { return len(rb.all("POST", base+"/pings/delivered")) == 1 })
	shown := d.notifications()
	if len(shown) == 0 {
		t.Fatal("no notification shown")
	}
	want := shownNotification{
		Title: "Sale", Body: "Everything must go", Icon: site.URL + "/icon.png", Image: site.URL + "/image.png",
		Badge: site.URL + "/badge.png", Tag: "sale", RequireInteraction: true,
		Actions: []map[string]string{{"action": "buy", "title": "Buy now", "icon": ""}, {"action": "btn2", "title": "Later", "icon": ""}},
		Data: notificationData{NotificationID: id, EndpointID: ready.EndpointID, URL: site.URL + "/sale",
			Actions: map[string]string{"buy": site.URL + "/buy", "btn2": site.URL + "/later"}},
	}
	want.Timestamp = shown[0].Timestamp
	if len(shown) != 1 || !reflect.DeepEqual(shown[0], want) {
		t.Fatalf("shown %+v\nwant %+v", shown, want)
	}
	if ping := rb.all("POST", base+"/pings/delivered")[0]; string(ping.Body) != fmt.Sprintf(`{"notificationId":%q,"endpointId":%q}`, id, ready.EndpointID) {
		t.Errorf("delivered ping %s", ping.Body)
	}

	// The same push again, to the running worker and then to a new one
	// (as after a pusher retried a send it had made): not shown again.
	deliver()
	d.call("cdp", map[string]any{"method": "ServiceWorker.stopAllWorkers"}, nil)
	deliver()
	time.Sleep(300 * time.Millisecond)
	// The tag would replace a second copy, so the first one's time tells.
	if again := d.notifications(); len(again) != 1 || again[0].Timestamp != want.Timestamp {
		t.Fatalf("after redelivery %+v, want only %+v", again, want)
	}
	if n := len(rb.all("POST", base+"/pings/delivered")); n != 1 {
		t.Fatalf("%d delivered pings, want 1", n)
	}

	// Clicks: an action opens its URL, the body the notification's; each
	// pings. Headless Chromium cannot click a notification nor open a
	// window outside a click, so the worker's click function is called
	// with the shown notification's data and openWindow records its URL.
	var opened []string
	d.worker(`(self.__opened = [], self.clients.openWindow = async (url) => { self.__opened.push(url); return null; }, true)`, nil)
	d.worker(`self.registration.getNotifications()
		.then((ns) => self.relaybellHandleClick(ns[0].data, 'buy'))
		.then(() => self.registration.getNotifications())
		.then((ns) => self.relaybellHandleClick(ns[0].data, ''))
		.then(() => self.__opened)`, &opened)
	if !reflect.DeepEqual(opened, []string{site.URL + "/buy", site.URL + "/sale"}) {
		t.Errorf("opened %q", opened)
	}
	clicks := rb.all("POST", base+"/pings/clicked")
	if len(clicks) != 2 ||
		string(clicks[0].Body) != fmt.Sprintf(`{"notificationId":%q,"endpointId":%q,"action":"buy"}`, id, ready.EndpointID) ||
		string(clicks[1].Body) != fmt.Sprintf(`{"notificationId":%q,"endpointId":%q}`, id, ready.EndpointID) {
		t.Errorf("clicked pings %q", clicks)
	}
	var dt detail
	if code := ts.call("GET", "/api/v1/notifications/"+id, w.APIKey, nil, &dt); code != 200 ||
		dt.Notification.Delivered != 1 || dt.Notification.Clicked != 1 || dt.Notification.Sent != 1 {
		t.Errorf("detail %d %+v", code, dt.Notification)
	}

	// The push service renews the subscription (pushsubscriptionchange,
	// which CDP cannot fire): the worker registers the new one in the old
	// one's place, and pushes go to the new one.
	b2 := ts.push.NewBrowser(w.VAPIDPublicKey)
	sub2 := b2.Subscription()
	var renewed ids
	d.worker(fmt.Sprintf(`self.relaybellResubscribe({ endpoint: %q },
		{ endpoint: %q, toJSON: () => ({ endpoint: %q, keys: { p256dh: %q, auth: %q } }) })`,
		sub.Endpoint, sub2.Endpoint, sub2.Endpoint, sub2.P256dh, sub2.Auth), &renewed)
	if renewed != same {
		t.Fatalf("renewed subscription: %+v, want the same ids %+v", renewed, same)
	}
	var workerEnv []string
	d.worker(`[navigator.language, Intl.DateTimeFormat().resolvedOptions().timeZone, navigator.userAgent]`, &workerEnv)
	regs := rb.all("POST", base+"/subscriptions")
	if want := fmt.Sprintf(`{"endpoint":%q,"keys":{"p256dh":%q,"auth":%q},"language":%q,"timezone":%q,"userAgent":%q,"replaces":%q,"replacesAuth":%q,"externalId":"user-42","topics":["sale"]}`,
		sub2.Endpoint, sub2.P256dh, sub2.Auth, workerEnv[0], workerEnv[1], workerEnv[2], sub.Endpoint, sub.Auth); string(regs[len(regs)-1].Body) != want {
		t.Fatalf("worker registered %s\nwant %s", regs[len(regs)-1].Body, want)
	}
	ep, err := ts.srv.store.Endpoint(context.Background(), w.WebsiteID, ready.EndpointID)
	if err != nil || ep.URL != sub2.Endpoint || ep.P256dh != sub2.P256dh || ep.Auth != sub2.Auth || ep.SubscriberID != ready.SubscriberID {
		t.Fatalf("renewed endpoint %+v (%v)", ep, err)
	}
	again := ts.send(w, map[string]any{"title": "Still there", "externalId": "user-42"})
	if dt := ts.waitSent(w, again); dt.Notification.Sent != 1 {
		t.Fatalf("send to the renewed subscription: %+v", dt.Notification)
	}
	if got := b2.Received(); len(got) != 1 || !bytes.Contains(got[0].Payload, []byte(again)) {
		t.Errorf("renewed subscription received %d pushes", len(got))
	}
	if n := len(b.Received()); n != 1 {
		t.Errorf("old subscription received %d pushes, want the first one only", n)
	}
	// The page sees the renewed subscription: nothing to replace. Renewed
	// again without the worker hearing of it (Chrome rarely tells it), the
	// page's next registration replaces the one it registered last.
	renew := func(s webpush.Subscription) {
		t.Helper()
		d.page(fmt.Sprintf(`window.__replaceSubscription({ endpoint: %q, p256dh: %q, auth: %q })`, s.Endpoint, s.P256dh, s.Auth), nil)
	}
	renew(sub2)
	sub3 := ts.push.NewBrowser(w.VAPIDPublicKey).Subscription()
	renew(sub3)
	var got ids
	d.page("RelayBell.setTopics(['sale'])", &got)
	regs = rb.all("POST", base+"/subscriptions")
	if want := pageRegistration(sub3, fmt.Sprintf(`,"replaces":%q,"replacesAuth":%q,"externalId":"user-42","topics":["sale"]`, sub2.Endpoint, sub2.Auth)); got != same || string(regs[len(regs)-1].Body) != want {
		t.Fatalf("registration of a renewal the page noticed: %+v %s\nwant %s", got, regs[len(regs)-1].Body, want)
	}
	if ep, err := ts.srv.store.Endpoint(context.Background(), w.WebsiteID, ready.EndpointID); err != nil || ep.URL != sub3.Endpoint || ep.P256dh != sub3.P256dh {
		t.Fatalf("endpoint renewed from the page %+v (%v)", ep, err)
	}

	// logout leaves user-42 (who keeps the topics) for a new anonymous
	// subscriber, and forgets the external id and the topics.
	var out ids
	d.page("RelayBell.logout()", &out)
	if out.EndpointID != ready.EndpointID || out.SubscriberID == ready.SubscriberID || out.SubscriberID == "" {
		t.Fatalf("logout: %+v, want endpoint %s under a new subscriber", out, ready.EndpointID)
	}
	regs = rb.all("POST", base+"/subscriptions")
	if want := pageRegistration(sub3, `,"externalId":null`); string(regs[len(regs)-1].Body) != want {
		t.Fatalf("logout registered %s\nwant %s", regs[len(regs)-1].Body, want)
	}
	if rec := ts.recipient(w, out.SubscriberID); rec.Subscriber.ExternalID != "" || rec.Endpoint.ID != ready.EndpointID {
		t.Errorf("stored after logout %+v", rec)
	}
	if got := ts.optins(w, out.SubscriberID); len(got) != 0 {
		t.Errorf("the anonymous subscriber's opt-ins %q", got)
	}
	person, err := ts.srv.store.Person(context.Background(), w.WebsiteID, "user-42")
	if err != nil || person.ID != ready.SubscriberID || person.Status() != "no_device" {
		t.Errorf("user-42 after logout %+v %s (%v)", person.Subscriber, person.Status(), err)
	}
	if got := ts.optins(w, ready.SubscriberID); !reflect.DeepEqual(got, []string{"sale"}) {
		t.Errorf("user-42's opt-ins after logout %q", got)
	}
	var state map[string]any
	d.page(`caches.open('relaybell').then(async (c) => (await c.match((await c.keys()).find((r) => r.url.includes('/state')))).json())`, &state)
	if !reflect.DeepEqual(state, map[string]any{"subscriberId": out.SubscriberID, "endpointId": out.EndpointID, "endpoint": sub3.Endpoint, "auth": sub3.Auth}) {
		t.Errorf("SDK state after logout %v", state)
	}

	// Turning notifications off tells RelayBell and the push manager.
	var unsubscribed bool
	d.page("RelayBell.unsubscribe().then(() => window.__unsubscribed === true)", &unsubscribed)
	del := rb.only(t, "DELETE", base+"/subscriptions")
	if !unsubscribed || string(del.Body) != fmt.Sprintf(`{"endpoint":%q}`, sub3.Endpoint) {
		t.Errorf("unsubscribe: %v %s", unsubscribed, del.Body)
	}
	if _, err := ts.srv.store.Endpoint(context.Background(), w.WebsiteID, ready.EndpointID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("endpoint after unsubscribe: %v", err)
	}
	t.Logf("browser test took %s", time.Since(started).Round(time.Millisecond))
}

type shownNotification struct {
	Title              string              `json:"title"`
	Body               string              `json:"body"`
	Icon               string              `json:"icon"`
	Image              string              `json:"image"`
	Badge              string              `json:"badge"`
	Tag                string              `json:"tag"`
	RequireInteraction bool                `json:"requireInteraction"`
	Timestamp          float64             `json:"timestamp"`
	Actions            []map[string]string `json:"actions"`
	Data               notificationData    `json:"data"`
}

type notificationData struct {
	NotificationID string            `json:"notificationId"`
	EndpointID     string            `json:"endpointId"`
	URL            string            `json:"url"`
	Actions        map[string]string `json:"actions"`
}

// optins returns the slugs of the topics the subscriber opted into, sorted.
func (ts *testServer) optins(w website, subscriberID string) []string {
	ts.t.Helper()
	ctx := context.Background()
	p, err := ts.srv.store.Person(ctx, w.WebsiteID, subscriberID)
	if err != nil {
		ts.t.Fatal(err)
	}
	topics, err := ts.srv.store.ListTopics(ctx, w.WebsiteID)
	if err != nil {
		ts.t.Fatal(err)
	}
	out := []string{}
	for _, tp := range topics {
		if slices.Contains(p.Topics, tp.ID) {
			out = append(out, tp.Slug)
		}
	}
	slices.Sort(out)
	return out
}

// recipient reads a subscriber and its endpoint back from the store.
func (ts *testServer) recipient(w website, subscriberID string) store.Recipient {
	ts.t.Helper()
	rs, err := ts.srv.store.Audience(context.Background(), store.AudienceQuery{
		WebsiteID: w.WebsiteID, Shard: store.ShardOf(subscriberID), Limit: 1000})
	if err != nil {
		ts.t.Fatal(err)
	}
	for _, r := range rs {
		if r.Subscriber.ID == subscriberID {
			return r
		}
	}
	ts.t.Fatalf("subscriber %s not stored", subscriberID)
	return store.Recipient{}
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// recorder is a reverse proxy in front of RelayBell that keeps every
// request the browser made, in the order they were answered.
type recorder struct {
	URL  string
	mu   sync.Mutex
	reqs []recorded
}

type recorded struct {
	Method, Path, Origin string
	Body                 []byte
}

func startRecorder(t *testing.T, target string) *recorder {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rc := &recorder{}
	proxy := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		// Kept once RelayBell has answered, so a test that waits for a
		// request sees its effect too (a delivered ping's, say).
		proxy.ServeHTTP(w, r)
		rc.mu.Lock()
		rc.reqs = append(rc.reqs, recorded{r.Method, r.URL.Path, r.Header.Get("Origin"), body})
		rc.mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	rc.URL = srv.URL
	return rc
}

// all returns the requests with that method and path, oldest first.
func (rc *recorder) all(method, path string) []recorded {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []recorded
	for _, r := range rc.reqs {
		if r.Method == method && r.Path == path {
			out = append(out, r)
		}
	}
	return out
}

func (rc *recorder) only(t *testing.T, method, path string) recorded {
	t.Helper()
	rs := rc.all(method, path)
	if len(rs) != 1 {
		t.Fatalf("%d requests %s %s, want 1", len(rs), method, path)
	}
	return rs[0]
}

// site is the customer's website: a page with the SDK tag, its service
// worker importing RelayBell's, and the images a notification shows.
type site struct {
	URL    string
	pushes atomic.Int64 // push events the worker saw
}

func startSite(t *testing.T, relaybell, projectID string) *site {
	s := &site{}
	scripts := relaybell + "/api/v1/projects/" + projectID
	var img bytes.Buffer
	png.Encode(&img, image.NewGray(image.Rect(0, 0, 8, 8)))
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<!doctype html><meta charset=utf-8><title>Shop</title><h1>Shop</h1>\n<script src=%q async></script>\n", scripts+"/sdk.js")
	})
	mux.HandleFunc("GET /relaybell-sw.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		// The site's own push handler after RelayBell's tells the test
		// that the worker got a push.
		fmt.Fprintf(w, "importScripts(%q);\nself.addEventListener('push', (e) => e.waitUntil(fetch('/pushed', { method: 'POST' })));\n", scripts+"/sw.js")
	})
	mux.HandleFunc("POST /pushed", func(w http.ResponseWriter, r *http.Request) { s.pushes.Add(1) })
	mux.HandleFunc("GET /{name}", func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.PathValue("name"), ".png") {
			w.Header().Set("Content-Type", "image/png")
			w.Write(img.Bytes())
			return
		}
		fmt.Fprintf(w, "<!doctype html><title>%s</title>", r.PathValue("name"))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// driver talks to sdk/browsertest/driver.mjs over its stdin and stdout.
type driver struct {
	t       *testing.T
	in      io.WriteCloser
	answers chan driverAnswer
	next    int
}

type driverAnswer struct {
	ID    int             `json:"id"`
	Value json.RawMessage `json:"value"`
	Error string          `json:"error"`
}

// startDriver starts the driver, or skips the test when Chromium, node or
// the npm packages are missing (fails instead under CI).
func startDriver(t *testing.T) *driver {
	t.Helper()
	if testing.Short() {
		t.Skip("browser test: skipped with -short")
	}
	dir, err := filepath.Abs(filepath.Join("..", "sdk", "browsertest"))
	if err != nil {
		t.Fatal(err)
	}
	node, nodeErr := exec.LookPath("node")
	_, chromiumErr := os.Stat(chromiumPath)
	_, npmErr := os.Stat(filepath.Join(dir, "node_modules", "playwright-core"))
	for _, missing := range []struct {
		err  error
		what string
	}{
		{chromiumErr, "Chromium at " + chromiumPath + " (apt-get install chromium)"},
		{nodeErr, "node (apt-get install nodejs npm)"},
		{npmErr, "playwright-core (npm ci in sdk/browsertest)"},
	} {
		if missing.err == nil {
			continue
		}
		if os.Getenv("CI") != "" {
			t.Fatalf("browser test: no %s", missing.what)
		}
		t.Skipf("browser test: no %s", missing.what)
	}

	cmd := exec.Command(node, filepath.Join(dir, "driver.mjs"))
	cmd.Dir = dir
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d := &driver{t: t, in: in, answers: make(chan driverAnswer)}
	go func() {
		defer close(d.answers)
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			var a driverAnswer
			if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
				stderr.Write(append([]byte("stdout: "), sc.Bytes()...))
				continue
			}
			d.answers <- a
		}
	}()
	t.Cleanup(func() {
		in.Close() // the driver closes Chromium and exits
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if s := stderr.String(); s != "" && (t.Failed() || testing.Verbose()) {
			t.Logf("driver stderr:\n%s", s)
		}
	})
	return d
}

// call runs one driver command and decodes its value into out (when not
// nil).
func (d *driver) call(cmd string, args any, out any) {
	d.t.Helper()
	d.next++
	line, err := json.Marshal(map[string]any{"id": d.next, "cmd": cmd, "args": args})
	if err != nil {
		d.t.Fatal(err)
	}
	if _, err := d.in.Write(append(line, '\n')); err != nil {
		d.t.Fatalf("driver %s: %v", cmd, err)
	}
	select {
	case a, ok := <-d.answers:
		switch {
		case !ok:
			d.t.Fatalf("driver %s: the driver exited", cmd)
		case a.ID != d.next:
			d.t.Fatalf("driver %s: answer %d, want %d", cmd, a.ID, d.next)
		case a.Error != "":
			d.t.Fatalf("driver %s: %s", cmd, a.Error)
		}
		if out != nil {
			if err := json.Unmarshal(a.Value, out); err != nil {
				d.t.Fatalf("driver %s: %s: %v", cmd, a.Value, err)
			}
		}
	case <-time.After(30 * time.Second):
		d.t.Fatalf("driver %s: no answer in 30s", cmd)
	}
}

// page and worker evaluate a JavaScript expression, awaiting its value.
func (d *driver) page(expr string, out any) {
	d.t.Helper()
	d.call("page", map[string]string{"expr": expr}, out)
}

func (d *driver) worker(expr string, out any) {
	d.t.Helper()
	d.call("worker", map[string]string{"expr": expr}, out)
}

// notifications reads back what the worker shows.
func (d *driver) notifications() []shownNotification {
	d.t.Helper()
	var out []shownNotification
	d.page(`navigator.serviceWorker.ready.then((r) => r.getNotifications()).then((ns) => ns.map((n) => ({
		title: n.title, body: n.body, icon: n.icon, image: n.image, badge: n.badge, tag: n.tag,
		requireInteraction: n.requireInteraction, timestamp: n.timestamp, actions: n.actions.map((a) => ({ action: a.action, title: a.title, icon: a.icon })), data: n.data })))`, &out)
	return out
}

// registrationID is the service worker registration of scope, as the
// DevTools protocol names it.
func (d *driver) registrationID(scope string) string {
	d.t.Helper()
	var regs []struct {
		RegistrationID string `json:"registrationId"`
		ScopeURL       string `json:"scopeURL"`
		IsDeleted      bool   `json:"isDeleted"`
	}
	d.call("registrations", nil, &regs)
	for _, r := range regs {
		if r.ScopeURL == scope && !r.IsDeleted {
			return r.RegistrationID
		}
	}
	d.t.Fatalf("no service worker registration for %s in %+v", scope, regs)
	return ""
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
