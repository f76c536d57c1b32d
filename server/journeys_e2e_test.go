package server

import (
	"testing"
)

// A journey on the embedded default, end to end: an event enrols the
// person (sequencesEnrolled says so), the engine (woken by the
// enrolment) runs its send step through fan-out to that person's
// browsers and nobody else's, waits, and an exit event ends the
// enrolment mid-wait; its history says why, and the step's stats count
// the pushes.
func TestJourneyEndToEnd(t *testing.T) {
	ts := startServer(t)
	w := ts.createWebsite()
	ann := ts.push.NewBrowser(w.VAPIDPublicKey)
	bob := ts.push.NewBrowser(w.VAPIDPublicKey)
	ts.subscribe(w, ann, map[string]any{"externalId": "ann"})
	ts.subscribe(w, bob, map[string]any{"externalId": "bob"})
	var created struct {
		ID string `json:"id"`
	}
	if code := ts.call("POST", "/api/v1/journeys", w.APIKey, map[string]any{
		"name": "Cart", "status": "active",
		"entry":      map[string]any{"type": "event", "event": "cart.updated"},
		"exitEvents": []string{"purchase"},
		"steps": []any{
			map[string]any{"id": "remind", "type": "send", "content": map[string]any{"title": "Your cart is waiting"}, "next": "pause"},
			map[string]any{"id": "pause", "type": "wait", "seconds": 86400, "next": "again"},
			map[string]any{"id": "again", "type": "send", "content": map[string]any{"title": "Still there?"}},
		},
	}, &created); code != 201 {
		t.Fatalf("POST /journeys: %d", code)
	}
	var ans struct {
		SequencesEnrolled int `json:"sequencesEnrolled"`
	}
	if code := ts.call("POST", "/api/v1/events", w.APIKey, map[string]any{"event": "cart.updated", "externalId": "ann"}, &ans); code != 202 || ans.SequencesEnrolled != 1 {
		t.Fatalf("ann's cart: %d %+v", code, ans)
	}
	var list struct {
		Items []struct {
			ID         string `json:"id"`
			Automation bool   `json:"automation"`
		} `json:"items"`
	}
	waitFor(t, "the journey's notification", func() bool {
		ts.call("GET", "/api/v1/notifications", w.APIKey, nil, &list)
		return len(list.Items) == 1
	})
	id := list.Items[0].ID
	d := ts.waitSent(w, id)
	if d.Notification.Recipients != 1 || d.Notification.Sent != 1 || !list.Items[0].Automation {
		t.Fatalf("sent %+v, want Ann's one browser", d.Notification)
	}
	if got := waitReceived(t, ann, id); got.Title != "Your cart is waiting" {
		t.Fatalf("ann got %+v", got)
	}
	if got := received(t, bob, id); len(got) != 0 {
		t.Fatalf("bob got %+v", got)
	}
	// Ann buys during the day's wait: the enrolment ends now.
	if code := ts.call("POST", "/api/v1/events", w.APIKey, map[string]any{"event": "purchase", "externalId": "ann"}, &ans); code != 202 {
		t.Fatalf("purchase: %d", code)
	}
	var enrollments struct {
		Enrollments []struct {
			ID    string `json:"id"`
			State string `json:"state"`
		} `json:"enrollments"`
	}
	ts.call("GET", "/api/v1/journeys/"+created.ID+"/enrollments?externalId=ann", w.APIKey, nil, &enrollments)
	if len(enrollments.Enrollments) != 1 || enrollments.Enrollments[0].State != "exited" {
		t.Fatalf("enrolments %+v", enrollments)
	}
	var one struct {
		History []struct {
			StepID  string `json:"stepId"`
			Outcome string `json:"outcome"`
		} `json:"history"`
	}
	ts.call("GET", "/api/v1/journeys/"+created.ID+"/enrollments/"+enrollments.Enrollments[0].ID, w.APIKey, nil, &one)
	if len(one.History) != 2 || one.History[0].Outcome != "sent "+id || one.History[1].StepID != "pause" || one.History[1].Outcome != "exit event purchase" {
		t.Fatalf("history %+v", one.History)
	}
	var j struct {
		Stats map[string]map[string]float64 `json:"stats"`
	}
	ts.call("GET", "/api/v1/journeys/"+created.ID, w.APIKey, nil, &j)
	if j.Stats["remind"]["sent"] != 1 || j.Stats["remind"]["completed"] != 1 || j.Stats["pause"]["exitedEarly"] != 1 || j.Stats["again"]["entered"] != 0 {
		t.Fatalf("stats %v", j.Stats)
	}
}
