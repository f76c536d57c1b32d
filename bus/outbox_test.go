package bus_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"runtime"
	"slices"
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

// slowDispatch records what it publishes, each after gate opens.
type slowDispatch struct {
	gate chan struct{}
	mu   sync.Mutex
	got  []string
}

func (s *slowDispatch) Dispatch(_ context.Context, n store.Notification) error {
	<-s.gate
	s.mu.Lock()
	s.got = append(s.got, n.ID)
	s.mu.Unlock()
	return nil
}

// The pool's Dispatch returns before the publish; every queued send is
// published once by the workers.
func TestDispatchPoolPublishesEachOnce(t *testing.T) {
	d := &slowDispatch{gate: make(chan struct{})}
	p := bus.NewDispatchPool(d, 3, 10, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()
	for i := range 10 {
		if err := p.Dispatch(ctx, store.Notification{ID: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
	}
	close(d.gate) // nothing was published before the ten Dispatch calls returned
	for {
		d.mu.Lock()
		n := len(d.got)
		d.mu.Unlock()
		if n == 10 {
			break
		}
		runtime.Gosched()
	}
	cancel()
	<-done
	slices.Sort(d.got)
	if want := []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}; !slices.Equal(d.got, want) {
		t.Fatalf("published %v, want %v", d.got, want)
	}
}
