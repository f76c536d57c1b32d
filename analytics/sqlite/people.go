package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// The person index: which events are whose.
//
// A person's history, counts and erasure find their events by subscriber.
// An index of the events keyed by subscriber (events_subscriber, until
// this file) took a random leaf page an event, since a broadcast's pushes
// go to people in no order, and every commit wrote each page it touched
// to the log again: about 70% of a push event's write
// (BenchmarkRecordEvents: 27 cpu-µs an event with it, 8 without).
//
// So the events go in without it, in rowid order, and the indexer adds
// them to events_people afterwards, many at a time and sorted by person: a
// page of the index is written once for all the events of a pass that
// fall in it. events_people_mark holds the last rowid indexed; the events
// after it, at most about peopleEvery's worth, are found by a scan of the
// table's end (personRows).
const peopleSchema = `
CREATE TABLE IF NOT EXISTS events_people (
	subscriber_id TEXT NOT NULL,
	at INTEGER NOT NULL,
	event INTEGER NOT NULL,
	PRIMARY KEY (subscriber_id, at, event)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS events_people_mark (
	id INTEGER PRIMARY KEY CHECK (id = 1),
	upto INTEGER NOT NULL
);
`

// personRows selects the rowids of the events of the people in the JSON
// array ?1: the indexed ones through events_people, the rest by a scan
// of the events after the mark.
const personRows = `SELECT event FROM events_people WHERE subscriber_id IN (SELECT value FROM json_each(?1))
	UNION ALL
	SELECT rowid FROM events WHERE rowid > (SELECT upto FROM events_people_mark WHERE id = 1)
		AND subscriber_id IN (SELECT value FROM json_each(?1))`

const (
	// peopleEvery is how long after a write the indexer indexes what
	// came since its last pass, at most once in that time.
	peopleEvery = 500 * time.Millisecond
	// peopleChunk is the most events one transaction of the indexer
	// indexes, so that the writes waiting for the one connection wait for
	// a few tens of milliseconds at most.
	peopleChunk = 50_000
)

// indexPeopleSQL indexes the events after the mark ?1 up to rowid ?2,
// sorted by the index's key. OR ROLLBACK: see Record.
const indexPeopleSQL = `INSERT OR ROLLBACK INTO events_people (subscriber_id, at, event)
	SELECT subscriber_id, at, rowid FROM events WHERE rowid > ?1 AND rowid <= ?2
	ORDER BY subscriber_id, at, rowid`

// openPeople creates the person index. A file from before it has the
// events_subscriber index instead: that index is dropped and the mark set
// to the start, so that the indexer (woken at Open) indexes the file's
// events in its chunks while the reads find them by the scan. A file an
// older version wrote again after this one (a downgrade: events_subscriber
// back) may hold entries of events it erased, and events past the mark
// with rowids it reused: its index is started anew the same way.
func openPeople(ctx context.Context, db *sql.DB) error {
	if _, err := db.ExecContext(ctx, peopleSchema); err != nil {
		return err
	}
	_, err := db.ExecContext(ctx, `INSERT OR IGNORE INTO events_people_mark (id, upto) VALUES (1, 0)`)
	if err != nil {
		return err
	}
	var old int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'events_subscriber'`).Scan(&old); err != nil || old == 0 {
		return err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, q := range []string{`DELETE FROM events_people`, `UPDATE events_people_mark SET upto = 0 WHERE id = 1`, `DROP INDEX events_subscriber`} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// indexPass is the indexer's pass: indexPeople, its failure logged. The
// events it did not index stay after the mark, for the next pass (the
// next write's) and for the reads' scan meanwhile.
func (s *Store) indexPass() {
	if err := s.indexPeople(context.Background()); err != nil {
		s.logger.Warn("analytics: indexing the events by person", "err", err)
	}
}

// indexPeople indexes every event after the mark, peopleChunk a
// transaction.
func (s *Store) indexPeople(ctx context.Context) error {
	for {
		done, err := s.indexPeopleChunk(ctx)
		if err != nil || done {
			return err
		}
	}
}

// indexPeopleChunk indexes up to peopleChunk events after the mark; done
// is true when none are left.
func (s *Store) indexPeopleChunk(ctx context.Context) (done bool, err error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("indexing events by person: %w", err)
	}
	defer tx.Rollback()
	var mark, last int64
	if err := tx.QueryRowContext(ctx, `SELECT upto, (SELECT coalesce(max(rowid), 0) FROM events)
		FROM events_people_mark WHERE id = 1`).Scan(&mark, &last); err != nil {
		return false, fmt.Errorf("indexing events by person: %w", err)
	}
	if last <= mark {
		return true, nil
	}
	upto := min(last, mark+peopleChunk)
	if _, err := tx.ExecContext(ctx, indexPeopleSQL, mark, upto); err != nil {
		return false, fmt.Errorf("indexing events by person: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE events_people_mark SET upto = ? WHERE id = 1`, upto); err != nil {
		return false, fmt.Errorf("indexing events by person: %w", err)
	}
	if err := s.commit(tx); err != nil {
		return false, fmt.Errorf("indexing events by person: %w", err)
	}
	return upto == last, nil
}

// erasePeople removes the erased events of the people in the JSON array
// ?1 from the index, in erasure's transaction tx, after their rows. A new
// event takes the rowid after the largest left; should the erasure have
// removed the last events, the mark comes back to that largest, so that
// the next events are past it and get indexed.
func erasePeople(ctx context.Context, tx *sql.Tx, subscribers string) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM events_people WHERE subscriber_id IN (SELECT value FROM json_each(?1))
		AND NOT EXISTS (SELECT 1 FROM events WHERE rowid = event)`, subscribers); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `UPDATE events_people_mark SET upto = min(upto, (SELECT coalesce(max(rowid), 0) FROM events)) WHERE id = 1`)
	return err
}
