package api

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/relaybell/relaybell/notification"
)

// subscribeEndpoint registers a browser on the website of projectID and
// returns its subscriber and endpoint ids.
func (h *harness) subscribeEndpoint(t *testing.T, projectID, endpoint, extra string) (subscriberID, endpointID string) {
	t.Helper()
	r := h.do("POST", "/api/v1/projects/"+projectID+"/subscriptions", subscribeBody(t, endpoint, extra), "User-Agent", uaDesktop)
	if r.status != 201 {
		t.Fatalf("subscribe: %d %s", r.status, r.body)
	}
	v := r.json(t)
	return v["subscriberId"].(string), v["endpointId"].(string)
}

func TestTestDeviceRoutes(t *testing.T) {
	h := newHarness(t)
	key := auth(h.site.APIKey)
	sa, ea := h.subscribeEndpoint(t, h.site.ProjectID, "https://fcm.googleapis.com/fcm/send/laptop", `,"externalId":"ada"`)
	_, eb := h.subscribeEndpoint(t, h.site.ProjectID, "https://fcm.googleapis.com/fcm/send/phone", "")
	seen := testStart.Format(time.RFC3339Nano) // the browsers' last visit
	h.clock.Add(time.Hour)
	made := h.clock.Now().UTC().Format(time.RFC3339Nano) // when the laptop became a test device
	view := func(endpointID, name, subscriberID, externalID string) string {
		return fmt.Sprintf(`{"id":%q,"name":%q,"subscriberId":%q,"externalId":%s,"device":"desktop","user_agent":%q,"created_at":%q,"last_seen_at":%q}`,
			endpointID, name, subscriberID, externalID, uaDesktop, made, seen)
	}

	// None yet; a test send then has nowhere to go.
	expectBody(t, h.do("GET", "/api/v1/test-devices", "", key...), 200, `{"testDevices":[]}`)
	before := h.notificationCount()
	expectError(t, h.do("POST", "/api/v1/test-devices/send", `{"title":"Hi"}`, key...), 409, CodeNoTestDevices,
		`,"message":"the website has no test device: add one with POST /test-devices"`)

	// Added (201), added again with a new name (200), named by default.
	r := h.do("POST", "/api/v1/test-devices", `{"endpointId":"`+ea+`","name":"  Ada's laptop  "}`, key...)
	expectBody(t, r, 201, `{"testDevice":`+view(ea, "Ada's laptop", sa, `"ada"`)+`}`)
	h.clock.Add(time.Hour) // a rename keeps when it became one
	r = h.do("POST", "/api/v1/test-devices", `{"endpointId":"`+strings.ToUpper(ea)+`","name":"Laptop"}`, key...)
	expectBody(t, r, 200, `{"testDevice":`+view(ea, "Laptop", sa, `"ada"`)+`}`)
	r = h.do("POST", "/api/v1/test-devices", `{"endpointId":"`+eb+`"}`, key...)
	if r.status != 201 || decode[map[string]map[string]any](t, r)["testDevice"]["name"] != "Test device" {
		t.Fatalf("default name: %d %s", r.status, r.body)
	}

	// Bad input: each refused with its code, nothing added.
	expectError(t, h.do("POST", "/api/v1/test-devices", `{}`, key...), 400, CodeEndpointRequired,
		`,"message":"endpointId (the id the browser SDK's subscribe answered) is required"`)
	expectError(t, h.do("POST", "/api/v1/test-devices", `{"endpointId":"not-an-id"}`, key...), 400, CodeUnknownEndpoint,
		`,"message":"no browser \"not-an-id\" subscribed to this website"`)
	expectCode(t, h.do("POST", "/api/v1/test-devices", `{"endpointId":"`+ea+`","extra":1}`, key...), 400, CodeUnknownField)
	other, err := CreateWebsite(context.Background(), h.st, NewWebsite{Name: "Other", URL: "https://other.example"}, testStart)
	if err != nil {
		t.Fatal(err)
	}
	_, eo := h.subscribeEndpoint(t, other.ProjectID, "https://fcm.googleapis.com/fcm/send/other", "")
	expectError(t, h.do("POST", "/api/v1/test-devices", `{"endpointId":"`+eo+`"}`, key...), 400, CodeUnknownEndpoint,
		`,"message":"no browser \"`+eo+`\" subscribed to this website"`)
	expectBody(t, h.do("GET", "/api/v1/test-devices", "", auth(other.APIKey)...), 200, `{"testDevices":[]}`)

	// Scopes: any key lists; settings:write changes; send sends.
	sendOnly := auth(h.key([]string{"send"}, nil))
	if r := h.do("GET", "/api/v1/test-devices", "", sendOnly...); r.status != 200 {
		t.Fatalf("list with a send key: %d", r.status)
	}
	expectCode(t, h.do("POST", "/api/v1/test-devices", `{"endpointId":"`+ea+`"}`, sendOnly...), 403, CodeInsufficientScope)
	expectCode(t, h.do("DELETE", "/api/v1/test-devices/"+ea, "", sendOnly...), 403, CodeInsufficientScope)
	settingsOnly := auth(h.key([]string{"settings:write"}, nil))
	expectCode(t, h.do("POST", "/api/v1/test-devices/send", `{"title":"Hi"}`, settingsOnly...), 403, CodeInsufficientScope)

	// A test send with any targeting, timing, A/B or draft member is
	// refused, never sent wider; nothing is stored.
	for _, body := range []string{`{"title":"x","externalIds":["ada"]}`, `{"title":"x","segmentId":null}`, `{"title":"x","topicId":"deals"}`,
		`{"title":"x","filters":{"rules":[{"field":"country","value":"FR"}]}}`, `{"title":"x","sendAt":"2030-01-01T00:00:00Z"}`,
		`{"title":"x","draft":true}`, `{"title":"x","ab":{"b":{"title":"y"}}}`} {
		expectCode(t, h.do("POST", "/api/v1/test-devices/send", body, sendOnly...), 400, CodeTestSendNotTargeted)
	}
	expectCode(t, h.do("POST", "/api/v1/test-devices/send", `{"body":"no title"}`, sendOnly...), 400, CodeTitleRequired)
	expectCode(t, h.do("POST", "/api/v1/test-devices/send", `{"title":"x","testDevices":true}`, sendOnly...), 400, CodeUnknownField)
	// testDevices is no member of POST /notifications either.
	expectCode(t, h.do("POST", "/api/v1/notifications", `{"title":"x","testDevices":true}`, key...), 400, CodeUnknownField)
	if n := h.notificationCount(); n != before {
		t.Fatalf("refused test sends stored %d notifications", n-before)
	}

	// A test send: queued now to the test devices, listed as such, no send
	// body to repeat, transactional.
	r = h.do("POST", "/api/v1/test-devices/send", `{"title":"Hello {name|there}","url":"https://shop.example/x"}`, sendOnly...)
	if r.status != 202 {
		t.Fatalf("test send: %d %s", r.status, r.body)
	}
	v := r.json(t)
	if v["status"] != "queued" || v["devices"] != float64(2) || v["ok"] != true {
		t.Fatalf("test send answer %s", r.body)
	}
	id := v["notificationId"].(string)
	detail := h.do("GET", "/api/v1/notifications/"+id, "", key...).json(t)
	n := detail["notification"].(map[string]any)
	if n["targetSummary"] != "Test devices" || n["transactional"] != true || detail["sendBody"] != nil || n["target"] == nil {
		t.Fatalf("test send detail: %v (sendBody %v)", n, detail["sendBody"])
	}
	stored, err := h.st.Notification(context.Background(), h.site.WebsiteID, id)
	if err != nil {
		t.Fatal(err)
	}
	target, err := notification.DecodeTarget(stored.Target)
	if err != nil || !target.TestDevices || target.Everyone() {
		t.Fatalf("stored target %s: %+v %v", stored.Target, target, err)
	}

	// Listed, but left out of the stats.
	if st := h.do("GET", "/api/v1/stats", "", key...).json(t)["totals"].(map[string]any); st["notifications"] != float64(0) {
		t.Fatalf("stats count the test send: %v", st)
	}

	// Removed: an unknown or repeated id is fine, a bad one 404.
	expectBody(t, h.do("DELETE", "/api/v1/test-devices/"+eb, "", key...), 200, `{"ok":true}`)
	expectBody(t, h.do("DELETE", "/api/v1/test-devices/"+eb, "", key...), 200, `{"ok":true}`)
	expectCode(t, h.do("DELETE", "/api/v1/test-devices/x", "", key...), 404, CodeNotFound)
	expectBody(t, h.do("GET", "/api/v1/test-devices", "", key...), 200, `{"testDevices":[`+view(ea, "Laptop", sa, `"ada"`)+`]}`)
	if n, err := h.st.TestDevices(context.Background(), other.WebsiteID); err != nil || len(n) != 0 {
		t.Fatalf("the other website's test devices %v %v", n, err)
	}
}

// Test sends have their own budget, 120 a clock hour per website (spec
// 8.1), apart from broadcasts' and from the key's send rates.
func TestTestSendBudget(t *testing.T) {
	h := newHarness(t)
	key := auth(h.site.APIKey)
	_, e := h.subscribeEndpoint(t, h.site.ProjectID, "https://fcm.googleapis.com/fcm/send/laptop", "")
	if r := h.do("POST", "/api/v1/test-devices", `{"endpointId":"`+e+`"}`, key...); r.status != 201 {
		t.Fatalf("add: %d %s", r.status, r.body)
	}
	// Within one minute: the key's 60 sends a minute do not count tests.
	for i := range 120 {
		if r := h.do("POST", "/api/v1/test-devices/send", `{"title":"t"}`, key...); r.status != 202 {
			t.Fatalf("test send %d: %d %s", i+1, r.status, r.body)
		}
	}
	h.clock.Add(time.Minute)
	before := h.notificationCount()
	r := h.do("POST", "/api/v1/test-devices/send", `{"title":"t"}`, key...)
	expectError(t, r, 429, CodeSendLimitReached,
		`,"message":"the website's hourly budget of 120 test sends is used up","limit":120,"kind":"test","retryAfter":3540`)
	if h.notificationCount() != before {
		t.Fatal("a refused test send was stored")
	}
	// Broadcasts draw on their own budget, and the key's rates are intact.
	if r := h.do("POST", "/api/v1/notifications", `{"title":"to all"}`, key...); r.status != 202 {
		t.Fatalf("a broadcast after the test budget: %d %s", r.status, r.body)
	}
}

// A website has at most 100 test devices: the 101st answers 409, adds
// nothing; renaming one at the limit is fine.
func TestTestDeviceLimit(t *testing.T) {
	h := newHarness(t)
	key := auth(h.site.APIKey)
	var first string
	for i := range 101 {
		_, e := h.subscribeEndpoint(t, h.site.ProjectID, fmt.Sprintf("https://fcm.googleapis.com/fcm/send/d%d", i), "")
		r := h.do("POST", "/api/v1/test-devices", `{"endpointId":"`+e+`"}`, key...)
		switch {
		case i == 0:
			first = e
			fallthrough
		case i < 100:
			if r.status != 201 {
				t.Fatalf("device %d: %d %s", i+1, r.status, r.body)
			}
		default:
			expectError(t, r, 409, CodeTooManyTestDevices, `,"message":"a website has at most 100 test devices; remove one first"`)
		}
	}
	if list := decode[map[string][]any](t, h.do("GET", "/api/v1/test-devices", "", key...))["testDevices"]; len(list) != 100 {
		t.Fatalf("%d test devices listed", len(list))
	}
	if r := h.do("POST", "/api/v1/test-devices", `{"endpointId":"`+first+`","name":"renamed"}`, key...); r.status != 200 {
		t.Fatalf("rename at the limit: %d %s", r.status, r.body)
	}
}
