package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/store"
)

// Templates (issue 35, part 1): the routes, their refusals, a send from a
// template with its overrides, and automations and journeys that name
// one, with the harness clock.

// createTemplate posts a template with the harness key and returns its id.
func (h *harness) createTemplate(t *testing.T, body string) string {
	t.Helper()
	r := h.do("POST", "/api/v1/templates", body, auth(h.site.APIKey)...)
	if r.status != http.StatusCreated {
		t.Fatalf("POST /templates %s: %d %s", body, r.status, r.body)
	}
	return r.json(t)["id"].(string)
}

const houseTemplate = `{"name":" House style ","title":"Hello {first_name|there}","body":"Fresh from the blog",
	"url":"https://shop.example/blog?u={external_id|x}","icon":"https://shop.example/icon.png",
	"actions":[{"title":"Read","url":"https://shop.example/read"}],"ttl":3600,"tag":"blog",
	"requireInteraction":true,"translations":{"FR":{"title":"Bonjour","body":"Tout frais"}}}`

func TestTemplateRoutes(t *testing.T) {
	h := newHarness(t)
	house := h.createTemplate(t, houseTemplate)
	if !isUUID(house) {
		t.Fatalf("id %q", house)
	}
	wantHouse := fmt.Sprintf(`{"id":%q,"name":"House style","title":"Hello {first_name|there}","body":"Fresh from the blog",`+
		`"url":"https://shop.example/blog?u={external_id|x}","icon":"https://shop.example/icon.png",`+
		`"actions":[{"title":"Read","url":"https://shop.example/read"}],"ttl":3600,"tag":"blog","requireInteraction":true,`+
		`"translations":{"fr":{"title":"Bonjour","body":"Tout frais"}},`+
		`"created_at":"2026-03-01T12:00:00Z","updated_at":"2026-03-01T12:00:00Z"}`, house)
	r := h.do("GET", "/api/v1/templates/"+house, "", auth(h.site.APIKey)...)
	if r.status != 200 || string(r.body) != wantHouse {
		t.Fatalf("GET: %d\n %s\nwant\n %s", r.status, r.body, wantHouse)
	}

	// A template of a name alone; blanks are left out; the list is
	// newest first.
	h.clock.Add(time.Minute)
	r = h.do("POST", "/api/v1/templates", `{"name":"Bare","title":"","ttl":99999999}`, auth(h.site.APIKey)...)
	bare := r.json(t)["id"].(string)
	wantBare := fmt.Sprintf(`{"id":%q,"name":"Bare","ttl":2419200,"created_at":"2026-03-01T12:01:00Z","updated_at":"2026-03-01T12:01:00Z"}`, bare)
	if r.status != 201 || string(r.body) != wantBare {
		t.Fatalf("POST bare: %d\n %s\nwant\n %s", r.status, r.body, wantBare)
	}
	r = h.do("GET", "/api/v1/templates", "", auth(h.site.APIKey)...)
	if want := `{"templates":[` + wantBare + `,` + wantHouse + `]}`; r.status != 200 || string(r.body) != want {
		t.Fatalf("list: %d\n %s\nwant\n %s", r.status, r.body, want)
	}

	// PUT: each member given replaces the stored one, null clears one,
	// the rest stay.
	h.clock.Add(time.Minute)
	r = h.do("PUT", "/api/v1/templates/"+house, `{"name":"House","body":"New body","actions":null,"translations":null,"requireInteraction":null}`, auth(h.site.APIKey)...)
	wantPut := fmt.Sprintf(`{"id":%q,"name":"House","title":"Hello {first_name|there}","body":"New body",`+
		`"url":"https://shop.example/blog?u={external_id|x}","icon":"https://shop.example/icon.png","ttl":3600,"tag":"blog",`+
		`"created_at":"2026-03-01T12:00:00Z","updated_at":"2026-03-01T12:02:00Z"}`, house)
	if r.status != 200 || string(r.body) != wantPut {
		t.Fatalf("PUT: %d\n %s\nwant\n %s", r.status, r.body, wantPut)
	}

	// Reads with any key; changes need settings:write.
	send := h.key([]string{ScopeSend}, nil)
	for _, path := range []string{"/api/v1/templates", "/api/v1/templates/" + house} {
		if r := h.do("GET", path, "", auth(send)...); r.status != 200 {
			t.Fatalf("GET %s with a send key: %d %s", path, r.status, r.body)
		}
	}
	before := h.dump.take(t)
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/api/v1/templates", `{"name":"x"}`},
		{"PUT", "/api/v1/templates/" + house, `{"name":"x"}`},
		{"DELETE", "/api/v1/templates/" + house, ""},
	} {
		expectError(t, h.do(c.method, c.path, c.body, auth(send)...), 403, CodeInsufficientScope, `,"required":"settings:write"`)
	}
	if h.dump.take(t) != before {
		t.Fatal("a refused change changed the stores")
	}

	// Another website's id, an unknown one, and no UUID: 404 not_found.
	other, err := CreateWebsite(context.Background(), h.st, NewWebsite{Name: "Other", URL: "https://other.example"}, testStart)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ method, path, body, key string }{
		{"GET", "/api/v1/templates/" + house, "", other.APIKey},
		{"PUT", "/api/v1/templates/" + house, `{"name":"x"}`, other.APIKey},
		{"DELETE", "/api/v1/templates/" + house, "", other.APIKey},
		{"GET", "/api/v1/templates/00000000-0000-4000-8000-000000000000", "", h.site.APIKey},
		{"PUT", "/api/v1/templates/nope", `{"name":"x"}`, h.site.APIKey},
		{"DELETE", "/api/v1/templates/nope", "", h.site.APIKey},
	} {
		expectError(t, h.do(c.method, c.path, c.body, auth(c.key)...), 404, CodeNotFound, "")
	}
	if r := h.do("GET", "/api/v1/templates", "", auth(other.APIKey)...); string(r.body) != `{"templates":[]}` {
		t.Fatalf("the other website's list: %s", r.body)
	}

	r = h.do("DELETE", "/api/v1/templates/"+bare, "", auth(h.site.APIKey)...)
	if r.status != 200 || string(r.body) != `{"ok":true}` {
		t.Fatalf("DELETE: %d %s", r.status, r.body)
	}
	expectError(t, h.do("GET", "/api/v1/templates/"+bare, "", auth(h.site.APIKey)...), 404, CodeNotFound, "")
}

// Every refusal of the template routes, with its exact code and message;
// nothing is stored.
func TestTemplateRefusals(t *testing.T) {
	h := newHarness(t)
	id := h.createTemplate(t, `{"name":"Base","title":"Hi"}`)
	before := h.dump.take(t)
	long := strings.Repeat("é", 101)
	huge := strings.Repeat("x", 5000)
	for _, c := range []struct {
		method, body string
		status       int
		code, msg    string
	}{
		{"POST", `{"title":"Hi"}`, 400, CodeNameRequired, "a name is required"},
		{"POST", `{"name":"  "}`, 400, CodeNameRequired, "a name is required"},
		{"POST", `{"name":"` + long + `"}`, 400, CodeInvalidName, "a name is at most 100 characters"},
		{"POST", `{"name":"x","segmentId":"abc"}`, 400, CodeUnknownField, `unknown field \"segmentId\"`},
		{"POST", `{"name":"x","templateId":"abc"}`, 400, CodeUnknownField, `unknown field \"templateId\"`},
		{"POST", `{"name":"x","title":5}`, 400, CodeInvalidJSON, ""},
		{"POST", `{"name":"x"`, 400, CodeInvalidJSON, ""},
		{"POST", `{"name":"x","url":"javascript:alert(1)"}`, 400, CodeInvalidURL, "url must be an absolute http(s) link"},
		{"POST", `{"name":"x","url":"{page|nolink}"}`, 400, CodeInvalidURL, "url must be an absolute http(s) link"},
		{"POST", `{"name":"x","icon":"/icon.png"}`, 400, CodeInvalidURL, "icon must be an absolute http(s) link"},
		{"POST", `{"name":"x","actions":[{"title":"a","url":"ftp://x"}]}`, 400, CodeInvalidURL, "actions[0].url must be an absolute http(s) link"},
		{"POST", `{"name":"x","actions":[{"title":"a"},{"title":"b"},{"title":"c"}]}`, 400, CodeInvalidActions, "at most 2 actions"},
		{"POST", `{"name":"x","actions":[{"title":""}]}`, 400, CodeInvalidActions, "actions[0].title is required"},
		{"POST", `{"name":"x","translations":{"fra":{"title":"a","body":"b"}}}`, 400, CodeInvalidTranslations, `translation key \"fra\" is not a two-letter language`},
		{"POST", `{"name":"x","title":"` + huge + `"}`, 413, CodePayloadTooLarge, ""},
		{"PUT", `{}`, 400, CodeNothingToUpdate, "name or a content member is required"},
		{"PUT", `{"name":null}`, 400, CodeNameRequired, "a name is required"},
		{"PUT", `{"filters":null}`, 400, CodeUnknownField, `unknown field \"filters\"`},
		{"PUT", `{"badge":"nope"}`, 400, CodeInvalidURL, "badge must be an absolute http(s) link"},
	} {
		path := "/api/v1/templates"
		if c.method == "PUT" {
			path += "/" + id
		}
		r := h.do(c.method, path, c.body, auth(h.site.APIKey)...)
		if c.msg == "" {
			expectCode(t, r, c.status, c.code)
			continue
		}
		expectError(t, r, c.status, c.code, `,"message":"`+c.msg+`"`)
	}
	if h.dump.take(t) != before {
		t.Fatal("a refused template changed the stores")
	}

	// A website keeps at most 500 templates.
	for i := range maxTemplates - 1 {
		if err := h.st.CreateTemplate(context.Background(), store.Template{ID: uuid.NewString(), WebsiteID: h.site.WebsiteID,
			Name: fmt.Sprint(i), Content: []byte(`{}`), CreatedAt: testStart, UpdatedAt: testStart}); err != nil {
			t.Fatal(err)
		}
	}
	expectError(t, h.do("POST", "/api/v1/templates", `{"name":"one too many"}`, auth(h.site.APIKey)...), 409, CodeTooManyTemplates,
		`,"message":"a website keeps at most 500 templates; delete some"`)
}

// POST /notifications {templateId}: the request's members override the
// template's, the stored notification keeps the resolved content, and a
// change to the template later changes no past send.
func TestSendFromTemplate(t *testing.T) {
	h := newHarness(t)
	house := h.createTemplate(t, houseTemplate)
	r := h.do("POST", "/api/v1/notifications", `{"templateId":"`+strings.ToUpper(house)+`","body":"Overridden","ttl":60}`, auth(h.site.APIKey)...)
	if r.status != 202 {
		t.Fatalf("send: %d %s", r.status, r.body)
	}
	sent := r.json(t)["notificationId"].(string)
	check := func(what string) {
		t.Helper()
		n, err := h.st.Notification(context.Background(), h.site.WebsiteID, sent)
		if err != nil {
			t.Fatal(err)
		}
		wantContent := `{"title":"Hello {first_name|there}","body":"Overridden","url":"https://shop.example/blog?u={external_id|x}",` +
			`"icon":"https://shop.example/icon.png","actions":[{"action":"btn1","title":"Read","url":"https://shop.example/read"}],` +
			`"requireInteraction":true,"tag":"blog","ttl":60,"translations":{"fr":{"title":"Bonjour","body":"Tout frais"}}}`
		if string(n.Content) != wantContent || n.Title != "Hello {first_name|there}" || n.Body != "Overridden" {
			t.Fatalf("%s: content\n %s\nwant\n %s", what, n.Content, wantContent)
		}
		var body map[string]any
		if err := json.Unmarshal(n.SendBody, &body); err != nil {
			t.Fatal(err)
		}
		if _, ok := body["templateId"]; ok || body["title"] != "Hello {first_name|there}" || body["body"] != "Overridden" {
			t.Fatalf("%s: send body %s: want the resolved content, no templateId", what, n.SendBody)
		}
	}
	check("sent")
	if d := h.detailOf(t, sent); d["title"] != "Hello {first_name|there}" || d["body"] != "Overridden" || d["tag"] != "blog" {
		t.Fatalf("detail %v", d)
	}
	h.clock.Add(time.Minute)
	if r := h.do("PUT", "/api/v1/templates/"+house, `{"title":"Changed","body":"Changed"}`, auth(h.site.APIKey)...); r.status != 200 {
		t.Fatalf("PUT: %d %s", r.status, r.body)
	}
	check("after the template changed")

	// A draft keeps the resolved content too; a test send takes one.
	r = h.do("POST", "/api/v1/notifications", `{"templateId":"`+house+`","draft":true}`, auth(h.site.APIKey)...)
	if r.status != 201 {
		t.Fatalf("draft: %d %s", r.status, r.body)
	}
	if d := h.detailOf(t, r.json(t)["notificationId"].(string)); d["title"] != "Changed" {
		t.Fatalf("draft detail %v", d)
	}

	// A test send takes one too, and goes to the test devices only.
	_, e := h.subscribeEndpoint(t, h.site.ProjectID, "https://fcm.googleapis.com/fcm/send/laptop", "")
	if r := h.do("POST", "/api/v1/test-devices", `{"endpointId":"`+e+`"}`, auth(h.site.APIKey)...); r.status != 201 {
		t.Fatalf("add: %d %s", r.status, r.body)
	}
	r = h.do("POST", "/api/v1/test-devices/send", `{"templateId":"`+house+`","title":"Test"}`, auth(h.site.APIKey)...)
	if r.status != 202 {
		t.Fatalf("test send: %d %s", r.status, r.body)
	}
	if d := h.detailOf(t, r.json(t)["notificationId"].(string)); d["title"] != "Test" || d["body"] != "Changed" || d["tag"] != "blog" {
		t.Fatalf("test send detail %v", d)
	}

	// A template of another website, an unknown one, no UUID: 400
	// template_not_found, and nothing is stored.
	other, err := CreateWebsite(context.Background(), h.st, NewWebsite{Name: "Other", URL: "https://other.example"}, testStart)
	if err != nil {
		t.Fatal(err)
	}
	before := h.dump.take(t)
	for _, c := range []struct{ key, id string }{
		{other.APIKey, house},
		{h.site.APIKey, "00000000-0000-4000-8000-000000000000"},
		{h.site.APIKey, "house"},
	} {
		expectError(t, h.do("POST", "/api/v1/notifications", `{"templateId":"`+c.id+`"}`, auth(c.key)...), 400, CodeTemplateNotFound,
			`,"message":"no template \"`+c.id+`\" on this website"`)
	}
	// A template without a title sends only with one.
	bare := h.createTemplate(t, `{"name":"Bare","body":"b"}`)
	before = h.dump.take(t)
	expectCode(t, h.do("POST", "/api/v1/notifications", `{"templateId":"`+bare+`"}`, auth(h.site.APIKey)...), 400, CodeTitleRequired)
	if h.dump.take(t) != before {
		t.Fatal("a refused send changed the stores")
	}
	if r := h.do("POST", "/api/v1/notifications", `{"templateId":"`+bare+`","title":"Given"}`, auth(h.site.APIKey)...); r.status != 202 {
		t.Fatalf("send with a title: %d %s", r.status, r.body)
	}
}

// Automation messages and journey send steps that name a template send
// its content as it is when they go out; deleting it while they name it
// answers 409 template_in_use, naming them.
func TestTemplateInAutomationsAndJourneys(t *testing.T) {
	h := newHarness(t)
	house := h.createTemplate(t, `{"name":"House","title":"From the template","body":"Template body"}`)

	// Saved with the template's content checked: a message without a
	// title of its own is valid; an unknown template is refused.
	expectError(t, h.do("POST", "/api/v1/automations", `{"name":"x","trigger":{"type":"subscribed"},"messages":[{"templateId":"nope"}]}`,
		auth(h.site.APIKey)...), 400, CodeTemplateNotFound, `,"message":"messages[0]: no template \"nope\" on this website"`)
	other, err := CreateWebsite(context.Background(), h.st, NewWebsite{Name: "Other", URL: "https://other.example"}, testStart)
	if err != nil {
		t.Fatal(err)
	}
	r := h.do("POST", "/api/v1/templates", `{"name":"Theirs","title":"Theirs"}`, auth(other.APIKey)...)
	theirs := r.json(t)["id"].(string)
	expectError(t, h.do("POST", "/api/v1/automations", `{"name":"x","trigger":{"type":"subscribed"},"messages":[{"templateId":"`+theirs+`"}]}`,
		auth(h.site.APIKey)...), 400, CodeTemplateNotFound, `,"message":"messages[0]: no template \"`+theirs+`\" on this website"`)
	bare := h.createTemplate(t, `{"name":"Bare","body":"no title"}`)
	expectError(t, h.do("POST", "/api/v1/automations", `{"name":"x","trigger":{"type":"subscribed"},"messages":[{"templateId":"`+bare+`"}]}`,
		auth(h.site.APIKey)...), 400, CodeTitleRequired, `,"message":"messages[0]: a title is required to send"`)
	unknown := uuid.NewString()
	expectError(t, h.do("POST", "/api/v1/journeys", `{"name":"x","entry":{"type":"subscribed"},"steps":[{"id":"s","type":"send","content":{"templateId":"`+unknown+`"}}]}`,
		auth(h.site.APIKey)...), 400, CodeTemplateNotFound, `,"message":"step \"s\": no template \"`+unknown+`\" on this website","step":"s"`)

	auto := h.createAutomation(t, `{"name":"Welcome","status":"active","trigger":{"type":"subscribed"},
		"messages":[{"templateId":"`+strings.ToUpper(house)+`","body":"Automation body"},{"delaySeconds":3600,"templateId":"`+house+`"}]}`)
	autoID := auto["id"].(string)
	if msgs := fmt.Sprint(auto["messages"]); msgs != fmt.Sprintf("[map[body:Automation body delaySeconds:0 templateId:%s] map[delaySeconds:3600 templateId:%s]]", house, house) {
		t.Fatalf("messages as stored: %s", msgs)
	}
	journey := h.createJourney(t, `{"name":"Onboarding","status":"active","entry":{"type":"subscribed"},"steps":[
		{"id":"hello","type":"send","content":{"templateId":"`+house+`","title":"Journey title"}}]}`)["id"].(string)

	h.subscribeAs(t, "https://fcm.googleapis.com/fcm/send/tpl1", "", uaDesktop)
	h.runJourneys(t) // the automations' timers and the journeys' in one claim loop
	if got := h.automationSends(t, autoID); fmt.Sprint(got) != "[From the template]" {
		t.Fatalf("automation sends %v", got)
	}
	if got := h.journeySends(t, journey); fmt.Sprint(got) != "[hello:Journey title]" {
		t.Fatalf("journey sends %v", got)
	}
	bodies := func() []string {
		list, err := h.st.ListNotifications(context.Background(), store.ListQuery{WebsiteID: h.site.WebsiteID, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for i := len(list) - 1; i >= 0; i-- {
			out = append(out, list[i].Title+"/"+list[i].Body)
		}
		return out
	}
	if got := fmt.Sprint(bodies()); got != "[From the template/Automation body Journey title/Template body]" {
		t.Fatalf("sends %s", got)
	}

	// The template changes: the next message sends the new content; the
	// past ones keep theirs.
	if r := h.do("PUT", "/api/v1/templates/"+house, `{"title":"New title","body":"New body"}`, auth(h.site.APIKey)...); r.status != 200 {
		t.Fatalf("PUT: %d %s", r.status, r.body)
	}
	h.clock.Add(time.Hour)
	h.runJourneys(t)
	if got := fmt.Sprint(bodies()); got != "[From the template/Automation body Journey title/Template body New title/New body]" {
		t.Fatalf("sends after the change %s", got)
	}

	// Deleting it is refused while they name it, naming them.
	before := h.dump.take(t)
	expectError(t, h.do("DELETE", "/api/v1/templates/"+house, "", auth(h.site.APIKey)...), 409, CodeTemplateInUse,
		fmt.Sprintf(`,"message":"the template is used by automation \"Welcome\", journey \"Onboarding\"; remove it from them first",`+
			`"usedBy":[{"kind":"automation","id":%q,"name":"Welcome"},{"kind":"journey","id":%q,"name":"Onboarding"}]`, autoID, journey))
	if h.dump.take(t) != before {
		t.Fatal("a refused delete changed the stores")
	}
	if r := h.do("DELETE", "/api/v1/automations/"+autoID, "", auth(h.site.APIKey)...); r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	expectError(t, h.do("DELETE", "/api/v1/templates/"+house, "", auth(h.site.APIKey)...), 409, CodeTemplateInUse,
		fmt.Sprintf(`,"message":"the template is used by journey \"Onboarding\"; remove it from them first",`+
			`"usedBy":[{"kind":"journey","id":%q,"name":"Onboarding"}]`, journey))
	if r := h.do("DELETE", "/api/v1/journeys/"+journey, "", auth(h.site.APIKey)...); r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if r := h.do("DELETE", "/api/v1/templates/"+house, "", auth(h.site.APIKey)...); r.status != 200 || string(r.body) != `{"ok":true}` {
		t.Fatalf("DELETE once unused: %d %s", r.status, r.body)
	}
}

// A template gone all the same (deleted between a save's check and the
// delete's) skips the messages and steps that name it: the rest of the
// run goes on, and the engine keeps firing.
func TestTemplateGoneSkips(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	tpl := h.createTemplate(t, `{"name":"House","title":"From the template"}`)
	autoID := h.createAutomation(t, `{"name":"Welcome","status":"active","trigger":{"type":"subscribed"},
		"messages":[{"templateId":"`+tpl+`"},{"delaySeconds":60,"title":"Own title"}]}`)["id"].(string)
	journey := h.createJourney(t, `{"name":"Onboarding","status":"active","entry":{"type":"subscribed"},"steps":[
		{"id":"hello","type":"send","content":{"templateId":"`+tpl+`"},"next":"after"},
		{"id":"after","type":"send","content":{"title":"After"}}]}`)["id"].(string)

	// The race: what names the template is hidden while it is deleted.
	a, err := h.st.Automation(ctx, h.site.WebsiteID, autoID)
	if err != nil {
		t.Fatal(err)
	}
	j, err := h.st.Journey(ctx, h.site.WebsiteID, journey)
	if err != nil {
		t.Fatal(err)
	}
	hidden := func(def []byte) []byte { return []byte(strings.ReplaceAll(string(def), tpl, uuid.NewString())) }
	a2, j2 := a, j
	a2.Definition, j2.Definition = hidden(a.Definition), hidden(j.Definition)
	if err := h.st.UpdateAutomation(ctx, a2); err != nil {
		t.Fatal(err)
	}
	if _, err := h.st.UpdateJourney(ctx, j2); err != nil {
		t.Fatal(err)
	}
	if r := h.do("DELETE", "/api/v1/templates/"+tpl, "", auth(h.site.APIKey)...); r.status != 200 {
		t.Fatalf("DELETE: %d %s", r.status, r.body)
	}
	if err := h.st.UpdateAutomation(ctx, a); err != nil {
		t.Fatal(err)
	}
	if _, err := h.st.UpdateJourney(ctx, j); err != nil {
		t.Fatal(err)
	}

	h.subscribeAs(t, "https://fcm.googleapis.com/fcm/send/gone1", "", uaDesktop)
	h.runJourneys(t)
	h.clock.Add(time.Minute)
	h.runJourneys(t)
	if got := h.automationSends(t, autoID); fmt.Sprint(got) != "[Own title]" {
		t.Fatalf("automation sends %v", got)
	}
	if got := h.journeySends(t, journey); fmt.Sprint(got) != "[after:After]" {
		t.Fatalf("journey sends %v", got)
	}
}

// A template changed after the automation and the journey naming it were
// saved, behind PUT's check, so that their content no longer sends (its title removed): the
// message and the step are skipped, the ones after them still go, and no
// timer fails at every lease.
func TestTemplateChangedSkips(t *testing.T) {
	h := newHarness(t)
	tpl := h.createTemplate(t, `{"name":"House","title":"From the template"}`)
	autoID := h.createAutomation(t, `{"name":"Welcome","status":"active","trigger":{"type":"subscribed"},
		"messages":[{"templateId":"`+tpl+`"},{"delaySeconds":60,"title":"Own title"}]}`)["id"].(string)
	journey := h.createJourney(t, `{"name":"Onboarding","status":"active","entry":{"type":"subscribed"},"steps":[
		{"id":"hello","type":"send","content":{"templateId":"`+tpl+`"},"next":"after"},
		{"id":"after","type":"send","content":{"title":"After"}}]}`)["id"].(string)
	// The change gets past PUT's check of what names the template (a race
	// with a save, or a template stored before the check): written here
	// directly.
	stored, err := h.st.Template(context.Background(), h.site.WebsiteID, tpl)
	if err != nil {
		t.Fatal(err)
	}
	stored.Content = []byte(`{"body":"No title now"}`)
	if err := h.st.UpdateTemplate(context.Background(), stored); err != nil {
		t.Fatal(err)
	}
	h.subscribeAs(t, "https://fcm.googleapis.com/fcm/send/changed1", "", uaDesktop)
	h.runJourneys(t)
	h.clock.Add(time.Minute)
	h.runJourneys(t)
	if got := h.automationSends(t, autoID); fmt.Sprint(got) != "[Own title]" {
		t.Fatalf("automation sends %v", got)
	}
	if got := h.journeySends(t, journey); fmt.Sprint(got) != "[after:After]" {
		t.Fatalf("journey sends %v", got)
	}
}

// A change to a template is checked against what names it, as each
// checks its content when saved: one that leaves a user's content
// unsendable (its title removed, where the user relies on the template's)
// answers 409 template_in_use naming only those it would break, and
// changes nothing; one that breaks nobody is stored.
func TestTemplateChangeRefusedWhenItBreaks(t *testing.T) {
	h := newHarness(t, func(c *testConfig) { c.SavedTemplates = true })
	key := auth(h.site.APIKey)
	house := h.createTemplate(t, `{"name":"House","title":"From the template","body":"Hello"}`)
	relies := h.createAutomation(t, `{"name":"Relies","status":"active","trigger":{"type":"subscribed"},
		"messages":[{"title":"Own first"},{"delaySeconds":60,"templateId":"`+house+`"}]}`)["id"].(string)
	h.createAutomation(t, `{"name":"Own title","status":"active","trigger":{"type":"subscribed"},
		"messages":[{"templateId":"`+house+`","title":"Mine"}]}`)
	journey := h.createJourney(t, `{"name":"Onboarding","status":"active","entry":{"type":"subscribed"},"steps":[
		{"id":"hello","type":"send","content":{"templateId":"`+house+`"}}]}`)["id"].(string)
	daily := h.createSchedule(t, `{"name":"Daily","audience":{"everyone":true},"templateId":"`+house+`","rule":"FREQ=DAILY;BYHOUR=9"}`)
	if r := h.do("PUT", "/api/v1/welcome", `{"enabled":true,"templateId":"`+house+`"}`, key...); r.status != 200 {
		t.Fatalf("PUT /welcome: %d %s", r.status, r.body)
	}

	before := h.dump.take(t)
	expectError(t, h.do("PUT", "/api/v1/templates/"+house, `{"title":null}`, key...), 409, CodeTemplateInUse,
		fmt.Sprintf(`,"message":"the change would leave content that cannot be sent in automation \"Relies\" (messages[1]: a title is required to send), `+
			`journey \"Onboarding\" (step \"hello\": a title is required to send), schedule \"Daily\" (a title is required to send), `+
			`welcome \"Welcome notification\" (a title is required to send); change them first, or the template otherwise",`+
			`"usedBy":[{"kind":"automation","id":%q,"name":"Relies"},{"kind":"journey","id":%q,"name":"Onboarding"},`+
			`{"kind":"schedule","id":%q,"name":"Daily"},{"kind":"welcome","id":%q,"name":"Welcome notification"}]`,
			relies, journey, daily, h.site.WebsiteID))
	if h.dump.take(t) != before {
		t.Fatal("a refused change changed the stores")
	}

	// Once the welcome and the schedule give their own title, only the
	// automation and the journey are named.
	if r := h.do("PUT", "/api/v1/welcome", `{"title":"Welcome!"}`, key...); r.status != 200 {
		t.Fatalf("PUT /welcome: %d %s", r.status, r.body)
	}
	if r := h.do("PUT", "/api/v1/schedules/"+daily, `{"content":{"title":"Daily"}}`, key...); r.status != 200 {
		t.Fatalf("PUT /schedules: %d %s", r.status, r.body)
	}
	expectError(t, h.do("PUT", "/api/v1/templates/"+house, `{"title":null}`, key...), 409, CodeTemplateInUse,
		fmt.Sprintf(`,"message":"the change would leave content that cannot be sent in automation \"Relies\" (messages[1]: a title is required to send), `+
			`journey \"Onboarding\" (step \"hello\": a title is required to send); change them first, or the template otherwise",`+
			`"usedBy":[{"kind":"automation","id":%q,"name":"Relies"},{"kind":"journey","id":%q,"name":"Onboarding"}]`, relies, journey))

	// A change that breaks nobody is stored.
	r := h.do("PUT", "/api/v1/templates/"+house, `{"title":"New title","body":null}`, key...)
	if r.status != 200 || r.json(t)["title"] != "New title" {
		t.Fatalf("PUT: %d %s", r.status, r.body)
	}
}

// TestTemplateRenameReadsNoUses: a PUT that changes a template's name
// alone leaves what names it as it was, so it does not read its uses (a
// store that fails to list them does not fail the rename); a change of
// its content does.
func TestTemplateRenameReadsNoUses(t *testing.T) {
	h := newHarness(t, func(c *testConfig) { c.SavedTemplates = true })
	key := auth(h.site.APIKey)
	house := h.createTemplate(t, `{"name":"House","title":"From the template","body":"Hello"}`)
	h.createAutomation(t, `{"name":"Relies","status":"active","trigger":{"type":"subscribed"},
		"messages":[{"templateId":"`+house+`"}]}`)
	h.st.setFail("TemplateUses", errors.New("uses unreadable"))

	r := h.do("PUT", "/api/v1/templates/"+house, `{"name":"Home"}`, key...)
	if r.status != 200 || r.json(t)["name"] != "Home" || r.json(t)["title"] != "From the template" {
		t.Fatalf("PUT name: %d %s", r.status, r.body)
	}
	// The same name and content again: nothing to check either.
	if r := h.do("PUT", "/api/v1/templates/"+house, `{"name":"Home","title":"From the template"}`, key...); r.status != 200 {
		t.Fatalf("PUT same content: %d %s", r.status, r.body)
	}
	if r := h.do("PUT", "/api/v1/templates/"+house, `{"title":"New title"}`, key...); r.status != 500 {
		t.Fatalf("PUT title with the uses unreadable: %d %s, want 500", r.status, r.body)
	}
	h.st.setFail("TemplateUses", nil)
	r = h.do("PUT", "/api/v1/templates/"+house, `{"title":"New title"}`, key...)
	if r.status != 200 || r.json(t)["title"] != "New title" || r.json(t)["name"] != "Home" {
		t.Fatalf("PUT title: %d %s", r.status, r.body)
	}
}
