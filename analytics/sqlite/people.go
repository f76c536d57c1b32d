package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"
)

// The person indexes: which events, and which behaviors, are whose.
//
// A person's history, counts and erasure find their events by subscriber,
// and their behaviors by subscriber and by external id. An index of the
// events keyed by subscriber (events_subscriber, until this file) took a
// random leaf page an event, since a broadcast's pushes go to people in no
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
// the rows after it, at most about peopleEvery's worth, are found by a
// scan of the table's end (personRows, personBehaviors).

// personIndex is a table's index by person, built in bulk.
type personIndex struct {
	table   string // the table indexed
	entries string // the index's table
	mark    string // the mark's table: one row, upto
	// schema creates the index's table.
	schema string
	// insert indexes the rows after the mark ?1 up to rowid ?2, sorted by
	// the index's key. OR ROLLBACK: see Record.
	insert string
	// old are the table's indexes it replaces, in this version or an
	// older one.
	old []string
}

var (
	eventsPeople = personIndex{table: "events", entries: "events_people", mark: "events_people_mark",
		schema: `CREATE TABLE IF NOT EXISTS events_people (
			subscriber_id TEXT NOT NULL,
			at INTEGER NOT NULL,
			event INTEGER NOT NULL,
			PRIMARY KEY (subscriber_id, at, event)
		) WITHOUT ROWID`,
		insert: `INSERT OR ROLLBACK INTO events_people (subscriber_id, at, event)
			SELECT subscriber_id, at, rowid FROM events WHERE rowid > ?1 AND rowid <= ?2
			ORDER BY subscriber_id, at, rowid`,
		old: []string{"events_subscriber"}}

	// behaviorsPeople holds a behavior under its subscriber (by_external
	// 0) and under its external id (1), each when not empty, in the reads'
	// order (at, seq, id); behavior is its rowid.
	behaviorsPeople = personIndex{table: "behaviors", entries: "behaviors_people", mark: "behaviors_people_mark",
		schema: `CREATE TABLE IF NOT EXISTS behaviors_people (
			website_id TEXT NOT NULL,
			by_external INTEGER NOT NULL,
			key TEXT NOT NULL,
			at INTEGER NOT NULL,
			seq INTEGER NOT NULL,
			id TEXT NOT NULL,
			behavior INTEGER NOT NULL,
			PRIMARY KEY (website_id, by_external, key, at, seq, id)
		) WITHOUT ROWID`,
		insert: `INSERT OR ROLLBACK INTO behaviors_people (website_id, by_external, key, at, seq, id, behavior)
			SELECT website_id, 0, subscriber_id, at, seq, id, rowid FROM behaviors
				WHERE rowid > ?1 AND rowid <= ?2 AND subscriber_id <> ''
			UNION ALL
			SELECT website_id, 1, external_id, at, seq, id, rowid FROM behaviors
				WHERE rowid > ?1 AND rowid <= ?2 AND external_id <> ''
			ORDER BY 1, 2, 3, 4, 5, 6`,
		old: []string{"behaviors_subscriber", "behaviors_external", "behaviors_subscriber_seq", "behaviors_external_seq"}}

	personIndexes = []*personIndex{&eventsPeople, &behaviorsPeople}
)

// personRows selects the rowids of the events of the people in the JSON
// array ?1: the indexed ones through events_people, the rest by a scan
// of the events after the mark.
const personRows = `SELECT event FROM events_people WHERE subscriber_id IN (SELECT value FROM json_each(?1))
	UNION ALL
	SELECT rowid FROM events WHERE rowid > (SELECT upto FROM events_people_mark WHERE id = 1)
		AND subscriber_id IN (SELECT value FROM json_each(?1))`

const (
	// peopleEvery is how long after a write the indexer indexes what
	// came since its last pass, at most once in that time. A pass holds
	// the file's one connection: at 500 ms, a pass of the behaviors of
	// 2,000 events a second took 10-23 ms, and the events bench's p99
	// went from 11-13 ms to 20-21; at 100 ms it stayed at 9-12, the CPU
	// an event as low (each leaf page is still written once a pass, not
	// once a commit).
	peopleEvery = 100 * time.Millisecond
	// peopleChunk is the most rows one transaction of the indexer
	// indexes, so that the writes waiting for the one connection wait for
	// a few tens of milliseconds at most.
	peopleChunk = 50_000
)

// open creates the index. A file from before it has the table's old
// indexes instead: they are dropped and the mark set to the start, so
// that the indexer (woken at Open) indexes the file's rows in its chunks
// while the reads find them by the scan. A file an older version wrote
// again after this one (a downgrade: an old index back) may hold entries
// of rows it erased, and rows past the mark with rowids it reused: its
// index is started anew the same way.
func (p *personIndex) open(ctx context.Context, db *sql.DB) error {
	if _, err := db.ExecContext(ctx, p.schema); err != nil {
		return err
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+p.mark+` (
		id INTEGER PRIMARY KEY CHECK (id = 1),
		upto INTEGER NOT NULL
	)`); err != nil {
		return err
	}
	if _, err := db.ExecContext(ctx, `INSERT OR IGNORE INTO `+p.mark+` (id, upto) VALUES (1, 0)`); err != nil {
		return err
	}
	old, err := json.Marshal(p.old)
	if err != nil {
		return err
	}
	var found int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'index'
		AND name IN (SELECT value FROM json_each(?1))`, string(old)).Scan(&found); err != nil || found == 0 {
		return err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	steps := []string{`DELETE FROM ` + p.entries, `UPDATE ` + p.mark + ` SET upto = 0 WHERE id = 1`}
	for _, name := range p.old {
		steps = append(steps, `DROP INDEX IF EXISTS `+name)
	}
	for _, q := range steps {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	return tx.Commit()
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
// none are left.
func (p *personIndex) chunk(ctx context.Context, s *Store) (done bool, err error) {
	tx, err := s.db.BeginTx(ctx, nil)
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
	if err := s.commit(tx); err != nil {
		return false, fmt.Errorf("indexing %s by person: %w", p.table, err)
	}
	return upto == last, nil
}

// lowerMark brings the mark back to the largest rowid left, in an
// erasure's transaction tx, after its rows are gone. A new row takes the
// rowid after the largest left; should the erasure have removed the last
// rows, the next rows are then past the mark, and get indexed.
func (p *personIndex) lowerMark(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `UPDATE `+p.mark+` SET upto = min(upto, (SELECT coalesce(max(rowid), 0) FROM `+p.table+`)) WHERE id = 1`)
	return err
}

// erasePeople removes the erased events of the people in the JSON array
// ?1 from the index, in erasure's transaction tx, after their rows, and
// lowers the mark (lowerMark).
func erasePeople(ctx context.Context, tx *sql.Tx, subscribers string) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM events_people WHERE subscriber_id IN (SELECT value FROM json_each(?1))
		AND NOT EXISTS (SELECT 1 FROM events WHERE rowid = event)`, subscribers); err != nil {
		return err
	}
	return eventsPeople.lowerMark(ctx, tx)
}
