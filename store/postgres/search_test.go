package postgres

import (
	"context"
	"sync"
	"testing"

	"github.com/relaybell/relaybell/store"
)

// Notifications written before the search column existed are found once
// the store is opened again, more than a batch of them, by nodes opening
// together.
func TestBackfillSearch(t *testing.T) {
	ctx := context.Background()
	dsn := testSchema(t)
	s := openAt(t, dsn)
	acc := store.Account{ID: "acc", OwnerEmail: "a@example.com"}
	web := store.Website{ID: "web", AccountID: acc.ID, ProjectID: "prj", Name: "web", URL: "https://example.com", Timezone: "UTC"}
	if err := s.CreateWebsite(ctx, acc, web, store.APIKey{ID: "key", WebsiteID: web.ID, Hash: "h"}); err != nil {
		t.Fatal(err)
	}
	const rows = 2*searchBatch + 3
	// As migration 12 leaves them: search empty.
	if _, err := s.pool.Exec(ctx, `INSERT INTO notifications (id, website_id, status, title, body, created_at)
		SELECT 'n' || n, 'web', 'sent', CASE n % 2 WHEN 0 THEN 'ÜBER ' || n ELSE 'Other' END, 'Straße',
			now() + n * interval '1 ms'
		FROM generate_series(1, $1) AS n`, rows); err != nil {
		t.Fatal(err)
	}

	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Go(func() {
			o, err := Open(ctx, dsn, nil)
			if err == nil {
				o.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatalf("concurrent Open: %v", err)
		}
	}

	var pending int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM notifications WHERE search = ''`).Scan(&pending); err != nil {
		t.Fatal(err)
	}
	if pending != 0 {
		t.Fatalf("%d notifications without search after Open", pending)
	}
	var search string
	if err := s.pool.QueryRow(ctx, `SELECT search FROM notifications WHERE id = 'n2'`).Scan(&search); err != nil {
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
}
