package server

import (
	"encoding/json"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// automationOf is GET /automations/{id} without what the server sets (id,
// times, stats): the members the editor wrote.
func automationOf(b *dashboard, id string) map[string]any {
	b.t.Helper()
	var a map[string]any
	b.api("GET", "/automations/"+id, "", &a)
	for _, k := range []string{"id", "created_at", "updated_at", "stats"} {
		delete(a, k)
	}
	return a
}

// wantJSON decodes an expected JSON body.
func wantJSON(t *testing.T, s string) map[string]any {
	t.Helper()
	var out map[string]any
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return out
}

// TestDashboardAutomations makes an abandoned-cart automation in the
// editor, found by role and name: a refusal shows the API's message at its
// field and stores nothing; the stored body is exactly what the form
// says; an edit changes only what was changed; the list pauses it and
// shows the API's figures; the editor deletes it.
func TestDashboardAutomations(t *testing.T) {
	ts := startServer(t)
	b, site := startDashboard(t, ts)
	role, heading := b.role, b.heading

	role("link", "Automations", "click")
	heading("Automations")
	var main string
	waitFor(t, "the empty state", func() bool {
		b.d.page(`document.querySelector('main').textContent`, &main)
		return strings.Contains(main, "No automations yet.")
	})
	b.shoot("automations-empty")

	// A push needs its event: the API's refusal shows at the field.
	role("link", "New automation", "click")
	heading("New automation")
	role("textbox", "Automation name", "fill", "Abandoned cart")
	role("button", "Create automation", "click")
	waitFor(t, "the refusal at the event name", func() bool { return role("textbox", "Event name", "invalid") == "true" })
	if got, want := role("textbox", "Event name", "description"),
		"an event trigger needs trigger.event, an event name of 1 to 120 characters The name your website posts to /events, such as cart.updated."; got != want {
		t.Fatalf("event name described %q, want %q", got, want)
	}
	var list struct {
		Automations []map[string]any `json:"automations"`
	}
	if b.api("GET", "/automations", "", &list); len(list.Automations) != 0 {
		t.Fatalf("a refused automation was stored: %v", list.Automations)
	}

	// The abandoned cart: a cart of 50 or more, a reminder after 30
	// minutes and another a day later, unless a purchase comes first.
	role("combobox", "Status", "select", "active")
	role("textbox", "Event name", "fill", "cart.updated")
	role("textbox", "Property of condition rule 1", "fill", "value")
	role("combobox", "Condition of condition rule 1", "select", "gte")
	role("textbox", "Value of condition rule 1", "fill", "50")
	role("textbox", "Stop events", "fill", "purchase\norder.placed")
	role("spinbutton", "Pushes a day", "fill", "2")
	role("spinbutton", "Delay (push 1)", "fill", "30")
	role("combobox", "Delay unit (push 1)", "select", "minutes")
	role("textbox", "Title (push 1)", "fill", "Your cart is waiting")
	role("textbox", "Message (push 1)", "fill", "{external_id|Friend}, your cart is still there")
	role("textbox", "Link (push 1)", "fill", "https://shop.example/cart")
	role("button", "Add push", "click")
	if got := role("spinbutton", "Delay (push 2)", "value"); got != "1" || role("combobox", "Delay unit (push 2)", "value") != "days" {
		t.Fatalf("a new push's delay: %s %s, want 1 days", got, role("combobox", "Delay unit (push 2)", "value"))
	}
	role("textbox", "Title (push 2)", "fill", "<b>Still</b> thinking about it?")
	role("button", "More options (push 2)", "click")
	role("textbox", "Tag (push 2)", "fill", "cart")
	// A push's refusal shows at that push's field.
	role("textbox", "Link (push 2)", "fill", "cart.html")
	role("button", "Create automation", "click")
	waitFor(t, "the refusal at push 2's link", func() bool { return role("textbox", "Link (push 2)", "invalid") == "true" })
	if got, want := role("textbox", "Link (push 2)", "description"),
		"url must be an absolute http(s) link Where a click goes; the website's default link when empty."; got != want {
		t.Fatalf("push 2's link described %q, want %q", got, want)
	}
	if b.api("GET", "/automations", "", &list); len(list.Automations) != 0 {
		t.Fatalf("a refused automation was stored: %v", list.Automations)
	}
	role("textbox", "Link (push 2)", "fill", "")
	b.shoot("automation-editor")
	role("button", "Create automation", "click")
	heading("Automations")
	b.waitRows("Automations", []string{"Abandoned cart"})
	b.api("GET", "/automations", "", &list)
	if len(list.Automations) != 1 {
		t.Fatalf("automations %v", list.Automations)
	}
	id, _ := list.Automations[0]["id"].(string)
	stored := `{"name": "Abandoned cart", "status": "active", "goalId": null,
		"trigger": {"type": "event", "event": "cart.updated", "conditions": {"match": "all", "rules": [{"field": "properties.value", "op": "gte", "value": "50"}]}},
		"stopEvents": ["purchase", "order.placed"], "restart": true, "transactional": false, "caps": {"perDay": 2, "perWeek": null},
		"messages": [
			{"delaySeconds": 1800, "title": "Your cart is waiting", "body": "{external_id|Friend}, your cart is still there", "url": "https://shop.example/cart"},
			{"delaySeconds": 86400, "title": "<b>Still</b> thinking about it?", "tag": "cart"}]}`
	if got, want := automationOf(b, id), wantJSON(t, stored); !reflect.DeepEqual(got, want) {
		t.Fatalf("stored %v\nwant   %v", got, want)
	}

	// Edit: the form shows what is stored; a later first push, no
	// restart, push 2's title changed and a goal chosen leave the rest as
	// it was.
	var goal struct{ ID string }
	b.api("POST", "/goals", `{name: 'Order paid', event: 'order.paid'}`, &goal)
	role("link", "Abandoned cart", "click")
	heading("Automation “Abandoned cart”")
	for _, c := range []struct{ role, name, want string }{
		{"textbox", "Event name", "cart.updated"}, {"textbox", "Property of condition rule 1", "value"},
		{"combobox", "Condition of condition rule 1", "gte"}, {"textbox", "Value of condition rule 1", "50"},
		{"textbox", "Stop events", "purchase\norder.placed"}, {"spinbutton", "Pushes a day", "2"}, {"spinbutton", "Pushes a week", ""},
		{"spinbutton", "Delay (push 1)", "30"}, {"combobox", "Delay unit (push 1)", "minutes"},
		{"spinbutton", "Delay (push 2)", "1"}, {"combobox", "Delay unit (push 2)", "days"},
		{"textbox", "Title (push 2)", "<b>Still</b> thinking about it?"},
	} {
		if got := role(c.role, c.name, "value"); got != c.want {
			t.Errorf("%s shows %q, want %q", c.name, got, c.want)
		}
	}
	role("spinbutton", "Delay (push 1)", "fill", "45")
	role("checkbox", "Start the countdown again when it triggers during a run", "click")
	role("textbox", "Title (push 2)", "fill", "Last call")
	role("combobox", "Goal", "select", "Order paid")
	role("button", "Save automation", "click")
	heading("Automations")
	b.waitRows("Automations", []string{"Abandoned cart"})
	stored = strings.Replace(stored, `"restart": true`, `"restart": false`, 1)
	stored = strings.Replace(stored, `"delaySeconds": 1800`, `"delaySeconds": 2700`, 1)
	stored = strings.Replace(stored, `<b>Still</b> thinking about it?`, `Last call`, 1)
	stored = strings.Replace(stored, `"goalId": null`, `"goalId": "`+goal.ID+`"`, 1)
	if got, want := automationOf(b, id), wantJSON(t, stored); !reflect.DeepEqual(got, want) {
		t.Fatalf("edited %v\nwant   %v", got, want)
	}

	// Figures: Ann's cart triggers it, her purchase stops it, her next
	// cart starts it again; a small cart does not count.
	ts.subscribe(site, ts.push.NewBrowser(site.VAPIDPublicKey), map[string]any{"externalId": "ann"})
	for _, ev := range []string{`{event: 'cart.updated', externalId: 'ann', properties: {value: 80}}`, `{event: 'purchase', externalId: 'ann'}`,
		`{event: 'cart.updated', externalId: 'ann', properties: {value: 10}}`, `{event: 'cart.updated', externalId: 'ann', properties: {value: 120}}`} {
		var answer map[string]any
		b.api("POST", "/events", ev, &answer)
	}
	role("link", "Home", "click")
	role("link", "Automations", "click")
	heading("Automations")
	var api struct {
		Stats map[string]float64 `json:"stats"`
	}
	b.api("GET", "/automations/"+id, "", &api)
	if want := map[string]float64{"triggered": 2, "pending": 2, "sent": 0, "delivered": 0, "clicked": 0, "converted": 0, "revenue": 0, "stopped": 1}; !reflect.DeepEqual(api.Stats, want) {
		t.Fatalf("stats %v, want %v", api.Stats, want)
	}
	want := []string{"Abandoned cart", "Active", "Event cart.updated where value is at least 50", "2", "2", "0", "0", "0", "0", "0", "1", "Pause"}
	var cells []string
	waitFor(t, "the list's figures", func() bool {
		b.d.page(`[...document.querySelectorAll('table')].filter((t) => t.caption.textContent === 'Automations')
			.flatMap((t) => [...t.tBodies[0].rows[0].cells].map((c) => c.textContent.trim()))`, &cells)
		return reflect.DeepEqual(cells, want)
	})
	b.fits("automations")
	b.shoot("automations-list")

	// Pause from the list, and activate again.
	role("button", "Pause automation Abandoned cart", "click")
	role("button", "Activate automation Abandoned cart", "wait")
	if got := automationOf(b, id)["status"]; got != "paused" {
		t.Fatalf("paused: status %v", got)
	}
	role("button", "Activate automation Abandoned cart", "click")
	role("button", "Pause automation Abandoned cart", "wait")
	if got := automationOf(b, id)["status"]; got != "active" {
		t.Fatalf("activated: status %v", got)
	}

	// A topic's opt-in, then a segment entered, chosen by name.
	var topic, segment struct{ ID string }
	b.api("POST", "/topics", `{name: 'News'}`, &topic)
	b.api("POST", "/segments", `{name: 'Big spenders', filters: {rules: [{field: 'tag:vip', op: 'exists'}]}}`, &segment)
	role("link", "New automation", "click")
	heading("New automation")
	role("textbox", "Automation name", "fill", "Welcome to the news")
	role("combobox", "Starts when", "select", "topic_opt_in")
	role("combobox", "Topic", "select", "News")
	role("spinbutton", "Delay (push 1)", "fill", "0")
	role("textbox", "Title (push 1)", "fill", "Thanks for following the news")
	role("button", "Create automation", "click")
	heading("Automations")
	b.waitRows("Automations", []string{"Welcome to the news", "Abandoned cart"})
	b.api("GET", "/automations", "", &list)
	welcome, _ := list.Automations[0]["id"].(string)
	stored = `{"name": "Welcome to the news", "status": "draft", "goalId": null, "trigger": {"type": "topic_opt_in", "topicId": "` + topic.ID + `"},
		"stopEvents": [], "restart": true, "transactional": false, "caps": {"perDay": null, "perWeek": null},
		"messages": [{"delaySeconds": 0, "title": "Thanks for following the news"}]}`
	if got, want := automationOf(b, welcome), wantJSON(t, stored); !reflect.DeepEqual(got, want) {
		t.Fatalf("stored %v\nwant   %v", got, want)
	}
	role("link", "Welcome to the news", "click")
	heading("Automation “Welcome to the news”")
	// The select shows the stored topic once the topics have loaded.
	waitFor(t, "the stored topic shown", func() bool { return role("combobox", "Topic", "value") == topic.ID })
	role("combobox", "Starts when", "select", "segment_entered")
	role("combobox", "Segment", "select", "Big spenders")
	role("button", "Save automation", "click")
	heading("Automations")
	stored = strings.Replace(stored, `"type": "topic_opt_in", "topicId": "`+topic.ID, `"type": "segment_entered", "segmentId": "`+segment.ID, 1)
	if got, want := automationOf(b, welcome), wantJSON(t, stored); !reflect.DeepEqual(got, want) {
		t.Fatalf("edited %v\nwant   %v", got, want)
	}
	waitFor(t, "the segment trigger in the list", func() bool {
		// The list may not be drawn yet: no row then, not an error.
		b.d.page(`document.querySelector('main tbody tr')?.cells[2]?.textContent ?? ''`, &main)
		return main == "Enters “Big spenders”"
	})

	// Delete from the editor (the confirmation is accepted).
	for _, name := range []string{"Welcome to the news", "Abandoned cart"} {
		role("link", name, "click")
		heading("Automation “" + name + "”")
		role("button", "Delete automation", "click")
		heading("Automations")
	}
	waitFor(t, "the empty state", func() bool {
		b.d.page(`document.querySelector('main').textContent`, &main)
		return strings.Contains(main, "No automations yet.")
	})
	var refused struct{ Error string }
	if code := b.apiStatus("GET", "/automations/"+id, "", &refused); code != 404 || refused.Error != "not_found" {
		t.Fatalf("the deleted automation: %d %+v", code, refused)
	}
}

// testClock is a server's clock that a test moves forward instead of
// waiting: the real time plus an offset.
type testClock struct{ offset atomic.Int64 }

func (c *testClock) now() time.Time           { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *testClock) advance(by time.Duration) { c.offset.Add(int64(by)) }

// TestAbandonedCartInChromium is issue 32's abandoned cart with a real
// browser: Chromium subscribes through the SDK and logs its shopper in;
// the website posts cart.updated, and the browser's own purchase (a stop
// event, tracked by the SDK) drops the reminder: nothing is sent when its
// time passes. The next cart.updated sends the reminder once its hour has
// passed on the server's clock, to that browser, whose worker shows it.
func TestAbandonedCartInChromium(t *testing.T) {
	clock := &testClock{}
	d := startDriver(t)
	ts := startServer(t, func(c *Config) {
		c.Now = clock.now
		c.Automations.Poll = 50 * time.Millisecond // a moved clock is seen within this
	})
	w := ts.createWebsite()
	rb := startRecorder(t, ts.base)
	site := startSite(t, rb.URL, w.ProjectID)
	b := ts.push.NewBrowser(w.VAPIDPublicKey)
	sub := b.Subscription()
	d.call("launch", map[string]any{
		"executablePath": chromiumPath, "origin": site.URL, "locale": "en-GB", "timezoneId": "Europe/London",
		"subscription": map[string]string{"endpoint": sub.Endpoint, "p256dh": sub.P256dh, "auth": sub.Auth},
	}, nil)
	d.call("goto", map[string]string{"url": site.URL + "/"}, nil)
	var ready struct {
		Subscribed   bool   `json:"subscribed"`
		SubscriberID string `json:"subscriberId"`
		EndpointID   string `json:"endpointId"`
		Error        string `json:"error"`
	}
	d.page("RelayBell.ready", &ready)
	if !ready.Subscribed || ready.SubscriberID == "" || ready.Error != "" {
		t.Fatalf("RelayBell.ready: %+v", ready)
	}
	d.page("RelayBell.login('shopper-7')", nil)

	var created struct {
		ID string `json:"id"`
	}
	if code := ts.call("POST", "/api/v1/automations", w.APIKey, map[string]any{
		"name": "Abandoned cart", "status": "active",
		"trigger":    map[string]any{"type": "event", "event": "cart.updated"},
		"stopEvents": []string{"purchase"},
		"messages": []any{map[string]any{"delaySeconds": 3600, "title": "Your cart is waiting", "body": "Finish your order",
			"url": site.URL + "/cart"}},
	}, &created); code != 201 {
		t.Fatalf("POST /automations: %d", code)
	}
	stats := func() map[string]float64 {
		t.Helper()
		var a struct {
			Stats map[string]float64 `json:"stats"`
		}
		if code := ts.call("GET", "/api/v1/automations/"+created.ID, w.APIKey, nil, &a); code != 200 {
			t.Fatalf("GET /automations/%s: %d", created.ID, code)
		}
		return a.Stats
	}
	wantStats := func(triggered, pending, sent, stopped float64) {
		t.Helper()
		want := map[string]float64{"triggered": triggered, "pending": pending, "sent": sent, "delivered": 0, "clicked": 0,
			"converted": 0, "revenue": 0, "stopped": stopped}
		if got := stats(); !reflect.DeepEqual(got, want) {
			t.Fatalf("stats %v, want %v", got, want)
		}
	}
	cartUpdated := func() {
		t.Helper()
		var ans struct {
			AutomationsTriggered int `json:"automationsTriggered"`
		}
		if code := ts.call("POST", "/api/v1/events", w.APIKey, map[string]any{"event": "cart.updated", "externalId": "shopper-7",
			"properties": map[string]any{"value": 80}}, &ans); code != 202 || ans.AutomationsTriggered != 1 {
			t.Fatalf("cart.updated: %d %+v", code, ans)
		}
	}
	automationSends := func() []string {
		t.Helper()
		var list struct {
			Items []struct {
				ID         string `json:"id"`
				Automation bool   `json:"automation"`
			} `json:"items"`
		}
		ts.call("GET", "/api/v1/notifications", w.APIKey, nil, &list)
		var ids []string
		for _, n := range list.Items {
			if n.Automation {
				ids = append(ids, n.ID)
			}
		}
		return ids
	}

	// cart.updated, then the purchase from the browser: the run stops at
	// once, and its hour passes with nothing sent.
	cartUpdated()
	wantStats(1, 1, 0, 0)
	var tracked map[string]any
	d.page("RelayBell.track('purchase', { value: 80 })", &tracked)
	if tracked["ok"] != true {
		t.Fatalf("track('purchase'): %v", tracked)
	}
	wantStats(1, 0, 0, 1)
	clock.advance(2 * time.Hour)
	if got := b.Received(); len(got) != 0 {
		t.Fatalf("the browser got %d pushes after the purchase", len(got))
	}

	// cart.updated alone: nothing before the hour, the reminder after it.
	cartUpdated()
	wantStats(2, 1, 0, 1)
	if got := automationSends(); len(got) != 0 {
		t.Fatalf("automation sends before the delay: %q", got)
	}
	clock.advance(time.Hour + time.Second)
	var sends []string
	waitFor(t, "the reminder's notification", func() bool { sends = automationSends(); return len(sends) > 0 })
	// Timers fire in the order they come due: the stopped run's, two
	// hours earlier, would have been stored first.
	if len(sends) != 1 {
		t.Fatalf("automation sends %q, want the reminder alone", sends)
	}
	p := waitReceived(t, b, sends[0])
	if p.Title != "Your cart is waiting" {
		t.Fatalf("the browser got %+v", p)
	}
	if got := b.Received(); len(got) != 1 {
		t.Fatalf("the browser got %d pushes, want the reminder alone", len(got))
	}
	plaintext := b.Received()[0].Payload
	n := site.pushes.Load()
	d.call("cdp", map[string]any{"method": "ServiceWorker.deliverPushMessage",
		"params": map[string]string{"origin": site.URL, "registrationId": d.registrationID(site.URL + "/"), "data": string(plaintext)}}, nil)
	waitFor(t, "the worker to get the push", func() bool { return site.pushes.Load() > n })
	base := "/api/v1/projects/" + w.ProjectID
	waitFor(t, "the delivered ping", func() bool { return len(rb.all("POST", base+"/pings/delivered")) == 1 })
	shown := d.notifications()
	if len(shown) != 1 || shown[0].Title != "Your cart is waiting" || shown[0].Body != "Finish your order" ||
		shown[0].Data.URL != site.URL+"/cart" || shown[0].Data.NotificationID != sends[0] || shown[0].Data.EndpointID != ready.EndpointID {
		t.Fatalf("shown %+v", shown)
	}
	// The delivery is counted when the browser says so, the send when
	// the pusher's batch of outcomes is stored, which may be after.
	want := map[string]float64{"triggered": 2, "pending": 0, "sent": 1, "delivered": 1, "clicked": 0, "converted": 0, "revenue": 0, "stopped": 1}
	deadline := time.Now().Add(10 * time.Second)
	for got := stats(); !reflect.DeepEqual(got, want); got = stats() {
		if time.Now().After(deadline) {
			t.Fatalf("stats %v, want %v", got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
