package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/relaybell/relaybell/automations"
	"github.com/relaybell/relaybell/store"
)

// Automations (issue 32, item 1): the routes, their refusals, and what
// runs do as events, subscriptions and opt-ins arrive, with the engine
// driven by the harness clock (no test sleeps through a delay).

// createAutomation posts an automation with the harness key and returns
// its answer.
func (h *harness) createAutomation(t *testing.T, body string) map[string]any {
	t.Helper()
	r := h.do("POST", "/api/v1/automations", body, auth(h.site.APIKey)...)
	if r.status != http.StatusCreated {
		t.Fatalf("POST /automations %s: %d %s", body, r.status, r.body)
	}
	return r.json(t)
}

// runAutomations fires every automation timer due at the harness clock,
// as the engine module does, and returns how many it fired.
func (h *harness) runAutomations(t *testing.T) int {
	t.Helper()
	e, err := automations.NewEngine(automations.Config{Now: h.clock.Now}, h.st, h.disp, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	n, err := e.RunDue(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// automationSends lists the titles of the notifications the automation
// sent, oldest first, and checks what each must be: an automation send,
// no send body, to the one subscriber.
func (h *harness) automationSends(t *testing.T, automationID string) []string {
	t.Helper()
	list, err := h.st.ListNotifications(context.Background(), store.ListQuery{WebsiteID: h.site.WebsiteID, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var titles []string
	for i := len(list) - 1; i >= 0; i-- {
		n := list[i]
		if n.AutomationID != automationID {
			continue
		}
		if !n.Automation || n.SendBody != nil || !strings.HasPrefix(string(n.Target), `{"subscriberId":"`) {
			t.Fatalf("automation send %+v: want automation, no send body, one subscriber", n)
		}
		titles = append(titles, n.Title)
	}
	return titles
}

// automationStats reads an automation's stats through the API.
func (h *harness) automationStats(t *testing.T, id string) string {
	t.Helper()
	r := h.do("GET", "/api/v1/automations/"+id, "", auth(h.site.APIKey)...)
	if r.status != 200 {
		t.Fatalf("GET /automations/%s: %d %s", id, r.status, r.body)
	}
	var out struct {
		Stats json.RawMessage `json:"stats"`
	}
	if err := json.Unmarshal(r.body, &out); err != nil {
		t.Fatal(err)
	}
	return string(out.Stats)
}

func autoStats(triggered, pending, sent, delivered, clicked, converted int, revenue float64, stopped int) string {
	return fmt.Sprintf(`{"triggered":%d,"pending":%d,"sent":%d,"delivered":%d,"clicked":%d,"converted":%d,"revenue":%v,"stopped":%d}`,
		triggered, pending, sent, delivered, clicked, converted, revenue, stopped)
}

const cartAutomation = `{"name":"Abandoned cart","status":"active",
	"trigger":{"type":"event","event":"cart.updated","conditions":{"match":"all","rules":[{"field":"properties.cart.value","op":"gt","value":50}]}},
	"stopEvents":["purchase"],
	"messages":[{"delaySeconds":3600,"title":"Your cart misses you","url":"https://shop.example/cart"},
		{"delaySeconds":86400,"title":"Still thinking, {first_name|friend}?"}]}`

func TestAutomationRoutes(t *testing.T) {
	h := newHarness(t)
	created := h.createAutomation(t, cartAutomation)
	id := created["id"].(string)
	if !isUUID(id) {
		t.Fatalf("id %q", id)
	}
	want := fmt.Sprintf(`{"id":%q,"name":"Abandoned cart","status":"active",`+
		`"trigger":{"type":"event","event":"cart.updated","conditions":{"match":"all","rules":[{"field":"properties.cart.value","op":"gt","value":"50"}]}},`+
		`"stopEvents":["purchase"],"restart":true,`+
		`"messages":[{"delaySeconds":3600,"title":"Your cart misses you","url":"https://shop.example/cart"},{"delaySeconds":86400,"title":"Still thinking, {first_name|friend}?"}],`+
		`"caps":{"perDay":null,"perWeek":null},"transactional":false,"goalId":null,"stats":%s,"created_at":"2026-03-01T12:00:00Z","updated_at":"2026-03-01T12:00:00Z"}`,
		id, autoStats(0, 0, 0, 0, 0, 0, 0, 0))
	r := h.do("GET", "/api/v1/automations/"+id, "", auth(h.site.APIKey)...)
	if r.status != 200 || string(r.body) != want {
		t.Fatalf("GET: %d\n %s\nwant\n %s", r.status, r.body, want)
	}

	// Defaults, and the list newest first.
	h.clock.Add(time.Minute)
	second := h.createAutomation(t, `{"name":" Welcome ","trigger":{"type":"subscribed"},"messages":[{"title":"Hi"}]}`)
	if second["status"] != "draft" || second["restart"] != true || second["name"] != "Welcome" ||
		fmt.Sprint(second["messages"]) != "[map[delaySeconds:0 title:Hi]]" || fmt.Sprint(second["stopEvents"]) != "[]" {
		t.Fatalf("defaults: %v", second)
	}
	r = h.do("GET", "/api/v1/automations", "", auth(h.site.APIKey)...)
	list := decode[struct {
		Automations []struct {
			ID string `json:"id"`
		} `json:"automations"`
	}](t, r)
	if len(list.Automations) != 2 || list.Automations[0].ID != second["id"] || list.Automations[1].ID != id {
		t.Fatalf("list %s", r.body)
	}

	// PUT changes what it names, answers the record now.
	h.clock.Add(time.Minute)
	r = h.do("PUT", "/api/v1/automations/"+id, `{"status":"paused","restart":false}`, auth(h.site.APIKey)...)
	got := r.json(t)
	if r.status != 200 || got["status"] != "paused" || got["restart"] != false || got["name"] != "Abandoned cart" ||
		got["updated_at"] != "2026-03-01T12:02:00Z" || got["created_at"] != "2026-03-01T12:00:00Z" {
		t.Fatalf("PUT: %d %s", r.status, r.body)
	}

	// Reads with any key; changes need settings:write.
	send := h.key([]string{ScopeSend}, nil)
	if r := h.do("GET", "/api/v1/automations/"+id, "", auth(send)...); r.status != 200 {
		t.Fatalf("GET with a send key: %d %s", r.status, r.body)
	}
	before := h.dump.take(t)
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/api/v1/automations", cartAutomation},
		{"PUT", "/api/v1/automations/" + id, `{"status":"active"}`},
		{"DELETE", "/api/v1/automations/" + id, ""},
	} {
		r := h.do(c.method, c.path, c.body, auth(send)...)
		expectError(t, r, 403, CodeInsufficientScope, `,"required":"settings:write"`)
	}
	if after := h.dump.take(t); after != before {
		t.Fatal("a refused change changed the stores")
	}
	settings := h.key([]string{ScopeSettingsWrite}, nil)
	if r := h.do("PUT", "/api/v1/automations/"+id, `{"name":"Cart"}`, auth(settings)...); r.status != 200 {
		t.Fatalf("PUT with settings:write: %d %s", r.status, r.body)
	}

	// Another website's id, an unknown one, and no UUID: 404 not_found.
	otherSite, err := CreateWebsite(context.Background(), h.st, NewWebsite{Name: "Other", URL: "https://other.example"}, testStart)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ method, path, body, key string }{
		{"GET", "/api/v1/automations/" + id, "", otherSite.APIKey},
		{"PUT", "/api/v1/automations/" + id, `{"name":"x"}`, otherSite.APIKey},
		{"DELETE", "/api/v1/automations/" + id, "", otherSite.APIKey},
		{"GET", "/api/v1/automations/00000000-0000-4000-8000-000000000000", "", h.site.APIKey},
		{"GET", "/api/v1/automations/nope", "", h.site.APIKey},
	} {
		r := h.do(c.method, c.path, c.body, auth(c.key)...)
		expectCode(t, r, 404, CodeNotFound)
	}

	r = h.do("DELETE", "/api/v1/automations/"+id, "", auth(h.site.APIKey)...)
	if r.status != 200 || string(r.body) != `{"ok":true}` {
		t.Fatalf("DELETE: %d %s", r.status, r.body)
	}
	expectCode(t, h.do("GET", "/api/v1/automations/"+id, "", auth(h.site.APIKey)...), 404, CodeNotFound)
	expectCode(t, h.do("DELETE", "/api/v1/automations/"+id, "", auth(h.site.APIKey)...), 404, CodeNotFound)
}

// TestAutomationRefusals: each invalid member answers its exact code and
// changes nothing, on POST and on PUT.
func TestAutomationRefusals(t *testing.T) {
	h := newHarness(t)
	id := h.createAutomation(t, `{"name":"Base","trigger":{"type":"subscribed"},"messages":[{"title":"Hi"}]}`)["id"].(string)
	long := strings.Repeat("n", 101)
	const msgs = `"messages":[{"title":"Hi"}]`
	const trig = `"trigger":{"type":"subscribed"}`
	f := func(body, code, message string) {
		t.Helper()
		before := h.dump.take(t)
		for _, c := range []struct{ method, path string }{{"POST", "/api/v1/automations"}, {"PUT", "/api/v1/automations/" + id}} {
			r := h.do(c.method, c.path, body, auth(h.site.APIKey)...)
			extra := ""
			if message != "" {
				extra = fmt.Sprintf(`,"message":%q`, message)
			}
			if code == CodeInvalidJSON || code == CodeUnknownField && message == "" {
				expectCode(t, r, 400, code)
			} else if c.method == "POST" || !strings.Contains(message, "required") {
				expectError(t, r, 400, code, extra)
			}
		}
		if h.dump.take(t) != before {
			t.Fatalf("%s changed the stores", body)
		}
	}
	f(`{"name":"x",`+trig+`,`+msgs+`,"color":"red"}`, CodeUnknownField, "")
	f(`{"name":"x","trigger":{"type":"subscribed","when":1},`+msgs+`}`, CodeUnknownField, "")
	f(`{"name":"x",`+trig+`,"messages":[{"title":"Hi","segmentId":"00000000-0000-4000-8000-000000000000"}]}`, CodeUnknownField,
		"unknown field messages[0].segmentId: a message goes to the person who triggered it")
	f(`{"name":"x",`+trig+`,"messages":[{"title":"Hi","transactional":true}]}`, CodeUnknownField,
		"unknown field messages[0].transactional: a message goes to the person who triggered it")
	f(`{"name":5,`+trig+`,`+msgs+`}`, CodeInvalidJSON, "")
	f(`{"name":"x",`+trig+`,"restart":"yes",`+msgs+`}`, CodeInvalidJSON, "")
	f(`{"name":"x",`+trig+`,"messages":[{"delaySeconds":1.5,"title":"Hi"}]}`, CodeInvalidJSON, "")
	f(`{"name":"   ",`+trig+`,`+msgs+`}`, CodeNameRequired, "a name is required")
	f(`{"name":"`+long+`",`+trig+`,`+msgs+`}`, CodeInvalidName, "a name is at most 100 characters")
	f(`{"name":"x","status":"live",`+trig+`,`+msgs+`}`, CodeInvalidStatus, "status is draft, active or paused")
	f(`{"name":"x","trigger":{"type":"visit"},`+msgs+`}`, CodeInvalidTrigger, "trigger.type is event, subscribed, topic_opt_in or segment_entered")
	f(`{"name":"x","trigger":{"type":"event"},`+msgs+`}`, CodeInvalidTrigger, "an event trigger needs trigger.event, an event name of 1 to 120 characters")
	f(`{"name":"x","trigger":{"type":"subscribed","event":"a"},`+msgs+`}`, CodeInvalidTrigger, "a subscribed trigger takes no event")
	f(`{"name":"x","trigger":{"type":"topic_opt_in","topicId":"nope"},`+msgs+`}`, CodeUnknownTopic, `no topic "nope" on this website`)
	f(`{"name":"x","trigger":{"type":"segment_entered","segmentId":"00000000-0000-4000-8000-000000000000"},`+msgs+`}`, CodeSegmentNotFound,
		`no segment "00000000-0000-4000-8000-000000000000" on this website`)
	f(`{"name":"x","trigger":{"type":"event","event":"a","conditions":{"rules":[{"field":"country","value":"FR"}]}},`+msgs+`}`, CodeInvalidFilters,
		"conditions.rules[0].field must be properties.<name>, a dotted path into the event's properties")
	f(`{"name":"x","trigger":{"type":"event","event":"a","conditions":{"rules":[{"field":"properties.v","op":"gt","value":"ten"}]}},`+msgs+`}`, CodeInvalidFilters,
		"conditions.rules[0].value must be a number for gt")
	f(`{"name":"x","trigger":{"type":"event","event":"a","conditions":{"rules":[{"field":"properties.v","op":"near","value":"1"}]}},`+msgs+`}`, CodeInvalidFilters,
		"conditions.rules[0].op is eq, neq, contains, in, exists, not_exists, gt, gte, lt or lte")
	f(`{"name":"x",`+trig+`,"stopEvents":[" "],`+msgs+`}`, CodeInvalidStopEvents, "stopEvents[0] must be an event name of 1 to 120 characters")
	f(`{"name":"x",`+trig+`,"messages":[]}`, CodeInvalidMessages, "messages holds 1 to 10 messages")
	f(`{"name":"x",`+trig+`,"messages":[`+strings.Repeat(`{"title":"a"},`, 10)+`{"title":"a"}]}`, CodeInvalidMessages, "messages holds 1 to 10 messages")
	f(`{"name":"x",`+trig+`,"messages":[{"delaySeconds":31536001,"title":"Hi"}]}`, CodeInvalidMessages, "messages[0].delaySeconds is 0 to 31536000")
	f(`{"name":"x",`+trig+`,"messages":[{"delaySeconds":-1,"title":"Hi"}]}`, CodeInvalidMessages, "messages[0].delaySeconds is 0 to 31536000")
	f(`{"name":"x",`+trig+`,"messages":[{"title":"Hi"},{"body":"no title"}]}`, CodeTitleRequired, "messages[1]: a title is required to send")
	f(`{"name":"x",`+trig+`,`+msgs+`,"caps":{"perDay":0}}`, CodeInvalidCaps, "caps.perDay is 1 to 1000, or null for no bound")
	f(`{"name":"x",`+trig+`,`+msgs+`,"caps":{"perWeek":1001}}`, CodeInvalidCaps, "caps.perWeek is 1 to 1000, or null for no bound")
	// POST alone: what a new automation needs.
	for _, c := range []struct{ body, code string }{
		{`{` + trig + `,` + msgs + `}`, CodeNameRequired},
		{`{"name":"x",` + msgs + `}`, CodeInvalidTrigger},
		{`{"name":"x",` + trig + `}`, CodeInvalidMessages},
	} {
		expectCode(t, h.do("POST", "/api/v1/automations", c.body, auth(h.site.APIKey)...), 400, c.code)
	}
}

// TestAutomationEventRun: an event trigger with conditions, its messages
// at their delays to that person only, a stop event mid-wait, only
// active automations, the stats and automationsTriggered.
func TestAutomationEventRun(t *testing.T) {
	h := newHarness(t)
	ada := h.browser(t, `,"externalId":"ada"`)
	bob := h.browser(t, `,"externalId":"bob"`)
	id := h.createAutomation(t, cartAutomation)["id"].(string)
	draft := h.createAutomation(t, `{"name":"Draft","trigger":{"type":"event","event":"cart.updated"},"messages":[{"title":"never"}]}`)["id"].(string)

	// Conditions: a cart of 50 is not over 50; a string is not a number;
	// an event of nobody known starts nothing.
	for _, body := range []string{
		`{"event":"cart.updated","externalId":"ada","properties":{"cart":{"value":50}}}`,
		`{"event":"cart.updated","externalId":"ada","properties":{"cart":{"value":"99"}}}`,
		`{"event":"cart.updated","externalId":"ada"}`,
		`{"event":"cart.updated","externalId":"nobody","properties":{"cart":{"value":99}}}`,
	} {
		if got := h.track(t, body)["automationsTriggered"]; got != 0.0 {
			t.Fatalf("%s: automationsTriggered %v, want 0", body, got)
		}
	}
	if got := h.track(t, `{"event":"cart.updated","externalId":"ada","properties":{"cart":{"value":50.5}}}`)["automationsTriggered"]; got != 1.0 {
		t.Fatalf("automationsTriggered %v, want 1", got)
	}
	if got := h.track(t, `{"event":"cart.updated","externalId":"bob","properties":{"cart":{"value":120}}}`)["automationsTriggered"]; got != 1.0 {
		t.Fatalf("bob: automationsTriggered %v, want 1", got)
	}
	if s := h.automationStats(t, id); s != autoStats(2, 4, 0, 0, 0, 0, 0, 0) {
		t.Fatalf("stats %s", s)
	}
	if n := h.runAutomations(t); n != 0 {
		t.Fatalf("fired %d before any delay", n)
	}

	// An hour later the first message goes to each, to that person alone.
	h.clock.Add(time.Hour)
	if n := h.runAutomations(t); n != 2 {
		t.Fatalf("fired %d at one hour, want 2", n)
	}
	if got := h.automationSends(t, id); fmt.Sprint(got) != "[Your cart misses you Your cart misses you]" {
		t.Fatalf("sends %v", got)
	}
	for _, n := range h.notificationsOf(t, id) {
		r := h.do("GET", "/api/v1/notifications/"+n.ID, "", auth(h.site.APIKey)...)
		d := r.json(t)["notification"].(map[string]any)
		if r.json(t)["sendBody"] != nil || d["automation"] != true || d["automation_id"] != id || d["status"] != "queued" {
			t.Fatalf("detail %s", r.body)
		}
	}
	// Bob buys: his second message is cancelled at once.
	h.clock.Add(time.Hour)
	h.track(t, `{"event":"purchase","externalId":"bob","properties":{"value":80}}`)
	if s := h.automationStats(t, id); s != autoStats(2, 1, 0, 0, 0, 0, 0, 1) {
		t.Fatalf("stats after the stop %s", s)
	}
	// Pushes and pings move the stats.
	nAda := h.notificationsOf(t, id)[0]
	if err := h.st.RecordResults(context.Background(), nAda.ID, []store.PushResult{{EndpointID: ada.EndpointID, Outcome: store.OutcomeSent}}); err != nil {
		t.Fatal(err)
	}
	h.ping(t, "delivered", nAda.ID, ada.EndpointID)
	h.ping(t, "clicked", nAda.ID, ada.EndpointID)
	if s := h.automationStats(t, id); s != autoStats(2, 1, 1, 1, 1, 0, 0, 1) {
		t.Fatalf("stats after the pushes %s", s)
	}

	h.clock.Add(22 * time.Hour)
	if n := h.runAutomations(t); n != 1 {
		t.Fatalf("fired %d at a day, want 1 (Ada's)", n)
	}
	if got := h.automationSends(t, id); len(got) != 3 || got[2] != "Still thinking, {first_name|friend}?" {
		t.Fatalf("sends %v", got)
	}
	var toAda int
	for _, n := range h.notificationsOf(t, id) {
		if string(n.Target) == `{"subscriberId":"`+ada.SubscriberID+`"}` {
			toAda++
		} else if string(n.Target) != `{"subscriberId":"`+bob.SubscriberID+`"}` {
			t.Fatalf("target %s", n.Target)
		}
	}
	if toAda != 2 {
		t.Fatalf("%d sends to Ada, want 2", toAda)
	}
	if got := h.automationSends(t, draft); len(got) != 0 {
		t.Fatalf("a draft automation sent %v", got)
	}
	// Pausing stops triggering, and a due message of a paused automation
	// is skipped.
	h.do("PUT", "/api/v1/automations/"+id, `{"status":"paused"}`, auth(h.site.APIKey)...)
	if got := h.track(t, `{"event":"cart.updated","externalId":"bob","properties":{"cart":{"value":120}}}`)["automationsTriggered"]; got != 0.0 {
		t.Fatalf("paused: automationsTriggered %v", got)
	}
}

// notificationsOf lists the automation's notifications, newest first.
func (h *harness) notificationsOf(t *testing.T, automationID string) []store.Notification {
	t.Helper()
	list, err := h.st.ListNotifications(context.Background(), store.ListQuery{WebsiteID: h.site.WebsiteID, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var out []store.Notification
	for _, n := range list {
		if n.AutomationID == automationID {
			out = append(out, n)
		}
	}
	return out
}

// TestAutomationRestart: with restart a new trigger cancels the pending
// messages and starts the countdown again; without it the trigger is
// ignored while a run is pending, and starts a new run once it ended.
func TestAutomationRestart(t *testing.T) {
	h := newHarness(t)
	h.browser(t, `,"externalId":"ada"`)
	body := func(restart bool) string {
		return fmt.Sprintf(`{"name":"R","status":"active","restart":%v,"trigger":{"type":"event","event":"viewed"},
			"messages":[{"delaySeconds":600,"title":"one"},{"delaySeconds":1200,"title":"two"}]}`, restart)
	}
	with := h.createAutomation(t, body(true))["id"].(string)
	without := h.createAutomation(t, body(false))["id"].(string)
	if got := h.track(t, `{"event":"viewed","externalId":"ada"}`)["automationsTriggered"]; got != 2.0 {
		t.Fatalf("automationsTriggered %v", got)
	}
	h.clock.Add(500 * time.Second)
	if got := h.track(t, `{"event":"viewed","externalId":"ada"}`)["automationsTriggered"]; got != 1.0 {
		t.Fatalf("again: automationsTriggered %v, want 1 (the restart)", got)
	}
	h.clock.Add(200 * time.Second) // 700 s after the first, 200 after the restart
	if n := h.runAutomations(t); n != 1 {
		t.Fatalf("fired %d, want 1 (without restart)", n)
	}
	if a, b := h.automationSends(t, with), h.automationSends(t, without); len(a) != 0 || fmt.Sprint(b) != "[one]" {
		t.Fatalf("with %v, without %v", a, b)
	}
	h.clock.Add(400 * time.Second) // 600 after the restart
	h.runAutomations(t)
	if a := h.automationSends(t, with); fmt.Sprint(a) != "[one]" {
		t.Fatalf("with restart: %v", a)
	}
	if s := h.automationStats(t, with); s != autoStats(2, 1, 0, 0, 0, 0, 0, 0) {
		t.Fatalf("with restart: stats %s", s)
	}
	h.clock.Add(time.Hour)
	h.runAutomations(t)
	// Without restart, once the run ended, a trigger starts a new one.
	if got := h.track(t, `{"event":"viewed","externalId":"ada"}`)["automationsTriggered"]; got != 2.0 {
		t.Fatalf("after the runs: automationsTriggered %v", got)
	}
	if s := h.automationStats(t, without); s != autoStats(2, 2, 0, 0, 0, 0, 0, 0) {
		t.Fatalf("without restart: stats %s", s)
	}
}

// TestAutomationSubscribedAndTopic: a new browser starts subscribed
// automations (the same browser again does not), and an opt-in starts the
// topic's.
func TestAutomationSubscribedAndTopic(t *testing.T) {
	h := newHarness(t)
	h.createTopics(t, "news", "sale")
	topics := h.do("GET", "/api/v1/topics", "", auth(h.site.APIKey)...)
	var list struct {
		Topics []struct {
			ID   string `json:"id"`
			Slug string `json:"slug"`
		} `json:"topics"`
	}
	if err := json.Unmarshal(topics.body, &list); err != nil {
		t.Fatal(err)
	}
	welcome := h.createAutomation(t, `{"name":"Welcome","status":"active","trigger":{"type":"subscribed"},"messages":[{"title":"Welcome"}]}`)["id"].(string)
	news := h.createAutomation(t, `{"name":"News","status":"active","trigger":{"type":"topic_opt_in","topicId":"news"},"messages":[{"delaySeconds":60,"title":"News!"}]}`)
	if news["trigger"].(map[string]any)["topicId"] != list.Topics[0].ID {
		t.Fatalf("topic by slug stored as %v, want %s", news["trigger"], list.Topics[0].ID)
	}
	newsID := news["id"].(string)

	path := "/api/v1/projects/" + h.site.ProjectID + "/subscriptions"
	body := subscribeBody(t, "https://push.example/one", `,"topics":["sale"]`)
	if r := h.do("POST", path, body); r.status != 201 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if r := h.do("POST", path, body); r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if n := h.runAutomations(t); n != 1 {
		t.Fatalf("fired %d, want the welcome", n)
	}
	if got := h.automationSends(t, welcome); fmt.Sprint(got) != "[Welcome]" {
		t.Fatalf("welcome sends %v", got)
	}
	// Opting into news later starts its run; again does nothing more.
	again := strings.Replace(body, `"topics":["sale"]`, `"topics":["sale","news"]`, 1)
	h.do("POST", path, again)
	h.do("POST", path, again)
	if s := h.automationStats(t, newsID); s != autoStats(1, 1, 0, 0, 0, 0, 0, 0) {
		t.Fatalf("news stats %s", s)
	}
	h.clock.Add(time.Minute)
	h.runAutomations(t)
	if got := h.automationSends(t, newsID); fmt.Sprint(got) != "[News!]" {
		t.Fatalf("news sends %v", got)
	}
	if s := h.automationStats(t, welcome); s != autoStats(1, 0, 0, 0, 0, 0, 0, 0) {
		t.Fatalf("welcome stats %s", s)
	}
}

// TestAutomationCaps: caps bound the automation's messages per person per
// day and week; a capped message is not sent.
func TestAutomationCaps(t *testing.T) {
	h := newHarness(t)
	h.browser(t, `,"externalId":"ada"`)
	id := h.createAutomation(t, `{"name":"Capped","status":"active","trigger":{"type":"event","event":"viewed"},
		"caps":{"perDay":1,"perWeek":2},"messages":[{"title":"one"},{"delaySeconds":60,"title":"two"}]}`)["id"].(string)
	h.track(t, `{"event":"viewed","externalId":"ada"}`)
	h.runAutomations(t)
	h.clock.Add(time.Minute)
	h.runAutomations(t)
	if got := h.automationSends(t, id); fmt.Sprint(got) != "[one]" {
		t.Fatalf("day 1: %v (the second is over perDay)", got)
	}
	h.clock.Add(24 * time.Hour)
	h.track(t, `{"event":"viewed","externalId":"ada"}`)
	h.runAutomations(t)
	h.clock.Add(24 * time.Hour)
	h.track(t, `{"event":"viewed","externalId":"ada"}`)
	h.runAutomations(t)
	if got := h.automationSends(t, id); fmt.Sprint(got) != "[one one]" {
		t.Fatalf("day 3: %v (the third day is over perWeek)", got)
	}
	if s := h.automationStats(t, id); !strings.Contains(s, `"pending":1`) {
		t.Fatalf("stats %s", s)
	}
}

// TestAutomationSegmentEntered: people are evaluated as they change
// (labels set, an import, a new browser), not by rescanning: whoever was
// in the segment when the automation started watching it does not enter;
// who comes in does, once; who leaves and comes back enters again.
func TestAutomationSegmentEntered(t *testing.T) {
	h := newHarness(t)
	already := h.browser(t, `,"externalId":"already"`)
	ada := h.browser(t, `,"externalId":"ada"`)
	bob := h.browser(t, `,"externalId":"bob"`)
	tag := func(id, set, remove string) {
		t.Helper()
		body := fmt.Sprintf(`{"ids":[%q],"set":%s,"remove":%s}`, id, set, remove)
		if r := h.do("POST", "/api/v1/audience/subscribers/bulk-tag", body, auth(h.site.APIKey)...); r.status != 200 {
			t.Fatalf("bulk-tag %s: %d %s", body, r.status, r.body)
		}
	}
	tag(already.SubscriberID, `{"plan":"vip"}`, `[]`)
	r := h.do("POST", "/api/v1/segments", `{"name":"VIP","filters":{"rules":[{"field":"tag:plan","value":"vip"}]}}`, auth(h.site.APIKey)...)
	segment := r.json(t)["id"].(string)
	id := h.createAutomation(t, `{"name":"VIP","status":"active","trigger":{"type":"segment_entered","segmentId":"`+segment+`"},
		"messages":[{"title":"Welcome to VIP"}]}`)["id"].(string)

	tag(already.SubscriberID, `{"seen":"1"}`, `[]`) // a change, still in: no entry
	tag(ada.SubscriberID, `{"plan":"vip"}`, `[]`)   // enters
	tag(ada.SubscriberID, `{"seen":"1"}`, `[]`)     // still in
	if r := h.do("POST", "/api/v1/subscribers/import", `{"subscribers":[{"externalId":"bob","tags":{"plan":"vip"}}]}`, auth(h.site.APIKey)...); r.status != 200 {
		t.Fatalf("import: %d %s", r.status, r.body)
	}
	if s := h.automationStats(t, id); s != autoStats(2, 2, 0, 0, 0, 0, 0, 0) {
		t.Fatalf("stats %s, want Ada and Bob entered", s)
	}
	tag(ada.SubscriberID, `{}`, `["plan"]`)       // leaves
	tag(ada.SubscriberID, `{"plan":"vip"}`, `[]`) // and comes back: enters again (a restart)
	if s := h.automationStats(t, id); s != autoStats(3, 2, 0, 0, 0, 0, 0, 0) {
		t.Fatalf("stats %s after Ada came back", s)
	}
	// A new browser of someone in the segment is evaluated too.
	carl := h.browser(t, `,"externalId":"carl"`)
	if s := h.automationStats(t, id); s != autoStats(3, 2, 0, 0, 0, 0, 0, 0) {
		t.Fatalf("stats %s: carl is not in the segment", s)
	}
	h.do("POST", "/api/v1/subscribers/import", `{"subscribers":[{"externalId":"carl","tags":{"plan":"vip"}}]}`, auth(h.site.APIKey)...)
	h.runAutomations(t)
	var to []string
	for _, n := range h.notificationsOf(t, id) {
		to = append(to, string(n.Target))
	}
	for _, p := range []browser{ada, bob, carl} {
		if !strings.Contains(strings.Join(to, " "), p.SubscriberID) {
			t.Fatalf("no message to %s: %v", p.SubscriberID, to)
		}
	}
	if strings.Contains(strings.Join(to, " "), already.SubscriberID) || len(to) != 3 {
		t.Fatalf("sends %v, want Ada, Bob and Carl once", to)
	}
}

// TestAutomationQuietHours: the website's quiet hours hold a message
// (scheduled for their end), except a transactional automation's, which
// fan-out also keeps out of the frequency cap.
func TestAutomationQuietHours(t *testing.T) {
	h := newHarness(t)
	h.browser(t, `,"externalId":"ada"`)
	if r := h.do("PUT", "/api/v1/settings", `{"quietHours":{"start":"11:00","end":"13:00"}}`, auth(h.site.APIKey)...); r.status != 200 {
		t.Fatalf("settings: %d %s", r.status, r.body)
	}
	held := h.createAutomation(t, `{"name":"Held","status":"active","trigger":{"type":"event","event":"viewed"},"messages":[{"title":"held"}]}`)["id"].(string)
	now := h.createAutomation(t, `{"name":"Now","status":"active","transactional":true,"trigger":{"type":"event","event":"viewed"},"messages":[{"title":"now"}]}`)["id"].(string)
	h.track(t, `{"event":"viewed","externalId":"ada"}`)
	h.runAutomations(t)
	a, b := h.notificationsOf(t, held), h.notificationsOf(t, now)
	if len(a) != 1 || a[0].Status != store.StatusScheduled || a[0].ScheduledAt == nil || !a[0].ScheduledAt.Equal(testStart.Add(time.Hour)) || a[0].Transactional {
		t.Fatalf("held: %+v", a)
	}
	if len(b) != 1 || b[0].Status != store.StatusQueued || !b[0].Transactional {
		t.Fatalf("transactional: %+v", b)
	}
	if h.disp.count() != 1 {
		t.Fatalf("%d dispatched, want the transactional one", h.disp.count())
	}
}
