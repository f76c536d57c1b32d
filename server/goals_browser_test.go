package server

import (
	"reflect"
	"strings"
	"testing"
)

// goalOf is GET /goals/{id} without what the server sets (id, times).
func goalOf(b *dashboard, id string) map[string]any {
	b.t.Helper()
	var g map[string]any
	b.api("GET", "/goals/"+id, "", &g)
	for _, k := range []string{"id", "created_at", "updated_at"} {
		delete(g, k)
	}
	return g
}

// tableCells are the cells' texts of the table whose caption is caption,
// row by row.
func (b *dashboard) tableCells(caption string) [][]string {
	b.t.Helper()
	var out [][]string
	b.d.page(`[...document.querySelectorAll('table')].filter((t) => t.caption && t.caption.textContent === `+jsString(caption)+`)
		.flatMap((t) => [...t.tBodies[0].rows].map((r) => [...r.cells].map((c) => c.textContent.trim())))`, &out)
	return out
}

// TestDashboardGoals makes a goal on the Goals page, found by role and
// name: a refusal shows the API's message at its field and stores
// nothing; the stored goal is exactly what the form says; a credited
// conversion shows in its results, linked to the send; a change keeps the
// rest; delete asks, then the goal is gone.
func TestDashboardGoals(t *testing.T) {
	ts := startServer(t)
	b, site := startDashboard(t, ts)
	role, heading := b.role, b.heading

	role("link", "Goals", "click")
	heading("Goals")
	waitFor(t, "the empty state", func() bool { return strings.Contains(b.mainText(), "No goals yet.") })
	b.shoot("goals-empty")

	// An event goal needs its event: the refusal shows at the field.
	role("button", "New goal", "click")
	role("textbox", "Goal name", "fill", "Order paid")
	role("button", "Create goal", "click")
	waitFor(t, "the refusal at the event", func() bool { return role("textbox", "Event name", "invalid") == "true" })
	if got, want := role("textbox", "Event name", "description"),
		"event must be an event name Any event your website posts or tracks, such as order.paid; its properties.value (else revenue) is what it is worth."; got != want {
		t.Fatalf("event described %q, want %q", got, want)
	}
	var list struct {
		Goals []map[string]any `json:"goals"`
	}
	if b.api("GET", "/goals", "", &list); len(list.Goals) != 0 {
		t.Fatalf("a refused goal was stored: %v", list.Goals)
	}
	role("textbox", "Event name", "fill", "order.paid")
	role("spinbutton", "Credit window (hours)", "fill", "48")
	role("button", "Create goal", "click")
	heading("Order paid")
	b.api("GET", "/goals", "", &list)
	if len(list.Goals) != 1 {
		t.Fatalf("goals %v", list.Goals)
	}
	id, _ := list.Goals[0]["id"].(string)
	stored := `{"name": "Order paid", "event": "order.paid", "tag": null, "windowHours": 48, "results": []}`
	if got, want := goalOf(b, id), wantJSON(t, stored); !reflect.DeepEqual(got, want) {
		t.Fatalf("stored %v\nwant   %v", got, want)
	}
	if !strings.Contains(b.mainText(), "No conversions credited yet.") {
		t.Fatalf("no empty results: %s", b.mainText())
	}

	// Ann clicks a push, then pays 30: the push gets the credit.
	ann := ts.push.NewBrowser(site.VAPIDPublicKey)
	ts.subscribe(site, ann, map[string]any{"externalId": "ann"})
	var queued struct {
		NotificationID string `json:"notificationId"`
	}
	b.api("POST", "/notifications", `{title: 'Back in stock', externalIds: ['ann']}`, &queued)
	sent := queued.NotificationID
	p := waitReceived(t, ann, sent)
	if code := ts.call("POST", "/api/v1/projects/"+site.ProjectID+"/pings/clicked", "",
		map[string]string{"notificationId": p.NotificationID, "endpointId": p.EndpointID}, nil); code != 204 {
		t.Fatalf("clicked ping: %d", code)
	}
	var answer map[string]any
	b.api("POST", "/events", `{event: 'order.paid', externalId: 'ann', properties: {value: 30}}`, &answer)
	stored = strings.Replace(stored, `"results": []`, `"results": [{"source": "notification", "id": "`+sent+`", "conversions": 1, "revenue": 30}]`, 1)
	if got, want := goalOf(b, id), wantJSON(t, stored); !reflect.DeepEqual(got, want) {
		t.Fatalf("credited %v\nwant   %v", got, want)
	}
	role("link", "Home", "click")
	role("link", "Goals", "click")
	heading("Order paid")
	waitFor(t, "the results", func() bool {
		return reflect.DeepEqual(b.tableCells("Results of Order paid"), [][]string{{"Notification", sent, "1", "30"}})
	})
	if got := role("link", sent, "href"); !strings.HasSuffix(got, "#/notifications/"+sent) {
		t.Fatalf("the send links to %q", got)
	}
	b.fits("goals")
	b.shoot("goals-list")

	// A change of window keeps the rest; a label goal instead of the event.
	role("button", "Change goal Order paid", "click")
	if got := role("spinbutton", "Credit window (hours)", "value"); got != "48" {
		t.Fatalf("the window shows %q", got)
	}
	role("spinbutton", "Credit window (hours)", "fill", "72")
	b.shoot("goal-form")
	role("button", "Save goal", "click")
	waitFor(t, "the saved window", func() bool { return strings.Contains(b.mainText(), "72 h") })
	stored = strings.Replace(stored, `"windowHours": 48`, `"windowHours": 72`, 1)
	if got, want := goalOf(b, id), wantJSON(t, stored); !reflect.DeepEqual(got, want) {
		t.Fatalf("changed %v\nwant   %v", got, want)
	}
	role("button", "New goal", "click")
	role("textbox", "Goal name", "fill", "Went VIP")
	role("radio", "A label takes a value", "click")
	role("textbox", "Label name", "fill", "plan")
	role("textbox", "Label value", "fill", "vip")
	role("button", "Create goal", "click")
	heading("Went VIP")
	b.api("GET", "/goals", "", &list)
	vip, _ := list.Goals[0]["id"].(string)
	if got, want := goalOf(b, vip), wantJSON(t, `{"name": "Went VIP", "event": null, "tag": {"name": "plan", "value": "vip"}, "windowHours": 24, "results": []}`); !reflect.DeepEqual(got, want) {
		t.Fatalf("label goal %v\nwant   %v", got, want)
	}

	// Delete (the confirmation is accepted).
	role("button", "Delete goal Order paid", "click")
	waitFor(t, "the goal gone", func() bool { return !strings.Contains(b.mainText(), "Order paid") })
	var refused struct{ Error string }
	if code := b.apiStatus("GET", "/goals/"+id, "", &refused); code != 404 || refused.Error != "not_found" {
		t.Fatalf("the deleted goal: %d %+v", code, refused)
	}
}
