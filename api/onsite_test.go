package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/relaybell/relaybell/notification"
	"github.com/relaybell/relaybell/onsite"
	"github.com/relaybell/relaybell/store"
)

// On the website itself (issue 36, parts 1, 2 and 5): the prompt, the
// welcome and on-site message routes, the SDK's routes, and the welcome
// sent once per endpoint across re-subscriptions. Run on both stores
// (RELAYBELL_TEST_STORE).

const defaultPromptJSON = `{"enabled":false,"kind":"soft","style":"slide-down","texts":{"title":"Get our notifications",` +
	`"message":"We'll let you know when there is something new. You can turn them off at any time.","accept":"Allow",` +
	`"dismiss":"Not now","iosHint":"To get notifications, tap Share and then Add to Home Screen."},"translations":{},` +
	`"when":{"seconds":0,"pageViews":0,"scrollPercent":0},"include":[],"exclude":[],"dismissDays":7}`

func TestPromptRoutes(t *testing.T) {
	h := newHarness(t)
	key := auth(h.site.APIKey)
	r := h.do("GET", "/api/v1/prompt", "", key...)
	if r.status != 200 || string(r.body) != defaultPromptJSON {
		t.Fatalf("GET default: %d\n %s\nwant\n %s", r.status, r.body, defaultPromptJSON)
	}
	// The SDK gets no prompt while it is off.
	cfg := h.do("GET", "/api/v1/projects/"+h.site.ProjectID+"/config", "")
	if !strings.HasSuffix(string(cfg.body), `,"prompt":null}`) {
		t.Fatalf("config while off: %s", cfg.body)
	}

	r = h.do("PUT", "/api/v1/prompt", `{"enabled":true,"kind":"soft","style":"modal","texts":{"title":" Stay in touch ","accept":"Yes"},`+
		`"translations":{"fr":{"title":"Restez informé"}},"when":{"seconds":5,"scrollPercent":50},"include":["/blog*"],`+
		`"exclude":["/blog/private*"],"dismissDays":3}`, key...)
	want := `{"enabled":true,"kind":"soft","style":"modal","texts":{"title":"Stay in touch",` +
		`"message":"We'll let you know when there is something new. You can turn them off at any time.","accept":"Yes",` +
		`"dismiss":"Not now","iosHint":"To get notifications, tap Share and then Add to Home Screen."},` +
		`"translations":{"fr":{"title":"Restez informé","message":"","accept":"","dismiss":"","iosHint":""}},` +
		`"when":{"seconds":5,"pageViews":0,"scrollPercent":50},"include":["/blog*"],"exclude":["/blog/private*"],"dismissDays":3}`
	if r.status != 200 || string(r.body) != want {
		t.Fatalf("PUT: %d\n %s\nwant\n %s", r.status, r.body, want)
	}
	if r := h.do("GET", "/api/v1/prompt", "", key...); string(r.body) != want {
		t.Fatalf("GET after PUT: %s", r.body)
	}
	cfg = h.do("GET", "/api/v1/projects/"+h.site.ProjectID+"/config", "")
	if !strings.HasSuffix(string(cfg.body), `,"prompt":`+want+`}`) {
		t.Fatalf("config: %s", cfg.body)
	}
	// A PUT changes only what it names; translations given replace the
	// stored ones.
	r = h.do("PUT", "/api/v1/prompt", `{"kind":"bell"}`, key...)
	if r.status != 200 || string(r.body) != strings.Replace(want, `"kind":"soft"`, `"kind":"bell"`, 1) {
		t.Fatalf("PUT kind: %d %s", r.status, r.body)
	}
	r = h.do("PUT", "/api/v1/prompt", `{"kind":"soft","translations":{"de":{"title":"Bleib dran"}}}`, key...)
	want = strings.Replace(want, `"fr":{"title":"Restez informé"`, `"de":{"title":"Bleib dran"`, 1)
	if r.status != 200 || string(r.body) != want {
		t.Fatalf("PUT translations: %d\n %s\nwant\n %s", r.status, r.body, want)
	}

	// Refusals change nothing.
	before := h.dump.take(t)
	for _, c := range []struct {
		body, code string
	}{
		{`{"kind":"popup"}`, CodeInvalidPrompt},
		{`{"style":"wobble"}`, CodeInvalidPrompt},
		{`{"when":{"seconds":-1}}`, CodeInvalidPrompt},
		{`{"when":{"scrollPercent":101}}`, CodeInvalidPrompt},
		{`{"when":{"pageViews":101}}`, CodeInvalidPrompt},
		{`{"dismissDays":366}`, CodeInvalidPrompt},
		{`{"include":["blog"]}`, CodeInvalidPrompt},
		{`{"exclude":["/a b"]}`, CodeInvalidPrompt},
		{`{"translations":{"not a tag":{}}}`, CodeInvalidPrompt},
		{`{"texts":{"title":"` + strings.Repeat("x", 301) + `"}}`, CodeInvalidPrompt},
		{`{"texts":{"title":"a\u0007"}}`, CodeInvalidPrompt},
		{`{"colour":"red"}`, CodeUnknownField},
		{`{"texts":{"html":"<b>"}}`, CodeUnknownField},
		{`{"enabled":"yes"}`, CodeInvalidJSON},
		{`[`, CodeInvalidJSON},
	} {
		expectCode(t, h.do("PUT", "/api/v1/prompt", c.body, key...), 400, c.code)
	}
	if h.dump.take(t) != before {
		t.Fatal("a refused PUT changed the stores")
	}

	// Any key reads; settings:write changes; another website sees its own.
	send := h.key([]string{ScopeSend}, nil)
	if r := h.do("GET", "/api/v1/prompt", "", auth(send)...); r.status != 200 {
		t.Fatalf("GET with a send key: %d", r.status)
	}
	expectError(t, h.do("PUT", "/api/v1/prompt", `{}`, auth(send)...), 403, CodeInsufficientScope, `,"required":"settings:write"`)
	other := h.otherSite(t)
	if r := h.do("GET", "/api/v1/prompt", "", auth(other.APIKey)...); string(r.body) != defaultPromptJSON {
		t.Fatalf("the other website's prompt: %s", r.body)
	}
	expectCode(t, h.do("GET", "/api/v1/prompt", ""), 401, CodeNotAuthenticated)
}

func (h *harness) otherSite(t *testing.T) WebsiteCreated {
	t.Helper()
	other, err := CreateWebsite(context.Background(), h.st, NewWebsite{Name: "Other", URL: "https://other.example"}, testStart)
	if err != nil {
		t.Fatal(err)
	}
	return other
}

func TestPromptPings(t *testing.T) {
	h := newHarness(t)
	ping := func(body string) {
		t.Helper()
		if r := h.do("POST", "/api/v1/projects/"+h.site.ProjectID+"/pings/onsite", body); r.status != 204 {
			t.Fatalf("ping %s: %d %s", body, r.status, r.body)
		}
	}
	for range 4 {
		ping(`{"prompt":"soft","event":"impression"}`)
	}
	ping(`{"prompt":"soft","event":"accept"}`)
	ping(`{"prompt":"soft","event":"dismiss"}`)
	ping(`{"prompt":"bell","event":"impression"}`)
	// Unknown kinds, events and ids count nothing.
	ping(`{"prompt":"popup","event":"impression"}`)
	ping(`{"prompt":"soft","event":"click"}`)
	ping(`{"messageId":"00000000-0000-4000-8000-000000000000","event":"click"}`)
	ping(`{}`)
	expectCode(t, h.do("POST", "/api/v1/projects/00000000-0000-4000-8000-000000000000/pings/onsite", `{}`), 404, CodeNotFound)
	r := h.do("GET", "/api/v1/stats?from=2026-03-01&to=2026-03-01", "", auth(h.site.APIKey)...)
	want := `"prompts":[{"kind":"bell","impressions":1,"accepts":0,"dismissals":0,"rate":0},` +
		`{"kind":"soft","impressions":4,"accepts":1,"dismissals":1,"rate":0.25}]}`
	if r.status != 200 || !strings.HasSuffix(string(r.body), want) {
		t.Fatalf("stats: %d %s\nwant the suffix %s", r.status, r.body, want)
	}
}

func TestOnsiteRoutes(t *testing.T) {
	h := newHarness(t)
	key := auth(h.site.APIKey)
	r := h.do("POST", "/api/v1/onsite", `{"name":" Sale ","title":"Half off","text":"Today only","kind":"modal",`+
		`"buttons":[{"label":"Shop","action":"link","url":"https://shop.example/sale"},{"label":"Close","action":"close"}],`+
		`"targeting":{"include":["/shop*"],"devices":["desktop"],"subscribed":"no"},"frequency":"session"}`, key...)
	if r.status != 201 {
		t.Fatalf("POST: %d %s", r.status, r.body)
	}
	id := r.json(t)["id"].(string)
	want := fmt.Sprintf(`{"id":%q,"name":"Sale","status":"draft","kind":"modal","title":"Half off","text":"Today only","image":"",`+
		`"buttons":[{"label":"Shop","action":"link","url":"https://shop.example/sale"},{"label":"Close","action":"close"}],`+
		`"startAt":null,"endAt":null,"targeting":{"include":["/shop*"],"exclude":[],"devices":["desktop"],"subscribed":"no","segmentId":""},`+
		`"frequency":"session","stats":{"impressions":0,"clicks":0,"dismissals":0},`+
		`"created_at":"2026-03-01T12:00:00Z","updated_at":"2026-03-01T12:00:00Z"}`, id)
	if string(r.body) != want {
		t.Fatalf("POST:\n %s\nwant\n %s", r.body, want)
	}
	if r := h.do("GET", "/api/v1/onsite/"+id, "", key...); r.status != 200 || string(r.body) != want {
		t.Fatalf("GET: %d %s", r.status, r.body)
	}
	if r := h.do("GET", "/api/v1/onsite", "", key...); r.status != 200 || string(r.body) != `{"messages":[`+want+`]}` {
		t.Fatalf("list: %d %s", r.status, r.body)
	}
	h.clock.Add(time.Minute)
	r = h.do("PUT", "/api/v1/onsite/"+id, `{"status":"active"}`, key...)
	want = strings.Replace(strings.Replace(want, `"status":"draft"`, `"status":"active"`, 1),
		`"updated_at":"2026-03-01T12:00:00Z"`, `"updated_at":"2026-03-01T12:01:00Z"`, 1)
	if r.status != 200 || string(r.body) != want {
		t.Fatalf("PUT: %d\n %s\nwant\n %s", r.status, r.body, want)
	}

	// Refusals.
	before := h.dump.take(t)
	for _, c := range []struct {
		method, path, body, code string
		status                   int
	}{
		{"POST", "/api/v1/onsite", `{"title":"x"}`, "name_required", 400},
		{"POST", "/api/v1/onsite", `{"name":"x"}`, CodeInvalidOnsiteMessage, 400},
		{"POST", "/api/v1/onsite", `{"name":"x","title":"t","kind":"popup"}`, CodeInvalidOnsiteMessage, 400},
		{"POST", "/api/v1/onsite", `{"name":"x","title":"t","image":"http://shop.example/a.png"}`, CodeInvalidOnsiteMessage, 400},
		{"POST", "/api/v1/onsite", `{"name":"x","title":"t","buttons":[{"label":"a","action":"close"},{"label":"b","action":"close"},{"label":"c","action":"close"}]}`, CodeInvalidOnsiteMessage, 400},
		{"POST", "/api/v1/onsite", `{"name":"x","title":"t","buttons":[{"label":"a","action":"link","url":"javascript:alert(1)"}]}`, CodeInvalidOnsiteMessage, 400},
		{"POST", "/api/v1/onsite", `{"name":"x","title":"t","buttons":[{"label":"a","action":"close","url":"https://x.example"}]}`, CodeInvalidOnsiteMessage, 400},
		{"POST", "/api/v1/onsite", `{"name":"x","title":"t","startAt":"2026-03-02T00:00:00Z","endAt":"2026-03-01T00:00:00Z"}`, CodeInvalidOnsiteMessage, 400},
		{"POST", "/api/v1/onsite", `{"name":"x","title":"t","targeting":{"devices":["fridge"]}}`, CodeInvalidOnsiteMessage, 400},
		{"POST", "/api/v1/onsite", `{"name":"x","title":"t","targeting":{"subscribed":"maybe"}}`, CodeInvalidOnsiteMessage, 400},
		{"POST", "/api/v1/onsite", `{"name":"x","title":"t","targeting":{"include":["nope"]}}`, CodeInvalidOnsiteMessage, 400},
		{"POST", "/api/v1/onsite", `{"name":"x","title":"t","frequency":"hourly"}`, CodeInvalidOnsiteMessage, 400},
		{"POST", "/api/v1/onsite", `{"name":"x","title":"t","targeting":{"segmentId":"00000000-0000-4000-8000-000000000000"}}`, CodeSegmentNotFound, 400},
		{"POST", "/api/v1/onsite", `{"name":"x","title":"t","html":"<b>"}`, CodeUnknownField, 400},
		{"POST", "/api/v1/onsite", `{"name":1}`, CodeInvalidJSON, 400},
		{"PUT", "/api/v1/onsite/" + id, `{"kind":"popup"}`, CodeInvalidOnsiteMessage, 400},
	} {
		expectCode(t, h.do(c.method, c.path, c.body, key...), c.status, c.code)
	}
	if h.dump.take(t) != before {
		t.Fatal("a refused change changed the stores")
	}

	// Scopes, other websites, unknown ids.
	send := h.key([]string{ScopeSend}, nil)
	for _, path := range []string{"/api/v1/onsite", "/api/v1/onsite/" + id} {
		if r := h.do("GET", path, "", auth(send)...); r.status != 200 {
			t.Fatalf("GET %s with a send key: %d", path, r.status)
		}
	}
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/api/v1/onsite", `{"name":"x","title":"t"}`},
		{"PUT", "/api/v1/onsite/" + id, `{}`},
		{"DELETE", "/api/v1/onsite/" + id, ""},
	} {
		expectError(t, h.do(c.method, c.path, c.body, auth(send)...), 403, CodeInsufficientScope, `,"required":"settings:write"`)
	}
	other := h.otherSite(t)
	for _, c := range []struct{ method, path, body, key string }{
		{"GET", "/api/v1/onsite/" + id, "", other.APIKey},
		{"PUT", "/api/v1/onsite/" + id, `{}`, other.APIKey},
		{"DELETE", "/api/v1/onsite/" + id, "", other.APIKey},
		{"GET", "/api/v1/onsite/00000000-0000-4000-8000-000000000000", "", h.site.APIKey},
		{"PUT", "/api/v1/onsite/nope", `{}`, h.site.APIKey},
	} {
		expectCode(t, h.do(c.method, c.path, c.body, auth(c.key)...), 404, CodeNotFound)
	}
	if r := h.do("GET", "/api/v1/onsite", "", auth(other.APIKey)...); string(r.body) != `{"messages":[]}` {
		t.Fatalf("the other website's list: %s", r.body)
	}

	// The SDK: what applies to the page view, and its counts.
	base := "/api/v1/projects/" + h.site.ProjectID
	desktop := []string{"User-Agent", "Mozilla/5.0 (X11; Linux x86_64) Chrome/130.0"}
	sdkWant := fmt.Sprintf(`{"messages":[{"id":%q,"kind":"modal","title":"Half off","text":"Today only","image":"",`+
		`"buttons":[{"label":"Shop","action":"link","url":"https://shop.example/sale"},{"label":"Close","action":"close"}],"frequency":"session"}]}`, id)
	for _, c := range []struct {
		query   string
		headers []string
		want    string
	}{
		{"?url=https%3A%2F%2Fshop.example%2Fshop%2Fa", desktop, sdkWant},
		{"?url=https%3A%2F%2Fshop.example%2Fblog", desktop, `{"messages":[]}`},
		{"?url=https%3A%2F%2Fshop.example%2Fshop&subscribed=1", desktop, `{"messages":[]}`},
		{"?url=https%3A%2F%2Fshop.example%2Fshop", []string{"User-Agent", "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0)"}, `{"messages":[]}`},
	} {
		r := h.do("GET", base+"/onsite"+c.query, "", c.headers...)
		if r.status != 200 || string(r.body) != c.want || r.header["Cache-Control"] != "private, max-age=60" {
			t.Fatalf("SDK %s: %d %s %v\nwant %s", c.query, r.status, r.body, r.header["Cache-Control"], c.want)
		}
	}
	for _, ev := range []string{"impression", "impression", "click", "dismiss", "accept"} {
		if r := h.do("POST", base+"/pings/onsite", `{"messageId":"`+strings.ToUpper(id)+`","event":"`+ev+`"}`); r.status != 204 {
			t.Fatalf("ping: %d %s", r.status, r.body)
		}
	}
	// Another website's project counts nothing on this message.
	h.do("POST", "/api/v1/projects/"+other.ProjectID+"/pings/onsite", `{"messageId":"`+id+`","event":"click"}`)
	got := h.do("GET", "/api/v1/onsite/"+id, "", key...)
	if !strings.Contains(string(got.body), `"stats":{"impressions":2,"clicks":1,"dismissals":1}`) {
		t.Fatalf("counts: %s", got.body)
	}

	r = h.do("DELETE", "/api/v1/onsite/"+id, "", key...)
	if r.status != 200 || string(r.body) != `{"ok":true}` {
		t.Fatalf("DELETE: %d %s", r.status, r.body)
	}
	expectCode(t, h.do("DELETE", "/api/v1/onsite/"+id, "", key...), 404, CodeNotFound)
	if r := h.do("GET", "/api/v1/onsite", "", key...); string(r.body) != `{"messages":[]}` {
		t.Fatalf("list after delete: %s", r.body)
	}
}

func TestOnsiteSegmentAndSchedule(t *testing.T) {
	h := newHarness(t)
	key := auth(h.site.APIKey)
	seg := h.do("POST", "/api/v1/segments", `{"name":"French","filters":{"rules":[{"field":"language","value":"fr"}]}}`, key...)
	if seg.status != 201 {
		t.Fatalf("segment: %d %s", seg.status, seg.body)
	}
	segID := seg.json(t)["id"].(string)
	r := h.do("POST", "/api/v1/onsite", `{"name":"fr","title":"Bonjour","status":"active","targeting":{"segmentId":"`+segID+`"}}`, key...)
	if r.status != 201 {
		t.Fatalf("POST: %d %s", r.status, r.body)
	}
	id := r.json(t)["id"].(string)
	base := "/api/v1/projects/" + h.site.ProjectID
	sub := func(endpoint, lang string) string {
		r := h.do("POST", base+"/subscriptions", subscribeBody(t, endpoint, `,"language":"`+lang+`"`))
		if r.status != 201 {
			t.Fatalf("subscribe: %d %s", r.status, r.body)
		}
		return r.json(t)["subscriberId"].(string)
	}
	fr, en := sub("https://fcm.googleapis.com/fcm/send/fr", "fr"), sub("https://fcm.googleapis.com/fcm/send/en", "en")
	ask := func(q string) string {
		return string(h.do("GET", base+"/onsite?url=https%3A%2F%2Fshop.example%2F"+q, "").body)
	}
	if got := ask("&subscribed=1&subscriberId=" + fr); !strings.Contains(got, id) {
		t.Fatalf("French subscriber: %s", got)
	}
	for _, q := range []string{"&subscribed=1&subscriberId=" + en, "", "&subscribed=1", "&subscribed=1&subscriberId=00000000-0000-4000-8000-000000000000"} {
		if got := ask(q); got != `{"messages":[]}` {
			t.Fatalf("%s: %s", q, got)
		}
	}

	// A message outside its start and end shows nowhere.
	r = h.do("POST", "/api/v1/onsite", `{"name":"later","title":"Soon","status":"active","startAt":"2026-03-02T00:00:00Z","endAt":"2026-03-03T00:00:00Z"}`, key...)
	later := r.json(t)["id"].(string)
	if got := ask(""); strings.Contains(got, later) {
		t.Fatalf("before its start: %s", got)
	}
	h.clock.Add(24 * time.Hour)
	if got := ask(""); !strings.Contains(got, later) {
		t.Fatalf("within: %s", got)
	}
	h.clock.Add(24 * time.Hour)
	if got := ask(""); strings.Contains(got, later) {
		t.Fatalf("after its end: %s", got)
	}
}

func TestWelcomeRoutes(t *testing.T) {
	h := newHarness(t)
	key := auth(h.site.APIKey)
	if r := h.do("GET", "/api/v1/welcome", "", key...); r.status != 200 || string(r.body) != `{"enabled":false,"delaySeconds":0,"templateId":null}` {
		t.Fatalf("GET default: %d %s", r.status, r.body)
	}
	want := `{"enabled":true,"delaySeconds":60,"templateId":null,"title":"Welcome!","body":"Thanks for subscribing","url":"https://shop.example/new"}`
	r := h.do("PUT", "/api/v1/welcome", `{"enabled":true,"delaySeconds":60,"title":"Welcome!","body":"Thanks for subscribing","url":"https://shop.example/new"}`, key...)
	if r.status != 200 || string(r.body) != want {
		t.Fatalf("PUT: %d\n %s\nwant\n %s", r.status, r.body, want)
	}
	// enabled alone keeps the content.
	r = h.do("PUT", "/api/v1/welcome", `{"enabled":false}`, key...)
	if r.status != 200 || string(r.body) != strings.Replace(want, `"enabled":true`, `"enabled":false`, 1) {
		t.Fatalf("PUT enabled: %d %s", r.status, r.body)
	}
	before := h.dump.take(t)
	for _, c := range []struct{ body, code string }{
		{`{"enabled":true,"delaySeconds":-1}`, CodeInvalidWelcome},
		{`{"delaySeconds":86401}`, CodeInvalidWelcome},
		{`{"enabled":true,"templateId":"welcome-template"}`, CodeInvalidWelcome},
		{`{"enabled":true,"title":"x","segmentId":"00000000-0000-4000-8000-000000000000"}`, CodeInvalidWelcome},
		{`{"enabled":true,"title":"x","sendAt":"2026-03-02T00:00:00Z"}`, CodeInvalidWelcome},
		{`{"enabled":true,"body":"no title"}`, CodeTitleRequired},
		{`{"enabled":true,"title":"x","colour":"red"}`, CodeUnknownField},
		{`{"enabled":"yes"}`, CodeInvalidJSON},
		{`{"title":7}`, CodeInvalidJSON},
		{`[`, CodeInvalidJSON},
	} {
		r := h.do("PUT", "/api/v1/welcome", c.body, key...)
		expectCode(t, r, 400, c.code)
	}
	if h.dump.take(t) != before {
		t.Fatal("a refused PUT changed the stores")
	}
	r = h.do("PUT", "/api/v1/welcome", `{"templateId":"x"}`, key...)
	if !strings.Contains(string(r.body), "templates are not available on this server") {
		t.Fatalf("templateId without templates: %s", r.body)
	}
	send := h.key([]string{ScopeSend}, nil)
	if r := h.do("GET", "/api/v1/welcome", "", auth(send)...); r.status != 200 {
		t.Fatalf("GET with a send key: %d", r.status)
	}
	expectError(t, h.do("PUT", "/api/v1/welcome", `{}`, auth(send)...), 403, CodeInsufficientScope, `,"required":"settings:write"`)
	other := h.otherSite(t)
	if r := h.do("GET", "/api/v1/welcome", "", auth(other.APIKey)...); string(r.body) != `{"enabled":false,"delaySeconds":0,"templateId":null}` {
		t.Fatalf("the other website's welcome: %s", r.body)
	}
}

// fakeTemplates fills a welcome from template tplID (a title and a body)
// or untitledID (a body: the title is left to the send).
type fakeTemplates struct{}

const (
	tplID      = "0b2c6c0e-6d2a-4f55-9a1c-2f0c4c7f6e01"
	untitledID = "0b2c6c0e-6d2a-4f55-9a1c-2f0c4c7f6e02"
)

func (fakeTemplates) Apply(_ context.Context, _, id string, req *notification.Request) error {
	title, body := "From the template", "Hello"
	switch id {
	case tplID:
		req.Title, req.Body = &title, &body
	case untitledID:
		req.Body = &body
	default:
		return fmt.Errorf("template %q: %w", id, store.ErrNotFound)
	}
	return nil
}

func TestWelcomeTemplate(t *testing.T) {
	h := newHarness(t, func(c *testConfig) { c.Templates = fakeTemplates{} })
	key := auth(h.site.APIKey)
	expectError(t, h.do("PUT", "/api/v1/welcome", `{"enabled":true,"templateId":"nope"}`, key...), 400, CodeTemplateNotFound,
		`,"message":"templateId names no template of this website"`)
	expectError(t, h.do("PUT", "/api/v1/welcome", `{"enabled":true,"templateId":"`+untitledID+`"}`, key...), 400, CodeTitleRequired,
		`,"message":"a title is required to send"`)
	// Stored canonical (lower case), as TemplateUses looks it up.
	r := h.do("PUT", "/api/v1/welcome", `{"enabled":true,"templateId":"`+strings.ToUpper(tplID)+`"}`, key...)
	if r.status != 200 || string(r.body) != `{"enabled":true,"delaySeconds":0,"templateId":"`+tplID+`"}` {
		t.Fatalf("PUT template: %d %s", r.status, r.body)
	}
	base := "/api/v1/projects/" + h.site.ProjectID
	if r := h.do("POST", base+"/subscriptions", subscribeBody(t, "https://fcm.googleapis.com/fcm/send/t", "")); r.status != 201 {
		t.Fatalf("subscribe: %d", r.status)
	}
	h.fireWelcomes(t, fakeTemplates{})
	list := h.do("GET", "/api/v1/notifications", "", key...)
	if !strings.Contains(string(list.body), `"title":"From the template"`) || !strings.Contains(string(list.body), `"welcome":true`) {
		t.Fatalf("list: %s", list.body)
	}
}

// TestWelcomeOneBrowser: the welcome goes to the browser that subscribed
// and nobody else, through the real fan-out: a known person's new browser
// gets it and the browsers the person had do not; the first browser
// subscribing again gets none; a browser that logs in before its welcome
// gets it alone; one gone before the send gets nothing.
func TestWelcomeOneBrowser(t *testing.T) {
	h := newHarness(t)
	key := auth(h.site.APIKey)
	base := "/api/v1/projects/" + h.site.ProjectID
	if r := h.do("PUT", "/api/v1/welcome", `{"enabled":true,"delaySeconds":60,"title":"Welcome!"}`, key...); r.status != 200 {
		t.Fatalf("PUT: %d %s", r.status, r.body)
	}
	f := h.fanout(t)
	subscribe := func(endpoint, extra string, want int) browser {
		t.Helper()
		r := h.do("POST", base+"/subscriptions", subscribeBody(t, endpoint, extra))
		if r.status != want {
			t.Fatalf("subscribe %s: %d %s", endpoint, r.status, r.body)
		}
		return decode[browser](t, r)
	}
	unsubscribe := func(endpoint string) {
		t.Helper()
		if r := h.do("DELETE", base+"/subscriptions", `{"endpoint":"`+endpoint+`"}`); r.status != 200 {
			t.Fatalf("unsubscribe: %d %s", r.status, r.body)
		}
	}
	// fire fires the due timers a minute on and returns the welcome
	// stored, if any.
	fire := func(timers int) *store.Notification {
		t.Helper()
		before := h.welcomeIDs(t)
		h.clock.Add(time.Minute)
		if n := h.fireWelcomes(t, nil); n != timers {
			t.Fatalf("%d timers fired, want %d", n, timers)
		}
		after := h.welcomeIDs(t)
		switch len(after) - len(before) {
		case 0:
			return nil
		case 1:
			n, err := h.st.Notification(context.Background(), h.site.WebsiteID, after[0])
			if err != nil {
				t.Fatal(err)
			}
			return &n
		}
		t.Fatalf("welcomes %v after %v", after, before)
		return nil
	}
	expectPushed := func(n *store.Notification, want ...string) {
		t.Helper()
		if n == nil {
			t.Fatal("no welcome stored")
		}
		got := f.send(t, *n)
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("welcome %s pushed to %v, want %v", n.ID, got, want)
		}
		sent, err := h.st.Notification(context.Background(), h.site.WebsiteID, n.ID)
		if err != nil || sent.Status != store.StatusSent || sent.Recipients != int64(len(want)) {
			t.Fatalf("welcome after its send: %s, %d recipients, %v; want sent to %d", sent.Status, sent.Recipients, err, len(want))
		}
	}

	// Ada's first browser gets its welcome.
	phone := "https://fcm.googleapis.com/fcm/send/ada-phone"
	ada1 := subscribe(phone, `,"externalId":"ada"`, http.StatusCreated)
	expectPushed(fire(1), ada1.EndpointID)

	// Her second browser gets its own, and her first none of it.
	ada2 := subscribe("https://fcm.googleapis.com/fcm/send/ada-laptop", `,"externalId":"ada"`, http.StatusCreated)
	if ada2.SubscriberID != ada1.SubscriberID {
		t.Fatalf("the second browser is person %s, not %s", ada2.SubscriberID, ada1.SubscriberID)
	}
	n := fire(1)
	d := h.do("GET", "/api/v1/notifications/"+n.ID, "", key...)
	if !strings.Contains(string(d.body), `"target":{"endpointId":"`+ada2.EndpointID+`"},"targetSummary":"Browser `+ada2.EndpointID+`"`) {
		t.Fatalf("detail of the second welcome: %d %s", d.status, d.body)
	}
	expectPushed(n, ada2.EndpointID)

	// Her first browser turns notifications off and on again: no timer,
	// no welcome.
	unsubscribe(phone)
	if again := subscribe(phone, `,"externalId":"ada"`, http.StatusCreated); again.SubscriberID != ada1.SubscriberID {
		t.Fatalf("the phone came back as person %s", again.SubscriberID)
	}
	if n := fire(0); n != nil {
		t.Fatalf("a welcome for a re-subscription: %+v", n)
	}

	// A new browser that logs in as Ada before its welcome: it alone
	// gets it, as Ada's.
	tablet := "https://fcm.googleapis.com/fcm/send/ada-tablet"
	anon := subscribe(tablet, "", http.StatusCreated)
	if in := subscribe(tablet, `,"externalId":"ada"`, http.StatusOK); in.EndpointID != anon.EndpointID || in.SubscriberID != ada1.SubscriberID {
		t.Fatalf("login: %+v, want endpoint %s of %s", in, anon.EndpointID, ada1.SubscriberID)
	}
	expectPushed(fire(1), anon.EndpointID)

	// A browser gone between its welcome and the send gets nothing, nor
	// does anybody else.
	gone := "https://fcm.googleapis.com/fcm/send/ada-old"
	subscribe(gone, `,"externalId":"ada"`, http.StatusCreated)
	n = fire(1)
	unsubscribe(gone)
	expectPushed(n)
}

// welcomeIDs lists the ids of the website's welcome sends, newest first.
func (h *harness) welcomeIDs(t *testing.T) []string {
	t.Helper()
	var out struct {
		Items []struct {
			ID      string `json:"id"`
			Welcome bool   `json:"welcome"`
		} `json:"items"`
	}
	if err := json.Unmarshal(h.do("GET", "/api/v1/notifications", "", auth(h.site.APIKey)...).body, &out); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, n := range out.Items {
		if n.Welcome {
			ids = append(ids, n.ID)
		}
	}
	return ids
}

// fireWelcomes fires every due welcome timer at the harness clock, as
// the engine's claim loop does, and returns how many it claimed.
func (h *harness) fireWelcomes(t *testing.T, tmpl onsite.Templates) int {
	t.Helper()
	ctx := context.Background()
	timers, err := h.st.ClaimTimers(ctx, h.clock.Now(), time.Minute, 100)
	if err != nil {
		t.Fatal(err)
	}
	e := onsite.NewWelcomeEngine(h.st, nil, tmpl, nil)
	for _, tm := range timers {
		if tm.Kind != store.TimerWelcome {
			t.Fatalf("timer of kind %q", tm.Kind)
		}
		if err := e.FireTimer(ctx, tm, h.clock.Now()); err != nil {
			t.Fatal(err)
		}
	}
	return len(timers)
}

func TestWelcomeOncePerEndpoint(t *testing.T) {
	h := newHarness(t)
	key := auth(h.site.APIKey)
	base := "/api/v1/projects/" + h.site.ProjectID
	endpoint := "https://fcm.googleapis.com/fcm/send/welcome-1"
	subscribe := func(endpoint string, want int) {
		t.Helper()
		if r := h.do("POST", base+"/subscriptions", subscribeBody(t, endpoint, "")); r.status != want {
			t.Fatalf("subscribe %s: %d %s", endpoint, r.status, r.body)
		}
	}
	unsubscribe := func(endpoint string) {
		t.Helper()
		if r := h.do("DELETE", base+"/subscriptions", `{"endpoint":"`+endpoint+`"}`); r.status != 200 {
			t.Fatalf("unsubscribe: %d %s", r.status, r.body)
		}
	}
	welcomes := func() []map[string]any {
		t.Helper()
		var out struct {
			Notifications []map[string]any `json:"items"`
		}
		if err := json.Unmarshal(h.do("GET", "/api/v1/notifications", "", key...).body, &out); err != nil {
			t.Fatal(err)
		}
		var ws []map[string]any
		for _, n := range out.Notifications {
			if n["welcome"] == true {
				ws = append(ws, n)
			}
		}
		return ws
	}

	// Off: a new browser gets no timer.
	subscribe("https://fcm.googleapis.com/fcm/send/before", http.StatusCreated)
	if n := h.fireWelcomes(t, nil); n != 0 {
		t.Fatalf("%d timers while off", n)
	}
	if r := h.do("PUT", "/api/v1/welcome", `{"enabled":true,"delaySeconds":120,"title":"Welcome!"}`, key...); r.status != 200 {
		t.Fatalf("PUT: %d %s", r.status, r.body)
	}
	subscribe(endpoint, http.StatusCreated)
	subscribe(endpoint, http.StatusOK) // the SDK registers on every page view
	if n := h.fireWelcomes(t, nil); n != 0 {
		t.Fatalf("%d timers fired before the delay", n)
	}
	h.clock.Add(2 * time.Minute)
	if n := h.fireWelcomes(t, nil); n != 1 {
		t.Fatalf("%d timers at the delay, want 1", n)
	}
	ws := welcomes()
	if len(ws) != 1 || ws[0]["title"] != "Welcome!" || ws[0]["automation"] != true || ws[0]["targetSummary"] == "All subscribers" {
		t.Fatalf("welcomes: %v", ws)
	}
	// The same endpoint unsubscribes and subscribes again, twice: no
	// second welcome, not even a timer.
	for range 2 {
		unsubscribe(endpoint)
		subscribe(endpoint, http.StatusCreated)
		h.clock.Add(3 * time.Minute)
		if n := h.fireWelcomes(t, nil); n != 0 {
			t.Fatalf("%d timers for a re-subscription", n)
		}
	}
	// Re-subscribed before its welcome fired: two timers of one URL, one
	// welcome.
	second := "https://fcm.googleapis.com/fcm/send/welcome-2"
	subscribe(second, http.StatusCreated)
	unsubscribe(second)
	subscribe(second, http.StatusCreated)
	h.clock.Add(3 * time.Minute)
	if n := h.fireWelcomes(t, nil); n != 2 {
		t.Fatalf("%d timers, want 2", n)
	}
	if ws := welcomes(); len(ws) != 2 {
		t.Fatalf("%d welcomes, want 2: %v", len(ws), ws)
	}
	// A timer fired twice (a lease ran out on a killed node) sends once.
	third := "https://fcm.googleapis.com/fcm/send/welcome-3"
	subscribe(third, http.StatusCreated)
	h.clock.Add(3 * time.Minute)
	timers, err := h.st.ClaimTimers(context.Background(), h.clock.Now(), time.Minute, 10)
	if err != nil || len(timers) != 1 {
		t.Fatalf("claim: %v %v", timers, err)
	}
	e := onsite.NewWelcomeEngine(h.st, nil, nil, nil)
	for range 2 {
		if err := e.FireTimer(context.Background(), timers[0], h.clock.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if ws := welcomes(); len(ws) != 3 {
		t.Fatalf("%d welcomes, want 3", len(ws))
	}
}
