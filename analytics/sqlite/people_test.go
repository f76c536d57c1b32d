package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/relaybell/relaybell/analytics"
)

// personEvent is a push event of person sub to browser "e-"+sub.
func personEvent(kind, sub string, ms int64) analytics.Event {
	return analytics.Event{Kind: kind, WebsiteID: "w1", NotificationID: "n1", EndpointID: "e-" + sub,
		SubscriberID: sub, Device: "desktop", Language: "en", At: time.UnixMilli(ms).UTC()}
}

// mark reads the last rowid the person index holds, and how many entries
// it has.
func mark(t *testing.T, s *Store) (upto, entries int64) {
	t.Helper()
	if err := s.db.QueryRow(`SELECT upto, (SELECT count(*) FROM events_people) FROM events_people_mark`).Scan(&upto, &entries); err != nil {
		t.Fatal(err)
	}
	return upto, entries
}

// kindsOf lists the kinds of the events PersonEvents gives for sub, and
// checks PersonCounts agrees.
func kindsOf(t *testing.T, s *Store, sub string) []string {
	t.Helper()
	ctx := context.Background()
	events, err := s.PersonEvents(ctx, "w1", []string{sub}, nil, 100)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	want := map[string]int64{}
	for _, e := range events {
		if e.SubscriberID != sub {
			t.Fatalf("events of %s: %+v", sub, e)
		}
		kinds = append(kinds, e.Kind)
		want[e.Kind]++
	}
	counts, err := s.PersonCounts(ctx, "w1", []string{sub})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(counts) != fmt.Sprint(want) {
		t.Fatalf("counts of %s %v, events %v", sub, counts, kinds)
	}
	return kinds
}

// TestPersonReadsBeforeAndAfterTheIndex: a person's events are found
// whether the indexer has indexed them yet or not, and when some are and
// some are not; each once.
func TestPersonReadsBeforeAndAfterTheIndex(t *testing.T) {
	ctx := context.Background()
	s := openNew(t)
	if err := s.Record(ctx, []analytics.Event{personEvent(analytics.KindSent, "s1", 1000), personEvent(analytics.KindSent, "s2", 1000)}); err != nil {
		t.Fatal(err)
	}
	if upto, n := mark(t, s); upto != 0 || n != 0 {
		t.Fatalf("indexed up to %d (%d entries) before the indexer ran", upto, n)
	}
	if got := kindsOf(t, s, "s1"); !slices.Equal(got, []string{"sent"}) {
		t.Fatalf("before the index: %v", got)
	}
	if err := s.indexPeople(ctx); err != nil {
		t.Fatal(err)
	}
	if upto, n := mark(t, s); upto != 2 || n != 2 {
		t.Fatalf("indexed up to %d (%d entries), want 2 (2)", upto, n)
	}
	if err := s.Record(ctx, []analytics.Event{personEvent(analytics.KindClicked, "s1", 2000)}); err != nil {
		t.Fatal(err)
	}
	if got := kindsOf(t, s, "s1"); !slices.Equal(got, []string{"clicked", "sent"}) {
		t.Fatalf("one indexed, one not: %v", got)
	}
	if err := s.indexPeople(ctx); err != nil {
		t.Fatal(err)
	}
	if got := kindsOf(t, s, "s1"); !slices.Equal(got, []string{"clicked", "sent"}) {
		t.Fatalf("both indexed: %v", got)
	}
	if got := kindsOf(t, s, "s2"); !slices.Equal(got, []string{"sent"}) {
		t.Fatalf("the other person: %v", got)
	}
}

// TestIndexerIndexesAfterWrites: a write wakes the indexer, which indexes
// what it wrote; and what a run closed (or killed) before its pass left is
// indexed after the next open, with no write.
func TestIndexerIndexesAfterWrites(t *testing.T) {
	ctx := context.Background()
	s := openNew(t)
	if err := s.Record(ctx, []analytics.Event{personEvent(analytics.KindSent, "s1", 1000), personEvent(analytics.KindSent, "s2", 1000)}); err != nil {
		t.Fatal(err)
	}
	waitIndexed(t, s, 2)
	path := s.db.QueryRow(`SELECT file FROM pragma_database_list WHERE name = 'main'`)
	var file string
	if err := path.Scan(&file); err != nil {
		t.Fatal(err)
	}
	if err := s.Record(ctx, []analytics.Event{personEvent(analytics.KindSent, "s3", 2000)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil { // before the pass
		t.Fatal(err)
	}
	s, err := Open(ctx, file)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	waitIndexed(t, s, 3)
}

// waitIndexed waits until the person index holds the n events.
func waitIndexed(t *testing.T, s *Store, n int64) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if upto, entries := mark(t, s); upto == n && entries == n {
			return
		}
		if time.Now().After(deadline) {
			upto, entries := mark(t, s)
			t.Fatalf("indexed up to %d (%d entries) after 30 s, want %d", upto, entries, n)
		}
	}
}

// TestIndexPeopleInChunks: a pass indexes at most peopleChunk events a
// transaction, and goes on until none is left.
func TestIndexPeopleInChunks(t *testing.T) {
	ctx := context.Background()
	s := openNew(t)
	s.people.Close() // the test runs the passes
	events := make([]analytics.Event, peopleChunk+10)
	for i := range events {
		events[i] = personEvent(analytics.KindSent, fmt.Sprintf("s%06d", len(events)-i), int64(i))
	}
	if err := s.Record(ctx, events); err != nil {
		t.Fatal(err)
	}
	done, err := s.indexPeopleChunk(ctx)
	if err != nil || done {
		t.Fatalf("first chunk: done %v, %v", done, err)
	}
	if upto, n := mark(t, s); upto != peopleChunk || n != peopleChunk {
		t.Fatalf("after one chunk: up to %d (%d entries), want %d", upto, n, peopleChunk)
	}
	if err := s.indexPeople(ctx); err != nil {
		t.Fatal(err)
	}
	if upto, n := mark(t, s); upto != int64(len(events)) || n != int64(len(events)) {
		t.Fatalf("after the pass: up to %d (%d entries), want %d", upto, n, len(events))
	}
	if got := kindsOf(t, s, "s000001"); !slices.Equal(got, []string{"sent"}) {
		t.Fatalf("the last event's person: %v", got)
	}
}

// TestErasureKeepsNewEventsIndexed: erasing the newest events brings the
// mark back to the newest left, so the events that take their rowids
// next are still indexed; the erased person's entries go with the rows.
func TestErasureKeepsNewEventsIndexed(t *testing.T) {
	ctx := context.Background()
	s := openNew(t)
	if err := s.Record(ctx, []analytics.Event{personEvent(analytics.KindSent, "s1", 1000), personEvent(analytics.KindSent, "s2", 1000)}); err != nil {
		t.Fatal(err)
	}
	if err := s.indexPeople(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Erase(ctx, "w1", []string{"s2"}, nil); err != nil {
		t.Fatal(err)
	}
	if upto, n := mark(t, s); upto != 1 || n != 1 {
		t.Fatalf("after the erasure: up to %d (%d entries), want 1 (1)", upto, n)
	}
	if got := kindsOf(t, s, "s2"); len(got) != 0 {
		t.Fatalf("erased person's events: %v", got)
	}
	if err := s.Record(ctx, []analytics.Event{personEvent(analytics.KindSent, "s3", 2000)}); err != nil {
		t.Fatal(err)
	}
	if got := kindsOf(t, s, "s3"); !slices.Equal(got, []string{"sent"}) {
		t.Fatalf("a new event in the erased one's rowid, not indexed: %v", got)
	}
	if err := s.indexPeople(ctx); err != nil {
		t.Fatal(err)
	}
	if got := kindsOf(t, s, "s3"); !slices.Equal(got, []string{"sent"}) {
		t.Fatalf("a new event in the erased one's rowid, indexed: %v", got)
	}
	if got := kindsOf(t, s, "s1"); !slices.Equal(got, []string{"sent"}) {
		t.Fatalf("the person kept: %v", got)
	}
}

// TestOpenMovesThePersonIndex: a file from before the person index has its
// events indexed and events_subscriber dropped at open.
func TestOpenMovesThePersonIndex(t *testing.T) {
	s := openOld(t, `CREATE TABLE events (website_id TEXT NOT NULL, notification_id TEXT NOT NULL,
		endpoint_id TEXT NOT NULL, subscriber_id TEXT NOT NULL, kind TEXT NOT NULL, device TEXT NOT NULL,
		language TEXT NOT NULL, variant TEXT NOT NULL, code TEXT NOT NULL, at INTEGER NOT NULL);
		CREATE INDEX events_notification_kind ON events (notification_id, kind);
		CREATE INDEX events_subscriber ON events (subscriber_id, at);
		INSERT INTO events VALUES ('w1', 'n1', 'e-s1', 's1', 'sent', 'desktop', 'en', '', '', 1000),
			('w1', 'n1', 'e-s2', 's2', 'sent', 'desktop', 'en', '', '', 1000),
			('w1', 'n1', 'e-s1', 's1', 'clicked', 'desktop', 'en', '', '', 2000)`)
	if upto, n := mark(t, s); upto != 3 || n != 3 {
		t.Fatalf("indexed up to %d (%d entries), want 3 (3)", upto, n)
	}
	var old int
	if err := s.db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE name = 'events_subscriber'`).Scan(&old); err != nil || old != 0 {
		t.Fatalf("events_subscriber left: %d, %v", old, err)
	}
	if got := kindsOf(t, s, "s1"); !slices.Equal(got, []string{"clicked", "sent"}) {
		t.Fatalf("the old file's person: %v", got)
	}
}

// TestOpenAfterADowngrade: a file an older version opened and wrote again
// after this one (its events_subscriber back, an event erased and one
// added without the person index knowing) opens, and its index is built
// anew.
func TestOpenAfterADowngrade(t *testing.T) {
	ctx := context.Background()
	s := openNew(t)
	if err := s.Record(ctx, []analytics.Event{personEvent(analytics.KindSent, "s1", 1000), personEvent(analytics.KindSent, "s2", 1000)}); err != nil {
		t.Fatal(err)
	}
	if err := s.indexPeople(ctx); err != nil {
		t.Fatal(err)
	}
	var file string
	if err := s.db.QueryRow(`SELECT file FROM pragma_database_list WHERE name = 'main'`).Scan(&file); err != nil {
		t.Fatal(err)
	}
	s.Close()
	old, err := sql.Open("sqlite", "file:"+file)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.Exec(`CREATE INDEX events_subscriber ON events (subscriber_id, at);
		DELETE FROM events WHERE subscriber_id = 's2';
		INSERT INTO events VALUES ('w1', 'n1', 'e-s3', 's3', 'sent', 'desktop', 'en', '', '', 2000)`); err != nil {
		t.Fatal(err)
	}
	old.Close()
	s, err = Open(ctx, file)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if upto, n := mark(t, s); upto != 2 || n != 2 { // s3 took the rowid s2 left
		t.Fatalf("indexed up to %d (%d entries), want 2 (2)", upto, n)
	}
	for sub, want := range map[string][]string{"s1": {"sent"}, "s2": nil, "s3": {"sent"}} {
		if got := kindsOf(t, s, sub); !slices.Equal(got, want) {
			t.Fatalf("%s: %v, want %v", sub, got, want)
		}
	}
}

// TestPersonReadsPlan: the person reads find the indexed events through
// events_people and the rest by a range of rowids, never by a scan of the
// whole table.
func TestPersonReadsPlan(t *testing.T) {
	text := queryPlan(t, openNew(t), `SELECT kind FROM events WHERE rowid IN (`+personRows+`) AND website_id = ?2`, `["s1"]`, "w1")
	if strings.Contains(text, "SCAN events") || !strings.Contains(text, "SEARCH events_people USING PRIMARY KEY") ||
		!strings.Contains(text, "SEARCH events USING INTEGER PRIMARY KEY (rowid>?)") {
		t.Fatalf("plan:\n%s", text)
	}
}
