package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"
)

// TestTrackBrowserEvents: RelayBell.track posts the subscribed browser's
// own events, named by its endpoint and auth secret: they are listed as
// the browser's subscriber's, from the browser, with their properties; a
// valued purchase is a conversion, credited to the send the browser
// reported delivered. Without a saved registration track sends nothing and
// resolves to null; with a wrong secret it rejects with the error's code.
func TestTrackBrowserEvents(t *testing.T) {
	d := startDriver(t)
	ts := startServer(t)
	w := ts.createWebsite()
	rb := startRecorder(t, ts.base)
	site := startSite(t, rb.URL, w.ProjectID)
	b := ts.push.NewBrowser(w.VAPIDPublicKey)
	sub := b.Subscription()
	d.call("launch", map[string]any{
		"executablePath": chromiumPath, "origin": site.URL, "locale": "en-US", "timezoneId": "UTC",
		"subscription": map[string]string{"endpoint": sub.Endpoint, "p256dh": sub.P256dh, "auth": sub.Auth},
	}, nil)
	d.call("goto", map[string]string{"url": site.URL + "/"}, nil)
	var ready struct {
		Subscribed   bool   `json:"subscribed"`
		SubscriberID string `json:"subscriberId"`
		EndpointID   string `json:"endpointId"`
		Error        string `json:"error"`
	}
	d.page("RelayBell.ready", &ready)
	if !ready.Subscribed || ready.SubscriberID == "" || ready.EndpointID == "" || ready.Error != "" {
		t.Fatalf("RelayBell.ready: %+v", ready)
	}
	base := "/api/v1/projects/" + w.ProjectID

	type listed struct {
		ID           string          `json:"id"`
		Name         string          `json:"name"`
		ExternalID   *string         `json:"external_id"`
		SubscriberID *string         `json:"subscriber_id"`
		Properties   json.RawMessage `json:"properties"`
		Source       string          `json:"source"`
		CreatedAt    time.Time       `json:"created_at"`
	}
	list := func() []listed {
		t.Helper()
		var out struct {
			Events []listed `json:"events"`
		}
		if code := ts.call("GET", "/api/v1/events", w.APIKey, nil, &out); code != 200 || out.Events == nil {
			t.Fatalf("GET /events: %d %+v", code, out)
		}
		return out.Events
	}
	// track calls RelayBell.track in the page and returns its answer.
	track := func(args string) map[string]any {
		t.Helper()
		var out map[string]any
		d.page("RelayBell.track("+args+")", &out)
		return out
	}

	// Without the endpoint's id and secret saved (a browser that never
	// registered, or whose site data was cleared), track resolves to null
	// and sends nothing. The saved state goes back afterwards.
	var stateURL, saved string
	d.page(`caches.open('relaybell').then(async (c) => (await c.keys()).find((r) => r.url.includes('/state')).url)`, &stateURL)
	d.page(fmt.Sprintf(`caches.match(%q).then((r) => r.text())`, stateURL), &saved)
	putState := func(state string) {
		t.Helper()
		d.page(fmt.Sprintf(`caches.open('relaybell').then((c) => c.put(%q, new Response(%q, { headers: { 'Content-Type': 'application/json' } })))`, stateURL, state), nil)
	}
	for _, c := range []struct{ what, setup string }{
		{"no saved state", fmt.Sprintf(`caches.open('relaybell').then((c) => c.delete(%q))`, stateURL)},
		{"no auth secret", fmt.Sprintf(`caches.open('relaybell').then((c) => c.put(%q, Response.json({ subscriberId: %q, endpointId: %q, endpoint: %q })))`,
			stateURL, ready.SubscriberID, ready.EndpointID, sub.Endpoint)},
		{"no endpoint id", fmt.Sprintf(`caches.open('relaybell').then((c) => c.put(%q, Response.json({ endpoint: %q, auth: %q })))`,
			stateURL, sub.Endpoint, sub.Auth)},
	} {
		d.page(c.setup, nil)
		var got any = "unset"
		d.page("RelayBell.track('purchase', { value: 1 })", &got)
		if got != nil {
			t.Errorf("%s: track resolved to %v, want null", c.what, got)
		}
	}
	putState(saved)
	if posted := rb.all("POST", base+"/events"); len(posted) != 0 {
		t.Fatalf("track without a registration posted %q", posted)
	}
	if evs := list(); len(evs) != 0 {
		t.Fatalf("events after track without a registration: %+v", evs)
	}

	// A valued purchase is a conversion; with no send delivered yet it is
	// credited to none. An event with no properties lists {}.
	purchase := track("'purchase', { value: 12.5 }")
	want := map[string]any{"ok": true, "eventId": purchase["eventId"], "subscriberId": ready.SubscriberID, "isConversion": true,
		"attribution": nil, "automationsTriggered": 0.0, "sequencesEnrolled": 0.0}
	if id, _ := purchase["eventId"].(string); id == "" || !reflect.DeepEqual(purchase, want) {
		t.Fatalf("track('purchase') answered %v\nwant %v", purchase, want)
	}
	// The list is newest first to the millisecond.
	d.page("new Promise((r) => setTimeout(r, 5))", nil)
	viewed := track("'page.viewed'")
	want["eventId"], want["isConversion"] = viewed["eventId"], false
	if id, _ := viewed["eventId"].(string); id == "" || id == purchase["eventId"] || !reflect.DeepEqual(viewed, want) {
		t.Fatalf("track('page.viewed') answered %v\nwant %v", viewed, want)
	}
	posted := rb.all("POST", base+"/events")
	if len(posted) != 2 ||
		string(posted[0].Body) != fmt.Sprintf(`{"endpointId":%q,"auth":%q,"event":"purchase","properties":{"value":12.5}}`, ready.EndpointID, sub.Auth) ||
		string(posted[1].Body) != fmt.Sprintf(`{"endpointId":%q,"auth":%q,"event":"page.viewed"}`, ready.EndpointID, sub.Auth) {
		t.Fatalf("posted %q", posted)
	}
	if posted[0].Origin != site.URL {
		t.Errorf("posted from origin %q, want %q (cross-origin)", posted[0].Origin, site.URL)
	}
	evs := list()
	wantEvents := []listed{
		{ID: viewed["eventId"].(string), Name: "page.viewed", SubscriberID: &ready.SubscriberID, Properties: json.RawMessage(`{}`), Source: "browser"},
		{ID: purchase["eventId"].(string), Name: "purchase", SubscriberID: &ready.SubscriberID, Properties: json.RawMessage(`{"value":12.5}`), Source: "browser"},
	}
	if len(evs) == 2 && evs[0].CreatedAt.After(evs[1].CreatedAt) {
		wantEvents[0].CreatedAt, wantEvents[1].CreatedAt = evs[0].CreatedAt, evs[1].CreatedAt
	}
	if !reflect.DeepEqual(evs, wantEvents) {
		t.Fatalf("GET /events %+v\nwant %+v", evs, wantEvents)
	}

	// A send delivered to the browser: the worker reports it, and the next
	// purchase is credited to it.
	id := ts.send(w, map[string]any{"title": "Sale", "url": site.URL + "/sale"})
	if dt := ts.waitSent(w, id); dt.Notification.Sent != 1 {
		t.Fatalf("send: %+v", dt.Notification)
	}
	var plaintext []byte
	for _, dl := range b.Received() {
		if bytes.Contains(dl.Payload, []byte(id)) {
			plaintext = dl.Payload
		}
	}
	if plaintext == nil {
		t.Fatalf("the push service got no push of %s", id)
	}
	n := site.pushes.Load()
	d.call("cdp", map[string]any{"method": "ServiceWorker.deliverPushMessage",
		"params": map[string]string{"origin": site.URL, "registrationId": d.registrationID(site.URL + "/"), "data": string(plaintext)}}, nil)
	waitFor(t, "the worker to get the push", func() bool { return site.pushes.Load() > n })
	waitFor(t, "the delivered ping", func() bool { return len(rb.all("POST", base+"/pings/delivered")) == 1 })
	if ping := rb.all("POST", base+"/pings/delivered")[0]; string(ping.Body) != fmt.Sprintf(`{"notificationId":%q,"endpointId":%q}`, id, ready.EndpointID) {
		t.Fatalf("delivered ping %s", ping.Body)
	}
	credited := track("'purchase', { value: 30 }")
	want["eventId"], want["isConversion"] = credited["eventId"], true
	want["attribution"] = map[string]any{"notificationId": id, "value": 30.0}
	if !reflect.DeepEqual(credited, want) {
		t.Fatalf("track('purchase') after the send answered %v\nwant %v", credited, want)
	}

	// A secret the server does not know (the endpoint was renewed
	// elsewhere) rejects with the error's status and code.
	putState(fmt.Sprintf(`{"subscriberId":%q,"endpointId":%q,"endpoint":%q,"auth":"not-the-secret"}`, ready.SubscriberID, ready.EndpointID, sub.Endpoint))
	var refused string
	d.page(`RelayBell.track('purchase').then((a) => 'resolved ' + JSON.stringify(a), (e) => e.status + ' ' + e.code)`, &refused)
	if refused != "404 not_found" {
		t.Errorf("track with a wrong secret: %s, want 404 not_found", refused)
	}
	if n := len(list()); n != 3 {
		t.Errorf("%d events listed, want 3", n)
	}
}
