package webhooks

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/relaybell/relaybell/store"
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
	// The bodies of the pause events, from the data the store writes.
	feed, _ := json.Marshal(store.FeedPausedData{FeedID: "f1", Name: "Blog", URL: "https://blog.example.com/feed",
		Reason: store.FeedPausedTopicDeleted, Error: `its topic "News" was deleted`})
	f(EventFeedPaused, feed,
		`{"event":"feed.paused","data":{"feedId":"f1","name":"Blog","url":"https://blog.example.com/feed","reason":"topic_deleted","error":"its topic \"News\" was deleted"},"projectId":"prj_1","at":"2026-03-01T12:04:05.678Z"}`)
	schedule, _ := json.Marshal(store.SchedulePausedData{ScheduleID: "s1", Name: "Digest", Reason: store.SchedulePausedTopicDeleted,
		Message: `Its topic "News" was deleted.`})
	f(EventSchedulePaused, schedule,
		`{"event":"schedule.paused","data":{"scheduleId":"s1","name":"Digest","reason":"topic_deleted","message":"Its topic \"News\" was deleted."},"projectId":"prj_1","at":"2026-03-01T12:04:05.678Z"}`)
	f(EventNotificationSent, json.RawMessage(`{}`),
		`{"event":"notification.sent","data":{},"projectId":"prj_1","at":"2026-03-01T12:04:05.678Z"}`)

	for _, bad := range []string{``, `null`, `[]`, `"x"`, `{"a":`} {
		if b, err := Body(EventTest, "prj_1", json.RawMessage(bad), at); err == nil {
			t.Errorf("Body(%q) = %s, want an error", bad, b)
		}
	}
}

func TestKinds(t *testing.T) {
	if len(Subscribable) != 6 || len(Kinds) != 7 || Kinds[6] != EventTest || Subscribable[4] != EventFeedPaused ||
		Subscribable[5] != EventSchedulePaused {
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
