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
	return nil
}

// The behaviors reads. A person's are the newest of each index, the
// subscribers' and the external id's, merged: one OR over both would read
// the website's whole index (SQLite's planner takes behaviors_website for
// the ORDER BY). Every index ends in (at, seq, id), so each side is read from
// its index alone and only the rows listed are read from the table.
const (
	behaviorColumns = `id, website_id, subscriber_id, external_id, at, name, source, notification_id, value, conversion, seq, properties`

	insertBehaviorSQL = `INSERT INTO behaviors (` + behaviorColumns + `)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`

	latestBehaviors = `SELECT ` + behaviorColumns + ` FROM behaviors
		WHERE website_id = ?1 ORDER BY at DESC, seq DESC, id DESC LIMIT ?2`

	personBehaviors = `SELECT ` + behaviorColumns + ` FROM behaviors WHERE rowid IN (
			SELECT rowid FROM (SELECT rowid FROM behaviors INDEXED BY behaviors_subscriber_seq
				WHERE website_id = ?1 AND subscriber_id IN (SELECT value FROM json_each(?3)) ORDER BY at DESC, seq DESC, id DESC LIMIT ?2)
			UNION ALL
			SELECT rowid FROM (SELECT rowid FROM behaviors INDEXED BY behaviors_external_seq
				WHERE website_id = ?1 AND external_id = ?4 AND ?4 <> '' ORDER BY at DESC, seq DESC, id DESC LIMIT ?2))
		ORDER BY at DESC, seq DESC, id DESC LIMIT ?2`

	eraseBehaviors = `DELETE FROM behaviors WHERE rowid IN (
			SELECT rowid FROM behaviors INDEXED BY behaviors_subscriber_seq
				WHERE website_id = ?1 AND subscriber_id IN (SELECT value FROM json_each(?2))
			UNION ALL
			SELECT rowid FROM behaviors INDEXED BY behaviors_external_seq
				WHERE website_id = ?1 AND external_id IN (SELECT value FROM json_each(?3)))`
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
	rows, err := s.db.QueryContext(ctx, query, args...)
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
