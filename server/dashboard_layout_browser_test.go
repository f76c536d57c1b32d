package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/relaybell/relaybell/notification"
)

// reload loads the dashboard at #/path afresh (a new query makes it a
// load, not a change of fragment), and waits for heading.
func (b *dashboard) reload(tag, path, heading string) {
	b.t.Helper()
	b.d.call("goto", map[string]string{"url": b.ts.base + "/?" + tag + "#/" + path}, nil)
	b.heading(heading)
}

// hash is the page's address fragment.
func (b *dashboard) hash() string {
	b.t.Helper()
	var h string
	b.d.page(`location.hash`, &h)
	return h
}

// mainText is the text of the page's main region.
func (b *dashboard) mainText() string {
	b.t.Helper()
	var s string
	b.d.page(`document.querySelector('main').textContent`, &s)
	return s
}

// thousandsGB writes n as en-GB does: 3,993.
func thousandsGB(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// TestDashboardComposerKeepsWork: the composer's form survives a reload
// (with a notice and Start over), a change of page asks first and stays
// when refused, a reload or close is warned of, and a sent form is gone.
// The push's size is shown as typed, to the byte the pusher encodes, and
// the title's length with what each platform shows.
func TestDashboardComposerKeepsWork(t *testing.T) {
	ts := startServer(t)
	b, w := startDashboard(t, ts)
	role, heading := b.role, b.heading
	ts.subscribe(w, ts.push.NewBrowser(w.VAPIDPublicKey), nil)
	kept := func() string {
		var s string
		b.d.page(`localStorage.getItem('relaybell.unsent.`+w.ProjectID+`') || ''`, &s)
		return s
	}
	warnsOnUnload := func() bool {
		var prevented bool
		b.d.page(`(() => { const e = new Event('beforeunload', {cancelable: true}); window.dispatchEvent(e); return e.defaultPrevented; })()`, &prevented)
		return prevented
	}

	role("link", "New notification", "click")
	heading("New notification")
	if warnsOnUnload() || kept() != "" {
		t.Fatal("an untouched composer warns or is kept")
	}
	const title, link, icon = `Hello {name|friend} "<é>"`, "https://shop.example/spring?utm_source=a&utm_medium=b&utm_campaign=c", "https://shop.example/icon.png"
	role("textbox", "Title", "fill", title)
	role("textbox", "Message", "fill", "Half price\u2028today")
	role("textbox", "Link", "fill", link)
	role("textbox", "Icon", "fill", icon)
	if got, want := role("textbox", "Title", "description"), "18 characters. Windows shows about 60, macOS about 40, Android about 40."; got != want {
		t.Errorf("title's counter %q, want %q", got, want)
	}
	// The push the pusher would encode, with ids of real length.
	size := func(body string) int {
		id := strings.Repeat("0", 36)
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		enc.Encode(notification.Payload{NotificationID: id, EndpointID: id, Title: `Hello friend "<é>"`, Body: body, URL: link, Icon: icon,
			Actions: []notification.Action{}})
		return buf.Len() - 1
	}
	budget := func() string {
		var s string
		b.d.page(`document.getElementById('budget').textContent`, &s)
		return s
	}
	if got, want := budget(), "Push size: "+thousandsGB(3993-size("Half price\u2028today"))+" bytes left of 3,993."; got != want {
		t.Errorf("budget %q, want %q", got, want)
	}
	if !warnsOnUnload() || !strings.Contains(kept(), `"title":"Hello {name|friend} \"<é>\""`) {
		t.Fatalf("an unsent form is not warned of or kept: %q", kept())
	}

	// A reload brings it back, with a notice.
	b.reload("reloaded", "compose", "New notification")
	if got := role("textbox", "Title", "value"); got != title {
		t.Fatalf("title after a reload %q", got)
	}
	if role("textbox", "Message", "value") != "Half price\u2028today" || role("textbox", "Link", "value") != link {
		t.Fatal("message or link not restored")
	}
	if !strings.Contains(b.mainText(), "Restored your unsent notification.") {
		t.Fatal("no notice of the restored form")
	}

	// Leaving by a link asks; refused, the composer stays as it was. (The
	// restored form guards the page once its effects ran: waited for, as a
	// person's click comes after the paint.)
	waitFor(t, "the restored form guarding the page", warnsOnUnload)
	b.d.page(`(window.__asked = [], window.confirm = (m) => (window.__asked.push(m), false), true)`, nil)
	role("link", "Notifications", "click")
	// The fragment's change reaches the router as a hashchange event,
	// queued after the click: waited for.
	var asked []string
	waitFor(t, "the question before leaving", func() bool {
		b.d.page(`window.__asked`, &asked)
		return len(asked) > 0
	})
	if len(asked) != 1 || asked[0] != "Leave the composer? Your unsent notification will be discarded." {
		t.Fatalf("asked %q", asked)
	}
	if h := b.hash(); h != "#/compose" || role("textbox", "Title", "value") != title {
		t.Fatalf("after refusing to leave: %s, title %q", h, role("textbox", "Title", "value"))
	}

	// Over what a push holds, the budget says by how much.
	long := strings.Repeat("x", 4000)
	role("textbox", "Message", "fill", long)
	if got, want := budget(), "Push size: "+thousandsGB(size(long)-3993)+" bytes over the 3,993 a push holds: shorten the longest text."; got != want {
		t.Errorf("budget %q, want %q", got, want)
	}

	// Start over empties the form and what was kept.
	role("button", "Start over", "click")
	if role("textbox", "Title", "value") != "" || role("textbox", "Message", "value") != "" || kept() != "" || warnsOnUnload() {
		t.Fatal("Start over left the form or what was kept")
	}
	if role("button", "Start over", "count") != "0" {
		t.Fatal("the notice stayed")
	}

	// Filled again, reloaded, sent: a reload then shows an empty form.
	// (The form is kept by an effect after the paint: waited for, as a
	// person's reload comes after it. Under the race detector the reload
	// came first, and nothing was kept.)
	role("textbox", "Title", "fill", "Spring sale")
	waitFor(t, "the form kept again", func() bool { return strings.Contains(kept(), `"title":"Spring sale"`) })
	b.reload("again", "compose", "New notification")
	if got := role("textbox", "Title", "value"); got != "Spring sale" {
		t.Fatalf("title after the second reload %q", got)
	}
	role("button", "Review and send", "click")
	role("dialog", "Send “Spring sale”?", "wait")
	role("button", "Send", "click")
	heading("Spring sale")
	if kept() != "" || warnsOnUnload() {
		t.Fatal("a sent form is still kept or warned of")
	}
	b.reload("sent", "compose", "New notification")
	if got := role("textbox", "Title", "value"); got != "" || strings.Contains(b.mainText(), "Restored") {
		t.Fatalf("after sending, the composer shows %q", got)
	}

	// Leaving a changed form and saying yes discards it.
	role("textbox", "Title", "fill", "Gone")
	role("link", "Home", "click") // the driver answers yes
	role("heading", "Latest sends", "wait")
	if kept() != "" {
		t.Fatalf("a form discarded on leaving is kept: %q", kept())
	}
}

// TestDashboardFiltersInAddress: the notifications' and the audience's
// filters live in the address, so back from a detail and a reload show
// the same filters and the same rows.
func TestDashboardFiltersInAddress(t *testing.T) {
	ts := startServer(t)
	b, w := startDashboard(t, ts)
	role, heading := b.role, b.heading
	for _, p := range []struct{ id, language string }{{"fr-1", "fr"}, {"de-1", "de"}} {
		ts.subscribe(w, ts.push.NewBrowser(w.VAPIDPublicKey), map[string]any{"externalId": p.id, "language": p.language})
	}
	var sale, news struct{ NotificationID string }
	b.api("POST", "/notifications", `{title: 'Spring sale'}`, &sale)
	b.api("POST", "/notifications", `{title: 'Winter news'}`, &news)
	waitFor(t, "both sent", func() bool {
		var l struct{ Items []struct{ Status string } }
		b.api("GET", "/notifications?status=sent", "", &l)
		return len(l.Items) == 2
	})

	role("link", "Notifications", "click")
	heading("Notifications")
	role("searchbox", "Search", "fill", "sale")
	role("combobox", "Status", "select", "sent")
	role("button", "Filter", "click")
	listedOnly := func() {
		t.Helper()
		waitFor(t, "the sale alone", func() bool {
			return role("link", "Spring sale", "count") == "1" && role("link", "Winter news", "count") == "0"
		})
		if q, s := role("searchbox", "Search", "value"), role("combobox", "Status", "value"); q != "sale" || s != "sent" {
			t.Fatalf("filters shown: %q, %q", q, s)
		}
	}
	listedOnly()
	if h := b.hash(); h != "#/notifications?status=sent&q=sale" {
		t.Fatalf("address %q", h)
	}
	role("link", "Spring sale", "click")
	heading("Spring sale")
	b.d.page(`history.back()`, nil)
	heading("Notifications")
	listedOnly()
	b.reload("reloaded", "notifications?status=sent&q=sale", "Notifications")
	listedOnly()

	// The audience: a language and a rule, kept by back and reload.
	role("link", "Audience", "click")
	heading("Audience")
	role("link", "de-1", "wait")
	role("combobox", "Language", "select", "fr")
	role("button", "More filters", "click")
	role("combobox", "Field of people rule 1", "select", "external_id")
	role("combobox", "Condition of people rule 1", "select", "contains")
	role("textbox", "Value of people rule 1", "fill", "fr")
	role("button", "Filter", "click")
	frOnly := func() {
		t.Helper()
		// The language select shows its value once its choices (the
		// facets) have loaded, which may come after the list.
		waitFor(t, "fr-1 alone, its filters shown", func() bool {
			return role("link", "fr-1", "count") == "1" && role("link", "de-1", "count") == "0" &&
				role("combobox", "Language", "value") == "fr" && role("textbox", "Value of people rule 1", "value") == "fr"
		})
		if l, v := role("combobox", "Language", "value"), role("textbox", "Value of people rule 1", "value"); l != "fr" || v != "fr" {
			t.Fatalf("filters shown: language %q, rule value %q", l, v)
		}
	}
	frOnly()
	const want = "#/people?language=fr&filters=%7B%22match%22%3A%22all%22%2C%22rules%22%3A%5B%7B%22field%22%3A%22external_id%22%2C%22op%22%3A%22contains%22%2C%22value%22%3A%22fr%22%7D%5D%7D"
	if h := b.hash(); h != want {
		t.Fatalf("address %q, want %q", h, want)
	}
	role("link", "fr-1", "click")
	heading("fr-1")
	b.d.page(`history.back()`, nil)
	heading("Audience")
	frOnly()
	b.reload("people", strings.TrimPrefix(want, "#/"), "Audience")
	frOnly()
}

// TestDashboardZeroAudience: a send to a topic nobody follows is
// confirmed with a warning and no Send button.
func TestDashboardZeroAudience(t *testing.T) {
	ts := startServer(t)
	b, w := startDashboard(t, ts)
	role := b.role
	ts.subscribe(w, ts.push.NewBrowser(w.VAPIDPublicKey), nil) // someone, not in the topic
	var topic struct{ ID string }
	b.api("POST", "/topics", `{name: 'Nobody'}`, &topic)
	role("link", "New notification", "click")
	b.heading("New notification")
	role("textbox", "Title", "fill", "Into the void")
	role("radio", "A topic", "click")
	role("combobox", "Topic", "select", "Nobody")
	role("button", "Review and send", "click")
	got := role("dialog", "Send “Into the void”?", "text")
	if !strings.Contains(got, "It goes to 0 browsers now.") || !strings.Contains(got, "This reaches no one yet") {
		t.Fatalf("confirmation %q", got)
	}
	if n := role("button", "Send", "count"); n != "0" {
		t.Fatal("a send to no one is offered")
	}
	role("button", "Back", "click")
	if n := role("dialog", "", "count"); n != "0" {
		t.Fatal("Back left the confirmation open")
	}
	// To everyone, the same form is offered for sending.
	role("radio", "Everyone", "click")
	role("button", "Review and send", "click")
	if got := role("dialog", "Send “Into the void”?", "text"); !strings.Contains(got, "1 browser") || strings.Contains(got, "no one") {
		t.Fatalf("confirmation to everyone %q", got)
	}
	role("button", "Send", "wait")
}

// fits renders the page at 375 and 1280 px wide and fails, naming the
// page and the widest element, when it scrolls sideways.
func (b *dashboard) fits(page string) {
	b.t.Helper()
	for _, width := range []int{375, 1280} {
		b.d.call("viewport", map[string]any{"width": width, "height": 800, "dark": false}, nil)
		var out struct {
			Scroll, Inner int
			Widest        string
		}
		b.d.page(`(() => {
			// An element reaches as far as its box, or its content when that
			// overflows visibly; the widest is the deepest of the farthest.
			let widest = null;
			for (const e of document.querySelectorAll('body *')) {
				const r = e.getBoundingClientRect();
				const right = getComputedStyle(e).overflowX === 'visible' ? r.left + Math.max(r.width, e.scrollWidth) : r.right;
				if (r.width > 0 && (!widest || right >= widest.right)) widest = {right, what: e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') + (e.className && typeof e.className === 'string' ? '.' + e.className.trim().replace(/\s+/g, '.') : '')};
			}
			return {scroll: document.documentElement.scrollWidth, inner: window.innerWidth, widest: widest ? widest.what + ' reaching ' + Math.round(widest.right) + ' px' : ''};
		})()`, &out)
		if out.Scroll > out.Inner {
			b.t.Errorf("%s at %d px scrolls sideways: %d px wide; widest: %s", page, width, out.Scroll, out.Widest)
		}
	}
	b.d.call("viewport", map[string]any{"width": 1280, "height": 800, "dark": false}, nil)
}

// settle waits until no part of the page says it is loading.
func (b *dashboard) settle() {
	b.t.Helper()
	waitFor(b.t, "the page loaded", func() bool {
		var loading bool
		b.d.page(`[...document.querySelectorAll('[role=status]')].some((e) => e.textContent === 'Loading…')`, &loading)
		return !loading
	})
}

// TestDashboardHostileLengths fills every page with hostile lengths (a
// 2,160-character title, words of thousands of characters without a space
// in a message, a segment's rule, labels, events, long external ids,
// webhook, website and key names) and renders each at 375 and 1280 px:
// none may scroll sideways. Lists cut titles to one line with the whole in
// their title attribute; the confirmation of a long title scrolls within
// the screen; the phone's navigation folds into Menu and the desktop's
// fits one row.
func TestDashboardHostileLengths(t *testing.T) {
	ts := startServer(t)
	b, w := startDashboard(t, ts)
	role := b.role
	word := func(c string, n int) string { return strings.Repeat(c, n) }
	title := word("T", 2160)
	externalID := word("e", 256)
	ts.subscribe(w, ts.push.NewBrowser(w.VAPIDPublicKey), map[string]any{"externalId": externalID, "language": "fr"})
	var key struct{ APIKey string }
	b.api("POST", "/keys", `{name: '`+word("k", 60)+`', scopes: ['full']}`, &key)
	js := func(s string) string { q, _ := json.Marshal(s); return string(q) }
	var sent, draft struct{ NotificationID string }
	b.api("POST", "/notifications", `{title: `+js(title)+`, body: `+js(word("b", 1200))+`, url: `+js("https://shop.example/"+word("u", 300))+`}`, &sent)
	b.api("POST", "/notifications", `{title: `+js(word("D", 500))+`, body: `+js(word("w", 5000))+`, url: 'javascript:alert(1)', draft: true}`, &draft)
	var imported struct{ Processed int }
	b.api("POST", "/subscribers/import", `{subscribers: [{externalId: `+js(externalID)+`, tags: {`+js(word("l", 64))+`: `+js(word("v", 256))+`}}]}`, &imported)
	var segment, topic, hook struct{ ID string }
	b.api("POST", "/segments", `{name: `+js(word("s", 5000))+`, filters: {rules: [{field: 'url', op: 'contains', value: `+js(word("r", 5000))+`}]}}`, &segment)
	b.api("POST", "/topics", `{name: `+js(word("t", 5000))+`}`, &topic)
	var hookAnswer struct{ Webhook struct{ ID string } }
	b.api("POST", "/webhooks", `{url: `+js("https://hooks.example/"+word("h", 2000))+`}`, &hookAnswer)
	hook.ID = hookAnswer.Webhook.ID
	var delivery struct{ Delivery struct{ ID string } }
	b.api("POST", "/webhooks/"+hook.ID+"/test", "", &delivery)
	if code := ts.call("POST", "/api/v1/events", key.APIKey, map[string]any{"event": word("n", 120), "externalId": externalID,
		"properties": map[string]string{"note": word("p", 5000)}}, nil); code != 202 {
		t.Fatalf("posting the event: %d", code)
	}
	var member struct{ OK bool }
	b.api("POST", "/members", `{email: `+js(word("m", 60)+"@"+word("d", 60)+".example")+`, role: 'viewer'}`, &member)
	var other struct{ Website website }
	b.api("POST", "/websites", `{name: `+js(word("W", 100))+`, url: `+js("https://"+word("x", 60)+".example/"+word("p", 150))+`, timezone: 'UTC'}`, &other)
	b.d.page(`(localStorage.setItem('relaybell.project', '`+w.ProjectID+`'), true)`, nil) // Shop stays the website shown
	ts.waitSent(website{ProjectID: w.ProjectID, APIKey: key.APIKey}, sent.NotificationID)

	pages := []struct{ path, heading string }{
		{"", "Latest sends"}, {"compose", "New notification"}, {"compose/" + draft.NotificationID, "Edit draft"},
		{"notifications", "Notifications"}, {"notifications?status=draft", "Notifications"},
		{"notifications/" + sent.NotificationID, title}, {"notifications/" + draft.NotificationID, word("D", 500)},
		{"people", "Audience"}, {"people/" + externalID, externalID}, {"segments", "Segments and topics"},
		{"webhooks", "Webhooks"}, {"webhooks/" + hook.ID, "Delivery log"}, {"webhooks/" + hook.ID + "/deliveries/" + delivery.Delivery.ID, "Delivery log"},
		{"install", "Install on Shop"}, {"settings", "API keys"}, {"websites/new", "Add a website"},
	}
	for i, p := range pages {
		b.reload(fmt.Sprintf("hostile%d", i), p.path, p.heading)
		b.settle()
		b.fits("#/" + p.path)
	}

	// The detail shows the whole title, and a link that is not http(s)
	// as text only.
	b.reload("draft", "notifications/"+draft.NotificationID, word("D", 500))
	if !strings.Contains(b.mainText(), "Linkjavascript:alert(1)") || role("link", "javascript:alert(1)", "count") != "0" {
		t.Fatal("the draft's link is not shown as text alone")
	}
	b.reload("sent", "notifications/"+sent.NotificationID, title)
	if href := role("link", "https://shop.example/"+word("u", 300), "href"); !strings.HasPrefix(href, "https://shop.example/"+word("u", 300)) {
		t.Fatalf("the send's link goes to %q", href)
	}
	b.shoot("notification-long")

	// Lists cut the title to one line; its whole is in the title.
	b.reload("list", "notifications", "Notifications")
	role("link", title, "wait") // the list's rows come after its heading
	var cut struct {
		Cut   bool
		Title string
		High  float64
	}
	b.d.page(`(() => { const a = [...document.querySelectorAll('main a')].find((e) => e.textContent === `+js(title)+`);
		return {cut: a.scrollWidth > a.clientWidth, title: a.title, high: a.getBoundingClientRect().height}; })()`, &cut)
	if !cut.Cut || cut.Title != title || cut.High > 40 {
		t.Fatalf("the list's title: cut %v, %d characters in its title, %v px high", cut.Cut, len(cut.Title), cut.High)
	}

	// The confirmation of the long title scrolls within a phone's screen.
	b.d.call("viewport", map[string]any{"width": 375, "height": 740, "dark": false}, nil)
	b.reload("confirm", "compose", "New notification")
	role("textbox", "Title", "fill", title)
	role("button", "Review and send", "click")
	role("dialog", "Send “"+title+"”?", "wait")
	var box struct {
		Top, Bottom, Height float64
		Scrolls             bool
	}
	b.d.page(`(() => { const d = document.querySelector('[role=dialog]'); const r = d.getBoundingClientRect();
		return {top: r.top, bottom: r.bottom, height: window.innerHeight, scrolls: d.scrollHeight > d.clientHeight}; })()`, &box)
	if box.Top < 0 || box.Bottom > box.Height || !box.Scrolls {
		t.Fatalf("the confirmation: %+v", box)
	}
	role("button", "Send", "click") // reachable inside the box
	b.heading(title)

	// The phone's navigation is folded into Menu; the header is one row.
	if n := role("link", "Notifications", "count"); n != "0" {
		t.Fatal("the phone's navigation shows without the menu")
	}
	var header float64
	b.d.page(`document.querySelector('header').getBoundingClientRect().height`, &header)
	if header > 70 {
		t.Errorf("the phone's header is %v px high", header)
	}
	// expanded is the Menu button's aria-expanded, with the id of what it
	// opens and whether that shows.
	expanded := func() string {
		var s string
		b.d.page(`(() => { const m = [...document.querySelectorAll('button')].find((e) => e.textContent === 'Menu');
			const c = document.getElementById(m.getAttribute('aria-controls'));
			return m.getAttribute('aria-expanded') + ' ' + c.id + ' ' + (c.getClientRects().length > 0); })()`, &s)
		return s
	}
	if e := expanded(); e != "false main-menu false" {
		t.Fatalf("Menu: %q", e)
	}
	role("button", "Menu", "click")
	if e := expanded(); e != "true main-menu true" {
		t.Fatalf("Menu once open: %q", e)
	}
	role("link", "Notifications", "click")
	b.heading("Notifications")
	if n := role("link", "Audience", "count"); n != "0" {
		t.Fatal("the menu stays open on the next page")
	}
	b.d.call("viewport", map[string]any{"width": 1280, "height": 800, "dark": false}, nil)
	var rows []float64
	b.d.page(`[...new Set([...document.querySelectorAll('nav[aria-label=Main] a')].map((a) => a.getBoundingClientRect().top))]`, &rows)
	if len(rows) != 1 || role("button", "Menu", "count") != "0" {
		t.Fatalf("the desktop navigation: %d rows, menu button %s", len(rows), role("button", "Menu", "count"))
	}
}
