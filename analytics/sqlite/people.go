package sqlite

import (
	"context"
	"crypto/rand"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	msqlite "modernc.org/sqlite"

	"github.com/relaybell/relaybell/analytics"
	"github.com/relaybell/relaybell/store/sqlite/wal"
)

// The person indexes: which events, and which behaviors, are whose.
//
// A person's history, counts and erasure find their events by subscriber,
// and their behaviors by subscriber and by external id. An index of the
// events keyed by subscriber (events_subscriber, long ago) took a random
// leaf page an event, since a broadcast's pushes go to people in no
// order, and every commit wrote each page it touched to the log again:
// about 70% of a push event's write (BenchmarkRecordEvents: 27 cpu-µs an
// event with it, 8 without). The behaviors' two (behaviors_subscriber_seq,
// behaviors_external_seq) were as dear: BenchmarkRecordBehaviors/batched
// took 69 cpu-µs a behavior with them, 38 without.
//
// So the rows go in without them, in rowid order, and the indexer adds
// them to an index table afterwards (personIndex), many at a time and
// sorted by person: a page of the index is written once for all the rows
// of a pass that fall in it. A mark table holds the last rowid indexed;
// the rows after it are found by a scan of the table's end (personRows,
// personBehaviors).
//
// The indexes live in a file of their own beside the analytics file (the
// people file, peoplePath), written by a connection of their own (Store.p,
// whose main schema it is, with the analytics file attached to read): a
// pass reads the analytics rows in a snapshot and writes only the people
// file, so the events' and behaviors' writes never wait for it, and a
// pass can be large, each page of the index written once for many rows
// (docs/scale-out.md, "The person index in a file of its own"). The
// readers attach the people file. The table names differ between the two
// files, so one text of each query serves every connection: SQLite finds
// an unqualified name in main, then in the files attached.
//
// Writes across two files are atomic per file only, so an erasure is
// three commits, recorded in the people file first (Erase).

// personIndex is a table's index by person, built in bulk.
type personIndex struct {
	table   string // the analytics table indexed
	entries string // the index's table, in the people file
	row     string // its column of the row's rowid
	mark    string // the mark's table, in the people file: one row, upto
	// schema creates the index's table.
	schema string
	// insert indexes the rows after the mark ?1 up to rowid ?2, sorted by
	// the index's key. OR IGNORE: a row may have its entry already (an
	// erasure's lowered mark, Erase, below rows it then failed to delete).
	insert string
}

var (
	eventsPeople = personIndex{table: "events", entries: "events_people", row: "event", mark: "events_people_mark",
		schema: `CREATE TABLE IF NOT EXISTS main.events_people (
			subscriber_id TEXT NOT NULL,
			at INTEGER NOT NULL,
			event INTEGER NOT NULL,
			PRIMARY KEY (subscriber_id, at, event)
		) WITHOUT ROWID`,
		insert: `INSERT OR IGNORE INTO events_people (subscriber_id, at, event)
			SELECT subscriber_id, at, rowid FROM events WHERE rowid > ?1 AND rowid <= ?2
			ORDER BY subscriber_id, at, rowid`}

	// behaviorsPeople holds a behavior under its subscriber (by_external
	// 0) and under its external id (1), each when not empty, in the reads'
	// order (at, seq, id); behavior is its rowid, in the key too: a
	// behavior written again (its id the same) after the analytics file
	// lost it, at another rowid, gets an entry of its own.
	behaviorsPeople = personIndex{table: "behaviors", entries: "behaviors_people", row: "behavior", mark: "behaviors_people_mark",
		schema: `CREATE TABLE IF NOT EXISTS main.behaviors_people (
			website_id TEXT NOT NULL,
			by_external INTEGER NOT NULL,
			key TEXT NOT NULL,
			at INTEGER NOT NULL,
			seq INTEGER NOT NULL,
			id TEXT NOT NULL,
			behavior INTEGER NOT NULL,
			PRIMARY KEY (website_id, by_external, key, at, seq, id, behavior)
		) WITHOUT ROWID`,
		insert: `INSERT OR IGNORE INTO behaviors_people (website_id, by_external, key, at, seq, id, behavior)
			SELECT website_id, 0, subscriber_id, at, seq, id, rowid FROM behaviors
				WHERE rowid > ?1 AND rowid <= ?2 AND subscriber_id <> ''
			UNION ALL
			SELECT website_id, 1, external_id, at, seq, id, rowid FROM behaviors
				WHERE rowid > ?1 AND rowid <= ?2 AND external_id <> ''
			ORDER BY 1, 2, 3, 4, 5, 6`}

	personIndexes = []*personIndex{&eventsPeople, &behaviorsPeople}

	// inAnalytics are the tables and indexes by person that earlier
	// versions kept in the analytics file itself: the index tables and
	// their marks (until the people file), and the indexes they replaced
	// before that. A file that holds any was written by such a version,
	// perhaps after this one (a downgrade, which may have erased rows and
	// had new ones take their rowids): they are dropped, and the people
	// file's index started anew.
	inAnalytics = []string{"events_people", "events_people_mark", "behaviors_people", "behaviors_people_mark",
		"events_subscriber", "behaviors_subscriber", "behaviors_external", "behaviors_subscriber_seq", "behaviors_external_seq"}
)

// peopleSchema is the people file's other tables: the erasures under way
// (Erase) and the analytics file the index is of. people_of holds its
// analytics_file.id, which every erasure changes (in the analytics file
// with its deletes, here with the entries'): a people file found beside
// another analytics file, or beside a copy from before an erasure (a
// backup restored), is started anew.
const peopleSchema = `
CREATE TABLE IF NOT EXISTS main.people_erasures (
	id INTEGER PRIMARY KEY,
	erasure TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS main.people_of (
	id INTEGER PRIMARY KEY CHECK (id = 1),
	file TEXT NOT NULL
);
`

// personRows selects the rowids of the events of the people in the JSON
// array ?1: the indexed ones through events_people, the rest by a scan
// of the events after the mark. An entry may name a row that is no longer
// the person's (an erasure between its commits, Erase): the reads check
// each row's subscriber (ofPeople).
const personRows = `SELECT event FROM events_people WHERE subscriber_id IN (SELECT value FROM json_each(?1))
	UNION ALL
	SELECT rowid FROM events WHERE rowid > (SELECT upto FROM events_people_mark WHERE id = 1)
		AND subscriber_id IN (SELECT value FROM json_each(?1))`

// ofPeople is the condition that an event of personRows is of the people
// in ?1 and the website ?2.
const ofPeople = `website_id = ?2 AND subscriber_id IN (SELECT value FROM json_each(?1))`

const (
	// peopleEvery is how long after a write the indexer indexes what
	// came since its last pass, at most once in that time. Its passes
	// hold no write back (they write the people file), so they need not
	// be short, as they were when they shared the analytics file's one
	// writer (every 100 ms then). Every 2 s measured the same as every
	// second (BenchmarkRecordEvents: 11.5 to 12.5 cpu-µs an event either
	// way); the reads scan what the index does not hold yet, so the
	// shorter.
	peopleEvery = time.Second
	// peopleChunk is the most rows one transaction of the indexer
	// indexes: it bounds the pass's memory, and how long it holds a
	// snapshot of the analytics file (which its checkpoints cannot copy
	// past) and an erasure waits.
	peopleChunk = 200_000
)

// peoplePath is the people file of the analytics file at path:
// "analytics.db" → "analytics-people.db".
func peoplePath(path string) string {
	ext := filepath.Ext(path)
	return strings.TrimSuffix(path, ext) + "-people" + ext
}

// attached is a connector of the SQLite connections of dsn, each with the
// file at path attached as schema name. The attached file keeps a page
// cache of 64 pages: the indexer reads it in a scan, the readers a few
// pages of a person's entries, and in WAL mode another connection's
// commit empties it anyway.
func attached(dsn, name, path string) driver.Connector {
	d := &msqlite.Driver{}
	d.RegisterConnectionHook(func(c msqlite.ExecQuerierContext, _ string) error {
		if _, err := c.ExecContext(context.Background(), `ATTACH DATABASE ? AS `+name,
			[]driver.NamedValue{{Ordinal: 1, Value: path}}); err != nil { // a path, not a URI: taken as it is
			return err
		}
		_, err := c.ExecContext(context.Background(), `PRAGMA `+name+`.cache_size = 64`, nil)
		return err
	})
	return connector{d: d, dsn: dsn}
}

type connector struct {
	d   *msqlite.Driver
	dsn string
}

func (c connector) Connect(context.Context) (driver.Conn, error) { return c.d.Open(c.dsn) }
func (c connector) Driver() driver.Driver                        { return c.d }

// openPeople opens the people file of the analytics file at path, whose
// writer s.db has its schema, and hands keep what it opened: it creates
// the index, finishes the erasures a run left under way, starts the index
// anew if it is not the file's, and brings the marks down to the rows
// there are.
func (s *Store) openPeople(ctx context.Context, path string, keep func(io.Closer)) error {
	// synchronous(FULL): an erasure's commits here must last before it
	// goes on (Erase); the indexer commits a second at most.
	dsn := "file:" + peoplePath(path) + "?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=busy_timeout(10000)" +
		"&_pragma=cache_size(-65536)&_pragma=wal_autocheckpoint(" + strconv.Itoa(wal.Backstop) + ")"
	s.p = sql.OpenDB(attached(dsn, "analytics", path))
	keep(s.p)
	s.p.SetMaxOpenConns(1)
	s.p.SetMaxIdleConns(1)
	s.p.SetConnMaxIdleTime(0)
	c, err := sql.Open("sqlite", dsn)
	if err != nil {
		return err
	}
	s.pckpt = wal.Start(c, s.p, wal.Every, s.logger)
	keep(s.pckpt)
	// One transaction: one sync of the file's log, not one a statement.
	schema := []stmt{{query: eventsPeople.schema}, {query: behaviorsPeople.schema}, {query: peopleSchema}}
	for _, p := range personIndexes {
		schema = append(schema, stmt{query: `CREATE TABLE IF NOT EXISTS main.` + p.mark + ` (
			id INTEGER PRIMARY KEY CHECK (id = 1),
			upto INTEGER NOT NULL
		)`}, stmt{query: `INSERT OR IGNORE INTO main.` + p.mark + ` (id, upto) VALUES (1, 0)`})
	}
	if err := inTx(ctx, s.p, s.pckpt, schema...); err != nil {
		return err
	}
	if err := s.finishErasures(ctx); err != nil {
		return err
	}
	if err := s.startPeopleAnew(ctx); err != nil {
		return err
	}
	for _, p := range personIndexes {
		if err := p.lost(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

// lost forgets the rows the analytics file lost and the people file
// indexed (the two are not committed together: a power cut, or a snapshot
// of the disk, can lose the analytics file's last commits and keep the
// people file's). New rows take their rowids: the mark comes down to the
// newest row there is, so that the indexer reaches them, and the entries
// past it go, so that none names another row or keeps its place in a
// read's limit. It reads the whole index, only when the mark is past the
// rows.
func (p *personIndex) lost(ctx context.Context, s *Store) error {
	var mark, last int64
	if err := s.p.QueryRowContext(ctx, `SELECT upto, (SELECT coalesce(max(rowid), 0) FROM `+p.table+`)
		FROM `+p.mark+` WHERE id = 1`).Scan(&mark, &last); err != nil || mark <= last {
		return err
	}
	s.logger.Warn("analytics: the person index is past the rows; its entries of the rows lost go", "table", p.table,
		"indexed_up_to", mark, "rows_up_to", last)
	return inTx(ctx, s.p, s.pckpt,
		stmt{`DELETE FROM ` + p.entries + ` WHERE ` + p.row + ` > ?`, []any{last}},
		stmt{`UPDATE ` + p.mark + ` SET upto = ? WHERE id = 1`, []any{last}})
}

// startPeopleAnew empties the people file's index and sets its marks to
// the start when it is not the index of the analytics file (people_of),
// or when the analytics file holds an earlier version's (inAnalytics),
// which it then drops: the indexer (woken at Open) indexes the file's
// rows in its chunks while the reads find them by the scan. The index is
// emptied first: killed between, the next open does both again.
func (s *Store) startPeopleAnew(ctx context.Context) error {
	names, err := json.Marshal(inAnalytics)
	if err != nil {
		return err
	}
	var file, of string
	var old int
	if err := s.db.QueryRowContext(ctx, `SELECT (SELECT id FROM analytics_file), (SELECT count(*) FROM sqlite_master
		WHERE name IN (SELECT value FROM json_each(?1)))`, string(names)).Scan(&file, &old); err != nil {
		return err
	}
	if err := s.p.QueryRowContext(ctx, `SELECT coalesce((SELECT file FROM people_of), '')`).Scan(&of); err != nil {
		return err
	}
	if of == file && old == 0 {
		return nil
	}
	steps := []stmt{{`INSERT OR REPLACE INTO people_of (id, file) VALUES (1, ?)`, []any{file}}}
	for _, p := range personIndexes {
		steps = append(steps, stmt{query: `DELETE FROM main.` + p.entries}, stmt{query: `UPDATE main.` + p.mark + ` SET upto = 0 WHERE id = 1`})
	}
	if err := inTx(ctx, s.p, s.pckpt, steps...); err != nil {
		return err
	}
	if old == 0 {
		return nil
	}
	rows, err := s.db.QueryContext(ctx, `SELECT type, name FROM sqlite_master WHERE name IN (SELECT value FROM json_each(?))`, string(names))
	if err != nil {
		return err
	}
	steps = steps[:0]
	for rows.Next() {
		var kind, name string
		if err := rows.Scan(&kind, &name); err != nil {
			rows.Close()
			return err
		}
		steps = append(steps, stmt{query: `DROP ` + strings.ToUpper(kind) + ` IF EXISTS main.` + name})
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return err
	}
	return inTx(ctx, s.db, s.ckpt, steps...)
}

// indexPass is the indexer's pass: indexPeople, its failure logged. The
// rows it did not index stay after the marks, for the next pass (the
// next write's) and for the reads' scan meanwhile.
func (s *Store) indexPass() {
	if err := s.indexPeople(context.Background()); err != nil {
		s.logger.Warn("analytics: indexing by person", "err", err)
	}
}

// indexPeople indexes every row after each index's mark, peopleChunk a
// transaction.
func (s *Store) indexPeople(ctx context.Context) error {
	s.peopleMu.Lock()
	defer s.peopleMu.Unlock()
	if err := s.finishErasures(ctx); err != nil {
		return err
	}
	for _, p := range personIndexes {
		for {
			done, err := p.chunk(ctx, s)
			if err != nil {
				return err
			}
			if done {
				break
			}
		}
	}
	return nil
}

// chunk indexes up to peopleChunk rows after the mark; done is true when
// none are left. It reads the analytics rows in one snapshot, and writes
// only the people file.
func (p *personIndex) chunk(ctx context.Context, s *Store) (done bool, err error) {
	tx, err := s.p.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("indexing %s by person: %w", p.table, err)
	}
	defer tx.Rollback()
	var mark, last int64
	if err := tx.QueryRowContext(ctx, `SELECT upto, (SELECT coalesce(max(rowid), 0) FROM `+p.table+`)
		FROM `+p.mark+` WHERE id = 1`).Scan(&mark, &last); err != nil {
		return false, fmt.Errorf("indexing %s by person: %w", p.table, err)
	}
	if last <= mark {
		return true, nil
	}
	upto := min(last, mark+peopleChunk)
	if _, err := tx.ExecContext(ctx, p.insert, mark, upto); err != nil {
		return false, fmt.Errorf("indexing %s by person: %w", p.table, err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE `+p.mark+` SET upto = ? WHERE id = 1`, upto); err != nil {
		return false, fmt.Errorf("indexing %s by person: %w", p.table, err)
	}
	if err := commit(tx, s.pckpt); err != nil {
		return false, fmt.Errorf("indexing %s by person: %w", p.table, err)
	}
	return upto == last, nil
}

// erasure is an erasure under way, as the people file records it:
// the website's subscribers and external ids erased, the rowids of their
// events and behaviors, and the keys those behaviors have entries under
// (each behavior has one under its subscriber and one under its external
// id, which need not be the ones erased).
type erasure struct {
	// File is analytics_file.id before the erasure; NewFile the one its
	// deletes give it (peopleSchema).
	File           string   `json:"file"`
	NewFile        string   `json:"newFile"`
	WebsiteID      string   `json:"website"`
	Subscribers    []string `json:"subscribers"`
	ExternalIDs    []string `json:"externalIds"`
	Events         []int64  `json:"events"`
	Behaviors      []int64  `json:"behaviors"`
	SubscriberKeys []string `json:"subscriberKeys"`
	ExternalKeys   []string `json:"externalKeys"`
}

// erasureArgs are an erasure's lists as the JSON arrays its statements
// take.
type erasureArgs struct {
	subs, exts, events, behaviors, subKeys, extKeys string
}

// args is e's lists as JSON arrays.
func (e *erasure) args() (erasureArgs, error) {
	var errs []error
	js := func(list any) string {
		b, err := json.Marshal(list)
		errs = append(errs, err)
		return string(b)
	}
	a := erasureArgs{subs: js(e.Subscribers), exts: js(e.ExternalIDs), events: js(e.Events), behaviors: js(e.Behaviors),
		subKeys: js(e.SubscriberKeys), extKeys: js(e.ExternalKeys)}
	return a, errors.Join(errs...)
}

// Erase deletes every event of the website's subscribers, and their
// behaviors and those logged under the external ids.
//
// Its rows are in the analytics file and their entries in the people
// file, committed apart, so it goes in steps, under peopleMu (no pass of
// the indexer between them), each commit lasting before the next
// (synchronous FULL), and in this order:
//
//  1. it lists the rows and their entries' keys (one snapshot of both
//     files);
//  2. in the people file, it records the erasure (people_erasures) and
//     brings each mark down to the largest rowid that will be left: once
//     the newest rows are gone, new rows take their rowids, and must be
//     past the mark to be indexed;
//  3. it deletes the rows, in the analytics file;
//  4. it deletes their entries and its record, in the people file.
//
// Once recorded, it goes on whether ctx is cancelled or not. Should a
// step fail, or the run be killed, after 2, the next erasure, the
// indexer's next pass or the next open finishes 3 and 4 first
// (finishErasures). Between 3 and 4 an entry may name a rowid a new row
// took: the reads check each row's person (ofPeople), and so does 3,
// done again. A row the erased person wrote after 1 is left, unless it
// took an erased row's rowid and 3 is done again.
func (s *Store) Erase(ctx context.Context, websiteID string, subscriberIDs, externalIDs []string) error {
	e := erasure{WebsiteID: websiteID, Subscribers: nonNil(analytics.NonEmpty(subscriberIDs)), ExternalIDs: nonNil(analytics.NonEmpty(externalIDs))}
	if len(e.Subscribers) == 0 && len(e.ExternalIDs) == 0 {
		return nil
	}
	s.peopleMu.Lock()
	defer s.peopleMu.Unlock()
	if err := s.finishErasures(ctx); err != nil {
		return fmt.Errorf("erasing events: %w", err)
	}
	if err := s.listErased(ctx, &e); err != nil {
		return fmt.Errorf("erasing events: %w", err)
	}
	if len(e.Events) == 0 && len(e.Behaviors) == 0 {
		return nil
	}
	ctx = context.WithoutCancel(ctx)
	id, err := s.beginErasure(ctx, &e)
	if err != nil {
		return fmt.Errorf("erasing events: %w", err)
	}
	if err := s.finishErasure(ctx, id, &e); err != nil {
		return fmt.Errorf("erasing events: %w", err)
	}
	return nil
}

// listErased is Erase's step 1.
func (s *Store) listErased(ctx context.Context, e *erasure) error {
	a, err := e.args()
	if err != nil {
		return err
	}
	tx, err := s.p.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := tx.QueryRowContext(ctx, `SELECT id FROM analytics_file`).Scan(&e.File); err != nil {
		return err
	}
	rows, err := tx.QueryContext(ctx, `SELECT rowid FROM events WHERE rowid IN (`+personRows+`) AND `+ofPeople, a.subs, e.WebsiteID)
	if err != nil {
		return err
	}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return err
		}
		e.Events = append(e.Events, id)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return err
	}
	rows, err = tx.QueryContext(ctx, `SELECT rowid, subscriber_id, external_id FROM behaviors NOT INDEXED
		WHERE rowid IN (`+erasedBehaviors+`) AND `+behaviorsOfPeople, e.WebsiteID, a.subs, a.exts)
	if err != nil {
		return err
	}
	subKeys, extKeys := map[string]bool{}, map[string]bool{}
	for rows.Next() {
		var (
			id       int64
			sub, ext string
		)
		if err := rows.Scan(&id, &sub, &ext); err != nil {
			rows.Close()
			return err
		}
		e.Behaviors = append(e.Behaviors, id)
		if sub != "" && !subKeys[sub] {
			subKeys[sub] = true
			e.SubscriberKeys = append(e.SubscriberKeys, sub)
		}
		if ext != "" && !extKeys[ext] {
			extKeys[ext] = true
			e.ExternalKeys = append(e.ExternalKeys, ext)
		}
	}
	e.Events, e.Behaviors = nonNil(e.Events), nonNil(e.Behaviors)
	e.SubscriberKeys, e.ExternalKeys = nonNil(e.SubscriberKeys), nonNil(e.ExternalKeys)
	return errors.Join(rows.Err(), rows.Close())
}

// beginErasure is Erase's step 2; id is the erasure's record.
func (s *Store) beginErasure(ctx context.Context, e *erasure) (id int64, err error) {
	e.NewFile = rand.Text()
	record, err := json.Marshal(e)
	if err != nil {
		return 0, err
	}
	a, err := e.args()
	if err != nil {
		return 0, err
	}
	tx, err := s.p.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	if err := tx.QueryRowContext(ctx, `INSERT INTO people_erasures (erasure) VALUES (?) RETURNING id`, string(record)).Scan(&id); err != nil {
		return 0, err
	}
	for _, m := range []struct {
		p    *personIndex
		rows string
	}{{&eventsPeople, a.events}, {&behaviorsPeople, a.behaviors}} {
		// The newest row left: read from the table's end back, past the
		// erased ones.
		if _, err := tx.ExecContext(ctx, `UPDATE `+m.p.mark+` SET upto = min(upto, coalesce((SELECT rowid FROM `+m.p.table+`
			WHERE rowid NOT IN (SELECT value FROM json_each(?1)) ORDER BY rowid DESC LIMIT 1), 0)) WHERE id = 1`, m.rows); err != nil {
			return 0, err
		}
	}
	return id, commit(tx, s.pckpt)
}

// finishErasure is Erase's steps 3 and 4.
func (s *Store) finishErasure(ctx context.Context, id int64, e *erasure) error {
	if err := s.deleteErased(ctx, e); err != nil {
		return err
	}
	return s.unindexErased(ctx, id, e)
}

// deleteErased is Erase's step 3: it deletes the rows, on the analytics
// file's writer, its commit synced (the file's other writes are not:
// synchronous NORMAL). Done again after a crash, it deletes a row only
// if it is still the erased people's (a new row may have its rowid).
func (s *Store) deleteErased(ctx context.Context, e *erasure) error {
	a, err := e.args()
	if err != nil {
		return err
	}
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `PRAGMA synchronous = FULL`); err != nil {
		return err
	}
	defer conn.ExecContext(context.Background(), `PRAGMA synchronous = NORMAL`)
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `DELETE FROM events WHERE rowid IN (SELECT value FROM json_each(?3)) AND `+ofPeople,
		a.subs, e.WebsiteID, a.events); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM behaviors NOT INDEXED WHERE rowid IN (SELECT value FROM json_each(?4)) AND `+behaviorsOfPeople,
		e.WebsiteID, a.subs, a.exts, a.behaviors); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE analytics_file SET id = ?`, e.NewFile); err != nil {
		return err
	}
	return s.commit(tx)
}

// unindexErased is Erase's step 4: it deletes the rows' entries and the
// erasure's record id, on the people file's connection.
func (s *Store) unindexErased(ctx context.Context, id int64, e *erasure) error {
	a, err := e.args()
	if err != nil {
		return err
	}
	return inTx(ctx, s.p, s.pckpt,
		stmt{`DELETE FROM events_people WHERE subscriber_id IN (SELECT value FROM json_each(?1))
			AND event IN (SELECT value FROM json_each(?2))`, []any{a.subs, a.events}},
		stmt{unindexBehaviors, []any{e.WebsiteID, a.behaviors, 0, a.subKeys}},
		stmt{unindexBehaviors, []any{e.WebsiteID, a.behaviors, 1, a.extKeys}},
		stmt{`UPDATE people_of SET file = ?`, []any{e.NewFile}},
		stmt{`DELETE FROM people_erasures WHERE id = ?`, []any{id}})
}

// finishErasures finishes the erasures a run left under way (Erase's
// steps 3 and 4), oldest first.
func (s *Store) finishErasures(ctx context.Context) error {
	rows, err := s.p.QueryContext(ctx, `SELECT id, erasure FROM people_erasures ORDER BY id`)
	if err != nil {
		return err
	}
	type pending struct {
		id int64
		e  erasure
	}
	var left []pending
	for rows.Next() {
		var (
			p      pending
			record string
		)
		if err := rows.Scan(&p.id, &record); err != nil {
			rows.Close()
			return err
		}
		if err := json.Unmarshal([]byte(record), &p.e); err != nil {
			rows.Close()
			return fmt.Errorf("erasure %d: %w", p.id, err)
		}
		left = append(left, p)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return err
	}
	for _, p := range left {
		var file string
		if err := s.db.QueryRowContext(ctx, `SELECT id FROM analytics_file`).Scan(&file); err != nil {
			return err
		}
		if file != p.e.File && file != p.e.NewFile {
			// Another analytics file, or a copy restored from before an
			// earlier erasure: its rowids are not the record's. The
			// record is dropped, and the index started anew
			// (startPeopleAnew).
			s.logger.Warn("analytics: an erasure under way is of another analytics file; dropped", "erasure", p.id)
			if _, err := s.p.ExecContext(ctx, `DELETE FROM people_erasures WHERE id = ?`, p.id); err != nil {
				return err
			}
			continue
		}
		if err := s.finishErasure(ctx, p.id, &p.e); err != nil {
			return fmt.Errorf("finishing erasure %d: %w", p.id, err)
		}
	}
	return nil
}

// stmt is a statement and its arguments.
type stmt struct {
	query string
	args  []any
}

// inTx runs stmts in one transaction of db, then wakes ckpt, db's file's
// checkpointer.
func inTx(ctx context.Context, db *sql.DB, ckpt *wal.Checkpointer, stmts ...stmt) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, st := range stmts {
		if _, err := tx.ExecContext(ctx, st.query, st.args...); err != nil {
			return err
		}
	}
	return commit(tx, ckpt)
}

// nonNil is s, or an empty slice (JSON [], not null).
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
