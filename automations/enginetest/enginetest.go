// Package enginetest holds what the tests of the timer engine share, in
// package automations and in package journeys (which runs on it): a
// settable clock, stores of both engines (nodes of one PostgreSQL), a
// website to run in, the count of what was sent and the check that each
// went once. It must not import automations, whose own tests use it.
package enginetest

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/store"
	"github.com/relaybell/relaybell/store/postgres"
	"github.com/relaybell/relaybell/store/postgres/pgtest"
	"github.com/relaybell/relaybell/store/sqlite"
)

// Start is the time the tests start at.
var Start = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// Clock is a settable clock, safe for engines on several goroutines.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock is a clock at now.
func NewClock(now time.Time) *Clock { return &Clock{now: now} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Set puts the clock at t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// Add moves the clock on by d.
func (c *Clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// OpenPostgres opens count stores on one new PostgreSQL schema: the
// connections of as many nodes. It skips the test with -short.
func OpenPostgres(t *testing.T, count int) []store.Store {
	t.Helper()
	if testing.Short() {
		t.Skip("PostgreSQL: not with -short")
	}
	dsn := pgtest.DSN(t)
	var out []store.Store
	for range count {
		st, err := postgres.Open(context.Background(), dsn, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		out = append(out, st)
	}
	return out
}

// OpenSQLite opens a store on a new SQLite file.
func OpenSQLite(t *testing.T) store.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "store.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// Stores are the stores a test runs on once each: a SQLite file, and a
// PostgreSQL node (skipped with -short).
var Stores = []struct {
	Name string
	Open func(t *testing.T) store.Store
}{{"sqlite", OpenSQLite}, {"postgres", func(t *testing.T) store.Store { return OpenPostgres(t, 1)[0] }}}

// Website makes a new website, in UTC, of a new account.
func Website(t *testing.T, st store.Store) store.Website {
	t.Helper()
	id := uuid.NewString()
	a := store.Account{ID: uuid.NewString(), OwnerEmail: id[:8] + "@example.com", EmailVerified: true, CreatedAt: Start}
	w := store.Website{ID: id, AccountID: a.ID, ProjectID: "prj_" + id[:12], Name: "Shop", URL: "https://shop.example",
		Timezone: "UTC", VAPIDPublicKey: "pub" + id, VAPIDPrivateKey: "priv" + id, CreatedAt: Start}
	if err := st.CreateWebsite(context.Background(), a, w, store.APIKey{}); err != nil {
		t.Fatal(err)
	}
	return w
}

// Sent counts the website's notifications that of picks (an
// automation's, a journey's) per (person, title).
func Sent(t *testing.T, st store.Store, websiteID string, of func(store.Notification) bool) map[string]int {
	t.Helper()
	list, err := st.ListNotifications(context.Background(), store.ListQuery{WebsiteID: websiteID, Limit: 100_000})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, n := range list {
		if of(n) {
			out[string(n.Target)+" "+n.Title]++
		}
	}
	return out
}

// CheckOnce fails the test unless got, as Sent counts, holds want
// distinct pushes, each sent once.
func CheckOnce(t *testing.T, got map[string]int, want int) {
	t.Helper()
	if len(got) != want {
		t.Fatalf("%d distinct pushes sent, want %d", len(got), want)
	}
	for k, n := range got {
		if n != 1 {
			t.Fatalf("%s sent %d times", k, n)
		}
	}
}

// Runner is an engine that fires the timers due.
type Runner interface {
	RunDue(ctx context.Context) (int, error)
}

// RunAtOnce runs each engine's RunDue at the same time, as nodes do, and
// answers how many timers each fired.
func RunAtOnce[R Runner](t *testing.T, engines []R) []int {
	t.Helper()
	var wg sync.WaitGroup
	fired := make([]int, len(engines))
	for i, e := range engines {
		wg.Go(func() {
			n, err := e.RunDue(context.Background())
			if err != nil {
				t.Error(err)
			}
			fired[i] = n
		})
	}
	wg.Wait()
	return fired
}
