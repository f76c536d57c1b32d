package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/relaybell/relaybell/analytics"
	"github.com/relaybell/relaybell/analytics/analyticstest"
)

func TestStore(t *testing.T) {
	analyticstest.Run(t, func(t *testing.T) analytics.Store {
		s, err := Open(context.Background(), filepath.Join(t.TempDir(), "analytics.db"), nil)
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// openNew opens a new file, closed when the test ends.
func openNew(t *testing.T) *Store {
	t.Helper()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "analytics.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// openOld opens a file that an earlier version made with ddl.
func openOld(t *testing.T, ddl string) *Store {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "analytics.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, ddl); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s, err := Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestOpenAddsSeq: a file from before Behavior.Seq gets the column and the
// indexes that end in it; its behaviors read back with seq 0, before the
// newer of their millisecond.
func TestOpenAddsSeq(t *testing.T) {
	ctx := context.Background()
	s := openOld(t, `CREATE TABLE behaviors (id TEXT NOT NULL PRIMARY KEY, website_id TEXT NOT NULL,
		subscriber_id TEXT NOT NULL, external_id TEXT NOT NULL, at INTEGER NOT NULL, name TEXT NOT NULL, source TEXT NOT NULL,
		notification_id TEXT NOT NULL, value REAL NOT NULL, conversion INTEGER NOT NULL, properties TEXT NOT NULL);
		CREATE INDEX behaviors_website ON behaviors (website_id, at, id);
		INSERT INTO behaviors VALUES ('z-old', 'w1', '', '', 1000, 'a', 'server', '', 0, 0, '{}')`)
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

// TestReportPlan: Report reads a send's events through the notification's
// index and its clicked browsers once, joined by endpoint; a lookup of
// clicks per sent push (a correlated subquery) would cost a send's report
// its sent pushes times its clicks now that the index stops at the kind.
func TestReportPlan(t *testing.T) {
	text := queryPlan(t, openNew(t), reportQuery, "n1", "w1")
	if strings.Contains(text, "CORRELATED") || strings.Count(text, "USING INDEX events_notification_kind") != 2 ||
		!strings.Contains(text, "LIST SUBQUERY") {
		t.Fatalf("plan:\n%s", text)
	}
}

// TestRecordKeepsNoStatementJournal: Record's INSERTs end the transaction
// on a failed row (ROLLBACK) rather than undo the one statement (ABORT),
// so SQLite keeps no statement journal for them (Record's comment). The
// program of an INSERT says which in the P2 of its NOT NULL checks.
func TestRecordKeepsNoStatementJournal(t *testing.T) {
	const onErrorRollback, onErrorAbort = 1, 2
	ctx := context.Background()
	s := openNew(t)
	for _, n := range []int{eventRows, 1} {
		args := make([]any, eventColumns*n)
		for i := range args {
			args[i] = "x"
		}
		rows, err := s.db.QueryContext(ctx, "EXPLAIN "+buildInsertEvents(n), args...)
		if err != nil {
			t.Fatal(err)
		}
		checks := 0
		for rows.Next() {
			var addr, p1, p2, p3 int
			var op string
			var p4, p5, comment any
			if err := rows.Scan(&addr, &op, &p1, &p2, &p3, &p4, &p5, &comment); err != nil {
				t.Fatal(err)
			}
			if op == "HaltIfNull" {
				checks++
				if p2 != onErrorRollback {
					t.Errorf("%d rows: a NOT NULL check at %d ends with %d, not ROLLBACK (%d; ABORT is %d)", n, addr, p2, onErrorRollback, onErrorAbort)
				}
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if checks != eventColumns { // the rows share one loop
			t.Errorf("%d rows: %d NOT NULL checks, want %d", n, checks, eventColumns)
		}
	}
}

// queryPlan is SQLite's plan of query, a line a step.
func queryPlan(t *testing.T, s *Store, query string, args ...any) string {
	t.Helper()
	rows, err := s.r.Query(`EXPLAIN QUERY PLAN `+query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(plan, "\n")
}

// TestReportCountsClicksOfSentBrowsers: a browser's clicks count once, in
// the group of the push sent to it; a click of a browser this send never
// pushed, or of another send, is not counted.
func TestReportCountsClicksOfSentBrowsers(t *testing.T) {
	ctx := context.Background()
	s := openNew(t)
	at := time.UnixMilli(1000).UTC()
	ev := func(kind, notification, endpoint, device string) analytics.Event {
		return analytics.Event{Kind: kind, WebsiteID: "w1", NotificationID: notification, EndpointID: endpoint,
			SubscriberID: "s-" + endpoint, Device: device, Language: "en", At: at}
	}
	if err := s.Record(ctx, []analytics.Event{
		ev(analytics.KindSent, "n1", "e1", "desktop"),
		ev(analytics.KindSent, "n1", "e1", "desktop"), // recorded twice
		ev(analytics.KindSent, "n1", "e2", "desktop"),
		ev(analytics.KindSent, "n1", "e3", "mobile"),
		ev(analytics.KindClicked, "n1", "e1", "desktop"),
		ev(analytics.KindClicked, "n1", "e1", "desktop"), // clicked twice
		ev(analytics.KindClicked, "n1", "e3", "mobile"),
		ev(analytics.KindClicked, "n1", "e9", "mobile"),  // no push sent
		ev(analytics.KindClicked, "n2", "e2", "desktop"), // another send's
	}); err != nil {
		t.Fatal(err)
	}
	r, err := s.Report(ctx, "w1", "n1")
	if err != nil {
		t.Fatal(err)
	}
	devices := slices.Clone(r.Devices)
	slices.SortFunc(devices, func(a, b analytics.DeviceRow) int { return strings.Compare(a.Device, b.Device) })
	if want := []analytics.DeviceRow{{Device: "desktop", Sent: 2, Clicked: 1}, {Device: "mobile", Sent: 1, Clicked: 1}}; !slices.Equal(devices, want) {
		t.Fatalf("devices %+v, want %+v", devices, want)
	}
}

// TestOpenReplacesTheNotificationIndex: a file from before keeps its
// events and loses the (notification_id, kind, endpoint_id) index for the
// one that stops at the kind (and events_subscriber for the person index:
// TestOpenMovesThePersonIndex).
func TestOpenReplacesTheNotificationIndex(t *testing.T) {
	ctx := context.Background()
	s := openOld(t, `CREATE TABLE events (website_id TEXT NOT NULL, notification_id TEXT NOT NULL,
		endpoint_id TEXT NOT NULL, subscriber_id TEXT NOT NULL, kind TEXT NOT NULL, device TEXT NOT NULL,
		language TEXT NOT NULL, variant TEXT NOT NULL, code TEXT NOT NULL, at INTEGER NOT NULL);
		CREATE INDEX events_notification ON events (notification_id, kind, endpoint_id);
		CREATE INDEX events_subscriber ON events (subscriber_id, at);
		INSERT INTO events VALUES ('w1', 'n1', 'e1', 's1', 'sent', 'desktop', 'en', '', '', 1000)`)
	var indexes []string
	rows, err := s.db.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'events' ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		indexes = append(indexes, name)
	}
	rows.Close()
	if want := []string{"events_notification_kind"}; !slices.Equal(indexes, want) {
		t.Fatalf("indexes %q, want %q", indexes, want)
	}
	r, err := s.Report(ctx, "w1", "n1")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Devices) != 1 || r.Devices[0] != (analytics.DeviceRow{Device: "desktop", Sent: 1}) {
		t.Fatalf("report of the old file's event: %+v", r)
	}
}

// TestWritesWakeTheCheckpointer: each of the file's writes (events,
// behaviors, an erasure) wakes its checkpointer (package wal).
func TestWritesWakeTheCheckpointer(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "analytics.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	at := time.Now()
	writes := []struct {
		name  string
		write func() error
	}{
		{"events", func() error {
			return s.Record(ctx, []analytics.Event{{Kind: analytics.KindSent, WebsiteID: "w", NotificationID: "n",
				EndpointID: "e", SubscriberID: "s", At: at}})
		}},
		{"behaviors", func() error {
			return s.RecordBehaviors(ctx, []analytics.Behavior{{ID: "b", WebsiteID: "w", SubscriberID: "s", Name: "x",
				Properties: []byte("{}"), At: at}})
		}},
		{"erasure", func() error { return s.Erase(ctx, "w", []string{"s"}, nil) }},
	}
	for _, w := range writes {
		t.Run(w.name, func(t *testing.T) {
			before := s.ckpt.Checkpoints()
			if err := w.write(); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(10 * time.Second)
			for s.ckpt.Checkpoints() == before {
				if time.Now().After(deadline) {
					t.Fatal("no checkpoint within 10 s of the write")
				}
				time.Sleep(time.Millisecond)
			}
		})
	}
}

// TestReadsBesideTheWriter: the reports and the people's events and
// behaviors are read while a write holds the writer connection (a pass of
// the indexer, a large write), each seeing what was committed before it;
// and a write commits while a reader holds a snapshot open.
func TestReadsBesideTheWriter(t *testing.T) {
	ctx := context.Background()
	s := manual(t)
	record(t, s, personEvent(analytics.KindSent, "s1", 1000), personEvent(analytics.KindClicked, "s1", 2000))
	recordBehaviors(t, s, behavior("1", "s1", "x1", 1000))

	held, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := held.ExecContext(ctx, `INSERT INTO events (website_id, notification_id, endpoint_id, subscriber_id,
		kind, device, language, variant, code, at) VALUES ('w1', 'n1', 'e-s2', 's2', 'sent', 'desktop', 'en', '', '', 3000)`); err != nil {
		t.Fatal(err)
	}
	read, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	report, err := s.Report(read, "w1", "n1")
	if err != nil {
		t.Fatalf("a report while the writer is held: %v", err)
	}
	if want := []analytics.DeviceRow{{Device: "desktop", Sent: 1, Clicked: 1}}; !slices.Equal(report.Devices, want) {
		t.Fatalf("the report while the writer is held: %+v; want the committed %+v", report.Devices, want)
	}
	events, err := s.PersonEvents(read, "w1", []string{"s1", "s2"}, nil, 10)
	if err != nil || len(events) != 2 {
		t.Fatalf("person events while the writer is held: %d, %v; want the committed 2", len(events), err)
	}
	counts, err := s.PersonCounts(read, "w1", []string{"s1"})
	if err != nil || counts[analytics.KindSent] != 1 {
		t.Fatalf("person counts while the writer is held: %v, %v", counts, err)
	}
	behaviors, err := s.Behaviors(read, analytics.BehaviorQuery{WebsiteID: "w1", SubscriberIDs: []string{"s1"}, Limit: 10})
	if err != nil || len(behaviors) != 1 {
		t.Fatalf("behaviors while the writer is held: %d, %v", len(behaviors), err)
	}
	if err := held.Rollback(); err != nil {
		t.Fatal(err)
	}

	snapshot, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer snapshot.Rollback()
	var n int
	if err := snapshot.QueryRowContext(ctx, `SELECT count(*) FROM events`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("the reader's snapshot: %d events, %v", n, err)
	}
	write, cancelWrite := context.WithTimeout(ctx, 5*time.Second)
	defer cancelWrite()
	if err := s.Record(write, []analytics.Event{personEvent(analytics.KindSent, "s3", 4000)}); err != nil {
		t.Fatalf("a write while a reader holds a snapshot: %v", err)
	}
	if err := snapshot.QueryRowContext(ctx, `SELECT count(*) FROM events`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("the reader's snapshot after the write: %d events, %v; want still 2", n, err)
	}
}
