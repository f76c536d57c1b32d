package sqlite

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/relaybell/relaybell/analytics"
	"github.com/relaybell/relaybell/store/sqlite/wal"
)

// behavior is a behavior b<n> of subscriber sub and external id ext of
// website w1, at ms.
func behavior(n, sub, ext string, ms int64) analytics.Behavior {
	return analytics.Behavior{ID: "b" + n, WebsiteID: "w1", Name: "viewed", SubscriberID: sub, ExternalID: ext,
		Properties: json.RawMessage(`{}`), Source: "server", At: time.UnixMilli(ms).UTC()}
}

// recordBehaviors records behaviors or fails the test.
func recordBehaviors(t *testing.T, s *Store, bs ...analytics.Behavior) {
	t.Helper()
	if err := s.RecordBehaviors(context.Background(), bs); err != nil {
		t.Fatal(err)
	}
}

// wantBehaviors checks the ids of the behaviors of the subscribers subs
// or the external id ext, newest first.
func wantBehaviors(t *testing.T, s *Store, what string, subs []string, ext string, want ...string) {
	t.Helper()
	list, err := s.Behaviors(context.Background(), analytics.BehaviorQuery{WebsiteID: "w1", SubscriberIDs: subs, ExternalID: ext, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	got := make([]string, len(list))
	for i, b := range list {
		got[i] = b.ID
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%s: behaviors of %v or %q: %v, want %v", what, subs, ext, got, want)
	}
}

// TestBehaviorReadsBeforeAndAfterTheIndex: a person's behaviors, by
// subscriber, by external id and by both, are the same, each once and
// newest first, before the indexer's pass, after it, and with some
// indexed and some not.
func TestBehaviorReadsBeforeAndAfterTheIndex(t *testing.T) {
	s := manual(t)
	recordBehaviors(t, s, behavior("1", "s1", "x1", 1000), behavior("2", "", "x1", 2000), behavior("3", "s1", "", 3000),
		behavior("4", "s2", "x2", 4000))
	check := func(what string) {
		t.Helper()
		wantBehaviors(t, s, what, []string{"s1"}, "", "b3", "b1")
		wantBehaviors(t, s, what, nil, "x1", "b2", "b1")
		wantBehaviors(t, s, what, []string{"s1"}, "x1", "b3", "b2", "b1")
		wantBehaviors(t, s, what, []string{"s1", "s2"}, "", "b4", "b3", "b1")
		wantBehaviors(t, s, what, []string{"s3"}, "x3", []string{}...)
	}
	check("before the pass")
	index(t, s)
	wantMark(t, s, &behaviorsPeople, "after the pass", 4, 6) // each non-empty key once
	check("after the pass")
	recordBehaviors(t, s, behavior("5", "s1", "x1", 5000))
	wantBehaviors(t, s, "one not indexed", []string{"s1"}, "x1", "b5", "b3", "b2", "b1")
	index(t, s)
	wantBehaviors(t, s, "all indexed", []string{"s1"}, "x1", "b5", "b3", "b2", "b1")
}

// TestIndexerIndexesBehaviors: recording behaviors wakes the indexer (one
// started anew, not woken by Open).
func TestIndexerIndexesBehaviors(t *testing.T) {
	s := openNew(t)
	s.people.Close()
	s.people = wal.StartAfter(peopleEvery, s.indexPass)
	recordBehaviors(t, s, behavior("1", "s1", "x1", 1000))
	waitMark(t, s, &behaviorsPeople, 1, 2)
}

// TestBehaviorErasureLeavesNoEntry: erasing a person by subscriber
// removes the index's entries of their behaviors under their external id
// too, and brings the mark back. The next behavior takes the erased one's
// rowid: an entry left under the old external id would give it to
// whoever reads that id.
func TestBehaviorErasureLeavesNoEntry(t *testing.T) {
	s := manual(t)
	recordBehaviors(t, s, behavior("1", "s1", "x1", 1000), behavior("2", "s2", "x2", 2000))
	index(t, s)
	if err := s.Erase(context.Background(), "w1", []string{"s2"}, nil); err != nil {
		t.Fatal(err)
	}
	wantMark(t, s, &behaviorsPeople, "after the erasure", 1, 2)
	wantBehaviors(t, s, "erased, by subscriber", []string{"s2"}, "", []string{}...)
	wantBehaviors(t, s, "erased, by external id", nil, "x2", []string{}...)
	recordBehaviors(t, s, behavior("3", "s3", "x3", 3000))
	var rowid int64
	if err := s.db.QueryRow(`SELECT rowid FROM behaviors WHERE id = 'b3'`).Scan(&rowid); err != nil || rowid != 2 {
		t.Fatalf("the new behavior's rowid: %d, %v; want the erased one's, 2", rowid, err)
	}
	index(t, s)
	wantMark(t, s, &behaviorsPeople, "the new behavior indexed", 2, 4)
	wantBehaviors(t, s, "the erased external id", nil, "x2", []string{}...)
	wantBehaviors(t, s, "the new person", []string{"s3"}, "x3", "b3")
	wantBehaviors(t, s, "the person kept", []string{"s1"}, "x1", "b1")
	// By external id alone: the behaviors not yet indexed as well.
	recordBehaviors(t, s, behavior("4", "s4", "x1", 4000))
	if err := s.Erase(context.Background(), "w1", nil, []string{"x1"}); err != nil {
		t.Fatal(err)
	}
	wantBehaviors(t, s, "erased by external id", []string{"s1", "s4"}, "x1", []string{}...)
	wantMark(t, s, &behaviorsPeople, "after the second erasure", 2, 2)
}

// TestOpenMovesTheBehaviorIndex: a file whose behaviors have the indexes
// by person of an earlier version (or of one it was downgraded to, which
// erased a behavior and added one without the index knowing) loses them
// at open, and its index is built anew.
func TestOpenMovesTheBehaviorIndex(t *testing.T) {
	s := manual(t)
	recordBehaviors(t, s, behavior("1", "s1", "x1", 1000), behavior("2", "s2", "x2", 2000))
	index(t, s)
	s = downgrade(t, s, `CREATE INDEX behaviors_subscriber_seq ON behaviors (website_id, subscriber_id, at, seq, id);
		CREATE INDEX behaviors_external_seq ON behaviors (website_id, external_id, at, seq, id);
		DELETE FROM behaviors WHERE id = 'b2';
		INSERT INTO behaviors (id, website_id, subscriber_id, external_id, at, name, source, notification_id, value, conversion, seq, properties)
			VALUES ('b3', 'w1', 's3', 'x3', 3000, 'viewed', 'server', '', 0, 0, 0, '{}')`)
	var left int
	if err := s.db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE name LIKE 'behaviors_%_seq' AND name <> 'behaviors_website_seq'`).Scan(&left); err != nil || left != 0 {
		t.Fatalf("old indexes left: %d, %v", left, err)
	}
	wantBehaviors(t, s, "at open", nil, "x2", []string{}...)
	wantBehaviors(t, s, "at open", []string{"s3"}, "", "b3")
	waitMark(t, s, &behaviorsPeople, 2, 4)
	wantBehaviors(t, s, "indexed", nil, "x2", []string{}...)
	wantBehaviors(t, s, "indexed", []string{"s3"}, "x3", "b3")
	wantBehaviors(t, s, "indexed", []string{"s1"}, "x1", "b1")
}

// TestBehaviorReadsPlan: a person's behaviors, their erasure and their
// entries' removal search behaviors_people by key and the behaviors by
// rowid, never a scan of either table or the website's whole index.
func TestBehaviorReadsPlan(t *testing.T) {
	s := openNew(t)
	for _, c := range []struct {
		name  string
		query string
		args  []any
	}{
		{"person", personBehaviors, []any{"w1", 10, `["s1"]`, "x1"}},
		{"erased", erasedBehaviors, []any{"w1", `["s1"]`, `["x1"]`}},
		{"unindex", unindexBehaviors, []any{"w1", `[1, 2]`, 1, `["x1"]`}},
	} {
		text := queryPlan(t, s, c.query, c.args...)
		if strings.Contains(text, "SCAN behaviors") || strings.Contains(text, "behaviors_website_seq") ||
			strings.Contains(text, "PRIMARY KEY (website_id=?)") ||
			!strings.Contains(text, "SEARCH behaviors_people USING PRIMARY KEY (website_id=? AND by_external=? AND key=?)") {
			t.Errorf("%s's plan:\n%s", c.name, text)
		}
	}
}
