package api

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/relaybell/relaybell/schedules"
	"github.com/relaybell/relaybell/store"
)

// Recurring schedules (issue 35, part 3): the routes, their refusals, what
// uses what, and the sends they make, with the harness clock.

func (h *harness) createSchedule(t *testing.T, body string) string {
	t.Helper()
	r := h.do("POST", "/api/v1/schedules", body, auth(h.site.APIKey)...)
	if r.status != http.StatusCreated {
		t.Fatalf("POST /schedules %s: %d %s", body, r.status, r.body)
	}
	return r.json(t)["id"].(string)
}

func TestScheduleRoutes(t *testing.T) {
	h := newHarness(t)
	key := auth(h.site.APIKey)
	// 2026-03-01 12:00 UTC; Paris changes its clocks on the 29th.
	id := h.createSchedule(t, `{"name":" Morning digest ","audience":{"everyone":true},"content":{"title":"Good morning","body":"Today's news"},
		"rule":"rrule:freq=daily;byhour=9","timezone":"Europe/Paris"}`)
	wantBase := fmt.Sprintf(`{"id":%q,"name":"Morning digest","status":"active","pausedReason":null,"audience":{"everyone":true},`+
		`"content":{"title":"Good morning","body":"Today's news"},"templateId":null,"rule":"FREQ=DAILY;BYHOUR=9;BYMINUTE=0",`+
		`"timezone":"Europe/Paris","perTimezone":false,"catchUpMinutes":60,"startsAt":null,"endsAt":null,`+
		`"nextRun":"2026-03-02T08:00:00.000Z","lastRefusal":null,"created_at":"2026-03-01T12:00:00.000Z","updated_at":"2026-03-01T12:00:00.000Z"`, id)
	want := wantBase + `,"nextRuns":["2026-03-02T08:00:00.000Z","2026-03-03T08:00:00.000Z","2026-03-04T08:00:00.000Z",` +
		`"2026-03-05T08:00:00.000Z","2026-03-06T08:00:00.000Z"],"history":[]}`
	r := h.do("GET", "/api/v1/schedules/"+id, "", key...)
	if r.status != 200 || string(r.body) != want {
		t.Fatalf("GET: %d\n %s\nwant\n %s", r.status, r.body, want)
	}
	if r = h.do("GET", "/api/v1/schedules", "", key...); r.status != 200 || string(r.body) != `{"schedules":[`+wantBase+`}]}` {
		t.Fatalf("list: %d %s", r.status, r.body)
	}

	// Around the clock change: 09:00 local on both sides.
	setClock(h, time.Date(2026, 3, 27, 12, 0, 0, 0, time.UTC))
	r = h.do("PUT", "/api/v1/schedules/"+id, `{"catchUpMinutes":15,"endsAt":"2026-03-30T12:00:00+02:00"}`, key...)
	got := r.json(t)
	if r.status != 200 || fmt.Sprint(got["nextRuns"]) != "[2026-03-28T08:00:00.000Z 2026-03-29T07:00:00.000Z 2026-03-30T07:00:00.000Z]" ||
		got["catchUpMinutes"] != 15.0 || got["endsAt"] != "2026-03-30T10:00:00.000Z" || got["updated_at"] != "2026-03-27T12:00:00.000Z" {
		t.Fatalf("PUT: %d %s", r.status, r.body)
	}
	// Paused: no next runs; active again: from now.
	r = h.do("PUT", "/api/v1/schedules/"+id, `{"status":"paused","endsAt":null}`, key...)
	if got := r.json(t); r.status != 200 || fmt.Sprint(got["nextRuns"]) != "[]" || got["nextRun"] != nil || got["endsAt"] != nil {
		t.Fatalf("pause: %d %s", r.status, r.body)
	}

	// Reads with any key; changes need settings:write.
	send := h.key([]string{ScopeSend}, nil)
	for _, path := range []string{"/api/v1/schedules", "/api/v1/schedules/" + id} {
		if r := h.do("GET", path, "", auth(send)...); r.status != 200 {
			t.Fatalf("GET %s with a send key: %d %s", path, r.status, r.body)
		}
	}
	before := h.dump.take(t)
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/api/v1/schedules", `{"name":"x"}`},
		{"PUT", "/api/v1/schedules/" + id, `{"name":"x"}`},
		{"DELETE", "/api/v1/schedules/" + id, ""},
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
	for _, path := range []string{"/api/v1/schedules/" + id, "/api/v1/schedules/00000000-0000-4000-8000-000000000000", "/api/v1/schedules/nope"} {
		for _, method := range []string{"GET", "PUT", "DELETE"} {
			k := auth(other.APIKey)
			if path != "/api/v1/schedules/"+id {
				k = key
			}
			expectError(t, h.do(method, path, `{"name":"x"}`, k...), 404, CodeNotFound, "")
		}
	}
	if r := h.do("GET", "/api/v1/schedules", "", auth(other.APIKey)...); string(r.body) != `{"schedules":[]}` {
		t.Fatalf("another website lists %s", r.body)
	}

	if r := h.do("DELETE", "/api/v1/schedules/"+id, "", key...); r.status != 200 || string(r.body) != `{"ok":true}` {
		t.Fatalf("DELETE: %d %s", r.status, r.body)
	}
	expectError(t, h.do("GET", "/api/v1/schedules/"+id, "", key...), 404, CodeNotFound, "")
}

// Every refusal, with its exact code; nothing is stored.
func TestScheduleRefusals(t *testing.T) {
	h := newHarness(t)
	key := auth(h.site.APIKey)
	id := h.createSchedule(t, `{"name":"D","audience":{"everyone":true},"content":{"title":"t"},"rule":"FREQ=DAILY;BYHOUR=9"}`)
	valid := `"name":"D","audience":{"everyone":true},"content":{"title":"t"},"rule":"FREQ=DAILY;BYHOUR=9"`
	before := h.dump.take(t)
	for _, c := range []struct{ body, code, message string }{
		{`[]`, CodeInvalidJSON, "the body must be a JSON object"},
		{`{"name":1}`, CodeInvalidJSON, "field name has the wrong type (number)"},
		{`{` + valid + `,"color":"red"}`, CodeUnknownField, `unknown field "color"`},
		{`{"name":"D","audience":{"everyone":true},"content":{"title":"t","sendAt":"x"},"rule":"FREQ=DAILY;BYHOUR=9"}`, CodeUnknownField, `unknown field "content.sendAt"`},
		{`{"audience":{"everyone":true},"content":{"title":"t"},"rule":"FREQ=DAILY;BYHOUR=9"}`, CodeNameRequired, "a schedule needs a name"},
		{`{"name":" ","audience":{"everyone":true},"content":{"title":"t"},"rule":"FREQ=DAILY;BYHOUR=9"}`, CodeNameRequired, "name must be 1 to 200 characters"},
		{`{"name":"D","content":{"title":"t"},"rule":"FREQ=DAILY;BYHOUR=9"}`, CodeInvalidAudience, `audience is required: {"everyone": true} or exactly one of topicId, segmentId, filters`},
		{`{"name":"D","audience":{},"content":{"title":"t"},"rule":"FREQ=DAILY;BYHOUR=9"}`, CodeInvalidAudience, `audience is {"everyone": true} or exactly one of topicId, segmentId, filters`},
		{`{"name":"D","audience":{"everyone":true,"topicId":"news"},"content":{"title":"t"},"rule":"FREQ=DAILY;BYHOUR=9"}`, CodeInvalidAudience, `audience is {"everyone": true} or exactly one of topicId, segmentId, filters`},
		{`{"name":"D","audience":{"everyone":false},"content":{"title":"t"},"rule":"FREQ=DAILY;BYHOUR=9"}`, CodeInvalidAudience, "everyone is true or left out: an audience never defaults to everyone"},
		{`{"name":"D","audience":{"everyone":true},"content":{"title":"t"}}`, CodeInvalidRule, "rule is required, e.g. FREQ=DAILY;BYHOUR=9;BYMINUTE=0"},
		{`{"name":"D","audience":{"everyone":true},"content":{"title":"t"},"rule":"FREQ=HOURLY"}`, CodeInvalidRule, "rule: FREQ must be DAILY, WEEKLY or MONTHLY"},
		{`{"name":"D","audience":{"everyone":true},"content":{"title":"t"},"rule":"FREQ=DAILY;COUNT=2;BYHOUR=9"}`, CodeInvalidRule, "rule: COUNT is not supported; end a schedule with endsAt"},
		{`{"name":"D","audience":{"everyone":true},"rule":"FREQ=DAILY;BYHOUR=9"}`, CodeInvalidSchedule, "give content, templateId, or both (content then overrides the template's)"},
		{`{` + valid + `,"timezone":"Mars/Olympus"}`, CodeInvalidTZ, `unknown time zone "Mars/Olympus"`},
		{`{` + valid + `,"timezone":"Local"}`, CodeInvalidTZ, "timezone must be an IANA time zone name, such as Europe/Paris"},
		{`{` + valid + `,"catchUpMinutes":0}`, CodeInvalidSchedule, "catchUpMinutes must be 1 to 10080"},
		{`{` + valid + `,"startsAt":"tomorrow"}`, CodeInvalidSchedule, "startsAt must be an RFC 3339 date-time, such as 2026-05-01T09:00:00Z"},
		{`{` + valid + `,"startsAt":"2026-05-02T00:00:00Z","endsAt":"2026-05-01T00:00:00Z"}`, CodeInvalidSchedule, "endsAt must be after startsAt"},
		{`{` + valid + `,"status":"draft"}`, CodeInvalidSchedule, "status must be active or paused"},
		{`{` + valid + `,"templateId":"8d2b5f7e-0000-4000-8000-000000000000"}`, CodeTemplateNotFound, "templates are not available on this server; give content instead of templateId"},
		{`{"name":"D","audience":{"everyone":true},"content":{"body":"no title"},"rule":"FREQ=DAILY;BYHOUR=9"}`, CodeTitleRequired, "a title is required to send"},
		{`{"name":"D","audience":{"topicId":"nope"},"content":{"title":"t"},"rule":"FREQ=DAILY;BYHOUR=9"}`, CodeUnknownTopic, "no topic nope on this website"},
		{`{"name":"D","audience":{"segmentId":"00000000-0000-4000-8000-000000000000"},"content":{"title":"t"},"rule":"FREQ=DAILY;BYHOUR=9"}`, CodeSegmentNotFound, "no segment 00000000-0000-4000-8000-000000000000 on this website"},
		{`{"name":"D","audience":{"everyone":true},"content":{"title":"t","url":"javascript:alert(1)"},"rule":"FREQ=DAILY;BYHOUR=9"}`, CodeInvalidURL, ""},
	} {
		r := h.do("POST", "/api/v1/schedules", c.body, key...)
		if c.message == "" {
			expectCode(t, r, 400, c.code)
			continue
		}
		expectError(t, r, 400, c.code, fmt.Sprintf(`,"message":%q`, c.message))
	}
	expectError(t, h.do("PUT", "/api/v1/schedules/"+id, `{}`, key...), 400, CodeNothingToUpdate, `,"message":"give at least one member to change"`)
	expectError(t, h.do("PUT", "/api/v1/schedules/"+id, `{"rule":"FREQ=WEEKLY;BYHOUR=9"}`, key...), 400, CodeInvalidRule,
		`,"message":"rule: a WEEKLY rule needs BYDAY: the days of the week it sends on"`)
	expectError(t, h.do("PUT", "/api/v1/schedules/"+id, `{"templateId":null,"content":null}`, key...), 400, CodeInvalidSchedule,
		`,"message":"give content, templateId, or both"`)
	if h.dump.take(t) != before {
		t.Fatal("a refusal changed the stores")
	}
}

// What uses what: a schedule holds its segment (segment_in_use counts
// it), and a deleted topic pauses the schedules on it, with the reason.
func TestScheduleSegmentAndTopic(t *testing.T) {
	h := newHarness(t)
	key := auth(h.site.APIKey)
	seg := h.createSegment(t, "VIP", `{"rules":[{"field":"tag:plan","value":"vip"}]}`)
	h.createSchedule(t, fmt.Sprintf(`{"name":"VIP","audience":{"segmentId":%q},"content":{"title":"t"},"rule":"FREQ=DAILY;BYHOUR=9"}`, seg))
	h.createSchedule(t, fmt.Sprintf(`{"name":"Not VIP","audience":{"everyone":true,"excludeSegmentId":%q},"content":{"title":"t"},"rule":"FREQ=DAILY;BYHOUR=9"}`, seg))
	paused := h.createSchedule(t, fmt.Sprintf(`{"name":"Off","status":"paused","audience":{"segmentId":%q},"content":{"title":"t"},"rule":"FREQ=DAILY;BYHOUR=9"}`, seg))
	expectError(t, h.do("DELETE", "/api/v1/segments/"+seg, "", key...), 409, CodeSegmentInUse,
		`,"message":"2 recurring schedules use this segment","feeds":0,"schedules":2,"pending":0`)
	_ = paused

	h.createTopics(t, "news")
	topics := h.topicIDs(t)
	onTopic := h.createSchedule(t, `{"name":"News","audience":{"topicId":"NEWS"},"content":{"title":"t"},"rule":"FREQ=DAILY;BYHOUR=9"}`)
	r := h.do("GET", "/api/v1/schedules/"+onTopic, "", key...)
	if got := r.json(t); fmt.Sprint(got["audience"]) != fmt.Sprintf("map[topicId:%s]", topics["news"]) {
		t.Fatalf("audience by slug stored as %v", got["audience"])
	}
	if r := h.do("POST", "/api/v1/webhooks", `{"url":"https://hooks.example/in","events":["schedule.paused"]}`, key...); r.status != 201 {
		t.Fatalf("POST webhook: %d %s", r.status, r.body)
	}
	if r := h.do("DELETE", "/api/v1/topics/"+topics["news"], "", key...); r.status != 200 {
		t.Fatalf("DELETE topic: %d %s", r.status, r.body)
	}
	r = h.do("GET", "/api/v1/schedules/"+onTopic, "", key...)
	if got := r.json(t); got["status"] != "paused" || got["pausedReason"] != `Its topic "news" was deleted.` || fmt.Sprint(got["nextRuns"]) != "[]" {
		t.Fatalf("after the topic's deletion: %s", r.body)
	}
	// The pause's webhook event, written with it.
	events, err := h.st.WebhookEvents(context.Background(), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 1 || events[0].Event != "schedule.paused" || string(events[0].Data) !=
		`{"scheduleId":"`+onTopic+`","name":"News","reason":"topic_deleted","message":"Its topic \"news\" was deleted."}` {
		t.Fatalf("webhook events %+v", events)
	}
}

// The sends a schedule makes are notifications with their origin, in the
// list and the detail, filterable by ?scheduleId=, counted against the
// broadcast budget with POST /notifications.
func TestScheduleSends(t *testing.T) {
	h := newHarness(t)
	key := auth(h.site.APIKey)
	id := h.createSchedule(t, `{"name":"Hourly","audience":{"everyone":true},"content":{"title":"On the hour"},
		"rule":"FREQ=DAILY;BYHOUR=13,14,15"}`)
	e, err := schedules.NewEngine(schedules.Config{Now: h.clock.Now}, h.st, nil, h.disp, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.send("Not from a schedule")
	setClock(h, time.Date(2026, 3, 1, 13, 0, 0, 0, time.UTC))
	if n, err := e.RunDue(context.Background()); err != nil || n != 1 {
		t.Fatalf("RunDue: %d %v", n, err)
	}
	r := h.do("GET", "/api/v1/notifications?scheduleId="+id, "", key...)
	items := decode[listAnswer](t, r).Items
	if r.status != 200 || len(items) != 1 || items[0].ScheduleID != id || items[0].Title != "On the hour" {
		t.Fatalf("list by schedule: %d %s", r.status, r.body)
	}
	if r := h.do("GET", "/api/v1/notifications", "", key...); len(decode[listAnswer](t, r).Items) != 2 {
		t.Fatalf("list: %s", r.body)
	}
	d := h.detailOf(t, items[0].ID)
	if d["scheduleId"] != id {
		t.Fatalf("detail: %v", d)
	}
	r = h.do("GET", "/api/v1/schedules/"+id, "", key...)
	want := fmt.Sprintf(`"history":[{"occurrence":"2026-03-01T13:00:00.000Z","outcome":"sent","notificationId":%q,"at":"2026-03-01T13:00:00.000Z"}]}`, items[0].ID)
	if got := string(r.body); len(got) < len(want) || got[len(got)-len(want):] != want {
		t.Fatalf("history: %s\nwant ...%s", got, want)
	}

	// The hour's budget is used up by API sends: 14:00 is refused,
	// recorded, and goes at 15:00 with 15:00's own.
	setClock(h, time.Date(2026, 3, 1, 14, 0, 0, 0, time.UTC))
	for range broadcastsPerHour {
		h.send("fill")
	}
	expectCode(t, h.do("POST", "/api/v1/notifications", `{"title":"over"}`, key...), 429, CodeSendLimitReached)
	if n, err := e.RunDue(context.Background()); err != nil || n != 1 {
		t.Fatalf("RunDue at 14:00: %d %v", n, err)
	}
	r = h.do("GET", "/api/v1/schedules/"+id, "", key...)
	got := r.json(t)
	if fmt.Sprint(got["lastRefusal"]) != "map[at:2026-03-01T14:00:00.000Z occurrence:2026-03-01T14:00:00.000Z reason:the website's hourly budget of 30 broadcast sends was used up retryAt:2026-03-01T15:00:00.000Z]" ||
		fmt.Sprint(got["nextRuns"]) != "[2026-03-01T14:00:00.000Z 2026-03-01T15:00:00.000Z 2026-03-02T13:00:00.000Z 2026-03-02T14:00:00.000Z 2026-03-02T15:00:00.000Z]" {
		t.Fatalf("after the refusal: %s", r.body)
	}
	setClock(h, time.Date(2026, 3, 1, 15, 0, 0, 0, time.UTC))
	if n, err := e.RunDue(context.Background()); err != nil || n != 2 {
		t.Fatalf("RunDue at 15:00: %d %v", n, err)
	}
	r = h.do("GET", "/api/v1/notifications?scheduleId="+id, "", key...)
	if items := decode[listAnswer](t, r).Items; len(items) != 3 {
		t.Fatalf("sends: %s", r.body)
	}
	s, err := h.st.Schedule(context.Background(), h.site.WebsiteID, id)
	if err != nil || s.BudgetWait || s.NextAt == nil || !s.NextAt.Equal(time.Date(2026, 3, 2, 13, 0, 0, 0, time.UTC)) {
		t.Fatalf("schedule %+v %v", s, err)
	}

	// Down until 15:30 the next day: 13:00 and 14:00 are skipped (more
	// than catchUpMinutes late), 15:00 goes late; the history shows them.
	setClock(h, time.Date(2026, 3, 2, 15, 30, 0, 0, time.UTC))
	if n, err := e.RunDue(context.Background()); err != nil || n != 3 {
		t.Fatalf("RunDue after the gap: %d %v", n, err)
	}
	r = h.do("GET", "/api/v1/schedules/"+id, "", key...)
	detail := decode[struct {
		History []struct {
			Occurrence     string  `json:"occurrence"`
			Outcome        string  `json:"outcome"`
			NotificationID *string `json:"notificationId"`
		} `json:"history"`
	}](t, r)
	var lines []string
	for _, h := range detail.History {
		lines = append(lines, fmt.Sprintf("%s %s %v", h.Occurrence, h.Outcome, h.NotificationID != nil))
	}
	if got, want := strings.Join(lines, ", "), "2026-03-02T15:00:00.000Z sent true, 2026-03-02T14:00:00.000Z skipped false, "+
		"2026-03-02T13:00:00.000Z skipped false, 2026-03-01T15:00:00.000Z sent true, 2026-03-01T14:00:00.000Z sent true, "+
		"2026-03-01T13:00:00.000Z sent true"; got != want {
		t.Fatalf("history %s\nwant    %s", got, want)
	}
	_ = store.OccurrenceSent
}

// setClock moves the harness clock on to at.
func setClock(h *harness, at time.Time) { h.clock.Add(at.Sub(h.clock.Now())) }
