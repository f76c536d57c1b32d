package sqlstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/relaybell/relaybell/store"
)

const segmentCols = `id, website_id, name, filters, created_at`

func segmentDest(sg *store.Segment) []any {
	return []any{&sg.ID, &sg.WebsiteID, &sg.Name, rawJSONDest{&sg.Filters}, timeDest{&sg.CreatedAt}}
}

// readList reads every row of a query outside a transaction into a T: an
// empty list for none (which the API shows as []).
func readList[T any](ctx context.Context, s *Store, dest func(*T) []any, query string, args ...any) ([]T, error) {
	rows, err := s.db.Read().Query(ctx, query, args...)
	out, err := CollectRows(rows, err, dest)
	if err != nil {
		return nil, err
	}
	if out == nil {
		out = []T{}
	}
	return out, nil
}

// ListSegments returns the website's segments, newest first.
func (s *Store) ListSegments(ctx context.Context, websiteID string) ([]store.Segment, error) {
	out, err := readList(ctx, s, segmentDest, `SELECT `+segmentCols+` FROM segments WHERE website_id = $1
		ORDER BY created_at DESC, id DESC`, websiteID)
	if err != nil {
		return nil, fmt.Errorf("listing segments: %w", err)
	}
	return out, nil
}

// Segment returns one of the website's segments.
func (s *Store) Segment(ctx context.Context, websiteID, id string) (store.Segment, error) {
	var sg store.Segment
	err := s.db.Read().QueryRow(ctx, `SELECT `+segmentCols+` FROM segments WHERE id = $1 AND website_id = $2`,
		id, websiteID).Scan(segmentDest(&sg)...)
	if err != nil {
		return store.Segment{}, fmt.Errorf("loading segment: %w", s.mapErr(err))
	}
	return sg, nil
}

// segmentFilters is the stored form of a segment's filters: the JSON as
// given, {} for none.
func segmentFilters(b []byte) string {
	if len(b) == 0 {
		return "{}"
	}
	return string(b)
}

// CreateSegment stores a new segment; a duplicate id is store.ErrConflict.
func (s *Store) CreateSegment(ctx context.Context, sg store.Segment) error {
	_, err := s.db.Write().Exec(ctx, `INSERT INTO segments (`+segmentCols+`) VALUES ($1, $2, $3, $4, $5)`,
		sg.ID, sg.WebsiteID, sg.Name, segmentFilters(sg.Filters), s.now(sg.CreatedAt))
	if err != nil {
		return fmt.Errorf("creating segment: %w", s.mapErr(err))
	}
	return nil
}

// UpdateSegment replaces a segment's name and filters.
func (s *Store) UpdateSegment(ctx context.Context, sg store.Segment) error {
	err := affected(s.db.Write().Exec(ctx, `UPDATE segments SET name = $1, filters = $2 WHERE id = $3 AND website_id = $4`,
		sg.Name, segmentFilters(sg.Filters), sg.ID, sg.WebsiteID))
	if err != nil {
		return fmt.Errorf("updating segment: %w", err)
	}
	return nil
}

// DeleteSegment removes one of the website's segments, if it exists.
func (s *Store) DeleteSegment(ctx context.Context, websiteID, id string) error {
	if _, err := s.db.Write().Exec(ctx, `DELETE FROM segments WHERE id = $1 AND website_id = $2`, id, websiteID); err != nil {
		return fmt.Errorf("deleting segment: %w", err)
	}
	return nil
}

// SegmentUses reports pending sends and the last send of each segment that
// a send ever named.
func (s *Store) SegmentUses(ctx context.Context, websiteID string) (map[string]store.SegmentUse, error) {
	type use struct {
		id string
		store.SegmentUse
	}
	uses, err := readList(ctx, s, func(u *use) []any { return []any{&u.id, &u.Pending, timePtrDest{&u.LastSentAt}} },
		`SELECT ns.segment_id, count(*) FILTER (WHERE n.status IN ('scheduled', 'queued')), max(n.started_at)
		FROM notifications n JOIN notification_segments ns ON ns.notification_id = n.id
		WHERE n.website_id = $1 GROUP BY ns.segment_id`, websiteID)
	if err != nil {
		return nil, fmt.Errorf("reading segment uses: %w", err)
	}
	out := make(map[string]store.SegmentUse, len(uses))
	for _, u := range uses {
		out[u.id] = u.SegmentUse
	}
	scheduled, err := s.scheduleSegmentUses(ctx, websiteID)
	if err != nil {
		return nil, err
	}
	for id, n := range scheduled {
		u := out[id]
		u.Schedules = n
		out[id] = u
	}
	type feedUse struct {
		id string
		n  int64
	}
	feeds, err := readList(ctx, s, func(u *feedUse) []any { return []any{&u.id, &u.n} },
		`SELECT sg, count(*) FROM (SELECT segment_id AS sg FROM feeds WHERE website_id = $1 AND status = 'active' AND segment_id IS NOT NULL
			UNION ALL SELECT exclude_segment_id FROM feeds WHERE website_id = $1 AND status = 'active' AND exclude_segment_id IS NOT NULL
				AND (segment_id IS NULL OR exclude_segment_id <> segment_id)) u GROUP BY sg`, websiteID)
	if err != nil {
		return nil, fmt.Errorf("reading segment uses by feeds: %w", err)
	}
	for _, f := range feeds {
		u := out[f.id]
		u.Feeds = f.n
		out[f.id] = u
	}
	return out, nil
}

// topicQuery selects topics with their opted-in counts.
const topicQuery = `SELECT t.id, t.website_id, t.name, t.slug, t.created_at,
	(SELECT count(*) FROM topic_optins o WHERE o.topic_id = t.id)
	FROM topics t`

func topicDest(t *store.Topic) []any {
	return []any{&t.ID, &t.WebsiteID, &t.Name, &t.Slug, timeDest{&t.CreatedAt}, &t.Subscribers}
}

// ListTopics returns the website's topics, oldest first.
func (s *Store) ListTopics(ctx context.Context, websiteID string) ([]store.Topic, error) {
	out, err := readList(ctx, s, topicDest, topicQuery+` WHERE t.website_id = $1 ORDER BY t.created_at, t.id`, websiteID)
	if err != nil {
		return nil, fmt.Errorf("listing topics: %w", err)
	}
	return out, nil
}

// Topic finds one of the website's topics by id or by slug in any case. A
// slug is unique per website in any case: by SQLite's NOCASE (ASCII), by
// an index on lower(slug) on PostgreSQL; lower() folds as each does.
func (s *Store) Topic(ctx context.Context, websiteID, idOrSlug string) (store.Topic, error) {
	var t store.Topic
	err := s.db.Read().QueryRow(ctx, topicQuery+` WHERE t.website_id = $1 AND (lower(t.slug) = lower($2) OR lower(t.id) = lower($2))`,
		websiteID, idOrSlug).Scan(topicDest(&t)...)
	if err != nil {
		return store.Topic{}, fmt.Errorf("loading topic: %w", s.mapErr(err))
	}
	return t, nil
}

// SaveTopic creates the topic, or renames the website's topic with its slug
// (the definitions version moves, as with every change to the topics).
// On PostgreSQL the transaction runs again when a concurrent save created
// the slug first, and then renames it.
func (s *Store) SaveTopic(ctx context.Context, t store.Topic) (store.Topic, bool, error) {
	var created bool
	err := s.db.Tx(ctx, TxOptions{RetryUnique: true}, func(tx Conn) error {
		created = false
		n, err := tx.Exec(ctx, `UPDATE topics SET name = $1 WHERE website_id = $2 AND lower(slug) = lower($3)`,
			t.Name, t.WebsiteID, t.Slug)
		if err != nil {
			return err
		}
		if n == 0 {
			created = true
			if _, err := tx.Exec(ctx, `INSERT INTO topics (id, website_id, name, slug, created_at) VALUES ($1, $2, $3, $4, $5)`,
				t.ID, t.WebsiteID, t.Name, t.Slug, s.now(t.CreatedAt)); err != nil {
				return err
			}
		}
		return bumpDefinitions(ctx, tx)
	})
	if err != nil {
		return store.Topic{}, false, fmt.Errorf("saving topic: %w", s.mapErr(err))
	}
	saved, err := s.Topic(ctx, t.WebsiteID, t.Slug)
	return saved, created, err
}

// RenameTopic changes a topic's name (never its slug).
func (s *Store) RenameTopic(ctx context.Context, websiteID, id, name string) (store.Topic, error) {
	err := s.db.Tx(ctx, TxOptions{}, func(tx Conn) error {
		if err := affected(tx.Exec(ctx, `UPDATE topics SET name = $1 WHERE id = $2 AND website_id = $3`, name, id, websiteID)); err != nil {
			return err
		}
		return bumpDefinitions(ctx, tx)
	})
	if err != nil {
		return store.Topic{}, fmt.Errorf("renaming topic: %w", err)
	}
	return s.Topic(ctx, websiteID, id)
}

// DeleteTopic removes a topic and its opt-ins, if it exists.
func (s *Store) DeleteTopic(ctx context.Context, websiteID, id string) error {
	err := s.db.Tx(ctx, TxOptions{}, func(tx Conn) error {
		var name string
		err := tx.QueryRow(ctx, `SELECT name FROM topics WHERE id = $1 AND website_id = $2`, id, websiteID).Scan(&name)
		if err = s.mapErr(err); errors.Is(err, store.ErrNotFound) {
			return nil
		} else if err != nil {
			return err
		}
		// What targets the topic pauses, each with its webhook event, in
		// the deletion's transaction.
		now := time.Now()
		if err := s.pauseTopicSchedules(ctx, tx, websiteID, id, name, now); err != nil {
			return err
		}
		if err := s.pauseTopicFeeds(ctx, tx, websiteID, id, name, now); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM topics WHERE id = $1 AND website_id = $2`, id, websiteID); err != nil {
			return err
		}
		return bumpDefinitions(ctx, tx)
	})
	if err != nil {
		return fmt.Errorf("deleting topic: %w", err)
	}
	return nil
}

// personCols read a subscriber with its devices (most recently seen first)
// and topic ids, each list aggregated as one text of ","-led elements (NULL
// for none), so that an empty device type is still an element.
const personCols = `s.id, s.website_id, s.external_id, s.country, s.language, s.timezone, s.url,
	` + peopleLabels + `, s.shard, s.created_at, s.last_seen_at, s.unsubscribed_at, s.consent_at,
	(SELECT string_agg(',' || e.device, '' ORDER BY e.last_seen_at DESC, e.id) FROM endpoints e WHERE e.subscriber_id = s.id),
	(SELECT string_agg(',' || o.topic_id, '') FROM topic_optins o WHERE o.subscriber_id = s.id)`

func scanPerson(row Row, p *store.Person) error {
	var devices, topics string
	err := row.Scan(&p.ID, &p.WebsiteID, textDest{&p.ExternalID}, &p.Country, &p.Language, &p.Timezone, &p.URL,
		jsonDest{&p.Tags}, &p.Shard, timeDest{&p.CreatedAt}, timeDest{&p.LastSeenAt}, timePtrDest{&p.UnsubscribedAt},
		timePtrDest{&p.ConsentAt}, textDest{&devices}, textDest{&topics})
	if err != nil {
		return err
	}
	p.Devices, p.Topics = personList(devices), personList(topics)
	slices.Sort(p.Topics) // in id order
	return nil
}

// personList splits a list of personCols.
func personList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s[1:], ",")
}

// People returns one page of the website's people that pass the filter,
// newest first.
func (s *Store) People(ctx context.Context, q store.PeopleQuery) ([]store.Person, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = defaultPeopleLimit
	}
	query, args := PeopleSQL(s.d, q, limit)
	rows, err := s.db.Read().Query(ctx, query, args...)
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
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing people: %w", err)
	}
	return out, nil
}

// defaultPeopleLimit is the page of People when a query gives none.
const defaultPeopleLimit = 1000

// PeopleSQL writes the query of a page of People of limit people: one range
// of subscribers_newest (website_id, created_at, id), read backwards.
func PeopleSQL(d Dialect, q store.PeopleQuery, limit int) (string, []any) {
	args, after := []any{q.WebsiteID}, ""
	if q.After != nil {
		args, after = append(args, d.Time(q.After.CreatedAt), q.After.ID), ` AND (s.created_at, s.id) < ($2, $3)`
	}
	where, args := peopleAnd(d, q.WebsiteID, q.Filter, args, false)
	return `SELECT ` + personCols + ` FROM subscribers s
		WHERE s.website_id = $1` + after + where + `
		ORDER BY s.created_at DESC, s.id DESC LIMIT ` + strconv.Itoa(limit), args
}

// PeopleSnapshot hands fn the store's People and CountPeople over one
// read-only transaction (DB.Snapshot).
func (s *Store) PeopleSnapshot(ctx context.Context, fn func(store.PeopleReader) error) error {
	return s.db.Snapshot(ctx, func(read Conn) error { return fn(s.WithDB(snapshotDB{read})) })
}

// snapshotDB is a DB whose every statement goes to one read-only
// transaction; a write there fails at the engine, and Tx without running.
type snapshotDB struct{ read Conn }

func (d snapshotDB) Read() Conn  { return d.read }
func (d snapshotDB) Write() Conn { return d.read }
func (d snapshotDB) Tx(context.Context, TxOptions, func(Conn) error) error {
	return errors.New("a snapshot's reader does not write")
}
func (d snapshotDB) Snapshot(_ context.Context, fn func(Conn) error) error { return fn(d.read) }
func (d snapshotDB) Close() error                                          { return nil }

// CountPeople counts the website's people that pass the filter.
func (s *Store) CountPeople(ctx context.Context, websiteID string, f store.PeopleFilter) (int64, error) {
	where, args := peopleAnd(s.d, websiteID, f, []any{websiteID}, true)
	var n int64
	if err := s.db.Read().QueryRow(ctx, `SELECT count(*) FROM subscribers s WHERE s.website_id = $1`+where, args...).Scan(&n); err != nil {
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
	query, args := ReachSQL(s.d, q)
	rows, err := s.db.Read().Query(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("reading reachable people: %w", err)
	}
	defer rows.Close()
	var (
		sub      store.Subscriber
		browsers int
	)
	dest := []any{&sub.ID, &sub.ExternalID, &sub.Country, &sub.Language, &sub.URL, jsonDest{&sub.Tags}, &browsers}
	for rows.Next() {
		sub = store.Subscriber{WebsiteID: q.WebsiteID, Shard: q.Shard}
		if err := rows.Scan(dest...); err != nil {
			return fmt.Errorf("reading reachable people: %w", err)
		}
		if q.Shard == store.AllShards {
			sub.Shard = store.ShardOf(sub.ID)
		}
		fn(&sub, browsers)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("reading reachable people: %w", err)
	}
	return nil
}

// Person finds one of the website's people by subscriber id or external id.
func (s *Store) Person(ctx context.Context, websiteID, key string) (store.Person, error) {
	var p store.Person
	err := scanPerson(s.db.Read().QueryRow(ctx, `SELECT `+personCols+` FROM subscribers s
		WHERE s.website_id = $1 AND (s.id = $2 OR s.external_id = $2)
		ORDER BY s.id = $2 DESC LIMIT 1`, websiteID, key), &p)
	if err != nil {
		return store.Person{}, fmt.Errorf("loading person: %w", s.mapErr(err))
	}
	return p, nil
}

// PersonEndpoints lists a subscriber's endpoints, most recently seen first.
func (s *Store) PersonEndpoints(ctx context.Context, websiteID, subscriberID string) ([]store.Endpoint, error) {
	out, err := readList(ctx, s, endpointDest, `SELECT `+endpointCols+` FROM endpoints e
		WHERE e.subscriber_id = $1 AND e.website_id = $2 ORDER BY e.last_seen_at DESC, e.id`, subscriberID, websiteID)
	if err != nil {
		return nil, fmt.Errorf("listing endpoints: %w", err)
	}
	return out, nil
}

// ImportPeople creates or enriches people by external id, in one
// transaction. On PostgreSQL it runs again when a concurrent registration
// created one of the external ids first, which it then enriches.
func (s *Store) ImportPeople(ctx context.Context, websiteID string, rows []store.ImportRow, at time.Time) (int, error) {
	when := s.now(at)
	var n int
	err := s.db.Tx(ctx, TxOptions{RetryUnique: true}, func(tx Conn) error {
		n = 0
		for _, r := range rows {
			if r.ExternalID == "" {
				continue
			}
			patch := "{}" // changes no label
			if len(r.Tags) > 0 {
				var err error
				if patch, err = jsonText(r.Tags); err != nil {
					return err
				}
			}
			id := store.NewID()
			if err := tx.QueryRow(ctx, `INSERT INTO subscribers (id, website_id, external_id, tags, shard, created_at, last_seen_at)
				VALUES ($1, $2, $3, $4, $5, $6, $6)
				ON CONFLICT (website_id, external_id) WHERE external_id IS NOT NULL
				DO UPDATE SET tags = `+s.d.MergeJSON("subscribers.tags", "excluded.tags")+`
				RETURNING id`, id, websiteID, r.ExternalID, patch, store.ShardOf(id), when).Scan(&id); err != nil {
				return err
			}
			if len(r.Topics) > 0 {
				rows, err := tx.Query(ctx, `INSERT INTO topic_optins (topic_id, subscriber_id, created_at)
					SELECT id, $1, $2 FROM topics WHERE website_id = $3
						AND lower(slug) IN (SELECT lower(value) FROM `+s.d.Elems("$4")+`)
					ON CONFLICT DO NOTHING RETURNING topic_id`, id, when, websiteID, s.d.List(r.Topics))
				optedIn, err := CollectRows(rows, err, func(id *string) []any { return []any{id} })
				if err != nil {
					return err
				}
				// An opt-in by import triggers topic_opt_in as a browser's does.
				if err := s.queueTriggers(ctx, tx, websiteID, id, store.TriggerTopicOptIn, optedIn, nowOr(at)); err != nil {
					return err
				}
			}
			n++
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("importing people: %w", s.mapErr(err))
	}
	return n, nil
}

// TagPeople sets and removes labels of the listed people of the website.
// On PostgreSQL it locks their rows first, in id order.
func (s *Store) TagPeople(ctx context.Context, websiteID string, ids []string, set map[string]string, remove []string) (int, error) {
	type change struct {
		id   string
		tags []byte
	}
	var n int
	err := s.db.Tx(ctx, TxOptions{}, func(tx Conn) error {
		rows, err := tx.Query(ctx, `SELECT id, tags FROM subscribers WHERE website_id = $1 AND `+s.d.In("id", "$2")+`
			ORDER BY id `+s.d.ForUpdate(), websiteID, s.d.List(ids))
		changes, err := CollectRows(rows, err, func(c *change) []any { return []any{&c.id, rawJSONDest{&c.tags}} })
		if err != nil {
			return err
		}
		for _, c := range changes {
			tags, err := store.EditTags(c.tags, set, remove)
			if err != nil {
				return fmt.Errorf("subscriber %s: %w", c.id, err)
			}
			if _, err := tx.Exec(ctx, `UPDATE subscribers SET tags = $2 WHERE id = $1`, c.id, string(tags)); err != nil {
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
// recorded about their endpoints, but for their removals in the stats'
// history (recordRemovals: the website and two times). On PostgreSQL it
// locks their rows first, in id order.
func (s *Store) ErasePeople(ctx context.Context, websiteID string, ids []string) ([]store.Subscriber, error) {
	var erased []store.Subscriber
	err := s.db.Tx(ctx, TxOptions{}, func(tx Conn) error {
		// One erasure of the website at a time: each rewrites the push
		// ledger's runs it read (eraseFromLedger).
		if _, err := tx.Exec(ctx, `SELECT id FROM websites WHERE id = $1 `+s.d.LockRows("NO KEY UPDATE"), websiteID); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT id, external_id FROM subscribers
			WHERE website_id = $1 AND `+s.d.In("id", "$2")+` ORDER BY id `+s.d.ForUpdate(), websiteID, s.d.List(ids))
		erased, err = CollectRows(rows, err, func(sub *store.Subscriber) []any { return []any{&sub.ID, textDest{&sub.ExternalID}} })
		if err != nil || len(erased) == 0 {
			return err
		}
		found := make([]string, len(erased))
		for i := range erased {
			erased[i].WebsiteID = websiteID
			found[i] = erased[i].ID
		}
		list := s.d.List(found)
		// Push results and interactions are keyed by notification first:
		// lookups per (notification of the website, endpoint) pair rather
		// than a scan of the biggest tables.
		endpointsOf := `SELECT e.id FROM endpoints e WHERE ` + s.d.In("e.subscriber_id", "$2")
		if err := s.eraseFromLedger(ctx, tx, websiteID, list); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM interactions WHERE notification_id IN
				(SELECT id FROM notifications WHERE website_id = $1)
			AND endpoint_id IN (`+endpointsOf+`)`, websiteID, list); err != nil {
			return err
		}
		// Their browsers go with them (ON DELETE CASCADE): removals, as
		// if turned off, in the stats.
		if err := s.recordRemovals(ctx, tx, time.Now(), s.d.In("subscriber_id", "$2"), list); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM subscribers WHERE `+s.d.In("id", "$1"), list)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("erasing people: %w", err)
	}
	return erased, nil
}

// eraseFromLedger takes the endpoints of the people (list: subscriber
// ids) out of the push ledger's runs of the website's sends: each run
// that holds one is written again without them, or deleted when nothing
// is left of it. A run is looked for in every shard, as an endpoint keeps
// the runs of the shard it was in when it was pushed (its subscriber may
// have changed since), each read bounded by the endpoint's bucket as
// LedgerQuery's. The caller holds the website's row, so that two
// erasures never write the same run from the same first reading.
func (s *Store) eraseFromLedger(ctx context.Context, tx Conn, websiteID string, list any) error {
	type run struct {
		seq          int64
		shard        int
		last, packed string
	}
	rows, err := tx.Query(ctx, `SELECT id FROM endpoints WHERE website_id = $1 AND `+s.d.In("subscriber_id", "$2"), websiteID, list)
	gone, err := collectIDSet(rows, err)
	if err != nil || len(gone) == 0 {
		return err
	}
	type key struct {
		seq   int64
		shard int
		last  string
	}
	found := map[key]run{}
	for _, id := range slices.Sorted(maps.Keys(gone)) {
		rows, err := tx.Query(ctx, `SELECT c.notification_seq, c.shard, c.last_endpoint, c.endpoints
			FROM notifications n JOIN push_ledger c ON c.notification_seq = n.seq AND c.shard IN (`+allShards+`)
				AND c.last_endpoint >= $2 AND c.last_endpoint < $3 AND c.first_endpoint <= $2
			WHERE n.website_id = $1`, websiteID, id, ledgerBucketEnd(id))
		runs, err := CollectRows(rows, err, func(r *run) []any { return []any{&r.seq, &r.shard, &r.last, &r.packed} })
		if err != nil {
			return err
		}
		for _, r := range runs {
			found[key{r.seq, r.shard, r.last}] = r
		}
	}
	for _, k := range slices.SortedFunc(maps.Keys(found), func(a, b key) int {
		return cmp.Or(cmp.Compare(a.seq, b.seq), cmp.Compare(a.shard, b.shard), strings.Compare(a.last, b.last))
	}) {
		r := found[k]
		var kept []string
		removed := false
		store.EachPackedEndpoint(r.packed, func(id string) {
			if _, ok := gone[id]; ok {
				removed = true
			} else {
				kept = append(kept, id)
			}
		})
		switch {
		case !removed: // its range holds one of theirs, its ids none
			continue
		case len(kept) == 0:
			if _, err := tx.Exec(ctx, `DELETE FROM push_ledger WHERE notification_seq = $1 AND shard = $2 AND last_endpoint = $3`,
				r.seq, r.shard, r.last); err != nil {
				return err
			}
			continue
		}
		packed, err := store.PackEndpoints(kept)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE push_ledger SET last_endpoint = $4, first_endpoint = $5, endpoints = $6, pushes = $7
			WHERE notification_seq = $1 AND shard = $2 AND last_endpoint = $3`,
			r.seq, r.shard, r.last, slices.Max(kept), slices.Min(kept), packed, len(kept)); err != nil {
			return err
		}
	}
	return nil
}

// allShards lists every audience shard, 0 to store.Shards-1, for an IN
// list that keeps each shard's read a range of the push ledger's key.
var allShards = func() string {
	ids := make([]string, store.Shards)
	for i := range ids {
		ids[i] = strconv.Itoa(i)
	}
	return strings.Join(ids, ", ")
}()

// Facets counts the website's people by attribute. Equal counts are in the
// byte order of the values on both engines (PostgreSQL's columns are
// COLLATE "C" for it: migration 16).
func (s *Store) Facets(ctx context.Context, websiteID string, limit int) (store.Facets, error) {
	var f store.Facets
	var err error
	values := func(query string) []store.FacetValue {
		if err != nil {
			return nil
		}
		var out []store.FacetValue
		out, err = readList(ctx, s, func(v *store.FacetValue) []any { return []any{&v.Value, &v.Count} }, query, websiteID, limit)
		return out
	}
	f.Countries = values(`SELECT country, count(*) FROM subscribers WHERE website_id = $1 AND country <> ''
		GROUP BY country ORDER BY 2 DESC, 1 LIMIT $2`)
	f.Languages = values(`SELECT language, count(*) FROM subscribers WHERE website_id = $1 AND language <> ''
		GROUP BY language ORDER BY 2 DESC, 1 LIMIT $2`)
	f.Devices = values(`SELECT device, count(DISTINCT subscriber_id) FROM endpoints WHERE website_id = $1 AND device <> ''
		GROUP BY device ORDER BY 2 DESC, 1 LIMIT $2`)
	keys := values(`SELECT key, count(*) FROM subscriber_labels WHERE website_id = $1 AND substr(key, 1, 3) <> 'rb_'
		GROUP BY key ORDER BY 2 DESC, 1 LIMIT $2`)
	if err != nil {
		return store.Facets{}, fmt.Errorf("counting facets: %w", err)
	}
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = k.Value
	}
	vals, err := readList(ctx, s, func(v *store.TagValueCount) []any { return []any{&v.Key, &v.Value, &v.Count} },
		`SELECT key, value, n FROM (
			SELECT key, value, count(*) AS n,
				row_number() OVER (PARTITION BY key ORDER BY count(*) DESC, value) AS rank
			FROM subscriber_labels WHERE website_id = $1 AND `+s.d.In("key", "$2")+` AND value <> ''
			GROUP BY key, value) v
		WHERE rank <= $3 ORDER BY key, n DESC, value`, websiteID, s.d.List(names), limit)
	if err != nil {
		return store.Facets{}, fmt.Errorf("counting facets: %w", err)
	}
	f.Tags = store.TagFacets(keys, vals, limit)
	f.Topics, err = readList(ctx, s, func(t *store.TopicFacet) []any { return []any{&t.ID, &t.Name, &t.Slug, &t.Count} },
		`SELECT t.id, t.name, t.slug, count(o.subscriber_id) FROM topics t
		LEFT JOIN topic_optins o ON o.topic_id = t.id WHERE t.website_id = $1
		GROUP BY t.id ORDER BY 4 DESC, t.created_at LIMIT $2`, websiteID, limit)
	if err != nil {
		return store.Facets{}, fmt.Errorf("counting facets: %w", err)
	}
	return f, nil
}
