package sqlite

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relaybell/relaybell/analytics"
)

// personEvent is a push event of person sub to browser "e-"+sub.
func personEvent(kind, sub string, ms int64) analytics.Event {
	return analytics.Event{Kind: kind, WebsiteID: "w1", NotificationID: "n1", EndpointID: "e-" + sub,
		SubscriberID: sub, Device: "desktop", Language: "en", At: time.UnixMilli(ms).UTC()}
}

// mark reads the last rowid p holds, and how many entries it has.
func mark(t *testing.T, s *Store, p *personIndex) (upto, entries int64) {
	t.Helper()
	if err := s.p.QueryRow(`SELECT upto, (SELECT count(*) FROM `+p.entries+`) FROM `+p.mark).Scan(&upto, &entries); err != nil {
		t.Fatal(err)
	}
	return upto, entries
}

// wantMark checks the mark and the entries of p.
func wantMark(t *testing.T, s *Store, p *personIndex, what string, upto, entries int64) {
	t.Helper()
	if u, n := mark(t, s, p); u != upto || n != entries {
		t.Fatalf("%s: %s indexed up to %d (%d entries), want %d (%d)", what, p.table, u, n, upto, entries)
	}
}

// manual opens a new file whose indexer does not run: the test runs the
// passes (index).
func manual(t *testing.T) *Store {
	t.Helper()
	s := openNew(t)
	s.people.Close()
	return s
}

// record records events or fails the test.
func record(t *testing.T, s *Store, events ...analytics.Event) {
	t.Helper()
	if err := s.Record(context.Background(), events); err != nil {
		t.Fatal(err)
	}
}

// index runs a pass of the indexer or fails the test.
func index(t *testing.T, s *Store) {
	t.Helper()
	if err := s.indexPeople(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// pathOf is the store's file.
func pathOf(t *testing.T, s *Store) string {
	t.Helper()
	var file string
	if err := s.db.QueryRow(`SELECT file FROM pragma_database_list WHERE name = 'main'`).Scan(&file); err != nil {
		t.Fatal(err)
	}
	return file
}

// reopen opens file again, closed when the test ends.
func reopen(t *testing.T, file string) *Store {
	t.Helper()
	s, err := Open(context.Background(), file, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// downgrade closes s, runs ddl on its file as an older version would
// (with none of this one's code), and opens the file again.
func downgrade(t *testing.T, s *Store, ddl string) *Store {
	t.Helper()
	file := pathOf(t, s)
	s.Close()
	rawExec(t, file, ddl)
	return reopen(t, file)
}

// waitIndexed waits until the person index holds the n events.
func waitIndexed(t *testing.T, s *Store, n int64) {
	t.Helper()
	waitMark(t, s, &eventsPeople, n, n)
}

// waitMark waits until p is indexed up to upto and holds entries.
func waitMark(t *testing.T, s *Store, p *personIndex, upto, entries int64) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if u, n := mark(t, s, p); u == upto && n == entries {
			return
		}
		if time.Now().After(deadline) {
			wantMark(t, s, p, "after 30 s", upto, entries)
		}
	}
}

// wantKinds checks the kinds of sub's events, newest first (kindsOf).
func wantKinds(t *testing.T, s *Store, what, sub string, want ...string) {
	t.Helper()
	if got := kindsOf(t, s, sub); !slices.Equal(got, want) {
		t.Fatalf("%s: %s's events %v, want %v", what, sub, got, want)
	}
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
	s := manual(t)
	record(t, s, personEvent(analytics.KindSent, "s1", 1000), personEvent(analytics.KindSent, "s2", 1000))
	wantMark(t, s, &eventsPeople, "before a pass", 0, 0)
	wantKinds(t, s, "before a pass", "s1", "sent")
	index(t, s)
	wantMark(t, s, &eventsPeople, "after a pass", 2, 2)
	record(t, s, personEvent(analytics.KindClicked, "s1", 2000))
	wantKinds(t, s, "one indexed, one not", "s1", "clicked", "sent")
	index(t, s)
	wantKinds(t, s, "both indexed", "s1", "clicked", "sent")
	wantKinds(t, s, "the other person", "s2", "sent")
}

// TestIndexerIndexesAfterWrites: a write wakes the indexer, which indexes
// what it wrote; and what a run closed (or killed) before its pass left is
// indexed after the next open, with no write.
func TestIndexerIndexesAfterWrites(t *testing.T) {
	s := openNew(t)
	record(t, s, personEvent(analytics.KindSent, "s1", 1000), personEvent(analytics.KindSent, "s2", 1000))
	waitIndexed(t, s, 2)
	record(t, s, personEvent(analytics.KindSent, "s3", 2000))
	file := pathOf(t, s)
	if err := s.Close(); err != nil { // before the pass
		t.Fatal(err)
	}
	waitIndexed(t, reopen(t, file), 3)
}

// TestIndexPeopleInChunks: a pass indexes at most peopleChunk events a
// transaction, and goes on until none is left.
func TestIndexPeopleInChunks(t *testing.T) {
	s := manual(t)
	events := make([]analytics.Event, peopleChunk+10)
	for i := range events {
		events[i] = personEvent(analytics.KindSent, fmt.Sprintf("s%06d", len(events)-i), int64(i))
	}
	record(t, s, events...)
	done, err := eventsPeople.chunk(context.Background(), s)
	if err != nil || done {
		t.Fatalf("first chunk: done %v, %v", done, err)
	}
	wantMark(t, s, &eventsPeople, "after one chunk", peopleChunk, peopleChunk)
	index(t, s)
	wantMark(t, s, &eventsPeople, "after the pass", int64(len(events)), int64(len(events)))
	wantKinds(t, s, "the last event's person", "s000001", "sent")
}

// TestErasureKeepsNewEventsIndexed: erasing the newest events brings the
// mark back to the newest left, so the events that take their rowids
// next are still indexed; the erased person's entries go with the rows.
func TestErasureKeepsNewEventsIndexed(t *testing.T) {
	s := manual(t)
	record(t, s, personEvent(analytics.KindSent, "s1", 1000), personEvent(analytics.KindSent, "s2", 1000))
	index(t, s)
	if err := s.Erase(context.Background(), "w1", []string{"s2"}, nil); err != nil {
		t.Fatal(err)
	}
	wantMark(t, s, &eventsPeople, "after the erasure", 1, 1)
	wantKinds(t, s, "erased", "s2")
	record(t, s, personEvent(analytics.KindSent, "s3", 2000))
	wantKinds(t, s, "a new event in the erased one's rowid, not indexed", "s3", "sent")
	index(t, s)
	wantKinds(t, s, "a new event in the erased one's rowid, indexed", "s3", "sent")
	wantKinds(t, s, "the person kept", "s1", "sent")
}

// TestOpenMovesThePersonIndex: a file from before the person index loses
// events_subscriber at open; its people's events are found at once (by
// the scan), and indexed by the indexer.
func TestOpenMovesThePersonIndex(t *testing.T) {
	s := openOld(t, `CREATE TABLE events (website_id TEXT NOT NULL, notification_id TEXT NOT NULL,
		endpoint_id TEXT NOT NULL, subscriber_id TEXT NOT NULL, kind TEXT NOT NULL, device TEXT NOT NULL,
		language TEXT NOT NULL, variant TEXT NOT NULL, code TEXT NOT NULL, at INTEGER NOT NULL);
		CREATE INDEX events_notification_kind ON events (notification_id, kind);
		CREATE INDEX events_subscriber ON events (subscriber_id, at);
		INSERT INTO events VALUES ('w1', 'n1', 'e-s1', 's1', 'sent', 'desktop', 'en', '', '', 1000),
			('w1', 'n1', 'e-s2', 's2', 'sent', 'desktop', 'en', '', '', 1000),
			('w1', 'n1', 'e-s1', 's1', 'clicked', 'desktop', 'en', '', '', 2000)`)
	var old int
	if err := s.db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE name = 'events_subscriber'`).Scan(&old); err != nil || old != 0 {
		t.Fatalf("events_subscriber left: %d, %v", old, err)
	}
	wantKinds(t, s, "at open", "s1", "clicked", "sent")
	waitIndexed(t, s, 3)
	wantKinds(t, s, "indexed", "s1", "clicked", "sent")
}

// TestOpenAfterADowngrade: a file an older version opened and wrote again
// after this one (its events_subscriber back, an event erased and one
// added without the person index knowing) opens, and its index is built
// anew.
func TestOpenAfterADowngrade(t *testing.T) {
	s := manual(t)
	record(t, s, personEvent(analytics.KindSent, "s1", 1000), personEvent(analytics.KindSent, "s2", 1000))
	index(t, s)
	s = downgrade(t, s, `CREATE INDEX events_subscriber ON events (subscriber_id, at);
		DELETE FROM events WHERE subscriber_id = 's2';
		INSERT INTO events VALUES ('w1', 'n1', 'e-s3', 's3', 'sent', 'desktop', 'en', '', '', 2000)`)
	waitIndexed(t, s, 2) // s3 took the rowid s2 left
	wantKinds(t, s, "after the downgrade", "s1", "sent")
	wantKinds(t, s, "after the downgrade", "s2")
	wantKinds(t, s, "after the downgrade", "s3", "sent")
}

// TestPersonReadsPlan: the person reads find the indexed events through
// events_people and the rest by a range of rowids, never by a scan of the
// whole table.
func TestPersonReadsPlan(t *testing.T) {
	text := queryPlan(t, openNew(t), `SELECT kind FROM events WHERE rowid IN (`+personRows+`) AND `+ofPeople, `["s1"]`, "w1")
	if strings.Contains(text, "SCAN events") || !strings.Contains(text, "SEARCH events_people USING PRIMARY KEY") ||
		!strings.Contains(text, "SEARCH events USING INTEGER PRIMARY KEY (rowid>?)") {
		t.Fatalf("plan:\n%s", text)
	}
}

// lockedBuffer is a log's output, read while the store writes it.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestIndexerLogsAFailedPass: a pass of the indexer that fails (here its
// table is gone) says so in the store's log, with the error.
func TestIndexerLogsAFailedPass(t *testing.T) {
	var out lockedBuffer
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "analytics.db"), slog.New(slog.NewTextHandler(&out, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.p.Exec(`DROP TABLE events_people`); err != nil {
		t.Fatal(err)
	}
	record(t, s, personEvent(analytics.KindSent, "s1", 1000))
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		log := out.String()
		if strings.Contains(log, "level=WARN") && strings.Contains(log, `msg="analytics: indexing by person"`) &&
			strings.Contains(log, "no such table: events_people") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 30 s the log holds %q", log)
		}
	}
}
