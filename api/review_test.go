package api

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/relaybell/relaybell/store"
)

// detailOf returns a notification's detail "notification" member.
func (h *harness) detailOf(t *testing.T, id string) map[string]any {
	t.Helper()
	r := h.do("GET", "/api/v1/notifications/"+id, "", auth(h.site.APIKey)...)
	if r.status != 200 {
		t.Fatalf("detail: %d %s", r.status, r.body)
	}
	return r.json(t)["notification"].(map[string]any)
}

func TestHeldForReview(t *testing.T) {
	h := newHarness(t, func(c *testConfig) { c.ReviewThreshold = 3 })
	for i := range 3 {
		h.subscribeAs(t, fmt.Sprintf("https://fcm.googleapis.com/fcm/send/rv%d", i), `,"language":"fr"`, uaDesktop)
	}
	admin := auth(testAdminToken)
	key := h.site.APIKey

	// The first broadcast to 3 browsers is held; nothing is dispatched.
	r := h.post(key, `{"title":"Big news"}`)
	if r.status != 202 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	first := r.json(t)["notificationId"].(string)
	want := `{"ok":true,"notificationId":"` + first + `","status":"held_for_review","message":"This is the account's first large broadcast, ` +
		`so it is held for review. It goes out once an operator approves it (usually within a few hours) and can be canceled meanwhile."}`
	if string(r.body) != want {
		t.Fatalf("body\n %s\nwant\n %s", r.body, want)
	}
	if h.disp.count() != 0 {
		t.Fatalf("a held send was dispatched")
	}
	// Below the threshold, and sends to specific users, go out at once.
	if st := h.post(key, `{"title":"few","filters":{"rules":[{"field":"external_id","op":"exists"}]}}`).json(t)["status"]; st != "queued" {
		t.Fatalf("small broadcast: %v", st)
	}
	if st := h.post(key, `{"title":"users","externalIds":["a","b","c","d"]}`).json(t)["status"]; st != "queued" {
		t.Fatalf("specific users: %v", st)
	}
	// A second large one waits too, with its schedule; a third is canceled by the customer.
	scheduled := h.post(key, `{"title":"Tomorrow","sendAt":"2026-03-02T09:00:00Z"}`).json(t)["notificationId"].(string)
	canceled := h.post(key, `{"title":"Oops","segmentId":"`+h.createSegment(t, "fr", `{"rules":[{"field":"language","value":"fr"}]}`)+`"}`).json(t)["notificationId"].(string)
	if r := h.do("POST", "/api/v1/notifications/"+canceled+"/cancel", "", auth(key)...); r.status != 200 {
		t.Fatalf("cancel held: %d %s", r.status, r.body)
	}
	// The audience is the send's own: a topic nobody opted into is small.
	if st := h.post(key, `{"title":"Deals","topicId":"`+h.topicSlug(t, "Deals")+`"}`).json(t)["status"]; st != "queued" {
		t.Fatalf("topic broadcast: %v", st)
	}

	// The operator's list: every website's held sends, oldest first.
	list := decode[struct {
		Notifications []struct {
			ID        string `json:"id"`
			WebsiteID string `json:"websiteId"`
			Status    string `json:"status"`
			Title     string `json:"title"`
		} `json:"notifications"`
	}](t, h.do("GET", "/admin/v1/review", "", admin...))
	if len(list.Notifications) != 2 || list.Notifications[0].ID != first || list.Notifications[1].ID != scheduled ||
		list.Notifications[0].WebsiteID != h.site.WebsiteID || list.Notifications[0].Status != "held_for_review" {
		t.Fatalf("review list: %+v", list)
	}
	expectError(t, h.do("GET", "/admin/v1/review", "", auth(key)...), 401, CodeInvalidAPIKey, ``)

	// Approve: it is dispatched at once; a scheduled one waits for its time.
	r = h.do("POST", "/admin/v1/notifications/"+first+"/approve", "", admin...)
	if string(r.body) != `{"notificationId":"`+first+`","ok":true,"status":"queued"}` {
		t.Fatalf("approve: %d %s", r.status, r.body)
	}
	if h.disp.count() != 4 || h.disp.sent[3].ID != first { // after the three sends that went out at once
		t.Fatalf("approved send not dispatched: %d", h.disp.count())
	}
	r = h.do("POST", "/admin/v1/notifications/"+scheduled+"/approve", "", admin...)
	if r.status != 200 || r.json(t)["status"] != "scheduled" {
		t.Fatalf("approve scheduled: %d %s", r.status, r.body)
	}
	if d := h.detailOf(t, scheduled); d["status"] != "scheduled" || d["scheduled_at"] != "2026-03-02T09:00:00.000Z" {
		t.Fatalf("approved scheduled send: %v %v", d["status"], d["scheduled_at"])
	}
	// Approving twice, a canceled one, or an unknown id: 404.
	for _, id := range []string{first, canceled, "00000000-0000-4000-8000-000000000000"} {
		expectError(t, h.do("POST", "/admin/v1/notifications/"+id+"/approve", "", admin...), 404, CodeNotFound,
			`,"message":"no send held for review with this id"`)
	}
	expectCode(t, h.do("POST", "/admin/v1/notifications/nope/reject", "", admin...), 404, CodeNotFound)

	// Once a large broadcast went out, later ones never wait.
	ctx := context.Background()
	if _, err := h.st.StartSending(ctx, first, h.clock.Now()); err != nil {
		t.Fatal(err)
	}
	var results []store.PushResult
	for i := range 3 {
		results = append(results, store.PushResult{EndpointID: fmt.Sprintf("e%d", i), Outcome: store.OutcomeSent})
	}
	if err := h.st.RecordResults(ctx, first, results); err != nil {
		t.Fatal(err)
	}
	if st := h.post(key, `{"title":"Next week"}`).json(t)["status"]; st != "queued" {
		t.Fatalf("after a large send: %v", st)
	}
}

func TestReviewRejectAndAge(t *testing.T) {
	h := newHarness(t, func(c *testConfig) { c.ReviewThreshold = 1 })
	h.subscribeAs(t, "https://fcm.googleapis.com/fcm/send/age", "", uaDesktop)
	held := h.post(h.site.APIKey, `{"title":"first"}`).json(t)["notificationId"].(string)
	r := h.do("POST", "/admin/v1/notifications/"+held+"/reject", "", auth(testAdminToken)...)
	if string(r.body) != `{"notificationId":"`+held+`","ok":true,"status":"failed"}` {
		t.Fatalf("reject: %d %s", r.status, r.body)
	}
	if d := h.detailOf(t, held); d["status"] != "failed" || d["error"] != "review_rejected" {
		t.Fatalf("rejected: %v %v", d["status"], d["error"])
	}
	// Canceling a rejected send: it is no longer held.
	expectCode(t, h.do("POST", "/api/v1/notifications/"+held+"/cancel", "", auth(h.site.APIKey)...), 404, CodeNotScheduled)
	// An account older than 14 days is trusted.
	h.clock.Add(14 * 24 * time.Hour)
	if st := h.post(h.site.APIKey, `{"title":"later"}`).json(t)["status"]; st != "queued" {
		t.Fatalf("old account: %v", st)
	}
	// A negative threshold turns review off.
	off := newHarness(t, func(c *testConfig) { c.ReviewThreshold = -1 })
	off.subscribeAs(t, "https://fcm.googleapis.com/fcm/send/off", "", uaDesktop)
	if st := off.post(off.site.APIKey, `{"title":"first"}`).json(t)["status"]; st != "queued" {
		t.Fatalf("review off: %v", st)
	}
}

// topicSlug makes a topic and returns its slug.
func (h *harness) topicSlug(t *testing.T, name string) string {
	t.Helper()
	r := h.do("POST", "/api/v1/topics", `{"name":"`+name+`"}`, auth(h.site.APIKey)...)
	if r.status != 201 {
		t.Fatalf("topic: %d %s", r.status, r.body)
	}
	return r.json(t)["slug"].(string)
}
