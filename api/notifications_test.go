package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/store"
)

func TestSend(t *testing.T) {
	h := newHarness(t)
	key := auth(h.site.APIKey)

	r := h.do("POST", "/api/v1/notifications", `{"title":"Sale","body":"50% off"}`, key...)
	if r.status != 202 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	out := r.json(t)
	id, _ := out["notificationId"].(string)
	if want := `{"ok":true,"notificationId":"` + id + `","status":"queued"}`; string(r.body) != want || !isUUID(id) {
		t.Errorf("body %s", r.body)
	}
	n, err := h.st.Notification(context.Background(), h.site.WebsiteID, id)
	if err != nil || n.Status != store.StatusQueued || n.Title != "Sale" {
		t.Errorf("stored %+v (%v)", n, err)
	}
	if h.disp.count() != 1 || h.disp.sent[0].ID != id || h.disp.sent[0].Seq == 0 {
		t.Errorf("dispatched %+v", h.disp.sent)
	}

	// Scheduled: stored, not dispatched.
	at := testStart.Add(time.Hour).Format(time.RFC3339)
	r = h.do("POST", "/api/v1/notifications", `{"title":"Later","sendAt":"`+at+`"}`, key...)
	if r.status != 202 || r.json(t)["status"] != "scheduled" || h.disp.count() != 1 {
		t.Errorf("scheduled: %d %s, dispatched %d", r.status, r.body, h.disp.count())
	}

	// Draft: 201, may have no title, not dispatched.
	r = h.do("POST", "/api/v1/notifications", `{"draft":true}`, key...)
	if r.status != 201 || r.json(t)["status"] != "draft" || h.disp.count() != 1 {
		t.Errorf("draft: %d %s", r.status, r.body)
	}
	if n := h.notificationCount(); n != 3 {
		t.Errorf("stored %d", n)
	}
}

func TestSendDispatchFailureStillAccepted(t *testing.T) {
	h := newHarness(t)
	h.disp.err = errors.New("bus down")
	r := h.do("POST", "/api/v1/notifications", `{"title":"x"}`, auth(h.site.APIKey)...)
	if r.status != 202 || h.notificationCount() != 1 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if !strings.Contains(h.metricsText(), "relaybell_api_dispatch_failures_total 1") {
		t.Error("dispatch failure not counted")
	}
}

func TestSendErrorsHaveNoSideEffect(t *testing.T) {
	h := newHarness(t)
	key := auth(h.site.APIKey)
	sites := []string{h.site.WebsiteID}
	f := func(body string, status int, code, msg string) {
		t.Helper()
		extra := ""
		if msg != "" {
			extra = fmt.Sprintf(`,"message":%q`, msg)
		}
		expectError(t, h.do("POST", "/api/v1/notifications", body, key...), status, code, extra)
		for _, site := range sites {
			if n := h.notificationCount(site); n != 0 {
				t.Fatalf("%s: %d notifications stored", body, n)
			}
		}
		if h.disp.count() != 0 {
			t.Fatalf("%s: dispatched", body)
		}
	}
	f(``, 400, "invalid_json", "a JSON object body is required")
	f(`   `, 400, "invalid_json", "a JSON object body is required")
	f(`[]`, 400, "invalid_json", "the body must be a JSON object")
	f(`{"title":`, 400, "invalid_json", "the JSON ends too early")
	f(`{"title":"x"} {}`, 400, "invalid_json", "unexpected data after the JSON object")
	f(`{"title":5}`, 400, "invalid_json", "field title has the wrong type (number)")
	f(`{"title":"x","ttl":"soon"}`, 400, "invalid_json", "field ttl has the wrong type (string)")
	f(`{"title":"x","colour":"red"}`, 400, "unknown_field", `unknown field "colour"`)
	f(`{"title":"x","actions":[{"title":"y","colour":"red"}]}`, 400, "unknown_field", `unknown field "actions[0].colour"`)
	f(`{"title":"x","ab":{"b":{"title":"b","colour":1}}}`, 400, "unknown_field", `unknown field "ab.b.colour"`)
	// Names match exactly (encoding/json alone ignores letter case).
	f(`{"TITLE":"x","draft":true}`, 400, "unknown_field", `unknown field "TITLE"`)
	f(`{"title":"x","actions":[{"TITLE":"y"}]}`, 400, "unknown_field", `unknown field "actions[0].TITLE"`)
	f(`{"title":"x","ExternalIds":["u1"]}`, 400, "unknown_field", `unknown field "ExternalIds"`)
	f(`{"title":"x","title":"y"}`, 400, "invalid_json", `duplicate field "title"`)
	f("{\"title\":\"\xffx\"}", 400, "invalid_json", "the body is not valid UTF-8")
	f(`{"title":"x\u0000"}`, 400, "invalid_json", "field title holds a NUL character")
	f(`{"body":"no title"}`, 400, "title_required", "a title is required to send")
	f(`{"title":"x","externalIds":[]}`, 400, "external_ids_empty", "externalIds names no one; it never sends to everyone (leave it out to send to everyone)")
	// A targeting member that names no one never widens to everyone.
	f(`{"title":"x","externalIds":null}`, 400, "external_ids_empty", "externalIds names no one; it never sends to everyone (leave it out to send to everyone)")
	f(`{"title":"x","externalIds":[""]}`, 400, "external_ids_empty", "externalIds names no one; it never sends to everyone (leave it out to send to everyone)")
	f(`{"title":"x","externalId":""}`, 400, "external_ids_empty", "externalId is empty; it never sends to everyone (leave it out to send to everyone)")
	f(`{"title":"x","externalId":null}`, 400, "external_ids_empty", "externalId is empty; it never sends to everyone (leave it out to send to everyone)")
	f(`{"title":"x","segmentId":null}`, 400, "segment_not_found", "segmentId is empty; leave it out instead")
	f(`{"title":"x","segmentId":""}`, 400, "segment_not_found", "segmentId is empty; leave it out instead")
	f(`{"title":"x","excludeSegmentId":null}`, 400, "segment_not_found", "excludeSegmentId is empty; leave it out instead")
	f(`{"title":"x","topicId":null}`, 400, "unknown_topic", "topicId is empty; leave it out instead")
	f(`{"title":"x","topicId":" "}`, 400, "unknown_topic", "topicId is empty; leave it out instead")
	f(`{"title":"x","filters":null}`, 400, "invalid_filters", "filters needs at least one complete rule (a field and a value); leave it out instead")
	f(`{"title":"x","filters":{"rules":[]}}`, 400, "invalid_filters", "filters needs at least one complete rule (a field and a value); leave it out instead")
	f(`{"title":"x","excludeFilters":{}}`, 400, "invalid_filters", "excludeFilters needs at least one complete rule (a field and a value); leave it out instead")
	f(`{"title":"x","segmentId":"00000000-0000-4000-8000-000000000000"}`, 400, "segment_not_found", "no segment 00000000-0000-4000-8000-000000000000 on this website")
	f(`{"title":"x","topicId":"news"}`, 400, "unknown_topic", "no topic news on this website")
	f(`{"draft":true,"body":"`+strings.Repeat("x", maxDraftBytes)+`"}`, 413, "draft_too_large", "a draft is at most 262144 bytes")

	// An unverified account is refused before anything is stored. The store
	// cannot unverify an account, so this is a second website whose account
	// never was verified.
	unverified := false
	other, err := CreateWebsite(context.Background(), h.st, NewWebsite{Name: "New", URL: "https://new.example", EmailVerified: &unverified}, testStart)
	if err != nil {
		t.Fatal(err)
	}
	key, sites = auth(other.APIKey), append(sites, other.WebsiteID)
	f(`{"title":"x"}`, 403, "email_not_verified", "verify the account's e-mail address before sending")

	// A store failure is a 500.
	h2 := newHarness(t)
	h2.st.setFail("CreateNotification", errors.New("disk full"))
	expectError(t, h2.do("POST", "/api/v1/notifications", `{"title":"x"}`, auth(h2.site.APIKey)...), 500, "internal_error", "")
	if h2.disp.count() != 0 {
		t.Error("dispatched although not stored")
	}
}

// page fetches one list page and returns the ids and next cursor.
func (h *harness) page(query string) ([]string, *string) {
	h.t.Helper()
	r := h.do("GET", "/api/v1/notifications"+query, "", auth(h.site.APIKey)...)
	if r.status != 200 {
		h.t.Fatalf("%s: %d %s", query, r.status, r.body)
	}
	var out struct {
		Items []struct {
			ID    string `json:"id"`
			Title string `json:"title"`
		} `json:"items"`
		NextCursor *string `json:"nextCursor"`
	}
	if err := json.Unmarshal(r.body, &out); err != nil {
		h.t.Fatal(err)
	}
	var titles []string
	for _, it := range out.Items {
		titles = append(titles, it.Title)
	}
	return titles, out.NextCursor
}

func (h *harness) send(title string) {
	h.t.Helper()
	if r := h.do("POST", "/api/v1/notifications", `{"title":"`+title+`"}`, auth(h.site.APIKey)...); r.status != 202 {
		h.t.Fatalf("%d %s", r.status, r.body)
	}
}

func TestListPagingStable(t *testing.T) {
	h := newHarness(t)
	if titles, next := h.page(""); len(titles) != 0 || next != nil {
		t.Fatalf("empty list: %v %v", titles, next)
	}
	r := h.do("GET", "/api/v1/notifications", "", auth(h.site.APIKey)...)
	if string(r.body) != `{"items":[],"nextCursor":null}` {
		t.Errorf("empty body %s", r.body)
	}
	for i := 1; i <= 7; i++ {
		h.send(fmt.Sprintf("n%d", i))
	}
	h.do("POST", "/api/v1/notifications", `{"title":"d","draft":true}`, auth(h.site.APIKey)...)

	titles, next := h.page("?limit=3")
	if strings.Join(titles, ",") != "n7,n6,n5" || next == nil {
		t.Fatalf("page 1: %v %v", titles, next)
	}
	// New sends arrive; the next page does not shift.
	h.send("n8")
	h.send("n9")
	titles, next = h.page("?limit=3&cursor=" + url.QueryEscape(*next))
	if strings.Join(titles, ",") != "n4,n3,n2" || next == nil {
		t.Fatalf("page 2: %v", titles)
	}
	titles, next = h.page("?limit=3&cursor=" + *next)
	if strings.Join(titles, ",") != "n1" || next != nil {
		t.Fatalf("page 3: %v %v", titles, next)
	}
	// Exactly a page left: no empty page after it.
	titles, next = h.page("?limit=9")
	if len(titles) != 9 || next != nil {
		t.Errorf("limit 9: %v %v", titles, next)
	}
	// Drafts only on request.
	if titles, _ := h.page("?status=draft"); strings.Join(titles, ",") != "d" {
		t.Errorf("drafts %v", titles)
	}
	if titles, _ := h.page("?status=queued,draft&limit=2"); strings.Join(titles, ",") != "n9,n8" {
		t.Errorf("queued,draft %v", titles)
	}
}

func TestListParams(t *testing.T) {
	h := newHarness(t)
	for i := range 120 {
		h.st.CreateNotification(context.Background(), &store.Notification{ID: fmt.Sprintf("id%d", i),
			WebsiteID: h.site.WebsiteID, Status: store.StatusSent, Title: "t", CreatedAt: testStart})
	}
	count := func(q string) int {
		titles, _ := h.page(q)
		return len(titles)
	}
	for q, want := range map[string]int{"": 25, "?limit=0": 1, "?limit=-5": 1, "?limit=101": 100, "?limit=abc": 25, "?limit=7": 7, "?tz=Europe/Berlin": 25} {
		if got := count(q); got != want {
			t.Errorf("%q: %d items, want %d", q, got, want)
		}
	}
	key := auth(h.site.APIKey)
	get := func(q string) response { return h.do("GET", "/api/v1/notifications"+q, "", key...) }
	expectError(t, get("?status=sent,bogus"), 400, "invalid_status", `,"message":"unknown status \"bogus\""`)
	expectError(t, get("?tz=Mars/Olympus"), 400, "invalid_tz", `,"message":"unknown time zone \"Mars/Olympus\""`)
	expectError(t, get("?tz="), 400, "invalid_tz", `,"message":"unknown time zone \"\""`)
	const cursorMsg = `,"message":"cursor must be the nextCursor of the previous page, with the same filters"`
	for _, c := range []string{"", "garbage", "AQAAAAAAAAAKAAAAAAAAAAA", strings.Repeat("A", 200), "%00"} {
		expectError(t, get("?cursor="+c), 400, "invalid_cursor", cursorMsg)
	}
	_, next := h.page("?limit=2")
	// Tampered, with other filters, or from another website: refused.
	raw := []byte(*next)
	raw[3] ^= 1
	expectError(t, get("?cursor="+string(raw)), 400, "invalid_cursor", cursorMsg)
	expectError(t, get("?status=sent&cursor="+*next), 400, "invalid_cursor", cursorMsg)
	if _, ok := decodeCursor(*next, "another-website", ""); ok {
		t.Error("cursor valid for another website")
	}
	if seq, ok := decodeCursor(encodeCursor(42, "w", "sent"), "w", "sent"); !ok || seq != 42 {
		t.Errorf("round trip %d %v", seq, ok)
	}
}

func TestParseStatuses(t *testing.T) {
	got, err := parseStatuses([]string{"sent, failed", "sent", "", "draft"})
	if err != nil || strings.Join(got, ",") != "draft,failed,sent" {
		t.Errorf("%v %v", got, err)
	}
	if got, err := parseStatuses(nil); got != nil || err != nil {
		t.Errorf("%v %v", got, err)
	}
	if _, err := parseStatuses([]string{"Sent"}); err == nil || err.Code != CodeInvalidStatus {
		t.Errorf("case: %v", err)
	}
}

func TestDetail(t *testing.T) {
	h := newHarness(t)
	key := auth(h.site.APIKey)
	r := h.do("POST", "/api/v1/notifications", `{"title":"Hello","url":"https://shop.example/x"}`, key...)
	id := r.json(t)["notificationId"].(string)

	r = h.do("GET", "/api/v1/notifications/"+id, "", key...)
	if r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	v := r.json(t)
	n := v["notification"].(map[string]any)
	if n["id"] != id || n["title"] != "Hello" || n["status"] != "queued" {
		t.Errorf("notification %v", n)
	}
	for _, k := range []string{"funnel", "devices", "variants", "languages", "errors", "revenue", "currency", "sendBody"} {
		if _, ok := v[k]; !ok {
			t.Errorf("detail lacks %s", k)
		}
	}
	// The analytics store failing still shows the counters.
	h.an.setErr(errors.New("clickhouse down"))
	if r := h.do("GET", "/api/v1/notifications/"+id, "", key...); r.status != 200 {
		t.Errorf("with analytics down: %d", r.status)
	}

	expectError(t, h.do("GET", "/api/v1/notifications/not-a-uuid", "", key...), 404, "not_found", "")
	expectError(t, h.do("GET", "/api/v1/notifications/00000000-0000-4000-8000-000000000000", "", key...), 404, "not_found", "")
	expectError(t, h.do("GET", "/api/v1/notifications/{"+id+"}", "", key...), 404, "not_found", "")
	// Another website's notification is not found either.
	other, err := CreateWebsite(context.Background(), h.st, NewWebsite{Name: "Other", URL: "https://other.example"}, testStart)
	if err != nil {
		t.Fatal(err)
	}
	expectError(t, h.do("GET", "/api/v1/notifications/"+id, "", auth(other.APIKey)...), 404, "not_found", "")
	expectError(t, h.do("GET", "/api/v1/notifications/"+id, ""), 401, "not_authenticated", "")
}

func TestListFiltersAndExport(t *testing.T) {
	h := newHarness(t)
	key := auth(h.site.APIKey)
	ctx := context.Background()
	day := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	later := day("2026-03-03T08:00:00Z")
	for _, n := range []store.Notification{
		{Status: store.StatusSent, Title: "=SUM(A1)", Body: "the spring deal", TargetSummary: "Everyone", CreatedAt: day("2026-03-01T23:30:00Z"),
			Counters: store.Counters{Recipients: 4, Sent: 3, Failed: 1, Clicked: 1, Conversions: 1, Revenue: 12.5}},
		{Status: store.StatusScheduled, Title: "Plain", Body: "other", TargetSummary: "Topic news", CreatedAt: day("2026-03-02T10:00:00Z"), ScheduledAt: &later},
		{Status: store.StatusDraft, Title: "Draft deal", CreatedAt: day("2026-03-02T11:00:00Z")},
	} {
		n.ID, n.WebsiteID = uuid.NewString(), h.site.WebsiteID
		if err := h.st.CreateNotification(ctx, &n); err != nil {
			t.Fatal(err)
		}
	}
	for q, want := range map[string]string{
		"?tz=UTC&from=2026-03-02&to=2026-03-02":          "Plain",
		"?tz=Europe/Paris&from=2026-03-02&to=2026-03-02": "Plain =SUM(A1)",
		"?tz=UTC&to=2026-03-01":                          "=SUM(A1)",
		"?q=DEAL":                                        "=SUM(A1)",
		"?q=deal&status=draft,sent":                      "Draft deal =SUM(A1)",
		"?q=nothing":                                     "",
	} {
		titles, _ := h.page(q)
		if got := strings.Join(titles, " "); got != want {
			t.Errorf("%s: %q, want %q", q, got, want)
		}
	}
	get := func(path, q string) response { return h.do("GET", "/api/v1/notifications"+path+q, "", key...) }
	for _, path := range []string{"", "/export.csv"} {
		expectCode(t, get(path, "?from=2026-03-05&to=2026-03-01"), 400, "invalid_range")
		expectCode(t, get(path, "?from=March"), 400, "invalid_range")
		expectCode(t, get(path, "?tz=Nowhere"), 400, "invalid_tz")
		expectCode(t, get(path, "?status=lost"), 400, "invalid_status")
	}
	// A cursor is bound to the filters.
	_, next := h.page("?q=e&limit=1")
	if next == nil {
		t.Fatal("no second page")
	}
	expectCode(t, get("", "?q=f&limit=1&cursor="+*next), 400, "invalid_cursor")
	if titles, _ := h.page("?q=e&limit=1&cursor=" + *next); len(titles) != 1 || titles[0] != "=SUM(A1)" {
		t.Errorf("second page %v", titles)
	}

	r := get("/export.csv", "?tz=UTC&from=2026-03-01&to=2026-03-02")
	if r.status != 200 || r.header["Content-Type"] != "text/csv; charset=utf-8" || r.header["X-Row-Count"] != "2" ||
		r.header["Content-Disposition"] != "attachment; filename=relaybell-notifications-2026-03-01-2026-03-02.csv" {
		t.Fatalf("export: %d %v", r.status, r.header)
	}
	lines := strings.Split(strings.TrimSpace(string(r.body)), "\n")
	if len(lines) != 3 || lines[0] != "id,created_at,scheduled_at,status,title,target,recipients,sent,failed,clicked,ctr,conversions,revenue" ||
		!strings.HasSuffix(lines[1], ",2026-03-02T10:00:00.000Z,2026-03-03T08:00:00.000Z,scheduled,Plain,Topic news,0,0,0,0,0.0,0,0") ||
		!strings.HasSuffix(lines[2], ",2026-03-01T23:30:00.000Z,,sent,'=SUM(A1),Everyone,4,3,1,1,33.3,1,12.5") {
		t.Fatalf("export body:\n%s", r.body)
	}
	r = get("/export.csv", "")
	if r.header["X-Row-Count"] != "2" || r.header["Content-Disposition"] != "attachment; filename=relaybell-notifications.csv" {
		t.Fatalf("unfiltered export: %v", r.header)
	}
}
