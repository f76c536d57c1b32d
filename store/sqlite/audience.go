package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/relaybell/relaybell/store"
)

// defaultAudienceLimit is the page size when a query gives none.
const defaultAudienceLimit = 1000

// recipientCols leaves out what the query fixes (website, shard, and
// unsubscribed_at, which is NULL): the columns cost more to read than the
// rows to find.
const recipientCols = `e.id, e.subscriber_id, e.url, e.p256dh, e.auth, e.device, e.user_agent,
	e.created_at, e.last_seen_at,
	s.external_id, s.country, s.language, s.timezone, s.url, s.tags, s.created_at, s.last_seen_at, s.smart_hour`

// audienceQuery walks one shard of a website in endpoint id order: a range
// scan of endpoints_audience, and one primary-key lookup per subscriber.
const audienceQuery = `SELECT ` + recipientCols + `
	FROM endpoints e JOIN subscribers s ON s.id = e.subscriber_id
	WHERE e.website_id = ?1 AND e.shard = ?2 AND e.id > ?3 AND s.unsubscribed_at IS NULL
	  AND (?5 = '' OR EXISTS (SELECT 1 FROM topic_optins o WHERE o.topic_id = ?5 AND o.subscriber_id = e.subscriber_id))
	ORDER BY e.id LIMIT ?4`

// audienceExternalQuery starts from the listed external ids (the API bounds
// the list) through the (website_id, external_id) index instead of scanning
// the shard; CROSS JOIN fixes that join order.
const audienceExternalQuery = `SELECT ` + recipientCols + `
	FROM (SELECT DISTINCT value AS external_id FROM json_each(?5)) x
	CROSS JOIN subscribers s
	CROSS JOIN endpoints e
	WHERE s.website_id = ?1 AND s.external_id = x.external_id AND s.external_id IS NOT NULL
	  AND s.shard = ?2 AND s.unsubscribed_at IS NULL
	  AND e.subscriber_id = s.id AND e.id > ?3
	  AND (?6 = '' OR EXISTS (SELECT 1 FROM topic_optins o WHERE o.topic_id = ?6 AND o.subscriber_id = e.subscriber_id))
	ORDER BY e.id LIMIT ?4`

// Audience returns one page of the subscribed endpoints of one shard of a
// website, ordered by endpoint id, with their subscribers. A Limit of 0 or
// less means 1000.
func (s *Store) Audience(ctx context.Context, q store.AudienceQuery) ([]store.Recipient, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = defaultAudienceLimit
	}
	var (
		rows *sql.Rows
		err  error
	)
	if len(q.ExternalIDs) > 0 {
		ids, jerr := json.Marshal(q.ExternalIDs)
		if jerr != nil {
			return nil, fmt.Errorf("loading audience: %w", jerr)
		}
		rows, err = s.r.query(ctx, audienceExternalQuery, q.WebsiteID, q.Shard, q.AfterID, limit, string(ids), q.TopicID)
	} else {
		rows, err = s.r.query(ctx, audienceQuery, q.WebsiteID, q.Shard, q.AfterID, limit, q.TopicID)
	}
	if err != nil {
		return nil, fmt.Errorf("loading audience: %w", err)
	}
	// A page of a shard is usually full; a page of named users rarely.
	size := min(limit, 1024)
	if len(q.ExternalIDs) > 0 {
		size = min(limit, 2*len(q.ExternalIDs), 64)
	}
	out, err := scanRecipients(rows, q, size)
	if err != nil {
		return nil, fmt.Errorf("loading audience: %w", err)
	}
	return out, nil
}

// scanRecipients reads the recipientCols rows of an audience query and
// closes rows.
func scanRecipients(rows *sql.Rows, q store.AudienceQuery, size int) ([]store.Recipient, error) {
	defer rows.Close()
	out := make([]store.Recipient, 0, size)
	// One destination list for every row, scanning into plain values:
	// Scanner wrappers would cost an allocation per column and row.
	var (
		r                                      store.Recipient
		created, lastSeen, subCreated, subSeen int64
		external                               sql.NullString
		tags                                   string
		smartHour                              sql.NullInt64
	)
	e, sub := &r.Endpoint, &r.Subscriber
	dest := []any{&e.ID, &e.SubscriberID, &e.URL, &e.P256dh, &e.Auth, &e.Device, &e.UserAgent, &created, &lastSeen,
		&external, &sub.Country, &sub.Language, &sub.Timezone, &sub.URL, &tags, &subCreated, &subSeen, &smartHour}
	for rows.Next() {
		r = store.Recipient{}
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		e.WebsiteID = q.WebsiteID
		e.CreatedAt, e.LastSeenAt = time.UnixMilli(created).UTC(), time.UnixMilli(lastSeen).UTC()
		sub.ID, sub.WebsiteID, sub.ExternalID, sub.Shard = e.SubscriberID, q.WebsiteID, external.String, q.Shard
		sub.CreatedAt, sub.LastSeenAt = time.UnixMilli(subCreated).UTC(), time.UnixMilli(subSeen).UTC()
		if smartHour.Valid {
			h := int(smartHour.Int64)
			sub.SmartHour = &h
		}
		if tags != "" && tags != "{}" {
			if err := json.Unmarshal([]byte(tags), &sub.Tags); err != nil {
				return nil, fmt.Errorf("subscriber %s tags: %w", sub.ID, err)
			}
		}
		out = append(out, r)
	}
	return out, rows.Err()
}
