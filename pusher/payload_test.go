package pusher

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/notification"
	"github.com/relaybell/relaybell/store"
	"github.com/relaybell/relaybell/webpush/webpushtest"
)

// A send that fits with its merge tags at their fallbacks reaches a
// person whose value is long: that person's copy is cut to fit one push,
// at a rune boundary and with an ellipsis, never refused.
func TestLongMergeTagValueIsCutToFit(t *testing.T) {
	r := newRig(t, Config{MaxAttempts: 1})
	ctx := context.Background()
	id := uuid.NewString()
	pushOf := func(endpointID, body string) string {
		return `{"notificationId":"` + id + `","endpointId":"` + endpointID + `","title":"Hi","body":"` + body +
			`","url":"https://shop.example","icon":"","image":"","badge":"","actions":[],"requireInteraction":false,"tag":"","variant":null}`
	}
	// The body takes every byte left beside the other members, with
	// {name|friend} at its fallback.
	room := notification.MaxPayload - len(pushOf(uuid.NewString(), ""))
	text := "Dear {name|friend}, " + strings.Repeat("ü", (room-len("Dear friend, "))/2) + strings.Repeat("x", (room-len("Dear friend, "))%2)
	content, _ := json.Marshal(notification.Content{Title: "Hi", Body: text, URL: "https://shop.example", TTL: 600})
	n := store.Notification{ID: id, WebsiteID: r.site.ID, Status: store.StatusSending, Title: "Hi", Content: content, CreatedAt: time.Now()}
	if err := r.st.CreateNotification(ctx, &n); err != nil {
		t.Fatal(err)
	}

	plain, plainRecipient := r.browser(webpushtest.Behavior{})
	long, longRecipient := r.browser(webpushtest.Behavior{})
	longRecipient.Subscriber.Tags = map[string]string{"name": "Maximiliane-" + strings.Repeat("ö", 40)}
	if err := r.p.Push(ctx, Batch{NotificationID: id, WebsiteID: r.site.ID, Recipients: []store.Recipient{plainRecipient, longRecipient}}); err != nil {
		t.Fatal(err)
	}
	if got := r.countersOf(id); got != (store.Counters{Recipients: 2, Processed: 2, Sent: 2}) {
		t.Fatalf("counters %+v", got)
	}

	// At the fallback: exactly the limit, nothing cut.
	filled := strings.Replace(text, "{name|friend}", "friend", 1)
	want := pushOf(plainRecipient.Endpoint.ID, filled)
	if got := string(plain.Received()[0].Payload); got != want || len(got) != notification.MaxPayload {
		t.Fatalf("plain payload (%d bytes)\n %s\nwant (%d bytes)\n %s", len(got), got, len(want), want)
	}
	// With the long value: the body is cut where the push is full, never
	// inside a rune, and "…" ends it.
	merged := strings.Replace(text, "{name|friend}", longRecipient.Subscriber.Tags["name"], 1)
	keep := notification.MaxPayload - len(pushOf(longRecipient.Endpoint.ID, "…"))
	if !utf8.RuneStart(merged[keep]) { // the cut would split a rune
		keep--
	}
	want = pushOf(longRecipient.Endpoint.ID, merged[:keep]+"…")
	if got := string(long.Received()[0].Payload); got != want {
		t.Fatalf("long payload (%d bytes)\n %s\nwant (%d bytes)\n %s", len(got), got, len(want), want)
	}
}

// countersOf reads a notification's counters.
func (r *rig) countersOf(id string) store.Counters {
	r.t.Helper()
	n, err := r.st.NotificationByID(context.Background(), id)
	if err != nil {
		r.t.Fatal(err)
	}
	return n.Counters
}
