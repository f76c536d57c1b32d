package bus_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/bus"
	"github.com/relaybell/relaybell/store"
	storesqlite "github.com/relaybell/relaybell/store/sqlite"
)

// publishes records what the outbox publishes.
type publishes struct {
	mu      sync.Mutex
	intents []bus.Intent
}

func (p *publishes) Publish(_ context.Context, topic, _ string, value []byte) error {
	var in bus.Intent
	if err := json.Unmarshal(value, &in); err != nil {
		return err
	}
	p.mu.Lock()
	p.intents = append(p.intents, in)
	p.mu.Unlock()
	return nil
}
func (p *publishes) Consume(context.Context, string, string, int, bus.Handler) error { return nil }
func (p *publishes) Close() error                                                    { return nil }

// One sweep publishes a due scheduled send once and a committed send whose
// intent never reached the bus once, and later sweeps publish neither again.
func TestSweepPublishesEachSendOnce(t *testing.T) {
	ctx := context.Background()
	st, err := storesqlite.Open(ctx, filepath.Join(t.TempDir(), "store.db"), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Now().UTC().Truncate(time.Millisecond)
	acct := store.Account{ID: uuid.NewString(), EmailVerified: true, CreatedAt: now}
	site := store.Website{ID: uuid.NewString(), AccountID: acct.ID, ProjectID: uuid.NewString(), Name: "S",
		URL: "https://s.example", Timezone: "UTC", VAPIDPublicKey: "p", VAPIDPrivateKey: "k", CreatedAt: now}
	key := store.APIKey{ID: uuid.NewString(), WebsiteID: site.ID, Name: "k", Prefix: "rb_live_x", Hash: "h", Scopes: []string{"full"}, CreatedAt: now}
	if err := st.CreateWebsite(ctx, acct, site, key); err != nil {
		t.Fatal(err)
	}
	due := now.Add(-time.Minute)
	scheduled := store.Notification{ID: uuid.NewString(), WebsiteID: site.ID, Status: store.StatusScheduled,
		Title: "Due", Content: []byte(`{}`), CreatedAt: now.Add(-time.Hour), ScheduledAt: &due}
	stale := store.Notification{ID: uuid.NewString(), WebsiteID: site.ID, Status: store.StatusQueued,
		Title: "Never published", Content: []byte(`{}`), CreatedAt: now.Add(-time.Hour)}
	for _, n := range []*store.Notification{&scheduled, &stale} {
		if err := st.CreateNotification(ctx, n); err != nil {
			t.Fatal(err)
		}
	}

	p := &publishes{}
	o := bus.NewOutbox(st, p, slog.New(slog.DiscardHandler))
	for range 3 {
		if _, err := o.Sweep(ctx); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]int{}
	for _, in := range p.intents {
		got[in.NotificationID]++
	}
	if len(p.intents) != 2 || got[scheduled.ID] != 1 || got[stale.ID] != 1 {
		t.Fatalf("published %v, want each of %s and %s once", got, scheduled.ID, stale.ID)
	}
}

// keys records the partition key of each published intent.
type keys struct{ got []string }

func (k *keys) Publish(_ context.Context, _, key string, _ []byte) error {
	k.got = append(k.got, key)
	return nil
}
func (k *keys) Consume(context.Context, string, string, int, bus.Handler) error { return nil }
func (k *keys) Close() error                                                    { return nil }

// published is an OutboxStore that only takes MarkPublished.
type published struct{ bus.OutboxStore }

func (published) MarkPublished(context.Context, string, time.Time) error { return nil }

// A send's intent is keyed by its website, an automation's message (one
// person's) by its own id, so many of them spread over the partitions.
func TestIntentKeys(t *testing.T) {
	k := &keys{}
	o := bus.NewOutbox(published{}, k, slog.New(slog.DiscardHandler))
	for _, n := range []store.Notification{{ID: "n1", WebsiteID: "w"}, {ID: "n2", WebsiteID: "w", Automation: true}} {
		if err := o.Dispatch(context.Background(), n); err != nil {
			t.Fatal(err)
		}
	}
	if len(k.got) != 2 || k.got[0] != "w" || k.got[1] != "n2" {
		t.Fatalf("keys %q, want [w n2]", k.got)
	}
}
