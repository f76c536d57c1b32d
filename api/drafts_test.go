package api

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/store"
)

func TestDraftLifecycle(t *testing.T) {
	h := newHarness(t)
	key := auth(h.site.APIKey)
	r := h.do("POST", "/api/v1/notifications", `{"draft":true,"title":"Spring","body":"20% off","url":"https://shop.example/spring"}`, key...)
	if r.status != 201 {
		t.Fatalf("draft: %d %s", r.status, r.body)
	}
	id := r.json(t)["notificationId"].(string)
	created := h.clock.Now()

	// PATCH: set a field, clear one with null; the answer shows the saved body.
	h.clock.Add(time.Minute)
	r = h.do("PATCH", "/api/v1/notifications/"+id, `{"title":"Spring sale","body":null,"topicId":"news"}`, key...)
	if want := `{"ok":true,"notificationId":"` + id + `","status":"draft","sendBody":{"title":"Spring sale","url":"https://shop.example/spring","topicId":"news"}}`; r.status != 200 || string(r.body) != want {
		t.Fatalf("PATCH: %d %s\nwant %s", r.status, r.body, want)
	}
	n, err := h.st.Notification(context.Background(), h.site.WebsiteID, id)
	if err != nil || n.Status != store.StatusDraft || n.Title != "Spring sale" || n.Body != "" || !n.CreatedAt.Equal(created) {
		t.Fatalf("stored after PATCH: %+v, %v", n, err)
	}
	// A bad patch changes nothing.
	expectCode(t, h.do("PATCH", "/api/v1/notifications/"+id, `{"colour":"red"}`, key...), 400, "unknown_field")
	expectCode(t, h.do("PATCH", "/api/v1/notifications/"+id, `[1]`, key...), 400, "invalid_json")
	expectCode(t, h.do("PATCH", "/api/v1/notifications/"+id, ``, key...), 400, "invalid_json")
	if again, _ := h.st.Notification(context.Background(), h.site.WebsiteID, id); string(again.SendBody) != string(n.SendBody) {
		t.Fatalf("a refused PATCH changed the draft: %s", again.SendBody)
	}
	// Sending runs the checks of a send: the topic does not exist.
	expectCode(t, h.do("POST", "/api/v1/notifications/"+id+"/send", ``, key...), 400, "unknown_topic")
	if h.disp.count() != 0 {
		t.Fatalf("a refused send was dispatched")
	}

	// In a send's body null is no clearing: a targeting member sent as null
	// is refused as in any send, and nothing changes.
	expectError(t, h.do("POST", "/api/v1/notifications/"+id+"/send", `{"topicId":null}`, key...), 400, "unknown_topic",
		`,"message":"topicId is empty; leave it out instead"`)
	expectError(t, h.do("POST", "/api/v1/notifications/"+id+"/send", `{"topicId":"news","externalIds":null}`, key...), 400, "external_ids_empty",
		`,"message":"externalIds names no one; it never sends to everyone (leave it out to send to everyone)"`)
	if again, _ := h.st.Notification(context.Background(), h.site.WebsiteID, id); string(again.SendBody) != string(n.SendBody) || again.Status != store.StatusDraft {
		t.Fatalf("a refused send changed the draft: %s %s", again.Status, again.SendBody)
	}
	// PATCH clears it.
	r = h.do("PATCH", "/api/v1/notifications/"+id, `{"topicId":null}`, key...)
	if r.status != 200 {
		t.Fatalf("PATCH: %d %s", r.status, r.body)
	}

	// Send with a body replacing fields: same id, the send moment as its date.
	h.clock.Add(time.Minute)
	r = h.do("POST", "/api/v1/notifications/"+id+"/send", `{"body":"Today only"}`, key...)
	if want := `{"ok":true,"notificationId":"` + id + `","status":"queued"}`; r.status != 202 || string(r.body) != want {
		t.Fatalf("send: %d %s", r.status, r.body)
	}
	n, err = h.st.Notification(context.Background(), h.site.WebsiteID, id)
	if err != nil || n.Status != store.StatusQueued || n.Title != "Spring sale" || n.Body != "Today only" || !n.CreatedAt.Equal(h.clock.Now()) {
		t.Fatalf("stored after send: %+v, %v", n, err)
	}
	var sendBody map[string]any
	if err := json.Unmarshal(n.SendBody, &sendBody); err != nil || sendBody["topicId"] != nil || sendBody["draft"] != nil {
		t.Fatalf("send body %s", n.SendBody)
	}
	if h.disp.count() != 1 || h.disp.sent[0].ID != id {
		t.Fatalf("dispatched %+v", h.disp.sent)
	}
	// It heads the list now.
	if titles, _ := h.page(""); len(titles) != 1 || titles[0] != "Spring sale" {
		t.Fatalf("list %v", titles)
	}

	// No longer a draft: every draft route answers 409 not_a_draft.
	for _, c := range []struct{ method, path, body string }{
		{"PATCH", id, `{"title":"x"}`}, {"DELETE", id, ``}, {"POST", id + "/send", ``},
	} {
		expectCode(t, h.do(c.method, "/api/v1/notifications/"+c.path, c.body, key...), 409, "not_a_draft")
	}

	// Unknown, malformed and other websites' ids are not found.
	other, err := CreateWebsite(context.Background(), h.st, NewWebsite{Name: "Other", URL: "https://other.example"}, testStart)
	if err != nil {
		t.Fatal(err)
	}
	r = h.do("POST", "/api/v1/notifications", `{"draft":true}`, key...)
	mine := r.json(t)["notificationId"].(string)
	for _, c := range []struct{ method, path, body string }{
		{"PATCH", "", `{"title":"x"}`}, {"DELETE", "", ``}, {"POST", "/send", ``},
	} {
		expectError(t, h.do(c.method, "/api/v1/notifications/not-a-uuid"+c.path, c.body, key...), 404, "not_found", "")
		expectError(t, h.do(c.method, "/api/v1/notifications/"+uuid.NewString()+c.path, c.body, key...), 404, "not_found", "")
		expectError(t, h.do(c.method, "/api/v1/notifications/"+mine+c.path, c.body, auth(other.APIKey)...), 404, "not_found", "")
	}

	// DELETE removes a draft.
	r = h.do("DELETE", "/api/v1/notifications/"+mine, ``, key...)
	if r.status != 200 || string(r.body) != `{"deleted":true,"ok":true}` {
		t.Fatalf("DELETE: %d %s", r.status, r.body)
	}
	expectError(t, h.do("DELETE", "/api/v1/notifications/"+mine, ``, key...), 404, "not_found", "")
}

func TestDraftLimits(t *testing.T) {
	h := newHarness(t)
	key := auth(h.site.APIKey)
	ctx := context.Background()
	for i := range maxDrafts - 1 {
		n := store.Notification{WebsiteID: h.site.WebsiteID, Status: store.StatusDraft, Title: "d", CreatedAt: testStart.Add(time.Duration(i))}
		if err := h.st.CreateNotification(ctx, &n); err != nil {
			t.Fatal(err)
		}
	}
	if r := h.do("POST", "/api/v1/notifications", `{"draft":true}`, key...); r.status != 201 {
		t.Fatalf("draft %d: %d %s", maxDrafts, r.status, r.body)
	}
	expectCode(t, h.do("POST", "/api/v1/notifications", `{"draft":true}`, key...), 409, "too_many_drafts")
	// Sends are not drafts.
	if r := h.do("POST", "/api/v1/notifications", `{"title":"Live"}`, key...); r.status != 202 {
		t.Fatalf("send with 500 drafts: %d %s", r.status, r.body)
	}
	if n := h.notificationCount(); n != maxDrafts+1 {
		t.Fatalf("%d stored", n)
	}

	h2 := newHarness(t)
	key2 := auth(h2.site.APIKey)
	big := strings.Repeat("x", maxDraftBytes)
	expectCode(t, h2.do("POST", "/api/v1/notifications", `{"draft":true,"body":"`+big+`"}`, key2...), 413, "draft_too_large")
	r := h2.do("POST", "/api/v1/notifications", `{"draft":true,"body":"`+big[:maxDraftBytes/2]+`"}`, key2...)
	if r.status != 201 {
		t.Fatalf("a 128 KB draft: %d %s", r.status, r.body)
	}
	id := r.json(t)["notificationId"].(string)
	// Growing it past 256 KB is refused and changes nothing.
	expectCode(t, h2.do("PATCH", "/api/v1/notifications/"+id, `{"title":"`+big[:maxDraftBytes/2]+`"}`, key2...), 413, "draft_too_large")
	if n, _ := h2.st.Notification(ctx, h2.site.WebsiteID, id); n.Title != "" {
		t.Fatalf("a refused PATCH stored title of %d bytes", len(n.Title))
	}
}

func TestCancel(t *testing.T) {
	h := newHarness(t)
	key := auth(h.site.APIKey)
	later := testStart.Add(time.Hour).Format(time.RFC3339)
	r := h.do("POST", "/api/v1/notifications", `{"title":"Later","sendAt":"`+later+`"}`, key...)
	id := r.json(t)["notificationId"].(string)
	other, err := CreateWebsite(context.Background(), h.st, NewWebsite{Name: "Other", URL: "https://other.example"}, testStart)
	if err != nil {
		t.Fatal(err)
	}
	expectCode(t, h.do("POST", "/api/v1/notifications/"+id+"/cancel", ``, auth(other.APIKey)...), 404, "not_scheduled")
	r = h.do("POST", "/api/v1/notifications/"+id+"/cancel", ``, key...)
	if r.status != 200 || string(r.body) != `{"canceled":true,"ok":true}` {
		t.Fatalf("cancel: %d %s", r.status, r.body)
	}
	if n, _ := h.st.Notification(context.Background(), h.site.WebsiteID, id); n.Status != store.StatusCanceled {
		t.Fatalf("status %s", n.Status)
	}
	expectCode(t, h.do("POST", "/api/v1/notifications/"+id+"/cancel", ``, key...), 404, "not_scheduled")

	// A send that started, a draft, or an unknown id: not scheduled.
	r = h.do("POST", "/api/v1/notifications", `{"title":"Now"}`, key...)
	queued := r.json(t)["notificationId"].(string)
	r = h.do("POST", "/api/v1/notifications", `{"draft":true}`, key...)
	draft := r.json(t)["notificationId"].(string)
	for _, id := range []string{queued, draft, uuid.NewString()} {
		expectCode(t, h.do("POST", "/api/v1/notifications/"+id+"/cancel", ``, key...), 404, "not_scheduled")
	}
	expectError(t, h.do("POST", "/api/v1/notifications/nope/cancel", ``, key...), 404, "not_found", "")

	// A draft sent for later can be canceled.
	r = h.do("POST", "/api/v1/notifications/"+draft+"/send", `{"title":"Later too","sendAt":"`+later+`"}`, key...)
	if r.status != 202 || r.json(t)["status"] != "scheduled" {
		t.Fatalf("send draft later: %d %s", r.status, r.body)
	}
	if r := h.do("POST", "/api/v1/notifications/"+draft+"/cancel", ``, key...); r.status != 200 {
		t.Fatalf("cancel sent draft: %d %s", r.status, r.body)
	}
}

func TestDraftUnverifiedAccount(t *testing.T) {
	h := newHarness(t)
	unverified := false
	site, err := CreateWebsite(context.Background(), h.st, NewWebsite{Name: "New", URL: "https://new.example", EmailVerified: &unverified}, testStart)
	if err != nil {
		t.Fatal(err)
	}
	key := auth(site.APIKey)
	n := store.Notification{WebsiteID: site.WebsiteID, Status: store.StatusDraft, Title: "d", SendBody: []byte(`{"title":"d"}`), CreatedAt: testStart}
	if err := h.st.CreateNotification(context.Background(), &n); err != nil {
		t.Fatal(err)
	}
	if r := h.do("PATCH", "/api/v1/notifications/"+n.ID, `{"title":"Edited"}`, key...); r.status != 200 {
		t.Fatalf("editing a draft before verifying: %d %s", r.status, r.body)
	}
	expectError(t, h.do("POST", "/api/v1/notifications/"+n.ID+"/send", ``, key...), 403, "email_not_verified",
		`,"message":"verify the account's e-mail address before sending"`)
	if got, _ := h.st.Notification(context.Background(), site.WebsiteID, n.ID); got.Status != store.StatusDraft || h.disp.count() != 0 {
		t.Fatalf("a refused send changed the draft: %s, dispatched %d", got.Status, h.disp.count())
	}
}
