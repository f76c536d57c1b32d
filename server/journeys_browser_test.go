package server

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// journeyOf is GET /journeys/{id} without what the server sets (id,
// times, stats): the members the builder wrote, and the version.
func journeyOf(b *dashboard, id string) map[string]any {
	b.t.Helper()
	var j map[string]any
	b.api("GET", "/journeys/"+id, "", &j)
	for _, k := range []string{"id", "created_at", "updated_at", "stats"} {
		delete(j, k)
	}
	return j
}

// figuresOf is the text of step id's figures on the journey's page.
func (b *dashboard) figuresOf(step string) string {
	b.t.Helper()
	var s string
	b.d.page(`(document.querySelector('[aria-label="Figures of step `+step+`"]') || {textContent: ''}).textContent.replace(/\s+/g, ' ').trim()`, &s)
	return s
}

// TestDashboardJourneys builds a journey in the builder, found by role
// and name (send → wait → condition, yes: a send, no: exit): a graph the
// engine cannot run is refused at the step with the API's message and
// stores nothing; the stored body is exactly what the form says. A
// person enrolled through the API walks it as the server's clock moves;
// the journey's page shows each step's figures, the list the journey's,
// a change after someone entered says it made version 2, and the
// person's page lists the enrolment and opens its history.
func TestDashboardJourneys(t *testing.T) {
	clock := &testClock{}
	ts := startServer(t, func(c *Config) {
		c.Now = clock.now
		c.Automations.Poll = 50 * time.Millisecond // a moved clock is seen within this
	})
	b, site := startDashboard(t, ts)
	role, heading := b.role, b.heading

	role("link", "Journeys", "click")
	heading("Journeys")
	waitFor(t, "the empty state", func() bool { return strings.Contains(b.mainText(), "No journeys yet.") })
	b.shoot("journeys-empty")

	role("link", "New journey", "click")
	heading("New journey")
	role("textbox", "Journey name", "fill", "Welcome")
	role("combobox", "Status", "select", "active")
	role("textbox", "Step id (step 1)", "fill", "hello")
	role("textbox", "Title (step 1)", "fill", "Welcome aboard")
	add := func(typ string) {
		t.Helper()
		role("combobox", "New step’s type", "select", typ)
		role("button", "Add step", "click")
	}
	add("wait")
	role("textbox", "Step id (step 2)", "fill", "pause")
	role("spinbutton", "Wait (step 2)", "fill", "1")
	role("combobox", "Wait unit (step 2)", "select", "days")
	add("condition")
	role("textbox", "Step id (step 3)", "fill", "vip")
	role("combobox", "Field of step 3 rule 1", "select", "tag")
	role("textbox", "Label name of step 3 rule 1", "fill", "plan")
	role("textbox", "Value of step 3 rule 1", "fill", "vip")
	add("send")
	role("textbox", "Step id (step 4)", "fill", "gift")
	role("textbox", "Title (step 4)", "fill", "A gift for you")
	add("exit")
	role("textbox", "Step id (step 5)", "fill", "bye")
	role("combobox", "Then go to (step 1)", "select", "pause")
	role("combobox", "Then go to (step 2)", "select", "vip")
	role("combobox", "If yes, go to (step 3)", "select", "gift")
	role("combobox", "If no, go to (step 3)", "select", "bye")
	// The gift going back to the condition makes a loop with no wait in
	// it: refused at the step, nothing stored.
	role("combobox", "Then go to (step 4)", "select", "vip")
	role("button", "Create journey", "click")
	waitFor(t, "the refusal at the step", func() bool { return role("textbox", "Step id (step 3)", "invalid") == "true" })
	if got, want := role("textbox", "Step id (step 3)", "description"), `step "vip" is on a cycle with no wait, wait_until or window in it`; got != want {
		t.Fatalf("step 3 described %q, want %q", got, want)
	}
	if !strings.Contains(b.mainText(), "Step 3 (vip) was refused: see it below.") {
		t.Fatalf("the form does not name the step: %s", b.mainText())
	}
	var list struct {
		Journeys []map[string]any `json:"journeys"`
	}
	if b.api("GET", "/journeys", "", &list); len(list.Journeys) != 0 {
		t.Fatalf("a refused journey was stored: %v", list.Journeys)
	}
	role("combobox", "Then go to (step 4)", "select", "")
	// Reorder: the exit moved up and back down again.
	role("button", "Move step 5 up", "click")
	if got := role("textbox", "Step id (step 4)", "value"); got != "bye" {
		t.Fatalf("step 4 after moving step 5 up: %q", got)
	}
	role("button", "Move step 4 down", "click")
	b.shoot("journey-builder")
	role("button", "Create journey", "click")
	heading("Journey “Welcome”")
	b.api("GET", "/journeys", "", &list)
	if len(list.Journeys) != 1 {
		t.Fatalf("journeys %v", list.Journeys)
	}
	id, _ := list.Journeys[0]["id"].(string)
	stored := `{"name": "Welcome", "status": "active", "version": 1, "entry": {"type": "api"}, "reentry": {"mode": "never"},
		"exitEvents": [], "goal": null, "steps": [
			{"id": "hello", "type": "send", "content": {"title": "Welcome aboard"}, "next": "pause"},
			{"id": "pause", "type": "wait", "seconds": 86400, "next": "vip"},
			{"id": "vip", "type": "condition", "filters": {"match": "all", "rules": [{"field": "tag:plan", "op": "eq", "value": "vip"}]}, "yes": "gift", "no": "bye"},
			{"id": "gift", "type": "send", "content": {"title": "A gift for you"}},
			{"id": "bye", "type": "exit"}]}`
	if got, want := journeyOf(b, id), wantJSON(t, stored); !reflect.DeepEqual(got, want) {
		t.Fatalf("stored %v\nwant   %v", got, want)
	}
	if got := b.figuresOf("hello"); got != "Entered0Waiting0Completed0Exited early0Sent0Delivered0Clicked0Converted0Revenue0" {
		t.Fatalf("hello's figures before anyone: %q", got)
	}

	// Ann, enrolled by the API, gets the first push at once, waits a day,
	// is no VIP, and leaves by the exit.
	ann := ts.push.NewBrowser(site.VAPIDPublicKey)
	ts.subscribe(site, ann, map[string]any{"externalId": "ann"})
	var enrolled struct {
		EnrollmentID string `json:"enrollmentId"`
	}
	b.api("POST", "/journeys/"+id+"/enrollments", `{externalId: 'ann'}`, &enrolled)
	var enrolment struct {
		State       string `json:"state"`
		CurrentStep string `json:"currentStep"`
		History     []struct {
			StepID, Type, Outcome string
		} `json:"history"`
	}
	state := func() string {
		b.api("GET", "/journeys/"+id+"/enrollments/"+enrolled.EnrollmentID, "", &enrolment)
		return enrolment.State + " at " + enrolment.CurrentStep
	}
	waitFor(t, "the wait", func() bool { return state() == "active at pause" && len(ann.Received()) == 1 })
	clock.advance(24*time.Hour + time.Second)
	waitFor(t, "the exit", func() bool { return state() == "completed at bye" })

	role("link", "Journeys", "click")
	heading("Journeys")
	want := []string{"Welcome", "Active", "By the API", "1", "1", "0", "1", "1", "0", "0"}
	waitFor(t, "the list's figures", func() bool {
		cells := b.tableCells("Journeys")
		return len(cells) == 1 && reflect.DeepEqual(cells[0], want)
	})
	b.fits("journeys")
	b.shoot("journeys-list")
	role("link", "Welcome", "click")
	heading("Journey “Welcome”")
	for step, want := range map[string]string{
		"hello": "Entered1Waiting0Completed1Exited early0Sent1Delivered0Clicked0Converted0Revenue0",
		"pause": "Entered1Waiting0Completed1Exited early0", "vip": "Entered1Waiting0Completed1Exited early0",
		"gift": "Entered0Waiting0Completed0Exited early0Sent0Delivered0Clicked0Converted0Revenue0", "bye": "Entered1Waiting0Completed1Exited early0",
	} {
		var got string
		waitFor(t, step+"'s figures", func() bool {
			got = strings.ReplaceAll(b.figuresOf(step), " ", "")
			return got == strings.ReplaceAll(want, " ", "")
		})
	}
	b.fits("journey")
	b.shoot("journey-figures")

	// Someone entered version 1: a change makes version 2, and says so.
	role("textbox", "Title (step 4)", "fill", "A gift, just for you")
	role("button", "Save journey", "click")
	waitFor(t, "the new version said", func() bool {
		return strings.Contains(b.mainText(), "Saved as version 2: people already in the journey stay on version 1.")
	})
	stored = strings.Replace(stored, `"version": 1`, `"version": 2`, 1)
	stored = strings.Replace(stored, "A gift for you", "A gift, just for you", 1)
	if got, want := journeyOf(b, id), wantJSON(t, stored); !reflect.DeepEqual(got, want) {
		t.Fatalf("version 2 %v\nwant   %v", got, want)
	}
	if !strings.Contains(b.mainText(), "Version 2, active.") {
		t.Fatalf("no version 2 shown: %s", b.mainText())
	}

	// Ann's page: the enrolment, and its history.
	b.d.call("goto", map[string]string{"url": b.ts.base + "/#/people/ann"}, nil)
	heading("ann")
	waitFor(t, "the enrolment", func() bool {
		cells := b.tableCells("Journeys")
		return len(cells) == 1 && cells[0][0] == "Welcome" && cells[0][1] == "1" && cells[0][2] == "Completed" && cells[0][3] == "bye"
	})
	role("button", "History in Welcome, version 1, completed", "click")
	var steps [][]string
	waitFor(t, "the history", func() bool { steps = b.tableCells("History in Welcome"); return len(steps) > 0 })
	var got []string
	for _, r := range steps {
		got = append(got, r[0]+" "+r[1]+": "+strings.TrimSuffix(r[3], " (the push)"))
	}
	var wantHistory []string
	for _, h := range enrolment.History {
		wantHistory = append(wantHistory, h.StepID+" "+h.Type+": "+h.Outcome)
	}
	if !reflect.DeepEqual(got, wantHistory) || len(got) != 4 || !strings.HasPrefix(got[0], "hello send") {
		t.Fatalf("history shown %q, want %q", got, wantHistory)
	}
	b.shoot("person-enrolments")
}
