package postgres

import (
	"context"
	"fmt"
	"testing"

	"github.com/relaybell/relaybell/store"
	"github.com/relaybell/relaybell/store/sqlstore"
	"github.com/relaybell/relaybell/store/storetest"
)

// BenchmarkQueueWebhookDeliveries queues what one step of the webhook
// engine's Queue does at most: the deliveries of 500 outbox events to one
// webhook, in one transaction. batch is the store as it is (its
// transactions pipeline: sqlstore.Pipeline), loop one Exec of a delivery
// after another.
func BenchmarkQueueWebhookDeliveries(b *testing.B) {
	for _, bc := range []struct {
		name      string
		pipelined bool
	}{{"batch", true}, {"loop", false}} {
		b.Run(bc.name, func(b *testing.B) {
			s := benchStore(b)
			if !bc.pipelined {
				s.Store = s.Store.WithDB(unpipelined{s.DB()})
			}
			benchQueueWebhookDeliveries(b, s)
		})
	}
}

// unpipelined is a DB whose transactions pipeline nothing: their
// statements go one after the other, as SQLite's.
type unpipelined struct{ sqlstore.DB }

func (u unpipelined) Tx(ctx context.Context, opt sqlstore.TxOptions, fn func(tx sqlstore.Conn) error) error {
	return u.DB.Tx(ctx, opt, func(tx sqlstore.Conn) error { return fn(struct{ sqlstore.Conn }{tx}) })
}

func benchQueueWebhookDeliveries(b *testing.B, s store.Store) {
	ctx := context.Background()
	if err := s.CreateWebhook(ctx, store.Webhook{ID: "wh", WebsiteID: storetest.BenchWebsite,
		URL: "https://example.com/hook", Secret: "whsec_x", Enabled: true}); err != nil {
		b.Fatal(err)
	}
	const events = 500
	body := []byte(`{"type":"subscriber.created","data":{"subscriber_id":"0b9f3c1e-6d7a-4f0e-9c2b-5a8d7e6f1a2b"}}`)
	ds := make([]store.WebhookDelivery, events)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := range ds {
			ds[j] = store.WebhookDelivery{WebhookID: "wh", Event: "subscriber.created",
				EventID: fmt.Sprintf("e%d-%d", i, j), Body: body}
		}
		moved, err := s.QueueWebhookDeliveries(ctx, int64(i), int64(i+1), ds)
		if err != nil || !moved {
			b.Fatalf("queuing: moved %v, %v", moved, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*events), "ns/delivery")
}
