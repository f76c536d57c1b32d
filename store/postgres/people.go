package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/relaybell/relaybell/store"
	"github.com/relaybell/relaybell/store/peoplesql"
)

const segmentCols = `id, website_id, name, filters, created_at`

func segmentDest(sg *store.Segment) []any {
	return []any{&sg.ID, &sg.WebsiteID, &sg.Name, &sg.Filters, &sg.CreatedAt}
}

// ListSegments returns the website's segments, newest first.
func (s *Store) ListSegments(ctx context.Context, websiteID string) ([]store.Segment, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+segmentCols+` FROM segments WHERE website_id = $1
		ORDER BY created_at DESC, id DESC`, websiteID)
	if err != nil {
		return nil, fmt.Errorf("listing segments: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Segment, error) {
		var sg store.Segment
		return sg, row.Scan(segmentDest(&sg)...)
	})
	if err != nil {
		return nil, fmt.Errorf("listing segments: %w", err)
	}
	return nonNil(out), nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// Segment returns one of the website's segments.
func (s *Store) Segment(ctx context.Context, websiteID, id string) (store.Segment, error) {
	var sg store.Segment
	err := s.pool.QueryRow(ctx, `SELECT `+segmentCols+` FROM segments WHERE id = $1 AND website_id = $2`,
		id, websiteID).Scan(segmentDest(&sg)...)
	if err != nil {
		return store.Segment{}, fmt.Errorf("loading segment: %w", mapErr(err))
	}
	return sg, nil
}

// CreateSegment stores a new segment; a duplicate id is store.ErrConflict.
func (s *Store) CreateSegment(ctx context.Context, sg store.Segment) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO segments (`+segmentCols+`) VALUES ($1, $2, $3, $4, $5)`,
		sg.ID, sg.WebsiteID, sg.Name, jsonOr(sg.Filters), now(sg.CreatedAt))
	if err != nil {
		return fmt.Errorf("creating segment: %w", mapErr(err))
	}
	return nil
}

func jsonOr(b []byte) string {
	if len(b) == 0 {
		return "{}"
	}
	return string(b)
}

// UpdateSegment replaces a segment's name and filters.
func (s *Store) UpdateSegment(ctx context.Context, sg store.Segment) error {
	err := affected(s.pool.Exec(ctx, `UPDATE segments SET name = $1, filters = $2 WHERE id = $3 AND website_id = $4`,
		sg.Name, jsonOr(sg.Filters), sg.ID, sg.WebsiteID))
	if err != nil {
		return fmt.Errorf("updating segment: %w", err)
	}
	return nil
}

// DeleteSegment removes one of the website's segments, if it exists.
func (s *Store) DeleteSegment(ctx context.Context, websiteID, id string) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM segments WHERE id = $1 AND website_id = $2`, id, websiteID); err != nil {
		return fmt.Errorf("deleting segment: %w", err)
	}
	return nil
}

// SegmentUses reports pending sends and the last send of each segment that
// a send ever named.
func (s *Store) SegmentUses(ctx context.Context, websiteID string) (map[string]store.SegmentUse, error) {
	rows, err := s.pool.Query(ctx, `SELECT ns.segment_id,
			count(*) FILTER (WHERE n.status IN ('scheduled', 'queued')), max(n.started_at)
		FROM notifications n JOIN notification_segments ns ON ns.notification_id = n.id
		WHERE n.website_id = $1 GROUP BY ns.segment_id`, websiteID)
	if err != nil {
		return nil, fmt.Errorf("reading segment uses: %w", err)
	}
	defer rows.Close()
	out := map[string]store.SegmentUse{}
	for rows.Next() {
		var (
			id string
			u  store.SegmentUse
		)
		if err := rows.Scan(&id, &u.Pending, &u.LastSentAt); err != nil {
			return nil, fmt.Errorf("reading segment uses: %w", err)
		}
		out[id] = u
	}
	return out, rows.Err()
}

// topicQuery selects topics with their opted-in counts.
const topicQuery = `SELECT t.id, t.website_id, t.name, t.slug, t.created_at,
	(SELECT count(*) FROM topic_optins o WHERE o.topic_id = t.id)
	FROM topics t`

func topicDest(t *store.Topic) []any {
	return []any{&t.ID, &t.WebsiteID, &t.Name, &t.Slug, &t.CreatedAt, &t.Subscribers}
}

// ListTopics returns the website's topics, oldest first.
func (s *Store) ListTopics(ctx context.Context, websiteID string) ([]store.Topic, error) {
	rows, err := s.pool.Query(ctx, topicQuery+` WHERE t.website_id = $1 ORDER BY t.created_at, t.id`, websiteID)
	if err != nil {
		return nil, fmt.Errorf("listing topics: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Topic, error) {
		var t store.Topic
		return t, row.Scan(topicDest(&t)...)
	})
	if err != nil {
		return nil, fmt.Errorf("listing topics: %w", err)
	}
	return nonNil(out), nil
}

// Topic finds one of the website's topics by id or by slug in any case.
func (s *Store) Topic(ctx context.Context, websiteID, idOrSlug string) (store.Topic, error) {
	var t store.Topic
	err := s.pool.QueryRow(ctx, topicQuery+` WHERE t.website_id = $1 AND (lower(t.slug) = lower($2) OR lower(t.id) = lower($2))`,
		websiteID, idOrSlug).Scan(topicDest(&t)...)
	if err != nil {
		return store.Topic{}, fmt.Errorf("loading topic: %w", mapErr(err))
	}
	return t, nil
}

// SaveTopic creates the topic, or renames the website's topic with its slug.
func (s *Store) SaveTopic(ctx context.Context, t store.Topic) (store.Topic, bool, error) {
	var created bool
	err := s.inTx(ctx, true, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE topics SET name = $1 WHERE website_id = $2 AND lower(slug) = lower($3)`,
			t.Name, t.WebsiteID, t.Slug)
		if err != nil || tag.RowsAffected() > 0 {
			created = false
			return err
		}
		created = true
		_, err = tx.Exec(ctx, `INSERT INTO topics (id, website_id, name, slug, created_at) VALUES ($1, $2, $3, $4, $5)`,
			t.ID, t.WebsiteID, t.Name, t.Slug, now(t.CreatedAt))
		return err
	})
	if err != nil {
		return store.Topic{}, false, fmt.Errorf("saving topic: %w", mapErr(err))
	}
	saved, err := s.Topic(ctx, t.WebsiteID, t.Slug)
	return saved, created, err
}

// RenameTopic changes a topic's name (never its slug).
func (s *Store) RenameTopic(ctx context.Context, websiteID, id, name string) (store.Topic, error) {
	err := affected(s.pool.Exec(ctx, `UPDATE topics SET name = $1 WHERE id = $2 AND website_id = $3`, name, id, websiteID))
	if err != nil {
		return store.Topic{}, fmt.Errorf("renaming topic: %w", err)
	}
	return s.Topic(ctx, websiteID, id)
}

// DeleteTopic removes a topic and its opt-ins, if it exists.
func (s *Store) DeleteTopic(ctx context.Context, websiteID, id string) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM topics WHERE id = $1 AND website_id = $2`, id, websiteID); err != nil {
		return fmt.Errorf("deleting topic: %w", err)
	}
	return nil
}

// personCols read a subscriber with its devices (most recently seen first)
// and topic ids.
const personCols = `s.id, s.website_id, coalesce(s.external_id, ''), s.country, s.language, s.timezone, s.url,
	nullif(s.tags, '{}'::jsonb), s.shard, s.created_at, s.last_seen_at, s.unsubscribed_at, s.consent_at,
	array(SELECT e.device FROM endpoints e WHERE e.subscriber_id = s.id ORDER BY e.last_seen_at DESC, e.id),
	array(SELECT o.topic_id FROM topic_optins o WHERE o.subscriber_id = s.id ORDER BY o.topic_id)`

func scanPerson(row pgx.Row, p *store.Person) error {
	var tags []byte
	err := row.Scan(&p.ID, &p.WebsiteID, &p.ExternalID, &p.Country, &p.Language, &p.Timezone, &p.URL,
		&tags, &p.Shard, &p.CreatedAt, &p.LastSeenAt, &p.UnsubscribedAt, &p.ConsentAt, &p.Devices, &p.Topics)
	if err != nil {
		return err
	}
	if len(p.Devices) == 0 {
		p.Devices = nil
	}
	if len(p.Topics) == 0 {
		p.Topics = nil
	}
	if len(tags) > 0 {
		if err := json.Unmarshal(tags, &p.Tags); err != nil {
			return fmt.Errorf("subscriber %s tags: %w", p.ID, err)
		}
	}
	return nil
}

// peopleSQL is how PostgreSQL writes a people filter.
var peopleSQL = peoplesql.Dialect{
	Placeholder: func(n int) string { return "$" + strconv.Itoa(n) },
	Labels:      `nullif(s.tags, '{}'::jsonb)`,
	Everyone:    `subscribers s`,
	Time:        func(t time.Time) any { return t },
	// LIKE with the argument's wildcards escaped, which the trigram index
	// of migration 0010 serves.
	ContainsFold: func(col, arg string) string {
		return "lower(" + col + `) LIKE ('%' || replace(replace(replace(lower(` + arg + `::text), '\', '\\'), '%', '\%'), '_', '\_') || '%')`
	},
}

// People returns one page of the website's people that pass the filter,
// newest first.
func (s *Store) People(ctx context.Context, q store.PeopleQuery) ([]store.Person, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = defaultAudienceLimit
	}
	before, beforeID := time.UnixMilli(math.MaxInt64/1000).UTC(), ""
	if q.After != nil {
		before, beforeID = q.After.CreatedAt, q.After.ID
	}
	where, args := peoplesql.And(peopleSQL, q.WebsiteID, q.Filter, []any{q.WebsiteID, before, beforeID})
	rows, err := s.pool.Query(ctx, `SELECT `+personCols+` FROM subscribers s
		WHERE s.website_id = $1 AND (s.created_at, s.id) < ($2, $3)`+where+`
		ORDER BY s.created_at DESC, s.id DESC LIMIT `+strconv.Itoa(limit), args...)
	if err != nil {
		return nil, fmt.Errorf("listing people: %w", err)
	}
	defer rows.Close()
	out := make([]store.Person, 0, min(limit, 1024))
	for rows.Next() {
		var p store.Person
		if err := scanPerson(rows, &p); err != nil {
			return nil, fmt.Errorf("listing people: %w", err)
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// CountPeople counts the website's people that pass the filter.
func (s *Store) CountPeople(ctx context.Context, websiteID string, f store.PeopleFilter) (int64, error) {
	where, args := peoplesql.CountAnd(peopleSQL, websiteID, f, []any{websiteID})
	var n int64
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM subscribers s WHERE s.website_id = $1`+where, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("counting people: %w", err)
	}
	return n, nil
}

// Reachable calls fn for each person of q with a browser, with the number
// of their browsers: a shard is one read of its range of
// subscribers_website_shard, a website one read of what the narrowing
// conditions' indexes give; the browsers column, which triggers keep, saves
// looking up each person's endpoints.
func (s *Store) Reachable(ctx context.Context, q store.ReachQuery, fn func(sub *store.Subscriber, browsers int)) error {
	query, args := peoplesql.Reach(peopleSQL, q)
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("reading reachable people: %w", err)
	}
	defer rows.Close()
	return peoplesql.ScanReach(rows, q, fn)
}

// Person finds one of the website's people by subscriber id or external id.
func (s *Store) Person(ctx context.Context, websiteID, key string) (store.Person, error) {
	var p store.Person
	err := scanPerson(s.pool.QueryRow(ctx, `SELECT `+personCols+` FROM subscribers s
		WHERE s.website_id = $1 AND (s.id = $2 OR s.external_id = $2)
		ORDER BY s.id = $2 DESC LIMIT 1`, websiteID, key), &p)
	if err != nil {
		return store.Person{}, fmt.Errorf("loading person: %w", mapErr(err))
	}
	return p, nil
}

// PersonEndpoints lists a subscriber's endpoints, most recently seen first.
func (s *Store) PersonEndpoints(ctx context.Context, websiteID, subscriberID string) ([]store.Endpoint, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+endpointCols+` FROM endpoints e
		WHERE e.subscriber_id = $1 AND e.website_id = $2 ORDER BY e.last_seen_at DESC, e.id`, subscriberID, websiteID)
	if err != nil {
		return nil, fmt.Errorf("listing endpoints: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Endpoint, error) {
		var e store.Endpoint
		return e, row.Scan(endpointDest(&e)...)
	})
	if err != nil {
		return nil, fmt.Errorf("listing endpoints: %w", err)
	}
	return nonNil(out), nil
}

// ImportPeople creates or enriches people by external id, in one
// transaction.
func (s *Store) ImportPeople(ctx context.Context, websiteID string, rows []store.ImportRow, at time.Time) (int, error) {
	when := now(at)
	var n int
	err := s.inTx(ctx, true, func(tx pgx.Tx) error {
		n = 0
		for _, r := range rows {
			if r.ExternalID == "" {
				continue
			}
			var patch []byte // a row without labels: jsonOr's {} changes none
			if len(r.Tags) > 0 {
				var err error
				if patch, err = json.Marshal(r.Tags); err != nil {
					return err
				}
			}
			id := uuid.NewString()
			if err := tx.QueryRow(ctx, `INSERT INTO subscribers (id, website_id, external_id, tags, shard, created_at, last_seen_at)
				VALUES ($1, $2, $3, $4, $5, $6, $6)
				ON CONFLICT (website_id, external_id) WHERE external_id IS NOT NULL
				DO UPDATE SET tags = subscribers.tags || excluded.tags
				RETURNING id`, id, websiteID, r.ExternalID, jsonOr(patch), store.ShardOf(id), when).Scan(&id); err != nil {
				return err
			}
			if len(r.Topics) > 0 {
				if _, err := tx.Exec(ctx, `INSERT INTO topic_optins (topic_id, subscriber_id, created_at)
					SELECT id, $1, $2 FROM topics WHERE website_id = $3 AND lower(slug) = ANY ($4::text[])
					ON CONFLICT DO NOTHING`, id, when, websiteID, lower(r.Topics)); err != nil {
					return err
				}
			}
			n++
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("importing people: %w", mapErr(err))
	}
	return n, nil
}

// TagPeople sets and removes labels of the listed people of the website.
func (s *Store) TagPeople(ctx context.Context, websiteID string, ids []string, set map[string]string, remove []string) (int, error) {
	var n int
	err := s.inTx(ctx, false, func(tx pgx.Tx) error {
		n = 0
		rows, err := tx.Query(ctx, `SELECT id, tags FROM subscribers WHERE website_id = $1 AND id = ANY ($2::text[])
			ORDER BY id FOR UPDATE`, websiteID, ids)
		if err != nil {
			return err
		}
		type change struct {
			id   string
			tags []byte
		}
		var changes []change
		for rows.Next() {
			var (
				c   change
				raw []byte
			)
			if err := rows.Scan(&c.id, &raw); err != nil {
				rows.Close()
				return err
			}
			if c.tags, err = store.EditTags(raw, set, remove); err != nil {
				rows.Close()
				return fmt.Errorf("subscriber %s: %w", c.id, err)
			}
			changes = append(changes, c)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, c := range changes {
			if _, err := tx.Exec(ctx, `UPDATE subscribers SET tags = $2 WHERE id = $1`, c.id, string(c.tags)); err != nil {
				return err
			}
		}
		n = len(changes)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("tagging people: %w", err)
	}
	return n, nil
}

// ErasePeople deletes the listed people of the website and everything
// recorded about their endpoints.
func (s *Store) ErasePeople(ctx context.Context, websiteID string, ids []string) ([]store.Subscriber, error) {
	var erased []store.Subscriber
	err := s.inTx(ctx, false, func(tx pgx.Tx) error {
		erased = nil
		rows, err := tx.Query(ctx, `SELECT id, coalesce(external_id, '') FROM subscribers
			WHERE website_id = $1 AND id = ANY ($2::text[]) ORDER BY id FOR UPDATE`, websiteID, ids)
		if err != nil {
			return err
		}
		erased, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Subscriber, error) {
			sub := store.Subscriber{WebsiteID: websiteID}
			return sub, row.Scan(&sub.ID, &sub.ExternalID)
		})
		if err != nil || len(erased) == 0 {
			return err
		}
		found := make([]string, len(erased))
		for i, sub := range erased {
			found[i] = sub.ID
		}
		// Results and interactions are keyed by notification first: one
		// key lookup per (notification of the website, endpoint) pair
		// rather than a scan of the biggest tables.
		const endpointsOf = `SELECT e.id FROM endpoints e WHERE e.subscriber_id = ANY ($2::text[])`
		if _, err := tx.Exec(ctx, `DELETE FROM deliveries WHERE notification_seq IN
				(SELECT seq FROM notifications WHERE website_id = $1)
			AND endpoint_id IN (`+endpointsOf+`)`, websiteID, found); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM interactions WHERE notification_id IN
				(SELECT id FROM notifications WHERE website_id = $1)
			AND endpoint_id IN (`+endpointsOf+`)`, websiteID, found); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM subscribers WHERE id = ANY ($1::text[])`, found)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("erasing people: %w", err)
	}
	return erased, nil
}

// Facets counts the website's people by attribute.
func (s *Store) Facets(ctx context.Context, websiteID string, limit int) (store.Facets, error) {
	var f store.Facets
	var err error
	values := func(query string) []store.FacetValue {
		if err != nil {
			return nil
		}
		var rows pgx.Rows
		if rows, err = s.pool.Query(ctx, query, websiteID, limit); err != nil {
			return nil
		}
		var out []store.FacetValue
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.FacetValue, error) {
			var v store.FacetValue
			return v, row.Scan(&v.Value, &v.Count)
		})
		return nonNil(out)
	}
	f.Countries = values(`SELECT country, count(*) FROM subscribers WHERE website_id = $1 AND country <> ''
		GROUP BY country ORDER BY 2 DESC, country COLLATE "C" LIMIT $2`)
	f.Languages = values(`SELECT language, count(*) FROM subscribers WHERE website_id = $1 AND language <> ''
		GROUP BY language ORDER BY 2 DESC, language COLLATE "C" LIMIT $2`)
	f.Devices = values(`SELECT device, count(DISTINCT subscriber_id) FROM endpoints WHERE website_id = $1 AND device <> ''
		GROUP BY device ORDER BY 2 DESC, device COLLATE "C" LIMIT $2`)
	keys := values(`SELECT key, count(*) FROM subscriber_labels WHERE website_id = $1 AND left(key, 3) <> 'rb_'
		GROUP BY key ORDER BY 2 DESC, key COLLATE "C" LIMIT $2`)
	if err != nil {
		return store.Facets{}, fmt.Errorf("counting facets: %w", err)
	}
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = k.Value
	}
	rows, err := s.pool.Query(ctx, `SELECT key, value, n FROM (
			SELECT key, value, count(*) AS n,
				row_number() OVER (PARTITION BY key ORDER BY count(*) DESC, value COLLATE "C") AS rank
			FROM subscriber_labels WHERE website_id = $1 AND key = ANY ($2::text[]) AND value <> ''
			GROUP BY key, value) v
		WHERE rank <= $3 ORDER BY key COLLATE "C", n DESC, value COLLATE "C"`, websiteID, names, limit)
	if err != nil {
		return store.Facets{}, fmt.Errorf("counting facets: %w", err)
	}
	vals, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.TagValueCount, error) {
		var v store.TagValueCount
		return v, row.Scan(&v.Key, &v.Value, &v.Count)
	})
	if err != nil {
		return store.Facets{}, fmt.Errorf("counting facets: %w", err)
	}
	f.Tags = store.TagFacets(keys, vals, limit)
	rows, err = s.pool.Query(ctx, `SELECT t.id, t.name, t.slug, count(o.subscriber_id) FROM topics t
		LEFT JOIN topic_optins o ON o.topic_id = t.id WHERE t.website_id = $1
		GROUP BY t.id ORDER BY 4 DESC, t.created_at LIMIT $2`, websiteID, limit)
	if err != nil {
		return store.Facets{}, fmt.Errorf("counting facets: %w", err)
	}
	topics, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.TopicFacet, error) {
		var t store.TopicFacet
		return t, row.Scan(&t.ID, &t.Name, &t.Slug, &t.Count)
	})
	if err != nil {
		return store.Facets{}, fmt.Errorf("counting facets: %w", err)
	}
	f.Topics = nonNil(topics)
	return f, nil
}
