package webhooks

import (
	"encoding/json"
	"testing"
	"time"
)

func TestBody(t *testing.T) {
	at := time.Date(2026, 3, 1, 13, 4, 5, 678_900_000, time.FixedZone("CET", 3600))
	f := func(event string, data json.RawMessage, want string) {
		t.Helper()
		got, err := Body(event, "prj_1", data, at)
		if err != nil {
			t.Fatalf("Body(%s): %v", data, err)
		}
		if string(got) != want {
			t.Fatalf("Body(%s)\n %s\nwant\n %s", data, got, want)
		}
	}
	f(EventTest, json.RawMessage(`{ "webhookId": "w1",
		"message": "a <b> & c" }`),
		`{"event":"webhook.test","data":{"webhookId":"w1","message":"a <b> & c"},"projectId":"prj_1","at":"2026-03-01T12:04:05.678Z"}`)
	f(EventNotificationSent, json.RawMessage(`{}`),
		`{"event":"notification.sent","data":{},"projectId":"prj_1","at":"2026-03-01T12:04:05.678Z"}`)

	for _, bad := range []string{``, `null`, `[]`, `"x"`, `{"a":`} {
		if b, err := Body(EventTest, "prj_1", json.RawMessage(bad), at); err == nil {
			t.Errorf("Body(%q) = %s, want an error", bad, b)
		}
	}
}

func TestKinds(t *testing.T) {
	if len(Subscribable) != 5 || len(Kinds) != 6 || Kinds[5] != EventTest || Subscribable[4] != EventFeedPaused {
		t.Fatalf("Subscribable %v, Kinds %v", Subscribable, Kinds)
	}
	for _, k := range Kinds {
		if !IsKind(k) {
			t.Errorf("IsKind(%s) = false", k)
		}
	}
	if IsKind("subscriber.deleted") || IsKind("") {
		t.Error("IsKind accepts an unknown name")
	}
}
