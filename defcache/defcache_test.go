package defcache

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/store"
	"github.com/relaybell/relaybell/store/sqlite"
)

func open(t *testing.T) (*sqlite.Store, string) {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "relaybell.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	id := uuid.NewString()
	now := time.Now().UTC()
	if err := st.CreateWebsite(ctx, store.Account{ID: uuid.NewString(), OwnerEmail: id[:8] + "@example.com", CreatedAt: now},
		store.Website{ID: id, ProjectID: "prj_" + id[:8], Name: "Site", URL: "https://example.com", Timezone: "UTC",
			VAPIDPublicKey: "pub" + id, VAPIDPrivateKey: "priv" + id, CreatedAt: now}, store.APIKey{}); err != nil {
		t.Fatal(err)
	}
	return st, id
}

func automation(websiteID, trigger string) store.Automation {
	now := time.Now().UTC()
	return store.Automation{ID: uuid.NewString(), WebsiteID: websiteID, Name: "A", Status: store.AutomationActive,
		TriggerType: trigger, Definition: []byte(`{}`), CreatedAt: now, UpdatedAt: now}
}

func count(t *testing.T, c *Store, websiteID string, types ...string) int {
	t.Helper()
	list, err := c.ActiveAutomations(context.Background(), websiteID, types...)
	if err != nil {
		t.Fatal(err)
	}
	return len(list)
}

// TestCachedUntilPurgeOrVersion: with a long TTL a change made behind the
// cache's back is not seen until Purge; with a TTL of 0 the definitions
// version shows it at once. Trigger types filter the cached list.
func TestCachedUntilPurgeOrVersion(t *testing.T) {
	ctx := context.Background()
	st, site := open(t)
	c := New(st, time.Hour, nil)
	if n := count(t, c, site); n != 0 {
		t.Fatalf("%d automations at first", n)
	}
	if err := st.CreateAutomation(ctx, automation(site, "event")); err != nil {
		t.Fatal(err)
	}
	if n := count(t, c, site); n != 0 {
		t.Fatalf("%d automations before the purge, want the cached 0", n)
	}
	c.Purge()
	if n := count(t, c, site); n != 1 {
		t.Fatalf("%d automations after the purge, want 1", n)
	}

	exact := New(st, 0, nil)
	if n := count(t, exact, site); n != 1 {
		t.Fatalf("%d automations, want 1", n)
	}
	if err := st.CreateAutomation(ctx, automation(site, "subscribed")); err != nil {
		t.Fatal(err)
	}
	if n := count(t, exact, site); n != 2 {
		t.Fatalf("TTL 0: %d automations after a change, want 2", n)
	}
	if n := count(t, exact, site, "subscribed"); n != 1 {
		t.Fatalf("of one trigger type: %d, want 1", n)
	}
	has, err := exact.HasJourneys(ctx, site)
	if err != nil || has {
		t.Fatalf("HasJourneys = %v, %v before any journey", has, err)
	}
}
