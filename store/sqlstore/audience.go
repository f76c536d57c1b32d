package sqlstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/relaybell/relaybell/store"
)

// defaultAudienceLimit is the page size when a query gives none.
const defaultAudienceLimit = 1000

// recipientCols leaves out what the query fixes (website, shard, and
// unsubscribed_at, which is NULL): the columns cost more to read than the
// rows to find. NULLs come back as values that scan without a wrapper or
// an allocation: no external id as the empty text, no smart hour as -1,
// and empty tags as NULL. Its endpoint's columns come first
// (recipientEndpointCols), all that a lean walk reads.
const recipientCols = recipientEndpointCols + `,
	coalesce(s.external_id, ''), s.country, s.language, s.timezone, s.url, nullif(s.tags, '{}'),
	s.created_at, s.last_seen_at, coalesce(s.smart_hour, -1)`

// recipientEndpointCols are a recipient's endpoint columns.
const recipientEndpointCols = `e.id, e.subscriber_id, e.url, e.p256dh, e.auth, e.device, e.user_agent,
	e.language, e.created_at, e.last_seen_at`

// audienceFrom is the FROM clause of a walk of a shard, unless the dialect
// has its own (Dialect.AudienceFrom): endpoints e joined to their
// subscribers s.
const audienceFrom = `endpoints e JOIN subscribers s ON s.id = e.subscriber_id`

// audienceTopic keeps the recipients opted into the topic $5, unless $5 is
// empty.
const audienceTopic = `($5 = '' OR EXISTS (SELECT 1 FROM topic_optins o WHERE o.topic_id = $5 AND o.subscriber_id = e.subscriber_id))`

// AudienceSQL is the query of a page of Audience on d, exported for the
// engines' plan tests. Its arguments are the website ($1), the shard ($2),
// the endpoint id to continue after ($3), the limit ($4), the topic id or ""
// ($5) and, with byExternalIDs, the external ids as d.List ($6).
//
// A walk of a shard reads one range of the endpoints' (website_id, shard,
// id) key or index in endpoint id order (keyset paging), and looks each
// endpoint's subscriber up by its key. A page of named users starts from the
// listed external ids through the (website_id, external_id) index instead
// of scanning the shard (the API bounds the list); CROSS JOIN fixes that
// join order on SQLite, and the ids are made distinct so that a repeated one
// does not repeat rows.
func AudienceSQL(d Dialect, byExternalIDs bool) string {
	if byExternalIDs {
		return `SELECT ` + recipientCols + `
	FROM (SELECT DISTINCT value FROM ` + d.Elems("$6") + `) x
	CROSS JOIN subscribers s
	CROSS JOIN endpoints e
	WHERE s.website_id = $1 AND s.external_id = x.value AND s.external_id IS NOT NULL
	  AND s.shard = $2 AND s.unsubscribed_at IS NULL
	  AND e.subscriber_id = s.id AND e.id > $3
	  AND ` + audienceTopic + `
	ORDER BY e.id LIMIT $4`
	}
	from := audienceFrom
	if d.AudienceFrom != "" {
		from = d.AudienceFrom
	}
	return `SELECT ` + recipientCols + `
	FROM ` + from + `
	WHERE e.website_id = $1 AND e.shard = $2 AND e.id > $3 AND s.unsubscribed_at IS NULL
	  AND ` + audienceTopic + `
	ORDER BY e.id LIMIT $4`
}

// LeanAudienceSQL is the query of a page of a lean walk of a shard
// (store.AudienceQuery's Lean), exported for the plan tests: the arguments
// of AudienceSQL without the external ids. It reads one range of the
// endpoints' (website_id, shard, id) key or index and no subscriber: an
// endpoint's subscriber is subscribed, since a subscriber is marked
// unsubscribed only once it has no endpoint left (markUnsubscribedIfEmpty;
// storetest's Audience/Lean checks that both walks select the same
// endpoints).
const LeanAudienceSQL = `SELECT ` + recipientEndpointCols + `
	FROM endpoints e
	WHERE e.website_id = $1 AND e.shard = $2 AND e.id > $3
	  AND ` + audienceTopic + `
	ORDER BY e.id LIMIT $4`

// alertAudienceSQL is the query of a page of a product alert's Audience:
// the arguments of AudienceSQL, with the alert's notification id as $6. It
// starts from the alert's people of the shard, one range of alert_audience's
// key, and looks up each one's subscriber and endpoints.
const alertAudienceSQL = `SELECT ` + recipientCols + `
	FROM alert_audience a
	CROSS JOIN subscribers s
	CROSS JOIN endpoints e
	WHERE a.notification_id = $6 AND a.shard = $2
	  AND s.id = a.subscriber_id AND s.website_id = $1 AND s.shard = $2 AND s.unsubscribed_at IS NULL
	  AND e.subscriber_id = s.id AND e.id > $3
	  AND ` + audienceTopic + `
	ORDER BY e.id LIMIT $4`

// personAudienceSQL is the query of a page of a send to one person (an
// automation's message): the arguments of AudienceSQL, with the
// subscriber id as $6; that person's endpoints, if of the shard.
const personAudienceSQL = `SELECT ` + recipientCols + `
	FROM subscribers s
	CROSS JOIN endpoints e
	WHERE s.id = $6 AND s.website_id = $1 AND s.shard = $2 AND s.unsubscribed_at IS NULL
	  AND e.subscriber_id = s.id AND e.id > $3
	  AND ` + audienceTopic + `
	ORDER BY e.id LIMIT $4`

// EndpointAudienceSQL is the query of a page of a send to one browser (a
// new browser's welcome), exported for the plan tests: the arguments of
// AudienceSQL, with the endpoint id as $6; that endpoint, if of the
// website and the shard, and its subscriber subscribed, found by the
// endpoints' key. Its person's other browsers are never read.
const EndpointAudienceSQL = `SELECT ` + recipientCols + `
	FROM endpoints e
	CROSS JOIN subscribers s
	WHERE e.id = $6 AND e.website_id = $1 AND e.shard = $2 AND e.id > $3
	  AND s.id = e.subscriber_id AND s.unsubscribed_at IS NULL
	  AND ` + audienceTopic + `
	ORDER BY e.id LIMIT $4`

// testDevicesAudienceSQL is the query of a page of a test send's Audience:
// the arguments of AudienceSQL; the website's test devices of the shard,
// and only those endpoints of their people.
const testDevicesAudienceSQL = `SELECT ` + recipientCols + `
	FROM test_devices t
	CROSS JOIN endpoints e
	CROSS JOIN subscribers s
	WHERE t.website_id = $1 AND e.id = t.endpoint_id AND e.website_id = $1 AND e.shard = $2 AND e.id > $3
	  AND s.id = e.subscriber_id AND s.unsubscribed_at IS NULL
	  AND ` + audienceTopic + `
	ORDER BY e.id LIMIT $4`

// Audience returns one page of the subscribed endpoints of one shard of a
// website, ordered by endpoint id, with their subscribers. A Limit of 0 or
// less means 1000.
func (s *Store) Audience(ctx context.Context, q store.AudienceQuery) ([]store.Recipient, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = defaultAudienceLimit
	}
	args := []any{q.WebsiteID, q.Shard, q.AfterID, limit, q.TopicID}
	// A page of a shard is usually full; a page of named users rarely.
	size := min(limit, 1024)
	byExternalIDs := len(q.ExternalIDs) > 0
	query, lean := AudienceSQL(s.d, byExternalIDs), false
	switch {
	case byExternalIDs && q.AlertID != "":
		return nil, errors.New("loading audience: a product alert names no external ids")
	case q.TestDevices && (byExternalIDs || q.AlertID != ""):
		return nil, errors.New("loading audience: a test send names nobody else")
	case q.SubscriberID != "" && (byExternalIDs || q.AlertID != "" || q.TestDevices):
		return nil, errors.New("loading audience: a send to one person names nobody else")
	case q.EndpointID != "" && (byExternalIDs || q.AlertID != "" || q.TestDevices || q.SubscriberID != ""):
		return nil, errors.New("loading audience: a send to one browser names nobody else")
	case q.EndpointID != "":
		args = append(args, q.EndpointID)
		query = EndpointAudienceSQL
		size = 1
	case q.SubscriberID != "":
		args = append(args, q.SubscriberID)
		query = personAudienceSQL
		size = min(limit, 16)
	case q.TestDevices:
		query = testDevicesAudienceSQL
	case byExternalIDs:
		args = append(args, s.d.List(q.ExternalIDs))
		size = min(limit, 2*len(q.ExternalIDs), 64)
	case q.AlertID != "":
		args = append(args, q.AlertID)
		query = alertAudienceSQL
	case q.Lean:
		query, lean = LeanAudienceSQL, true
	}
	rows, err := s.db.Read().Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("loading audience: %w", err)
	}
	out, err := s.scanRecipients(rows, q, size, lean)
	if err != nil {
		return nil, fmt.Errorf("loading audience: %w", err)
	}
	return out, nil
}

// scanRecipients reads the recipientCols rows of an audience query, or
// the recipientEndpointCols rows of LeanAudienceSQL when lean, and closes
// rows.
func (s *Store) scanRecipients(rows Rows, q store.AudienceQuery, size int, lean bool) ([]store.Recipient, error) {
	defer rows.Close()
	out := make([]store.Recipient, 0, size)
	// One destination list for every row, of destinations that scan
	// without an allocation (Dialect.ScanTime).
	var (
		r         store.Recipient
		tags      []byte
		smartHour int64
	)
	scanTime := func(t *time.Time) any { return timeDest{t} }
	if s.d.ScanTime != nil {
		scanTime = s.d.ScanTime
	}
	e, sub := &r.Endpoint, &r.Subscriber
	dest := []any{&e.ID, &e.SubscriberID, &e.URL, &e.P256dh, &e.Auth, &e.Device, &e.UserAgent, &e.Language,
		scanTime(&e.CreatedAt), scanTime(&e.LastSeenAt)}
	smartHour = -1 // a lean row has none
	if !lean {
		dest = append(dest, &sub.ExternalID, &sub.Country, &sub.Language, &sub.Timezone, &sub.URL, &tags,
			scanTime(&sub.CreatedAt), scanTime(&sub.LastSeenAt), &smartHour)
	}
	for rows.Next() {
		r = store.Recipient{}
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		e.WebsiteID = q.WebsiteID
		sub.ID, sub.WebsiteID, sub.Shard = e.SubscriberID, q.WebsiteID, q.Shard
		if smartHour >= 0 {
			h := int(smartHour)
			sub.SmartHour = &h
		}
		if len(tags) > 0 {
			if err := json.Unmarshal(tags, &sub.Tags); err != nil {
				return nil, fmt.Errorf("subscriber %s tags: %w", sub.ID, err)
			}
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// EndpointShard returns the shard the website's endpoint is in now
// (store.Store).
func (s *Store) EndpointShard(ctx context.Context, websiteID, endpointID string) (int, error) {
	var shard int
	err := s.db.Read().QueryRow(ctx, `SELECT shard FROM endpoints WHERE id = $1 AND website_id = $2`,
		endpointID, websiteID).Scan(&shard)
	if err != nil {
		return 0, fmt.Errorf("finding the shard of endpoint %s: %w", endpointID, s.mapErr(err))
	}
	return shard, nil
}

// externalIDShardsSQL is the query of ExternalIDShards: the website ($1)
// and the external ids as d.List ($2). Like AudienceSQL's page of named
// users, it starts from the distinct listed ids and finds each one's
// subscriber through the (website_id, external_id) index.
func externalIDShardsSQL(d Dialect) string {
	return `SELECT DISTINCT s.shard
	FROM (SELECT DISTINCT value FROM ` + d.Elems("$2") + `) x
	CROSS JOIN subscribers s
	WHERE s.website_id = $1 AND s.external_id = x.value AND s.external_id IS NOT NULL
	ORDER BY s.shard`
}

// ExternalIDShards returns the shards of the website's subscribers named
// by externalIDs, in one query (store.Store).
func (s *Store) ExternalIDShards(ctx context.Context, websiteID string, externalIDs []string) ([]int, error) {
	if len(externalIDs) == 0 {
		return nil, nil
	}
	rows, err := s.db.Read().Query(ctx, externalIDShardsSQL(s.d), websiteID, s.d.List(externalIDs))
	shards, err := CollectRows(rows, err, func(n *int) []any { return []any{n} })
	if err != nil {
		return nil, fmt.Errorf("finding the shards of external ids: %w", err)
	}
	return shards, nil
}
