// Package sqlite keeps the analytics event log in a SQLite file for the
// embedded default.
package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/relaybell/relaybell/analytics"
	"github.com/relaybell/relaybell/store/sqlite/stmtjournal"
	"github.com/relaybell/relaybell/store/sqlite/wal"
)

// Store is the SQLite analytics store.
type Store struct {
	// db is the file's one writer connection: the writes, and the
	// erasures' deletes.
	db *sql.DB
	// r are the readers: the reports and the people's events and
	// behaviors, the people file attached (people.go). In WAL mode they
	// read beside the writer without waiting for it, and it for them: a
	// report over a large send, read on the writer, held every write of
	// events and behaviors back until it was done (docs/scale-out.md,
	// "The analytics file's readers").
	r *sql.DB
	// p is the people file's one connection, its main schema, with the
	// analytics file attached to read: the indexer's passes, and the
	// erasures' steps there (people.go).
	p *sql.DB
	// pckpt checkpoints the people file's log.
	pckpt *wal.Checkpointer
	// peopleMu keeps the indexer's passes and the erasures apart (Erase).
	peopleMu sync.Mutex
	// report is reportQuery, prepared on the readers.
	report *sql.Stmt
	// insertRows is Record's INSERT of eventRows events, prepared once:
	// parsing a statement of eventRows rows each time cost about a
	// quarter of a write.
	insertRows *sql.Stmt
	// insertBehavior is RecordBehaviors' INSERT of one behavior, prepared
	// once rather than at every write (its parsing was about a twentieth
	// of the embedded default's CPU per event: docs/scale-out.md).
	insertBehavior *sql.Stmt
	// ckpt checkpoints the file's log beside the one connection, woken
	// by each commit (commit).
	ckpt *wal.Checkpointer
	// people indexes the events and the behaviors by person peopleEvery
	// after Record or RecordBehaviors (people.go). A failed pass leaves
	// the rows after the marks to the next one; until then the reads find
	// them by the scan.
	people *wal.After
	// logger gets what fails in the background: a pass of the indexer,
	// a checkpoint.
	logger *slog.Logger
}

// commit commits tx and wakes the checkpointer.
func (s *Store) commit(tx *sql.Tx) error { return commit(tx, s.ckpt) }

// commit commits tx and wakes ckpt, its file's checkpointer.
func commit(tx *sql.Tx, ckpt *wal.Checkpointer) error {
	err := tx.Commit()
	ckpt.Wrote()
	return err
}

var _ analytics.Store = (*Store)(nil)

const schema = `
CREATE TABLE IF NOT EXISTS events (
	website_id TEXT NOT NULL,
	notification_id TEXT NOT NULL,
	endpoint_id TEXT NOT NULL,
	subscriber_id TEXT NOT NULL,
	kind TEXT NOT NULL,
	device TEXT NOT NULL,
	language TEXT NOT NULL,
	variant TEXT NOT NULL,
	code TEXT NOT NULL,
	at INTEGER NOT NULL
);
-- A broadcast's events come in at random endpoints and subscribers, so an
-- index keyed by either takes a random leaf page an event, each written
-- again (to the WAL) by every commit that touches it: most of a write's
-- cost once the index outgrows the page cache. The notification's index
-- stops at the kind, so a send's events go in at its end (rowid order);
-- Report finds a send's clicks once, not per sent push. Files from before
-- it had (notification_id, kind, endpoint_id): dropped. The events are
-- indexed by person afterwards, in bulk (people.go).
CREATE INDEX IF NOT EXISTS events_notification_kind ON events (notification_id, kind);
DROP INDEX IF EXISTS events_notification;
-- The file's id, which the people file names and each erasure changes
-- (people.go).
CREATE TABLE IF NOT EXISTS analytics_file (id TEXT NOT NULL);
INSERT INTO analytics_file (id) SELECT lower(hex(randomblob(16))) WHERE NOT EXISTS (SELECT 1 FROM analytics_file);
-- Behaviors keep properties last: a row of large properties overflows its
-- page, and the columns after them would be read through the overflow.
-- Their indexes are made by behaviorIndexes, after the seq column exists.
CREATE TABLE IF NOT EXISTS behaviors (
	id TEXT NOT NULL PRIMARY KEY,
	website_id TEXT NOT NULL,
	subscriber_id TEXT NOT NULL,
	external_id TEXT NOT NULL,
	at INTEGER NOT NULL,
	name TEXT NOT NULL,
	source TEXT NOT NULL,
	notification_id TEXT NOT NULL,
	value REAL NOT NULL,
	conversion INTEGER NOT NULL,
	seq INTEGER NOT NULL DEFAULT 0,
	properties TEXT NOT NULL
);
`

// behaviorIndexes is the behaviors' index by website. It ends in (at,
// seq, id), the reads' order, so the website's latest are read from it
// alone. Files from before seq had it end in (at, id): that one is
// dropped. The indexes by person are behaviorsPeople (people.go).
const behaviorIndexes = `
DROP INDEX IF EXISTS behaviors_website;
CREATE INDEX IF NOT EXISTS behaviors_website_seq ON behaviors (website_id, at, seq, id);
`

// addSeq adds the behaviors' seq column to a file from before it.
func addSeq(ctx context.Context, db *sql.DB) error {
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM pragma_table_info('behaviors') WHERE name = 'seq'`).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	_, err := db.ExecContext(ctx, `ALTER TABLE behaviors ADD COLUMN seq INTEGER NOT NULL DEFAULT 0`)
	return err
}

// readers is how many connections read the file beside its writer.
const readers = 2

// Open opens (or creates) the analytics file at path. logger (nil: none)
// gets the failures of its background work.
func Open(ctx context.Context, path string, logger *slog.Logger) (*Store, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if err := stmtjournal.Err(); err != nil {
		logger.Warn("analytics: statement journals spill to files", "err", err)
	}
	// A page cache of 64 MB (SQLite's default is 2 MB): the random index
	// pages a write touches are found in the cache rather than read again
	// (BenchmarkRecordEvents: about 27 → 24 cpu-µs an event, measured
	// when events_subscriber was written with each event; the person
	// indexes' passes, people.go, touch such pages now). The log is
	// checkpointed beside the writer (package wal); the writer's own
	// checkpoint is only the backstop.
	dsn := "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=busy_timeout(10000)" +
		"&_pragma=cache_size(-65536)&_txlock=immediate&_pragma=wal_autocheckpoint(" + strconv.Itoa(wal.Backstop) + ")"
	// opened is what Open has opened so far, closed in reverse if a later
	// step fails.
	var opened []io.Closer
	fail := func(what string, err error) (*Store, error) {
		for _, c := range slices.Backward(opened) {
			c.Close()
		}
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return fail("opening analytics", err)
	}
	opened = append(opened, db)
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, schema); err != nil {
		return fail("creating analytics schema", err)
	}
	if err := addSeq(ctx, db); err != nil {
		return fail("adding the behaviors' seq", err)
	}
	if _, err := db.ExecContext(ctx, behaviorIndexes); err != nil {
		return fail("creating the behaviors' indexes", err)
	}
	insertRows, err := db.PrepareContext(ctx, buildInsertEvents(eventRows))
	if err != nil {
		return fail("preparing the events' insert", err)
	}
	opened = append(opened, insertRows)
	insertBehavior, err := db.PrepareContext(ctx, insertBehaviorSQL)
	if err != nil {
		return fail("preparing the behaviors' insert", err)
	}
	opened = append(opened, insertBehavior)
	s := &Store{db: db, insertRows: insertRows, insertBehavior: insertBehavior, logger: logger}
	// Its log is checkpointed on a connection of its own (package wal).
	c, err := sql.Open("sqlite", dsn)
	if err != nil {
		return fail("opening analytics", err)
	}
	s.ckpt = wal.Start(c, db, wal.Every, logger)
	opened = append(opened, s.ckpt)
	if err := s.openPeople(ctx, path, func(c io.Closer) { opened = append(opened, c) }); err != nil {
		return fail("opening the person index", err)
	}
	// The readers keep SQLite's own page cache (2 MB each): a commit of
	// the writer empties them anyway (WAL mode).
	s.r = sql.OpenDB(attached("file:"+path+"?_pragma=query_only(1)&_pragma=busy_timeout(10000)", "people", peoplePath(path)))
	opened = append(opened, s.r)
	s.r.SetMaxOpenConns(readers)
	s.r.SetMaxIdleConns(readers)
	s.r.SetConnMaxIdleTime(0)
	if s.report, err = s.r.PrepareContext(ctx, reportQuery); err != nil {
		return fail("preparing the report", err)
	}
	opened = append(opened, s.report)
	s.people = wal.StartAfter(peopleEvery, s.indexPass)
	s.people.Wake() // what a run killed before its pass left
	return s, nil
}

// Record appends events in one transaction, eventRows a statement: one
// multi-row INSERT binds and steps once for many events, where an INSERT
// each cost about as much again as the rows' own B-tree work
// (BenchmarkRecordEvents). The full chunks use the statement prepared at
// Open; a last, shorter one is parsed for its length.
//
// The INSERTs are OR ROLLBACK: a failed one ends the whole transaction,
// which Record would roll back anyway. With SQLite's default (ABORT) each
// multi-row INSERT in a transaction kept a statement journal, a copy of
// every page it changed, so that it alone could be undone; a write's
// random index pages passed the journal's 64 KiB in memory, and it went to
// a temporary file a pwrite a page. That was a third of a write
// (BenchmarkRecordEvents: 40 → 27 cpu-µs an event).
func (s *Store) Record(ctx context.Context, events []analytics.Event) error {
	if len(events) == 0 {
		return nil
	}
	if err := analytics.Check(events); err != nil {
		return fmt.Errorf("recording events: %w", err)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("recording events: %w", err)
	}
	defer tx.Rollback()
	insertRows := tx.StmtContext(ctx, s.insertRows)
	args := make([]any, 0, eventColumns*min(len(events), eventRows))
	for chunk := range slices.Chunk(events, eventRows) {
		args = args[:0]
		for i := range chunk {
			e := &chunk[i]
			args = append(args, e.WebsiteID, e.NotificationID, e.EndpointID, e.SubscriberID, e.Kind,
				e.Device, e.Language, e.Variant, e.Code, e.At.UnixMilli())
		}
		var err error
		if len(chunk) == eventRows {
			_, err = insertRows.ExecContext(ctx, args...)
		} else {
			_, err = tx.ExecContext(ctx, buildInsertEvents(len(chunk)), args...)
		}
		if err != nil {
			return fmt.Errorf("recording events: %w", err)
		}
	}
	if err := s.commit(tx); err != nil {
		return err
	}
	s.people.Wake()
	return nil
}

// eventRows is the most events one INSERT of Record writes (eventColumns
// parameters each, far below SQLite's limit of 32,766).
const (
	eventRows    = 100
	eventColumns = 10
)

func buildInsertEvents(n int) string {
	var b strings.Builder
	b.WriteString(`INSERT OR ROLLBACK INTO events
		(website_id, notification_id, endpoint_id, subscriber_id, kind, device, language, variant, code, at) VALUES `)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
	}
	return b.String()
}

// reportQuery reads a send's sent browsers by device, language and
// variant, and how many of them clicked. The send's clicked browsers are
// read once (events_notification_kind) into a B-tree the sent pushes are
// looked up in (SQLite's list subquery, not correlated: TestReportPlan),
// never searched for again per sent push.
const reportQuery = `SELECT p.device, p.language, p.variant, COUNT(DISTINCT p.endpoint_id),
		COUNT(DISTINCT CASE WHEN p.endpoint_id IN (SELECT endpoint_id FROM events
			WHERE notification_id = ?1 AND website_id = ?2 AND kind = 'clicked') THEN p.endpoint_id END)
	FROM events p
	WHERE p.notification_id = ?1 AND p.website_id = ?2 AND p.kind = 'sent'
	GROUP BY p.device, p.language, p.variant`

// Report reads one notification's breakdowns. Clicks are attributed to the
// device, language and variant of the push that was sent to that endpoint.
// Browsers are counted, not events: an event recorded twice counts once.
// Both of its queries read one snapshot of the file.
func (s *Store) Report(ctx context.Context, websiteID, notificationID string) (analytics.Report, error) {
	var r analytics.Report
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return r, fmt.Errorf("reading report: %w", err)
	}
	defer tx.Rollback()
	rows, err := tx.StmtContext(ctx, s.report).QueryContext(ctx, notificationID, websiteID)
	if err != nil {
		return r, fmt.Errorf("reading report: %w", err)
	}
	var b analytics.Breakdown
	for rows.Next() {
		var device, language, variant string
		var sent, clicked int64
		if err := rows.Scan(&device, &language, &variant, &sent, &clicked); err != nil {
			rows.Close()
			return r, fmt.Errorf("reading report: %w", err)
		}
		b.Add(device, language, variant, sent, clicked)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return r, fmt.Errorf("reading report: %w", err)
	}
	b.Fill(&r)

	erows, err := tx.QueryContext(ctx, `SELECT code, COUNT(DISTINCT endpoint_id) AS n FROM events
		WHERE notification_id = ? AND website_id = ? AND kind IN ('failed', 'expired')
		GROUP BY code ORDER BY n DESC, code`, notificationID, websiteID)
	if err != nil {
		return r, fmt.Errorf("reading errors: %w", err)
	}
	defer erows.Close()
	for erows.Next() {
		var e analytics.ErrorRow
		if err := erows.Scan(&e.Code, &e.Count); err != nil {
			return r, fmt.Errorf("reading errors: %w", err)
		}
		if e.Code == "expired" {
			r.Expired += e.Count
		}
		r.Errors = append(r.Errors, e)
	}
	return r, erows.Err()
}

// Close closes the file.
func (s *Store) Close() error {
	s.people.Close()
	s.insertRows.Close()
	s.insertBehavior.Close()
	s.report.Close()
	return errors.Join(s.r.Close(), s.pckpt.Close(), s.p.Close(), s.ckpt.Close(), s.db.Close())
}

// PersonEvents lists the events of the website's subscribers, newest first,
// each once.
func (s *Store) PersonEvents(ctx context.Context, websiteID string, subscriberIDs, kinds []string, limit int) ([]analytics.Event, error) {
	ids, err := json.Marshal(subscriberIDs)
	if err != nil {
		return nil, err
	}
	kindList, err := json.Marshal(kinds)
	if err != nil {
		return nil, err
	}
	// An event recorded twice is listed once (the other columns come from
	// the row of the first time, SQLite's rule for MIN).
	rows, err := s.r.QueryContext(ctx, `SELECT website_id, notification_id, endpoint_id, subscriber_id, kind,
			device, language, variant, code, MIN(at) AS first
		FROM events WHERE rowid IN (`+personRows+`) AND `+ofPeople+`
			AND (json_array_length(?3) = 0 OR kind IN (SELECT value FROM json_each(?3)))
		GROUP BY notification_id, endpoint_id, kind
		ORDER BY first DESC, MAX(rowid) DESC LIMIT ?4`, string(ids), websiteID, string(kindList), limit)
	if err != nil {
		return nil, fmt.Errorf("reading person events: %w", err)
	}
	defer rows.Close()
	out := []analytics.Event{}
	for rows.Next() {
		var (
			e  analytics.Event
			at int64
		)
		if err := rows.Scan(&e.WebsiteID, &e.NotificationID, &e.EndpointID, &e.SubscriberID, &e.Kind,
			&e.Device, &e.Language, &e.Variant, &e.Code, &at); err != nil {
			return nil, fmt.Errorf("reading person events: %w", err)
		}
		e.At = time.UnixMilli(at).UTC()
		out = append(out, e)
	}
	return out, rows.Err()
}

// PersonCounts counts the events of the website's subscribers by kind, an
// event recorded twice once.
func (s *Store) PersonCounts(ctx context.Context, websiteID string, subscriberIDs []string) (map[string]int64, error) {
	ids, err := json.Marshal(subscriberIDs)
	if err != nil {
		return nil, err
	}
	rows, err := s.r.QueryContext(ctx, `SELECT kind, COUNT(DISTINCT notification_id || ' ' || endpoint_id) FROM events
		WHERE rowid IN (`+personRows+`) AND `+ofPeople+` GROUP BY kind`, string(ids), websiteID)
	if err != nil {
		return nil, fmt.Errorf("counting person events: %w", err)
	}
	return scanCounts(rows)
}

func scanCounts(rows *sql.Rows) (map[string]int64, error) {
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var (
			kind string
			n    int64
		)
		if err := rows.Scan(&kind, &n); err != nil {
			return nil, fmt.Errorf("counting person events: %w", err)
		}
		out[kind] = n
	}
	return out, rows.Err()
}
