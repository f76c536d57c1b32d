package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/relaybell/relaybell/analytics"
)

// RecordBehaviors appends behaviors in one transaction; one whose id is
// there already is left as it was.
func (s *Store) RecordBehaviors(ctx context.Context, behaviors []analytics.Behavior) error {
	if len(behaviors) == 0 {
		return nil
	}
	if err := analytics.CheckBehaviors(behaviors); err != nil {
		return fmt.Errorf("recording behaviors: %w", err)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("recording behaviors: %w", err)
	}
	defer tx.Rollback()
	stmt := tx.StmtContext(ctx, s.insertBehavior)
	for i := range behaviors {
		b := &behaviors[i]
		if _, err := stmt.ExecContext(ctx, b.ID, b.WebsiteID, b.SubscriberID, b.ExternalID, b.At.UnixMilli(), b.Name,
			b.Source, b.NotificationID, b.Value, b.Conversion, b.Seq, b.PropertiesText()); err != nil {
			return fmt.Errorf("recording behaviors: %w", err)
		}
	}
	if err := s.commit(tx); err != nil {
		return fmt.Errorf("recording behaviors: %w", err)
	}
	s.people.Wake()
	return nil
}

// The behaviors reads. A person's are the newest of each side of the
// person index (behaviorsPeople), the subscribers' and the external id's,
// and those after its mark, merged: each side is read in the index's
// order, and only the rows listed are read from the table.
const (
	behaviorColumns = `id, website_id, subscriber_id, external_id, at, name, source, notification_id, value, conversion, seq, properties`

	insertBehaviorSQL = `INSERT INTO behaviors (` + behaviorColumns + `)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`

	latestBehaviors = `SELECT ` + behaviorColumns + ` FROM behaviors
		WHERE website_id = ?1 ORDER BY at DESC, seq DESC, id DESC LIMIT ?2`

	// behaviorsAfterMark is the condition on the website's behaviors the
	// index does not hold yet. Their reads say NOT INDEXED, so that they
	// are found by rowid: SQLite's planner took the website's index, all
	// of the website's rows (TestBehaviorReadsPlan).
	behaviorsAfterMark = `rowid > (SELECT upto FROM behaviors_people_mark WHERE id = 1) AND website_id = ?1`

	personBehaviors = `SELECT ` + behaviorColumns + ` FROM behaviors NOT INDEXED WHERE rowid IN (
			SELECT behavior FROM (SELECT behavior FROM behaviors_people
				WHERE website_id = ?1 AND by_external = 0 AND key IN (SELECT value FROM json_each(?3))
				ORDER BY at DESC, seq DESC, id DESC LIMIT ?2)
			UNION ALL
			SELECT behavior FROM (SELECT behavior FROM behaviors_people
				WHERE website_id = ?1 AND by_external = 1 AND key = ?4 AND ?4 <> ''
				ORDER BY at DESC, seq DESC, id DESC LIMIT ?2)
			UNION ALL
			SELECT rowid FROM behaviors NOT INDEXED WHERE ` + behaviorsAfterMark + ` AND ` + ofPerson + `)
			AND website_id = ?1 AND ` + ofPerson + `
		ORDER BY at DESC, seq DESC, id DESC LIMIT ?2`

	// ofPerson is personBehaviors' condition that a behavior is of the
	// subscribers in ?3 or of the external id ?4: of the rows after the
	// mark, and of every row listed (an entry may name a row that is no
	// longer the person's: Erase).
	ofPerson = `(subscriber_id IN (SELECT value FROM json_each(?3)) OR external_id = ?4 AND ?4 <> '')`

	// erasedBehaviors selects the rowids of the website's (?1) behaviors
	// of the subscribers in the JSON array ?2 and of the external ids in
	// ?3.
	erasedBehaviors = `SELECT behavior FROM behaviors_people
			WHERE website_id = ?1 AND by_external = 0 AND key IN (SELECT value FROM json_each(?2))
		UNION
		SELECT behavior FROM behaviors_people
			WHERE website_id = ?1 AND by_external = 1 AND key IN (SELECT value FROM json_each(?3))
		UNION
		SELECT rowid FROM behaviors NOT INDEXED WHERE ` + behaviorsAfterMark + `
			AND (subscriber_id IN (SELECT value FROM json_each(?2)) OR external_id IN (SELECT value FROM json_each(?3)))`

	// behaviorsOfPeople is the condition that a behavior of
	// erasedBehaviors is the website's (?1) and of the subscribers in ?2
	// or of the external ids in ?3.
	behaviorsOfPeople = `website_id = ?1 AND (subscriber_id IN (SELECT value FROM json_each(?2))
		OR external_id IN (SELECT value FROM json_each(?3)))`

	// unindexBehaviors removes the index's entries, on the side ?3 (0:
	// by subscriber, 1: by external id), of the website's (?1) behaviors
	// whose rowids are the JSON array ?2, under the keys in the JSON array
	// ?4 (those behaviors' own on that side).
	unindexBehaviors = `DELETE FROM behaviors_people WHERE website_id = ?1 AND by_external = ?3
		AND key IN (SELECT value FROM json_each(?4))
		AND behavior IN (SELECT value FROM json_each(?2))`
)

// Behaviors lists the behaviors q selects, newest first.
func (s *Store) Behaviors(ctx context.Context, q analytics.BehaviorQuery) ([]analytics.Behavior, error) {
	if err := q.Check(); err != nil {
		return nil, err
	}
	query, args := latestBehaviors, []any{q.WebsiteID, q.Limit}
	if subs, byPerson := q.Subscribers(); byPerson {
		ids, err := json.Marshal(subs)
		if err != nil {
			return nil, err
		}
		query, args = personBehaviors, append(args, string(ids), q.ExternalID)
	}
	rows, err := s.r.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("reading behaviors: %w", err)
	}
	defer rows.Close()
	out := []analytics.Behavior{}
	for rows.Next() {
		var (
			b     analytics.Behavior
			props string
			at    int64
		)
		if err := rows.Scan(&b.ID, &b.WebsiteID, &b.SubscriberID, &b.ExternalID, &at, &b.Name, &b.Source,
			&b.NotificationID, &b.Value, &b.Conversion, &b.Seq, &props); err != nil {
			return nil, fmt.Errorf("reading behaviors: %w", err)
		}
		b.Properties = json.RawMessage(props)
		b.At = time.UnixMilli(at).UTC()
		out = append(out, b)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading behaviors: %w", err)
	}
	return out, nil
}
