package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/store"
)

// BenchmarkConversionBurst is a burst of conversions of one popular
// notification from 32 concurrent requests: each recorded as a credit row
// (Attribute; FoldConversions later adds them up a batch at a time,
// counted in the figure) against the counters updated in place, an UPDATE
// of the notification's row per conversion, which every request queues on
// (counter). The ratio of the two is what batching the counters buys.
func BenchmarkConversionBurst(b *testing.B) {
	ctx := context.Background()
	for _, c := range []string{"credits", "counter"} {
		b.Run(c, func(b *testing.B) {
			s := openTest(b)
			w := store.Website{ID: uuid.NewString(), ProjectID: uuid.NewString(), Name: "Shop", URL: "https://shop.example", Timezone: "UTC"}
			a := store.Account{ID: uuid.NewString(), OwnerEmail: "o@shop.example"}
			w.AccountID = a.ID
			if err := s.CreateWebsite(ctx, a, w, store.APIKey{}); err != nil {
				b.Fatal(err)
			}
			n := store.Notification{WebsiteID: w.ID, Status: store.StatusSent, Title: "Sale"}
			if err := s.CreateNotification(ctx, &n); err != nil {
				b.Fatal(err)
			}
			at := time.Now()
			p, err := s.UpsertSubscription(ctx, store.SubscriptionInput{WebsiteID: w.ID, Endpoint: "https://push.example/p",
				P256dh: "BP256", Auth: "auth", At: at})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := s.RecordInteraction(ctx, w.ID, n.ID, p.EndpointID, store.InteractionDelivered, at, nil); err != nil {
				b.Fatal(err)
			}
			b.SetParallelism(16) // 32 requests at once on 2 cores
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					var err error
					if c == "credits" {
						_, err = s.Attribute(ctx, w.ID, []store.Attribution{{EventID: uuid.NewString(), SubscriberID: p.SubscriberID,
							Since: at.Add(-time.Hour), At: at, Value: 9.5}})
					} else {
						_, err = s.DB().Write().Exec(ctx, `UPDATE notifications SET conversions = conversions + 1, revenue = revenue + $2
							WHERE id = $1 AND website_id = $3`, n.ID, 9.5, w.ID)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
			})
			for c == "credits" {
				folded, err := s.FoldConversions(ctx, 1000)
				if err != nil {
					b.Fatal(err)
				}
				if folded == 0 {
					break
				}
			}
			got, err := s.NotificationByID(ctx, n.ID)
			if err != nil || got.Conversions != int64(b.N) {
				b.Fatalf("conversions %d after %d, %v", got.Conversions, b.N, err)
			}
		})
	}
}
