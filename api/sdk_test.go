package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/relaybell/relaybell/analytics"
	"github.com/relaybell/relaybell/netpolicy"
	"github.com/relaybell/relaybell/store"
)

func subscribeBody(t testing.TB, endpoint, extra string) string {
	t.Helper()
	p256dh, authKey := browserKeys(t)
	return fmt.Sprintf(`{"endpoint":%q,"keys":{"p256dh":%q,"auth":%q}%s}`, endpoint, p256dh, authKey, extra)
}

func TestSDKConfigAndCORS(t *testing.T) {
	h := newHarness(t)
	base := "/api/v1/projects/" + h.site.ProjectID
	r := h.do("GET", base+"/config", "")
	want := `{"vapidPublicKey":"` + h.site.VAPIDPublicKey + `","topics":[],"logo":null,"prompt":null}`
	if r.status != 200 || string(r.body) != want {
		t.Errorf("%d %s", r.status, r.body)
	}
	if r.header["Access-Control-Allow-Origin"] != "*" {
		t.Errorf("CORS headers %v", r.header)
	}
	// Unknown project: 404, still readable cross-origin.
	r = h.do("GET", "/api/v1/projects/00000000-0000-4000-8000-000000000000/config", "")
	expectError(t, r, 404, "not_found", "")
	if r.header["Access-Control-Allow-Origin"] != "*" {
		t.Error("no CORS on 404")
	}
	expectError(t, h.do("GET", "/api/v1/projects/not-a-uuid/config", ""), 404, "not_found", "")

	// Preflight.
	r = h.do("OPTIONS", base+"/subscriptions", "", "Origin", "https://shop.example", "Access-Control-Request-Method", "DELETE")
	if r.status != 204 || r.header["Access-Control-Allow-Origin"] != "*" ||
		r.header["Access-Control-Allow-Methods"] != "POST, DELETE, OPTIONS" || !strings.Contains(r.header["Access-Control-Allow-Headers"], "Content-Type") ||
		r.header["X-Request-Id"] == "" {
		t.Errorf("preflight %d %v", r.status, r.header)
	}
	// Key routes are not opened to browsers.
	r = h.do("OPTIONS", "/api/v1/notifications", "")
	if r.status != 405 || r.header["Access-Control-Allow-Origin"] != "" {
		t.Errorf("key route preflight %d %v", r.status, r.header)
	}
}

func TestSubscribe(t *testing.T) {
	h := newHarness(t, func(c *testConfig) { c.CountryHeader = "CF-IPCountry" })
	path := "/api/v1/projects/" + h.site.ProjectID + "/subscriptions"
	const chromeUA = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 Chrome/126.0 Safari/537.36"
	body := subscribeBody(t, "https://fcm.googleapis.com/fcm/send/abc", `,"externalId":"user-1","language":"en_us","timezone":"Europe/Paris","url":"https://shop.example/p","topics":["News"," news ","sale"]`)
	r := h.do("POST", path, body, "User-Agent", chromeUA, "CF-IPCountry", "de")
	if r.status != 201 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	first := r.json(t)
	r = h.do("POST", path, body, "User-Agent", chromeUA)
	if r.status != 200 || r.json(t)["subscriberId"] != first["subscriberId"] || r.json(t)["endpointId"] != first["endpointId"] {
		t.Fatalf("again: %d %s (first %v)", r.status, r.body, first)
	}
	ep, err := h.st.Endpoint(context.Background(), h.site.WebsiteID, first["endpointId"].(string))
	if err != nil || ep.Device != "desktop" || ep.UserAgent != chromeUA {
		t.Errorf("endpoint %+v (%v)", ep, err)
	}
	sub := h.subscriber(first["subscriberId"].(string))
	if sub.Language != "en-US" || sub.Timezone != "Europe/Paris" || sub.Country != "DE" || sub.URL != "https://shop.example/p" || sub.ExternalID != "user-1" {
		t.Errorf("subscriber %+v", sub)
	}
	// Each registration is a visit, learned for smart delivery: 12:00 UTC
	// is 13:00 in Paris.
	if sub.SmartHour == nil || *sub.SmartHour != 13 {
		t.Errorf("smart hour %v, want 13", sub.SmartHour)
	}

	// Same person on a phone: same subscriber, a second endpoint.
	r = h.do("POST", path, subscribeBody(t, "https://web.push.apple.com/QGx",
		`,"externalId":"user-1","userAgent":"Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X)","timezone":"Nowhere/Land"`))
	if r.status != 201 {
		t.Fatalf("second browser: %d %s", r.status, r.body)
	}
	second := r.json(t)
	if second["subscriberId"] != first["subscriberId"] || second["endpointId"] == first["endpointId"] {
		t.Errorf("two browsers: %v vs %v", first, second)
	}
	ep2, _ := h.st.Endpoint(context.Background(), h.site.WebsiteID, second["endpointId"].(string))
	if ep2.Device != "ios" {
		t.Errorf("device %q", ep2.Device)
	}
}

func TestSubscribeInput(t *testing.T) {
	h := newHarness(t)
	p256dh, authKey := browserKeys(t)
	path := "/api/v1/projects/" + h.site.ProjectID + "/subscriptions"
	f := func(body string, code string, msg string) {
		t.Helper()
		r := h.do("POST", path, body)
		extra := ""
		if msg != "" {
			extra = fmt.Sprintf(`,"message":%q`, msg)
		}
		expectError(t, r, 400, code, extra)
	}
	keys := fmt.Sprintf(`"keys":{"p256dh":%q,"auth":%q}`, p256dh, authKey)
	f(`{`+keys+`}`, "invalid_url", "endpoint must be a push service URL")
	f(`{"endpoint":"http://fcm.googleapis.com/x",`+keys+`}`, "invalid_url", "endpoint refused: endpoint must use https")
	f(`{"endpoint":"https://127.0.0.1/x",`+keys+`}`, "invalid_url", "endpoint refused: address is not public")
	f(`{"endpoint":"https://localhost/x",`+keys+`}`, "invalid_url", "endpoint refused: address is not public")
	f(`{"endpoint":"https://push.example/x"}`, "invalid_json", "keys.p256dh and keys.auth are required")
	f(fmt.Sprintf(`{"endpoint":"https://push.example/x","keys":{"p256dh":"AAAA","auth":%q}}`, authKey), "invalid_json", "keys.p256dh is 3 bytes, want 65")
	notOnCurve := "BA" + strings.Repeat("A", 85) // 0x04 then zeros: 65 bytes, not a point
	f(fmt.Sprintf(`{"endpoint":"https://push.example/x","keys":{"p256dh":%q,"auth":%q}}`, notOnCurve, authKey), "invalid_json", "keys.p256dh: P256 point not on curve")
	f(fmt.Sprintf(`{"endpoint":"https://push.example/x","keys":{"p256dh":%q,"auth":"c2hvcnQ"}}`, p256dh), "invalid_json", "keys.auth is 5 bytes, want 16")
	f(fmt.Sprintf(`{"endpoint":"https://push.example/x","keys":{"p256dh":%q,"auth":"!!"}}`, p256dh), "invalid_json", "keys.auth: illegal base64 data at input byte 0")
	f(`{"endpoint":"https://push.example/x",`+keys+`,"externalId":"`+strings.Repeat("x", 257)+`"}`, "invalid_json", "externalId must be text of at most 256 bytes")
	f(`{"endpoint":5}`, "invalid_json", "field endpoint has the wrong type (number)")
	f(`{oops}`, "invalid_json", "malformed JSON at byte 2")
	f(`not json`, "invalid_json", "the body must be a JSON object")
	f(`{"endpoint":"x"} {}`, "invalid_json", "unexpected data after the JSON object")
	f(``, "invalid_json", "a JSON object body is required")

	// Padded keys and unknown members are accepted; a loopback push
	// service opened by the allow list too.
	allowed, _ := netpolicy.ParseAllowList("127.0.0.1:8443")
	h2 := newHarness(t, func(c *testConfig) { c.PushAllowHosts = allowed })
	r := h2.do("POST", "/api/v1/projects/"+h2.site.ProjectID+"/subscriptions",
		fmt.Sprintf(`{"endpoint":"http://127.0.0.1:8443/push/1","keys":{"p256dh":"%s=","auth":"%s=="},"sdkVersion":"2"}`, p256dh, authKey))
	if r.status != 201 {
		t.Errorf("allow-listed endpoint: %d %s", r.status, r.body)
	}
}

func TestUnsubscribe(t *testing.T) {
	h := newHarness(t)
	path := "/api/v1/projects/" + h.site.ProjectID + "/subscriptions"
	r := h.do("POST", path, subscribeBody(t, "https://push.example/1", ""))
	if r.status != 201 {
		t.Fatal(r.status)
	}
	endpointID := r.json(t)["endpointId"].(string)
	for range 2 { // the second time the endpoint is unknown: still ok
		r := h.do("DELETE", path, `{"endpoint":"https://push.example/1"}`)
		if r.status != 200 || string(r.body) != `{"ok":true}` {
			t.Errorf("%d %s", r.status, r.body)
		}
	}
	if ep, err := h.st.Endpoint(context.Background(), h.site.WebsiteID, endpointID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("endpoint left: %+v (%v)", ep, err)
	}
	expectCode(t, h.do("DELETE", path, `{}`), 400, "invalid_json")
}

func TestPings(t *testing.T) {
	h := newHarness(t)
	base := "/api/v1/projects/" + h.site.ProjectID
	r := h.do("POST", base+"/subscriptions", subscribeBody(t, "https://push.example/1", `,"userAgent":"Mozilla/5.0 (Linux; Android 14) Mobile"`))
	endpointID := r.json(t)["endpointId"].(string)
	r = h.do("POST", "/api/v1/notifications", `{"title":"Hi","ab":{"b":{"title":"Hey"}}}`, auth(h.site.APIKey)...)
	notificationID := r.json(t)["notificationId"].(string)

	ping := func(kind, nid, eid string) response {
		return h.do("POST", base+"/pings/"+kind, fmt.Sprintf(`{"notificationId":%q,"endpointId":%q,"action":"btn1"}`, nid, eid))
	}
	// Clicks show in the report on the push sent to the endpoint, so record
	// the sent events the pusher would have: the real one on an android
	// phone, and decoys for the unknown or foreign ids pinged below, which
	// must never gain a click.
	other := "00000000-0000-4000-8000-000000000000"
	foreign := [][2]string{{other, endpointID}, {notificationID, other}, {"x", "y"}}
	sent := []analytics.Event{{Kind: analytics.KindSent, WebsiteID: h.site.WebsiteID, NotificationID: notificationID,
		EndpointID: endpointID, Device: "android", Variant: "a", At: testStart}}
	for _, ids := range foreign {
		sent = append(sent, analytics.Event{Kind: analytics.KindSent, WebsiteID: h.site.WebsiteID, NotificationID: ids[0],
			EndpointID: ids[1], Device: "other", Variant: "a", At: testStart})
	}
	if err := h.an.Record(context.Background(), sent); err != nil {
		t.Fatal(err)
	}
	// devices returns the report's device rows of a notification.
	devices := func(nid string) []analytics.DeviceRow {
		t.Helper()
		rep, err := h.an.Report(context.Background(), h.site.WebsiteID, nid)
		if err != nil {
			t.Fatal(err)
		}
		return rep.Devices
	}
	wantDevices := func(nid string, want ...analytics.DeviceRow) {
		t.Helper()
		if got := devices(nid); !slices.Equal(got, want) {
			t.Errorf("%s devices %+v, want %+v", nid, got, want)
		}
	}

	for range 2 {
		for _, kind := range []string{"delivered", "clicked"} {
			if r := ping(kind, notificationID, endpointID); r.status != 204 || len(r.body) != 0 || r.header["X-Request-Id"] == "" {
				t.Errorf("%s: %d %s", kind, r.status, r.body)
			}
		}
	}
	n, _ := h.st.Notification(context.Background(), h.site.WebsiteID, notificationID)
	if n.Delivered != 1 || n.Clicked != 1 {
		t.Errorf("counters %+v", n.Counters)
	}
	android := analytics.DeviceRow{Device: "android", Sent: 1, Clicked: 1}
	decoy := analytics.DeviceRow{Device: "other", Sent: 1}
	wantDevices(notificationID, android, decoy)

	// Unknown or foreign ids: 204 and nothing recorded.
	for _, ids := range foreign {
		if r := ping("clicked", ids[0], ids[1]); r.status != 204 {
			t.Errorf("%v: %d", ids, r.status)
		}
	}
	wantDevices(notificationID, android, decoy)
	wantDevices(other, decoy)
	wantDevices("x", decoy)
	expectCode(t, h.do("POST", base+"/pings/clicked", `{"notificationId":1}`), 400, "invalid_json")
	expectError(t, h.do("POST", "/api/v1/projects/"+other+"/pings/clicked", `{}`), 404, "not_found", "")
}

func TestNormalizeLanguage(t *testing.T) {
	f := func(in, want string) {
		t.Helper()
		if got := normalizeLanguage(in); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
	f("en", "en")
	f("EN", "en")
	f("en-us", "en-US")
	f("en_US", "en-US")
	f("zh-hant-tw", "zh-Hant-TW")
	f("es-419", "es-419")
	f("de-DE-1996", "de-DE-1996")
	f("", "")
	f("e", "")
	f("english", "")
	f("en--US", "en-US")
	f("en-US;q=0.9", "")
	f("12-US", "")
	f(strings.Repeat("a", 40), "")
}

func TestCountryHeader(t *testing.T) {
	h := newHarness(t, func(c *testConfig) { c.CountryHeader = "CF-IPCountry" })
	path := "/api/v1/projects/" + h.site.ProjectID + "/subscriptions"
	for i, tc := range []struct{ header, want string }{{"fr", "FR"}, {"XX", ""}, {"T1", ""}, {"USA", ""}, {"", ""}} {
		r := h.do("POST", path, subscribeBody(t, fmt.Sprintf("https://push.example/%d", i), ""), "CF-IPCountry", tc.header)
		var out store.SubscriptionResult
		json.Unmarshal(r.body, &struct {
			S *string `json:"subscriberId"`
		}{&out.SubscriberID})
		if got := h.subscriber(out.SubscriberID).Country; got != tc.want {
			t.Errorf("%q: %q, want %q", tc.header, got, tc.want)
		}
	}
	// Without a configured header the country stays empty.
	h2 := newHarness(t)
	r := h2.do("POST", "/api/v1/projects/"+h2.site.ProjectID+"/subscriptions", subscribeBody(t, "https://push.example/z", ""), "CF-IPCountry", "FR")
	if got := h2.subscriber(r.json(t)["subscriberId"].(string)).Country; got != "" {
		t.Errorf("unconfigured header used: %q", got)
	}
}

// profileParts reads a person's profile and returns its subscriber, tags,
// endpoints and topics members as they were written.
func (h *harness) profileParts(t *testing.T, idOrExternalID string) (subscriber, tags, endpoints, topics string) {
	t.Helper()
	r := h.do("GET", "/api/v1/subscribers/"+idOrExternalID+"/profile", "", auth(h.site.APIKey)...)
	if r.status != 200 {
		t.Fatalf("profile of %s: %d %s", idOrExternalID, r.status, r.body)
	}
	var p map[string]json.RawMessage
	if err := json.Unmarshal(r.body, &p); err != nil {
		t.Fatal(err)
	}
	return string(p["subscriber"]), string(p["tags"]), string(p["endpoints"]), string(p["topics"])
}

// idsBody is the body of a successful POST /subscriptions.
func idsBody(subscriberID, endpointID string) string {
	return fmt.Sprintf(`{"endpointId":%q,"subscriberId":%q}`, endpointID, subscriberID)
}

// createTopics creates topics through the API, each slug named after
// itself, a second apart (topics list oldest first).
func (h *harness) createTopics(t *testing.T, slugs ...string) {
	t.Helper()
	for _, slug := range slugs {
		h.clock.Add(time.Second)
		if r := h.do("POST", "/api/v1/topics", fmt.Sprintf(`{"name":%q,"slug":%q}`, slug, slug), auth(h.site.APIKey)...); r.status != 201 {
			t.Fatalf("creating topic %s: %d %s", slug, r.status, r.body)
		}
	}
}

// TestSubscribeTopicsSet: topics, when given, are the subscriber's whole
// set of opt-ins; absent or null they stay as they are.
func TestSubscribeTopicsSet(t *testing.T) {
	h := newHarness(t)
	path := "/api/v1/projects/" + h.site.ProjectID + "/subscriptions"
	h.createTopics(t, "news", "sale", "sports")
	body := func(extra string) string { return subscribeBody(t, "https://push.example/reader", extra) }
	r := h.do("POST", path, body(`,"topics":["news","sale"]`))
	if r.status != 201 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	ids := r.json(t)
	subscriberID, endpointID := ids["subscriberId"].(string), ids["endpointId"].(string)
	other := h.do("POST", path, subscribeBody(t, "https://push.example/other", `,"topics":["news"]`)).json(t)["subscriberId"].(string)

	f := func(extra, want string) {
		t.Helper()
		r := h.do("POST", path, body(extra))
		if r.status != 200 || string(r.body) != idsBody(subscriberID, endpointID) {
			t.Fatalf("%s: %d %s", extra, r.status, r.body)
		}
		if _, _, _, topics := h.profileParts(t, subscriberID); topics != want {
			t.Fatalf("%s: topics %s, want %s", extra, topics, want)
		}
	}
	f(``, `[{"name":"news","slug":"news"},{"name":"sale","slug":"sale"}]`)
	f(`,"topics":null`, `[{"name":"news","slug":"news"},{"name":"sale","slug":"sale"}]`)
	f(`,"topics":["SALE","unknown"]`, `[{"name":"sale","slug":"sale"}]`)
	f(`,"topics":["sports"," Sale "]`, `[{"name":"sale","slug":"sale"},{"name":"sports","slug":"sports"}]`)
	f(`,"topics":[]`, `[]`)
	// Only the first 50 slugs count.
	fifty := ""
	for i := range 50 {
		fifty += fmt.Sprintf(`"unknown-%d",`, i)
	}
	f(`,"topics":[`+fifty+`"news"]`, `[]`)
	f(`,"topics":[`+fifty[len(`"unknown-0",`):]+`"news"]`, `[{"name":"news","slug":"news"}]`)
	if _, _, _, topics := h.profileParts(t, other); topics != `[{"name":"news","slug":"news"}]` {
		t.Errorf("another subscriber's topics %s", topics)
	}
	expectError(t, h.do("POST", path, body(`,"topics":"news"`)), 400, "invalid_json", `,"message":"field topics has the wrong type (string)"`)
	expectError(t, h.do("POST", path, body(`,"topics":[1]`)), 400, "invalid_json", `,"message":"field topics has the wrong type (number)"`)
}

// TestSubscribeLogout: an externalId of null unlinks the browser from its
// person; absent or "" keeps the link.
func TestSubscribeLogout(t *testing.T) {
	h := newHarness(t)
	h.listen(t)
	path := "/api/v1/projects/" + h.site.ProjectID + "/subscriptions"
	h.createTopics(t, "news")
	laptop := func(extra string) string {
		return subscribeBody(t, "https://fcm.googleapis.com/fcm/send/laptop", `,"language":"de-DE","timezone":"Europe/Berlin"`+extra)
	}
	phone := func(extra string) string { return subscribeBody(t, "https://fcm.googleapis.com/fcm/send/phone", extra) }
	created := h.clock.Now().UTC().Format(time.RFC3339Nano)
	r := h.do("POST", path, laptop(`,"externalId":"user-1","topics":["news"]`), "User-Agent", uaDesktop)
	if r.status != 201 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	person, laptopID := r.json(t)["subscriberId"].(string), r.json(t)["endpointId"].(string)
	r = h.do("POST", path, phone(`,"externalId":"user-1"`), "User-Agent", uaAndroid)
	phoneID := r.json(t)["endpointId"].(string)
	if r.status != 201 || r.json(t)["subscriberId"] != person {
		t.Fatalf("phone: %d %s", r.status, r.body)
	}
	if r := h.do("POST", "/api/v1/audience/subscribers/bulk-tag", fmt.Sprintf(`{"ids":[%q],"set":{"plan":"pro"}}`, person),
		auth(h.site.APIKey)...); r.status != 200 {
		t.Fatalf("bulk-tag: %d %s", r.status, r.body)
	}
	seq := h.outboxSeq(t)

	h.clock.Add(time.Minute)
	r = h.do("POST", path, laptop(`,"externalId":null`), "User-Agent", uaDesktop)
	anon := r.json(t)["subscriberId"].(string)
	if r.status != 200 || anon == person || string(r.body) != idsBody(anon, laptopID) {
		t.Fatalf("logout: %d %s", r.status, r.body)
	}
	at := h.clock.Now().UTC().Format(time.RFC3339Nano)
	sub, tags, eps, topics := h.profileParts(t, anon)
	if want := fmt.Sprintf(`{"id":%q,"externalId":null,"country":"","language":"de-DE","timezone":"Europe/Berlin","createdAt":%q,"unsubscribedAt":null,"consentAt":%q}`,
		anon, at, at); sub != want || tags != `[]` || topics != `[]` {
		t.Errorf("new anonymous subscriber:\n%s %s %s\nwant\n%s [] []", sub, tags, topics, want)
	}
	if want := fmt.Sprintf(`[{"id":%q,"device":"desktop","user_agent":%q,"created_at":%q,"last_seen_at":%q}]`,
		laptopID, uaDesktop, created, at); eps != want {
		t.Errorf("its endpoints %s, want %s", eps, want)
	}
	// The person keeps the phone, tags and topics.
	sub, tags, eps, topics = h.profileParts(t, "user-1")
	if !strings.Contains(sub, fmt.Sprintf(`"id":%q,"externalId":"user-1"`, person)) || !strings.Contains(sub, `"unsubscribedAt":null`) ||
		tags != `[{"key":"plan","value":"pro"}]` || topics != `[{"name":"news","slug":"news"}]` ||
		!strings.HasPrefix(eps, fmt.Sprintf(`[{"id":%q,`, phoneID)) || strings.Count(eps, `"id"`) != 1 {
		t.Errorf("the person after the logout: %s %s %s %s", sub, tags, eps, topics)
	}
	// Unlinking is not a new browser: no subscriber.created.
	h.wantOutbox(t, "events of a logout", seq, time.Time{})

	// Again, absent or "": the browser stays anonymous and where it is.
	for _, extra := range []string{`,"externalId":null`, ``, `,"externalId":""`} {
		if r := h.do("POST", path, laptop(extra)); r.status != 200 || string(r.body) != idsBody(anon, laptopID) {
			t.Errorf("%q after logout: %d %s", extra, r.status, r.body)
		}
	}
	// The person's last browser logs out: no device left, not unsubscribed.
	r = h.do("POST", path, phone(`,"externalId":null`))
	if r.status != 200 || r.json(t)["subscriberId"] == person || r.json(t)["endpointId"] != phoneID {
		t.Fatalf("phone's logout: %d %s", r.status, r.body)
	}
	p, err := h.st.Person(context.Background(), h.site.WebsiteID, "user-1")
	if err != nil || p.ID != person || p.Status() != "no_device" {
		t.Errorf("person without browsers: %+v %s (%v)", p.Subscriber, p.Status(), err)
	}
	r = h.do("GET", "/api/v1/audience/subscribers?status=no_device", "", auth(h.site.APIKey)...)
	if r.status != 200 || !strings.Contains(string(r.body), fmt.Sprintf(`"id":%q`, person)) {
		t.Errorf("no_device list: %d %s", r.status, r.body)
	}
	// A login brings the laptop back to the person.
	if r := h.do("POST", path, laptop(`,"externalId":"user-1"`)); r.status != 200 || string(r.body) != idsBody(person, laptopID) {
		t.Errorf("login after logout: %d %s", r.status, r.body)
	}
	expectError(t, h.do("POST", path, laptop(`,"externalId":5`)), 400, "invalid_json", `,"message":"field externalId has the wrong type (number)"`)
}

// TestSubscribeReplaces: a renewed subscription naming the endpoint it
// replaces, with that endpoint's auth secret, takes its place; without the
// secret it is a browser of its own.
func TestSubscribeReplaces(t *testing.T) {
	h := newHarness(t)
	path := "/api/v1/projects/" + h.site.ProjectID + "/subscriptions"
	const oldURL, newURL = "https://updates.push.services.mozilla.com/wpush/v2/old", "https://updates.push.services.mozilla.com/wpush/v2/new"
	oldP256dh, oldAuth := browserKeys(t)
	r := h.do("POST", path, fmt.Sprintf(`{"endpoint":%q,"keys":{"p256dh":%q,"auth":%q},"externalId":"user-1"}`, oldURL, oldP256dh, oldAuth))
	if r.status != 201 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	subscriberID, endpointID := r.json(t)["subscriberId"].(string), r.json(t)["endpointId"].(string)

	// Someone who knows the URL but not the secret (or sends none, or one
	// that is not base64) takes nothing over.
	for i, proof := range []string{``, `,"replacesAuth":"c3RvbGVu"`, `,"replacesAuth":"!!"`} {
		r := h.do("POST", path, subscribeBody(t, fmt.Sprintf("https://push.example/thief-%d", i), fmt.Sprintf(`,"replaces":%q%s`, oldURL, proof)))
		if r.status != 201 || r.json(t)["endpointId"] == endpointID || r.json(t)["subscriberId"] == subscriberID {
			t.Fatalf("replacing with proof %q: %d %s", proof, r.status, r.body)
		}
	}
	if ep, err := h.st.Endpoint(context.Background(), h.site.WebsiteID, endpointID); err != nil || ep.URL != oldURL {
		t.Fatalf("endpoint after replacing without its secret %+v (%v)", ep, err)
	}

	p256dh, authKey := browserKeys(t)
	// The secret in the standard alphabet with padding counts too.
	stdAuth := strings.NewReplacer("-", "+", "_", "/").Replace(oldAuth) + "=="
	renewed := fmt.Sprintf(`{"endpoint":%q,"keys":{"p256dh":%q,"auth":%q},"replaces":%q,"replacesAuth":%q}`, newURL, p256dh, authKey, oldURL, stdAuth)
	h.clock.Add(time.Minute)
	r = h.do("POST", path, renewed)
	if r.status != 200 || string(r.body) != idsBody(subscriberID, endpointID) {
		t.Fatalf("renewed: %d %s", r.status, r.body)
	}
	ep, err := h.st.Endpoint(context.Background(), h.site.WebsiteID, endpointID)
	if err != nil || ep.URL != newURL || ep.P256dh != p256dh || ep.Auth != authKey || ep.SubscriberID != subscriberID ||
		!ep.LastSeenAt.Equal(testStart.Add(time.Minute)) || !ep.CreatedAt.Equal(testStart) {
		t.Fatalf("renewed endpoint %+v (%v)", ep, err)
	}
	// Again (the worker retried): the new URL is known, nothing else moves.
	if r := h.do("POST", path, renewed); r.status != 200 || string(r.body) != idsBody(subscriberID, endpointID) {
		t.Fatalf("renewed again: %d %s", r.status, r.body)
	}
	// The old URL is gone; registering it again is a new browser of nobody.
	r = h.do("POST", path, subscribeBody(t, oldURL, `,"replaces":"https://push.example/unknown"`))
	if r.status != 201 || r.json(t)["endpointId"] == endpointID || r.json(t)["subscriberId"] == subscriberID {
		t.Fatalf("old URL again: %d %s", r.status, r.body)
	}
	// The new URL must pass the check of every registration.
	expectError(t, h.do("POST", path, subscribeBody(t, "https://127.0.0.1/x", fmt.Sprintf(`,"replaces":%q`, newURL))),
		400, "invalid_url", `,"message":"endpoint refused: address is not public"`)
	expectError(t, h.do("POST", path, subscribeBody(t, "https://push.example/x", `,"replaces":5`)),
		400, "invalid_json", `,"message":"field replaces has the wrong type (number)"`)
	if ep, err := h.st.Endpoint(context.Background(), h.site.WebsiteID, endpointID); err != nil || ep.URL != newURL {
		t.Errorf("endpoint after refused renewals %+v (%v)", ep, err)
	}
}
