package sqlite

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/relaybell/relaybell/store"
)

// Notifications written before the search column existed are found once
// the store is opened again, more than a batch of them.
func TestBackfillSearch(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "relaybell.db")
	s, err := Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	acc := store.Account{ID: "acc", OwnerEmail: "a@example.com"}
	web := store.Website{ID: "web", AccountID: acc.ID, ProjectID: "prj", Name: "web", URL: "https://example.com", Timezone: "UTC"}
	if err := s.CreateWebsite(ctx, acc, web, store.APIKey{ID: "key", WebsiteID: web.ID, Hash: "h"}); err != nil {
		t.Fatal(err)
	}
	const rows = 2*searchBatch + 3
	// As migration 11 leaves them: search empty.
	if _, err := s.w.db.ExecContext(ctx, `WITH RECURSIVE i (n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM i WHERE n < ?)
		INSERT INTO notifications (id, website_id, status, title, body, created_at)
		SELECT 'n' || n, 'web', 'sent', CASE n % 2 WHEN 0 THEN 'ÜBER ' || n ELSE 'Other' END, 'Straße', n FROM i`,
		rows); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(ctx, path, nil); err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	var pending int
	if err := s.r.db.QueryRowContext(ctx, `SELECT count(*) FROM notifications WHERE search = ''`).Scan(&pending); err != nil {
		t.Fatal(err)
	}
	if pending != 0 {
		t.Fatalf("%d notifications without search after Open", pending)
	}
	var search string
	if err := s.r.db.QueryRowContext(ctx, `SELECT search FROM notifications WHERE id = 'n2'`).Scan(&search); err != nil {
		t.Fatal(err)
	}
	if want := store.SearchText("ÜBER 2", "Straße"); search != want {
		t.Fatalf("search %q, want %q", search, want)
	}
	f := func(q string, want int) {
		t.Helper()
		got, err := s.ListNotifications(ctx, store.ListQuery{WebsiteID: web.ID, Q: q})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != want {
			t.Fatalf("q=%q found %d, want %d", q, len(got), want)
		}
	}
	f("über", rows/2)
	f("STRASSE", rows)
	f("other", rows-rows/2)

	// Every Open looks: from the index, which holds only what is pending.
	plan := queryPlan(t, s.r.db, "pending search", pendingSearchQuery, 0, searchBatch)
	if !slices.ContainsFunc(plan, func(step string) bool {
		return step == "SEARCH notifications USING INDEX notifications_search_pending (seq>?)"
	}) {
		t.Fatalf("the pending search query does not use its index: %q", plan)
	}
}
