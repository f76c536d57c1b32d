package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/relaybell/relaybell/store"
	"github.com/relaybell/relaybell/store/storetest"
)

func openTest(t testing.TB) *Store {
	t.Helper()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "relaybell.db"), nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return openTest(t) })
}

var _ storetest.Fixtures = (*Store)(nil)

func TestOpenSettings(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	f := func(db string, pragma, want string) {
		t.Helper()
		var got string
		pool := s.w.db
		if db == "reader" {
			pool = s.r.db
		}
		if err := pool.QueryRowContext(ctx, "PRAGMA "+pragma).Scan(&got); err != nil {
			t.Fatalf("PRAGMA %s: %v", pragma, err)
		}
		if got != want {
			t.Fatalf("%s PRAGMA %s = %q, want %q", db, pragma, got, want)
		}
	}
	for _, db := range []string{"writer", "reader"} {
		f(db, "journal_mode", "wal")
		f(db, "foreign_keys", "1")
		f(db, "synchronous", "1") // NORMAL
		f(db, "busy_timeout", "10000")
	}
	f("reader", "query_only", "1")
	f("writer", "query_only", "0")
}

func TestMigrationsApplyOnce(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "relaybell.db")
	for range 3 {
		s, err := Open(ctx, path, nil)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		var n, version int
		if err := s.r.queryRow(ctx, `SELECT count(*), max(version) FROM schema_migrations`).Scan(&n, &version); err != nil {
			t.Fatalf("reading schema_migrations: %v", err)
		}
		if n != 1 || version != 1 {
			t.Fatalf("schema_migrations has %d rows, version %d; want 1, 1", n, version)
		}
		if err := s.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "relaybell.db")
	s, err := Open(ctx, path, nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if _, err := s.w.db.ExecContext(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES (9999, 0)`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s, err := Open(ctx, path, nil); err == nil {
		s.Close()
		t.Fatal("Open of a database from a newer binary succeeded")
	}
}

// A path with characters that mean something in a URI still names a file.
func TestOpenOddPath(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a?b#c%20d")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "relay bell.db")
	s, err := Open(context.Background(), path, nil)
	if err != nil {
		t.Fatalf("Open(%q): %v", path, err)
	}
	s.Close()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("database file: %v", err)
	}
}

func TestOpenRefusesMemory(t *testing.T) {
	for _, p := range []string{"", ":memory:", "file:x?mode=memory"} {
		if s, err := Open(context.Background(), p, nil); err == nil {
			s.Close()
			t.Fatalf("Open(%q) succeeded", p)
		}
	}
}

// The interface cannot show these yet: subscribers left without endpoints
// are marked unsubscribed, and topic opt-ins are stored.
func TestUnsubscribedAndTopics(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	acc := store.Account{ID: "acc", OwnerEmail: "o@example.com", CreatedAt: time.Now()}
	web := store.Website{ID: "web", AccountID: "acc", ProjectID: "prj", Name: "n", URL: "https://example.com", Timezone: "UTC"}
	if err := s.CreateWebsite(ctx, acc, web, store.APIKey{ID: "key", Hash: "h"}); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateTopic(ctx, "web", "t1", "News", "news", time.Time{}); err != nil {
		t.Fatal(err)
	}
	unsubscribedAt := func(subscriberID string) *time.Time {
		t.Helper()
		var p *time.Time
		if err := s.r.queryRow(ctx, `SELECT unsubscribed_at FROM subscribers WHERE id = ?`, subscriberID).
			Scan(msTimePtr{&p}); err != nil {
			t.Fatal(err)
		}
		return p
	}
	sub := func(url, ext string, topics ...string) store.SubscriptionResult {
		t.Helper()
		res, err := s.UpsertSubscription(ctx, store.SubscriptionInput{WebsiteID: "web", Endpoint: url, P256dh: "p", Auth: "a",
			ExternalID: ext, Topics: topics})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	a := sub("https://push.example/a", "", "NEWS", "nope")
	var optins int
	if err := s.r.queryRow(ctx, `SELECT count(*) FROM topic_optins WHERE topic_id = 't1' AND subscriber_id = ?`,
		a.SubscriberID).Scan(&optins); err != nil {
		t.Fatal(err)
	}
	if optins != 1 {
		t.Fatalf("%d opt-ins, want 1", optins)
	}

	if _, err := s.DeleteSubscription(ctx, "web", "https://push.example/a"); err != nil {
		t.Fatal(err)
	}
	if unsubscribedAt(a.SubscriberID) == nil {
		t.Fatal("subscriber without endpoints is not unsubscribed after DeleteSubscription")
	}

	b := sub("https://push.example/b", "")
	n := store.Notification{WebsiteID: "web", Status: store.StatusSending}
	if err := s.CreateNotification(ctx, &n); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordResults(ctx, n.ID, []store.PushResult{{EndpointID: b.EndpointID, Outcome: store.OutcomePruned}}); err != nil {
		t.Fatal(err)
	}
	if unsubscribedAt(b.SubscriberID) == nil {
		t.Fatal("subscriber without endpoints is not unsubscribed after pruning")
	}

	// An endpoint moving to the owner of an external id leaves its
	// subscriber without endpoints.
	c := sub("https://push.example/c", "")
	d := sub("https://push.example/d", "user")
	moved := sub("https://push.example/c", "user")
	if moved.SubscriberID != d.SubscriberID {
		t.Fatalf("endpoint did not move: %+v", moved)
	}
	if unsubscribedAt(c.SubscriberID) == nil {
		t.Fatal("subscriber left by its endpoint is not unsubscribed")
	}
	if unsubscribedAt(d.SubscriberID) != nil {
		t.Fatal("subscriber with endpoints is unsubscribed")
	}
}
