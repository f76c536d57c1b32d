package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relaybell/relaybell/automations"
	"github.com/relaybell/relaybell/journeys"
	"github.com/relaybell/relaybell/store"
)

// Journeys (issue 32, items 2, 3 and 5): the routes, their refusals, the
// steps as the engine runs them, exits, waits, versions and enrolments,
// with the engine driven by the harness clock (no test sleeps through a
// delay).

func (h *harness) createJourney(t *testing.T, body string) map[string]any {
	t.Helper()
	r := h.do("POST", "/api/v1/journeys", body, auth(h.site.APIKey)...)
	if r.status != http.StatusCreated {
		t.Fatalf("POST /journeys %s: %d %s", body, r.status, r.body)
	}
	return r.json(t)
}

// runJourneys fires every timer due at the harness clock, as the engine
// module does (one claim loop, the journeys' handler, told of the labels
// set_tags steps set as the composition root tells it), and returns how
// many it fired.
func (h *harness) runJourneys(t *testing.T) int {
	t.Helper()
	tags := journeys.LabelsChanged(h.api.segments, h.api.goals)
	kinds := map[string]automations.KindHandler{store.TimerJourney: journeys.NewEngine(h.st, h.disp, tags, nil)}
	e, err := automations.NewEngine(automations.Config{Now: h.clock.Now, Kinds: kinds}, h.st, h.disp, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	n, err := e.RunDue(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// journeySends lists "step:title" of the journey's notifications, oldest
// first, and checks what each must be: an automation send, no send body,
// to the one subscriber.
func (h *harness) journeySends(t *testing.T, journeyID string) []string {
	t.Helper()
	list, err := h.st.ListNotifications(context.Background(), store.ListQuery{WebsiteID: h.site.WebsiteID, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for i := len(list) - 1; i >= 0; i-- {
		n := list[i]
		if n.JourneyID != journeyID {
			continue
		}
		if !n.Automation || n.SendBody != nil || !strings.HasPrefix(string(n.Target), `{"subscriberId":"`) {
			t.Fatalf("journey send %+v: want automation, no send body, one subscriber", n)
		}
		out = append(out, n.JourneyStep+":"+n.Title)
	}
	return out
}

type enrollmentOutJSON struct {
	ID          string `json:"id"`
	Version     int    `json:"version"`
	State       string `json:"state"`
	CurrentStep string `json:"currentStep"`
	Waiting     bool   `json:"waiting"`
	History     []struct {
		StepID         string  `json:"stepId"`
		Type           string  `json:"type"`
		At             string  `json:"at"`
		Outcome        string  `json:"outcome"`
		NotificationID *string `json:"notificationId"`
	} `json:"history"`
}

// enrollments lists the person's enrolments in the journey, newest
// first, each with its history.
func (h *harness) enrollments(t *testing.T, journeyID, externalID string) []enrollmentOutJSON {
	t.Helper()
	r := h.do("GET", "/api/v1/journeys/"+journeyID+"/enrollments?externalId="+externalID, "", auth(h.site.APIKey)...)
	list := decode[struct {
		Enrollments []enrollmentOutJSON `json:"enrollments"`
	}](t, r)
	for i, e := range list.Enrollments {
		r := h.do("GET", "/api/v1/journeys/"+journeyID+"/enrollments/"+e.ID, "", auth(h.site.APIKey)...)
		list.Enrollments[i] = decode[enrollmentOutJSON](t, r)
	}
	return list.Enrollments
}

// trail is an enrolment's history as "step outcome" lines.
func trail(e enrollmentOutJSON) string {
	var out []string
	for _, h := range e.History {
		out = append(out, h.StepID+" "+h.Outcome)
	}
	return strings.Join(out, "; ")
}

func (h *harness) enroll(t *testing.T, journeyID, body string) response {
	t.Helper()
	return h.do("POST", "/api/v1/journeys/"+journeyID+"/enrollments", body, auth(h.site.APIKey)...)
}

const welcomeJourney = `{"name":"Welcome","status":"active","entry":{"type":"api"},"steps":[
	{"id":"hello","type":"send","content":{"title":"Hello"},"next":"wait"},
	{"id":"wait","type":"wait","seconds":3600,"next":"bye"},
	{"id":"bye","type":"send","content":{"title":"Bye"}}]}`

func TestJourneyRoutes(t *testing.T) {
	h := newHarness(t)
	created := h.createJourney(t, welcomeJourney)
	id := created["id"].(string)
	if !isUUID(id) {
		t.Fatalf("id %q", id)
	}
	zero := `{"entered":0,"waiting":0,"completed":0,"exitedEarly":0,"sent":0,"delivered":0,"clicked":0,"converted":0,"revenue":0}`
	want := fmt.Sprintf(`{"id":%q,"name":"Welcome","status":"active","version":1,"entry":{"type":"api"},"reentry":{"mode":"never"},`+
		`"exitEvents":[],"goal":null,"steps":[{"id":"hello","type":"send","next":"wait","content":{"title":"Hello"}},`+
		`{"id":"wait","type":"wait","next":"bye","seconds":3600},{"id":"bye","type":"send","content":{"title":"Bye"}}],`+
		`"stats":{"bye":%s,"hello":%s,"wait":%s},"created_at":"2026-03-01T12:00:00Z","updated_at":"2026-03-01T12:00:00Z"}`, id, zero, zero, zero)
	r := h.do("GET", "/api/v1/journeys/"+id, "", auth(h.site.APIKey)...)
	if r.status != 200 || string(r.body) != want {
		t.Fatalf("GET: %d\n %s\nwant\n %s", r.status, r.body, want)
	}
	h.clock.Add(time.Minute)
	second := h.createJourney(t, `{"name":"Draft","steps":[{"id":"x","type":"exit"}]}`)
	if second["status"] != "draft" || second["version"] != 1.0 || fmt.Sprint(second["entry"]) != "map[type:api]" ||
		fmt.Sprint(second["reentry"]) != "map[mode:never]" {
		t.Fatalf("defaults: %v", second)
	}
	list := decode[struct {
		Journeys []struct {
			ID    string          `json:"id"`
			Stats json.RawMessage `json:"stats"`
		} `json:"journeys"`
	}](t, h.do("GET", "/api/v1/journeys", "", auth(h.site.APIKey)...))
	if len(list.Journeys) != 2 || list.Journeys[0].ID != second["id"] || list.Journeys[1].ID != id || list.Journeys[0].Stats != nil {
		t.Fatalf("list %+v", list)
	}
	// PUT: what it names, answered as it is now; no enrolment yet, so
	// still version 1.
	h.clock.Add(time.Minute)
	r = h.do("PUT", "/api/v1/journeys/"+id, `{"name":"Hi","reentry":{"mode":"after","hours":24}}`, auth(h.site.APIKey)...)
	got := r.json(t)
	if r.status != 200 || got["name"] != "Hi" || got["version"] != 1.0 || fmt.Sprint(got["reentry"]) != "map[hours:24 mode:after]" ||
		got["updated_at"] != "2026-03-01T12:02:00Z" || got["stats"] == nil {
		t.Fatalf("PUT: %d %s", r.status, r.body)
	}
	// Reads with any key; changes need settings:write, enrolments
	// events:write.
	send := h.key([]string{ScopeSend}, nil)
	for _, path := range []string{"/api/v1/journeys", "/api/v1/journeys/" + id, "/api/v1/journeys/" + id + "/enrollments"} {
		if r := h.do("GET", path, "", auth(send)...); r.status != 200 {
			t.Fatalf("GET %s with a send key: %d %s", path, r.status, r.body)
		}
	}
	before := h.dump.take(t)
	for _, c := range []struct{ method, path, body, scope string }{
		{"POST", "/api/v1/journeys", welcomeJourney, ScopeSettingsWrite},
		{"PUT", "/api/v1/journeys/" + id, `{"status":"paused"}`, ScopeSettingsWrite},
		{"DELETE", "/api/v1/journeys/" + id, "", ScopeSettingsWrite},
		{"POST", "/api/v1/journeys/" + id + "/migrate", `{"fromVersion":1,"steps":{}}`, ScopeSettingsWrite},
		{"POST", "/api/v1/journeys/" + id + "/enrollments", `{"externalId":"ada"}`, ScopeEventsWrite},
		{"DELETE", "/api/v1/journeys/" + id + "/enrollments/00000000-0000-4000-8000-000000000000", "", ScopeEventsWrite},
	} {
		expectError(t, h.do(c.method, c.path, c.body, auth(send)...), 403, CodeInsufficientScope, `,"required":"`+c.scope+`"`)
	}
	if h.dump.take(t) != before {
		t.Fatal("a refused change changed the stores")
	}
	otherSite, err := CreateWebsite(context.Background(), h.st, NewWebsite{Name: "Other", URL: "https://other.example"}, testStart)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ method, path, body, key string }{
		{"GET", "/api/v1/journeys/" + id, "", otherSite.APIKey},
		{"PUT", "/api/v1/journeys/" + id, `{"name":"x"}`, otherSite.APIKey},
		{"DELETE", "/api/v1/journeys/" + id, "", otherSite.APIKey},
		{"POST", "/api/v1/journeys/" + id + "/enrollments", `{"externalId":"ada"}`, otherSite.APIKey},
		{"GET", "/api/v1/journeys/" + id + "/enrollments", "", otherSite.APIKey},
		{"GET", "/api/v1/journeys/00000000-0000-4000-8000-000000000000", "", h.site.APIKey},
		{"GET", "/api/v1/journeys/nope", "", h.site.APIKey},
	} {
		expectCode(t, h.do(c.method, c.path, c.body, auth(c.key)...), 404, CodeNotFound)
	}
	r = h.do("DELETE", "/api/v1/journeys/"+id, "", auth(h.site.APIKey)...)
	if r.status != 200 || string(r.body) != `{"ok":true}` {
		t.Fatalf("DELETE: %d %s", r.status, r.body)
	}
	expectCode(t, h.do("GET", "/api/v1/journeys/"+id, "", auth(h.site.APIKey)...), 404, CodeNotFound)
}

// TestJourneyRefusals: each invalid graph answers invalid_graph naming
// the step and saying why; other members their codes; nothing changes.
func TestJourneyRefusals(t *testing.T) {
	h := newHarness(t)
	id := h.createJourney(t, `{"name":"Base","steps":[{"id":"a","type":"exit"}]}`)["id"].(string)
	f := func(steps, code, step, message string) {
		t.Helper()
		body := `{"name":"x","steps":` + steps + `}`
		if strings.HasPrefix(steps, "{") {
			body = steps
		}
		before := h.dump.take(t)
		for _, c := range []struct{ method, path string }{{"POST", "/api/v1/journeys"}, {"PUT", "/api/v1/journeys/" + id}} {
			r := h.do(c.method, c.path, body, auth(h.site.APIKey)...)
			if message == "" {
				expectCode(t, r, 400, code)
				continue
			}
			extra := fmt.Sprintf(`,"message":%q`, message)
			if step != "" {
				extra += fmt.Sprintf(`,"step":%q`, step)
			}
			expectError(t, r, 400, code, extra)
		}
		if h.dump.take(t) != before {
			t.Fatalf("%s changed the stores", body)
		}
	}
	send := `{"id":"s","type":"send","content":{"title":"Hi"},"next":"w"}`
	f(`[{"id":"a","type":"send","content":{"title":"Hi"},"next":"nowhere"}]`, CodeInvalidGraph, "a", `next "nowhere" of step "a" names no step`)
	f(`[{"id":"a","type":"condition","filters":{"rules":[{"field":"country","value":"FR"}]},"yes":"b","no":"zz"},{"id":"b","type":"exit"}]`,
		CodeInvalidGraph, "a", `no "zz" of step "a" names no step`)
	f(`[{"id":"a","type":"wait_until","event":"x","timeoutSeconds":60,"next":"b","timeoutNext":"gone"},{"id":"b","type":"exit"}]`,
		CodeInvalidGraph, "a", `timeoutNext "gone" of step "a" names no step`)
	f(`[{"id":"a","type":"split","branches":[{"weight":50,"next":"b"},{"weight":50,"next":"q"}]},{"id":"b","type":"exit"}]`,
		CodeInvalidGraph, "a", `branches[1].next "q" of step "a" names no step`)
	f(`[{"id":"a","type":"split","branches":[{"weight":50,"next":"b"},{"weight":40,"next":"b"}]},{"id":"b","type":"exit"}]`,
		CodeInvalidGraph, "a", `step "a": the branches' weights sum to 90, not 100`)
	f(`[{"id":"a","type":"split","branches":[{"weight":100,"next":"b"}]},{"id":"b","type":"exit"}]`,
		CodeInvalidGraph, "a", `step "a": a split has 2 to 5 branches`)
	f(`[{"id":"a","type":"set_tags","tags":{"seen":"1"},"next":"b"},{"id":"b","type":"send","content":{"title":"Hi"},"next":"a"}]`,
		CodeInvalidGraph, "a", `step "a" is on a cycle with no wait, wait_until or window in it`)
	f(`[`+send+`,{"id":"w","type":"wait_until","delivered":"x","timeoutSeconds":60}]`, CodeInvalidGraph, "w", `delivered "x" of step "w" names no send step`)
	f(`[{"id":"c","type":"condition","segmentId":"00000000-0000-4000-8000-000000000000","yes":"s","no":"w"},`+send+`,{"id":"w","type":"wait_until","clicked":"s","timeoutSeconds":60}]`,
		CodeSegmentNotFound, "c", `step "c": no segment "00000000-0000-4000-8000-000000000000" on this website`)
	f(`[{"id":"c","type":"condition","filters":{"rules":[{"field":"country","value":"FR"}]},"yes":"s","no":"w"},`+send+`,{"id":"w","type":"wait_until","clicked":"s","timeoutSeconds":60}]`,
		CodeInvalidGraph, "w", `clicked "s" of step "w": that send does not come before it on every path from the first step`)
	f(`[{"id":"a","type":"wait","seconds":0,"next":"a"}]`, CodeInvalidGraph, "a", `step "a": seconds is 1 to 31536000`)
	f(`[{"id":"a","type":"wait","seconds":60,"content":{"title":"x"}}]`, CodeInvalidGraph, "a", `step "a": a wait step takes no content`)
	f(`[{"id":"a","type":"wait_until","event":"x","clicked":"a","timeoutSeconds":60}]`, CodeInvalidGraph, "a",
		`step "a": a wait_until step takes exactly one of event, delivered and clicked`)
	f(`[{"id":"a","type":"wait_until","event":"x"}]`, CodeInvalidGraph, "a", `step "a": timeoutSeconds is 1 to 31536000`)
	f(`[{"id":"a","type":"window","from":"9:00","to":"17:00"}]`, CodeInvalidGraph, "a", `step "a": from and to are two different times HH:MM`)
	f(`[{"id":"a","type":"window","from":"09:00","to":"17:00","days":["mon","someday"]}]`, CodeInvalidGraph, "a", `step "a": days are mon, tue, wed, thu, fri, sat or sun`)
	f(`[{"id":"a","type":"jump"}]`, CodeInvalidGraph, "a", `step "a": type is send, wait, wait_until, window, split, condition, set_tags or exit`)
	f(`[{"id":"a","type":"exit"},{"id":"a","type":"exit"}]`, CodeInvalidGraph, "a", `step id "a" is used twice`)
	f(`[]`, CodeInvalidGraph, "", `steps holds 1 to 100 steps`)
	f(`[{"id":"a","type":"set_tags","tags":{"rb_x":"1"}}]`, CodeInvalidGraph, "a", `step "a": label names are 1-64 characters, not starting with "rb_", and values up to 256`)
	f(`[{"id":"a","type":"send","content":{"body":"no title"}}]`, CodeTitleRequired, "a", `step "a": a title is required to send`)
	f(`[{"id":"a","type":"send","content":{"title":"x","segmentId":"00000000-0000-4000-8000-000000000000"}}]`, CodeUnknownField, "a",
		`unknown field content.segmentId of step "a": a step goes to the enrolled person (transactional is a member of the step)`)
	f(`[{"id":"a","type":"condition","filters":{"rules":[{"field":"country"}]}}]`, CodeInvalidFilters, "a", `step "a": filters need at least one complete rule (a field and a value)`)
	f(`[{"id":"a","type":"exit","color":"red"}]`, CodeUnknownField, "", "")
	f(`[{"id":"a","type":"wait","seconds":"60"}]`, CodeInvalidJSON, "", "")
	f(`{"name":"x","entry":{"type":"visit"},"steps":[{"id":"a","type":"exit"}]}`, CodeInvalidEntry, "", "entry.type is api, event, subscribed, topic_opt_in or segment_entered")
	f(`{"name":"x","entry":{"type":"api","event":"x"},"steps":[{"id":"a","type":"exit"}]}`, CodeInvalidEntry, "", "an api entry takes no other member")
	f(`{"name":"x","entry":{"type":"event"},"steps":[{"id":"a","type":"exit"}]}`, CodeInvalidEntry, "", "an event entry needs entry.event, an event name of 1 to 120 characters")
	f(`{"name":"x","reentry":{"mode":"after"},"steps":[{"id":"a","type":"exit"}]}`, CodeInvalidReentry, "", "reentry is {mode: never} or {mode: after, hours: 1 to 8760}")
	f(`{"name":"x","exitEvents":[""],"steps":[{"id":"a","type":"exit"}]}`, CodeInvalidExitEvents, "", "exitEvents[0] must be an event name of 1 to 120 characters")
	f(`{"name":"x","goal":{"goalId":"nope","exitOnGoal":true},"steps":[{"id":"a","type":"exit"}]}`, CodeGoalNotFound, "", `no goal "nope" on this website`)
	f(`{"name":" ","steps":[{"id":"a","type":"exit"}]}`, CodeNameRequired, "", "a name is required")
	f(`{"name":"x","status":"live","steps":[{"id":"a","type":"exit"}]}`, CodeInvalidStatus, "", "status is draft, active or paused")
}

// TestJourneyStepsRun: an event entry with conditions enrols (answered
// in sequencesEnrolled), and every step type runs: send, wait, condition,
// set_tags, split, exit; the history says why each step went its way and
// the per-step stats count it.
func TestJourneyStepsRun(t *testing.T) {
	h := newHarness(t)
	ada := h.browser(t, `,"externalId":"ada"`)
	id := h.createJourney(t, `{"name":"Cart","status":"active",
		"entry":{"type":"event","event":"cart.updated","conditions":{"rules":[{"field":"properties.value","op":"gt","value":50}]}},
		"steps":[
		{"id":"remind","type":"send","content":{"title":"Your cart"},"next":"pause"},
		{"id":"pause","type":"wait","seconds":3600,"next":"vip"},
		{"id":"vip","type":"condition","filters":{"rules":[{"field":"tag:plan","value":"vip"}]},"yes":"tag","no":"ab"},
		{"id":"tag","type":"set_tags","tags":{"journey":"cart-vip"},"next":"done"},
		{"id":"ab","type":"split","branches":[{"weight":50,"next":"a"},{"weight":50,"next":"b"}]},
		{"id":"a","type":"send","content":{"title":"A"},"next":"done"},
		{"id":"b","type":"send","content":{"title":"B"},"next":"done"},
		{"id":"done","type":"exit"}]}`)["id"].(string)
	if got := h.track(t, `{"event":"cart.updated","externalId":"ada","properties":{"value":20}}`)["sequencesEnrolled"]; got != 0.0 {
		t.Fatalf("a small cart: sequencesEnrolled %v", got)
	}
	if got := h.track(t, `{"event":"cart.updated","externalId":"ada","properties":{"value":80}}`)["sequencesEnrolled"]; got != 1.0 {
		t.Fatalf("sequencesEnrolled %v, want 1", got)
	}
	if got := h.track(t, `{"event":"cart.updated","externalId":"ada","properties":{"value":90}}`)["sequencesEnrolled"]; got != 0.0 {
		t.Fatalf("again while live: sequencesEnrolled %v", got)
	}
	if n := h.runJourneys(t); n != 1 {
		t.Fatalf("fired %d, want the entry", n)
	}
	if got := h.journeySends(t, id); fmt.Sprint(got) != "[remind:Your cart]" {
		t.Fatalf("sends %v", got)
	}
	if n := h.runJourneys(t); n != 0 {
		t.Fatalf("fired %d during the wait", n)
	}
	h.clock.Add(time.Hour)
	h.runJourneys(t)
	list := h.enrollments(t, id, "ada")
	if len(list) != 1 || list[0].State != "completed" || list[0].CurrentStep != "done" {
		t.Fatalf("enrolments %+v", list)
	}
	branch := journeys.ChooseBranch(list[0].ID, "ab", []journeys.Branch{{Weight: 50}, {Weight: 50}})
	pick := []string{"a", "b"}[branch]
	sends := h.journeySends(t, id)
	if fmt.Sprint(sends) != fmt.Sprintf("[remind:Your cart %s:%s]", pick, strings.ToUpper(pick)) {
		t.Fatalf("sends %v, want the branch %s", sends, pick)
	}
	n := h.notificationsOfJourney(t, id)
	want := fmt.Sprintf("remind sent %s; pause waited 3600s; vip no; ab branch %d of 2 (weight 50); %s sent %s; done exit step",
		n[0].ID, branch+1, pick, n[1].ID)
	if got := trail(list[0]); got != want {
		t.Fatalf("history\n %s\nwant\n %s", got, want)
	}
	if at := list[0].History[1].At; at != "2026-03-01T13:00:00Z" {
		t.Fatalf("wait's row at %s", at)
	}
	// Stats per step: the sends' pushes count too.
	if err := h.st.RecordResults(context.Background(), n[0].ID, []store.PushResult{{EndpointID: ada.EndpointID, Outcome: store.OutcomeSent}}); err != nil {
		t.Fatal(err)
	}
	h.ping(t, "delivered", n[0].ID, ada.EndpointID)
	var got struct {
		Stats map[string]stepStatsJSON `json:"stats"`
	}
	got = decode[struct {
		Stats map[string]stepStatsJSON `json:"stats"`
	}](t, h.do("GET", "/api/v1/journeys/"+id, "", auth(h.site.APIKey)...))
	other := map[string]string{"a": "b", "b": "a"}[pick]
	if got.Stats["remind"] != (stepStatsJSON{Entered: 1, Completed: 1, Sent: 1, Delivered: 1}) ||
		got.Stats["pause"] != (stepStatsJSON{Entered: 1, Completed: 1}) || got.Stats[other] != (stepStatsJSON{}) ||
		got.Stats["tag"] != (stepStatsJSON{}) || got.Stats["done"] != (stepStatsJSON{Entered: 1, Completed: 1}) {
		t.Fatalf("stats %+v", got.Stats)
	}

	// A VIP takes the yes branch and gets the label set.
	bob := h.browser(t, `,"externalId":"bob"`)
	if r := h.do("POST", "/api/v1/audience/subscribers/bulk-tag", `{"ids":["`+bob.SubscriberID+`"],"set":{"plan":"vip"},"remove":[]}`,
		auth(h.site.APIKey)...); r.status != 200 {
		t.Fatalf("bulk-tag: %d %s", r.status, r.body)
	}
	h.track(t, `{"event":"cart.updated","externalId":"bob","properties":{"value":80}}`)
	h.runJourneys(t)
	h.clock.Add(time.Hour)
	h.runJourneys(t)
	bobs := h.enrollments(t, id, "bob")
	if len(bobs) != 1 || !strings.Contains(trail(bobs[0]), "vip yes; tag tags set: journey=cart-vip; done exit step") {
		t.Fatalf("bob: %+v", bobs)
	}
	p, err := h.st.Person(context.Background(), h.site.WebsiteID, "bob")
	if err != nil || p.Tags["journey"] != "cart-vip" || p.Tags["plan"] != "vip" {
		t.Fatalf("bob's labels %v %v", p.Tags, err)
	}
}

// notificationsOfJourney lists the journey's notifications, oldest first.
func (h *harness) notificationsOfJourney(t *testing.T, journeyID string) []store.Notification {
	t.Helper()
	list, err := h.st.ListNotifications(context.Background(), store.ListQuery{WebsiteID: h.site.WebsiteID, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var out []store.Notification
	for i := len(list) - 1; i >= 0; i-- {
		if list[i].JourneyID == journeyID {
			out = append(out, list[i])
		}
	}
	return out
}

// TestJourneyExitAndWaitUntil: an exit event ends the enrolment when it
// arrives, mid-wait; wait_until on an event moves on at once when it
// comes, and at its timeout to timeoutNext when it does not (no
// timeoutNext: the enrolment ends).
func TestJourneyExitAndWaitUntil(t *testing.T) {
	h := newHarness(t)
	for _, p := range []string{"ada", "bob", "cy"} {
		h.browser(t, `,"externalId":"`+p+`"`)
	}
	id := h.createJourney(t, `{"name":"Cart","status":"active","entry":{"type":"api"},"exitEvents":["purchase"],"steps":[
		{"id":"w","type":"wait_until","event":"checkout.started","timeoutSeconds":86400,"next":"thanks","timeoutNext":"nudge"},
		{"id":"thanks","type":"send","content":{"title":"Thanks"}},
		{"id":"nudge","type":"send","content":{"title":"Nudge"},"next":"long"},
		{"id":"long","type":"wait","seconds":2592000,"next":"late"},
		{"id":"late","type":"send","content":{"title":"Late"}}]}`)["id"].(string)
	for _, p := range []string{"ada", "bob", "cy"} {
		if r := h.enroll(t, id, `{"externalId":"`+p+`"}`); r.status != 201 {
			t.Fatalf("enrol %s: %d %s", p, r.status, r.body)
		}
	}
	h.runJourneys(t)
	// Ada starts the checkout: on at once (the engine runs her next step).
	h.clock.Add(time.Hour)
	if got := h.track(t, `{"event":"checkout.started","externalId":"ada"}`)["sequencesEnrolled"]; got != 0.0 {
		t.Fatalf("sequencesEnrolled %v", got)
	}
	h.runJourneys(t)
	if got := trail(h.enrollments(t, id, "ada")[0]); !strings.HasPrefix(got, "w met: event checkout.started arrived; thanks sent ") {
		t.Fatalf("ada: %s", got)
	}
	// A day: Bob and Cy time out to the nudge, then wait 30 days.
	h.clock.Add(23 * time.Hour)
	h.runJourneys(t)
	if got := h.journeySends(t, id); fmt.Sprint(got) != "[thanks:Thanks nudge:Nudge nudge:Nudge]" {
		t.Fatalf("sends %v", got)
	}
	// Bob buys on day 2 of the 30-day wait: he exits then, not at its end.
	h.clock.Add(24 * time.Hour)
	h.track(t, `{"event":"purchase","externalId":"bob"}`)
	bob := h.enrollments(t, id, "bob")[0]
	if bob.State != "exited" || !strings.HasSuffix(trail(bob), "long exit event purchase") || bob.History[len(bob.History)-1].At != "2026-03-03T12:00:00Z" {
		t.Fatalf("bob %+v", bob)
	}
	h.clock.Add(30 * 24 * time.Hour)
	h.runJourneys(t)
	if got := h.journeySends(t, id); fmt.Sprint(got) != "[thanks:Thanks nudge:Nudge nudge:Nudge late:Late]" {
		t.Fatalf("sends %v, want Cy's late alone", got)
	}
	cy := h.enrollments(t, id, "cy")[0]
	if cy.State != "completed" || !strings.HasPrefix(trail(cy), "w timeout after 86400s; nudge sent ") {
		t.Fatalf("cy %+v", cy)
	}
	// A purchase after the end changes nothing.
	h.track(t, `{"event":"purchase","externalId":"cy"}`)
	if again := h.enrollments(t, id, "cy")[0]; again.State != "completed" || len(again.History) != len(cy.History) {
		t.Fatalf("cy after the end %+v", again)
	}
}

// TestJourneyWaitUntilPings: wait_until delivered and clicked move on
// when the named send's ping of that person arrives, and time out when
// none does; a ping that came during an earlier wait meets it at once.
func TestJourneyWaitUntilPings(t *testing.T) {
	h := newHarness(t)
	ada := h.browser(t, `,"externalId":"ada"`)
	bob := h.browser(t, `,"externalId":"bob"`)
	id := h.createJourney(t, `{"name":"Pings","status":"active","steps":[
		{"id":"s","type":"send","content":{"title":"One"},"next":"d"},
		{"id":"d","type":"wait_until","delivered":"s","timeoutSeconds":600,"next":"c","timeoutNext":"lost"},
		{"id":"c","type":"wait_until","clicked":"s","timeoutSeconds":600,"next":"clicked"},
		{"id":"clicked","type":"send","content":{"title":"Clicked"}},
		{"id":"lost","type":"send","content":{"title":"Lost"}}]}`)["id"].(string)
	h.enroll(t, id, `{"externalId":"ada"}`)
	h.enroll(t, id, `{"externalId":"bob"}`)
	h.runJourneys(t)
	sends := h.notificationsOfJourney(t, id)
	toAda := sends[0]
	if !strings.Contains(string(toAda.Target), ada.SubscriberID) {
		toAda = sends[1]
	}
	// Ada's browser clicks: delivered and clicked are both met.
	h.ping(t, "clicked", toAda.ID, ada.EndpointID)
	h.runJourneys(t)
	if got := trail(h.enrollments(t, id, "ada")[0]); !strings.HasPrefix(got, "s sent "+toAda.ID+"; d met: delivered s; c met: clicked s already; clicked sent ") {
		t.Fatalf("ada: %s", got)
	}
	// Bob's ping of Ada's send moves nothing of his.
	h.ping(t, "delivered", toAda.ID, bob.EndpointID)
	h.clock.Add(10 * time.Minute)
	h.runJourneys(t)
	if got := trail(h.enrollments(t, id, "bob")[0]); !strings.Contains(got, "d timeout after 600s; lost sent ") {
		t.Fatalf("bob: %s", got)
	}
	if got := h.journeySends(t, id); len(got) != 4 || !slices.Contains(got, "clicked:Clicked") || !slices.Contains(got, "lost:Lost") {
		t.Fatalf("sends %v", got)
	}
}

// TestJourneyEnrollments: enrolment by the API, its refusals, reentry
// never and after, ending one, the lists by person, and two concurrent
// enrolments of one person: one 201, one 409.
func TestJourneyEnrollments(t *testing.T) {
	h := newHarness(t)
	ada := h.browser(t, `,"externalId":"ada"`)
	id := h.createJourney(t, welcomeJourney)["id"].(string)
	events := h.key([]string{ScopeEventsWrite}, nil)
	r := h.do("POST", "/api/v1/journeys/"+id+"/enrollments", `{"externalId":"ada"}`, auth(events)...)
	if r.status != 201 {
		t.Fatalf("enrol: %d %s", r.status, r.body)
	}
	first := r.json(t)["enrollmentId"].(string)
	if !isUUID(first) || string(r.body) != `{"enrollmentId":"`+first+`"}` {
		t.Fatalf("answer %s", r.body)
	}
	before := h.dump.take(t)
	expectError(t, h.enroll(t, id, `{"subscriberId":"`+strings.ToUpper(ada.SubscriberID)+`"}`), 409, CodeAlreadyEnrolled,
		`,"message":"the person has a live enrolment in this journey, or its reentry rule keeps them out"`)
	expectError(t, h.enroll(t, id, `{}`), 400, CodePersonRequired, `,"message":"name the person with exactly one of externalId and subscriberId"`)
	expectError(t, h.enroll(t, id, `{"externalId":"ada","subscriberId":"`+ada.SubscriberID+`"}`), 400, CodePersonRequired,
		`,"message":"name the person with exactly one of externalId and subscriberId"`)
	expectError(t, h.enroll(t, id, `{"externalId":"nobody"}`), 404, CodeNotFound, `,"message":"no such person on this website"`)
	expectCode(t, h.enroll(t, id, `{"externalId":"ada","extra":1}`), 400, CodeUnknownField)
	expectCode(t, h.enroll(t, id, `{"externalId":5}`), 400, CodeInvalidJSON)
	draft := h.createJourney(t, `{"name":"Draft","steps":[{"id":"x","type":"exit"}]}`)["id"].(string)
	before = h.dump.take(t)
	expectError(t, h.enroll(t, draft, `{"externalId":"ada"}`), 409, CodeJourneyNotActive, `,"message":"the journey is draft; only an active journey enrols"`)
	if h.dump.take(t) != before {
		t.Fatal("a refused enrolment changed the stores")
	}
	// The list by person, the person's enrolments across journeys, and
	// ending one.
	list := h.enrollments(t, id, "ada")
	if len(list) != 1 || list[0].ID != first || list[0].State != "active" || list[0].CurrentStep != "hello" || list[0].Version != 1 {
		t.Fatalf("enrolments %+v", list)
	}
	if got := h.enrollments(t, id, "nobody"); len(got) != 0 {
		t.Fatalf("nobody's %+v", got)
	}
	h.runJourneys(t)
	r = h.do("DELETE", "/api/v1/journeys/"+id+"/enrollments/"+first, "", auth(events)...)
	ended := decode[enrollmentOutJSON](t, r)
	if ended.State != "exited" || !strings.HasSuffix(trail(ended), "wait ended by the API") {
		t.Fatalf("DELETE: %s", r.body)
	}
	h.clock.Add(2 * time.Hour)
	if n := h.runJourneys(t); n != 0 {
		t.Fatalf("an ended enrolment's wait fired %d", n)
	}
	// Reentry never: refused after the end.
	expectCode(t, h.enroll(t, id, `{"externalId":"ada"}`), 409, CodeAlreadyEnrolled)
	// Reentry after a day: refused within it, taken after it.
	h.do("PUT", "/api/v1/journeys/"+id, `{"reentry":{"mode":"after","hours":24}}`, auth(h.site.APIKey)...)
	expectCode(t, h.enroll(t, id, `{"externalId":"ada"}`), 409, CodeAlreadyEnrolled)
	h.clock.Add(22 * time.Hour)
	if r := h.enroll(t, id, `{"externalId":"ada"}`); r.status != 201 {
		t.Fatalf("after a day: %d %s", r.status, r.body)
	}
	r = h.do("GET", "/api/v1/subscribers/ada/enrollments", "", auth(h.site.APIKey)...)
	all := decode[struct {
		Enrollments []struct {
			JourneyID string `json:"journeyId"`
			State     string `json:"state"`
			Version   int    `json:"version"`
		} `json:"enrollments"`
	}](t, r)
	if len(all.Enrollments) != 2 || all.Enrollments[0].State != "active" || all.Enrollments[0].Version != 2 ||
		all.Enrollments[1].State != "exited" || all.Enrollments[1].JourneyID != id {
		t.Fatalf("person's enrolments %s", r.body)
	}
	expectCode(t, h.do("GET", "/api/v1/subscribers/nobody/enrollments", "", auth(h.site.APIKey)...), 404, CodeNotFound)

	// Two at once for a new person: one 201, one 409.
	h.browser(t, `,"externalId":"bob"`)
	var wg sync.WaitGroup
	codes := make([]int, 2)
	for i := range codes {
		wg.Go(func() { codes[i] = h.enroll(t, id, `{"externalId":"bob"}`).status })
	}
	wg.Wait()
	slices.Sort(codes)
	if fmt.Sprint(codes) != "[201 409]" {
		t.Fatalf("concurrent enrolments %v", codes)
	}
}

// TestJourneyVersions: a change after enrolments is a new version; the
// live enrolment stays on its own and its pending steps do not change;
// migrate moves it to the mapped step, refusing an unmapped one.
func TestJourneyVersions(t *testing.T) {
	h := newHarness(t)
	h.browser(t, `,"externalId":"ada"`)
	h.browser(t, `,"externalId":"bob"`)
	id := h.createJourney(t, welcomeJourney)["id"].(string)
	h.enroll(t, id, `{"externalId":"ada"}`)
	h.runJourneys(t) // Ada: hello sent, waiting an hour
	r := h.do("PUT", "/api/v1/journeys/"+id, `{"steps":[
		{"id":"hi","type":"send","content":{"title":"Hi v2"},"next":"pause"},
		{"id":"pause","type":"wait","seconds":60,"next":"end"},
		{"id":"end","type":"send","content":{"title":"End v2"}}]}`, auth(h.site.APIKey)...)
	if got := r.json(t); r.status != 200 || got["version"] != 2.0 {
		t.Fatalf("PUT: %d %s", r.status, r.body)
	}
	// A second change before anyone entered version 2 stays version 2.
	if got := h.do("PUT", "/api/v1/journeys/"+id, `{"name":"Welcome 2"}`, auth(h.site.APIKey)...).json(t); got["version"] != 2.0 {
		t.Fatalf("version %v", got["version"])
	}
	h.enroll(t, id, `{"externalId":"bob"}`)
	h.runJourneys(t)
	h.clock.Add(time.Minute)
	h.runJourneys(t)
	h.clock.Add(59 * time.Minute)
	h.runJourneys(t)
	ada, bob := h.enrollments(t, id, "ada")[0], h.enrollments(t, id, "bob")[0]
	if ada.Version != 1 || ada.State != "completed" || !strings.Contains(trail(ada), "wait waited 3600s; bye sent") {
		t.Fatalf("ada on version 1: %+v", ada)
	}
	if bob.Version != 2 || bob.State != "completed" || !strings.Contains(trail(bob), "pause waited 60s; end sent") {
		t.Fatalf("bob on version 2: %+v", bob)
	}
	// Migration: Carl on version 2 waiting, moved to version 3's step.
	h.browser(t, `,"externalId":"carl"`)
	h.enroll(t, id, `{"externalId":"carl"}`)
	h.runJourneys(t) // Carl: hi sent, waiting at pause
	if got := h.do("PUT", "/api/v1/journeys/"+id, `{"steps":[{"id":"start","type":"wait","seconds":30,"next":"last"},
		{"id":"last","type":"send","content":{"title":"Last v3"}}]}`, auth(h.site.APIKey)...).json(t); got["version"] != 3.0 {
		t.Fatalf("version %v", got["version"])
	}
	before := h.dump.take(t)
	expectError(t, h.do("POST", "/api/v1/journeys/"+id+"/migrate", `{"fromVersion":2,"steps":{"hi":"start"}}`, auth(h.site.APIKey)...),
		400, CodeUnmappedStep, `,"message":"live enrolments of version 2 are at step \"pause\", which steps does not map","step":"pause"`)
	expectError(t, h.do("POST", "/api/v1/journeys/"+id+"/migrate", `{"fromVersion":2,"steps":{"pause":"nope"}}`, auth(h.site.APIKey)...),
		400, CodeUnmappedStep, `,"message":"steps[\"pause\"] names \"nope\", no step of version 3","step":"nope"`)
	expectError(t, h.do("POST", "/api/v1/journeys/"+id+"/migrate", `{"fromVersion":3,"steps":{}}`, auth(h.site.APIKey)...),
		400, CodeInvalidID, `,"message":"fromVersion is an earlier version of this journey, 1 to 2"`)
	expectCode(t, h.do("POST", "/api/v1/journeys/"+id+"/migrate", `{"fromVersion":2,"steps":{"pause":1}}`, auth(h.site.APIKey)...), 400, CodeInvalidJSON)
	if h.dump.take(t) != before {
		t.Fatal("a refused migration changed the stores")
	}
	r = h.do("POST", "/api/v1/journeys/"+id+"/migrate", `{"fromVersion":2,"steps":{"pause":"start"}}`, auth(h.site.APIKey)...)
	if r.status != 200 || string(r.body) != `{"moved":1,"ok":true}` {
		t.Fatalf("migrate: %d %s", r.status, r.body)
	}
	h.runJourneys(t)
	h.clock.Add(30 * time.Second)
	h.runJourneys(t)
	carl := h.enrollments(t, id, "carl")[0]
	if carl.Version != 3 || carl.State != "completed" || !strings.HasSuffix(trail(carl), "start waited 30s; last sent "+carl.History[2].Outcome[5:]) {
		t.Fatalf("carl after the migration: %+v", carl)
	}
	if got := h.journeySends(t, id); fmt.Sprint(got) != "[hello:Hello hi:Hi v2 end:End v2 bye:Bye hi:Hi v2 last:Last v3]" {
		t.Fatalf("sends %v", got)
	}
}

// TestJourneyQuietHoursAndEntries: quiet hours hold a step's push except
// a transactional step's (which fan-out also keeps out of the frequency
// cap); subscribed and topic_opt_in entries enrol.
func TestJourneyQuietHoursAndEntries(t *testing.T) {
	h := newHarness(t)
	h.createTopics(t, "news")
	if r := h.do("PUT", "/api/v1/settings", `{"quietHours":{"start":"11:00","end":"13:00"}}`, auth(h.site.APIKey)...); r.status != 200 {
		t.Fatalf("settings: %d %s", r.status, r.body)
	}
	welcome := h.createJourney(t, `{"name":"Welcome","status":"active","entry":{"type":"subscribed"},"steps":[
		{"id":"held","type":"send","content":{"title":"held"},"next":"now"},
		{"id":"now","type":"send","transactional":true,"content":{"title":"now"}}]}`)["id"].(string)
	news := h.createJourney(t, `{"name":"News","status":"active","entry":{"type":"topic_opt_in","topicId":"news"},"steps":[
		{"id":"n","type":"send","transactional":true,"content":{"title":"news"}}]}`)["id"].(string)
	path := "/api/v1/projects/" + h.site.ProjectID + "/subscriptions"
	body := subscribeBody(t, "https://push.example/one", `,"topics":["news"]`)
	if r := h.do("POST", path, body); r.status != 201 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if r := h.do("POST", path, body); r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	h.runJourneys(t)
	sends := h.notificationsOfJourney(t, welcome)
	if len(sends) != 2 || sends[0].Status != store.StatusScheduled || sends[0].ScheduledAt == nil ||
		!sends[0].ScheduledAt.Equal(testStart.Add(time.Hour)) || sends[0].Transactional ||
		sends[1].Status != store.StatusQueued || !sends[1].Transactional {
		t.Fatalf("welcome sends %+v", sends)
	}
	if got := h.journeySends(t, news); fmt.Sprint(got) != "[n:news]" {
		t.Fatalf("news sends %v", got)
	}
	if h.disp.count() != 2 {
		t.Fatalf("%d dispatched, want the two transactional ones", h.disp.count())
	}
}

// TestJourneyWindow: a window waits until it opens in the person's time
// zone (else the website's), on its days.
func TestJourneyWindow(t *testing.T) {
	s := &journeys.Step{Type: journeys.StepWindow, From: "09:00", To: "17:00", Days: []string{"mon"}}
	paris, _ := time.LoadLocation("Europe/Paris")
	// 2026-03-01 is a Sunday; 12:00 UTC is 13:00 in Paris.
	open, next := journeys.Window(s, paris, testStart)
	if open || !next.Equal(time.Date(2026, 3, 2, 9, 0, 0, 0, paris)) {
		t.Fatalf("Sunday: %v %v", open, next)
	}
	if open, _ := journeys.Window(s, paris, time.Date(2026, 3, 2, 15, 0, 0, 0, paris)); !open {
		t.Fatal("Monday 15:00 is in the window")
	}
	night := &journeys.Step{Type: journeys.StepWindow, From: "22:00", To: "06:00"}
	if open, _ := journeys.Window(night, time.UTC, time.Date(2026, 3, 2, 3, 0, 0, 0, time.UTC)); !open {
		t.Fatal("03:00 is in a 22:00-06:00 window")
	}
	if open, next := journeys.Window(night, time.UTC, time.Date(2026, 3, 2, 7, 0, 0, 0, time.UTC)); open || next.Hour() != 22 {
		t.Fatalf("07:00: %v %v", open, next)
	}

	h := newHarness(t)
	h.browser(t, `,"externalId":"ada"`)
	id := h.createJourney(t, `{"name":"W","status":"active","steps":[
		{"id":"w","type":"window","from":"09:00","to":"10:00","next":"s"},
		{"id":"s","type":"send","content":{"title":"Morning"}}]}`)["id"].(string)
	h.enroll(t, id, `{"externalId":"ada"}`)
	h.runJourneys(t)
	if got := h.journeySends(t, id); len(got) != 0 {
		t.Fatalf("sent outside the window: %v", got)
	}
	h.clock.Add(21 * time.Hour) // 09:00 UTC the next day (the website's zone)
	h.runJourneys(t)
	if got := h.journeySends(t, id); fmt.Sprint(got) != "[s:Morning]" {
		t.Fatalf("sends %v", got)
	}
	if got := trail(h.enrollments(t, id, "ada")[0]); !strings.HasPrefix(got, "w window opened; s sent ") {
		t.Fatalf("history %s", got)
	}
}

// TestJourneyGoal: a journey's goal must be a goal of the website; the
// goal reached ends the enrolments that exit on it (state goal_reached,
// at the moment it arrives, mid-wait), leaves those that do not, and its
// reach is credited to the journey whose send the person clicked.
func TestJourneyGoal(t *testing.T) {
	h := newHarness(t)
	ada := h.browser(t, `,"externalId":"ada"`)
	h.browser(t, `,"externalId":"bob"`)
	goal := h.createGoal(t, `{"name":"Bought","event":"order.paid","windowHours":48}`)
	other := newHarness(t).createGoal(t, `{"name":"Theirs","event":"order.paid"}`)
	expectError(t, h.do("POST", "/api/v1/journeys", `{"name":"x","goal":{"goalId":"`+other+`","exitOnGoal":true},"steps":[{"id":"a","type":"exit"}]}`,
		auth(h.site.APIKey)...), 400, CodeGoalNotFound, `,"message":"no goal \"`+other+`\" on this website"`)
	steps := `"steps":[{"id":"hi","type":"send","content":{"title":"Hi"},"next":"w"},
		{"id":"w","type":"wait","seconds":604800,"next":"bye"},{"id":"bye","type":"send","content":{"title":"Bye"}}]`
	exits := h.createJourney(t, `{"name":"Exits","status":"active","entry":{"type":"api"},"goal":{"goalId":"`+goal+`","exitOnGoal":true},`+steps+`}`)["id"].(string)
	stays := h.createJourney(t, `{"name":"Stays","status":"active","entry":{"type":"api"},"goal":{"goalId":"`+goal+`","exitOnGoal":false},`+steps+`}`)["id"].(string)
	for _, j := range []string{exits, stays} {
		for _, p := range []string{"ada", "bob"} {
			if r := h.enroll(t, j, `{"externalId":"`+p+`"}`); r.status != 201 {
				t.Fatalf("enrol %s: %d %s", p, r.status, r.body)
			}
		}
	}
	h.runJourneys(t)
	var hi string
	for _, n := range h.notificationsOfJourney(t, exits) {
		if n.Target != nil && strings.Contains(string(n.Target), ada.SubscriberID) {
			hi = n.ID
		}
	}
	if hi == "" {
		t.Fatal("no Hi for ada from the exiting journey")
	}
	h.delivered(t, hi, ada, true)
	h.clock.Add(24 * time.Hour)
	h.track(t, `{"event":"order.paid","externalId":"ada","properties":{"value":40}}`)
	got := h.enrollments(t, exits, "ada")[0]
	if got.State != "goal_reached" || !strings.HasSuffix(trail(got), "goal "+goal+" reached") {
		t.Fatalf("ada in the exiting journey: %+v", got)
	}
	for _, e := range [][2]string{{exits, "bob"}, {stays, "ada"}, {stays, "bob"}} {
		if got := h.enrollments(t, e[0], e[1])[0]; got.State != "active" {
			t.Fatalf("%s in %s: %+v, want still active", e[1], e[0], got)
		}
	}
	if got, want := h.goalResults(t, goal), `[`+result("journey", exits, 1, 40)+`]`; got != want {
		t.Fatalf("results %s, want %s", got, want)
	}
	h.clock.Add(7 * 24 * time.Hour)
	h.runJourneys(t)
	if got := h.journeySends(t, exits); fmt.Sprint(got) != "[hi:Hi hi:Hi bye:Bye]" {
		t.Fatalf("exiting journey's sends %v: ada's Bye must not go", got)
	}
	// goal null removes it; left out, it stays; its members are strict.
	expectError(t, h.do("PUT", "/api/v1/journeys/"+stays, `{"goal":{"goalId":"`+goal+`","exitOnGoal":true,"exit":1}}`, auth(h.site.APIKey)...),
		400, CodeUnknownField, `,"message":"unknown field \"goal.exit\""`)
	if r := h.do("PUT", "/api/v1/journeys/"+stays, `{"name":"Stays on"}`, auth(h.site.APIKey)...); r.status != 200 || !strings.Contains(string(r.body), `"goal":{"goalId":"`+goal+`","exitOnGoal":false}`) {
		t.Fatalf("PUT without goal: %d %s", r.status, r.body)
	}
	if r := h.do("PUT", "/api/v1/journeys/"+stays, `{"goal":null}`, auth(h.site.APIKey)...); r.status != 200 || !strings.Contains(string(r.body), `"goal":null`) {
		t.Fatalf("PUT goal null: %d %s", r.status, r.body)
	}
}
