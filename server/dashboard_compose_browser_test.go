package server

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/relaybell/relaybell/webpush/webpushtest"
)

// sendBody is what the detail answers of a send, as the composer made it.
type composedSend struct {
	Notification struct {
		Status     string `json:"status"`
		Recipients int    `json:"recipients"`
		Processed  int    `json:"processed"`
		LocalTime  string `json:"local_time"`
	} `json:"notification"`
	SendBody map[string]json.RawMessage `json:"sendBody"`
}

// TestDashboardComposer composes and sends with each targeting mode of the
// composer (everyone, a topic, a segment, rules, rules left out, a segment
// left out, named people), with a merge tag, a translation, an A/B test
// with auto-winner, per-time-zone and smart timing, and a draft saved,
// changed, sent and another deleted; it changes a segment; and it walks
// every page from the keyboard. Each send's stored body and audience size
// are checked, and the browsers each reached.
func TestDashboardComposer(t *testing.T) {
	ts := startServer(t)
	b, w := startDashboard(t, ts)
	role, label, heading := b.role, b.label, b.heading

	// Three browsers: fr-1 (French, label plan=gold, name=Amélie, topic
	// Deals), de-1 (German), us-1 (American English).
	var topic struct{ ID, Slug string }
	b.api("POST", "/topics", `{name: 'Deals'}`, &topic)
	browsers := map[string]*webpushtest.Browser{}
	endpoints := map[string]string{}
	for _, p := range []struct {
		id, language string
		topics       []string
	}{{"fr-1", "fr", []string{topic.Slug}}, {"de-1", "de", nil}, {"us-1", "en-US", nil}} {
		browsers[p.id] = ts.push.NewBrowser(w.VAPIDPublicKey)
		endpoints[p.id] = ts.subscribe(w, browsers[p.id], map[string]any{"externalId": p.id, "language": p.language, "topics": p.topics}).EndpointID
	}
	var imported struct{ Processed int }
	b.api("POST", "/subscribers/import", `{subscribers: [{externalId: 'fr-1', tags: {plan: 'gold', name: 'Amélie'}}]}`, &imported)
	var segment struct{ ID string }
	b.api("POST", "/segments", `{name: 'French', filters: {rules: [{field: 'language', value: 'fr'}]}}`, &segment)
	if imported.Processed != 1 || topic.ID == "" || segment.ID == "" {
		t.Fatalf("set-up: import %+v, topic %+v, segment %+v", imported, topic, segment)
	}

	current := func() string {
		var id string
		b.d.page(`location.hash.split('/').pop()`, &id)
		return id
	}
	detailOf := func(id string) composedSend {
		var c composedSend
		b.api("GET", "/notifications/"+id, "", &c)
		return c
	}
	gone := func(id string) bool {
		var e struct{ Error string }
		return b.apiStatus("GET", "/notifications/"+id, "", &e) == 404 && e.Error == "not_found"
	}
	// compose writes a send titled title, set up by fill, checks the
	// confirmation names audience, sends it and waits for it to go out.
	compose := func(title string, fill func(), audience string) (string, composedSend) {
		t.Helper()
		role("link", "New notification", "click")
		heading("New notification")
		role("textbox", "Title", "fill", title)
		fill()
		title = role("textbox", "Title", "value") // with any merge tag inserted
		role("button", "Review and send", "click")
		confirm := "Send “" + title + "”?"
		if got := role("dialog", confirm, "text"); !strings.Contains(got, audience) {
			t.Fatalf("%s: confirmation %q, want %q in it", title, got, audience)
		}
		role("button", "Send", "click")
		heading(title)
		id := current()
		var c composedSend
		waitFor(t, title+" sent", func() bool {
			c = detailOf(id)
			return c.Notification.Status == "sent" || c.Notification.Status == "sending"
		})
		return id, c
	}
	// reached waits for the send to be done (every recipient processed),
	// then finds each browser of want holding its one push and no other.
	reached := func(id string, want ...string) {
		t.Helper()
		waitFor(t, "the send done", func() bool {
			c := detailOf(id).Notification
			return c.Status == "sent" && c.Processed == c.Recipients
		})
		for name, br := range browsers {
			if got, w := len(received(t, br, id)), slices.Contains(want, name); (got == 1) != w || got > 1 {
				t.Errorf("send %s: %s holds %d pushes, want it %v", id, name, got, w)
			}
		}
	}

	// Everyone, with a merge tag from a label: each browser gets its value
	// or the fallback.
	id, c := compose("Hello ", func() {
		role("button", "Merge tags", "click")
		role("combobox", "Value", "select", "name")
		role("textbox", "Fallback", "fill", "friend")
		role("button", "Insert into title", "click")
		if got := role("textbox", "Title", "value"); got != "Hello {name|friend}" {
			t.Fatalf("title with the tag %q", got)
		}
		role("img", "Android preview: Hello friend", "wait")
	}, "3 browsers")
	reached(id, "fr-1", "de-1", "us-1")
	if p := received(t, browsers["fr-1"], id); p[0].Title != "Hello Amélie" {
		t.Fatalf("fr-1's title %q", p[0].Title)
	}
	if p := received(t, browsers["de-1"], id); p[0].Title != "Hello friend" {
		t.Fatalf("de-1's title %q", p[0].Title)
	}

	// A test of the composer's content: none without a test device, then
	// to de-1's browser, made one, alone.
	role("link", "New notification", "click")
	role("textbox", "Title", "fill", "Trying {name|you}")
	role("button", "Send a test", "click")
	waitFor(t, "no test devices", func() bool {
		return role("alert", "", "count") == "1" && strings.Contains(role("alert", "", "text"), "No test devices yet")
	})
	var device struct{ TestDevice struct{ ID string } }
	b.api("POST", "/test-devices", `{endpointId: '`+endpoints["de-1"]+`', name: 'Desk'}`, &device)
	role("button", "Send a test", "click")
	waitFor(t, "the test sent", func() bool { return role("status", "", "text") == "Test sent to 1 test device." })
	var tests struct {
		Items []struct{ ID, TargetSummary string } `json:"items"`
	}
	b.api("GET", "/notifications?q=Trying", "", &tests)
	if len(tests.Items) != 1 || tests.Items[0].TargetSummary != "Test devices" {
		t.Fatalf("the test send listed %+v", tests.Items)
	}
	reached(tests.Items[0].ID, "de-1")
	if p := received(t, browsers["de-1"], tests.Items[0].ID); p[0].Title != "Trying you" {
		t.Fatalf("the test's title %q", p[0].Title)
	}

	// A topic; a segment.
	id, _ = compose("Deals today", func() {
		role("radio", "A topic", "click")
		role("combobox", "Topic", "select", "Deals")
	}, "1 browser")
	reached(id, "fr-1")
	id, _ = compose("Bonjour", func() {
		role("radio", "A segment", "click")
		role("combobox", "Segment", "select", "French")
	}, "1 browser")
	reached(id, "fr-1")

	// Rules with a live count, leaving out people matching other rules.
	id, c = compose("Europe", func() {
		role("radio", "People matching rules", "click")
		// An incomplete rule is refused, never dropped (that would widen
		// the send).
		role("button", "Review and send", "click")
		waitFor(t, "the rule's error", func() bool {
			return strings.Contains(role("group", "Audience rules", "text"), "Complete rule 1 or remove it.")
		})
		if n := role("dialog", "", "count"); n != "0" {
			t.Fatal("a send with an incomplete rule was offered")
		}
		role("combobox", "Field of audience rule 1", "select", "language")
		role("combobox", "Condition of audience rule 1", "select", "in")
		role("textbox", "Value of audience rule 1", "fill", "fr, de")
		waitFor(t, "the rules' count", func() bool {
			return strings.Contains(role("group", "Audience rules", "text"), "Reaches 2 browsers now.")
		})
		role("radio", "Leave out people matching rules", "click")
		role("combobox", "Field of exclusion rule 1", "select", "tag")
		role("textbox", "Label name of exclusion rule 1", "fill", "plan")
		role("combobox", "Condition of exclusion rule 1", "select", "exists")
		waitFor(t, "the exclusion's count", func() bool {
			return strings.Contains(role("group", "Rules of whom to leave out", "text"), "Reaches 1 browser now.")
		})
		b.shoot("compose-audience")
	}, "at most 2 browsers")
	reached(id, "de-1")
	if got := string(c.SendBody["filters"]) + string(c.SendBody["excludeFilters"]); got != `{"match":"all","rules":[{"field":"language","op":"in","value":["fr","de"]}]}{"match":"all","rules":[{"field":"tag:plan","op":"exists"}]}` {
		t.Fatalf("stored filters %s", got)
	}

	// Everyone but a segment; named people.
	id, _ = compose("Not French", func() {
		role("radio", "Leave out a segment", "click")
		role("combobox", "Segment to leave out", "select", "French")
	}, "at most 3 browsers")
	reached(id, "de-1", "us-1")
	id, _ = compose("For you two", func() {
		role("radio", "Specific people", "click")
		role("textbox", "External ids", "fill", "de-1, us-1\nde-1")
	}, "2 people named")
	reached(id, "de-1", "us-1")

	// A translation and an A/B test with auto-winner, at 08:15 in each
	// subscriber's time zone.
	_, c = compose("Weekend", func() {
		role("button", "Translations", "click")
		role("button", "Add translation", "click")
		role("textbox", "Language of translation 1", "fill", "fr")
		role("textbox", "Title of translation 1", "fill", "Week-end")
		role("checkbox", "Test a version B", "click")
		role("textbox", "Version B title", "fill", "Saturday")
		role("img", "Android version b preview: Saturday", "wait")
		role("checkbox", "Send the winner to the rest automatically", "click")
		role("spinbutton", "Test group (% of the audience)", "fill", "30")
		role("spinbutton", "Pick the winner after (hours)", "fill", "6")
		role("radio", "At a time in each subscriber’s time zone", "click")
		label("Local time", "fill", "08:15")
		b.shoot("compose-options")
	}, "at 08:15 in each subscriber’s time zone")
	for k, want := range map[string]string{"translations": `{"fr":{"title":"Week-end","body":""}}`, "ab": `{"b":{"title":"Saturday"}}`,
		"abTest": `{"autoWinner":true,"testPercent":30,"afterHours":6}`, "perTimezone": "true", "localTime": `"08:15"`} {
		if got := string(c.SendBody[k]); got != want {
			t.Errorf("stored %s %s, want %s", k, got, want)
		}
	}
	var facts string
	b.d.page(`document.querySelector('dl.facts').textContent`, &facts)
	if !strings.Contains(facts, "Timing08:15 in each subscriber’s time zone") || !strings.Contains(facts, "A/B testTest group 30 %, winner after 6 h") ||
		!strings.Contains(facts, "Translationsfr") {
		t.Errorf("the detail's facts %q", facts)
	}

	// Later, at a wall-clock time of another zone than the website's.
	role("link", "New notification", "click")
	role("textbox", "Title", "fill", "New York morning")
	role("radio", "Later", "click")
	role("combobox", "Time zone of the send time", "select", "America/New_York")
	label("Send at (America/New_York)", "fill", "2099-07-01T09:30")
	role("button", "Review and send", "click")
	if got := role("dialog", "Send “New York morning”?", "text"); !strings.Contains(got, "1 Jul 2099, 09:30 GMT-4") {
		t.Fatalf("confirmation %q", got)
	}
	role("button", "Send", "click")
	heading("New York morning")
	if c := detailOf(current()); c.Notification.Status != "scheduled" || !strings.HasPrefix(string(c.SendBody["sendAt"]), `"2099-07-01T13:30:00`) {
		t.Fatalf("scheduled %s at %s, want 13:30 UTC", c.Notification.Status, c.SendBody["sendAt"])
	}

	// A draft to a topic at the most active hour: saved; changed to go now
	// to everyone (the draft's topic and timing cleared, not kept); sent.
	role("link", "New notification", "click")
	role("textbox", "Title", "fill", "Draft one")
	role("radio", "A topic", "click")
	role("combobox", "Topic", "select", "Deals")
	role("radio", "At each subscriber’s most active hour", "click")
	role("button", "Save draft", "click")
	heading("Notifications")
	role("link", "Draft one", "wait")
	b.shoot("drafts")
	role("link", "Draft one", "click")
	heading("Draft one")
	draft := current()
	role("link", "Edit draft", "click")
	heading("Edit draft")
	if got := role("textbox", "Title", "value"); got != "Draft one" {
		t.Fatalf("the draft's title %q", got)
	}
	role("textbox", "Title", "fill", "Draft two")
	role("radio", "Everyone", "click")
	role("radio", "Now", "click")
	role("button", "Save draft", "click")
	role("link", "Draft two", "wait")
	if c := detailOf(draft); c.SendBody["topicId"] != nil || c.SendBody["smartTime"] != nil || string(c.SendBody["title"]) != `"Draft two"` {
		t.Fatalf("the changed draft's fields %v", c.SendBody)
	}
	role("link", "Draft two", "click")
	heading("Draft two")
	role("link", "Edit draft", "click")
	heading("Edit draft")
	role("button", "Review and send", "click")
	if got := role("dialog", "Send “Draft two”?", "text"); !strings.Contains(got, "3 browsers now") {
		t.Fatalf("the draft's confirmation %q", got)
	}
	role("button", "Send", "click")
	heading("Draft two")
	if current() != draft {
		t.Fatalf("the draft was sent as %s, not itself (%s)", current(), draft)
	}
	reached(draft, "fr-1", "de-1", "us-1")

	// A draft whose audience the form cannot show (a segment within a
	// topic, made through the API) is never opened in it: its fields would
	// be dropped.
	var combo struct{ NotificationID string }
	b.api("POST", "/notifications", `{title: 'Combo', segmentId: '`+segment.ID+`', topicId: '`+topic.Slug+`', draft: true}`, &combo)
	b.d.call("goto", map[string]string{"url": ts.base + "/?combo#/notifications/" + combo.NotificationID}, nil)
	heading("Combo")
	role("button", "Delete draft", "wait")
	if role("link", "Edit draft", "count") != "0" || role("button", "Duplicate", "count") != "0" {
		t.Fatal("a draft the form cannot show is offered for editing or duplicating")
	}
	var page string
	b.d.page(`document.querySelector('main').textContent`, &page)
	if !strings.Contains(page, "combines choices the composer cannot show") {
		t.Fatalf("no word of why: %q", page)
	}
	var blank struct{ NotificationID string }
	b.api("POST", "/notifications", `{title: 'Blank topic', topicId: '', draft: true}`, &blank)
	b.d.call("goto", map[string]string{"url": ts.base + "/?blank#/notifications/" + blank.NotificationID}, nil)
	heading("Blank topic")
	role("button", "Delete draft", "wait")
	if n := role("link", "Edit draft", "count"); n != "0" {
		t.Fatal("a draft with a blank topic (Everyone in the form) is offered for editing")
	}
	b.d.call("goto", map[string]string{"url": ts.base + "/?combo-edit#/compose/" + combo.NotificationID}, nil)
	waitFor(t, "the refusal", func() bool { return strings.Contains(role("alert", "", "text"), "cannot show") })
	if n := role("textbox", "Title", "count"); n != "0" {
		t.Fatal("the form opened a draft it cannot show")
	}

	// Another draft, deleted.
	var scrap struct{ NotificationID string }
	b.api("POST", "/notifications", `{title: 'Scrap', draft: true}`, &scrap)
	b.d.call("goto", map[string]string{"url": ts.base + "/?scrap#/notifications/" + scrap.NotificationID}, nil)
	heading("Scrap")
	role("button", "Delete draft", "click")
	heading("Notifications")
	waitFor(t, "the deleted draft", func() bool { return gone(scrap.NotificationID) })

	// A segment changed: renamed, its rule now a list.
	role("link", "Segments", "click")
	role("button", "Edit segment French", "click")
	heading("Change the segment “French”")
	role("textbox", "Segment name", "fill", "French or German")
	// Several values for "is" are refused (read as one text; for "is not"
	// that would be everyone).
	role("textbox", "Value of rule 1", "fill", "fr, de")
	role("button", "Save segment", "click")
	waitFor(t, "the values' error", func() bool { return strings.Contains(role("group", "Rules", "text"), "has several values") })
	role("combobox", "Condition of rule 1", "select", "in")
	waitFor(t, "the count", func() bool { return strings.Contains(role("group", "Rules", "text"), "Reaches 2 browsers now.") })
	role("button", "Save segment", "click")
	role("cell", "French or German", "wait")
	role("cell", "language is one of fr, de", "wait")
	var segments struct {
		Segments []struct {
			Name    string          `json:"name"`
			Filters json.RawMessage `json:"filters"`
		} `json:"segments"`
	}
	b.api("GET", "/segments", "", &segments)
	if len(segments.Segments) != 1 || string(segments.Segments[0].Filters) != `{"match":"all","rules":[{"field":"language","op":"in","value":["fr","de"]}]}` {
		t.Fatalf("segments %+v", segments)
	}
	// A segment whose rules the builder would change on the way through
	// (a list for "is not", made through the API) has no Edit: saving it
	// from the form would send "is not" one text, everyone.
	b.api("POST", "/segments", `{name: 'Not North America', filters: {rules: [{field: 'country', op: 'neq', value: ['US', 'CA']}]}}`, nil)
	role("link", "Home", "click")
	role("link", "Segments", "click")
	role("button", "Delete segment Not North America", "wait")
	if n := role("button", "Edit segment Not North America", "count"); n != "0" {
		t.Fatal("a segment the builder cannot show exactly is offered for editing")
	}

	// A webhook changed: its address and events.
	var hook struct {
		Webhook struct{ ID string } `json:"webhook"`
	}
	b.api("POST", "/webhooks", `{url: 'https://hooks.shop.example/a'}`, &hook)
	role("link", "Webhooks", "click")
	role("button", "Edit https://hooks.shop.example/a", "click")
	heading("Change the webhook")
	role("textbox", "Webhook address", "fill", "https://hooks.shop.example/b")
	role("checkbox", "notification.clicked", "click")
	role("button", "Save webhook", "click")
	role("link", "https://hooks.shop.example/b", "wait")
	var hooks struct {
		Webhooks []struct {
			URL    string   `json:"url"`
			Events []string `json:"events"`
		} `json:"webhooks"`
	}
	b.api("GET", "/webhooks", "", &hooks)
	if len(hooks.Webhooks) != 1 || hooks.Webhooks[0].URL != "https://hooks.shop.example/b" || strings.Join(hooks.Webhooks[0].Events, ",") != "notification.clicked" {
		t.Fatalf("webhooks %+v", hooks)
	}

	// The audience by language, topic, label and value, rules, and a
	// range refused next to its field; a CSV import with a topics column.
	role("link", "Audience", "click")
	heading("Audience")
	role("link", "us-1", "wait")
	// listed filters and waits for exactly these people; between two
	// filters the list goes back to everyone, so a stale list never passes.
	listed := func(want ...string) {
		t.Helper()
		role("button", "Filter", "click")
		waitFor(t, strings.Join(want, ", ")+" listed", func() bool {
			for _, p := range []string{"fr-1", "de-1", "us-1"} {
				if n := role("link", p, "count"); (n == "1") != slices.Contains(want, p) {
					return false
				}
			}
			return true
		})
	}
	everyone := []string{"fr-1", "de-1", "us-1"}
	role("combobox", "Language", "select", "de")
	listed("de-1")
	role("combobox", "Language", "select", "")
	listed(everyone...)
	role("combobox", "Topic", "select", topic.Slug)
	listed("fr-1")
	role("combobox", "Topic", "select", "")
	listed(everyone...)
	role("combobox", "Label", "select", "plan")
	role("combobox", "Label value", "select", "gold")
	listed("fr-1")
	role("combobox", "Label", "select", "")
	listed(everyone...)
	role("button", "More filters", "click")
	role("combobox", "Field of people rule 1", "select", "external_id")
	role("combobox", "Condition of people rule 1", "select", "contains")
	role("textbox", "Value of people rule 1", "fill", "us")
	listed("us-1")
	b.shoot("audience-filters")
	label("Joined from", "fill", "2030-01-02")
	label("Joined to", "fill", "2030-01-01")
	role("button", "Filter", "click")
	waitFor(t, "the range's error", func() bool { return label("Joined from", "invalid") == "true" })
	role("button", "Import people from a CSV file", "click")
	b.d.call("role", map[string]any{"label": "CSV file", "action": "upload",
		"value": map[string]string{"name": "topics.csv", "text": "user_id,topics\nnew-1," + topic.Slug + "\n"}}, nil)
	if got := role("combobox", "Topics column", "value"); got != "1" {
		t.Fatalf("the topics column guessed: %q", got)
	}
	role("button", "Import", "click")
	var profile struct {
		Topics []struct{ Slug string } `json:"topics"`
	}
	waitFor(t, "the imported person's topic", func() bool {
		b.apiStatus("GET", "/subscribers/new-1/profile", "", &profile)
		return len(profile.Topics) == 1 && profile.Topics[0].Slug == topic.Slug
	})

	// Home counts the last 30 days' sends (nine, the one scheduled for 2099
	// included: made today; the test and the drafts are none) and the three
	// browsers.
	role("link", "Home", "click")
	role("heading", "Latest sends", "wait")
	var tiles map[string]string
	waitFor(t, "the stats", func() bool {
		b.d.page(`Object.fromEntries([...document.querySelectorAll('dl.tiles div')].map((d) => [d.querySelector('dt').textContent, d.querySelector('dd').textContent]))`, &tiles)
		return len(tiles) > 0
	})
	if tiles["Sends"] != "9" || tiles["Subscribers"] != "3" || tiles["New subscribers"] != "3" || tiles["Clicks"] != "0" {
		t.Fatalf("home tiles %v", tiles)
	}
	b.shoot("home") // with a day of sends (the walk-through's home has only its test)

	// Every page from the keyboard: Tab reaches each control in turn.
	for _, page := range []struct{ path, heading string }{
		{"", "Latest sends"}, {"compose", "New notification"}, {"notifications", "Notifications"}, {"notifications/" + draft, "Draft two"},
		{"people", "Audience"}, {"people/fr-1", "fr-1"}, {"segments", "Segments and topics"}, {"webhooks", "Webhooks"},
		{"install", "Install on Shop"}, {"settings", "API keys"},
	} {
		keyboardWalk(t, b, ts.base+"/?walk="+page.path+"#/"+page.path, page.heading)
	}
}

// keyboardWalk loads url and presses Tab until the focus has been round
// every control, failing for each visible, enabled control it never
// reached. A group of radio buttons is one stop (arrows move within it).
func keyboardWalk(t *testing.T, b *dashboard, url, heading string) {
	t.Helper()
	b.d.call("goto", map[string]string{"url": url}, nil)
	b.role("heading", heading, "wait")
	const controls = `[...document.querySelectorAll('a[href], button, input, select, textarea')]
		.filter((e) => !e.disabled && e.getClientRects().length > 0 && getComputedStyle(e).visibility !== 'hidden')`
	last := -1
	waitFor(t, url+" loaded", func() bool {
		var n int
		b.d.page(`[...document.querySelectorAll('[role=status]')].some((e) => e.textContent === 'Loading…') ? -1 : `+controls+`.length`, &n)
		settled := n >= 0 && n == last
		last = n
		time.Sleep(100 * time.Millisecond)
		return settled
	})
	b.d.page(`(window.__reached = new Set(), document.addEventListener('focusin', (e) => window.__reached.add(e.target)), true)`, nil)
	// Tab in tens until every control was reached or the focus has had
	// room to go round three times (scrollable boxes take a stop too).
	steps := make([]map[string]string, 10)
	for i := range steps {
		steps[i] = map[string]string{"press": "Tab"}
	}
	for pressed := 0; pressed < 3*last+20; pressed += len(steps) {
		b.d.call("keyboard", map[string]any{"steps": steps}, nil)
		var left int
		b.d.page(controls+`.filter((e) => !window.__reached.has(e)).length`, &left)
		if left == 0 {
			break
		}
	}
	var missed []string
	b.d.page(controls+`.filter((e) => !window.__reached.has(e) &&
		!(e.type === 'radio' && [...window.__reached].some((r) => r.type === 'radio' && r.name === e.name)))
		.map((e) => e.outerHTML.slice(0, 100))`, &missed)
	if len(missed) > 0 {
		t.Errorf("%s: Tab never reaches %q", url, missed)
	}
}
