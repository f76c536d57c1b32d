package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/relaybell/relaybell/store"
)

// Goals (issue 32, item 4): the routes, their refusals, and what is
// credited as events arrive and labels change, with the harness clock.

// createGoal posts a goal with the harness key and returns its id.
func (h *harness) createGoal(t *testing.T, body string) string {
	t.Helper()
	r := h.do("POST", "/api/v1/goals", body, auth(h.site.APIKey)...)
	if r.status != http.StatusCreated {
		t.Fatalf("POST /goals %s: %d %s", body, r.status, r.body)
	}
	return r.json(t)["id"].(string)
}

// goalResults reads a goal's results through the API.
func (h *harness) goalResults(t *testing.T, id string) string {
	t.Helper()
	r := h.do("GET", "/api/v1/goals/"+id, "", auth(h.site.APIKey)...)
	if r.status != 200 {
		t.Fatalf("GET /goals/%s: %d %s", id, r.status, r.body)
	}
	out := decode[struct {
		Results json.RawMessage `json:"results"`
	}](t, r)
	return string(out.Results)
}

func result(source, id string, conversions int, revenue float64) string {
	return fmt.Sprintf(`{"source":%q,"id":%q,"conversions":%d,"revenue":%v}`, source, id, conversions, revenue)
}

func TestGoalRoutes(t *testing.T) {
	h := newHarness(t)
	purchase := h.createGoal(t, `{"name":" Purchase ","event":"purchase"}`)
	want := fmt.Sprintf(`{"id":%q,"name":"Purchase","event":"purchase","tag":null,"windowHours":24,"results":[],`+
		`"created_at":"2026-03-01T12:00:00Z","updated_at":"2026-03-01T12:00:00Z"}`, purchase)
	r := h.do("GET", "/api/v1/goals/"+purchase, "", auth(h.site.APIKey)...)
	if r.status != 200 || string(r.body) != want {
		t.Fatalf("GET: %d\n %s\nwant\n %s", r.status, r.body, want)
	}
	h.clock.Add(time.Minute)
	r = h.do("POST", "/api/v1/goals", `{"name":"VIP","tag":{"name":"plan","value":"vip"},"windowHours":2160}`, auth(h.site.APIKey)...)
	vip := r.json(t)["id"].(string)
	wantVIP := fmt.Sprintf(`{"id":%q,"name":"VIP","event":null,"tag":{"name":"plan","value":"vip"},"windowHours":2160,"results":[],`+
		`"created_at":"2026-03-01T12:01:00Z","updated_at":"2026-03-01T12:01:00Z"}`, vip)
	if r.status != 201 || string(r.body) != wantVIP {
		t.Fatalf("POST tag goal: %d\n %s\nwant\n %s", r.status, r.body, wantVIP)
	}
	r = h.do("GET", "/api/v1/goals", "", auth(h.site.APIKey)...)
	if wantList := `{"goals":[` + wantVIP + `,` + want + `]}`; r.status != 200 || string(r.body) != wantList {
		t.Fatalf("list: %d\n %s\nwant\n %s", r.status, r.body, wantList)
	}

	// PUT changes what it names; event replaces tag and tag event.
	h.clock.Add(time.Minute)
	r = h.do("PUT", "/api/v1/goals/"+vip, `{"event":"upgrade","windowHours":1}`, auth(h.site.APIKey)...)
	wantPut := fmt.Sprintf(`{"id":%q,"name":"VIP","event":"upgrade","tag":null,"windowHours":1,"results":[],`+
		`"created_at":"2026-03-01T12:01:00Z","updated_at":"2026-03-01T12:02:00Z"}`, vip)
	if r.status != 200 || string(r.body) != wantPut {
		t.Fatalf("PUT: %d\n %s\nwant\n %s", r.status, r.body, wantPut)
	}
	r = h.do("PUT", "/api/v1/goals/"+vip, `{"tag":{"name":"plan","value":""}}`, auth(h.site.APIKey)...)
	if got := r.json(t); r.status != 200 || got["event"] != nil || fmt.Sprint(got["tag"]) != "map[name:plan value:]" || got["windowHours"] != 1.0 {
		t.Fatalf("PUT tag: %d %s", r.status, r.body)
	}

	// Reads with any key; changes need settings:write.
	send := h.key([]string{ScopeSend}, nil)
	for _, path := range []string{"/api/v1/goals", "/api/v1/goals/" + purchase} {
		if r := h.do("GET", path, "", auth(send)...); r.status != 200 {
			t.Fatalf("GET %s with a send key: %d %s", path, r.status, r.body)
		}
	}
	before := h.dump.take(t)
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/api/v1/goals", `{"name":"x","event":"y"}`},
		{"PUT", "/api/v1/goals/" + purchase, `{"name":"x"}`},
		{"DELETE", "/api/v1/goals/" + purchase, ""},
	} {
		expectError(t, h.do(c.method, c.path, c.body, auth(send)...), 403, CodeInsufficientScope, `,"required":"settings:write"`)
	}
	if h.dump.take(t) != before {
		t.Fatal("a refused change changed the stores")
	}

	// Another website's id, an unknown one, and no UUID: 404 not_found.
	other, err := CreateWebsite(context.Background(), h.st, NewWebsite{Name: "Other", URL: "https://other.example"}, testStart)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ method, path, body, key string }{
		{"GET", "/api/v1/goals/" + purchase, "", other.APIKey},
		{"PUT", "/api/v1/goals/" + purchase, `{"name":"x"}`, other.APIKey},
		{"DELETE", "/api/v1/goals/" + purchase, "", other.APIKey},
		{"GET", "/api/v1/goals/00000000-0000-4000-8000-000000000000", "", h.site.APIKey},
		{"PUT", "/api/v1/goals/nope", `{"name":"x"}`, h.site.APIKey},
	} {
		expectCode(t, h.do(c.method, c.path, c.body, auth(c.key)...), 404, CodeNotFound)
	}
	if r := h.do("GET", "/api/v1/goals", "", auth(other.APIKey)...); string(r.body) != `{"goals":[]}` {
		t.Fatalf("the other website's list: %s", r.body)
	}

	r = h.do("DELETE", "/api/v1/goals/"+purchase, "", auth(h.site.APIKey)...)
	if r.status != 200 || string(r.body) != `{"ok":true}` {
		t.Fatalf("DELETE: %d %s", r.status, r.body)
	}
	expectCode(t, h.do("GET", "/api/v1/goals/"+purchase, "", auth(h.site.APIKey)...), 404, CodeNotFound)
	expectCode(t, h.do("DELETE", "/api/v1/goals/"+purchase, "", auth(h.site.APIKey)...), 404, CodeNotFound)
}

// TestGoalRefusals: each invalid member answers its exact code and
// message and changes nothing, on POST and on PUT.
func TestGoalRefusals(t *testing.T) {
	h := newHarness(t)
	id := h.createGoal(t, `{"name":"Base","event":"purchase"}`)
	f := func(body, code, message string) {
		t.Helper()
		before := h.dump.take(t)
		for _, path := range []string{"/api/v1/goals", "/api/v1/goals/" + id} {
			method := "POST"
			if path != "/api/v1/goals" {
				method = "PUT"
			}
			r := h.do(method, path, body, auth(h.site.APIKey)...)
			if message == "" {
				expectCode(t, r, 400, code)
			} else {
				expectError(t, r, 400, code, fmt.Sprintf(`,"message":%q`, message))
			}
		}
		if h.dump.take(t) != before {
			t.Fatalf("%s changed the stores", body)
		}
	}
	f(`{"name":"x","event":"a","color":"red"}`, CodeUnknownField, "")
	f(`{"name":"x","tag":{"name":"a","value":"b","op":"eq"}}`, CodeUnknownField, "")
	f(`{"name":"x","event":"a","windowhours":2}`, CodeUnknownField, "")
	f(`{"name":5,"event":"a"}`, CodeInvalidJSON, "")
	f(`{"name":"x","event":["a"]}`, CodeInvalidJSON, "")
	f(`{"name":"x","event":"a","windowHours":1.5}`, CodeInvalidJSON, "")
	f(`{"name":"x","event":"a","windowHours":"24"}`, CodeInvalidJSON, "")
	f(`{"name":"x","tag":{"name":"a","value":7}}`, CodeInvalidJSON, "")
	f(`[]`, CodeInvalidJSON, "")
	f(`{"name":"   ","event":"a"}`, CodeNameRequired, "a name is required")
	f(`{"name":"`+strings.Repeat("n", 101)+`","event":"a"}`, CodeInvalidName, "a name is at most 100 characters")
	f(`{"name":"x","event":"a","tag":{"name":"a","value":"b"}}`, CodeInvalidGoal, "a goal is an event or a tag, not both")
	f(`{"name":"x","event":"  "}`, CodeEventRequired, "event must be an event name")
	f(`{"name":"x","event":"`+strings.Repeat("e", 121)+`"}`, CodeInvalidGoal, "event is at most 120 characters")
	f(`{"name":"x","tag":{"name":"plan"}}`, CodeInvalidLabel, `tag needs a name and a value (a string, "" for a label without one)`)
	f(`{"name":"x","tag":{"name":"","value":"b"}}`, CodeInvalidLabel, `tag needs a name and a value (a string, "" for a label without one)`)
	f(`{"name":"x","tag":{"name":"`+strings.Repeat("k", 65)+`","value":"b"}}`, CodeInvalidLabel, "a label name is 1-64 characters and its value up to 256")
	f(`{"name":"x","tag":{"name":"k","value":"`+strings.Repeat("v", 257)+`"}}`, CodeInvalidLabel, "a label name is 1-64 characters and its value up to 256")
	f(`{"name":"x","tag":{"name":"rb_x","value":"b"}}`, CodeReservedLabel, "labels starting with rb_ are the service's")
	f(`{"name":"x","event":"a","windowHours":0}`, CodeInvalidWindow, "windowHours is 1 to 2160")
	f(`{"name":"x","event":"a","windowHours":2161}`, CodeInvalidWindow, "windowHours is 1 to 2160")
	// POST alone: a new goal needs a name and an event or a tag.
	expectError(t, h.do("POST", "/api/v1/goals", `{"event":"a"}`, auth(h.site.APIKey)...), 400, CodeNameRequired, `,"message":"a name is required"`)
	expectError(t, h.do("POST", "/api/v1/goals", `{"name":"x"}`, auth(h.site.APIKey)...), 400, CodeInvalidGoal, `,"message":"a goal needs an event or a tag"`)
	if r := h.do("GET", "/api/v1/goals", "", auth(h.site.APIKey)...); strings.Count(string(r.body), `"id"`) != 1 {
		t.Fatalf("goals after the refusals: %s", r.body)
	}
}

// delivered makes n delivered to (clicked true: clicked on) the browser
// b, as its service worker's pings do.
func (h *harness) delivered(t *testing.T, n string, b browser, clicked bool) {
	t.Helper()
	if err := h.st.RecordResults(context.Background(), n, []store.PushResult{{EndpointID: b.EndpointID, Outcome: store.OutcomeSent}}); err != nil {
		t.Fatal(err)
	}
	h.ping(t, "delivered", n, b.EndpointID)
	if clicked {
		h.ping(t, "clicked", n, b.EndpointID)
	}
}

// TestGoalEventCredit: an event goal's reaches are credited to the send
// the person last clicked, else last had delivered, within the goal's
// window, once per event, with the event's value; the source is the
// automation a message was sent for, else the notification.
func TestGoalEventCredit(t *testing.T) {
	h := newHarness(t)
	ada := h.browser(t, `,"externalId":"ada"`)
	bob := h.browser(t, `,"externalId":"bob"`)
	signup := h.createGoal(t, `{"name":"Signed up","event":"signup","windowHours":1}`)
	buy := h.createGoal(t, `{"name":"Bought","event":"order.paid","windowHours":48}`)

	// Nothing received: the reach credits nothing.
	h.track(t, `{"event":"order.paid","externalId":"ada","properties":{"value":10}}`)
	if got := h.goalResults(t, buy); got != `[]` {
		t.Fatalf("results without a send: %s", got)
	}
	clickedSend := h.sendTo(t, "Sale", "ada")
	h.delivered(t, clickedSend, ada, true)
	h.clock.Add(10 * time.Minute)
	deliveredSend := h.sendTo(t, "News", "ada")
	h.delivered(t, deliveredSend, ada, false)
	h.clock.Add(10 * time.Minute)
	// Clicked wins over a later delivery; the value is properties.value,
	// else revenue.
	h.track(t, `{"event":"order.paid","externalId":"ada","properties":{"value":25.5}}`)
	h.track(t, `{"event":"order.paid","externalId":"ada","properties":{"revenue":4.5}}`)
	h.track(t, `{"event":"signup","externalId":"ada"}`)
	if got, want := h.goalResults(t, buy), `[`+result("notification", clickedSend, 2, 30)+`]`; got != want {
		t.Fatalf("bought: %s, want %s", got, want)
	}
	if got, want := h.goalResults(t, signup), `[`+result("notification", clickedSend, 1, 0)+`]`; got != want {
		t.Fatalf("signed up: %s, want %s", got, want)
	}
	// The same event again (a retry with its Idempotency-Key) credits
	// nothing more; so does the same event id from the service.
	h.track(t, `{"event":"order.paid","externalId":"ada","properties":{"value":100}}`, "Idempotency-Key", "order-1")
	h.track(t, `{"event":"order.paid","externalId":"ada","properties":{"value":100}}`, "Idempotency-Key", "order-1")
	reached, err := h.api.goals.Event(context.Background(), h.site.WebsiteID, ada.SubscriberID, "event-7", "order.paid", 1, h.clock.Now())
	if err != nil || fmt.Sprint(reached) != "["+buy+"]" {
		t.Fatalf("Event: %v %v", reached, err)
	}
	if _, err := h.api.goals.Event(context.Background(), h.site.WebsiteID, ada.SubscriberID, "event-7", "order.paid", 1, h.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if got, want := h.goalResults(t, buy), `[`+result("notification", clickedSend, 4, 131)+`]`; got != want {
		t.Fatalf("after the retries: %s, want %s", got, want)
	}

	// Past the window: a signup an hour and a half after the sends is
	// reached, credited to nothing.
	h.clock.Add(70 * time.Minute)
	h.track(t, `{"event":"signup","externalId":"ada"}`)
	if got, want := h.goalResults(t, signup), `[`+result("notification", clickedSend, 1, 0)+`]`; got != want {
		t.Fatalf("signed up past the window: %s, want %s", got, want)
	}

	// An automation's message: the source is the automation.
	auto := h.createAutomation(t, `{"name":"Cart","status":"active","goalId":"`+buy+`","trigger":{"type":"event","event":"cart.updated"},
		"messages":[{"title":"Your cart"}]}`)
	if auto["goalId"] != buy {
		t.Fatalf("automation goalId %v", auto["goalId"])
	}
	autoID := auto["id"].(string)
	h.track(t, `{"event":"cart.updated","externalId":"bob"}`)
	h.runAutomations(t)
	msg := h.notificationsOf(t, autoID)[0].ID
	h.delivered(t, msg, bob, false)
	h.clock.Add(time.Hour)
	h.track(t, `{"event":"order.paid","externalId":"bob","properties":{"value":60}}`)
	want := `[` + result("notification", clickedSend, 4, 131) + `,` + result("automation", autoID, 1, 60) + `]`
	if got := h.goalResults(t, buy); got != want {
		t.Fatalf("with the automation: %s, want %s", got, want)
	}
	// The list answers the same results.
	r := h.do("GET", "/api/v1/goals", "", auth(h.site.APIKey)...)
	if !strings.Contains(string(r.body), `"results":`+want) {
		t.Fatalf("list %s", r.body)
	}
}

// TestGoalTagCredit: a tag goal is reached when a person's label takes
// its value (bulk-tag or import), not by those who had it when the goal
// was made, once per change, credited as events are.
func TestGoalTagCredit(t *testing.T) {
	h := newHarness(t)
	ada := h.browser(t, `,"externalId":"ada"`)
	bob := h.browser(t, `,"externalId":"bob"`)
	old := h.browser(t, `,"externalId":"old"`)
	tag := func(b browser, set, remove string) {
		t.Helper()
		body := fmt.Sprintf(`{"ids":[%q],"set":%s,"remove":%s}`, b.SubscriberID, set, remove)
		if r := h.do("POST", "/api/v1/audience/subscribers/bulk-tag", body, auth(h.site.APIKey)...); r.status != 200 {
			t.Fatalf("bulk-tag %s: %d %s", body, r.status, r.body)
		}
	}
	tag(old, `{"plan":"vip"}`, `[]`)
	goal := h.createGoal(t, `{"name":"VIP","tag":{"name":"plan","value":"vip"}}`)
	sends := map[string]string{}
	for name, b := range map[string]browser{"ada": ada, "bob": bob, "old": old} {
		sends[name] = h.sendTo(t, "Upgrade", name)
		h.delivered(t, sends[name], b, false)
	}
	// Results with equal conversions are in source, then id order.
	both := func(adaN int) string {
		a, b := result("notification", sends["ada"], adaN, 0), result("notification", sends["bob"], 1, 0)
		if adaN == 1 && sends["bob"] < sends["ada"] {
			a, b = b, a
		}
		return "[" + a + "," + b + "]"
	}

	tag(old, `{"seen":"1"}`, `[]`)    // had it before the goal: no reach
	tag(ada, `{"plan":"free"}`, `[]`) // another value: no reach
	tag(ada, `{"plan":"vip"}`, `[]`)  // reached
	tag(ada, `{"seen":"1"}`, `[]`)    // still vip: no reach
	if r := h.do("POST", "/api/v1/subscribers/import", `{"subscribers":[{"externalId":"bob","tags":{"plan":"vip"}}]}`, auth(h.site.APIKey)...); r.status != 200 {
		t.Fatalf("import: %d %s", r.status, r.body)
	}
	if got, want := h.goalResults(t, goal), both(1); got != want {
		t.Fatalf("results %s, want %s: Ada's and Bob's sends once each", got, want)
	}
	// Ada loses the label and gets it back: reached again.
	tag(ada, `{}`, `["plan"]`)
	tag(ada, `{"plan":"vip"}`, `[]`)
	reached, err := h.api.goals.TagsChanged(context.Background(), h.site.WebsiteID, ada.SubscriberID, h.clock.Now())
	if err != nil || len(reached) != 0 {
		t.Fatalf("TagsChanged with nothing changed: %v %v", reached, err)
	}
	if got, want := h.goalResults(t, goal), both(2); got != want {
		t.Fatalf("results %s, want %s: Ada's send twice and Bob's once", got, want)
	}
}

// TestAutomationGoalID: an automation's goalId is a goal of the website,
// shown on its record; null clears it; a goal deleted since does not
// refuse the automation's other changes.
func TestAutomationGoalID(t *testing.T) {
	h := newHarness(t)
	goal := h.createGoal(t, `{"name":"Bought","event":"purchase"}`)
	other, err := CreateWebsite(context.Background(), h.st, NewWebsite{Name: "Other", URL: "https://other.example"}, testStart)
	if err != nil {
		t.Fatal(err)
	}
	r := h.do("POST", "/api/v1/goals", `{"name":"Theirs","event":"purchase"}`, auth(other.APIKey)...)
	theirs := r.json(t)["id"].(string)
	const base = `{"name":"Cart","trigger":{"type":"event","event":"cart.updated"},"messages":[{"title":"Hi"}]`
	id := h.createAutomation(t, base+`}`)["id"].(string)
	before := h.dump.take(t)
	for _, c := range []struct{ goalID, code, message string }{
		{`"nope"`, CodeGoalNotFound, `no goal "nope" on this website`},
		{`"` + theirs + `"`, CodeGoalNotFound, `no goal "` + theirs + `" on this website`},
		{`"00000000-0000-4000-8000-000000000000"`, CodeGoalNotFound, `no goal "00000000-0000-4000-8000-000000000000" on this website`},
		{`5`, CodeInvalidJSON, ""},
		{`{"id":"x"}`, CodeInvalidJSON, ""},
	} {
		for _, req := range []struct{ method, path string }{{"POST", "/api/v1/automations"}, {"PUT", "/api/v1/automations/" + id}} {
			r := h.do(req.method, req.path, base+`,"goalId":`+c.goalID+`}`, auth(h.site.APIKey)...)
			if c.message == "" {
				expectCode(t, r, 400, c.code)
			} else {
				expectError(t, r, 400, c.code, fmt.Sprintf(`,"message":%q`, c.message))
			}
		}
	}
	if h.dump.take(t) != before {
		t.Fatal("a refused goalId changed the stores")
	}
	r = h.do("PUT", "/api/v1/automations/"+id, `{"goalId":"`+strings.ToUpper(goal)+`"}`, auth(h.site.APIKey)...)
	if r.status != 200 || r.json(t)["goalId"] != goal {
		t.Fatalf("PUT goalId: %d %s", r.status, r.body)
	}
	if r := h.do("GET", "/api/v1/automations/"+id, "", auth(h.site.APIKey)...); r.json(t)["goalId"] != goal {
		t.Fatalf("GET: %s", r.body)
	}
	h.do("DELETE", "/api/v1/goals/"+goal, "", auth(h.site.APIKey)...)
	if r := h.do("PUT", "/api/v1/automations/"+id, `{"name":"Cart 2"}`, auth(h.site.APIKey)...); r.status != 200 || r.json(t)["goalId"] != goal {
		t.Fatalf("PUT after the goal went: %d %s", r.status, r.body)
	}
	if r := h.do("PUT", "/api/v1/automations/"+id, `{"goalId":null}`, auth(h.site.APIKey)...); r.status != 200 || !strings.Contains(string(r.body), `"goalId":null`) {
		t.Fatalf("PUT goalId null: %d %s", r.status, r.body)
	}
}
