package sqlstore_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/relaybell/relaybell/store"
)

// A website's outbox events go with it (the interface has no way to delete
// a website yet, so this test deletes the row). The engines are
// search_test.go's.
func TestWebhookEventsOfDeletedWebsite(t *testing.T) {
	for _, e := range searchEngines {
		t.Run(e.name, func(t *testing.T) {
			ctx := context.Background()
			s, err := e.open(ctx, e.new(t))
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			t.Cleanup(func() { s.Close() })
			for _, id := range []string{"gone", "kept"} {
				acc := store.Account{ID: "acc-" + id, OwnerEmail: id + "@example.com"}
				web := store.Website{ID: id, AccountID: acc.ID, ProjectID: "prj-" + id, Name: id,
					URL: "https://example.com", Timezone: "UTC"}
				if err := s.CreateWebsite(ctx, acc, web, store.APIKey{ID: "key-" + id, WebsiteID: id, Hash: "h-" + id}); err != nil {
					t.Fatal(err)
				}
				for range 2 {
					if err := s.AddWebhookEvent(ctx, store.WebhookEvent{WebsiteID: id, Event: "test.event",
						Data: json.RawMessage(`{}`)}); err != nil {
						t.Fatal(err)
					}
				}
			}
			if _, err := s.DB().Write().Exec(ctx, `DELETE FROM websites WHERE id = 'gone'`); err != nil {
				t.Fatal(err)
			}
			es, err := s.WebhookEvents(ctx, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(es) != 2 || es[0].WebsiteID != "kept" || es[1].WebsiteID != "kept" {
				t.Fatalf("events after deleting a website: %+v, want the other website's 2", es)
			}
		})
	}
}
