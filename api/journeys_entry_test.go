package api

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// Journeys and the rest of the product (issue 32): segment entry shared
// with automations, labels set by a step doing what a label change does,
// a migration racing the engine, and the frequency cap on send steps.

// tagPerson sets and removes labels of one person by bulk-tag, as a
// website owner does.
func (h *harness) tagPerson(t *testing.T, subscriberID, set, remove string) {
	t.Helper()
	body := fmt.Sprintf(`{"ids":[%q],"set":%s,"remove":%s}`, subscriberID, set, remove)
	if r := h.do("POST", "/api/v1/audience/subscribers/bulk-tag", body, auth(h.site.APIKey)...); r.status != 200 {
		t.Fatalf("bulk-tag %s: %d %s", body, r.status, r.body)
	}
}

// enrolled lists the external ids of the people with an enrolment in the
// journey, sorted, each once per enrolment.
func (h *harness) enrolled(t *testing.T, journeyID string, people ...string) []string {
	t.Helper()
	var out []string
	for _, p := range people {
		for range h.enrollments(t, journeyID, p) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// TestJourneySegmentEntered: a segment_entered journey enrols people as
// they change (labels, an import, a new browser), never by rescanning:
// who was in the segment when it started watching does not enter, who
// comes in does, once (reentry never), and the same change starts the
// automation watching the same segment, through one evaluation. A draft
// made active is seeded again: who came in meanwhile does not enter.
func TestJourneySegmentEntered(t *testing.T) {
	h := newHarness(t)
	already := h.browser(t, `,"externalId":"already"`)
	ada := h.browser(t, `,"externalId":"ada"`)
	h.browser(t, `,"externalId":"bob"`)
	h.tagPerson(t, already.SubscriberID, `{"plan":"vip"}`, `[]`)
	segment := h.createSegment(t, "VIP", `{"rules":[{"field":"tag:plan","value":"vip"}]}`)
	entry := `"entry":{"type":"segment_entered","segmentId":"` + segment + `"}`
	id := h.createJourney(t, `{"name":"VIP","status":"active",`+entry+`,"steps":[{"id":"hi","type":"send","content":{"title":"Welcome to VIP"}}]}`)["id"].(string)
	auto := h.createAutomation(t, `{"name":"VIP","status":"active","trigger":{"type":"segment_entered","segmentId":"`+segment+`"},
		"messages":[{"title":"VIP perks"}]}`)["id"].(string)
	draft := h.createJourney(t, `{"name":"Later",`+entry+`,"steps":[{"id":"x","type":"exit"}]}`)["id"].(string)
	people := []string{"already", "ada", "bob", "carl", "dan"}

	h.tagPerson(t, already.SubscriberID, `{"seen":"1"}`, `[]`) // a change, still in: no entry
	h.tagPerson(t, ada.SubscriberID, `{"plan":"vip"}`, `[]`)   // enters
	h.tagPerson(t, ada.SubscriberID, `{"seen":"1"}`, `[]`)     // still in
	if r := h.do("POST", "/api/v1/subscribers/import", `{"subscribers":[{"externalId":"bob","tags":{"plan":"vip"}}]}`, auth(h.site.APIKey)...); r.status != 200 {
		t.Fatalf("import: %d %s", r.status, r.body)
	}
	if got := h.enrolled(t, id, people...); fmt.Sprint(got) != "[ada bob]" {
		t.Fatalf("enrolled %v, want Ada and Bob", got)
	}
	if s := h.automationStats(t, auto); s != autoStats(2, 2, 0, 0, 0, 0, 0, 0) {
		t.Fatalf("automation stats %s, want Ada and Bob's runs from the same changes", s)
	}
	// Ada leaves and comes back: the automation restarts, the journey
	// (reentry never) refuses her a second enrolment.
	h.tagPerson(t, ada.SubscriberID, `{}`, `["plan"]`)
	h.tagPerson(t, ada.SubscriberID, `{"plan":"vip"}`, `[]`)
	if got := h.enrolled(t, id, people...); fmt.Sprint(got) != "[ada bob]" {
		t.Fatalf("enrolled %v after Ada came back", got)
	}
	if s := h.automationStats(t, auto); s != autoStats(3, 2, 0, 0, 0, 0, 0, 0) {
		t.Fatalf("automation stats %s after Ada came back", s)
	}
	// A new browser is evaluated too: Carl subscribes with the label
	// already his (an import made him), and enters.
	if r := h.do("POST", "/api/v1/subscribers/import", `{"subscribers":[{"externalId":"carl","tags":{"plan":"vip"}}]}`, auth(h.site.APIKey)...); r.status != 200 {
		t.Fatalf("import: %d %s", r.status, r.body)
	}
	if got := h.enrolled(t, id, people...); fmt.Sprint(got) != "[ada bob]" {
		t.Fatalf("enrolled %v: Carl has no browser yet", got)
	}
	carl := h.browser(t, `,"externalId":"carl"`)
	if got := h.enrolled(t, id, people...); fmt.Sprint(got) != "[ada bob carl]" {
		t.Fatalf("enrolled %v, want Carl on subscribing", got)
	}
	h.runJourneys(t)
	var to []string
	for _, n := range h.notificationsOfJourney(t, id) {
		to = append(to, string(n.Target))
	}
	if len(to) != 3 || !strings.Contains(strings.Join(to, " "), carl.SubscriberID) || strings.Contains(strings.Join(to, " "), already.SubscriberID) {
		t.Fatalf("sends %v, want Ada, Bob and Carl once", to)
	}

	// The draft watched nothing while a draft: made active, it is seeded,
	// so those in the segment now do not enter; Dan, who comes in after,
	// does.
	if got := h.enrolled(t, draft, people...); len(got) != 0 {
		t.Fatalf("a draft enrolled %v", got)
	}
	if r := h.do("PUT", "/api/v1/journeys/"+draft, `{"status":"active"}`, auth(h.site.APIKey)...); r.status != 200 {
		t.Fatalf("PUT: %d %s", r.status, r.body)
	}
	h.tagPerson(t, ada.SubscriberID, `{"seen":"2"}`, `[]`)
	dan := h.browser(t, `,"externalId":"dan"`)
	h.tagPerson(t, dan.SubscriberID, `{"plan":"vip"}`, `[]`)
	if got := h.enrolled(t, draft, people...); fmt.Sprint(got) != "[dan]" {
		t.Fatalf("enrolled %v in the journey made active, want Dan alone", got)
	}
	if got := h.enrolled(t, id, people...); fmt.Sprint(got) != "[ada bob carl dan]" {
		t.Fatalf("enrolled %v, want Dan in the first journey too", got)
	}
	// Another segment: seeded afresh, from its own members. Eve, in it
	// before, does not enter on her next change; Ada, recorded in the
	// old segment, enters when she comes into the new one (reentry is
	// allowed after an hour, and her enrolment is done).
	eve := h.browser(t, `,"externalId":"eve"`)
	h.tagPerson(t, eve.SubscriberID, `{"tier":"gold"}`, `[]`)
	gold := h.createSegment(t, "Gold", `{"rules":[{"field":"tag:tier","value":"gold"}]}`)
	if r := h.do("PUT", "/api/v1/journeys/"+id, `{"entry":{"type":"segment_entered","segmentId":"`+gold+`"},"reentry":{"mode":"after","hours":1}}`,
		auth(h.site.APIKey)...); r.status != 200 {
		t.Fatalf("PUT: %d %s", r.status, r.body)
	}
	h.clock.Add(2 * time.Hour)
	h.tagPerson(t, eve.SubscriberID, `{"seen":"1"}`, `[]`)
	h.tagPerson(t, ada.SubscriberID, `{"tier":"gold"}`, `[]`)
	people = append(people, "eve")
	if got := h.enrolled(t, id, people...); fmt.Sprint(got) != "[ada ada bob carl dan]" {
		t.Fatalf("enrolled %v, want Ada again and not Eve", got)
	}
}

// TestJourneySetTagsReach: labels a set_tags step sets do what a label
// change through the API does, once the step's move has committed: the
// tag goal is reached (ending the enrolment that exits on it, mid-wait)
// and segment entry is evaluated (enrolling in the journey that watches
// the segment).
func TestJourneySetTagsReach(t *testing.T) {
	h := newHarness(t)
	h.browser(t, `,"externalId":"ada"`)
	h.browser(t, `,"externalId":"bob"`)
	goal := h.createGoal(t, `{"name":"VIP","tag":{"name":"plan","value":"vip"}}`)
	segment := h.createSegment(t, "VIP", `{"rules":[{"field":"tag:plan","value":"vip"}]}`)
	waits := h.createJourney(t, `{"name":"Upsell","status":"active","entry":{"type":"api"},"goal":{"goalId":"`+goal+`","exitOnGoal":true},
		"steps":[{"id":"w","type":"wait","seconds":604800,"next":"pitch"},{"id":"pitch","type":"send","content":{"title":"Go VIP"}}]}`)["id"].(string)
	watches := h.createJourney(t, `{"name":"VIP welcome","status":"active","entry":{"type":"segment_entered","segmentId":"`+segment+`"},
		"steps":[{"id":"hi","type":"send","content":{"title":"Welcome to VIP"}}]}`)["id"].(string)
	upgrades := h.createJourney(t, `{"name":"Upgrade","status":"active","entry":{"type":"api"},
		"steps":[{"id":"tag","type":"set_tags","tags":{"plan":"vip"}}]}`)["id"].(string)
	for _, p := range []string{"ada", "bob"} {
		if r := h.enroll(t, waits, `{"externalId":"`+p+`"}`); r.status != 201 {
			t.Fatalf("enrol %s: %d %s", p, r.status, r.body)
		}
	}
	h.runJourneys(t) // both wait a week
	if r := h.enroll(t, upgrades, `{"externalId":"ada"}`); r.status != 201 {
		t.Fatalf("enrol: %d %s", r.status, r.body)
	}
	h.clock.Add(time.Minute)
	h.runJourneys(t) // Ada's labels set; she reaches the goal and enters the segment
	got := h.enrollments(t, upgrades, "ada")[0]
	if got.State != "completed" || trail(got) != "tag tags set: plan=vip" {
		t.Fatalf("ada in the upgrade: %+v", got)
	}
	if got := h.enrollments(t, waits, "ada")[0]; got.State != "goal_reached" || trail(got) != "w goal "+goal+" reached" {
		t.Fatalf("ada in the waiting journey: %+v, want ended by the goal", got)
	}
	if got := h.enrollments(t, waits, "bob")[0]; got.State != "active" {
		t.Fatalf("bob in the waiting journey: %+v", got)
	}
	if got := h.enrolled(t, watches, "ada", "bob"); fmt.Sprint(got) != "[ada]" {
		t.Fatalf("enrolled by the segment: %v, want Ada", got)
	}
	if got := h.goalResults(t, goal); got != `[]` {
		t.Fatalf("results %s: Ada's reach had no send to credit", got)
	}
	h.runJourneys(t)
	if got := h.journeySends(t, watches); fmt.Sprint(got) != "[hi:Welcome to VIP]" {
		t.Fatalf("segment journey's sends %v", got)
	}
}

// TestJourneyMigrateRace: an enrolment that moves on to a step the
// mapping does not name after the handler read the journey, and before
// the store's transaction (the engine fired its timer meanwhile), is
// refused as unmapped_step naming that step, and nothing moves: the store
// checks the steps in the transaction that moves them.
func TestJourneyMigrateRace(t *testing.T) {
	h := newHarness(t)
	h.browser(t, `,"externalId":"ada"`)
	h.browser(t, `,"externalId":"bob"`)
	id := h.createJourney(t, `{"name":"Race","status":"active","entry":{"type":"api"},"steps":[
		{"id":"short","type":"wait","seconds":60,"next":"long"},
		{"id":"long","type":"wait","seconds":3600,"next":"end"},
		{"id":"end","type":"send","content":{"title":"End"}}]}`)["id"].(string)
	for _, p := range []string{"ada", "bob"} {
		if r := h.enroll(t, id, `{"externalId":"`+p+`"}`); r.status != 201 {
			t.Fatalf("enrol %s: %d %s", p, r.status, r.body)
		}
	}
	h.runJourneys(t) // both wait at short
	if got := h.do("PUT", "/api/v1/journeys/"+id, `{"steps":[{"id":"again","type":"wait","seconds":60,"next":"fin"},
		{"id":"fin","type":"send","content":{"title":"Fin"}}]}`, auth(h.site.APIKey)...).json(t); got["version"] != 2.0 {
		t.Fatalf("version %v", got["version"])
	}
	h.st.beforeMigrate = func() {
		h.clock.Add(time.Minute)
		if n := h.runJourneys(t); n != 2 {
			t.Errorf("the engine fired %d timers, want both enrolments' short waits", n)
		}
	}
	trails := ""
	r := h.do("POST", "/api/v1/journeys/"+id+"/migrate", `{"fromVersion":1,"steps":{"short":"again"}}`, auth(h.site.APIKey)...)
	expectError(t, r, 400, CodeUnmappedStep, `,"message":"live enrolments of version 1 are at step \"long\", which steps does not map","step":"long"`)
	for _, p := range []string{"ada", "bob"} {
		e := h.enrollments(t, id, p)[0]
		if e.Version != 1 || e.State != "active" || e.CurrentStep != "long" || !e.Waiting {
			t.Fatalf("%s after the refused migration: %+v, want still on version 1, waiting at long", p, e)
		}
		trails += trail(e) + "|"
	}
	if trails != "short waited 60s|short waited 60s|" {
		t.Fatalf("trails %q", trails)
	}
	r = h.do("POST", "/api/v1/journeys/"+id+"/migrate", `{"fromVersion":1,"steps":{"short":"again","long":"again"}}`, auth(h.site.APIKey)...)
	if r.status != 200 || string(r.body) != `{"moved":2,"ok":true}` {
		t.Fatalf("migrate: %d %s", r.status, r.body)
	}
}
