package pusher

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/relaybell/relaybell/notification"
	"github.com/relaybell/relaybell/store"
)

// carried is r as it arrives through the wire: what a pusher reads, and
// nothing else.
func carried(r store.Recipient, websiteID string) store.Recipient {
	e, s := r.Endpoint, r.Subscriber
	return store.Recipient{
		Endpoint: store.Endpoint{ID: e.ID, SubscriberID: s.ID, WebsiteID: websiteID, URL: e.URL, P256dh: e.P256dh, Auth: e.Auth, Device: e.Device,
			Language: e.Language},
		Subscriber: store.Subscriber{ID: s.ID, WebsiteID: websiteID, ExternalID: s.ExternalID, Country: s.Country,
			Language: s.Language, Timezone: s.Timezone, Tags: s.Tags},
	}
}

// TestBatchWireCarriesWhatPushingReads: a batch read back has the fields a
// pusher uses, and a payload built from it (every merge tag) is the one
// built from the recipient the fan-out read.
func TestBatchWireCarriesWhatPushingReads(t *testing.T) {
	hour := 9
	now := time.Now()
	full := store.Recipient{
		Endpoint: store.Endpoint{ID: "e1", SubscriberID: "s1", WebsiteID: "w", URL: "https://push.example/abc?x=1", P256dh: "BPk", Auth: "au",
			Device: "android", UserAgent: "Mozilla/5.0", Language: "de-AT", CreatedAt: now, LastSeenAt: now},
		Subscriber: store.Subscriber{ID: "s1", WebsiteID: "w", ExternalID: "user-7", Country: "FR", Language: "fr", Timezone: "Europe/Paris",
			URL: "https://shop.example/cart", Tags: map[string]string{"plan": "pro", "Name": "Ada", "empty": ""}, SmartHour: &hour, Shard: 12,
			CreatedAt: now, LastSeenAt: now},
	}
	bare := store.Recipient{Endpoint: store.Endpoint{ID: "e2", URL: "https://push.example/def", P256dh: "BQ", Auth: "x"}, Subscriber: store.Subscriber{ID: "s2"}}
	in := Batch{NotificationID: "n", WebsiteID: "w", Winner: "b", Recipients: []store.Recipient{full, bare}}

	got, err := decodeBatch(encodeBatch(nil, in))
	if err != nil {
		t.Fatal(err)
	}
	want := Batch{NotificationID: "n", WebsiteID: "w", Winner: "b", Recipients: []store.Recipient{carried(full, "w"), carried(bare, "w")}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("read back\n got  %+v\n want %+v", got, want)
	}
	c := notification.Content{Title: "{external_id} {country} {language} {timezone} {device} {subscriber_id}",
		Body: "{plan} {name} {empty}", URL: "https://shop.example/{plan}",
		Translations: map[string]notification.Translation{"de": {Body: "{plan} auf Deutsch"}}}
	for i := range in.Recipients {
		a, _ := json.Marshal(c.Payload("n", &in.Recipients[i], "b"))
		b, _ := json.Marshal(c.Payload("n", &got.Recipients[i], "b"))
		if string(a) != string(b) {
			t.Fatalf("recipient %d: payload\n %s\nthrough the wire\n %s", i, a, b)
		}
	}
}

// TestDecodeBatchRefusesTruncated: a prefix of a batch is refused unless
// it ends between two top-level fields, and then it reads as exactly the
// fields it holds: a cut field is never read as a shorter one.
func TestDecodeBatchRefusesTruncated(t *testing.T) {
	data := encodeBatch(nil, Batch{NotificationID: "n", WebsiteID: "w", Winner: "a",
		Recipients: []store.Recipient{{Endpoint: store.Endpoint{ID: "e", URL: "https://p.example/1"}, Subscriber: store.Subscriber{ID: "s", Tags: map[string]string{"k": "v"}}}}})
	// The top-level fields end after browser_languages (2 bytes), "n",
	// "w", "a" (3 bytes each) and the recipient. Nothing at all reads as
	// the empty batch.
	ends := map[int]bool{0: true, 2: true, 5: true, 8: true, 11: true, len(data): true}
	for n := range len(data) + 1 {
		b, err := decodeBatch(data[:n])
		switch {
		case ends[n] && err != nil:
			t.Fatalf("prefix %d of %d, on a field boundary: %v", n, len(data), err)
		case n == 0 && (len(b.Recipients) > 0 || b.NotificationID+b.WebsiteID+b.Winner != ""):
			t.Fatalf("nothing read as %+v", b)
		case ends[n] && n > 0 && string(encodeBatch(nil, b)) != string(data[:n]):
			t.Fatalf("prefix %d of %d read as %+v", n, len(data), b)
		case !ends[n] && err == nil:
			t.Fatalf("prefix %d of %d, cutting a field, read as %+v", n, len(data), b)
		}
	}
}

// TestDecodeBatchBoundsRecipients: a batch of more recipients than any
// fan-out sends is refused before they are all held.
func TestDecodeBatchBoundsRecipients(t *testing.T) {
	var data []byte
	for range maxBatchRecipients + 1 {
		data = append(data, 4<<3|2, 0) // field 4, length 0: an empty recipient
	}
	if _, err := decodeBatch(data[:2*maxBatchRecipients]); err != nil {
		t.Fatalf("%d recipients: %v", maxBatchRecipients, err)
	}
	if b, err := decodeBatch(data); err == nil {
		t.Fatalf("%d recipients read", len(b.Recipients))
	}
}

// FuzzDecodeBatch: any bytes are refused or read into a batch that encodes
// back to the same batch; never a panic.
func FuzzDecodeBatch(f *testing.F) {
	f.Add(encodeBatch(nil, Batch{NotificationID: "n", WebsiteID: "w", Winner: "a", Recipients: []store.Recipient{
		{Endpoint: store.Endpoint{ID: "e", URL: "https://p.example/1", P256dh: "k", Auth: "a", Device: "desktop"},
			Subscriber: store.Subscriber{ID: "s", Tags: map[string]string{"plan": "pro"}}}}}))
	f.Add([]byte(`{"notificationId":"n"}`))
	f.Add([]byte{0x22, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := decodeBatch(data)
		if err != nil {
			return
		}
		again, err := decodeBatch(encodeBatch(nil, b))
		if err != nil {
			t.Fatalf("re-reading: %v", err)
		}
		if !reflect.DeepEqual(again, b) {
			t.Fatalf("round trip\n got  %+v\n want %+v", again, b)
		}
	})
}

// TestBatchWireFromAnOlderFanout: a batch without browser_languages, as a
// fan-out node from before endpoints had a language of their own sends
// it, gives each browser its person's language.
func TestBatchWireFromAnOlderFanout(t *testing.T) {
	data := encodeBatch(nil, Batch{NotificationID: "n", WebsiteID: "w", Recipients: []store.Recipient{
		{Endpoint: store.Endpoint{ID: "e1", Language: "it"}, Subscriber: store.Subscriber{ID: "s1", Language: "fr"}},
		{Endpoint: store.Endpoint{ID: "e2"}, Subscriber: store.Subscriber{ID: "s2", Language: "de"}}}})
	if data[0] != 5<<3 || data[1] != 1 {
		t.Fatalf("the batch does not start with browser_languages: % x", data[:2])
	}
	for _, c := range []struct {
		name string
		data []byte
		want []string
	}{{"this version's", data, []string{"it", ""}}, {"an older fan-out's", data[2:], []string{"fr", "de"}}} {
		b, err := decodeBatch(c.data)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range b.Recipients {
			if r.Endpoint.Language != c.want[i] {
				t.Fatalf("%s batch: browser %d speaks %q, want %q", c.name, i, r.Endpoint.Language, c.want[i])
			}
		}
	}
}
