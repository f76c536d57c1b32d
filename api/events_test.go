package api

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/relaybell/relaybell/notification"
	"github.com/relaybell/relaybell/store"
)

// outboxEvent is what a test expects of one webhook outbox event: its name
// and exact data.
type outboxEvent struct {
	Event string
	Data  string
}

// wantOutbox fails unless the outbox events after afterSeq are want, all
// of the harness website and, where at is not zero, made at at. It returns
// the seq of the last event (afterSeq when none).
func (h *harness) wantOutbox(t *testing.T, what string, afterSeq int64, at time.Time, want ...outboxEvent) int64 {
	t.Helper()
	es, err := h.st.WebhookEvents(context.Background(), afterSeq, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]outboxEvent, len(es))
	for i, e := range es {
		got[i] = outboxEvent{e.Event, string(e.Data)}
		if e.WebsiteID != h.site.WebsiteID || (!at.IsZero() && !e.CreatedAt.Equal(at)) {
			t.Errorf("%s: event %d of website %s at %v, want %s at %v", what, i, e.WebsiteID, e.CreatedAt, h.site.WebsiteID, at)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%s: events\n %v\nwant\n %v", what, got, want)
	}
	if len(es) == 0 {
		return afterSeq
	}
	return es[len(es)-1].Seq
}

func createdEvent(subscriberID, endpointID, externalID, device, country string) outboxEvent {
	return outboxEvent{store.EventSubscriberCreated, fmt.Sprintf(`{"subscriberId":%q,"endpointId":%q,"externalId":%s,"device":%q,"country":%q}`,
		subscriberID, endpointID, externalID, device, country)}
}

// listen gives the website an enabled webhook: without one the service
// stores none of its events.
func (h *harness) listen(t *testing.T) {
	t.Helper()
	if r := h.do("POST", "/api/v1/webhooks", `{"url":"https://hooks.example/in"}`, auth(h.site.APIKey)...); r.status != 201 {
		t.Fatalf("creating a webhook: %d %s", r.status, r.body)
	}
}

func TestSubscriberEvents(t *testing.T) {
	h := newHarness(t, func(c *testConfig) { c.CountryHeader = "CF-IPCountry" })
	h.listen(t)
	key := auth(h.site.APIKey)
	path := "/api/v1/projects/" + h.site.ProjectID + "/subscriptions"

	// A new browser: subscriber.created, once.
	laptop := subscribeBody(t, "https://fcm.googleapis.com/fcm/send/laptop", `,"externalId":"user-1"`)
	r := h.do("POST", path, laptop, "User-Agent", uaDesktop, "CF-IPCountry", "de")
	if r.status != 201 {
		t.Fatalf("subscribe: %d %s", r.status, r.body)
	}
	first := r.json(t)
	subscriberID, endpointID := first["subscriberId"].(string), first["endpointId"].(string)
	seq := h.wantOutbox(t, "events of a new browser", 0, testStart,
		createdEvent(subscriberID, endpointID, `"user-1"`, "desktop", "DE"))
	h.clock.Add(time.Minute)
	if r := h.do("POST", path, laptop, "User-Agent", uaDesktop, "CF-IPCountry", "fr"); r.status != 200 {
		t.Fatalf("subscribe again: %d %s", r.status, r.body)
	}
	seq = h.wantOutbox(t, "events of a known browser", seq, time.Time{})

	// An anonymous phone in an unknown country.
	phoneURL := "https://fcm.googleapis.com/fcm/send/phone"
	r = h.do("POST", path, subscribeBody(t, phoneURL, ""), "User-Agent", uaAndroid)
	phone := r.json(t)
	seq = h.wantOutbox(t, "events of an anonymous browser", seq, testStart.Add(time.Minute),
		createdEvent(phone["subscriberId"].(string), phone["endpointId"].(string), "null", "android", ""))

	// The visitor turns notifications off on the laptop: subscriber.unsubscribed,
	// and nothing for an endpoint already gone.
	for range 2 {
		if r := h.do("DELETE", path, `{"endpoint":"https://fcm.googleapis.com/fcm/send/laptop"}`); r.status != 200 {
			t.Fatalf("unsubscribe: %d %s", r.status, r.body)
		}
	}
	seq = h.wantOutbox(t, "events of an unsubscribe", seq, time.Time{}, outboxEvent{store.EventSubscriberUnsubscribed,
		fmt.Sprintf(`{"subscriberId":%q,"endpoint":"https://fcm.googleapis.com/fcm/send/laptop"}`, subscriberID)})

	// Erasing a person is not the visitor turning notifications off.
	if r := h.do("DELETE", "/api/v1/subscribers/"+phone["subscriberId"].(string), "", key...); r.status != 200 {
		t.Fatalf("erase: %d %s", r.status, r.body)
	}
	h.wantOutbox(t, "events of an erasure", seq, time.Time{})
}

func TestClickedEvents(t *testing.T) {
	h := newHarness(t)
	h.listen(t)
	key := auth(h.site.APIKey)
	base := "/api/v1/projects/" + h.site.ProjectID
	send := func(body string) string {
		t.Helper()
		r := h.do("POST", "/api/v1/notifications", body, key...)
		if r.status != 202 {
			t.Fatalf("send: %d %s", r.status, r.body)
		}
		return r.json(t)["notificationId"].(string)
	}
	ping := func(kind, notificationID, endpointID string) {
		t.Helper()
		r := h.do("POST", base+"/pings/"+kind, fmt.Sprintf(`{"notificationId":%q,"endpointId":%q}`, notificationID, endpointID))
		if r.status != 204 {
			t.Fatalf("%s ping: %d %s", kind, r.status, r.body)
		}
	}
	clicked := func(notificationID, variant string) outboxEvent {
		return outboxEvent{store.EventNotificationClicked, fmt.Sprintf(`{"notificationId":%q,"variant":%s}`, notificationID, variant)}
	}

	ab := send(`{"title":"Hi","ab":{"b":{"title":"Hey"}}}`)
	plain := send(`{"title":"Plain"}`)
	n, err := h.st.Notification(context.Background(), h.site.WebsiteID, ab)
	if err != nil {
		t.Fatal(err)
	}
	content, err := notification.DecodeContent(n.Content)
	if err != nil {
		t.Fatal(err)
	}
	// Browsers until one got each version of the A/B send.
	byVariant := map[string]string{}
	for i := 0; len(byVariant) < 2; i++ {
		if i == 64 {
			t.Fatalf("64 browsers, versions %v", byVariant)
		}
		r := h.do("POST", base+"/subscriptions", subscribeBody(t, fmt.Sprintf("https://push.example/%d", i), ""))
		id := r.json(t)["endpointId"].(string)
		byVariant[content.Variant(ab, id, "")] = id
	}
	seq := h.outboxSeq(t) // after the browsers' subscriber.created

	h.clock.Add(time.Hour)
	now := testStart.Add(time.Hour)
	// Delivered pings add no event.
	ping("delivered", ab, byVariant["a"])
	seq = h.wantOutbox(t, "events of a delivered ping", seq, now)

	// Each browser's first click, with the version it got; repeated clicks
	// add nothing.
	for range 2 {
		ping("clicked", ab, byVariant["b"])
		ping("clicked", ab, byVariant["a"])
		ping("clicked", plain, byVariant["a"])
	}
	seq = h.wantOutbox(t, "events of clicks", seq, now,
		clicked(ab, `"b"`), clicked(ab, `"a"`), clicked(plain, "null"))

	// Unknown ids and another website's send add nothing.
	other, err := CreateWebsite(context.Background(), h.st, NewWebsite{Name: "Other", URL: "https://other.example"}, testStart)
	if err != nil {
		t.Fatal(err)
	}
	r := h.do("POST", "/api/v1/notifications", `{"title":"Theirs"}`, auth(other.APIKey)...)
	if r.status != 202 {
		t.Fatalf("other website's send: %d %s", r.status, r.body)
	}
	ping("clicked", r.json(t)["notificationId"].(string), byVariant["a"])
	ping("clicked", "00000000-0000-4000-8000-000000000000", byVariant["a"])
	ping("clicked", ab, "00000000-0000-4000-8000-000000000000")
	h.wantOutbox(t, "events of unknown clicks", seq, now)

	if n, _ := h.st.Notification(context.Background(), h.site.WebsiteID, ab); n.Clicked != 2 || n.Delivered != 1 {
		t.Errorf("counters %+v", n.Counters)
	}
}

// outboxSeq is the seq of the outbox's last event, 0 when it is empty.
func (h *harness) outboxSeq(t *testing.T) int64 {
	t.Helper()
	es, err := h.st.WebhookEvents(context.Background(), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) == 0 {
		return 0
	}
	return es[len(es)-1].Seq
}
