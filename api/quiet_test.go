package api

import (
	"testing"
	"time"
)

func TestQuietHours(t *testing.T) {
	h := newHarness(t)
	key := h.site.APIKey
	if r := h.do("PUT", "/api/v1/settings", `{"timezone":"Europe/Paris","quietHours":{"start":"22:00","end":"7:00"}}`, auth(key)...); r.status != 200 {
		t.Fatalf("settings: %d %s", r.status, r.body)
	}
	// 13:00 in Paris: out at once.
	if r := h.post(key, `{"title":"noon"}`); string(r.body) != `{"ok":true,"notificationId":"`+r.json(t)["notificationId"].(string)+`","status":"queued"}` {
		t.Fatalf("outside quiet hours: %s", r.body)
	}
	// A sendAt inside quiet hours waits for their end; one outside keeps its time.
	r := h.post(key, `{"title":"midnight","sendAt":"2026-03-01T23:00:00Z"}`)
	id := r.json(t)["notificationId"].(string)
	want := `{"ok":true,"notificationId":"` + id + `","status":"scheduled",` +
		`"message":"Held by the website's quiet hours (22:00-07:00, Europe/Paris); it goes out at 2026-03-02T06:00:00Z."}`
	if string(r.body) != want {
		t.Fatalf("body\n %s\nwant\n %s", r.body, want)
	}
	if d := h.detailOf(t, id); d["scheduled_at"] != "2026-03-02T06:00:00.000Z" {
		t.Fatalf("scheduled_at %v", d["scheduled_at"])
	}
	r = h.post(key, `{"title":"evening","sendAt":"2026-03-01T19:00:00Z"}`)
	if r.json(t)["message"] != nil || h.detailOf(t, r.json(t)["notificationId"].(string))["scheduled_at"] != "2026-03-01T19:00:00.000Z" {
		t.Fatalf("sendAt outside quiet hours: %s", r.body)
	}

	// 22:30 in Paris.
	h.clock.Add(9*time.Hour + 30*time.Minute)
	r = h.post(key, `{"title":"late"}`)
	if r.json(t)["status"] != "scheduled" || h.detailOf(t, r.json(t)["notificationId"].(string))["scheduled_at"] != "2026-03-02T06:00:00.000Z" {
		t.Fatalf("during quiet hours: %s", r.body)
	}
	// A cancelable scheduled send.
	if c := h.do("POST", "/api/v1/notifications/"+r.json(t)["notificationId"].(string)+"/cancel", "", auth(key)...); c.status != 200 {
		t.Fatalf("cancel: %d %s", c.status, c.body)
	}
	// Transactional sends, and per-time-zone and smart-time ones, start now.
	for _, body := range []string{
		`{"title":"receipt","transactional":true,"externalId":"u1"}`,
		`{"title":"local","perTimezone":true,"localTime":"9:00"}`,
		`{"title":"smart","smartTime":true}`,
	} {
		if st := h.post(key, body).json(t)["status"]; st != "queued" {
			t.Fatalf("%s: %v", body, st)
		}
	}
	// A draft sent during quiet hours follows the same rule.
	draft := h.post(key, `{"title":"draft","draft":true}`).json(t)["notificationId"].(string)
	if st := h.do("POST", "/api/v1/notifications/"+draft+"/send", "", auth(key)...).json(t)["status"]; st != "scheduled" {
		t.Fatalf("draft sent in quiet hours: %v", st)
	}
	// Turning quiet hours off: out at once again.
	h.do("PUT", "/api/v1/settings", `{"quietHours":null}`, auth(key)...)
	if st := h.post(key, `{"title":"now"}`).json(t)["status"]; st != "queued" {
		t.Fatalf("after turning quiet hours off: %v", st)
	}
}
