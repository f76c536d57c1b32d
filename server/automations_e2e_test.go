package server

import (
	"testing"
)

// An automation on the embedded default, end to end: an event that
// passes its conditions makes its message, which the engine (woken by the
// trigger) sends through fan-out to that person's browsers and nobody
// else's; automationsTriggered says so, and the automation's stats count
// the pushes.
func TestAutomationEndToEnd(t *testing.T) {
	ts := startServer(t)
	w := ts.createWebsite()
	annLaptop := ts.push.NewBrowser(w.VAPIDPublicKey)
	annPhone := ts.push.NewBrowser(w.VAPIDPublicKey)
	bob := ts.push.NewBrowser(w.VAPIDPublicKey)
	ts.subscribe(w, annLaptop, map[string]any{"externalId": "ann"})
	ts.subscribe(w, annPhone, map[string]any{"externalId": "ann"})
	ts.subscribe(w, bob, map[string]any{"externalId": "bob"})
	var created struct {
		ID string `json:"id"`
	}
	if code := ts.call("POST", "/api/v1/automations", w.APIKey, map[string]any{
		"name": "Cart", "status": "active",
		"trigger": map[string]any{"type": "event", "event": "cart.updated",
			"conditions": map[string]any{"rules": []any{map[string]any{"field": "properties.value", "op": "gte", "value": 20}}}},
		"stopEvents": []string{"purchase"},
		"messages":   []any{map[string]any{"delaySeconds": 0, "title": "Your cart is waiting"}},
	}, &created); code != 201 {
		t.Fatalf("POST /automations: %d", code)
	}
	var ans struct {
		AutomationsTriggered int `json:"automationsTriggered"`
	}
	if code := ts.call("POST", "/api/v1/events", w.APIKey, map[string]any{"event": "cart.updated", "externalId": "bob",
		"properties": map[string]any{"value": 5}}, &ans); code != 202 || ans.AutomationsTriggered != 0 {
		t.Fatalf("bob's small cart: %d %+v", code, ans)
	}
	if code := ts.call("POST", "/api/v1/events", w.APIKey, map[string]any{"event": "cart.updated", "externalId": "ann",
		"properties": map[string]any{"value": 20}}, &ans); code != 202 || ans.AutomationsTriggered != 1 {
		t.Fatalf("ann's cart: %d %+v", code, ans)
	}
	var list struct {
		Items []struct {
			ID         string `json:"id"`
			Automation bool   `json:"automation"`
		} `json:"items"`
	}
	waitFor(t, "the automation's notification", func() bool {
		ts.call("GET", "/api/v1/notifications", w.APIKey, nil, &list)
		return len(list.Items) == 1
	})
	if !list.Items[0].Automation {
		t.Fatalf("list %+v", list.Items)
	}
	id := list.Items[0].ID
	d := ts.waitSent(w, id)
	if d.Notification.Recipients != 2 || d.Notification.Sent != 2 {
		t.Fatalf("sent %+v, want Ann's two browsers", d.Notification)
	}
	if got := waitReceived(t, annLaptop, id); got.Title != "Your cart is waiting" {
		t.Fatalf("laptop got %+v", got)
	}
	waitReceived(t, annPhone, id)
	if got := received(t, bob, id); len(got) != 0 {
		t.Fatalf("bob got %+v", got)
	}
	var au struct {
		Stats map[string]float64 `json:"stats"`
	}
	ts.call("GET", "/api/v1/automations/"+created.ID, w.APIKey, nil, &au)
	if au.Stats["triggered"] != 1 || au.Stats["sent"] != 2 || au.Stats["pending"] != 0 {
		t.Fatalf("stats %v", au.Stats)
	}
}
