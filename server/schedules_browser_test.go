package server

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// scheduleOf is GET /schedules/{id} without what moves with the clock
// (id, times, next runs, history).
func scheduleOf(b *dashboard, id string) map[string]any {
	b.t.Helper()
	var s map[string]any
	b.api("GET", "/schedules/"+id, "", &s)
	for _, k := range []string{"id", "created_at", "updated_at", "nextRun", "nextRuns", "history"} {
		delete(s, k)
	}
	return s
}

// TestDashboardSchedules makes a recurring schedule on the Schedules
// page, found by role and name: a refused rule shows the API's message at
// its field and stores nothing; the stored schedule is exactly what the
// form says; its next runs show on the website's clock (Europe/Paris, in
// a browser on London's); once the server's clock passes a run, the
// engine sends it once and the latest runs link to the notification;
// pause; a schedule whose topic is deleted shows why it paused; delete.
func TestDashboardSchedules(t *testing.T) {
	clock := &testClock{}
	ts := startServer(t, func(c *Config) {
		c.Now = clock.now
		c.Schedules.Poll = 50 * time.Millisecond // a moved clock is seen within this
	})
	b, _ := startDashboard(t, ts)
	role, heading := b.role, b.heading

	role("link", "Schedules", "click")
	heading("Schedules")
	waitFor(t, "the empty state", func() bool { return strings.Contains(b.mainText(), "No schedules yet.") })
	b.shoot("schedules-empty")

	// A custom rule outside the subset: the refusal shows at the field.
	role("button", "New schedule", "click")
	role("textbox", "Schedule name", "fill", "Morning digest")
	role("textbox", "Title", "fill", "Good morning")
	role("textbox", "Text", "fill", "Today's news, in two minutes")
	role("combobox", "Repeats", "select", "custom")
	role("textbox", "Rule", "fill", "FREQ=HOURLY;BYMINUTE=0")
	role("button", "Create schedule", "click")
	waitFor(t, "the refusal at the rule", func() bool { return role("textbox", "Rule", "invalid") == "true" })
	if got := role("textbox", "Rule", "description"); !strings.HasPrefix(got, "rule: FREQ must be DAILY, WEEKLY or MONTHLY") {
		t.Fatalf("rule described %q", got)
	}
	var list struct {
		Schedules []map[string]any `json:"schedules"`
	}
	if b.api("GET", "/schedules", "", &list); len(list.Schedules) != 0 {
		t.Fatalf("a refused schedule was stored: %v", list.Schedules)
	}

	// Every weekday at 08:30, on the website's clock.
	role("combobox", "Repeats", "select", "weekly")
	for _, day := range []string{"Tuesday", "Wednesday", "Thursday", "Friday"} {
		role("checkbox", day, "click")
	}
	role("textbox", "At", "fill", "08:30")
	b.shoot("schedule-form")
	role("button", "Create schedule", "click")
	heading("Morning digest")
	b.api("GET", "/schedules", "", &list)
	if len(list.Schedules) != 1 {
		t.Fatalf("schedules %v", list.Schedules)
	}
	id, _ := list.Schedules[0]["id"].(string)
	stored := `{"name": "Morning digest", "status": "active", "pausedReason": null, "audience": {"everyone": true},
		"content": {"title": "Good morning", "body": "Today's news, in two minutes"}, "templateId": null,
		"rule": "FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR;BYHOUR=8;BYMINUTE=30", "timezone": "Europe/Paris", "perTimezone": false,
		"catchUpMinutes": 60, "startsAt": null, "endsAt": null, "lastRefusal": null}`
	if got, want := scheduleOf(b, id), wantJSON(t, stored); !reflect.DeepEqual(got, want) {
		t.Fatalf("stored %v\nwant   %v", got, want)
	}

	// The next runs, on Paris's clock: each a weekday at 08:30.
	var detail struct {
		NextRuns []string `json:"nextRuns"`
	}
	b.api("GET", "/schedules/"+id, "", &detail)
	if len(detail.NextRuns) != 5 {
		t.Fatalf("next runs %v", detail.NextRuns)
	}
	var shown []string
	waitFor(t, "the next runs", func() bool {
		b.d.page(`[...document.querySelectorAll('ol[aria-label="Next runs of Morning digest"] li')].map((li) => li.textContent)`, &shown)
		return len(shown) == 5
	})
	paris, _ := time.LoadLocation("Europe/Paris")
	for i, s := range shown {
		at, err := time.Parse(time.RFC3339, detail.NextRuns[i])
		if err != nil {
			t.Fatal(err)
		}
		local := at.In(paris)
		if !strings.Contains(s, "08:30") || !strings.Contains(s, local.Format("2 Jan 2006")) || local.Weekday() == time.Saturday || local.Weekday() == time.Sunday {
			t.Fatalf("next run %d shown %q for %s", i, s, detail.NextRuns[i])
		}
	}
	waitFor(t, "no runs yet", func() bool { return strings.Contains(b.mainText(), "No runs yet.") })

	// The server's clock passes the first run: the engine sends it, once.
	first, _ := time.Parse(time.RFC3339, detail.NextRuns[0])
	clock.advance(time.Until(first) + 30*time.Second)
	var sends struct {
		Items []struct {
			ID         string `json:"id"`
			ScheduleID string `json:"scheduleId"`
		} `json:"items"`
	}
	waitFor(t, "the run's send", func() bool {
		b.api("GET", "/notifications?scheduleId="+id, "", &sends)
		return len(sends.Items) == 1
	})
	role("link", "Home", "click")
	role("link", "Schedules", "click")
	heading("Morning digest")
	waitFor(t, "the latest runs", func() bool { return len(b.tableCells("Latest runs of Morning digest")) == 1 })
	if cells := b.tableCells("Latest runs of Morning digest")[0]; cells[1] != "Sent" || cells[2] != "View" {
		t.Fatalf("latest run %v", cells)
	}
	if got := role("link", "View", "href"); !strings.HasSuffix(got, "#/notifications/"+sends.Items[0].ID) {
		t.Fatalf("the run links to %q", got)
	}
	b.fits("schedules")
	b.shoot("schedules-list")

	// Pause: no next runs.
	role("button", "Pause schedule Morning digest", "click")
	waitFor(t, "the pause", func() bool { return strings.Contains(b.mainText(), "None: the schedule is paused or has ended.") })
	if got := scheduleOf(b, id)["status"]; got != "paused" {
		t.Fatalf("status %v", got)
	}
	// Change: its message from a saved template, the text kept to
	// override the template's; the stored schedule names the template.
	var tpl struct {
		ID string `json:"id"`
	}
	b.api("POST", "/templates", `{name: 'Digest style', title: 'Your digest', icon: 'https://shop.example/bell.png'}`, &tpl)
	role("button", "Change schedule Morning digest", "click")
	role("combobox", "Template", "select", tpl.ID)
	role("textbox", "Title", "fill", "")
	b.shoot("schedule-form-template")
	role("button", "Save schedule", "click")
	waitFor(t, "saved from the template", func() bool { return strings.Contains(b.mainText(), "From a template") })
	stored = `{"name": "Morning digest", "status": "paused", "pausedReason": null, "audience": {"everyone": true},
		"content": {"body": "Today's news, in two minutes"}, "templateId": "` + tpl.ID + `",
		"rule": "FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR;BYHOUR=8;BYMINUTE=30", "timezone": "Europe/Paris", "perTimezone": false,
		"catchUpMinutes": 60, "startsAt": null, "endsAt": null, "lastRefusal": null}`
	if got, want := scheduleOf(b, id), wantJSON(t, stored); !reflect.DeepEqual(got, want) {
		t.Fatalf("stored %v\nwant   %v", got, want)
	}
	role("button", "Change schedule Morning digest", "click")
	if got := role("combobox", "Template", "value"); got != tpl.ID {
		t.Fatalf("the template chosen shows as %q, want %s", got, tpl.ID)
	}
	role("button", "Cancel", "click")

	// A schedule on a topic pauses when the topic goes, and says why.
	var topic struct {
		ID string `json:"id"`
	}
	b.api("POST", "/topics", `{name: 'Breaking news', slug: 'news'}`, &topic)
	var onTopic struct {
		ID string `json:"id"`
	}
	b.api("POST", "/schedules", `{name: 'News at noon', audience: {topicId: 'news'}, content: {title: 'Noon news'}, rule: 'FREQ=DAILY;BYHOUR=12'}`, &onTopic)
	b.api("DELETE", "/topics/"+topic.ID, "", nil)
	role("link", "Home", "click")
	role("link", "Schedules", "click")
	heading("News at noon")
	waitFor(t, "the reason", func() bool {
		return strings.Contains(b.mainText(), `Paused: Its topic "Breaking news" was deleted.`) && strings.Contains(b.mainText(), "Topic deleted")
	})
	b.shoot("schedules-paused")
	role("button", "Delete schedule News at noon", "click")
	waitFor(t, "the schedule gone", func() bool { return !strings.Contains(b.mainText(), "News at noon") })

	// Delete (the confirmation is accepted).
	role("button", "Delete schedule Morning digest", "click")
	waitFor(t, "the schedule gone", func() bool { return strings.Contains(b.mainText(), "No schedules yet.") })
	var refused struct{ Error string }
	if code := b.apiStatus("GET", "/schedules/"+id, "", &refused); code != 404 || refused.Error != "not_found" {
		t.Fatalf("the deleted schedule: %d %+v", code, refused)
	}
}
