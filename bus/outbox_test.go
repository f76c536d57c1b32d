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

// gatedMarks is an OutboxStore whose first MarkAllPublished waits for
// gate; it counts the calls.
type gatedMarks struct {
	bus.OutboxStore
	gate  chan struct{}
	mu    sync.Mutex
	calls int
}

func (g *gatedMarks) MarkAllPublished(ctx context.Context, ids []string, at time.Time) error {
	g.mu.Lock()
	g.calls++
	first := g.calls == 1
	g.mu.Unlock()
	if first {
		<-g.gate
	}
	return g.OutboxStore.MarkAllPublished(ctx, ids, at)
}

// With an Outbox, the pool's workers publish each send once and the sends
// published while a store write goes on are recorded together in the
// next: ten sends, the first write held until all ten are published, are
// recorded published in at most two writes (the first takes what was
// published when it began), and the sweep publishes none again.
func TestDispatchPoolMarksPublishedTogether(t *testing.T) {
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
	var sends []store.Notification
	for range 10 {
		n := store.Notification{ID: uuid.NewString(), WebsiteID: site.ID, Status: store.StatusQueued, Automation: true,
			Title: "Message", Content: []byte(`{}`), CreatedAt: now.Add(-time.Hour)}
		if err := st.CreateNotification(ctx, &n); err != nil {
			t.Fatal(err)
		}
		sends = append(sends, n)
	}
	marks := &gatedMarks{OutboxStore: st, gate: make(chan struct{})}
	p := &publishes{}
	o := bus.NewOutbox(marks, p, slog.New(slog.DiscardHandler))
	pool := bus.NewDispatchPool(o, 3, 10, nil)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { pool.Run(runCtx); close(done) }()
	for _, n := range sends {
		if err := pool.Dispatch(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); !ok(); runtime.Gosched() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not after a minute", what)
			}
		}
	}
	waitFor("ten intents published", func() bool { p.mu.Lock(); defer p.mu.Unlock(); return len(p.intents) == 10 })
	close(marks.gate)
	waitFor("every send marked published", func() bool {
		left, err := st.Unpublished(ctx, now, 0)
		return err == nil && len(left) == 0
	})
	cancel()
	<-done
	got := map[string]int{}
	for _, in := range p.intents {
		got[in.NotificationID]++
	}
	for _, n := range sends {
		if got[n.ID] != 1 {
			t.Fatalf("published %v, want each of the ten once", got)
		}
	}
	if marks.calls < 1 || marks.calls > 2 {
		t.Fatalf("%d store writes marked the ten sends published, want 1 or 2", marks.calls)
	}
	if n, err := o.Sweep(ctx); err != nil || n != 0 {
		t.Fatalf("the sweep published %d (%v), want none", n, err)
	}
}
