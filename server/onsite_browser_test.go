package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// On the website itself (issue 36): the prompt and on-site messages, as
// the real SDK shows them on a page this test serves, in Chromium. The
// page's clock is Playwright's fake one, so delays and days pass when the
// test says and a slow machine changes nothing.

// hostileCSS is a page stylesheet that tries to hide, shrink and restyle
// everything, with !important.
const hostileCSS = `* { visibility: hidden !important; opacity: 0 !important; font-size: 2px !important;
  color: transparent !important; transform: scale(0) !important; pointer-events: none !important; }
html, body, h1, p.page { visibility: visible !important; opacity: 1 !important; transform: none !important; pointer-events: auto !important; }
div, button, p { display: none !important; background: red !important; position: static !important; }
[role], dialog, section, img { display: none !important; }
:root { --rb: 0; } relaybell-ui, [data-relaybell] { display: none !important; }`

// onsiteSite serves the customer's pages: any path is a page with the
// SDK; pages under /hostile carry hostileCSS.
func onsiteSite(t *testing.T, relaybell, projectID string) string {
	t.Helper()
	script := relaybell + "/api/v1/projects/" + projectID + "/sdk.js"
	mux := http.NewServeMux()
	mux.HandleFunc("GET /relaybell-sw.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		fmt.Fprintf(w, "importScripts(%q);\n", relaybell+"/api/v1/projects/"+projectID+"/sw.js")
	})
	mux.HandleFunc("GET /", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		style := ""
		if strings.HasPrefix(r.URL.Path, "/hostile") {
			style = "<style>" + hostileCSS + "</style>"
		}
		fmt.Fprintf(w, "<!doctype html><meta charset=utf-8><title>Shop</title>%s<h1>Shop %s</h1>"+
			"<p class=page>A long page.</p><div style=\"height:3000px\"></div><button type=button>Page button</button>"+
			"<script src=%q async></script>\n", style, r.URL.Path, script)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

// t0Page is the fake clock's start in the page.
var t0Page = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// visitor is a Chromium visitor of the customer's site.
type visitor struct {
	t    *testing.T
	d    *driver
	ts   *testServer
	w    website
	site string
}

// startVisitor launches Chromium on the site with the fake clock at
// t0Page; permission "default" has the visitor not asked yet (stubAsk),
// "granted" subscribed already.
func startVisitor(t *testing.T, ts *testServer, w website, permission string) *visitor {
	t.Helper()
	return startVisitorAs(t, ts, w, permission, "", "en-US")
}

// startVisitorAs is startVisitor with the browser's User-Agent ("" is
// Chromium's own) and language.
func startVisitorAs(t *testing.T, ts *testServer, w website, permission, userAgent, locale string) *visitor {
	t.Helper()
	v := &visitor{t: t, d: startDriver(t), ts: ts, w: w, site: onsiteSite(t, ts.base, w.ProjectID)}
	b := ts.push.NewBrowser(w.VAPIDPublicKey)
	sub := b.Subscription()
	v.d.call("launch", map[string]any{
		"executablePath": chromiumPath, "origin": v.site, "locale": locale, "timezoneId": "UTC", "permission": permission, "userAgent": userAgent,
		"subscription": map[string]string{"endpoint": sub.Endpoint, "p256dh": sub.P256dh, "auth": sub.Auth},
	}, nil)
	v.d.call("clock", map[string]any{"time": t0Page.UnixMilli()}, nil)
	return v
}

// open loads a page of the site and waits for the SDK's page-load work.
func (v *visitor) open(path string) {
	v.t.Helper()
	v.d.call("goto", map[string]string{"url": v.site + path}, nil)
	var ready map[string]any
	v.d.page("RelayBell.ready", &ready)
}

func (v *visitor) role(role, name, action string) string {
	v.t.Helper()
	var out string
	v.d.call("role", map[string]any{"role": role, "name": name, "action": action}, &out)
	return out
}

func (v *visitor) count(role, name string) string { return v.role(role, name, "count") }

// focused is the text or label of what has the focus, inside shadow
// roots too.
func (v *visitor) focused() string {
	v.t.Helper()
	var out string
	v.d.page(`(() => { let e = document.activeElement; while (e && e.shadowRoot && e.shadowRoot.activeElement) e = e.shadowRoot.activeElement;
		return e ? (e.getAttribute('aria-label') || e.textContent || '').trim() : ''; })()`, &out)
	return out
}

func (v *visitor) press(keys ...string) {
	v.t.Helper()
	steps := make([]map[string]string, len(keys))
	for i, k := range keys {
		steps[i] = map[string]string{"press": k}
	}
	v.d.call("keyboard", map[string]any{"steps": steps}, nil)
}

func (v *visitor) tick(d time.Duration) {
	v.t.Helper()
	v.d.call("tick", map[string]any{"ms": d.Milliseconds()}, nil)
}

// asks are the permission questions the page asked, each with whether it
// had a user gesture.
func (v *visitor) asks() []map[string]any {
	v.t.Helper()
	var out []map[string]any
	v.d.page("window.__rbAsks || []", &out)
	return out
}

// promptStats reads /stats' prompts as "kind impressions/accepts/dismissals".
func (v *visitor) promptStats() string {
	v.t.Helper()
	var st struct {
		Prompts []struct {
			Kind                             string
			Impressions, Accepts, Dismissals int
		} `json:"prompts"`
	}
	if code := v.ts.call("GET", "/api/v1/stats", v.w.APIKey, nil, &st); code != 200 {
		v.t.Fatalf("GET /stats: %d", code)
	}
	var parts []string
	for _, p := range st.Prompts {
		parts = append(parts, fmt.Sprintf("%s %d/%d/%d", p.Kind, p.Impressions, p.Accepts, p.Dismissals))
	}
	return strings.Join(parts, ", ")
}

func (v *visitor) messageStats(id string) string {
	v.t.Helper()
	var m struct {
		Stats struct{ Impressions, Clicks, Dismissals int } `json:"stats"`
	}
	if code := v.ts.call("GET", "/api/v1/onsite/"+id, v.w.APIKey, nil, &m); code != 200 {
		v.t.Fatalf("GET /onsite/%s: %d", id, code)
	}
	return fmt.Sprintf("%d/%d/%d", m.Stats.Impressions, m.Stats.Clicks, m.Stats.Dismissals)
}

func putPrompt(t *testing.T, ts *testServer, w website, body string) {
	t.Helper()
	var out map[string]any
	if code := ts.call("PUT", "/api/v1/prompt", w.APIKey, json.RawMessage(body), &out); code != 200 {
		t.Fatalf("PUT /prompt %s: %d %v", body, code, out)
	}
}

func newMessage(t *testing.T, ts *testServer, w website, body string) string {
	t.Helper()
	var out map[string]any
	if code := ts.call("POST", "/api/v1/onsite", w.APIKey, json.RawMessage(body), &out); code != 201 {
		t.Fatalf("POST /onsite %s: %d %v", body, code, out)
	}
	return out["id"].(string)
}

// TestBrowserSoftPrompt: the soft prompt shows after its delay, not
// before, with the focus on its first button; its accept asks the browser
// in that click (a gesture) and subscribes; the next page view does not
// show it again. Counted in /stats.
func TestBrowserSoftPrompt(t *testing.T) {
	ts := startServer(t)
	w := ts.createWebsite()
	putPrompt(t, ts, w, `{"enabled":true,"kind":"soft","style":"slide-down","when":{"seconds":5},`+
		`"texts":{"title":"Stay in the loop","message":"New arrivals, first.","accept":"Yes please","dismiss":"Later"},"exclude":["/checkout*"]}`)
	v := startVisitor(t, ts, w, "default")

	v.open("/checkout")
	v.tick(10 * time.Second)
	if n := v.count("dialog", "Stay in the loop"); n != "0" {
		t.Fatalf("shown on an excluded page: %s", n)
	}
	v.open("/")
	v.tick(4 * time.Second)
	if n := v.count("dialog", "Stay in the loop"); n != "0" {
		t.Fatalf("shown before its delay: %s", n)
	}
	v.tick(1500 * time.Millisecond)
	v.role("dialog", "Stay in the loop", "wait")
	if f := v.focused(); f != "Yes please" {
		t.Fatalf("focus on %q, want the accept button", f)
	}
	(&dashboard{t: t, d: v.d, ts: ts}).shoot("prompt-soft-slide-down")
	v.role("button", "Yes please", "click")
	waitFor(t, "the subscription", func() bool { return v.promptStats() == "soft 1/1/0" })
	if asks := v.asks(); len(asks) != 1 || asks[0]["gesture"] != true {
		t.Fatalf("asked %v, want once, in the click", asks)
	}
	var subs struct {
		Items []map[string]any `json:"items"`
	}
	waitFor(t, "the registration", func() bool {
		ts.call("GET", "/api/v1/audience/subscribers", w.APIKey, nil, &subs)
		return len(subs.Items) == 1
	})

	// Subscribed: the next page views show it no more.
	v.open("/")
	v.tick(time.Minute)
	if n := v.count("dialog", "Stay in the loop"); n != "0" {
		t.Fatalf("shown again after the accept: %s", n)
	}
	if got := v.promptStats(); got != "soft 1/1/0" {
		t.Fatalf("stats %s", got)
	}
}

// TestBrowserPromptDismissal: a modal soft prompt, from the keyboard: the
// focus moves in, Tab stays inside, Escape closes it and counts a
// dismissal, the focus goes back; it waits its dismissDays before showing
// again; nothing moves under prefers-reduced-motion.
func TestBrowserPromptDismissal(t *testing.T) {
	ts := startServer(t)
	w := ts.createWebsite()
	putPrompt(t, ts, w, `{"enabled":true,"kind":"soft","style":"modal","dismissDays":3,`+
		`"texts":{"title":"Stay in the loop","accept":"Yes please","dismiss":"Later"},"translations":{"de":{"title":"Bleib dran"}}}`)
	v := startVisitor(t, ts, w, "default")
	v.d.call("media", map[string]any{"reducedMotion": "reduce"}, nil)
	v.open("/")
	v.role("dialog", "Stay in the loop", "wait")
	var anim string
	v.d.page(`getComputedStyle(document.querySelector('relaybell-ui').shadowRoot.querySelector('[role=dialog]')).animationName`, &anim)
	if anim != "none" {
		t.Fatalf("animation %q under reduced motion", anim)
	}
	if f := v.focused(); f != "Yes please" {
		t.Fatalf("focus on %q", f)
	}
	v.press("Tab")
	if f := v.focused(); f != "Later" {
		t.Fatalf("after Tab: %q", f)
	}
	v.press("Tab")
	if f := v.focused(); f != "Yes please" {
		t.Fatalf("Tab left the modal: %q", f)
	}
	v.press("Shift+Tab")
	if f := v.focused(); f != "Later" {
		t.Fatalf("after Shift+Tab: %q", f)
	}
	(&dashboard{t: t, d: v.d, ts: ts}).shoot("prompt-soft-modal")
	v.press("Escape")
	if n := v.count("dialog", "Stay in the loop"); n != "0" {
		t.Fatalf("Escape left it open: %s", n)
	}
	waitFor(t, "the dismissal", func() bool { return v.promptStats() == "soft 1/0/1" })
	if len(v.asks()) != 0 {
		t.Fatal("the browser was asked after a dismissal")
	}

	for _, c := range []struct {
		at    time.Duration
		shown string
	}{
		{time.Hour, "0"},
		{2*24*time.Hour + 23*time.Hour, "0"},
		{3*24*time.Hour + time.Minute, "1"},
	} {
		v.d.call("jump", map[string]any{"time": t0Page.Add(c.at).UnixMilli()}, nil)
		v.open("/")
		v.tick(time.Second)
		if c.shown == "1" {
			v.role("dialog", "Stay in the loop", "wait")
		}
		if n := v.count("dialog", "Stay in the loop"); n != c.shown {
			t.Fatalf("%v after the dismissal: %s shown, want %s", c.at, n, c.shown)
		}
	}
}

// TestBrowserBellAndNative: the bell asks when clicked (a gesture) and
// goes once subscribed; a native prompt waits for the visitor's first
// gesture, however long the page is open.
func TestBrowserBellAndNative(t *testing.T) {
	ts := startServer(t)
	w := ts.createWebsite()
	putPrompt(t, ts, w, `{"enabled":true,"kind":"bell","texts":{"title":"Get notifications"}}`)
	v := startVisitor(t, ts, w, "default")
	v.open("/")
	v.role("button", "Get notifications", "wait")
	(&dashboard{t: t, d: v.d, ts: ts}).shoot("prompt-bell")
	if len(v.asks()) != 0 {
		t.Fatal("asked before the click")
	}
	v.role("button", "Get notifications", "click")
	waitFor(t, "the bell's subscription", func() bool { return v.promptStats() == "bell 1/1/0" })
	if asks := v.asks(); len(asks) != 1 || asks[0]["gesture"] != true {
		t.Fatalf("asked %v", asks)
	}
	waitFor(t, "the bell gone", func() bool { return v.count("button", "Get notifications") == "0" })

	// Native: no question on load, one at the first click.
	putPrompt(t, ts, w, `{"kind":"native"}`)
	v.d.page(`localStorage.clear()`, nil)
	v.open("/")
	v.tick(time.Hour)
	if len(v.asks()) != 0 {
		t.Fatal("a native prompt asked without a gesture")
	}
	v.role("heading", "Shop /", "click")
	waitFor(t, "the native question", func() bool { return len(v.asks()) == 1 })
	if asks := v.asks(); asks[0]["gesture"] != true {
		t.Fatalf("asked %v", asks)
	}
	waitFor(t, "the native accept", func() bool { return v.promptStats() == "bell 1/1/0, native 1/1/0" })
}

// TestBrowserOnsiteMessages: messages targeted by URL and by subscribed
// state; the impression, the click and a dismissal by Escape counted;
// frequency once per visitor.
func TestBrowserOnsiteMessages(t *testing.T) {
	ts := startServer(t)
	w := ts.createWebsite()
	v := startVisitor(t, ts, w, "granted") // subscribed on its first page view
	ship := newMessage(t, ts, w, `{"name":"Shipping","status":"active","kind":"banner","title":"Free shipping","text":"On every order this week.",`+
		`"buttons":[{"label":"See offers","action":"link","url":"`+v.site+`/offers"},{"label":"Close","action":"close"}],`+
		`"targeting":{"include":["/shop*"],"subscribed":"yes"},"frequency":"every"}`)
	join := newMessage(t, ts, w, `{"name":"Join","status":"active","kind":"modal","title":"Join us","text":"Subscribe for news.",`+
		`"buttons":[{"label":"Subscribe","action":"subscribe"}],"targeting":{"subscribed":"no"}}`)
	blog := newMessage(t, ts, w, `{"name":"Blog","status":"active","kind":"slide-in","title":"Blog news","text":"Read the latest.",`+
		`"targeting":{"include":["/blog*"]},"frequency":"once"}`)

	v.open("/shop/shoes")
	v.role("region", "Free shipping", "wait")
	for _, name := range []string{"Join us", "Blog news"} {
		if n := v.count("dialog", name); n != "0" {
			t.Fatalf("%s shown on /shop/shoes to a subscriber: %s", name, n)
		}
	}
	waitFor(t, "the impression", func() bool { return v.messageStats(ship) == "1/0/0" })
	(&dashboard{t: t, d: v.d, ts: ts}).shoot("onsite-banner")
	v.role("button", "See offers", "click")
	v.role("heading", "Shop /offers", "wait")
	waitFor(t, "the click", func() bool { return v.messageStats(ship) == "1/1/0" })

	// The slide-in on the blog, once per visitor: Escape dismisses it.
	v.open("/blog/post")
	v.role("dialog", "Blog news", "wait")
	if n := v.count("region", "Free shipping"); n != "0" {
		t.Fatalf("the shop's banner on the blog: %s", n)
	}
	if f := v.focused(); f != "×" {
		t.Fatalf("focus on %q, want the close button", f)
	}
	v.press("Escape")
	waitFor(t, "the dismissal", func() bool { return v.messageStats(blog) == "1/0/1" })
	v.open("/blog/other")
	v.tick(time.Second)
	if n := v.count("dialog", "Blog news"); n != "0" {
		t.Fatal("a once-per-visitor message shown twice")
	}
	if got := v.messageStats(join); got != "0/0/0" {
		t.Fatalf("the message for visitors not subscribed: %s", got)
	}
}

// TestBrowserHostileStylesheet: a page whose stylesheet hides, shrinks and
// restyles everything with !important breaks neither the prompt nor a
// message (targeted to a visitor not subscribed), and the SDK's styles do
// not leak onto the page.
func TestBrowserHostileStylesheet(t *testing.T) {
	ts := startServer(t)
	w := ts.createWebsite()
	putPrompt(t, ts, w, `{"enabled":true,"kind":"soft","style":"slide-down","include":["/hostile/prompt"],`+
		`"texts":{"title":"Stay in the loop","accept":"Yes please","dismiss":"Later"}}`)
	join := newMessage(t, ts, w, `{"name":"Join","status":"active","kind":"modal","title":"Join us","text":"<b>Subscribe</b> for news.",`+
		`"buttons":[{"label":"Subscribe","action":"subscribe"},{"label":"No thanks","action":"close"}],`+
		`"targeting":{"include":["/hostile/message"],"subscribed":"no"}}`)
	v := startVisitor(t, ts, w, "default")
	// No fade-in, so that the computed opacity is the settled one.
	v.d.call("media", map[string]any{"reducedMotion": "reduce"}, nil)

	v.open("/hostile/message")
	v.role("dialog", "Join us", "wait")
	var look struct {
		FontSize   string `json:"fontSize"`
		Visibility string `json:"visibility"`
		Opacity    string `json:"opacity"`
		Text       string `json:"text"`
		Bold       int    `json:"bold"`
		PageButton string `json:"pageButton"`
	}
	v.d.page(`(() => { const box = document.querySelector('relaybell-ui').shadowRoot.querySelector('[role=dialog]');
		const s = getComputedStyle(box);
		return { fontSize: s.fontSize, visibility: s.visibility, opacity: s.opacity, text: box.querySelector('.text').textContent,
			bold: box.querySelectorAll('b').length, pageButton: getComputedStyle(document.querySelector('body > button')).backgroundColor }; })()`, &look)
	if look.FontSize != "15px" || look.Visibility != "visible" || look.Opacity != "1" || look.Text != "<b>Subscribe</b> for news." || look.Bold != 0 {
		t.Fatalf("the message under the hostile sheet: %+v", look)
	}
	if look.PageButton != "rgb(255, 0, 0)" {
		t.Fatalf("the page's own button is %s: the SDK's styles leaked", look.PageButton)
	}
	(&dashboard{t: t, d: v.d, ts: ts}).shoot("onsite-hostile-modal")
	v.role("button", "No thanks", "click")
	waitFor(t, "the dismissal", func() bool { return v.messageStats(join) == "1/0/1" })

	v.open("/hostile/prompt")
	v.role("dialog", "Stay in the loop", "wait")
	v.role("button", "Yes please", "click")
	waitFor(t, "the accept", func() bool { return v.promptStats() == "soft 1/1/0" })
}

// TestBrowserIOSHint: Safari on iOS outside a home-screen app cannot
// subscribe, so the prompt says how to add the site to the home screen,
// and never asks the browser.
func TestBrowserIOSHint(t *testing.T) {
	ts := startServer(t)
	w := ts.createWebsite()
	putPrompt(t, ts, w, `{"enabled":true,"kind":"soft","style":"slide-down","texts":{"title":"Stay in the loop","dismiss":"Got it"}}`)
	v := startVisitorAs(t, ts, w, "default",
		"Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1", "en-US")
	v.open("/")
	v.role("dialog", "Stay in the loop", "wait")
	var text string
	v.d.page(`document.querySelector('relaybell-ui').shadowRoot.querySelector('.text').textContent`, &text)
	if text != "To get notifications, tap Share and then Add to Home Screen." {
		t.Fatalf("the hint says %q", text)
	}
	if n := v.count("button", "Allow"); n != "0" {
		t.Fatal("an accept button where the request cannot succeed")
	}
	v.role("button", "Got it", "click")
	waitFor(t, "the dismissal", func() bool { return v.promptStats() == "soft 1/0/1" })
	if len(v.asks()) != 0 {
		t.Fatal("the browser was asked on iOS outside a home-screen app")
	}
}

// TestBrowserPromptTranslation: a visitor whose browser speaks German
// gets the German texts, the main ones where the translation has none.
func TestBrowserPromptTranslation(t *testing.T) {
	ts := startServer(t)
	w := ts.createWebsite()
	putPrompt(t, ts, w, `{"enabled":true,"kind":"soft","style":"modal","texts":{"title":"Stay in the loop","accept":"Yes please","dismiss":"Later"},`+
		`"translations":{"de":{"title":"Bleib dran","dismiss":"Später"}}}`)
	v := startVisitorAs(t, ts, w, "default", "", "de-DE")
	v.open("/")
	v.role("dialog", "Bleib dran", "wait")
	for _, name := range []string{"Yes please", "Später"} {
		if n := v.count("button", name); n != "1" {
			t.Fatalf("button %q: %s", name, n)
		}
	}
}
