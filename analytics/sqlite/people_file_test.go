package sqlite

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/relaybell/relaybell/analytics"
)

// TestWritesBesideTheIndexer: the people file's connection held in a
// write transaction (as a long pass holds it) keeps back neither the
// events' and behaviors' writes nor the person reads; what was written
// is indexed once it is let go.
func TestWritesBesideTheIndexer(t *testing.T) {
	s := openNew(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	held, err := s.p.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := held.ExecContext(ctx, `UPDATE events_people_mark SET upto = upto`); err != nil {
		t.Fatal(err)
	}
	if err := s.Record(ctx, []analytics.Event{personEvent(analytics.KindSent, "s1", 1000)}); err != nil {
		t.Fatalf("a write beside a held pass: %v", err)
	}
	if err := s.RecordBehaviors(ctx, []analytics.Behavior{behavior("1", "s1", "x1", 1000)}); err != nil {
		t.Fatalf("a write beside a held pass: %v", err)
	}
	wantKinds(t, s, "beside a held pass", "s1", "sent")
	wantBehaviors(t, s, "beside a held pass", []string{"s1"}, "x1", "b1")
	if err := held.Rollback(); err != nil {
		t.Fatal(err)
	}
	waitIndexed(t, s, 1)
	waitMark(t, s, &behaviorsPeople, 1, 2)
}

// twoPeople is a store, not indexing by itself, with s1's and s2's events
// and behaviors, indexed, s2's the newest.
func twoPeople(t *testing.T) *Store {
	t.Helper()
	s := manual(t)
	record(t, s, personEvent(analytics.KindSent, "s1", 1000), personEvent(analytics.KindSent, "s2", 1000))
	recordBehaviors(t, s, behavior("1", "s1", "x1", 1000), behavior("2", "s2", "x2", 2000))
	index(t, s)
	return s
}

// beginErasure runs Erase's first two steps for s2 and the external id
// x2, as a run killed after them left it.
func beginErasure(t *testing.T, s *Store) (int64, *erasure) {
	t.Helper()
	ctx := context.Background()
	e := &erasure{WebsiteID: "w1", Subscribers: []string{"s2"}, ExternalIDs: []string{"x2"}}
	s.peopleMu.Lock()
	defer s.peopleMu.Unlock()
	if err := s.listErased(ctx, e); err != nil {
		t.Fatal(err)
	}
	if len(e.Events) != 1 || len(e.Behaviors) != 1 {
		t.Fatalf("erasure listed %+v", e)
	}
	id, err := s.beginErasure(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	return id, e
}

// erasuresLeft counts the erasures the people file records as under way.
func erasuresLeft(t *testing.T, s *Store) int {
	t.Helper()
	var n int
	if err := s.p.QueryRow(`SELECT count(*) FROM people_erasures`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// wantErased checks s2's and x2's erasure is done, s1's rows kept.
func wantErased(t *testing.T, s *Store, what string) {
	t.Helper()
	if n := erasuresLeft(t, s); n != 0 {
		t.Fatalf("%s: %d erasures left", what, n)
	}
	wantKinds(t, s, what, "s2")
	wantBehaviors(t, s, what, []string{"s2"}, "x2", []string{}...)
	wantKinds(t, s, what, "s1", "sent")
	wantBehaviors(t, s, what, []string{"s1"}, "x1", "b1")
	wantMark(t, s, &eventsPeople, what, 1, 1)
	wantMark(t, s, &behaviorsPeople, what, 1, 2)
}

// TestErasureKilledAfterItsRecord: an erasure killed once it recorded
// itself and lowered the marks, before any row went, is finished at the
// next open.
func TestErasureKilledAfterItsRecord(t *testing.T) {
	s := twoPeople(t)
	beginErasure(t, s)
	wantMark(t, s, &eventsPeople, "marks lowered", 1, 2)
	wantMark(t, s, &behaviorsPeople, "marks lowered", 1, 4)
	file := pathOf(t, s)
	s.Close()
	wantErased(t, reopen(t, file), "after the open")
}

// TestErasureFailedAfterItsRecord: an erasure whose later steps failed
// (here: were never run) is finished by the indexer's next pass, or by
// the next erasure, before anything else.
func TestErasureFailedAfterItsRecord(t *testing.T) {
	s := twoPeople(t)
	beginErasure(t, s)
	index(t, s)
	wantErased(t, s, "after a pass")

	s = twoPeople(t)
	beginErasure(t, s)
	if err := s.Erase(context.Background(), "w1", []string{"nobody"}, nil); err != nil {
		t.Fatal(err)
	}
	wantErased(t, s, "after another erasure")
}

// TestErasureKilledBetweenItsFiles: an erasure killed after it deleted
// the rows, before their entries, leaves entries that name rowids new
// rows of other people take. The reads do not take those rows for the
// erased person's, and the next open deletes the entries, not the rows.
func TestErasureKilledBetweenItsFiles(t *testing.T) {
	s := twoPeople(t)
	_, e := beginErasure(t, s)
	if err := s.deleteErased(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	record(t, s, personEvent(analytics.KindClicked, "s3", 3000))
	recordBehaviors(t, s, behavior("3", "s3", "x3", 3000))
	var rowid int64
	if err := s.db.QueryRow(`SELECT rowid FROM events WHERE subscriber_id = 's3'`).Scan(&rowid); err != nil || rowid != 2 {
		t.Fatalf("s3's event has rowid %d (%v), want s2's, 2", rowid, err)
	}
	wantKinds(t, s, "an entry names s3's row", "s2")
	wantBehaviors(t, s, "an entry names s3's row", []string{"s2"}, "x2", []string{}...)
	wantKinds(t, s, "the new person", "s3", "clicked")
	file := pathOf(t, s)
	s.Close()
	s = reopen(t, file)
	if n := erasuresLeft(t, s); n != 0 {
		t.Fatalf("%d erasures left after the open", n)
	}
	wantKinds(t, s, "after the open", "s3", "clicked")
	wantBehaviors(t, s, "after the open", []string{"s3"}, "x3", "b3")
	wantKinds(t, s, "after the open", "s2")
	waitIndexed(t, s, 2)
	waitMark(t, s, &behaviorsPeople, 2, 4)
	wantKinds(t, s, "indexed", "s3", "clicked")
	wantKinds(t, s, "indexed", "s1", "sent")
}

// TestPeopleFileStartedAnew: the index is built again from the analytics
// file when the people file is gone, is another analytics file's, or the
// analytics file holds the person index of an earlier version (written
// after this one's, by a downgrade); and the marks come down to the rows
// there are when the analytics file lost its newest.
func TestPeopleFileStartedAnew(t *testing.T) {
	s := twoPeople(t)
	file := pathOf(t, s)
	s.Close()
	if err := os.Remove(peoplePath(file)); err != nil {
		t.Fatal(err)
	}
	s = reopen(t, file)
	waitIndexed(t, s, 2)
	wantKinds(t, s, "people file removed", "s2", "sent")

	if _, err := s.db.Exec(`UPDATE analytics_file SET id = 'another'`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.p.Exec(`INSERT INTO events_people VALUES ('s9', 0, 1)`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = reopen(t, file)
	waitIndexed(t, s, 2) // not 3: s9's entry went with the rest

	s = downgrade(t, s, `CREATE TABLE events_people (subscriber_id TEXT NOT NULL, at INTEGER NOT NULL,
			event INTEGER NOT NULL, PRIMARY KEY (subscriber_id, at, event)) WITHOUT ROWID;
		CREATE TABLE events_people_mark (id INTEGER PRIMARY KEY, upto INTEGER NOT NULL);
		INSERT INTO events_people_mark VALUES (1, 3);
		DELETE FROM events WHERE subscriber_id = 's2';
		INSERT INTO events VALUES ('w1', 'n1', 'e-s3', 's3', 'sent', 'desktop', 'en', '', '', 2000)`)
	var left int
	if err := s.db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE name LIKE 'events_people%'`).Scan(&left); err != nil || left != 0 {
		t.Fatalf("the earlier version's index left in the analytics file: %d, %v", left, err)
	}
	waitIndexed(t, s, 2)
	wantKinds(t, s, "after a downgrade", "s2")
	wantKinds(t, s, "after a downgrade", "s3", "sent")

	s.people.Close()
	if _, err := s.p.Exec(`UPDATE events_people_mark SET upto = 9`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = reopen(t, file)
	s.people.Close()
	wantMark(t, s, &eventsPeople, "a mark past the rows", 2, 2)
}

// rawExec runs ddl on file with none of the store's code, as a power cut
// or an older copy would leave it.
func rawExec(t *testing.T, file, ddl string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+file)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(ddl); err != nil {
		t.Fatal(err)
	}
}

// TestRowsTheAnalyticsFileLost: the analytics file loses its newest rows
// (its last commits, not synced) and the people file keeps their entries.
// At open the entries go and the mark comes down: new rows in those
// rowids are indexed, a read's limit is not taken by entries of rows
// gone, and a behavior written again at another rowid is found.
func TestRowsTheAnalyticsFileLost(t *testing.T) {
	s := manual(t)
	recordBehaviors(t, s, behavior("1", "s1", "x1", 1000), behavior("2", "s1", "x1", 2000), behavior("3", "s1", "x1", 3000))
	record(t, s, personEvent(analytics.KindSent, "s1", 1000), personEvent(analytics.KindClicked, "s1", 2000))
	index(t, s)
	file := pathOf(t, s)
	s.Close()
	rawExec(t, file, `DELETE FROM behaviors WHERE rowid > 1; DELETE FROM events WHERE rowid > 1`)
	s = reopen(t, file)
	s.people.Close()
	wantMark(t, s, &behaviorsPeople, "at open", 1, 2)
	wantMark(t, s, &eventsPeople, "at open", 1, 1)
	recordBehaviors(t, s, behavior("4", "s4", "x4", 4000), behavior("5", "s4", "x4", 5000))
	record(t, s, personEvent(analytics.KindSent, "s4", 3000))
	index(t, s)
	ctx := context.Background()
	got, err := s.Behaviors(ctx, analytics.BehaviorQuery{WebsiteID: "w1", SubscriberIDs: []string{"s1"}, ExternalID: "x1", Limit: 1})
	if err != nil || len(got) != 1 || got[0].ID != "b1" {
		t.Fatalf("s1's newest behavior: %+v, %v; want b1", got, err)
	}
	wantKinds(t, s, "s1's events", "s1", "sent")
	wantKinds(t, s, "the new person's", "s4", "sent")
	recordBehaviors(t, s, behavior("2", "s1", "x1", 2000)) // written again
	index(t, s)
	wantBehaviors(t, s, "written again", []string{"s1"}, "x1", "b2", "b1")
}

// TestAnalyticsRestoredBesideThePeopleFile: an analytics file restored
// from a copy taken before an erasure, beside the people file of after
// it, has the index started anew: the erased person's rows are back (the
// copy holds them), found, and erased again.
func TestAnalyticsRestoredBesideThePeopleFile(t *testing.T) {
	s := twoPeople(t)
	// s2's rows are not the newest: the erasure leaves the marks after
	// them.
	record(t, s, personEvent(analytics.KindSent, "s3", 3000))
	recordBehaviors(t, s, behavior("3", "s3", "x3", 3000))
	index(t, s)
	file := pathOf(t, s)
	backup := filepath.Join(t.TempDir(), "backup.db")
	if _, err := s.db.Exec(`VACUUM INTO ?`, backup); err != nil {
		t.Fatal(err)
	}
	if err := s.Erase(context.Background(), "w1", []string{"s2"}, []string{"x2"}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	for _, f := range []string{file, file + "-wal", file + "-shm"} {
		os.Remove(f)
	}
	b, err := os.ReadFile(backup)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	s = reopen(t, file)
	waitIndexed(t, s, 3)
	wantKinds(t, s, "restored", "s2", "sent")
	wantBehaviors(t, s, "restored", []string{"s2"}, "x2", "b2")
	if err := s.Erase(context.Background(), "w1", []string{"s2"}, []string{"x2"}); err != nil {
		t.Fatal(err)
	}
	wantKinds(t, s, "erased again", "s2")
	wantBehaviors(t, s, "erased again", []string{"s2"}, "x2", []string{}...)
}
