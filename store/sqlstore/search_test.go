package sqlstore_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/relaybell/relaybell/store"
	"github.com/relaybell/relaybell/store/postgres"
	"github.com/relaybell/relaybell/store/sqlite"
	"github.com/relaybell/relaybell/store/sqlstore"
	"github.com/relaybell/relaybell/store/storetest"
)

// searchStore is an engine's store, with its connections.
type searchStore interface {
	store.Store
	DB() sqlstore.DB
}

// searchEngines make a new database of each engine (new) and open a store
// on it (open), as often as asked.
var searchEngines = []struct {
	name string
	new  func(t *testing.T) string
	open func(ctx context.Context, at string) (searchStore, error)
}{
	{
		name: "sqlite",
		new:  func(t *testing.T) string { return filepath.Join(t.TempDir(), "relaybell.db") },
		open: func(ctx context.Context, path string) (searchStore, error) { return sqlite.Open(ctx, path, nil) },
	},
	{
		name: "postgres",
		new: func(t *testing.T) string {
			dsn, err := postgres.WithSearchPath(storetest.PostgresDSN(), storetest.PostgresSchema(t))
			if err != nil {
				t.Fatal(err)
			}
			return dsn
		},
		open: func(ctx context.Context, dsn string) (searchStore, error) { return postgres.Open(ctx, dsn, nil) },
	},
}

// Notifications written before the search column existed are found once
// the store is opened again, more than a batch of them, by nodes (or
// processes) opening together; on SQLite every Open finds what is pending
// from the index, which holds only that.
func TestBackfillSearch(t *testing.T) {
	for _, e := range searchEngines {
		t.Run(e.name, func(t *testing.T) {
			ctx := context.Background()
			at := e.new(t)
			s, err := e.open(ctx, at)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			t.Cleanup(func() { s.Close() })
			acc := store.Account{ID: "acc", OwnerEmail: "a@example.com"}
			web := store.Website{ID: "web", AccountID: acc.ID, ProjectID: "prj", Name: "web", URL: "https://example.com", Timezone: "UTC"}
			if err := s.CreateWebsite(ctx, acc, web, store.APIKey{ID: "key", WebsiteID: web.ID, Hash: "h"}); err != nil {
				t.Fatal(err)
			}
			const rows = 2*sqlstore.SearchBatch + 3
			for i := 1; i <= rows; i++ {
				n := store.Notification{ID: fmt.Sprint("n", i), WebsiteID: web.ID, Status: store.StatusSent,
					Title: "Other", Body: "Straße"}
				if i%2 == 0 {
					n.Title = fmt.Sprint("ÜBER ", i)
				}
				if err := s.CreateNotification(ctx, &n); err != nil {
					t.Fatal(err)
				}
			}
			// As the migration that added the column leaves them.
			if _, err := s.DB().Write().Exec(ctx, `UPDATE notifications SET search = ''`); err != nil {
				t.Fatal(err)
			}

			var wg sync.WaitGroup
			errs := make([]error, 3)
			for i := range errs {
				wg.Go(func() {
					o, err := e.open(ctx, at)
					if err == nil {
						err = o.Close()
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
			if err := s.DB().Read().QueryRow(ctx, `SELECT count(*) FROM notifications WHERE search = ''`).Scan(&pending); err != nil {
				t.Fatal(err)
			}
			if pending != 0 {
				t.Fatalf("%d notifications without search after Open", pending)
			}
			var search string
			if err := s.DB().Read().QueryRow(ctx, `SELECT search FROM notifications WHERE id = 'n2'`).Scan(&search); err != nil {
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

			if e.name != "sqlite" {
				return
			}
			plan, err := s.DB().Read().Query(ctx, "EXPLAIN QUERY PLAN "+sqlstore.SearchPendingQuery, 0, sqlstore.SearchBatch)
			if err != nil {
				t.Fatal(err)
			}
			defer plan.Close()
			var steps []string
			for plan.Next() {
				var id, parent, unused int
				var detail string
				if err := plan.Scan(&id, &parent, &unused, &detail); err != nil {
					t.Fatal(err)
				}
				steps = append(steps, detail)
			}
			if !slices.Contains(steps, "SEARCH notifications USING INDEX notifications_search_pending (seq>?)") {
				t.Fatalf("the pending search query does not use its index: %q", steps)
			}
		})
	}
}
