package pusher

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/relaybell/relaybell/store"
)

// benchBatch is a fan-out batch of 500 recipients as the store reads them.
func benchBatch() Batch {
	b := Batch{NotificationID: "7f0c2a4e-1c53-4c39-9a51-0d1f4c8f7a10", WebsiteID: "0e8f9a44-2d0b-4f7e-8f39-5a2c41d6b7e2"}
	now := time.Now()
	for i := range 500 {
		id := fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
		b.Recipients = append(b.Recipients, store.Recipient{
			Endpoint: store.Endpoint{ID: id, SubscriberID: id, WebsiteID: b.WebsiteID,
				URL:    "https://fcm.googleapis.com/fcm/send/dGVzdC1lbmRwb2ludC10b2tlbi0" + id,
				P256dh: "BNcRdreALRFXTkOOUHK1EtK2wtaz5Ry4YfYCA_0QTpQtUbVlUls0VJXg7A8u-Ts1XbjhazAkj7I99e8QcYP7DkM",
				Auth:   "tBHItJI5svbpez7KI4CCXg", Device: "desktop", UserAgent: "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36",
				CreatedAt: now, LastSeenAt: now},
			Subscriber: store.Subscriber{ID: id, WebsiteID: b.WebsiteID, Language: "en", Timezone: "Europe/Berlin", Country: "DE",
				Tags: map[string]string{"plan": "pro"}, Shard: i % 64, CreatedAt: now, LastSeenAt: now},
		})
	}
	return b
}

// BenchmarkBatchWire compares the batch encoding fan-out and pusher nodes
// exchange with the JSON they used to; the ns/op of each sub-benchmark is
// per batch of 500.
func BenchmarkBatchWire(b *testing.B) {
	batch := benchBatch()
	js, _ := json.Marshal(batch)
	pb := encodeBatch(nil, batch)
	b.Logf("500 recipients: JSON %d bytes, wire %d bytes", len(js), len(pb))
	b.Run("encode/json", func(b *testing.B) {
		for b.Loop() {
			json.Marshal(batch)
		}
	})
	b.Run("encode/wire", func(b *testing.B) {
		for b.Loop() {
			encodeBatch(nil, batch)
		}
	})
	b.Run("decode/json", func(b *testing.B) {
		for b.Loop() {
			var out Batch
			if err := json.Unmarshal(js, &out); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode/wire", func(b *testing.B) {
		for b.Loop() {
			if _, err := decodeBatch(pb); err != nil {
				b.Fatal(err)
			}
		}
	})
}
