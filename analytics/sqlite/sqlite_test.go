package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/relaybell/relaybell/analytics"
	"github.com/relaybell/relaybell/analytics/analyticstest"
)

func TestStore(t *testing.T) {
	analyticstest.Run(t, func(t *testing.T) analytics.Store {
		s, err := Open(context.Background(), filepath.Join(t.TempDir(), "analytics.db"))
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// TestOpenAddsSeq: a file from before Behavior.Seq gets the column and the
// indexes that end in it; its behaviors read back with seq 0, before the
// newer of their millisecond.
func TestOpenAddsSeq(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "analytics.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE behaviors (id TEXT NOT NULL PRIMARY KEY, website_id TEXT NOT NULL,
		subscriber_id TEXT NOT NULL, external_id TEXT NOT NULL, at INTEGER NOT NULL, name TEXT NOT NULL, source TEXT NOT NULL,
		notification_id TEXT NOT NULL, value REAL NOT NULL, conversion INTEGER NOT NULL, properties TEXT NOT NULL);
		CREATE INDEX behaviors_website ON behaviors (website_id, at, id);
		INSERT INTO behaviors VALUES ('z-old', 'w1', '', '', 1000, 'a', 'server', '', 0, 0, '{}')`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b := analytics.Behavior{ID: "a-new", WebsiteID: "w1", Name: "b", Source: "server", At: time.UnixMilli(1000).UTC(), Seq: 7}
	if err := s.RecordBehaviors(ctx, []analytics.Behavior{b}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Behaviors(ctx, analytics.BehaviorQuery{WebsiteID: "w1", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != "a-new" || got[0].Seq != 7 || got[1].ID != "z-old" || got[1].Seq != 0 {
		t.Fatalf("behaviors %+v", got)
	}
	var old int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE name = 'behaviors_website'`).Scan(&old); err != nil || old != 0 {
		t.Fatalf("the old index: %d, %v", old, err)
	}
}
