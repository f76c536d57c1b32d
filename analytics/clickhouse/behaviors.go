package clickhouse

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/relaybell/relaybell/analytics"
)

// The behaviors table is ordered for a person's reads: by subscriber they
// read their own granules, and behaviors logged under an external id with
// no subscriber lie together under an empty subscriber_id; an external id's
// behaviors that also name a subscriber are found by scanning the
// website's other granules (their small columns only: see Behaviors). It is
// partitioned by UTC day like events, so that retention drops both a day
// at a time. DateTime holds seconds (18.16 has no DateTime64): millis
// keeps the rest of at, and seq (Behavior.Seq) orders the behaviors of one
// millisecond. A row can carry up to about 1 MB of properties, so
// granules are of 1,024 rows (18.16 sizes them by rows only), and reads
// pick the rows they list by id before reading properties.
const createBehaviors = `CREATE TABLE IF NOT EXISTS %s (
	website_id String,
	subscriber_id String,
	external_id String,
	at DateTime('UTC'),
	millis UInt16,
	id String,
	name String,
	source LowCardinality(String),
	notification_id String,
	value Float64,
	conversion UInt8,
	properties String,
	seq Int64
) ENGINE = MergeTree()
PARTITION BY toYYYYMMDD(at)
ORDER BY (website_id, subscriber_id, external_id, at)
SETTINGS index_granularity = 1024`

const behaviorColumns = `(website_id, subscriber_id, external_id, at, millis, id, name, source, notification_id, value, conversion, properties, seq)`

// RecordBehaviors appends behaviors in one batch.
func (s *Store) RecordBehaviors(ctx context.Context, behaviors []analytics.Behavior) error {
	if len(behaviors) == 0 {
		return nil
	}
	if err := analytics.CheckBehaviors(behaviors); err != nil {
		return fmt.Errorf("recording behaviors: %w", err)
	}
	batch, err := s.conn.PrepareBatch(ctx, "INSERT INTO "+s.behaviors+" "+behaviorColumns)
	if err != nil {
		return fmt.Errorf("recording behaviors: %w", err)
	}
	defer batch.Abort()
	for i := range behaviors {
		b := &behaviors[i]
		var conversion uint8
		if b.Conversion {
			conversion = 1
		}
		at := b.At.UTC()
		if err := batch.Append(b.WebsiteID, b.SubscriberID, b.ExternalID, at, uint16(at.Nanosecond()/int(time.Millisecond)),
			b.ID, b.Name, b.Source, b.NotificationID, b.Value, conversion, b.PropertiesText(), b.Seq); err != nil {
			return fmt.Errorf("recording behaviors: %w", err)
		}
	}
	if err := batch.Send(); err != nil {
		return fmt.Errorf("recording behaviors: %w", err)
	}
	return nil
}

// Behaviors lists the behaviors q selects, newest first, each once (the
// sinks are at-least-once). The inner query finds the ids reading only
// the small columns; the outer one reads the whole rows of those ids
// (PREWHERE: properties only from the granules that hold them).
func (s *Store) Behaviors(ctx context.Context, q analytics.BehaviorQuery) ([]analytics.Behavior, error) {
	if err := q.Check(); err != nil {
		return nil, err
	}
	where, args := "website_id = ?", []any{q.WebsiteID, q.WebsiteID}
	if subs, byPerson := q.Subscribers(); byPerson {
		var terms []string
		if len(subs) > 0 {
			set := make([]any, len(subs))
			for i, id := range subs {
				set[i] = id
			}
			terms, args = append(terms, "subscriber_id IN ?"), append(args, clickhouse.GroupSet{Value: set})
		}
		if q.ExternalID != "" {
			terms, args = append(terms, "external_id = ?"), append(args, q.ExternalID)
		}
		if len(terms) == 0 {
			return []analytics.Behavior{}, nil
		}
		where += " AND (" + strings.Join(terms, " OR ") + ")"
	}
	rows, err := s.conn.Query(ctx, `SELECT id, website_id, subscriber_id, external_id, at, millis, name, source,
			notification_id, value, conversion, properties, seq
		FROM `+s.behaviors+`
		PREWHERE website_id = ? AND id IN (SELECT id FROM (
			SELECT id, max(toUInt64(at) * 1000 + millis) AS t, max(seq) AS q FROM `+s.behaviors+` WHERE `+where+`
			GROUP BY id ORDER BY t DESC, q DESC, id DESC LIMIT ?))
		ORDER BY at DESC, millis DESC, seq DESC, id DESC`, append(args, q.Limit)...)
	if err != nil {
		return nil, fmt.Errorf("reading behaviors: %w", err)
	}
	defer rows.Close()
	out := []analytics.Behavior{}
	seen := map[string]bool{}
	for rows.Next() {
		var (
			b          analytics.Behavior
			millis     uint16
			conversion uint8
			props      string
		)
		if err := rows.Scan(&b.ID, &b.WebsiteID, &b.SubscriberID, &b.ExternalID, &b.At, &millis, &b.Name, &b.Source,
			&b.NotificationID, &b.Value, &conversion, &props, &b.Seq); err != nil {
			return nil, fmt.Errorf("reading behaviors: %w", err)
		}
		if seen[b.ID] {
			continue
		}
		seen[b.ID] = true
		b.At = b.At.UTC().Add(time.Duration(millis) * time.Millisecond)
		b.Conversion = conversion != 0
		b.Properties = []byte(props)
		out = append(out, b)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading behaviors: %w", err)
	}
	return out, nil
}
