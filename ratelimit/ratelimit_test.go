package ratelimit

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/relaybell/relaybell/store"
	"github.com/relaybell/relaybell/store/postgres"
	"github.com/relaybell/relaybell/store/postgres/pgtest"
	"github.com/relaybell/relaybell/store/sqlite"
)

var t0 = time.Date(2026, 5, 1, 10, 0, 10, 0, time.UTC)

func limitOf(key string, max int64) store.RateLimit {
	return store.RateLimit{Key: key, Window: time.Minute, Max: max}
}

func openSQLite(t testing.TB) store.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "s.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// openPostgres opens a store in a schema of its own; two calls with the
// same dsn share it, as two nodes of a cluster do.
func openPostgres(t testing.TB, dsn string) store.Store {
	t.Helper()
	st, err := postgres.Open(context.Background(), dsn, nil)
	if err != nil {
		t.Skipf("PostgreSQL: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func postgresDSN(t testing.TB) string {
	t.Helper()
	return pgtest.DSN(t)
}

func take(t *testing.T, lm *Limiter, l store.RateLimit, now time.Time, n int, wantOK bool) {
	t.Helper()
	for i := 0; i < n; i++ {
		if _, ok := lm.Take(l, now); ok != wantOK {
			t.Fatalf("take %d of %d: ok %v, want %v", i+1, n, ok, wantOK)
		}
	}
}

// One node alone counts exactly, and a new window starts afresh.
func TestTakeOneNode(t *testing.T) {
	lm := New(openSQLite(t), nil)
	l := limitOf("ip:a", 5)
	for i := int64(1); i <= 5; i++ {
		if used, ok := lm.Take(l, t0); !ok || used != i {
			t.Fatalf("take %d: %d %v", i, used, ok)
		}
	}
	if used, ok := lm.Take(l, t0); ok || used != 5 {
		t.Fatalf("over: %d %v", used, ok)
	}
	if err := lm.Sync(context.Background(), t0); err != nil {
		t.Fatal(err)
	}
	if used, ok := lm.Take(l, t0.Add(time.Second)); ok || used != 5 {
		t.Fatalf("after a sync: %d %v", used, ok)
	}
	take(t, lm, limitOf("ip:b", 5), t0, 5, true) // another key
	take(t, lm, l, t0.Add(time.Minute), 5, true) // the next window
}

// Two nodes over one PostgreSQL store: what one counted, the other sees
// after their syncs; before, each admits at most the limit.
func TestTakeTwoNodes(t *testing.T) {
	dsn := postgresDSN(t)
	a, b := New(openPostgres(t, dsn), nil), New(openPostgres(t, dsn), nil)
	ctx := context.Background()
	l := limitOf("ip:c", 10)
	take(t, a, l, t0, 7, true)
	if err := a.Sync(ctx, t0); err != nil {
		t.Fatal(err)
	}
	take(t, b, l, t0, 1, true) // b has not read the total yet
	if err := b.Sync(ctx, t0); err != nil {
		t.Fatal(err)
	}
	take(t, b, l, t0, 2, true) // 7 + 1 + 2
	take(t, b, l, t0, 1, false)
	for _, n := range []*Limiter{b, a} { // b shares its 3, a reads 10
		if err := n.Sync(ctx, t0); err != nil {
			t.Fatal(err)
		}
	}
	take(t, a, l, t0, 1, false)

	// Both full before any sync: the overrun is bounded by one node's
	// admissions, and after the syncs both refuse.
	m := limitOf("ip:d", 10)
	take(t, a, m, t0, 10, true)
	take(t, b, m, t0, 10, true)
	for _, n := range []*Limiter{a, b, a} {
		if err := n.Sync(ctx, t0); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []*Limiter{a, b} {
		if used, ok := n.Take(m, t0); ok || used != 20 {
			t.Fatalf("after the syncs: %d %v", used, ok)
		}
	}
}

// flaky fails its first AddRateCounts and can hold one until released.
type flaky struct {
	store.Store
	mu      sync.Mutex
	fail    bool
	entered chan struct{}
	release chan struct{}
}

func (f *flaky) AddRateCounts(ctx context.Context, c []store.RateCount, now time.Time) ([]int64, error) {
	f.mu.Lock()
	fail := f.fail
	f.fail = false
	f.mu.Unlock()
	if fail {
		return nil, errors.New("down")
	}
	if f.entered != nil {
		f.entered <- struct{}{}
		<-f.release
	}
	return f.Store.AddRateCounts(ctx, c, now)
}

// A failed sync loses no count, and what is counted during a sync is kept
// for the next.
func TestSyncKeepsCounts(t *testing.T) {
	f := &flaky{Store: openSQLite(t), fail: true}
	lm := New(f, nil)
	ctx := context.Background()
	l := limitOf("ip:e", 100)
	take(t, lm, l, t0, 3, true)
	if err := lm.Sync(ctx, t0); err == nil {
		t.Fatal("the failing sync succeeded")
	}
	f.entered, f.release = make(chan struct{}), make(chan struct{})
	done := make(chan error)
	go func() { done <- lm.Sync(ctx, t0) }()
	<-f.entered
	take(t, lm, l, t0, 2, true) // during the sync
	close(f.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	f.entered = nil
	if err := lm.Sync(ctx, t0); err != nil {
		t.Fatal(err)
	}
	got, err := f.Store.AddRateCounts(ctx, []store.RateCount{{Limit: l, Start: l.WindowEnd(t0).Add(-l.Window)}}, t0)
	if err != nil || got[0] != 5 {
		t.Fatalf("shared count %v %v, want 5", got, err)
	}
}
