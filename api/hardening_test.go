package api

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/relaybell/relaybell/store"
)

// TestTargetNeverWidens: a send for specific people whose list arrives as
// null or empty is refused, never sent to every subscriber, also when it
// was saved in a draft (issue 21, item 1). Before, "externalIds": null and
// "externalId": "" each queued a send with no target ("All subscribers").
func TestTargetNeverWidens(t *testing.T) {
	h := newHarness(t)
	key := auth(h.site.APIKey)
	const (
		idsEmpty = `,"message":"externalIds names no one; it never sends to everyone (leave it out to send to everyone)"`
		idEmpty  = `,"message":"externalId is empty; it never sends to everyone (leave it out to send to everyone)"`
	)
	expectError(t, h.do("POST", "/api/v1/notifications", `{"title":"Reset your password","externalIds":null}`, key...), 400, "external_ids_empty", idsEmpty)
	expectError(t, h.do("POST", "/api/v1/notifications", `{"title":"Reset your password","externalId":""}`, key...), 400, "external_ids_empty", idEmpty)
	if n := h.notificationCount(); n != 0 || h.disp.count() != 0 {
		t.Fatalf("%d stored, %d dispatched", n, h.disp.count())
	}

	// A draft keeps an explicit null, so sending it is refused the same way.
	r := h.do("POST", "/api/v1/notifications", `{"draft":true,"title":"Reset","externalIds":null}`, key...)
	if r.status != 201 {
		t.Fatalf("draft: %d %s", r.status, r.body)
	}
	id := r.json(t)["notificationId"].(string)
	detail := h.do("GET", "/api/v1/notifications/"+id, "", key...).json(t)
	if body, _ := detail["sendBody"].(map[string]any); body == nil || body["externalIds"] != nil {
		t.Fatalf("draft sendBody %v", detail["sendBody"])
	} else if _, kept := body["externalIds"]; !kept {
		t.Fatalf("draft sendBody lost its null externalIds: %v", body)
	}
	expectError(t, h.do("POST", "/api/v1/notifications/"+id+"/send", ``, key...), 400, "external_ids_empty", idsEmpty)
	expectError(t, h.do("POST", "/api/v1/notifications/"+id+"/send", `{"externalId":"u1","externalIds":null}`, key...), 400, "external_ids_empty", idsEmpty)
	// A send body naming people replaces the null.
	r = h.do("POST", "/api/v1/notifications/"+id+"/send", `{"externalIds":["u1"]}`, key...)
	if r.status != 202 {
		t.Fatalf("send: %d %s", r.status, r.body)
	}
	n, err := h.st.Notification(context.Background(), h.site.WebsiteID, id)
	if err != nil || string(n.Target) != `{"externalIds":["u1"]}` || n.TargetSummary != "User u1" {
		t.Fatalf("sent: target %s summary %q, %v", n.Target, n.TargetSummary, err)
	}

	// PATCH clears with null (spec 3.1): the draft then goes to everyone,
	// which is what the PATCH said.
	r = h.do("POST", "/api/v1/notifications", `{"draft":true,"title":"All","segmentId":"x"}`, key...)
	id = r.json(t)["notificationId"].(string)
	if r := h.do("PATCH", "/api/v1/notifications/"+id, `{"segmentId":null}`, key...); r.status != 200 ||
		!strings.HasSuffix(string(r.body), `"sendBody":{"title":"All"}}`) {
		t.Fatalf("PATCH: %d %s", r.status, r.body)
	}
	if r := h.do("POST", "/api/v1/notifications/"+id+"/send", ``, key...); r.status != 202 {
		t.Fatalf("send: %d %s", r.status, r.body)
	}
}

// TestPatchExactNames: a PATCH whose member differs from a send-request
// field only in letter case is refused and changes nothing (issue 21, item
// 2). Before, {"TITLE":"new"} answered 200 and kept the old title.
func TestPatchExactNames(t *testing.T) {
	h := newHarness(t)
	key := auth(h.site.APIKey)
	r := h.do("POST", "/api/v1/notifications", `{"draft":true,"title":"old"}`, key...)
	id := r.json(t)["notificationId"].(string)
	expectError(t, h.do("PATCH", "/api/v1/notifications/"+id, `{"TITLE":"new"}`, key...), 400, "unknown_field", `,"message":"unknown field \"TITLE\""`)
	expectError(t, h.do("PATCH", "/api/v1/notifications/"+id, `{"actions":[{"Title":"Buy"}]}`, key...), 400, "unknown_field",
		`,"message":"unknown field \"actions[0].Title\""`)
	expectError(t, h.do("POST", "/api/v1/notifications", `{"TITLE":"x","draft":true}`, key...), 400, "unknown_field", `,"message":"unknown field \"TITLE\""`)
	n, err := h.st.Notification(context.Background(), h.site.WebsiteID, id)
	if err != nil || n.Title != "old" || string(n.SendBody) != `{"title":"old"}` || h.notificationCount() != 1 {
		t.Fatalf("draft %q %s (%d stored), %v", n.Title, n.SendBody, h.notificationCount(), err)
	}
	// The other strictly decoded bodies: settings and the admin API.
	expectCode(t, h.do("PUT", "/api/v1/settings", `{"Timezone":"Europe/Paris"}`, key...), 400, "unknown_field")
	expectCode(t, h.do("POST", "/admin/v1/websites", `{"NAME":"A","url":"https://a.example"}`, "Authorization", "Bearer "+testAdminToken), 400, "unknown_field")
	// A lenient body ignores unknown members but not a known one's case variant.
	expectCode(t, h.do("POST", "/api/v1/segments", `{"NAME":"x","filters":{"rules":[{"field":"country","value":"DE"}]}}`, key...), 400, "unknown_field")
}

// TestExportsNeutraliseFormulas: both CSV exports write text that a
// spreadsheet would run as a formula with a leading quote (issue 21, item
// 4). Before, the subscribers export wrote external ids and tags verbatim.
func TestExportsNeutraliseFormulas(t *testing.T) {
	h := newHarness(t)
	key := auth(h.site.APIKey)
	id := h.subscribeAs(t, "https://fcm.googleapis.com/fcm/send/a", `,"externalId":"=HYPERLINK(\"http://evil.example\",\"x\")"`, uaDesktop)
	r := h.do("POST", "/api/v1/subscribers/import", `{"subscribers":[{"externalId":"=HYPERLINK(\"http://evil.example\",\"x\")",`+
		`"tags":{"@cmd":"+1","a":"-2","b":"\t3","c":"\r4","d":"=5","e":"safe"}}]}`, key...)
	if r.status != 200 {
		t.Fatalf("import: %d %s", r.status, r.body)
	}
	r = h.do("GET", "/api/v1/subscribers/export", "", key...)
	want := "subscriber_id,external_id,country,language,timezone,status,consent_at,devices,tags,created_at\n" +
		id + `,"'=HYPERLINK(""http://evil.example"",""x"")",,,,subscribed,2026-03-01T12:00:00Z,desktop,` +
		"\"'@cmd='+1;a='-2;b='\t3;c='\r4;d='=5;e=safe\",2026-03-01T12:00:00Z\n"
	if r.status != 200 || string(r.body) != want {
		t.Fatalf("export:\n%q\nwant\n%q", r.body, want)
	}

	for _, title := range []string{"=1+1", "+1", "-1", "@SUM(A1)", "\tx", "\rx"} {
		if r := h.do("POST", "/api/v1/notifications", fmt.Sprintf(`{"title":%q,"draft":true}`, title), key...); r.status != 201 {
			t.Fatalf("draft: %d %s", r.status, r.body)
		}
	}
	r = h.do("GET", "/api/v1/notifications/export.csv?status=draft", "", key...)
	for _, cell := range []string{"'=1+1", "'+1", "'-1", "'@SUM(A1)", "'\tx", "\"'\rx\""} {
		if !strings.Contains(string(r.body), ","+cell+",") {
			t.Errorf("notifications export lacks %q:\n%s", cell, r.body)
		}
	}
}

// TestUUIDsInAnyCase: every {id} route takes its UUID in any letter case
// (issue 21, item 6). Before, an upper-case id answered 404.
func TestUUIDsInAnyCase(t *testing.T) {
	h := newHarness(t)
	key := auth(h.site.APIKey)
	up := strings.ToUpper
	ok := func(method, path, body string, want int) {
		t.Helper()
		if r := h.do(method, path, body, key...); r.status != want {
			t.Fatalf("%s %s: %d %s", method, path, r.status, r.body)
		}
	}
	r := h.do("POST", "/api/v1/notifications", `{"draft":true,"title":"a"}`, key...)
	draft := r.json(t)["notificationId"].(string)
	ok("GET", "/api/v1/notifications/"+up(draft), "", 200)
	ok("PATCH", "/api/v1/notifications/"+up(draft), `{"body":"b"}`, 200)
	r = h.do("POST", "/api/v1/segments", `{"name":"DE","filters":{"rules":[{"field":"country","value":"DE"}]}}`, key...)
	seg := r.json(t)["id"].(string)
	ok("PUT", "/api/v1/segments/"+up(seg), `{"name":"Germany"}`, 200)
	// A segment id in a send body too.
	ok("POST", "/api/v1/notifications/"+up(draft)+"/send", fmt.Sprintf(`{"segmentId":%q,"sendAt":"2030-01-01T00:00:00Z"}`, up(seg)), 202)
	n, err := h.st.Notification(context.Background(), h.site.WebsiteID, draft)
	if err != nil || string(n.Target) != fmt.Sprintf(`{"segmentId":%q}`, seg) || n.Status != store.StatusScheduled {
		t.Fatalf("sent draft: %s %s, %v", n.Status, n.Target, err)
	}
	ok("POST", "/api/v1/notifications/"+up(draft)+"/cancel", "", 200)
	ok("DELETE", "/api/v1/segments/"+up(seg), "", 200)
	if _, err := h.st.Segment(context.Background(), h.site.WebsiteID, seg); err == nil {
		t.Fatal("segment still there")
	}

	r = h.do("POST", "/api/v1/topics", `{"name":"News"}`, key...)
	topic := r.json(t)["id"].(string)
	ok("PUT", "/api/v1/topics/"+up(topic), `{"name":"Breaking"}`, 200)

	r = h.do("POST", "/api/v1/webhooks", `{"url":"https://hooks.example/x"}`, key...)
	hook := r.json(t)["webhook"].(map[string]any)["id"].(string)
	ok("PUT", "/api/v1/webhooks/"+up(hook), `{"enabled":false}`, 200)
	ok("GET", "/api/v1/webhooks/"+up(hook)+"/deliveries", "", 200)

	sub := h.subscribeAs(t, "https://fcm.googleapis.com/fcm/send/a", `,"externalId":"Ann"`, uaDesktop)
	ok("GET", "/api/v1/subscribers/"+up(sub)+"/profile", "", 200)
	ok("GET", "/api/v1/subscribers/Ann/profile", "", 200)
	ok("GET", "/api/v1/subscribers/ANN/profile", "", 404) // external ids stay exact
	r = h.do("POST", "/api/v1/audience/subscribers/bulk-tag", fmt.Sprintf(`{"ids":[%q],"set":{"vip":"yes"}}`, up(sub)), key...)
	if r.status != 200 || string(r.body) != `{"ok":true,"updated":1}` {
		t.Fatalf("bulk-tag: %d %s", r.status, r.body)
	}
	ok("GET", "/api/v1/projects/"+up(h.site.ProjectID)+"/config", "", 200)
	ok("POST", "/admin/v1/accounts/"+up(h.site.AccountID)+"/verify-email", "", 401) // the admin token, below
	if r := h.do("POST", "/admin/v1/accounts/"+up(h.site.AccountID)+"/verify-email", "", "Authorization", "Bearer "+testAdminToken); r.status != 200 {
		t.Fatalf("admin: %d %s", r.status, r.body)
	}
	ok("DELETE", "/api/v1/topics/"+up(topic), "", 200)
	ok("DELETE", "/api/v1/webhooks/"+up(hook), "", 200)
	if ts, _ := h.st.ListTopics(context.Background(), h.site.WebsiteID); len(ts) != 0 {
		t.Fatalf("topics left: %v", ts)
	}
}
