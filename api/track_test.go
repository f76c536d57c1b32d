package api

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/relaybell/relaybell/store"
)

// Behavioral events (spec 4.2): POST and GET /events, the browser's own
// events, conversions and attribution, product alerts, people views.

// browser is a browser subscribed on the harness website.
type browser struct {
	SubscriberID string `json:"subscriberId"`
	EndpointID   string `json:"endpointId"`
	auth         string
}

func (h *harness) browser(t *testing.T, extra string) browser {
	t.Helper()
	p256dh, authKey := browserKeys(t)
	body := fmt.Sprintf(`{"endpoint":"https://fcm.googleapis.com/fcm/send/%s","keys":{"p256dh":%q,"auth":%q}%s}`,
		strings.ReplaceAll(authKey, "-", "x"), p256dh, authKey, extra)
	r := h.do("POST", "/api/v1/projects/"+h.site.ProjectID+"/subscriptions", body)
	if r.status != 201 {
		t.Fatalf("subscribe: %d %s", r.status, r.body)
	}
	b := decode[browser](t, r)
	b.auth = authKey
	return b
}

// track posts an event with the harness key and returns the answer.
func (h *harness) track(t *testing.T, body string, headers ...string) map[string]any {
	t.Helper()
	r := h.do("POST", "/api/v1/events", body, append(auth(h.site.APIKey), headers...)...)
	if r.status != 202 {
		t.Fatalf("POST /events %s: %d %s", body, r.status, r.body)
	}
	return r.json(t)
}

// sendTo sends a notification to one external id and returns its id.
func (h *harness) sendTo(t *testing.T, title, externalID string) string {
	t.Helper()
	r := h.do("POST", "/api/v1/notifications", fmt.Sprintf(`{"title":%q,"externalId":%q}`, title, externalID), auth(h.site.APIKey)...)
	if r.status != 202 {
		t.Fatalf("send: %d %s", r.status, r.body)
	}
	return r.json(t)["notificationId"].(string)
}

func (h *harness) ping(t *testing.T, kind, notificationID, endpointID string) {
	t.Helper()
	r := h.do("POST", "/api/v1/projects/"+h.site.ProjectID+"/pings/"+kind, fmt.Sprintf(`{"notificationId":%q,"endpointId":%q}`, notificationID, endpointID))
	if r.status != 204 {
		t.Fatalf("%s ping: %d %s", kind, r.status, r.body)
	}
}

func TestPostEventAnswers(t *testing.T) {
	h := newHarness(t)
	key := auth(h.site.APIKey)

	// An event naming nobody: the whole answer.
	r := h.do("POST", "/api/v1/events", `{"event":"page.viewed","properties":{"path":"/"}}`, key...)
	if r.status != 202 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	id := r.json(t)["eventId"].(string)
	if want := `{"ok":true,"eventId":"` + id + `","subscriberId":null,"isConversion":false,"attribution":null,"automationsTriggered":0,"sequencesEnrolled":0}`; string(r.body) != want {
		t.Fatalf("answer\n %s\nwant\n %s", r.body, want)
	}
	if !isUUID(id) {
		t.Fatalf("eventId %q", id)
	}

	// Bad input: exact errors, nothing stored.
	for _, c := range []struct{ body, code, message string }{
		{`{}`, CodeEventRequired, "event (or name) is required"},
		{`{"event":"   ","name":"x"}`, CodeEventRequired, "event (or name) is required"},
		{`{"properties":{"value":3}}`, CodeEventRequired, "event (or name) is required"},
		{`{"event":"a","properties":[1]}`, CodeInvalidJSON, "properties must be a JSON object"},
		{`{"event":"a","properties":"x"}`, CodeInvalidJSON, "properties must be a JSON object"},
		{`{"event":"a","subscriberId":"nope"}`, CodeInvalidJSON, "subscriberId must be a UUID"},
		{`{"event":"purchase","properties":{"value":1e13}}`, CodeInvalidJSON, "properties.value and properties.revenue are at most 1e12 either way"},
		{`{"event":"purchase","properties":{"revenue":-2e12}}`, CodeInvalidJSON, "properties.value and properties.revenue are at most 1e12 either way"},
		{`{"event":"a","externalId":"` + strings.Repeat("x", 257) + `"}`, CodeInvalidJSON, "externalId must be text of at most 256 bytes"},
	} {
		r := h.do("POST", "/api/v1/events", c.body, key...)
		expectError(t, r, 400, c.code, `,"message":"`+c.message+`"`)
	}
	expectCode(t, h.do("POST", "/api/v1/events", `{"event":`, key...), 400, CodeInvalidJSON)
	expectCode(t, h.do("POST", "/api/v1/events", `{"event":7}`, key...), 400, CodeInvalidJSON)
	expectCode(t, h.do("POST", "/api/v1/events", `{"event":"a"}`), 401, CodeNotAuthenticated)
	r = h.do("POST", "/api/v1/events", `{"event":"a"}`, auth(h.key([]string{ScopeSend}, nil))...)
	expectError(t, r, 403, CodeInsufficientScope, `,"required":"events:write"`)
	expectCode(t, h.do("GET", "/api/v1/events", "", auth(h.key([]string{ScopeEventsWrite}, nil))...), 403, CodeInsufficientScope)

	// name is the alias; the name is cut to 120 characters.
	long := strings.Repeat("é", 130)
	h.clock.Add(time.Second)
	h.track(t, `{"name":"`+long+`"}`)
	list := decode[struct{ Events []eventJSON }](t, h.do("GET", "/api/v1/events", "", key...))
	if len(list.Events) != 2 || list.Events[0].Name != strings.Repeat("é", 120) || list.Events[1].ID != id {
		t.Fatalf("events %+v", list.Events)
	}
	// The listed form, exactly.
	r = h.do("GET", "/api/v1/events", "", key...)
	want := fmt.Sprintf(`{"events":[{"id":%q,"name":%q,"external_id":null,"subscriber_id":null,"properties":{},"source":"server","created_at":"2026-03-01T12:00:01Z"},`+
		`{"id":%q,"name":"page.viewed","external_id":null,"subscriber_id":null,"properties":{"path":"/"},"source":"server","created_at":"2026-03-01T12:00:00Z"}]}`,
		list.Events[0].ID, strings.Repeat("é", 120), id)
	if string(r.body) != want {
		t.Fatalf("GET /events\n %s\nwant\n %s", r.body, want)
	}
}

// TestListEventsInAcceptedOrder: GET /events lists the latest 100 newest
// first exactly in the order they were accepted, even when they share a
// millisecond (the harness clock does not move) and their ids would order
// them otherwise.
func TestListEventsInAcceptedOrder(t *testing.T) {
	h := newHarness(t)
	const n = 105
	for i := range n {
		h.track(t, fmt.Sprintf(`{"event":"e-%03d","externalId":"u-%d"}`, i, i%3))
	}
	list := decode[struct{ Events []eventJSON }](t, h.do("GET", "/api/v1/events", "", auth(h.site.APIKey)...))
	var got, want []string
	for _, e := range list.Events {
		got = append(got, e.Name)
	}
	for i := n - 1; i >= n-recentEvents; i-- {
		want = append(want, fmt.Sprintf("e-%03d", i))
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("GET /events\n %v\nwant\n %v", got, want)
	}
}

func TestEventConversionRules(t *testing.T) {
	h := newHarness(t)
	for _, c := range []struct {
		body string
		conv bool
	}{
		{`{"event":"purchase"}`, true},
		{`{"event":"order.completed"}`, true},
		{`{"event":"checkout.completed"}`, true},
		{`{"event":"signup","properties":{"value":5}}`, true},
		{`{"event":"signup","properties":{"revenue":-2.5}}`, true},
		{`{"event":"signup","properties":{"value":"5"}}`, false},
		{`{"event":"cart.updated","properties":{"value":12}}`, false},
		{`{"event":"checkout.started","properties":{"revenue":12}}`, false},
		{`{"event":"Purchase"}`, false},
	} {
		if got := h.track(t, c.body)["isConversion"]; got != c.conv {
			t.Errorf("%s: isConversion %v, want %v", c.body, got, c.conv)
		}
	}
	// The website's own names replace the defaults.
	if r := h.do("PUT", "/api/v1/settings", `{"conversionEvents":["trial.started"]}`, auth(h.site.APIKey)...); r.status != 200 {
		t.Fatalf("settings: %d %s", r.status, r.body)
	}
	for body, conv := range map[string]bool{`{"event":"trial.started"}`: true, `{"event":"purchase"}`: false, `{"event":"purchase","properties":{"value":1}}`: true} {
		if got := h.track(t, body)["isConversion"]; got != conv {
			t.Errorf("with own names, %s: isConversion %v, want %v", body, got, conv)
		}
	}
}

func TestGetEventsLatestHundred(t *testing.T) {
	h := newHarness(t)
	for i := range 105 {
		h.track(t, fmt.Sprintf(`{"event":"e%d"}`, i))
		h.clock.Add(time.Second)
	}
	list := decode[struct{ Events []eventJSON }](t, h.do("GET", "/api/v1/events", "", auth(h.site.APIKey)...))
	if len(list.Events) != 100 || list.Events[0].Name != "e104" || list.Events[99].Name != "e5" {
		t.Fatalf("%d events, first %q, last %q", len(list.Events), list.Events[0].Name, list.Events[len(list.Events)-1].Name)
	}
	// Another website sees none of them.
	other, err := CreateWebsite(context.Background(), h.st, NewWebsite{Name: "Other", URL: "https://other.example"}, testStart)
	if err != nil {
		t.Fatal(err)
	}
	if r := h.do("GET", "/api/v1/events", "", auth(other.APIKey)...); string(r.body) != `{"events":[]}` {
		t.Fatalf("another website's events: %s", r.body)
	}
}

func TestAttribution(t *testing.T) {
	h := newHarness(t, func(c *testConfig) { c.FoldByHand = true })
	key := auth(h.site.APIKey)
	if r := h.do("PUT", "/api/v1/settings", `{"revenueCurrency":"eur","attributionWindowHours":2}`, key...); r.status != 200 {
		t.Fatalf("settings: %d %s", r.status, r.body)
	}
	laptop := h.browser(t, `,"externalId":"ann"`)
	phone := h.browser(t, `,"externalId":"ann"`)
	bob := h.browser(t, `,"externalId":"bob"`)

	// A purchase before any notification: a conversion credited to none.
	got := h.track(t, `{"event":"purchase","externalId":"ann","properties":{"value":10}}`)
	if got["attribution"] != nil || got["isConversion"] != true || got["subscriberId"] != laptop.SubscriberID {
		t.Fatalf("no notification yet: %v", got)
	}

	first := h.sendTo(t, "First", "ann")
	h.clock.Add(time.Minute)
	second := h.sendTo(t, "Second", "ann")
	h.ping(t, "delivered", first, laptop.EndpointID)
	h.clock.Add(time.Minute)
	h.ping(t, "delivered", second, phone.EndpointID)
	h.clock.Add(time.Minute)

	// The last delivered on any of the person's browsers.
	r := h.do("POST", "/api/v1/events", `{"event":"purchase","externalId":"ann","properties":{"value":42.5,"orderId":"o-1"}}`, key...)
	ans := r.json(t)
	want := fmt.Sprintf(`{"ok":true,"eventId":%q,"subscriberId":%q,"isConversion":true,"attribution":{"notificationId":%q,"value":42.5},"automationsTriggered":0,"sequencesEnrolled":0}`,
		ans["eventId"], laptop.SubscriberID, second)
	if r.status != 202 || string(r.body) != want {
		t.Fatalf("purchase: %d\n %s\nwant\n %s", r.status, r.body, want)
	}
	// A click wins over a later delivery; subscriberId names the person too.
	h.ping(t, "clicked", first, laptop.EndpointID)
	got = h.track(t, fmt.Sprintf(`{"event":"order.completed","subscriberId":%q,"properties":{"revenue":7.5}}`, strings.ToUpper(laptop.SubscriberID)))
	if a, _ := got["attribution"].(map[string]any); a["notificationId"] != first || a["value"] != 7.5 {
		t.Fatalf("after a click: %v", got)
	}
	// A conversion by name without a value counts with value 0.
	got = h.track(t, `{"event":"checkout.completed","externalId":"ann"}`)
	if a, _ := got["attribution"].(map[string]any); a["notificationId"] != first || a["value"] != 0.0 {
		t.Fatalf("a conversion without value: %v", got)
	}
	// Not a conversion, or another person: nothing credited.
	if got := h.track(t, `{"event":"page.viewed","externalId":"ann","properties":{"path":"/"}}`); got["attribution"] != nil {
		t.Fatalf("not a conversion: %v", got)
	}
	if got := h.track(t, `{"event":"purchase","externalId":"bob","properties":{"value":3}}`); got["attribution"] != nil || got["subscriberId"] != bob.SubscriberID {
		t.Fatalf("bob got nothing: %v", got)
	}
	// Out of the 2-hour window.
	h.clock.Add(2*time.Hour + time.Millisecond)
	if got := h.track(t, `{"event":"purchase","externalId":"ann","properties":{"value":99}}`); got["attribution"] != nil {
		t.Fatalf("out of the window: %v", got)
	}

	h.api.events.Fold(context.Background())
	// The detail: counters, funnel, currency and the split.
	for _, c := range []struct {
		id               string
		conv             int64
		revenue          float64
		clicked, influen int64
	}{{first, 2, 7.5, 2, 0}, {second, 1, 42.5, 0, 1}} {
		d := decode[struct {
			Notification struct {
				Conversions int64
				Revenue     float64
			}
			Funnel        struct{ Converted int64 }
			Revenue       float64
			Currency      string
			ConversionsBy struct{ ClickThrough, Influenced int64 }
		}](t, h.do("GET", "/api/v1/notifications/"+c.id, "", key...))
		if d.Notification.Conversions != c.conv || d.Notification.Revenue != c.revenue || d.Funnel.Converted != c.conv ||
			d.Revenue != c.revenue || d.Currency != "EUR" || d.ConversionsBy.ClickThrough != c.clicked || d.ConversionsBy.Influenced != c.influen {
			t.Errorf("detail of %s: %+v", c.id, d)
		}
	}
	// The list.
	items := decode[struct {
		Items []struct {
			ID          string
			Conversions int64
			Revenue     float64
		}
	}](t, h.do("GET", "/api/v1/notifications", "", key...)).Items
	if len(items) != 2 || items[0].ID != second || items[0].Conversions != 1 || items[0].Revenue != 42.5 ||
		items[1].Conversions != 2 || items[1].Revenue != 7.5 {
		t.Fatalf("list: %+v", items)
	}
	// The export.
	r = h.do("GET", "/api/v1/notifications/export.csv", "", key...)
	rows, err := csv.NewReader(strings.NewReader(string(r.body))).ReadAll()
	if err != nil || len(rows) != 3 {
		t.Fatalf("export: %v %q", err, r.body)
	}
	col := map[string]int{}
	for i, name := range rows[0] {
		col[name] = i
	}
	if rows[1][col["conversions"]] != "1" || rows[1][col["revenue"]] != "42.5" || rows[2][col["conversions"]] != "2" || rows[2][col["revenue"]] != "7.5" {
		t.Fatalf("export rows %q", rows)
	}
}

func TestIdempotencyKey(t *testing.T) {
	h := newHarness(t, func(c *testConfig) { c.FoldByHand = true })
	ann := h.browser(t, `,"externalId":"ann"`)
	n := h.sendTo(t, "Hi", "ann")
	h.ping(t, "delivered", n, ann.EndpointID)
	post := func(body, key string) response {
		return h.do("POST", "/api/v1/events", body, append(auth(h.site.APIKey), "Idempotency-Key", key)...)
	}
	body := `{"event":"purchase","externalId":"ann","properties":{"value":5}}`
	r1, r2 := post(body, "order-1"), post(body, "order-1")
	if r1.status != 202 || r2.status != 202 || string(r1.body) != string(r2.body) || r2.header["Idempotent-Replayed"] != "true" || r1.header["Idempotent-Replayed"] != "" {
		t.Fatalf("retry: %d %s / %d %s %v", r1.status, r1.body, r2.status, r2.body, r2.header)
	}
	if a, _ := r1.json(t)["attribution"].(map[string]any); a["notificationId"] != n {
		t.Fatalf("first answer %s", r1.body)
	}
	// The key with another body is refused; another key is another event.
	expectError(t, post(`{"event":"purchase","externalId":"ann","properties":{"value":6}}`, "order-1"), 409, CodeIdempotencyKeyReused,
		`,"message":"this Idempotency-Key came with another request"`)
	if r3 := post(body, "order-2"); r3.status != 202 || string(r3.body) == string(r1.body) {
		t.Fatalf("another key: %d %s", r3.status, r3.body)
	}
	for _, key := range []string{strings.Repeat("k", 256), "with space", "é"} {
		expectError(t, post(body, key), 400, CodeBadRequest, `,"message":"Idempotency-Key is 1-255 printable ASCII characters"`)
	}

	// A request whose event could not be stored releases its key and
	// stores nothing; its retry runs under the same event id and credits
	// once, even though the failed try credited already.
	h.an.setErr(errors.New("log down"))
	expectCode(t, post(body, "order-3"), 500, CodeInternal)
	h.an.setErr(nil)
	r4 := post(body, "order-3")
	if r4.status != 202 || r4.header["Idempotent-Replayed"] != "" {
		t.Fatalf("after a failed request: %d %s", r4.status, r4.body)
	}
	list := decode[struct{ Events []eventJSON }](t, h.do("GET", "/api/v1/events", "", auth(h.site.APIKey)...))
	ids := map[string]bool{}
	for _, e := range list.Events {
		ids[e.ID] = true
	}
	if len(list.Events) != 3 || !ids[r4.json(t)["eventId"].(string)] || !ids[r1.json(t)["eventId"].(string)] {
		t.Fatalf("%d events stored, want 3: %+v", len(list.Events), list.Events)
	}
	h.api.events.Fold(context.Background())
	got := decode[struct{ Notification struct{ Conversions int64 } }](t, h.do("GET", "/api/v1/notifications/"+n, "", auth(h.site.APIKey)...))
	if got.Notification.Conversions != 3 {
		t.Fatalf("conversions %d, want 3 (order-1, order-2, order-3 once each)", got.Notification.Conversions)
	}
}

func TestBrowserTrack(t *testing.T) {
	h := newHarness(t)
	b := h.browser(t, `,"externalId":"ann"`)
	other := h.browser(t, "")
	base := "/api/v1/projects/" + h.site.ProjectID + "/events"
	body := func(endpointID, secret, rest string) string {
		return fmt.Sprintf(`{"endpointId":%q,"auth":%q%s}`, endpointID, secret, rest)
	}
	r := h.do("POST", base, body(b.EndpointID, b.auth, `,"event":"purchase","properties":{"value":3},"externalId":"bob","subscriberId":"`+other.SubscriberID+`"`))
	if r.status != 202 || r.header["Access-Control-Allow-Origin"] != "*" {
		t.Fatalf("%d %s %v", r.status, r.body, r.header)
	}
	if ans := r.json(t); ans["subscriberId"] != b.SubscriberID || ans["isConversion"] != true {
		t.Fatalf("answer %v", ans)
	}
	// The wrong secret, another browser's secret, an unknown endpoint.
	expectCode(t, h.do("POST", base, body(b.EndpointID, other.auth, `,"event":"x"`)), 404, CodeNotFound)
	expectCode(t, h.do("POST", base, body(b.EndpointID, "", `,"event":"x"`)), 400, CodeInvalidJSON)
	expectCode(t, h.do("POST", base, body("7a3c2d0e-1111-4222-8333-944445555666", b.auth, `,"event":"x"`)), 404, CodeNotFound)
	expectCode(t, h.do("POST", base, body(b.EndpointID, b.auth, ``)), 400, CodeEventRequired)
	// A product alert never comes from a browser.
	r = h.do("POST", base, body(b.EndpointID, b.auth, `,"event":"price_drop","properties":{"productId":"p1"}`))
	if r.status != 202 || strings.Contains(string(r.body), "productAlerts") {
		t.Fatalf("browser price_drop: %d %s", r.status, r.body)
	}
	list := decode[struct{ Events []eventJSON }](t, h.do("GET", "/api/v1/events", "", auth(h.site.APIKey)...))
	if len(list.Events) != 2 || list.Events[1].Source != "browser" || *list.Events[1].SubscriberID != b.SubscriberID || *list.Events[1].ExternalID != "ann" {
		t.Fatalf("stored %+v", list.Events)
	}
	// Another website's browser proves nothing here.
	other2, err := CreateWebsite(context.Background(), h.st, NewWebsite{Name: "Other", URL: "https://other.example"}, testStart)
	if err != nil {
		t.Fatal(err)
	}
	expectCode(t, h.do("POST", "/api/v1/projects/"+other2.ProjectID+"/events", body(b.EndpointID, b.auth, `,"event":"x"`)), 404, CodeNotFound)
}

func TestEventRateLimit(t *testing.T) {
	h := newHarness(t, func(c *testConfig) { c.EventRateLimit = 3 })
	h.clock.Add(10 * time.Second) // 50 s left in the minute
	key := auth(h.site.APIKey)
	for i := range 3 {
		method, body := "POST", `{"event":"a"}`
		if i == 1 {
			method, body = "GET", ""
		}
		r := h.do(method, "/api/v1/events", body, key...)
		if r.status/100 != 2 || r.header["Ratelimit-Limit"] != "3" || r.header["Ratelimit-Remaining"] != fmt.Sprint(2-i) || r.header["Ratelimit-Reset"] != "50" {
			t.Fatalf("call %d: %d %v", i, r.status, r.header)
		}
	}
	r := h.do("POST", "/api/v1/events", `{"event":"a"}`, key...)
	expectError(t, r, 429, CodeRateLimited, `,"message":"this key may call /events 3 times a minute"`)
	if r.header["Retry-After"] != "50" {
		t.Fatalf("headers %v", r.header)
	}
	// Another key has its own count; a new minute starts again.
	if r := h.do("POST", "/api/v1/events", `{"event":"a"}`, auth(h.key([]string{ScopeEventsWrite}, nil))...); r.status != 202 {
		t.Fatalf("another key: %d", r.status)
	}
	h.clock.Add(50 * time.Second)
	if r := h.do("POST", "/api/v1/events", `{"event":"a"}`, key...); r.status != 202 {
		t.Fatalf("next minute: %d %s", r.status, r.body)
	}
}

func TestProductAlerts(t *testing.T) {
	h := newHarness(t, func(c *testConfig) { c.AlertMax = 2 })
	key := auth(h.site.APIKey)
	ann := h.browser(t, `,"externalId":"ann"`)
	bob := h.browser(t, `,"externalId":"bob"`)
	cid := h.browser(t, `,"externalId":"cid"`)
	dan := h.browser(t, `,"externalId":"dan"`)
	// Interests: a product seen names its price drops; an explicit
	// subscribe its return to stock.
	h.track(t, `{"event":"product.viewed","externalId":"ann","properties":{"productId":"sku-1"}}`)
	h.clock.Add(time.Second)
	h.track(t, `{"event":"product.viewed","externalId":"cid","properties":{"productId":"sku-1"}}`)
	h.clock.Add(time.Second)
	h.track(t, `{"event":"back_in_stock.subscribe","externalId":"bob","properties":{"productId":"sku-1"}}`)
	h.track(t, `{"event":"product.viewed","subscriberId":"`+dan.SubscriberID+`","properties":{"productId":"sku-1"}}`)
	h.clock.Add(time.Second)

	// Naming a person, or with an endpoint, even null or blank, is no
	// product alert.
	for _, body := range []string{
		`{"event":"price_drop","externalId":"zed","properties":{"productId":"sku-1"}}`,
		`{"event":"price_drop","endpoint":"https://fcm.googleapis.com/fcm/send/x","properties":{"productId":"sku-1"}}`,
		`{"event":"price_drop","externalId":null,"properties":{"productId":"sku-1"}}`,
		`{"event":"price_drop","subscriberId":"","properties":{"productId":"sku-1"}}`,
		`{"event":"back_in_stock","endpoint":"  ","properties":{"productId":"sku-1"}}`,
		`{"event":"price_drop","properties":{"sku":"sku-1"}}`,
	} {
		if r := h.do("POST", "/api/v1/events", body, key...); r.status != 202 || strings.Contains(string(r.body), "productAlerts") {
			t.Fatalf("%s: %d %s", body, r.status, r.body)
		}
	}
	if h.disp.count() != 0 {
		t.Fatalf("%d sends dispatched", h.disp.count())
	}

	// A price drop: one send to the two newest interested (cut at 2).
	r := h.do("POST", "/api/v1/events", `{"event":"price_drop","properties":{"productId":"sku-1","title":"Red shoes","price":59,"oldPrice":79,"url":"https://shop.example/p/1","image":"javascript:x"}}`, key...)
	ans := r.json(t)
	want := fmt.Sprintf(`{"ok":true,"eventId":%q,"subscriberId":null,"isConversion":false,"attribution":null,"automationsTriggered":0,"sequencesEnrolled":0,`+
		`"productAlerts":1,"alertAudience":2,"alertAudienceTruncated":true,"deduped":false}`, ans["eventId"])
	if r.status != 202 || string(r.body) != want {
		t.Fatalf("price drop: %d\n %s\nwant\n %s", r.status, r.body, want)
	}
	if h.disp.count() != 1 {
		t.Fatalf("%d sends dispatched", h.disp.count())
	}
	n := h.disp.sent[0]
	if !n.Automation || n.SendBody != nil || n.Title != "Price drop: Red shoes" || n.Body != "Now 59, was 79." || n.Status != "queued" {
		t.Fatalf("the alert %+v", n)
	}
	// Its audience: dan and cid, whose interests are newest; ann is cut.
	var reached []string
	for shard := range 64 {
		page, err := h.st.Audience(context.Background(), storeAudience(h.site.WebsiteID, shard, n.ID))
		if err != nil {
			t.Fatal(err)
		}
		for _, rc := range page {
			reached = append(reached, rc.Endpoint.ID)
		}
	}
	if len(reached) != 2 || !(reached[0] == dan.EndpointID && reached[1] == cid.EndpointID || reached[1] == dan.EndpointID && reached[0] == cid.EndpointID) {
		t.Fatalf("reached %v; dan %s cid %s ann %s bob %s", reached, dan.EndpointID, cid.EndpointID, ann.EndpointID, bob.EndpointID)
	}
	d := h.do("GET", "/api/v1/notifications/"+n.ID, "", key...).json(t)
	nd := d["notification"].(map[string]any)
	if d["sendBody"] != nil || nd["automation"] != true || nd["targetSummary"] != "People interested in product sku-1" || nd["url"] != "https://shop.example/p/1" || nd["image"] != nil {
		t.Fatalf("detail %v", d)
	}

	// Within 10 minutes: deduped; after them, it goes again.
	h.clock.Add(9 * time.Minute)
	r = h.do("POST", "/api/v1/events", `{"event":"price_drop","properties":{"productId":"sku-1","price":49}}`, key...)
	if !strings.HasSuffix(string(r.body), `"productAlerts":0,"alertAudience":0,"alertAudienceTruncated":false,"deduped":true}`) || h.disp.count() != 1 {
		t.Fatalf("deduped: %s", r.body)
	}
	h.clock.Add(time.Minute)
	if got := h.track(t, `{"event":"price_drop","properties":{"productId":"sku-1"}}`); got["productAlerts"] != 1.0 || got["deduped"] != false || h.disp.count() != 2 {
		t.Fatalf("10 minutes later: %v", got)
	}
	if n := h.disp.sent[1]; n.Title != "Price drop: sku-1" || n.Body != "The price just went down." {
		t.Fatalf("without title and price: %q %q", n.Title, n.Body)
	}

	// Back in stock: bob alone, once.
	got := h.track(t, `{"event":"back_in_stock","properties":{"productId":"sku-1","title":"Red shoes"}}`)
	if got["productAlerts"] != 1.0 || got["alertAudience"] != 1.0 || got["alertAudienceTruncated"] != false || h.disp.count() != 3 {
		t.Fatalf("back in stock: %v", got)
	}
	if n := h.disp.sent[2]; n.Title != "Back in stock: Red shoes" {
		t.Fatalf("back in stock title %q", n.Title)
	}
	got = h.track(t, `{"event":"back_in_stock","properties":{"productId":"sku-1"}}`)
	if got["productAlerts"] != 0.0 || got["alertAudience"] != 0.0 || got["deduped"] != false || h.disp.count() != 3 {
		t.Fatalf("back in stock again: %v", got)
	}

	// The website's own text, and quiet hours hold the alert.
	if r := h.do("PUT", "/api/v1/settings", `{"productAlertTexts":{"priceDrop":{"title":"{product.title} for {product.price}!"}},"revenueCurrency":"USD","quietHours":{"start":"11:00","end":"13:00"}}`, key...); r.status != 200 {
		t.Fatalf("settings: %d %s", r.status, r.body)
	}
	h.clock.Add(11 * time.Minute)
	got = h.track(t, `{"event":"price_drop","properties":{"productId":"sku-1","title":"Red shoes","price":39.5}}`)
	if got["productAlerts"] != 1.0 || h.disp.count() != 3 {
		t.Fatalf("in quiet hours: %v, %d dispatched", got, h.disp.count())
	}
	items := decode[struct {
		Items []struct {
			Title, Status string
			Automation    bool
			ScheduledAt   *time.Time `json:"scheduled_at"`
		}
	}](t, h.do("GET", "/api/v1/notifications", "", key...)).Items
	if it := items[0]; it.Title != "Red shoes for 39.5 USD!" || it.Status != "scheduled" || !it.Automation || it.ScheduledAt == nil || !it.ScheduledAt.Equal(time.Date(2026, 3, 1, 13, 0, 0, 0, time.UTC)) {
		t.Fatalf("held alert %+v", it)
	}
}

// storeAudience is the query of a page of a product alert's audience.
func storeAudience(websiteID string, shard int, alertID string) store.AudienceQuery {
	return store.AudienceQuery{WebsiteID: websiteID, Shard: shard, Limit: 100, AlertID: alertID}
}

func TestPersonEventsAndErasure(t *testing.T) {
	h := newHarness(t)
	key := auth(h.site.APIKey)
	// Logged under the external id before the person subscribed.
	h.track(t, `{"event":"wishlist.added","externalId":"ann","properties":{"productId":"sku-9"}}`)
	h.clock.Add(time.Second)
	ann := h.browser(t, `,"externalId":"ann"`)
	bob := h.browser(t, `,"externalId":"bob"`)
	h.track(t, `{"event":"product.viewed","externalId":"ann","properties":{"productId":"sku-1"}}`)
	h.clock.Add(time.Second)
	h.track(t, `{"event":"back_in_stock.subscribe","subscriberId":"`+ann.SubscriberID+`","properties":{"productId":"sku-2"}}`)
	h.track(t, `{"event":"product.viewed","externalId":"bob","properties":{"productId":"sku-1"}}`)
	h.clock.Add(time.Second)
	r := h.do("POST", "/api/v1/projects/"+h.site.ProjectID+"/events", fmt.Sprintf(`{"endpointId":%q,"auth":%q,"event":"page.viewed"}`, ann.EndpointID, ann.auth))
	if r.status != 202 {
		t.Fatalf("browser event: %d %s", r.status, r.body)
	}

	data := h.do("GET", "/api/v1/subscribers/ann/data", "", key...)
	var d struct {
		BehavioralEvents json.RawMessage `json:"behavioralEvents"`
		ProductInterests json.RawMessage `json:"productInterests"`
	}
	if err := json.Unmarshal(data.body, &d); err != nil {
		t.Fatal(err)
	}
	wantEvents := `[{"name":"page.viewed","properties":{},"source":"browser","created_at":"2026-03-01T12:00:03Z"},` +
		`{"name":"back_in_stock.subscribe","properties":{"productId":"sku-2"},"source":"server","created_at":"2026-03-01T12:00:02Z"},` +
		`{"name":"product.viewed","properties":{"productId":"sku-1"},"source":"server","created_at":"2026-03-01T12:00:01Z"},` +
		`{"name":"wishlist.added","properties":{"productId":"sku-9"},"source":"server","created_at":"2026-03-01T12:00:00Z"}]`
	if string(d.BehavioralEvents) != wantEvents {
		t.Fatalf("behavioralEvents\n %s\nwant\n %s", d.BehavioralEvents, wantEvents)
	}
	wantInterests := `[{"product_id":"sku-2","kind":"back_in_stock","created_at":"2026-03-01T12:00:02Z"},` +
		`{"product_id":"sku-1","kind":"price_drop","created_at":"2026-03-01T12:00:01Z"}]`
	if string(d.ProductInterests) != wantInterests {
		t.Fatalf("productInterests\n %s\nwant\n %s", d.ProductInterests, wantInterests)
	}
	profile := decode[struct{ Events []personEvent }](t, h.do("GET", "/api/v1/subscribers/"+ann.SubscriberID+"/profile", "", key...))
	if len(profile.Events) != 4 || profile.Events[3].Name != "wishlist.added" {
		t.Fatalf("profile events %+v", profile.Events)
	}

	// Erasure takes every event of ann, and her interests; bob keeps his.
	if r := h.do("DELETE", "/api/v1/subscribers/ann", "", key...); r.status != 200 {
		t.Fatalf("erase: %d %s", r.status, r.body)
	}
	list := decode[struct{ Events []eventJSON }](t, h.do("GET", "/api/v1/events", "", key...))
	if len(list.Events) != 1 || list.Events[0].ExternalID == nil || *list.Events[0].ExternalID != "bob" {
		t.Fatalf("events after erasure %+v", list.Events)
	}
	left, err := h.st.Interests(context.Background(), h.site.WebsiteID, []string{ann.SubscriberID, bob.SubscriberID}, time.Time{}, 10)
	if err != nil || len(left) != 1 || left[0].SubscriberID != bob.SubscriberID {
		t.Fatalf("interests after erasure %+v %v", left, err)
	}
	// A bulk delete takes the events of the external ids it found.
	h.track(t, `{"event":"late","externalId":"bob"}`)
	if r := h.do("POST", "/api/v1/audience/subscribers/bulk-delete", `{"ids":["`+bob.SubscriberID+`"]}`, key...); r.status != 200 {
		t.Fatalf("bulk delete: %d %s", r.status, r.body)
	}
	if r := h.do("GET", "/api/v1/events", "", key...); string(r.body) != `{"events":[]}` {
		t.Fatalf("events after bulk delete %s", r.body)
	}
}

func TestEventTooLarge(t *testing.T) {
	h := newHarness(t)
	big := `{"event":"a","properties":{"blob":"` + strings.Repeat("x", 995_000) + `"}}`
	r := h.do("POST", "/api/v1/events", big, auth(h.site.APIKey)...)
	expectError(t, r, 413, CodePayloadTooLarge, `,"message":"an event holds at most 990000 bytes"`)
	if r := h.do("GET", "/api/v1/events", "", auth(h.site.APIKey)...); string(r.body) != `{"events":[]}` {
		t.Fatalf("stored %s", r.body)
	}
}
