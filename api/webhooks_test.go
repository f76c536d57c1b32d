package api

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/store"
)

const subscribableJSON = `["subscriber.created","subscriber.unsubscribed","notification.sent","notification.clicked","feed.paused","schedule.paused"]`

// expectBody checks an exact success answer.
func expectBody(t *testing.T, r response, status int, want string) {
	t.Helper()
	if r.status != status || string(r.body) != want {
		t.Fatalf("answer %d\n %s\nwant %d\n %s", r.status, r.body, status, want)
	}
}

// createWebhook makes a webhook with key and returns its id and secret.
func (h *harness) createWebhook(t *testing.T, key, body string) (id, secret string) {
	t.Helper()
	r := h.do("POST", "/api/v1/webhooks", body, auth(key)...)
	if r.status != 201 {
		t.Fatalf("create webhook %s: %d %s", body, r.status, r.body)
	}
	w := r.json(t)["webhook"].(map[string]any)
	return w["id"].(string), w["secret"].(string)
}

// addDelivery stores a delivery of webhookID with the given fields set.
func (h *harness) addDelivery(t *testing.T, webhookID string, d store.WebhookDelivery) store.WebhookDelivery {
	t.Helper()
	if d.ID == "" {
		d.ID = uuid.NewString()
	}
	if d.Event == "" {
		d.Event = "notification.sent"
	}
	if d.Status == "" {
		d.Status = store.DeliveryFailed
	}
	if d.CreatedAt.IsZero() {
		d.CreatedAt = h.clock.Now()
	}
	d.WebhookID, d.WebsiteID = webhookID, h.site.WebsiteID
	if err := h.st.AddWebhookDelivery(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	return d
}

// webhookWant is a webhook as lists show it, never attempted or failed.
func webhookWant(id, url, events string, enabled bool, createdAt string) string {
	return fmt.Sprintf(`{"id":%q,"url":%q,"events":%s,"enabled":%t,"last_status":null,"last_fired_at":null,`+
		`"created_at":%q,"consecutive_failures":0,"failing_since":null,"disabled_reason":null,"disabled_at":null}`,
		id, url, events, enabled, createdAt)
}

func TestWebhookCreateAndList(t *testing.T) {
	h := newHarness(t)
	key := auth(h.site.APIKey)
	expectBody(t, h.do("GET", "/api/v1/webhooks", "", key...), 200, `{"webhooks":[],"events":`+subscribableJSON+`}`)

	// Unknown names are dropped, repeats kept once, the order kept.
	r := h.do("POST", "/api/v1/webhooks", `{"url":"https://hooks.example/rb?x=1",
		"events":["notification.sent","subscriber.deleted","subscriber.created","notification.sent"],"colour":"red"}`, key...)
	if r.status != 201 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	created := r.json(t)["webhook"].(map[string]any)
	first, secret := created["id"].(string), created["secret"].(string)
	if !isUUID(first) || !strings.HasPrefix(secret, "whsec_") || len(secret) != len("whsec_")+26 {
		t.Fatalf("id %q secret %q", first, secret)
	}
	expectBody(t, r, 201, fmt.Sprintf(`{"webhook":{"id":%q,"url":"https://hooks.example/rb?x=1",`+
		`"events":["notification.sent","subscriber.created"],"secret":%q,"enabled":true,"created_at":"2026-03-01T12:00:00.000Z"}}`,
		first, secret))
	stored, err := h.st.Webhook(context.Background(), h.site.WebsiteID, first)
	if err != nil || stored.Secret != secret || !stored.Enabled {
		t.Fatalf("stored %+v, %v", stored, err)
	}

	// Only unknown names, none, null or an empty list: every event.
	h.clock.Add(time.Second)
	second, secret2 := h.createWebhook(t, h.site.APIKey, `{"url":"http://10.0.0.7:8080/hook","events":["nope","subscriber"]}`)
	if secret2 == secret {
		t.Fatal("two webhooks share a secret")
	}
	h.clock.Add(time.Second)
	third, _ := h.createWebhook(t, h.site.APIKey, `{"url":"https://hooks.example/all"}`)
	h.clock.Add(time.Second)
	fourth, _ := h.createWebhook(t, h.key([]string{ScopeWebhooksWrite}, nil), `{"url":"https://hooks.example/null","events":null}`)
	// webhook.test is an event of spec 6.2, so it is kept.
	h.clock.Add(time.Second)
	fifth, _ := h.createWebhook(t, h.key([]string{ScopeSend, ScopeWebhooksWrite}, nil), `{"url":"HTTPS://hooks.example/test","events":["webhook.test"]}`)

	want := `{"webhooks":[` + strings.Join([]string{
		webhookWant(fifth, "HTTPS://hooks.example/test", `["webhook.test"]`, true, "2026-03-01T12:00:04.000Z"),
		webhookWant(fourth, "https://hooks.example/null", `[]`, true, "2026-03-01T12:00:03.000Z"),
		webhookWant(third, "https://hooks.example/all", `[]`, true, "2026-03-01T12:00:02.000Z"),
		webhookWant(second, "http://10.0.0.7:8080/hook", `[]`, true, "2026-03-01T12:00:01.000Z"),
		webhookWant(first, "https://hooks.example/rb?x=1", `["notification.sent","subscriber.created"]`, true, "2026-03-01T12:00:00.000Z"),
	}, ",") + `],"events":` + subscribableJSON + `}`
	// Any key lists them, and the secret never shows.
	for _, k := range []string{h.site.APIKey, h.key([]string{ScopeSend}, nil), h.key([]string{ScopeEventsWrite}, nil)} {
		r := h.do("GET", "/api/v1/webhooks", "", auth(k)...)
		expectBody(t, r, 200, want)
		if strings.Contains(string(r.body), "whsec_") || strings.Contains(string(r.body), "secret") {
			t.Fatalf("the list shows a secret: %s", r.body)
		}
		if r.header["Ratelimit-Limit"] != "" {
			t.Fatalf("listing webhooks is limited: %v", r.header)
		}
	}

	// Another website sees none of them.
	other, err := CreateWebsite(context.Background(), h.st, NewWebsite{Name: "Other", URL: "https://other.example"}, testStart)
	if err != nil {
		t.Fatal(err)
	}
	expectBody(t, h.do("GET", "/api/v1/webhooks", "", auth(other.APIKey)...), 200, `{"webhooks":[],"events":`+subscribableJSON+`}`)
}

func TestWebhookCreateErrors(t *testing.T) {
	h := newHarness(t)
	key := auth(h.site.APIKey)
	const badURL = `,"message":"url must begin with http:// or https:// and name a host"`
	for _, c := range []struct{ body, code, extra string }{
		{`{}`, CodeInvalidURL, badURL},
		{`{"url":null}`, CodeInvalidURL, badURL},
		{`{"url":""}`, CodeInvalidURL, badURL},
		{`{"url":"hooks.example/rb"}`, CodeInvalidURL, badURL},
		{`{"url":"ftp://hooks.example/rb"}`, CodeInvalidURL, badURL},
		{`{"url":"https://"}`, CodeInvalidURL, badURL},
		{`{"url":"https:/hooks.example"}`, CodeInvalidURL, badURL},
		{`{"url":"https://hooks.example/` + strings.Repeat("a", 2048) + `"}`, CodeInvalidURL, badURL},
		{`{"url":"https://hooks.example/%zz"}`, CodeInvalidURL, badURL},
		{`{"url":"https://hooks.example","events":"notification.sent"}`, CodeInvalidJSON, `,"message":"field events has the wrong type (string)"`},
		{`{"url":7}`, CodeInvalidJSON, `,"message":"field url has the wrong type (number)"`},
		{`{"url":"https://hooks.example"`, CodeInvalidJSON, `,"message":"the JSON ends too early"`},
		{`["https://hooks.example"]`, CodeInvalidJSON, `,"message":"the body must be a JSON object"`},
		{``, CodeInvalidJSON, `,"message":"a JSON object body is required"`},
	} {
		expectError(t, h.do("POST", "/api/v1/webhooks", c.body, key...), 400, c.code, c.extra)
	}
	expectError(t, h.do("POST", "/api/v1/webhooks", `{"url":"https://hooks.example/`+strings.Repeat("a", 1<<20)+`"}`, key...),
		413, CodePayloadTooLarge, `,"message":"the body exceeds 1048576 bytes"`)
	expectError(t, h.do("POST", "/api/v1/webhooks", `{"url":"https://hooks.example"}`), 401, CodeNotAuthenticated, "")
	expectError(t, h.do("POST", "/api/v1/webhooks", `{"url":"https://hooks.example"}`, auth(h.key([]string{ScopeSend, ScopeSettingsWrite}, nil))...),
		403, CodeInsufficientScope, `,"required":"webhooks:write"`)
	expectError(t, h.do("GET", "/api/v1/webhooks", ""), 401, CodeNotAuthenticated, "")
	list, err := h.st.WebhooksOf(context.Background(), h.site.WebsiteID)
	if err != nil || len(list) != 0 {
		t.Fatalf("refused creations stored %d webhooks (%v)", len(list), err)
	}
}

// TestWebhookScopes: every route but the list needs webhooks:write (or
// full, or a key from before scopes).
func TestWebhookScopes(t *testing.T) {
	h := newHarness(t)
	id, _ := h.createWebhook(t, h.site.APIKey, `{"url":"https://hooks.example"}`)
	d := h.addDelivery(t, id, store.WebhookDelivery{})
	routes := []struct{ method, path, body string }{
		{"POST", "/api/v1/webhooks", `{"url":"https://hooks.example/2"}`},
		{"PUT", "/api/v1/webhooks/" + id, `{"enabled":true}`},
		{"GET", "/api/v1/webhooks/" + id + "/deliveries", ""},
		{"GET", "/api/v1/webhooks/" + id + "/deliveries/" + d.ID, ""},
		{"POST", "/api/v1/webhooks/" + id + "/deliveries/" + d.ID + "/resend", ""},
		{"POST", "/api/v1/webhooks/" + id + "/test", ""},
		{"DELETE", "/api/v1/webhooks/" + id, ""},
	}
	narrow := h.key([]string{ScopeSend, ScopeEventsWrite, ScopeSubscribersRead, ScopeSubscribersWrite, ScopeSegmentsWrite, ScopeSettingsWrite}, nil)
	for _, rt := range routes {
		expectError(t, h.do(rt.method, rt.path, rt.body, auth(narrow)...), 403, CodeInsufficientScope, `,"required":"webhooks:write"`)
		expectError(t, h.do(rt.method, rt.path, rt.body), 401, CodeNotAuthenticated, "")
	}
	// A webhooks:write key, a full key and a key from before scopes pass.
	for i, k := range []string{h.key([]string{ScopeWebhooksWrite}, nil), h.key([]string{ScopeFull}, nil), h.key(nil, nil)} {
		for _, rt := range routes[:6] {
			if r := h.do(rt.method, rt.path, rt.body, auth(k)...); r.status >= 300 {
				t.Fatalf("key %d: %s %s: %d %s", i, rt.method, rt.path, r.status, r.body)
			}
		}
		// Let the resend and the test event's attempts end, so the next
		// key may resend again.
		for _, dd := range h.deliveries(t, id) {
			if dd.NextAttemptAt != nil {
				h.finish(t, dd.ID, 500, nil)
			}
		}
	}
	expectBody(t, h.do("DELETE", "/api/v1/webhooks/"+id, "", auth(h.key([]string{ScopeWebhooksWrite}, nil))...), 200, `{"ok":true}`)
}

// deliveries lists a webhook's deliveries from the store, newest first.
func (h *harness) deliveries(t *testing.T, webhookID string) []store.WebhookDelivery {
	t.Helper()
	ds, err := h.st.WebhookDeliveries(context.Background(), webhookID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// finish records a failed (or, for a 2xx code, successful) last attempt
// of a delivery now, as the delivery engine would.
func (h *harness) finish(t *testing.T, deliveryID string, code int, headers map[string]string) store.Webhook {
	t.Helper()
	ok := code >= 200 && code < 300
	a := store.WebhookAttempt{DeliveryID: deliveryID, At: h.clock.Now(), StatusCode: code, DurationMS: 120,
		RequestHeaders: headers, ResponseBody: fmt.Sprintf("answer %d", code), Succeeded: ok}
	if !ok {
		a.Error = fmt.Sprintf("receiver answered %d", code)
	}
	w, err := h.st.FinishWebhookAttempt(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestWebhookUpdate(t *testing.T) {
	h := newHarness(t)
	key := auth(h.site.APIKey)
	id, secret := h.createWebhook(t, h.site.APIKey, `{"url":"https://hooks.example/a","events":["notification.sent"]}`)
	put := func(body string) response { return h.do("PUT", "/api/v1/webhooks/"+id, body, key...) }
	const created = "2026-03-01T12:00:00.000Z"

	expectError(t, put(`{}`), 400, CodeNothingToUpdate, `,"message":"give url, events or enabled"`)
	expectError(t, put(`{"name":"x","secret":"whsec_mine"}`), 400, CodeNothingToUpdate, `,"message":"give url, events or enabled"`)
	expectError(t, put(`{"url":null,"events":null,"enabled":null}`), 400, CodeNothingToUpdate, `,"message":"give url, events or enabled"`)
	expectError(t, put(`{"url":"mailto:ops@example.com","enabled":false}`), 400, CodeInvalidURL,
		`,"message":"url must begin with http:// or https:// and name a host"`)
	expectError(t, put(`{"url":""}`), 400, CodeInvalidURL, `,"message":"url must begin with http:// or https:// and name a host"`)
	expectError(t, put(`{"enabled":"yes"}`), 400, CodeInvalidJSON, `,"message":"field enabled has the wrong type (string)"`)
	expectCode(t, put(`{"enabled":`), 400, CodeInvalidJSON)
	expectError(t, put(`{"url":"https://hooks.example/`+strings.Repeat("a", 1<<20)+`"}`), 413, CodePayloadTooLarge,
		`,"message":"the body exceeds 1048576 bytes"`)
	expectBody(t, h.do("GET", "/api/v1/webhooks", "", key...), 200, `{"webhooks":[`+
		webhookWant(id, "https://hooks.example/a", `["notification.sent"]`, true, created)+`],"events":`+subscribableJSON+`}`)

	// Unknown, malformed and other websites' ids are 404.
	other, err := CreateWebsite(context.Background(), h.st, NewWebsite{Name: "Other", URL: "https://other.example"}, testStart)
	if err != nil {
		t.Fatal(err)
	}
	otherID, _ := h.createWebhook(t, other.APIKey, `{"url":"https://other.example/hook"}`)
	for _, path := range []string{uuid.NewString(), "not-a-uuid", otherID} {
		expectError(t, h.do("PUT", "/api/v1/webhooks/"+path, `{"enabled":false}`, key...), 404, CodeNotFound, "")
	}

	// Each member alone; what is left out stays.
	expectBody(t, put(`{"events":["subscriber.created","bogus"],"colour":"red"}`), 200,
		`{"webhook":`+webhookWant(id, "https://hooks.example/a", `["subscriber.created"]`, true, created)+`}`)
	expectBody(t, put(`{"url":" http://hooks.example/b "}`), 200,
		`{"webhook":`+webhookWant(id, "http://hooks.example/b", `["subscriber.created"]`, true, created)+`}`)
	expectBody(t, put(`{"events":["nope"]}`), 200,
		`{"webhook":`+webhookWant(id, "http://hooks.example/b", `[]`, true, created)+`}`)
	// Turning it off is the user's doing: no reason, no time.
	expectBody(t, put(`{"enabled":false}`), 200,
		`{"webhook":`+webhookWant(id, "http://hooks.example/b", `[]`, false, created)+`}`)
	expectBody(t, put(`{"enabled":true,"events":["notification.clicked"]}`), 200,
		`{"webhook":`+webhookWant(id, "http://hooks.example/b", `["notification.clicked"]`, true, created)+`}`)
	if w, err := h.st.Webhook(context.Background(), h.site.WebsiteID, id); err != nil || w.Secret != secret {
		t.Fatalf("secret changed: %v", err)
	}
	// The other website's webhook is untouched.
	expectBody(t, h.do("GET", "/api/v1/webhooks", "", auth(other.APIKey)...), 200, `{"webhooks":[`+
		webhookWant(otherID, "https://other.example/hook", `[]`, true, created)+`],"events":`+subscribableJSON+`}`)

	// The service turned it off after failures; an attempt left its status.
	d := h.addDelivery(t, id, store.WebhookDelivery{Status: store.DeliveryPending})
	h.clock.Add(time.Minute)
	h.finish(t, d.ID, 503, nil)
	failing := testStart.Add(-72 * time.Hour)
	disabledAt := testStart.Add(time.Minute)
	if _, err := h.st.UpdateWebhook(context.Background(), h.site.WebsiteID, id, func(w *store.Webhook) error {
		w.Enabled, w.ConsecutiveFailures, w.FailingSince = false, 50, &failing
		w.DisabledReason, w.DisabledAt = store.DisabledFailed50, &disabledAt
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	off := fmt.Sprintf(`{"id":%q,"url":"http://hooks.example/b","events":["notification.clicked"],"enabled":false,`+
		`"last_status":503,"last_fired_at":"2026-03-01T12:01:00.000Z","created_at":%q,"consecutive_failures":50,`+
		`"failing_since":"2026-02-26T12:00:00.000Z","disabled_reason":"failed_50_in_a_row","disabled_at":"2026-03-01T12:01:00.000Z"}`,
		id, created)
	expectBody(t, h.do("GET", "/api/v1/webhooks", "", key...), 200, `{"webhooks":[`+off+`],"events":`+subscribableJSON+`}`)
	// Changing the URL, or turning it off again, keeps the service's reason.
	expectBody(t, put(`{"enabled":false}`), 200, `{"webhook":`+off+`}`)
	// Turning it back on clears the failure count, start, reason and time.
	on := fmt.Sprintf(`{"id":%q,"url":"http://hooks.example/b","events":["notification.clicked"],"enabled":true,`+
		`"last_status":503,"last_fired_at":"2026-03-01T12:01:00.000Z","created_at":%q,"consecutive_failures":0,`+
		`"failing_since":null,"disabled_reason":null,"disabled_at":null}`, id, created)
	expectBody(t, put(`{"enabled":true}`), 200, `{"webhook":`+on+`}`)
	expectBody(t, h.do("GET", "/api/v1/webhooks", "", key...), 200, `{"webhooks":[`+on+`],"events":`+subscribableJSON+`}`)

	// On again while on keeps a failure count: only off-to-on clears it.
	if _, err := h.st.UpdateWebhook(context.Background(), h.site.WebsiteID, id, func(w *store.Webhook) error {
		w.ConsecutiveFailures, w.FailingSince = 3, &failing
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got := put(`{"enabled":true}`).json(t)["webhook"].(map[string]any); got["consecutive_failures"] != 3.0 || got["failing_since"] == nil {
		t.Fatalf("on while on: %v", got)
	}
}

func TestWebhookDelete(t *testing.T) {
	h := newHarness(t)
	key := auth(h.site.APIKey)
	id, _ := h.createWebhook(t, h.site.APIKey, `{"url":"https://hooks.example/a"}`)
	keep, _ := h.createWebhook(t, h.site.APIKey, `{"url":"https://hooks.example/b"}`)
	d := h.addDelivery(t, id, store.WebhookDelivery{})
	h.addDelivery(t, keep, store.WebhookDelivery{})
	other, err := CreateWebsite(context.Background(), h.st, NewWebsite{Name: "Other", URL: "https://other.example"}, testStart)
	if err != nil {
		t.Fatal(err)
	}
	otherID, _ := h.createWebhook(t, other.APIKey, `{"url":"https://other.example/hook"}`)

	expectBody(t, h.do("DELETE", "/api/v1/webhooks/"+id, "", key...), 200, `{"ok":true}`)
	if _, err := h.st.Webhook(context.Background(), h.site.WebsiteID, id); err == nil {
		t.Fatal("the webhook is still stored")
	}
	// Its delivery log went with it; the other webhook's stays.
	if _, err := h.st.WebhookDelivery(context.Background(), id, d.ID); err == nil {
		t.Fatal("the delivery log is still stored")
	}
	if n := len(h.deliveries(t, keep)); n != 1 {
		t.Fatalf("the other webhook has %d deliveries, want 1", n)
	}
	// Again, unknown, malformed and another website's ids: ok, and the
	// other website keeps its webhook.
	for _, path := range []string{id, uuid.NewString(), "not-a-uuid", otherID} {
		expectBody(t, h.do("DELETE", "/api/v1/webhooks/"+path, "", key...), 200, `{"ok":true}`)
	}
	if _, err := h.st.Webhook(context.Background(), other.WebsiteID, otherID); err != nil {
		t.Fatalf("another website's webhook was deleted: %v", err)
	}
	r := h.do("GET", "/api/v1/webhooks", "", key...).json(t)["webhooks"].([]any)
	if len(r) != 1 || r[0].(map[string]any)["id"] != keep {
		t.Fatalf("webhooks left %v", r)
	}
	expectError(t, h.do("GET", "/api/v1/webhooks/"+id+"/deliveries", "", key...), 404, CodeNotFound, "")
}

func TestWebhookDeliveryList(t *testing.T) {
	h := newHarness(t)
	key := auth(h.site.APIKey)
	id, _ := h.createWebhook(t, h.site.APIKey, `{"url":"https://hooks.example/a"}`)
	otherHook, _ := h.createWebhook(t, h.site.APIKey, `{"url":"https://hooks.example/b"}`)
	list := func(webhookID, query string) response {
		return h.do("GET", "/api/v1/webhooks/"+webhookID+"/deliveries"+query, "", key...)
	}
	expectBody(t, list(id, ""), 200, `{"deliveries":[],"nextCursor":null}`)

	// One delivery of every shape: failed after its retries, waiting for a
	// retry, succeeded, pending.
	code, dur := 500, int64(10001)
	at := testStart.Add(-2 * time.Hour)
	next := testStart.Add(30 * time.Minute)
	ds := []store.WebhookDelivery{
		h.addDelivery(t, id, store.WebhookDelivery{Event: "subscriber.created", Status: store.DeliveryFailed, Attempts: 6, Retries: 5,
			LastStatusCode: &code, DurationMS: &dur, Error: "no answer within 10 seconds", CreatedAt: testStart.Add(-11 * time.Hour), LastAttemptAt: &at}),
		h.addDelivery(t, id, store.WebhookDelivery{Status: store.DeliveryRetrying, Attempts: 2, Retries: 2, Error: "connection refused",
			CreatedAt: testStart.Add(-time.Hour), LastAttemptAt: &at, NextAttemptAt: &next}),
	}
	okCode, okDur := 204, int64(35)
	done := testStart.Add(-time.Minute)
	ds = append(ds, h.addDelivery(t, id, store.WebhookDelivery{Event: "notification.clicked", Status: store.DeliverySucceeded,
		Attempts: 1, LastStatusCode: &okCode, DurationMS: &okDur, CreatedAt: done, LastAttemptAt: &done, DeliveredAt: &done}))
	ds = append(ds, h.addDelivery(t, id, store.WebhookDelivery{Status: store.DeliveryPending}))
	h.addDelivery(t, otherHook, store.WebhookDelivery{})

	want := `{"deliveries":[` + strings.Join([]string{
		fmt.Sprintf(`{"id":%q,"event":"notification.sent","status":"pending","attempts":0,"last_status_code":null,"duration_ms":null,"error":null,`+
			`"created_at":"2026-03-01T12:00:00.000Z","last_attempt_at":null,"next_attempt_at":"2026-03-01T12:00:00.000Z","delivered_at":null}`, ds[3].ID),
		fmt.Sprintf(`{"id":%q,"event":"notification.clicked","status":"succeeded","attempts":1,"last_status_code":204,"duration_ms":35,"error":null,`+
			`"created_at":"2026-03-01T11:59:00.000Z","last_attempt_at":"2026-03-01T11:59:00.000Z","next_attempt_at":null,"delivered_at":"2026-03-01T11:59:00.000Z"}`, ds[2].ID),
		fmt.Sprintf(`{"id":%q,"event":"notification.sent","status":"retrying","attempts":2,"last_status_code":null,"duration_ms":null,"error":"connection refused",`+
			`"created_at":"2026-03-01T11:00:00.000Z","last_attempt_at":"2026-03-01T10:00:00.000Z","next_attempt_at":"2026-03-01T12:30:00.000Z","delivered_at":null}`, ds[1].ID),
		fmt.Sprintf(`{"id":%q,"event":"subscriber.created","status":"failed","attempts":6,"last_status_code":500,"duration_ms":10001,"error":"no answer within 10 seconds",`+
			`"created_at":"2026-03-01T01:00:00.000Z","last_attempt_at":"2026-03-01T10:00:00.000Z","next_attempt_at":null,"delivered_at":null}`, ds[0].ID),
	}, ",") + `],"nextCursor":null}`
	r := list(id, "")
	expectBody(t, r, 200, want)
	expectRateHeaders(t, r, 30, 28, 60)

	// Pages of 3: newest first, a cursor until the end.
	for range 30 {
		ds = append(ds, h.addDelivery(t, id, store.WebhookDelivery{}))
	}
	h.clock.Add(time.Minute)
	ids := func(r response) ([]string, *string) {
		t.Helper()
		v := decode[struct {
			Deliveries []struct{ ID string }
			NextCursor *string
		}](t, r)
		if r.status != 200 {
			t.Fatalf("%d %s", r.status, r.body)
		}
		out := make([]string, len(v.Deliveries))
		for i, d := range v.Deliveries {
			out[i] = d.ID
		}
		return out, v.NextCursor
	}
	var got []string
	cursor := ""
	for pages := 1; ; pages++ {
		page, next := ids(list(id, "?limit=7"+cursor))
		if len(page) != 7 && next != nil || len(page) > 7 {
			t.Fatalf("page %d: %d items, cursor %v", pages, len(page), next)
		}
		got = append(got, page...)
		if next == nil {
			if pages != 5 {
				t.Fatalf("%d pages, want 5", pages)
			}
			break
		}
		cursor = "&cursor=" + *next
	}
	if len(got) != len(ds) {
		t.Fatalf("%d deliveries paged, want %d", len(got), len(ds))
	}
	for i, id := range got {
		if want := ds[len(ds)-1-i].ID; id != want {
			t.Fatalf("item %d is %s, want %s", i, id, want)
		}
	}
	// limit: default 25, clamped into 1-100, not a number is the default.
	for q, n := range map[string]int{"": 25, "?limit=0": 1, "?limit=-3": 1, "?limit=500": 34, "?limit=x": 25, "?limit=34": 34} {
		page, next := ids(list(id, q))
		if len(page) != n || (next == nil) != (n == 34) {
			t.Fatalf("%q: %d items, cursor %v", q, len(page), next)
		}
	}
	h.clock.Add(time.Minute)

	// A cursor of another webhook, a typo or an empty one is 400.
	_, otherCursor := ids(list(otherHook, "?limit=1"))
	if otherCursor != nil {
		t.Fatalf("one delivery gave a cursor")
	}
	_, cur := ids(list(id, "?limit=1"))
	for _, c := range []string{"", "x", "AQAAAAAAAAAB", *cur + "A", strings.ToUpper(*cur)} {
		expectError(t, list(id, "?cursor="+c), 400, CodeInvalidCursor,
			`,"message":"cursor must be the nextCursor of the previous page of this webhook's deliveries"`)
	}
	expectError(t, list(otherHook, "?cursor="+*cur), 400, CodeInvalidCursor,
		`,"message":"cursor must be the nextCursor of the previous page of this webhook's deliveries"`)

	// Unknown, malformed and other websites' webhooks are 404.
	other, err := CreateWebsite(context.Background(), h.st, NewWebsite{Name: "Other", URL: "https://other.example"}, testStart)
	if err != nil {
		t.Fatal(err)
	}
	otherSiteHook, _ := h.createWebhook(t, other.APIKey, `{"url":"https://other.example/hook"}`)
	for _, path := range []string{uuid.NewString(), "nope", otherSiteHook} {
		expectError(t, list(path, ""), 404, CodeNotFound, "")
	}
}

func TestWebhookDeliveryDetail(t *testing.T) {
	h := newHarness(t)
	key := auth(h.site.APIKey)
	id, _ := h.createWebhook(t, h.site.APIKey, `{"url":"https://hooks.example/a"}`)
	get := func(webhookID, deliveryID string) response {
		return h.do("GET", "/api/v1/webhooks/"+webhookID+"/deliveries/"+deliveryID, "", key...)
	}

	// Not attempted yet: no headers, no answer.
	body := `{"event":"notification.sent","data":{"notificationId":"n1","recipients":3,"sent":2,"failed":1,"pruned":0},` +
		`"projectId":"p","at":"2026-03-01T11:59:59.000Z"}`
	d := h.addDelivery(t, id, store.WebhookDelivery{Status: store.DeliveryPending, Body: []byte(body)})
	pending := fmt.Sprintf(`{"delivery":{"id":%q,"event":"notification.sent","status":"pending","attempts":0,"last_status_code":null,`+
		`"duration_ms":null,"error":null,"created_at":"2026-03-01T12:00:00.000Z","last_attempt_at":null,`+
		`"next_attempt_at":"2026-03-01T12:00:00.000Z","delivered_at":null,"request_body":%q,"request_truncated":false,`+
		`"request_headers":{},"response_body":""}}`, d.ID, body)
	r := get(id, d.ID)
	expectBody(t, r, 200, pending)
	expectRateHeaders(t, r, 30, 29, 60)

	// After an attempt: its headers and the receiver's answer.
	h.clock.Add(2 * time.Second)
	headers := map[string]string{"Content-Type": "application/json", "X-RelayBell-Event": "notification.sent",
		"X-RelayBell-Delivery": d.ID, "X-RelayBell-Webhook-Signature": "t=1772366402,v1=ab12",
		"X-RelayBell-Signature": "sha256=cd34"}
	h.finish(t, d.ID, 404, headers)
	expectBody(t, get(id, d.ID), 200, fmt.Sprintf(`{"delivery":{"id":%q,"event":"notification.sent","status":"failed","attempts":1,`+
		`"last_status_code":404,"duration_ms":120,"error":"receiver answered 404","created_at":"2026-03-01T12:00:00.000Z",`+
		`"last_attempt_at":"2026-03-01T12:00:02.000Z","next_attempt_at":null,"delivered_at":null,"request_body":%q,`+
		`"request_truncated":false,"request_headers":{"Content-Type":"application/json","X-RelayBell-Delivery":%q,`+
		`"X-RelayBell-Event":"notification.sent","X-RelayBell-Signature":"sha256=cd34",`+
		`"X-RelayBell-Webhook-Signature":"t=1772366402,v1=ab12"},"response_body":"answer 404"}}`, d.ID, body, d.ID))

	// Bodies: up to 64 KB shown whole; longer cut at 64 KB, and a
	// character the cut would split is left out whole.
	bodyOf := func(n int, tail string) []byte {
		return []byte(`{"data":"` + strings.Repeat("x", n-len(`{"data":"`)-len(tail)-2) + tail + `"}`)
	}
	f := func(b []byte, wantLen int, truncated bool) {
		t.Helper()
		d := h.addDelivery(t, id, store.WebhookDelivery{Body: b})
		v := decode[map[string]map[string]any](t, get(id, d.ID))["delivery"]
		got, _ := v["request_body"].(string)
		if len(got) != wantLen || got != string(b[:wantLen]) || v["request_truncated"] != truncated {
			t.Fatalf("%d-byte body: shown %d bytes (want %d), truncated %v", len(b), len(got), wantLen, v["request_truncated"])
		}
	}
	f(bodyOf(65536, ""), 65536, false)
	f(bodyOf(65537, ""), 65536, true)
	f(bodyOf(200000, ""), 65536, true)
	// "é" is 2 bytes, "€" 3: at 65535-65536 and 65535-65537 they straddle the cut.
	straddle := func(r string) []byte {
		b := append([]byte(strings.Repeat("y", 65535)), r...)
		return append(b, strings.Repeat("z", 10)...)
	}
	f(straddle("é"), 65535, true)
	f(straddle("€"), 65535, true)
	f(append([]byte(strings.Repeat("y", 65534)), "é-and-more"...), 65536, true)

	// Unknown, malformed, another webhook's and another website's are 404.
	h.clock.Add(time.Minute)
	second, _ := h.createWebhook(t, h.site.APIKey, `{"url":"https://hooks.example/b"}`)
	other, err := CreateWebsite(context.Background(), h.st, NewWebsite{Name: "Other", URL: "https://other.example"}, testStart)
	if err != nil {
		t.Fatal(err)
	}
	otherHook, _ := h.createWebhook(t, other.APIKey, `{"url":"https://other.example/hook"}`)
	otherD := h.addDeliveryOf(t, other.WebsiteID, otherHook)
	for _, c := range [][2]string{{id, uuid.NewString()}, {id, "nope"}, {second, d.ID}, {uuid.NewString(), d.ID},
		{"nope", d.ID}, {otherHook, otherD}, {id, otherD}} {
		expectError(t, get(c[0], c[1]), 404, CodeNotFound, "")
	}
	// The other website reads its own.
	if r := h.do("GET", "/api/v1/webhooks/"+otherHook+"/deliveries/"+otherD, "", auth(other.APIKey)...); r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
}

// addDeliveryOf stores a failed delivery of another website's webhook.
func (h *harness) addDeliveryOf(t *testing.T, websiteID, webhookID string) string {
	t.Helper()
	d := store.WebhookDelivery{ID: uuid.NewString(), WebhookID: webhookID, WebsiteID: websiteID, Event: "notification.sent",
		Body: []byte(`{}`), Status: store.DeliveryFailed, CreatedAt: h.clock.Now()}
	if err := h.st.AddWebhookDelivery(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	return d.ID
}

func TestWebhookResend(t *testing.T) {
	h := newHarness(t)
	key := auth(h.site.APIKey)
	id, _ := h.createWebhook(t, h.site.APIKey, `{"url":"https://hooks.example/a"}`)
	resend := func(webhookID, deliveryID string) response {
		return h.do("POST", "/api/v1/webhooks/"+webhookID+"/deliveries/"+deliveryID+"/resend", "", key...)
	}
	body := []byte(`{"event":"subscriber.created","data":{},"projectId":"p","at":"2026-03-01T11:00:00.000Z"}`)

	// An attempt already waits: pending, then retrying.
	d := h.addDelivery(t, id, store.WebhookDelivery{Status: store.DeliveryPending, Event: "subscriber.created", Body: body,
		CreatedAt: testStart.Add(-time.Hour)})
	expectError(t, resend(id, d.ID), 409, CodeDeliveryInProgress, `,"message":"an attempt of this delivery is already waiting to run"`)
	h.clock.Add(10 * time.Second)
	retry := h.clock.Now().Add(time.Minute)
	if _, err := h.st.FinishWebhookAttempt(context.Background(), store.WebhookAttempt{DeliveryID: d.ID, At: h.clock.Now(),
		StatusCode: 502, DurationMS: 40, Error: "receiver answered 502", NextAttemptAt: &retry}); err != nil {
		t.Fatal(err)
	}
	r := resend(id, d.ID)
	expectError(t, r, 409, CodeDeliveryInProgress, `,"message":"an attempt of this delivery is already waiting to run"`)
	expectRateHeaders(t, r, 30, 28, 50)

	// Once it failed for good: one more attempt, now, no retries after it.
	if _, err := h.st.FinishWebhookAttempt(context.Background(), store.WebhookAttempt{DeliveryID: d.ID, At: h.clock.Now(),
		StatusCode: 502, DurationMS: 40, Error: "receiver answered 502"}); err != nil {
		t.Fatal(err)
	}
	h.clock.Add(5 * time.Second)
	r = resend(id, d.ID)
	expectBody(t, r, 202, fmt.Sprintf(`{"delivery":{"id":%q,"event":"subscriber.created","status":"pending","attempts":2,`+
		`"last_status_code":502,"duration_ms":40,"error":"receiver answered 502","created_at":"2026-03-01T11:00:00.000Z",`+
		`"last_attempt_at":"2026-03-01T12:00:10.000Z","next_attempt_at":"2026-03-01T12:00:15.000Z","delivered_at":null}}`, d.ID))
	expectRateHeaders(t, r, 30, 27, 45)
	stored, err := h.st.WebhookDelivery(context.Background(), id, d.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !stored.OneShot || stored.Status != store.DeliveryPending || string(stored.Body) != string(body) ||
		stored.NextAttemptAt == nil || !stored.NextAttemptAt.Equal(testStart.Add(15*time.Second)) {
		t.Fatalf("stored after resend: %+v", stored)
	}
	// Now that one waits.
	expectCode(t, resend(id, d.ID), 409, CodeDeliveryInProgress)
	// A succeeded delivery can be sent again too; so can a disabled
	// webhook's.
	h.finish(t, d.ID, 200, nil)
	if _, err := h.st.UpdateWebhook(context.Background(), h.site.WebsiteID, id, func(w *store.Webhook) error {
		w.Enabled = false
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if r := resend(id, d.ID); r.status != 202 || r.json(t)["delivery"].(map[string]any)["status"] != "pending" {
		t.Fatalf("%d %s", r.status, r.body)
	}

	// An event over 64 KB is never resent; one of exactly 64 KB is.
	big := h.addDelivery(t, id, store.WebhookDelivery{Body: []byte(`{"d":"` + strings.Repeat("x", 65536-8) + `"}`)})
	if r := resend(id, big.ID); r.status != 202 {
		t.Fatalf("64 KB: %d %s", r.status, r.body)
	}
	tooBig := h.addDelivery(t, id, store.WebhookDelivery{Body: []byte(`{"d":"` + strings.Repeat("x", 65536-7) + `"}`)})
	expectError(t, resend(id, tooBig.ID), 409, CodeBodyTooLarge, `,"message":"the event is 65537 bytes; only events up to 65536 bytes can be resent"`)
	if s, _ := h.st.WebhookDelivery(context.Background(), id, tooBig.ID); s.NextAttemptAt != nil || s.OneShot {
		t.Fatalf("a refused resend was queued: %+v", s)
	}

	// Unknown, malformed, another webhook's and another website's are 404.
	second, _ := h.createWebhook(t, h.site.APIKey, `{"url":"https://hooks.example/b"}`)
	other, err := CreateWebsite(context.Background(), h.st, NewWebsite{Name: "Other", URL: "https://other.example"}, testStart)
	if err != nil {
		t.Fatal(err)
	}
	otherHook, _ := h.createWebhook(t, other.APIKey, `{"url":"https://other.example/hook"}`)
	otherD := h.addDeliveryOf(t, other.WebsiteID, otherHook)
	for _, c := range [][2]string{{id, uuid.NewString()}, {id, "nope"}, {second, tooBig.ID}, {"nope", d.ID},
		{otherHook, otherD}, {id, otherD}} {
		expectError(t, resend(c[0], c[1]), 404, CodeNotFound, "")
	}
	if s, _ := h.st.WebhookDelivery(context.Background(), otherHook, otherD); s.NextAttemptAt != nil {
		t.Fatalf("another website's delivery was resent: %+v", s)
	}
}

func TestWebhookTestEvent(t *testing.T) {
	h := newHarness(t)
	key := auth(h.site.APIKey)
	// Off, and not subscribed to webhook.test: the test goes anyway.
	id, _ := h.createWebhook(t, h.site.APIKey, `{"url":"https://hooks.example/a","events":["notification.sent"]}`)
	if r := h.do("PUT", "/api/v1/webhooks/"+id, `{"enabled":false}`, key...); r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	h.clock.Add(1500 * time.Millisecond)
	r := h.do("POST", "/api/v1/webhooks/"+id+"/test", "", key...)
	if r.status != 202 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	deliveryID := r.json(t)["delivery"].(map[string]any)["id"].(string)
	expectBody(t, r, 202, fmt.Sprintf(`{"delivery":{"id":%q,"event":"webhook.test","status":"pending","attempts":0,`+
		`"last_status_code":null,"duration_ms":null,"error":null,"created_at":"2026-03-01T12:00:01.500Z","last_attempt_at":null,`+
		`"next_attempt_at":"2026-03-01T12:00:01.500Z","delivered_at":null}}`, deliveryID))
	expectRateHeaders(t, r, 30, 29, 59)

	ds := h.deliveries(t, id)
	if len(ds) != 1 {
		t.Fatalf("%d deliveries stored, want 1", len(ds))
	}
	d := ds[0]
	wantBody := fmt.Sprintf(`{"event":"webhook.test","data":{"webhookId":%q,"message":"This is a test event from RelayBell. `+
		`Your endpoint is reachable."},"projectId":%q,"at":"2026-03-01T12:00:01.500Z"}`, id, h.site.ProjectID)
	if d.ID != deliveryID || d.Event != "webhook.test" || d.EventID != "" || d.Status != store.DeliveryPending || !d.OneShot ||
		d.WebsiteID != h.site.WebsiteID || d.NextAttemptAt == nil || !d.NextAttemptAt.Equal(testStart.Add(1500*time.Millisecond)) ||
		string(d.Body) != wantBody {
		t.Fatalf("stored test delivery %+v\nbody %s\nwant %s", d, d.Body, wantBody)
	}
	// It shows in the log with its body.
	v := decode[map[string]map[string]any](t, h.do("GET", "/api/v1/webhooks/"+id+"/deliveries/"+deliveryID, "", key...))["delivery"]
	if v["request_body"] != wantBody || v["event"] != "webhook.test" {
		t.Fatalf("log shows %v", v)
	}
	// Each request queues another.
	if r := h.do("POST", "/api/v1/webhooks/"+id+"/test", "", key...); r.status != 202 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if n := len(h.deliveries(t, id)); n != 2 {
		t.Fatalf("%d deliveries, want 2", n)
	}

	other, err := CreateWebsite(context.Background(), h.st, NewWebsite{Name: "Other", URL: "https://other.example"}, testStart)
	if err != nil {
		t.Fatal(err)
	}
	otherHook, _ := h.createWebhook(t, other.APIKey, `{"url":"https://other.example/hook"}`)
	for _, path := range []string{uuid.NewString(), "nope", otherHook} {
		expectError(t, h.do("POST", "/api/v1/webhooks/"+path+"/test", "", key...), 404, CodeNotFound, "")
	}
	if n := len(h.deliveries(t, otherHook)); n != 0 {
		t.Fatalf("another website's webhook got %d test deliveries", n)
	}
}

// TestWebhookLogLimit: log reads, resends and test events share 30 a
// minute per website (spec 8.1).
func TestWebhookLogLimit(t *testing.T) {
	h := newHarness(t)
	h.clock.Add(15 * time.Second) // 45 s left in the minute
	key := auth(h.site.APIKey)
	id, _ := h.createWebhook(t, h.site.APIKey, `{"url":"https://hooks.example/a"}`)
	d := h.addDelivery(t, id, store.WebhookDelivery{})
	calls := []struct{ method, path string }{
		{"GET", "/api/v1/webhooks/" + id + "/deliveries"},
		{"GET", "/api/v1/webhooks/" + id + "/deliveries/" + d.ID},
		{"POST", "/api/v1/webhooks/" + id + "/test"},
		{"POST", "/api/v1/webhooks/" + id + "/deliveries/" + d.ID + "/resend"},
	}
	// Every key of the website draws on the same count.
	keys := [][]string{key, auth(h.key([]string{ScopeWebhooksWrite}, nil))}
	for i := 1; i <= webhookLogPerMinute; i++ {
		c := calls[i%len(calls)]
		if c.path == calls[3].path {
			c = calls[0] // the resend is tried once, below
		}
		if i == webhookLogPerMinute {
			c = calls[3]
		}
		r := h.do(c.method, c.path, "", keys[i%2]...)
		if r.status != 200 && r.status != 202 {
			t.Fatalf("call %d %s %s: %d %s", i, c.method, c.path, r.status, r.body)
		}
		expectRateHeaders(t, r, 30, 30-i, 45)
	}
	for _, c := range calls {
		r := h.do(c.method, c.path, "", key...)
		expectError(t, r, 429, CodeRateLimited, `,"message":"delivery-log reads, resends and test events are limited to 30 a minute per website"`)
		expectRateHeaders(t, r, 30, 0, 45)
		if r.header["Retry-After"] != "45" {
			t.Fatalf("Retry-After %q, want 45", r.header["Retry-After"])
		}
	}
	// Refused calls did nothing: 7 test events were queued, 1 resend.
	if n := len(h.deliveries(t, id)); n != 8 {
		t.Fatalf("%d deliveries, want 8", n)
	}
	// Other routes are not limited.
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/api/v1/webhooks", ""}, {"PUT", "/api/v1/webhooks/" + id, `{"enabled":true}`},
		{"POST", "/api/v1/webhooks", `{"url":"https://hooks.example/b"}`},
	} {
		if r := h.do(c.method, c.path, c.body, key...); r.status >= 300 || r.header["Ratelimit-Limit"] != "" {
			t.Fatalf("%s %s: %d %v %s", c.method, c.path, r.status, r.header, r.body)
		}
	}
	// Another website has its own count.
	other, err := CreateWebsite(context.Background(), h.st, NewWebsite{Name: "Other", URL: "https://other.example"}, testStart)
	if err != nil {
		t.Fatal(err)
	}
	otherHook, _ := h.createWebhook(t, other.APIKey, `{"url":"https://other.example/hook"}`)
	r := h.do("GET", "/api/v1/webhooks/"+otherHook+"/deliveries", "", auth(other.APIKey)...)
	expectBody(t, r, 200, `{"deliveries":[],"nextCursor":null}`)
	expectRateHeaders(t, r, 30, 29, 45)

	// The next minute starts afresh.
	h.clock.Add(45 * time.Second)
	r = h.do("GET", "/api/v1/webhooks/"+id+"/deliveries?limit=1", "", key...)
	if r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	expectRateHeaders(t, r, 30, 29, 60)
}
