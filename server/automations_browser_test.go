package server

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
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
	b.shoot("automation-editor")
	role("button", "Create automation", "click")
	heading("Automations")
	b.waitRows("Automations", []string{"Abandoned cart"})
	b.api("GET", "/automations", "", &list)
	if len(list.Automations) != 1 {
		t.Fatalf("automations %v", list.Automations)
	}
	id, _ := list.Automations[0]["id"].(string)
	stored := `{"name": "Abandoned cart", "status": "active",
		"trigger": {"type": "event", "event": "cart.updated", "conditions": {"match": "all", "rules": [{"field": "properties.value", "op": "gte", "value": "50"}]}},
		"stopEvents": ["purchase", "order.placed"], "restart": true, "transactional": false, "caps": {"perDay": 2, "perWeek": null},
		"messages": [
			{"delaySeconds": 1800, "title": "Your cart is waiting", "body": "{external_id|Friend}, your cart is still there", "url": "https://shop.example/cart"},
			{"delaySeconds": 86400, "title": "<b>Still</b> thinking about it?", "tag": "cart"}]}`
	if got, want := automationOf(b, id), wantJSON(t, stored); !reflect.DeepEqual(got, want) {
		t.Fatalf("stored %v\nwant   %v", got, want)
	}

	// Edit: the form shows what is stored; a later first push, no
	// restart, and push 2's title changed leave the rest as it was.
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
	role("button", "Save automation", "click")
	heading("Automations")
	b.waitRows("Automations", []string{"Abandoned cart"})
	stored = strings.Replace(stored, `"restart": true`, `"restart": false`, 1)
	stored = strings.Replace(stored, `"delaySeconds": 1800`, `"delaySeconds": 2700`, 1)
	stored = strings.Replace(stored, `<b>Still</b> thinking about it?`, `Last call`, 1)
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

	// Delete from the editor (the confirmation is accepted).
	role("link", "Abandoned cart", "click")
	heading("Automation “Abandoned cart”")
	role("button", "Delete automation", "click")
	heading("Automations")
	waitFor(t, "the empty state", func() bool {
		b.d.page(`document.querySelector('main').textContent`, &main)
		return strings.Contains(main, "No automations yet.")
	})
	var refused struct{ Error string }
	if code := b.apiStatus("GET", "/automations/"+id, "", &refused); code != 404 || refused.Error != "not_found" {
		t.Fatalf("the deleted automation: %d %+v", code, refused)
	}
}
