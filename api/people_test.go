package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/relaybell/relaybell/store"
)

// subscribeAs registers a browser on the harness website with extra
// subscription fields and a user agent; it returns the subscriber id.
func (h *harness) subscribeAs(t testing.TB, endpoint, extra, ua string) string {
	t.Helper()
	r := h.do("POST", "/api/v1/projects/"+h.site.ProjectID+"/subscriptions", subscribeBody(t, endpoint, extra), "User-Agent", ua)
	if r.status != 201 && r.status != 200 {
		t.Fatalf("subscribe: %d %s", r.status, r.body)
	}
	return r.json(t)["subscriberId"].(string)
}

const (
	uaDesktop = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36"
	uaAndroid = "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Mobile Safari/537.36"
)

func decode[T any](t *testing.T, r response) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatalf("body %s: %v", r.body, err)
	}
	return v
}

func TestSegmentRoutes(t *testing.T) {
	h := newHarness(t)
	key := auth(h.site.APIKey)
	readOnly := auth(h.key([]string{"send"}, nil))

	for _, c := range []struct{ body, code string }{
		{`{"filters":{"rules":[{"field":"country","value":"FR"}]}}`, "name_required"},
		{`{"name":"  ","filters":{"rules":[{"field":"country","value":"FR"}]}}`, "name_required"},
		{`{"name":"A"}`, "segment_needs_a_rule"},
		{`{"name":"A","filters":{"rules":[]}}`, "segment_needs_a_rule"},
		{`{"name":"A","filters":{"rules":[{"field":"country"}]}}`, "segment_needs_a_rule"},
		{`{"name":"A","filters":{"rules":[{"field":"tag:","op":"exists"}]}}`, "segment_needs_a_rule"},
		{`{"name":"A","filters":{"rules":"x"}}`, "invalid_json"},
		{`{"name":`, "invalid_json"},
	} {
		expectCode(t, h.do("POST", "/api/v1/segments", c.body, key...), 400, c.code)
	}
	expectError(t, h.do("POST", "/api/v1/segments", `{"name":"A","filters":{"rules":[{"field":"country","value":"FR"}]}}`, readOnly...),
		403, "insufficient_scope", `,"required":"segments:write"`)
	if n := len(decode[map[string][]any](t, h.do("GET", "/api/v1/segments", "", key...))["segments"]); n != 0 {
		t.Fatalf("a refused create stored %d segments", n)
	}

	r := h.do("POST", "/api/v1/segments", `{"name":" French ","filters":{"rules":[{"field":"country","value":"FR"}]}}`, key...)
	if r.status != 201 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	fr := decode[segmentJSON](t, r)
	want := fmt.Sprintf(`{"id":%q,"name":"French","filters":{"match":"all","rules":[{"field":"country","op":"eq","value":"FR"}]},"created_at":"2026-03-01T12:00:00Z"}`, fr.ID)
	if string(r.body) != want {
		t.Fatalf("create body\n %s\nwant\n %s", r.body, want)
	}
	h.clock.Add(time.Second)
	vip := decode[segmentJSON](t, h.do("POST", "/api/v1/segments", `{"name":"VIP","filters":{"rules":[{"field":"tag:vip","op":"exists"}]}}`, key...))

	r = h.do("GET", "/api/v1/segments", "", readOnly...)
	list := decode[map[string][]segmentJSON](t, r)["segments"]
	if r.status != 200 || len(list) != 2 || list[0].ID != vip.ID || list[1].ID != fr.ID {
		t.Fatalf("list (newest first): %d %s", r.status, r.body)
	}

	expectCode(t, h.do("PUT", "/api/v1/segments/"+fr.ID, `{}`, key...), 400, "nothing_to_update")
	expectCode(t, h.do("PUT", "/api/v1/segments/"+fr.ID, `{"filters":{"rules":[{"field":"language"}]}}`, key...), 400, "segment_needs_a_rule")
	expectCode(t, h.do("PUT", "/api/v1/segments/not-a-uuid", `{"name":"x"}`, key...), 404, "not_found")
	expectCode(t, h.do("PUT", "/api/v1/segments/00000000-0000-4000-8000-000000000000", `{"name":"x"}`, key...), 404, "not_found")
	r = h.do("PUT", "/api/v1/segments/"+fr.ID, `{"name":"France"}`, key...)
	if got := decode[segmentJSON](t, r); r.status != 200 || got.Name != "France" || !strings.Contains(string(got.Filters), `"FR"`) {
		t.Fatalf("rename: %d %s", r.status, r.body)
	}

	// Preview counts subscribed browsers with the send engine, any key.
	h.subscribeAs(t, "https://fcm.googleapis.com/fcm/send/a", `,"language":"fr"`, uaDesktop)
	u1 := h.subscribeAs(t, "https://fcm.googleapis.com/fcm/send/b", `,"externalId":"u1"`, uaDesktop)
	h.subscribeAs(t, "https://fcm.googleapis.com/fcm/send/c", `,"externalId":"u1"`, uaAndroid)
	if r := h.do("POST", "/api/v1/audience/subscribers/bulk-tag", `{"ids":["`+u1+`"],"set":{"vip":null}}`, key...); r.status != 200 {
		t.Fatalf("bulk-tag: %d %s", r.status, r.body)
	}
	for _, c := range []struct {
		body string
		want string
	}{
		{``, `{"count":3}`},
		{`{}`, `{"count":3}`},
		{`{"filters":{"rules":[{"field":"external_id","value":"u1"}]}}`, `{"count":2}`},
		{`{"filters":{"rules":[{"field":"language","value":"fr"}]}}`, `{"count":1}`},
		{`{"topicId":"no-such-topic"}`, `{"count":0}`},
	} {
		r := h.do("POST", "/api/v1/segments/preview", c.body, readOnly...)
		if r.status != 200 || string(r.body) != c.want {
			t.Fatalf("preview %s: %d %s, want %s", c.body, r.status, r.body, c.want)
		}
	}

	// A scheduled send holds the segment.
	send := fmt.Sprintf(`{"title":"t","excludeSegmentId":%q,"sendAt":"2026-03-02T12:00:00Z"}`, vip.ID)
	if r := h.do("POST", "/api/v1/notifications", send, key...); r.status != 202 {
		t.Fatalf("scheduled send: %d %s", r.status, r.body)
	}
	expectError(t, h.do("DELETE", "/api/v1/segments/"+vip.ID, "", key...), 409, "segment_in_use",
		`,"message":"1 scheduled or queued sends use this segment","feeds":0,"schedules":0,"pending":1`)

	r = h.do("GET", "/api/v1/audience/segments", "", key...)
	type row struct {
		ID     string       `json:"id"`
		Count  *int64       `json:"count"`
		UsedBy segmentUsers `json:"usedBy"`
	}
	rows := decode[map[string][]row](t, r)["segments"]
	// VIP reaches u1's two browsers; France (country FR) nobody here.
	if r.status != 200 || len(rows) != 2 || rows[0].ID != vip.ID || *rows[0].Count != 2 || rows[0].UsedBy.Pending != 1 ||
		*rows[1].Count != 0 || rows[1].UsedBy.Pending != 0 {
		t.Fatalf("audience segments: %d %s", r.status, r.body)
	}
	expectError(t, h.do("GET", "/api/v1/audience/segments", "", readOnly...), 403, "insufficient_scope", `,"required":"subscribers:read"`)

	if r := h.do("DELETE", "/api/v1/segments/"+fr.ID, "", key...); r.status != 200 || string(r.body) != `{"ok":true}` {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	if r := h.do("DELETE", "/api/v1/segments/"+fr.ID, "", key...); r.status != 200 || string(r.body) != `{"ok":true}` {
		t.Fatalf("delete unknown: %d %s", r.status, r.body)
	}
	expectCode(t, h.do("DELETE", "/api/v1/segments/x", "", key...), 404, "not_found")
}

func TestTopicRoutes(t *testing.T) {
	h := newHarness(t)
	key := auth(h.site.APIKey)
	expectCode(t, h.do("POST", "/api/v1/topics", `{"slug":"x"}`, key...), 400, "name_required")
	expectError(t, h.do("POST", "/api/v1/topics", `{"name":"x"}`, auth(h.key([]string{"segments:write"}, nil))...),
		403, "insufficient_scope", `,"required":"settings:write"`)

	r := h.do("POST", "/api/v1/topics", `{"name":"Breaking News!"}`, key...)
	news := decode[topicJSON](t, r)
	want := fmt.Sprintf(`{"id":%q,"name":"Breaking News!","slug":"breaking-news","created_at":"2026-03-01T12:00:00Z","subscribers":0}`, news.ID)
	if r.status != 201 || string(r.body) != want {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	h.subscribeAs(t, "https://fcm.googleapis.com/fcm/send/a", `,"topics":["Breaking-News"]`, uaDesktop)
	r = h.do("POST", "/api/v1/topics", `{"name":"News","slug":"BREAKING-news"}`, key...)
	if got := decode[topicJSON](t, r); r.status != 201 || got.ID != news.ID || got.Name != "News" || got.Slug != "breaking-news" || got.Subscribers != 1 {
		t.Fatalf("post of an existing slug: %d %s", r.status, r.body)
	}
	r = h.do("PUT", "/api/v1/topics/"+news.ID, `{"name":"World","slug":"ignored"}`, key...)
	if got := decode[topicJSON](t, r); r.status != 200 || got.Name != "World" || got.Slug != "breaking-news" {
		t.Fatalf("rename: %d %s", r.status, r.body)
	}
	expectCode(t, h.do("PUT", "/api/v1/topics/"+news.ID, `{"name":""}`, key...), 400, "name_required")
	expectCode(t, h.do("PUT", "/api/v1/topics/00000000-0000-4000-8000-000000000000", `{"name":"x"}`, key...), 404, "not_found")

	// Sends target a topic by id or slug in any case.
	if r := h.do("POST", "/api/v1/notifications", `{"title":"t","topicId":"Breaking-NEWS"}`, key...); r.status != 202 {
		t.Fatalf("send to a topic slug: %d %s", r.status, r.body)
	}
	expectCode(t, h.do("POST", "/api/v1/notifications", `{"title":"t","topicId":"nope"}`, key...), 400, "unknown_topic")
	cfg := h.do("GET", "/api/v1/projects/"+h.site.ProjectID+"/config", "")
	if !strings.Contains(string(cfg.body), `"topics":[{"name":"World","slug":"breaking-news"}]`) {
		t.Fatalf("SDK config: %s", cfg.body)
	}

	if r := h.do("DELETE", "/api/v1/topics/"+news.ID, "", key...); r.status != 200 || string(r.body) != `{"ok":true}` {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	if r := h.do("GET", "/api/v1/topics", "", key...); string(r.body) != `{"topics":[]}` {
		t.Fatalf("list after delete: %s", r.body)
	}
	if r := h.do("DELETE", "/api/v1/topics/"+news.ID, "", key...); r.status != 200 {
		t.Fatalf("delete unknown: %d %s", r.status, r.body)
	}
}

func TestAudienceList(t *testing.T) {
	h := newHarness(t)
	key := auth(h.site.APIKey)
	h.do("POST", "/api/v1/topics", `{"name":"News"}`, key...)
	a := h.subscribeAs(t, "https://fcm.googleapis.com/fcm/send/a", `,"language":"en-US","externalId":"alice@x","topics":["news"]`, uaDesktop)
	h.clock.Add(24 * time.Hour)
	b := h.subscribeAs(t, "https://fcm.googleapis.com/fcm/send/b", `,"language":"en-GB","externalId":"bob"`, uaAndroid)
	h.clock.Add(24 * time.Hour)
	c := h.subscribeAs(t, "https://updates.push.services.mozilla.com/wpush/v2/c", `,"language":"fr"`, uaDesktop)
	h.clock.Add(time.Hour)
	if r := h.do("POST", "/api/v1/subscribers/import", `{"subscribers":[{"externalId":"carol","tags":{"plan":"pro","n":3,"rb_x":"1"}}]}`, key...); r.status != 200 ||
		string(r.body) != `{"ok":true,"processed":1,"note":"1 labels were skipped (invalid or reserved)"}` {
		t.Fatalf("import: %d %s", r.status, r.body)
	}
	if r := h.do("POST", "/api/v1/audience/subscribers/bulk-tag", fmt.Sprintf(`{"ids":[%q,%q],"set":{"plan":"pro","beta":null}}`, a, b), key...); string(r.body) != `{"ok":true,"updated":2}` {
		t.Fatalf("bulk-tag: %d %s", r.status, r.body)
	}

	type page struct {
		Items []struct {
			ID     string  `json:"id"`
			Status string  `json:"status"`
			Tags   []label `json:"tags"`
		} `json:"items"`
		NextCursor *string `json:"nextCursor"`
		Total      *int64  `json:"total"`
	}
	list := func(query string) ([]string, page) {
		t.Helper()
		r := h.do("GET", "/api/v1/audience/subscribers?"+query, "", key...)
		if r.status != 200 {
			t.Fatalf("list %s: %d %s", query, r.status, r.body)
		}
		p := decode[page](t, r)
		var ids []string
		for _, it := range p.Items {
			ids = append(ids, it.ID)
		}
		return ids, p
	}
	carol := ""
	ids, all := list("count=1")
	if len(ids) != 4 || *all.Total != 4 || all.Items[0].Status != "no_device" {
		t.Fatalf("everyone: %+v", all)
	}
	carol = ids[0]
	for _, c := range []struct {
		query string
		want  []string
	}{
		{"language=en", []string{b, a}},
		{"language=en-US", []string{a}},
		{"language=EN-us,fr", []string{c, a}},
		{"device=android", []string{b}},
		{"device=desktop&device=android", []string{c, b, a}},
		{"status=no_device", []string{carol}},
		{"status=subscribed&tag=plan:pro", []string{b, a}},
		{"tag=plan=pro&tag=beta", []string{b, a}},
		{"tag=n:3", []string{carol}},
		{"topic=NEWS", []string{a}},
		{"topic=missing", nil},
		{"q=ALICE", []string{a}},
		{"q=" + b, []string{b}},
		{"joinedFrom=2026-03-02&joinedTo=2026-03-02", []string{b}},
		{"joinedTo=2026-03-01", []string{a}},
		{"joinedTo=2026-03-01&tz=Pacific/Kiritimati", nil}, // 02:00 on 2 March there
		{"filters=" + url.QueryEscape(`{"match":"any","rules":[{"field":"external_id","value":"bob"},{"field":"language","value":"fr"}]}`), []string{c, b}},
	} {
		got, _ := list(c.query)
		if strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("%s: got %v, want %v", c.query, got, c.want)
		}
	}
	for _, c := range []struct{ query, code string }{
		{"status=gone", "invalid_status"},
		{"device=tv", "invalid_device"},
		{"tz=Mars/Base", "invalid_tz"},
		{"joinedFrom=2026-03-05&joinedTo=2026-03-01", "invalid_range"},
		{"seenFrom=yesterday", "invalid_range"},
		{"filters=%7Bnope", "invalid_filters"},
		{"topic=a,b,c,d,e,f", "invalid_filters"},
		{"cursor=%%%", "invalid_cursor"},
	} {
		expectCode(t, h.do("GET", "/api/v1/audience/subscribers?"+c.query, "", key...), 400, c.code)
	}

	// Cursor paging is stable and bound to its filters.
	p1ids, p1 := list("limit=3")
	p2ids, p2 := list("limit=3&cursor=" + *p1.NextCursor)
	if len(p1ids) != 3 || len(p2ids) != 1 || p2.NextCursor != nil || p2ids[0] != a {
		t.Fatalf("pages %v %v", p1ids, p2ids)
	}
	expectCode(t, h.do("GET", "/api/v1/audience/subscribers?device=desktop&cursor="+*p1.NextCursor, "", key...), 400, "invalid_cursor")

	// Facets leave out reserved labels.
	r := h.do("GET", "/api/v1/audience/subscribers/facets", "", key...)
	want := `{"countries":[],"languages":[{"value":"en-GB","count":1},{"value":"en-US","count":1},{"value":"fr","count":1}],` +
		`"devices":[{"value":"desktop","count":2},{"value":"android","count":1}],` +
		`"tags":[{"key":"plan","count":3,"values":["pro"]},{"key":"beta","count":2,"values":[]},{"key":"n","count":1,"values":["3"]}],` +
		`"topics":[{"id":"` + decode[map[string][]topicJSON](t, h.do("GET", "/api/v1/topics", "", key...))["topics"][0].ID + `","name":"News","slug":"news","count":1}]}`
	if r.status != 200 || string(r.body) != want {
		t.Fatalf("facets\n %s\nwant\n %s", r.body, want)
	}
}

func TestBulkTagErrors(t *testing.T) {
	h := newHarness(t)
	key := auth(h.site.APIKey)
	id := h.subscribeAs(t, "https://fcm.googleapis.com/fcm/send/a", "", uaDesktop)
	many := make([]string, 1001)
	for i := range many {
		many[i] = fmt.Sprintf("%q", id)
	}
	labels21 := make([]string, 21)
	for i := range labels21 {
		labels21[i] = fmt.Sprintf(`"k%d":"v"`, i)
	}
	for _, c := range []struct{ body, code string }{
		{`{"set":{"a":"b"}}`, "ids_required"},
		{`{"ids":[],"set":{"a":"b"}}`, "ids_required"},
		{`{"ids":[` + strings.Join(many, ",") + `],"set":{"a":"b"}}`, "too_many_ids"},
		{`{"ids":["nope"],"set":{"a":"b"}}`, "invalid_id"},
		{`{"ids":["` + id + `"]}`, "nothing_to_change"},
		{`{"ids":["` + id + `"],"set":{},"remove":[]}`, "nothing_to_change"},
		{`{"ids":["` + id + `"],"set":{` + strings.Join(labels21, ",") + `}}`, "too_many_labels"},
		{`{"ids":["` + id + `"],"set":{"":"v"}}`, "invalid_label"},
		{`{"ids":["` + id + `"],"set":{"` + strings.Repeat("k", 65) + `":"v"}}`, "invalid_label"},
		{`{"ids":["` + id + `"],"set":{"k":"` + strings.Repeat("v", 257) + `"}}`, "invalid_label"},
		{`{"ids":["` + id + `"],"set":{"k":3}}`, "invalid_label"},
		{`{"ids":["` + id + `"],"set":{"rb_score":"1"}}`, "reserved_label"},
		{`{"ids":["` + id + `"],"remove":["rb_score"]}`, "reserved_label"},
		{`{"ids":"x"}`, "invalid_json"},
	} {
		expectCode(t, h.do("POST", "/api/v1/audience/subscribers/bulk-tag", c.body, key...), 400, c.code)
	}
	if p := h.subscriber(id); len(p.Tags) != 0 {
		t.Fatalf("a refused bulk-tag changed labels: %v", p.Tags)
	}
	expectCode(t, h.do("POST", "/api/v1/subscribers/import", `{"subscribers":[]}`, key...), 400, "no_subscribers")
	expectCode(t, h.do("POST", "/api/v1/subscribers/import", `{}`, key...), 400, "no_subscribers")
	expectCode(t, h.do("POST", "/api/v1/audience/subscribers/bulk-delete", `{"ids":["x"]}`, key...), 400, "invalid_id")
}

func TestSubscriberDataAndErasure(t *testing.T) {
	h := newHarness(t)
	key := auth(h.site.APIKey)
	id := h.subscribeAs(t, "https://fcm.googleapis.com/fcm/send/a", `,"externalId":"u-1","language":"de","timezone":"Europe/Berlin"`, uaDesktop)
	h.clock.Add(time.Second)
	other := h.subscribeAs(t, "https://fcm.googleapis.com/fcm/send/b", `,"externalId":"u-2"`, uaAndroid)
	h.do("POST", "/api/v1/audience/subscribers/bulk-tag", fmt.Sprintf(`{"ids":[%q],"set":{"plan":"pro"}}`, id), key...)

	r := h.do("GET", "/api/v1/subscribers/recent?limit=1", "", key...)
	want := fmt.Sprintf(`{"subscribers":[{"id":%q,"external_id":"u-2","country":"","language":"","timezone":"","created_at":"2026-03-01T12:00:01Z","unsubscribed_at":null,"device":"android","last_seen_at":"2026-03-01T12:00:01Z"}]}`, other)
	if r.status != 200 || string(r.body) != want {
		t.Fatalf("recent\n %s\nwant\n %s", r.body, want)
	}

	r = h.do("GET", "/api/v1/subscribers/export", "", key...)
	wantCSV := "subscriber_id,external_id,country,language,timezone,status,consent_at,devices,tags,created_at\n" +
		other + ",u-2,,,,subscribed,2026-03-01T12:00:01Z,android,,2026-03-01T12:00:01Z\n" +
		id + ",u-1,,de,Europe/Berlin,subscribed,2026-03-01T12:00:00Z,desktop,plan=pro,2026-03-01T12:00:00Z\n"
	if r.status != 200 || string(r.body) != wantCSV || r.header["Content-Type"] != "text/csv; charset=utf-8" ||
		r.header["Content-Disposition"] != `attachment; filename="relaybell-subscribers.csv"` {
		t.Fatalf("export: %d %v\n%s", r.status, r.header, r.body)
	}

	for _, path := range []string{"/u-1/data", "/" + id + "/data", "/u-1/profile"} {
		r := h.do("GET", "/api/v1/subscribers"+path, "", key...)
		v := r.json(t)
		if r.status != 200 || v["subscriber"].(map[string]any)["id"] != id || len(v["endpoints"].([]any)) != 1 {
			t.Fatalf("%s: %d %s", path, r.status, r.body)
		}
	}
	data := h.do("GET", "/api/v1/subscribers/u-1/data", "", key...).json(t)
	if ep := data["endpoints"].([]any)[0].(map[string]any); ep["type"] != "fcm" || ep["device"] != "desktop" {
		t.Fatalf("data endpoint %v", ep)
	}
	expectCode(t, h.do("GET", "/api/v1/subscribers/nobody/data", "", key...), 404, "not_found")
	expectError(t, h.do("DELETE", "/api/v1/subscribers/u-1", "", auth(h.key([]string{"subscribers:read"}, nil))...),
		403, "insufficient_scope", `,"required":"subscribers:write"`)

	r = h.do("DELETE", "/api/v1/subscribers/u-1", "", key...)
	if want := fmt.Sprintf(`{"erased":true,"ok":true,"subscriberId":%q}`, id); r.status != 200 || string(r.body) != want {
		t.Fatalf("erase: %d %s", r.status, r.body)
	}
	expectCode(t, h.do("GET", "/api/v1/subscribers/u-1/profile", "", key...), 404, "not_found")
	expectCode(t, h.do("DELETE", "/api/v1/subscribers/u-1", "", key...), 404, "not_found")

	r = h.do("POST", "/api/v1/audience/subscribers/bulk-delete", fmt.Sprintf(`{"ids":[%q,%q]}`, other, id), key...)
	if r.status != 200 || string(r.body) != `{"deleted":1,"ok":true}` {
		t.Fatalf("bulk-delete: %d %s", r.status, r.body)
	}
	if r := h.do("GET", "/api/v1/audience/subscribers", "", key...); string(r.body) != `{"items":[],"nextCursor":null}` {
		t.Fatalf("list after erasure: %s", r.body)
	}
}

// A row with topics and no tags imports (it answered 500 when a missing
// tags member reached the store as JSON null).
func TestImportWithoutTags(t *testing.T) {
	h := newHarness(t)
	key := auth(h.site.APIKey)
	h.do("POST", "/api/v1/topics", `{"name":"News"}`, key...)
	if r := h.do("POST", "/api/v1/subscribers/import", `{"subscribers":[{"externalId":"dana","topics":["news"]}]}`, key...); r.status != 200 ||
		string(r.body) != `{"ok":true,"processed":1}` {
		t.Fatalf("import: %d %s", r.status, r.body)
	}
	r := h.do("GET", "/api/v1/subscribers/dana/profile", "", key...)
	var profile struct {
		Topics []map[string]string `json:"topics"`
	}
	if err := json.Unmarshal(r.body, &profile); err != nil || r.status != 200 || !reflect.DeepEqual(profile.Topics, []map[string]string{{"name": "News", "slug": "news"}}) {
		t.Fatalf("profile: %d %s", r.status, r.body)
	}
}

// TestAudienceTotalOfItsPage: with count=1 the page and its total are read
// from one snapshot, so a person who subscribes between the two reads is
// in neither; the next list has them in both. Without count no snapshot
// is taken.
func TestAudienceTotalOfItsPage(t *testing.T) {
	h := newHarness(t)
	key := auth(h.site.APIKey)
	first := h.subscribeAs(t, "https://fcm.googleapis.com/fcm/send/first", `,"externalId":"first"`, uaDesktop)
	list := func(query string) string {
		t.Helper()
		r := h.do("GET", "/api/v1/audience/subscribers?"+query, "", key...)
		if r.status != 200 {
			t.Fatalf("list %s: %d %s", query, r.status, r.body)
		}
		p := decode[struct {
			Items []struct {
				ID string `json:"id"`
			} `json:"items"`
			Total *int64 `json:"total"`
		}](t, r)
		var ids []string
		for _, it := range p.Items {
			ids = append(ids, it.ID)
		}
		if p.Total == nil {
			return strings.Join(ids, ",") + " total none"
		}
		return fmt.Sprintf("%s total %d", strings.Join(ids, ","), *p.Total)
	}
	var second string
	h.st.afterPage = func() {
		res, err := h.st.UpsertSubscriptions(context.Background(), []store.SubscriptionInput{{WebsiteID: h.site.WebsiteID,
			Endpoint: "https://fcm.googleapis.com/fcm/send/second", P256dh: "BP256", Auth: "auth", Device: "desktop",
			SiteTimezone: "UTC", At: h.clock.Now().Add(time.Minute)}}) // newer: listed first
		if err != nil {
			t.Error(err)
			return
		}
		second = res[0].SubscriberID
	}
	if got, want := list("count=1"), first+" total 1"; got != want {
		t.Errorf("a subscription between the page and its count: %q, want %q", got, want)
	}
	if second == "" {
		t.Fatal("nobody subscribed between the page and its count")
	}
	if got, want := list("count=true"), second+","+first+" total 2"; got != want {
		t.Errorf("the next list: %q, want %q", got, want)
	}
	if got, want := list(""), second+","+first+" total none"; got != want {
		t.Errorf("without count: %q, want %q", got, want)
	}
	h.st.mu.Lock()
	defer h.st.mu.Unlock()
	if h.st.snapshots != 2 {
		t.Errorf("snapshots: %d, want 2 (one per list with count)", h.st.snapshots)
	}
}
