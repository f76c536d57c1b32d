package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/store"
	"github.com/relaybell/relaybell/store/peoplesql"
)

const segmentCols = `id, website_id, name, filters, created_at`

func segmentDest(sg *store.Segment) []any {
	return []any{&sg.ID, &sg.WebsiteID, &sg.Name, (*rawText)(&sg.Filters), msTime{&sg.CreatedAt}}
}

// rawText scans TEXT into a byte slice.
type rawText []byte

func (r *rawText) Scan(v any) error {
	switch x := v.(type) {
	case string:
		*r = []byte(x)
	case []byte:
		*r = append((*r)[:0], x...)
	default:
		return fmt.Errorf("scanning text: unexpected %T", v)
	}
	return nil
}

// ListSegments returns the website's segments, newest first.
func (s *Store) ListSegments(ctx context.Context, websiteID string) ([]store.Segment, error) {
	rows, err := s.r.query(ctx, `SELECT `+segmentCols+` FROM segments WHERE website_id = ?
		ORDER BY created_at DESC, id DESC`, websiteID)
	if err != nil {
		return nil, fmt.Errorf("listing segments: %w", err)
	}
	defer rows.Close()
	out := []store.Segment{}
	for rows.Next() {
		var sg store.Segment
		if err := rows.Scan(segmentDest(&sg)...); err != nil {
			return nil, fmt.Errorf("listing segments: %w", err)
		}
		out = append(out, sg)
	}
	return out, rows.Err()
}

// Segment returns one of the website's segments.
func (s *Store) Segment(ctx context.Context, websiteID, id string) (store.Segment, error) {
	var sg store.Segment
	err := s.r.queryRow(ctx, `SELECT `+segmentCols+` FROM segments WHERE id = ? AND website_id = ?`,
		id, websiteID).Scan(segmentDest(&sg)...)
	if err != nil {
		return store.Segment{}, fmt.Errorf("loading segment: %w", notFound(err))
	}
	return sg, nil
}

// CreateSegment stores a new segment; a duplicate id is store.ErrConflict.
func (s *Store) CreateSegment(ctx context.Context, sg store.Segment) error {
	_, err := s.w.exec(ctx, `INSERT INTO segments (`+segmentCols+`) VALUES (?, ?, ?, ?, ?)`,
		sg.ID, sg.WebsiteID, sg.Name, string(jsonOr(sg.Filters, "{}")), ms(now(sg.CreatedAt)))
	if err != nil {
		return fmt.Errorf("creating segment: %w", mapErr(err))
	}
	return nil
}

func jsonOr(b []byte, empty string) []byte {
	if len(b) == 0 {
		return []byte(empty)
	}
	return b
}

// UpdateSegment replaces a segment's name and filters.
func (s *Store) UpdateSegment(ctx context.Context, sg store.Segment) error {
	res, err := s.w.exec(ctx, `UPDATE segments SET name = ?, filters = ? WHERE id = ? AND website_id = ?`,
		sg.Name, string(jsonOr(sg.Filters, "{}")), sg.ID, sg.WebsiteID)
	if err == nil {
		err = affected(res)
	}
	if err != nil {
		return fmt.Errorf("updating segment: %w", err)
	}
	return nil
}

// DeleteSegment removes one of the website's segments, if it exists.
func (s *Store) DeleteSegment(ctx context.Context, websiteID, id string) error {
	if _, err := s.w.exec(ctx, `DELETE FROM segments WHERE id = ? AND website_id = ?`, id, websiteID); err != nil {
		return fmt.Errorf("deleting segment: %w", err)
	}
	return nil
}

// SegmentUses reports pending sends and the last send of each segment that
// a send ever named.
func (s *Store) SegmentUses(ctx context.Context, websiteID string) (map[string]store.SegmentUse, error) {
	rows, err := s.r.query(ctx, `SELECT ns.segment_id,
			sum(n.status IN ('scheduled', 'queued')), max(n.started_at)
		FROM notifications n JOIN notification_segments ns ON ns.notification_id = n.id
		WHERE n.website_id = ? GROUP BY ns.segment_id`, websiteID)
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
		if err := rows.Scan(&id, &u.Pending, msTimePtr{&u.LastSentAt}); err != nil {
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
	return []any{&t.ID, &t.WebsiteID, &t.Name, &t.Slug, msTime{&t.CreatedAt}, &t.Subscribers}
}

// ListTopics returns the website's topics, oldest first.
func (s *Store) ListTopics(ctx context.Context, websiteID string) ([]store.Topic, error) {
	rows, err := s.r.query(ctx, topicQuery+` WHERE t.website_id = ? ORDER BY t.created_at, t.id`, websiteID)
	if err != nil {
		return nil, fmt.Errorf("listing topics: %w", err)
	}
	defer rows.Close()
	out := []store.Topic{}
	for rows.Next() {
		var t store.Topic
		if err := rows.Scan(topicDest(&t)...); err != nil {
			return nil, fmt.Errorf("listing topics: %w", err)
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// Topic finds one of the website's topics by id or by slug in any case.
func (s *Store) Topic(ctx context.Context, websiteID, idOrSlug string) (store.Topic, error) {
	var t store.Topic
	err := s.r.queryRow(ctx, topicQuery+` WHERE t.website_id = ?1 AND (t.slug = ?2 OR t.id = ?2 COLLATE NOCASE)`,
		websiteID, idOrSlug).Scan(topicDest(&t)...)
	if err != nil {
		return store.Topic{}, fmt.Errorf("loading topic: %w", notFound(err))
	}
	return t, nil
}

// SaveTopic creates the topic, or renames the website's topic with its slug.
func (s *Store) SaveTopic(ctx context.Context, t store.Topic) (store.Topic, bool, error) {
	var created bool
	err := s.write(ctx, func(tx wtx) error {
		res, err := tx.exec(`UPDATE topics SET name = ? WHERE website_id = ? AND slug = ?`, t.Name, t.WebsiteID, t.Slug)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n > 0 {
			return err
		}
		created = true
		_, err = tx.exec(`INSERT INTO topics (id, website_id, name, slug, created_at) VALUES (?, ?, ?, ?, ?)`,
			t.ID, t.WebsiteID, t.Name, t.Slug, ms(now(t.CreatedAt)))
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
	res, err := s.w.exec(ctx, `UPDATE topics SET name = ? WHERE id = ? AND website_id = ?`, name, id, websiteID)
	if err == nil {
		err = affected(res)
	}
	if err != nil {
		return store.Topic{}, fmt.Errorf("renaming topic: %w", err)
	}
	return s.Topic(ctx, websiteID, id)
}

// DeleteTopic removes a topic and its opt-ins, if it exists.
func (s *Store) DeleteTopic(ctx context.Context, websiteID, id string) error {
	if _, err := s.w.exec(ctx, `DELETE FROM topics WHERE id = ? AND website_id = ?`, id, websiteID); err != nil {
		return fmt.Errorf("deleting topic: %w", err)
	}
	return nil
}

// personCols read a subscriber with its devices (most recently seen first)
// and topic ids.
const personCols = `s.id, s.website_id, s.external_id, s.country, s.language, s.timezone, s.url, s.tags, s.shard,
	s.created_at, s.last_seen_at, s.unsubscribed_at, s.consent_at,
	(SELECT group_concat(device, ',') FROM
		(SELECT device FROM endpoints e WHERE e.subscriber_id = s.id ORDER BY e.last_seen_at DESC, e.id)),
	(SELECT group_concat(topic_id, ',') FROM topic_optins o WHERE o.subscriber_id = s.id)`

func scanPerson(rows interface{ Scan(...any) error }, p *store.Person) error {
	var tags, devices, topics sql.NullString
	err := rows.Scan(&p.ID, &p.WebsiteID, optString{&p.ExternalID}, &p.Country, &p.Language, &p.Timezone, &p.URL,
		&tags, &p.Shard, msTime{&p.CreatedAt}, msTime{&p.LastSeenAt}, msTimePtr{&p.UnsubscribedAt},
		msTimePtr{&p.ConsentAt}, &devices, &topics)
	if err != nil {
		return err
	}
	if tags.String != "" && tags.String != "{}" {
		if err := json.Unmarshal([]byte(tags.String), &p.Tags); err != nil {
			return fmt.Errorf("subscriber %s tags: %w", p.ID, err)
		}
	}
	p.Devices, p.Topics = splitList(devices.String), splitList(topics.String)
	slices.Sort(p.Topics) // in id order, as the PostgreSQL store gives them
	return nil
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// peopleSQL is how SQLite writes a people filter.
var peopleSQL = peoplesql.Dialect{
	Placeholder: func(n int) string { return "?" + strconv.Itoa(n) },
	Labels:      `nullif(s.tags, '{}')`,
	// The table in id order reads each page once; the shard or website
	// indexes would look every row up, 64 times per page over the shards.
	Everyone:     `subscribers s NOT INDEXED`,
	Time:         func(t time.Time) any { return ms(t) },
	ContainsFold: func(col, arg string) string { return "instr(lower(" + col + "), lower(" + arg + ")) > 0" },
}

// People returns one page of the website's people that pass the filter,
// newest first.
func (s *Store) People(ctx context.Context, q store.PeopleQuery) ([]store.Person, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = defaultAudienceLimit
	}
	before, beforeID := int64(math.MaxInt64), ""
	if q.After != nil {
		before, beforeID = ms(q.After.CreatedAt), q.After.ID
	}
	where, args := peoplesql.And(peopleSQL, q.WebsiteID, q.Filter, []any{q.WebsiteID, before, beforeID})
	rows, err := s.r.query(ctx, `SELECT `+personCols+` FROM subscribers s
		WHERE s.website_id = ?1 AND (s.created_at, s.id) < (?2, ?3)`+where+`
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
	if err := s.r.queryRow(ctx, `SELECT count(*) FROM subscribers s WHERE s.website_id = ?1`+where, args...).Scan(&n); err != nil {
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
	rows, err := s.r.query(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("reading reachable people: %w", err)
	}
	defer rows.Close()
	return peoplesql.ScanReach(rows, q, fn)
}

// Person finds one of the website's people by subscriber id or external id.
func (s *Store) Person(ctx context.Context, websiteID, key string) (store.Person, error) {
	var p store.Person
	err := scanPerson(s.r.queryRow(ctx, `SELECT `+personCols+` FROM subscribers s
		WHERE s.website_id = ?1 AND (s.id = ?2 OR s.external_id = ?2)
		ORDER BY s.id = ?2 DESC LIMIT 1`, websiteID, key), &p)
	if err != nil {
		return store.Person{}, fmt.Errorf("loading person: %w", notFound(err))
	}
	return p, nil
}

// PersonEndpoints lists a subscriber's endpoints, most recently seen first.
func (s *Store) PersonEndpoints(ctx context.Context, websiteID, subscriberID string) ([]store.Endpoint, error) {
	rows, err := s.r.query(ctx, `SELECT `+endpointCols+` FROM endpoints e
		WHERE e.subscriber_id = ? AND e.website_id = ? ORDER BY e.last_seen_at DESC, e.id`, subscriberID, websiteID)
	if err != nil {
		return nil, fmt.Errorf("listing endpoints: %w", err)
	}
	defer rows.Close()
	out := []store.Endpoint{}
	for rows.Next() {
		var e store.Endpoint
		if err := rows.Scan(endpointDest(&e)...); err != nil {
			return nil, fmt.Errorf("listing endpoints: %w", err)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// ImportPeople creates or enriches people by external id, in one
// transaction.
func (s *Store) ImportPeople(ctx context.Context, websiteID string, rows []store.ImportRow, at time.Time) (int, error) {
	when := ms(now(at))
	var n int
	err := s.write(ctx, func(tx wtx) error {
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
			if err := tx.queryRow(`INSERT INTO subscribers (id, website_id, external_id, tags, shard, created_at, last_seen_at)
				VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6)
				ON CONFLICT (website_id, external_id) WHERE external_id IS NOT NULL
				DO UPDATE SET tags = json_patch(tags, excluded.tags)
				RETURNING id`, id, websiteID, r.ExternalID, string(jsonOr(patch, "{}")), store.ShardOf(id), when).Scan(&id); err != nil {
				return err
			}
			for _, slug := range r.Topics {
				if _, err := tx.exec(`INSERT OR IGNORE INTO topic_optins (topic_id, subscriber_id, created_at)
					SELECT id, ?, ? FROM topics WHERE website_id = ? AND slug = ?`, id, when, websiteID, slug); err != nil {
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
	err := s.write(ctx, func(tx wtx) error {
		n = 0
		for _, id := range ids {
			var raw string
			err := tx.queryRow(`SELECT tags FROM subscribers WHERE id = ? AND website_id = ?`, id, websiteID).Scan(&raw)
			if err == sql.ErrNoRows {
				continue
			}
			if err != nil {
				return err
			}
			tags, err := store.EditTags([]byte(raw), set, remove)
			if err != nil {
				return fmt.Errorf("subscriber %s: %w", id, err)
			}
			if _, err := tx.exec(`UPDATE subscribers SET tags = ? WHERE id = ?`, string(tags), id); err != nil {
				return err
			}
			n++
		}
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
	list, err := json.Marshal(ids)
	if err != nil {
		return nil, err
	}
	var erased []store.Subscriber
	err = s.write(ctx, func(tx wtx) error {
		erased = nil
		rows, err := tx.query(`SELECT id, external_id FROM subscribers
			WHERE website_id = ? AND id IN (SELECT value FROM json_each(?))`, websiteID, string(list))
		if err != nil {
			return err
		}
		for rows.Next() {
			sub := store.Subscriber{WebsiteID: websiteID}
			if err := rows.Scan(&sub.ID, optString{&sub.ExternalID}); err != nil {
				rows.Close()
				return err
			}
			erased = append(erased, sub)
		}
		if err := rows.Close(); err != nil {
			return err
		}
		if len(erased) == 0 {
			return nil
		}
		// Results and interactions are keyed by notification first: one
		// key lookup per (notification of the website, endpoint) pair
		// rather than a scan of the biggest tables.
		const endpointsOf = `SELECT e.id FROM endpoints e WHERE e.subscriber_id IN (SELECT value FROM json_each(?2))`
		if _, err := tx.exec(`DELETE FROM deliveries WHERE notification_seq IN
				(SELECT seq FROM notifications WHERE website_id = ?1)
			AND endpoint_id IN (`+endpointsOf+`)`, websiteID, string(list)); err != nil {
			return err
		}
		if _, err := tx.exec(`DELETE FROM interactions WHERE notification_id IN
				(SELECT id FROM notifications WHERE website_id = ?1)
			AND endpoint_id IN (`+endpointsOf+`)`, websiteID, string(list)); err != nil {
			return err
		}
		_, err = tx.exec(`DELETE FROM subscribers WHERE website_id = ? AND id IN (SELECT value FROM json_each(?))`,
			websiteID, string(list))
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
		var out []store.FacetValue
		out, err = s.facetValues(ctx, query, websiteID, limit)
		return out
	}
	f.Countries = values(`SELECT country, count(*) FROM subscribers WHERE website_id = ? AND country <> ''
		GROUP BY country ORDER BY 2 DESC, 1 LIMIT ?`)
	f.Languages = values(`SELECT language, count(*) FROM subscribers WHERE website_id = ? AND language <> ''
		GROUP BY language ORDER BY 2 DESC, 1 LIMIT ?`)
	f.Devices = values(`SELECT device, count(DISTINCT subscriber_id) FROM endpoints WHERE website_id = ? AND device <> ''
		GROUP BY device ORDER BY 2 DESC, 1 LIMIT ?`)
	keys := values(`SELECT key, count(*) FROM subscriber_labels WHERE website_id = ? AND substr(key, 1, 3) <> 'rb_'
		GROUP BY key ORDER BY 2 DESC, 1 LIMIT ?`)
	if err != nil {
		return store.Facets{}, fmt.Errorf("counting facets: %w", err)
	}
	if f.Tags, err = s.tagFacets(ctx, websiteID, keys, limit); err != nil {
		return store.Facets{}, fmt.Errorf("counting facets: %w", err)
	}
	rows, err := s.r.query(ctx, `SELECT t.id, t.name, t.slug, count(o.subscriber_id) FROM topics t
		LEFT JOIN topic_optins o ON o.topic_id = t.id WHERE t.website_id = ?
		GROUP BY t.id ORDER BY 4 DESC, t.created_at LIMIT ?`, websiteID, limit)
	if err != nil {
		return store.Facets{}, fmt.Errorf("counting facets: %w", err)
	}
	defer rows.Close()
	f.Topics = []store.TopicFacet{}
	for rows.Next() {
		var t store.TopicFacet
		if err := rows.Scan(&t.ID, &t.Name, &t.Slug, &t.Count); err != nil {
			return store.Facets{}, fmt.Errorf("counting facets: %w", err)
		}
		f.Topics = append(f.Topics, t)
	}
	return f, rows.Err()
}

func (s *Store) facetValues(ctx context.Context, query, websiteID string, limit int) ([]store.FacetValue, error) {
	rows, err := s.r.query(ctx, query, websiteID, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []store.FacetValue{}
	for rows.Next() {
		var v store.FacetValue
		if err := rows.Scan(&v.Value, &v.Count); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// tagFacets adds the most frequent values of each of the given keys.
func (s *Store) tagFacets(ctx context.Context, websiteID string, keys []store.FacetValue, limit int) ([]store.TagFacet, error) {
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = k.Value
	}
	list, err := json.Marshal(names)
	if err != nil {
		return nil, err
	}
	rows, err := s.r.query(ctx, `SELECT key, value, n FROM (
			SELECT key, value, count(*) AS n,
				row_number() OVER (PARTITION BY key ORDER BY count(*) DESC, value) AS rank
			FROM subscriber_labels WHERE website_id = ? AND key IN (SELECT value FROM json_each(?)) AND value <> ''
			GROUP BY key, value)
		WHERE rank <= ? ORDER BY key, n DESC, value`, websiteID, string(list), limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var vals []store.TagValueCount
	for rows.Next() {
		var v store.TagValueCount
		if err := rows.Scan(&v.Key, &v.Value, &v.Count); err != nil {
			return nil, err
		}
		vals = append(vals, v)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return store.TagFacets(keys, vals, limit), nil
}
