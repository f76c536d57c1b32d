package server

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// TestDashboardPrompt sets the prompt on its page, found by role and
// name: the preview follows the form as it is typed, as text; a refusal
// shows the API's message and stores nothing; the stored prompt is what
// the form says; the results show the subscription rate.
func TestDashboardPrompt(t *testing.T) {
	ts := startServer(t)
	b, site := startDashboard(t, ts)
	role := b.role
	role("link", "Settings", "click")
	role("link", "Prompt", "click")
	b.heading("Subscription prompt")
	role("region", "Preview", "wait")

	role("checkbox", "Show the prompt on the website", "click")
	role("radio", "Soft prompt: the website asks first", "click")
	role("combobox", "Style", "select", "modal")
	role("textbox", "Title", "fill", "<b>Stay</b> in the loop")
	role("textbox", "Accept button", "fill", "Yes please")
	var preview struct {
		Text string `json:"text"`
		Bold int    `json:"bold"`
	}
	waitFor(t, "the preview", func() bool {
		b.d.page(`(() => { const p = document.querySelector('[aria-label=Preview]'); return { text: p.textContent, bold: p.querySelectorAll('b').length }; })()`, &preview)
		return strings.Contains(preview.Text, "<b>Stay</b> in the loop") && strings.Contains(preview.Text, "Yes please")
	})
	if preview.Bold != 0 {
		t.Fatal("the preview rendered markup from the title")
	}
	role("textbox", "Title", "fill", "Stay in the loop")
	role("spinbutton", "Seconds on the page", "fill", "5")
	role("textbox", "Never on pages", "fill", "/checkout*\n/account*")
	role("button", "Add a translation", "click")
	role("textbox", "Language", "fill", "fr")
	role("textbox", "Title (fr)", "fill", "Restez informé")
	role("combobox", "Preview in", "select", "fr")
	waitFor(t, "the French preview", func() bool {
		b.d.page(`document.querySelector('[aria-label=Preview]').textContent`, &preview.Text)
		return strings.Contains(preview.Text, "Restez informé") && strings.Contains(preview.Text, "Yes please")
	})
	role("combobox", "Preview in", "select", "")

	// A refusal: nothing stored.
	role("spinbutton", "Days to wait after a dismissal", "fill", "400")
	role("button", "Save prompt", "click")
	waitFor(t, "the refusal", func() bool { return strings.Contains(b.mainText(), "dismissDays is 0 to 365") })
	var p map[string]any
	b.api("GET", "/prompt", "", &p)
	if p["enabled"] != false {
		t.Fatalf("a refused prompt was stored: %v", p)
	}
	role("spinbutton", "Days to wait after a dismissal", "fill", "3")
	role("button", "Save prompt", "click")
	role("status", "", "wait")
	waitFor(t, "the saved prompt", func() bool {
		b.api("GET", "/prompt", "", &p)
		return p["enabled"] == true
	})
	want := map[string]any{"enabled": true, "kind": "soft", "style": "modal", "dismissDays": 3.0,
		"when":    map[string]any{"seconds": 5.0, "pageViews": 0.0, "scrollPercent": 0.0},
		"include": []any{}, "exclude": []any{"/checkout*", "/account*"},
		"texts": map[string]any{"title": "Stay in the loop", "message": "We'll let you know when there is something new. You can turn them off at any time.",
			"accept": "Yes please", "dismiss": "Not now", "iosHint": "To get notifications, tap Share and then Add to Home Screen."},
		"translations": map[string]any{"fr": map[string]any{"title": "Restez informé", "message": "", "accept": "", "dismiss": "", "iosHint": ""}}}
	if !reflect.DeepEqual(p, want) {
		got, _ := json.Marshal(p)
		t.Fatalf("stored %s", got)
	}

	// Results: what the SDK counted.
	for _, ev := range []string{"impression", "impression", "impression", "impression", "accept", "dismiss"} {
		ts.call("POST", "/api/v1/projects/"+site.ProjectID+"/pings/onsite", "", json.RawMessage(`{"prompt":"soft","event":"`+ev+`"}`), nil)
	}
	b.d.call("goto", map[string]string{"url": ts.base + "/?again#/prompt"}, nil)
	b.heading("Subscription prompt")
	waitFor(t, "the results", func() bool {
		return reflect.DeepEqual(b.tableCells("Prompt results"), [][]string{{"Soft prompt", "4", "1", "1", "25 %"}})
	})
	b.shoot("prompt")
}

// TestDashboardWelcome turns the welcome on and refuses a template on a
// server without templates, at its field.
func TestDashboardWelcome(t *testing.T) {
	ts := startServer(t)
	b, dashSite := startDashboard(t, ts)
	site := website{ProjectID: dashSite.ProjectID, VAPIDPublicKey: dashSite.VAPIDPublicKey}
	role := b.role
	role("link", "Settings", "click")
	role("link", "Welcome", "click")
	b.heading("Welcome notification")
	role("checkbox", "Send a welcome notification to each new browser", "click")
	role("spinbutton", "Delay (seconds)", "fill", "30")
	role("textbox", "Title", "fill", "Welcome!")
	role("textbox", "Message", "fill", "Thanks for subscribing.")
	role("button", "Save welcome", "click")
	role("status", "", "wait")
	var w map[string]any
	b.api("GET", "/welcome", "", &w)
	if want := map[string]any{"enabled": true, "delaySeconds": 30.0, "templateId": nil, "title": "Welcome!", "body": "Thanks for subscribing."}; !reflect.DeepEqual(w, want) {
		t.Fatalf("stored %v", w)
	}
	b.shoot("welcome")
	// Or a template's content: chosen among the website's templates.
	var tpl struct{ ID string }
	b.api("POST", "/templates", `{name: 'House welcome', title: 'Hello from the house'}`, &tpl)
	b.reload("welcome", "welcome", "Welcome notification")
	role("combobox", "Template", "select", tpl.ID)
	role("button", "Save welcome", "click")
	waitFor(t, "the template stored", func() bool {
		b.api("GET", "/welcome", "", &w)
		return w["templateId"] == tpl.ID
	})
	role("combobox", "Template", "select", "")
	role("button", "Save welcome", "click")
	waitFor(t, "the template removed", func() bool {
		b.api("GET", "/welcome", "", &w)
		return w["templateId"] == nil && w["title"] == "Welcome!"
	})

	// Members the form does not show (set through the API) stay when the
	// form saves: PUT /welcome replaces the content as a whole.
	b.api("PUT", "/welcome", `{title: 'Welcome!', body: 'Thanks for subscribing.', image: 'https://shop.example/welcome.png', ttl: 3600}`, &w)
	b.reload("welcome-kept", "welcome", "Welcome notification")
	role("textbox", "Message", "fill", "Thanks, and welcome.")
	role("button", "Save welcome", "click")
	waitFor(t, "the form's change stored beside the API's members", func() bool {
		b.api("GET", "/welcome", "", &w)
		return w["body"] == "Thanks, and welcome." && w["image"] == "https://shop.example/welcome.png" && w["ttl"] == 3600.0
	})

	// A new browser's welcome is listed in Notifications, marked.
	b.api("PUT", "/welcome", `{delaySeconds: 0}`, &w)
	ts.subscribe(site, ts.push.NewBrowser(site.VAPIDPublicKey), nil)
	role("link", "Notifications", "click")
	b.heading("Notifications")
	var sends struct {
		Items []map[string]any `json:"items"`
	}
	waitFor(t, "the welcome sent", func() bool {
		b.api("GET", "/notifications", "", &sends)
		return len(sends.Items) == 1
	})
	waitFor(t, "the welcome in the list", func() bool {
		b.d.call("goto", map[string]string{"url": ts.base + "/?again#/notifications"}, nil)
		b.heading("Notifications")
		return strings.Contains(b.mainText(), "Welcome!")
	})
	var row string
	b.d.page(`[...document.querySelectorAll('main tbody tr')].map((r) => r.cells[0].textContent.trim()).join('|')`, &row)
	if row != "Welcome! Welcome" {
		t.Fatalf("the list's row %q, want the title and its Welcome mark", row)
	}
}

// TestDashboardOnsite makes an on-site message on its page, shows its
// counts, and deletes it.
func TestDashboardOnsite(t *testing.T) {
	ts := startServer(t)
	b, site := startDashboard(t, ts)
	role := b.role
	role("link", "Settings", "click")
	role("link", "On-site messages", "click")
	b.heading("On-site messages")
	waitFor(t, "the empty state", func() bool { return strings.Contains(b.mainText(), "No on-site messages yet.") })
	role("button", "New message", "click")
	role("textbox", "Message name", "fill", "Spring sale")
	role("combobox", "Kind", "select", "modal")
	role("combobox", "Status", "select", "active")
	role("combobox", "How often", "select", "session")
	role("textbox", "Title", "fill", "Half off")
	role("textbox", "Text", "fill", "Today only.")
	role("combobox", "Button 1", "select", "link")
	role("textbox", "Button 1 label", "fill", "Shop now")
	role("textbox", "Button 1 link", "fill", "https://shop.example/sale")
	role("combobox", "Button 2", "select", "close")
	role("textbox", "Button 2 label", "fill", "Close")
	role("textbox", "Show on pages", "fill", "/shop*")
	role("checkbox", "Desktop", "click")
	role("combobox", "Visitors", "select", "no")
	role("button", "Create message", "click")
	waitFor(t, "the list", func() bool { return len(b.tableCells("On-site messages")) == 1 })
	var list struct {
		Messages []map[string]any `json:"messages"`
	}
	b.api("GET", "/onsite", "", &list)
	m := list.Messages[0]
	id := m["id"].(string)
	for _, k := range []string{"id", "created_at", "updated_at"} {
		delete(m, k)
	}
	want := map[string]any{"name": "Spring sale", "status": "active", "kind": "modal", "title": "Half off", "text": "Today only.", "image": "",
		"buttons": []any{map[string]any{"label": "Shop now", "action": "link", "url": "https://shop.example/sale"}, map[string]any{"label": "Close", "action": "close"}},
		"startAt": nil, "endAt": nil, "frequency": "session",
		"targeting": map[string]any{"include": []any{"/shop*"}, "exclude": []any{}, "devices": []any{"desktop"}, "subscribed": "no", "segmentId": ""},
		"stats":     map[string]any{"impressions": 0.0, "clicks": 0.0, "dismissals": 0.0}}
	if !reflect.DeepEqual(m, want) {
		got, _ := json.Marshal(m)
		t.Fatalf("stored %s", got)
	}
	for _, ev := range []string{"impression", "impression", "click"} {
		ts.call("POST", "/api/v1/projects/"+site.ProjectID+"/pings/onsite", "", json.RawMessage(`{"messageId":"`+id+`","event":"`+ev+`"}`), nil)
	}
	b.d.call("goto", map[string]string{"url": ts.base + "/?again#/onsite"}, nil)
	b.heading("On-site messages")
	waitFor(t, "the counts", func() bool {
		rows := b.tableCells("On-site messages")
		return len(rows) == 1 && reflect.DeepEqual(rows[0][1:7], []string{"Modal", "Active", "2", "1", "0", "50 %"})
	})
	b.shoot("onsite")

	role("button", "Change message Spring sale", "click")
	role("combobox", "Status", "select", "paused")
	role("button", "Save message", "click")
	waitFor(t, "the change", func() bool {
		rows := b.tableCells("On-site messages")
		return len(rows) == 1 && rows[0][2] == "Paused"
	})
	role("button", "Delete message Spring sale", "click")
	waitFor(t, "the deletion", func() bool { return strings.Contains(b.mainText(), "No on-site messages yet.") })
}
