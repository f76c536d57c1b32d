package sqlstore

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/relaybell/relaybell/store"
)

// A batch's known browsers registering again as the same person (the SDK
// does on every page view) are stored by upsertAgain with a constant
// number of multi-row statements, where upsertSubscription takes three
// or four each:
//
//  1. a SELECT of every endpoint the batch names (its URLs and the URLs
//     it replaces), with its subscriber and that one's external id, which
//     on PostgreSQL locks the endpoints in (website, URL) byte order;
//  2. an UPDATE of those browsers' endpoints;
//  3. an UPDATE of their subscribers, which on PostgreSQL locks them in id
//     order first (a locking subquery sorted by id: the UPDATE itself
//     keeps no order), returning what the visit is learned with;
//  4. an upsert of the visits into subscriber_activity;
//  5. an UPDATE of the smart hours that moved, when one did.
//
// The rest go the one-by-one way after them, in the batch's order, and
// upsertAgain decides which from the endpoints read (1): a registration
// goes the fast way when it is neither a logout nor a replacement, sets
// no topics, its endpoint is known and is its person's (any person's
// without an external id), and no registration before it in the batch's
// order touches its endpoint or subscriber. A registration that goes the
// one-by-one way touches its endpoint, the endpoint it replaces, their
// subscribers and the one holding its external id, and nothing else that
// a later fast one reads: so each endpoint and subscriber sees the same
// registrations in the same order as one after the other would, and
// stores the same. The second browser of one person or a URL given twice
// goes the one-by-one way, after the first.
//
// Locks: the first statement takes every endpoint lock the batch's
// registrations need by their URLs, in one order across batches, before
// any subscriber's; the subscribers of the fast way are then locked in
// id order. A deadlock left (the one-by-one way locks subscribers in
// its own order, as before) is run again by the store's transaction.
// SQLite's one writer needs no lock.
//
// Neither UPDATE sets external_id or subscriber_id: the people version's
// and the browsers count's triggers have nothing to do, as for the same
// registration one by one.

// againMin is the fewest fast registrations worth upsertAgain's
// statements: one alone is stored as cheaply one by one.
const againMin = 2

// againCandidate says whether a registration may go the fast way, before
// its endpoint is read.
func againCandidate(in store.SubscriptionInput) bool {
	return !in.Logout && in.Replaces == "" && !in.SetTopics && len(in.Topics) == 0
}

// upsertAgain stores the registrations of list (in the given order) that
// go the fast way, setting their results in out, and returns the others,
// in order, for the one-by-one way.
func (s *Store) upsertAgain(ctx context.Context, tx Conn, list []store.SubscriptionInput, order []int, out []store.SubscriptionResult) ([]int, error) {
	candidates := 0
	for _, i := range order {
		if againCandidate(list[i]) {
			candidates++
		}
	}
	if candidates < againMin {
		return order, nil
	}

	type key struct{ website, s string } // an endpoint URL or external id of a website
	type known struct{ id, subscriber, external string }
	var urls []key
	for _, i := range order {
		in := list[i]
		urls = append(urls, key{in.WebsiteID, in.Endpoint})
		if in.Replaces != "" {
			urls = append(urls, key{in.WebsiteID, in.Replaces})
		}
	}
	slices.SortFunc(urls, func(a, b key) int { return cmp.Or(strings.Compare(a.website, b.website), strings.Compare(a.s, b.s)) })
	urls = slices.Compact(urls)
	endpoints := make(map[key]known, len(urls))
	holders := map[key]string{} // the subscriber holding an external id
	for chunk := range slices.Chunk(urls, rowsPerInsert) {
		args := make([]any, 0, 2*len(chunk))
		for _, u := range chunk {
			args = append(args, u.website, u.s)
		}
		rows, err := tx.Query(ctx, `SELECT e.website_id, e.url, e.id, e.subscriber_id, coalesce(s.external_id, '')
			FROM (VALUES `+valuesList(len(chunk), 2, nil)+`) AS v
			JOIN endpoints e ON e.website_id = v.column1 AND e.url = v.column2
			JOIN subscribers s ON s.id = e.subscriber_id
			ORDER BY e.website_id`+s.d.DDL.ByteOrder+`, e.url`+s.d.DDL.ByteOrder+` `+s.d.ForUpdate("e"), args...)
		type row struct {
			url key
			known
		}
		found, err := CollectRows(rows, err, func(r *row) []any {
			return []any{&r.url.website, &r.url.s, &r.id, &r.subscriber, &r.external}
		})
		if err != nil {
			return nil, err
		}
		for _, r := range found {
			endpoints[r.url] = r.known
			if r.external != "" {
				holders[key{r.url.website, r.external}] = r.subscriber
			}
		}
	}

	// Which go the fast way. A known endpoint's subscriber stands for
	// both: a registration touching a known endpoint touches its
	// subscriber, and a fast one's endpoint is known.
	var fast, slow []int
	touched := map[string]bool{} // subscribers
	for _, i := range order {
		in := list[i]
		e, ok := endpoints[key{in.WebsiteID, in.Endpoint}]
		if againCandidate(in) && ok && (in.ExternalID == "" || e.external == in.ExternalID) && !touched[e.subscriber] {
			fast = append(fast, i)
			touched[e.subscriber] = true
			continue
		}
		slow = append(slow, i)
		if ok {
			touched[e.subscriber] = true
		}
		if r, ok := endpoints[key{in.WebsiteID, in.Replaces}]; ok && in.Replaces != "" {
			touched[r.subscriber] = true
		}
		if h, ok := holders[key{in.WebsiteID, in.ExternalID}]; ok && in.ExternalID != "" {
			touched[h] = true
		}
	}
	if len(fast) < againMin {
		return order, nil
	}

	// The endpoints (locked above on PostgreSQL).
	for chunk := range slices.Chunk(fast, rowsPerInsert) {
		args := make([]any, 0, 6*len(chunk))
		for _, i := range chunk {
			in := list[i]
			args = append(args, endpoints[key{in.WebsiteID, in.Endpoint}].id, in.P256dh, in.Auth, in.Device, in.UserAgent,
				s.time(nowOr(in.At)))
		}
		n, err := tx.Exec(ctx, `UPDATE endpoints SET p256dh = v.column2, auth = v.column3,
				device = coalesce(nullif(v.column4, ''), endpoints.device),
				user_agent = coalesce(nullif(v.column5, ''), endpoints.user_agent),
				last_seen_at = v.column6
			FROM (VALUES `+valuesList(len(chunk), 6, map[int]string{5: s.d.DDL.Time})+`) AS v
			WHERE endpoints.id = v.column1`, args...)
		if err == nil && n != int64(len(chunk)) {
			err = fmt.Errorf("%d of %d updated", n, len(chunk))
		}
		if err != nil {
			return nil, fmt.Errorf("updating known endpoints: %w", err)
		}
	}

	// The subscribers, in id order. when is each one's registration time.
	bySubscriber := make(map[string]int, len(fast))
	for _, i := range fast {
		in := list[i]
		bySubscriber[endpoints[key{in.WebsiteID, in.Endpoint}].subscriber] = i
	}
	subscribers := slices.Sorted(maps.Keys(bySubscriber))
	type activity struct {
		subscriber   string
		hour, weight int
	}
	var (
		visits []activity
		smart  []string // the subscribers whose smart hour is to be set again
	)
	for chunk := range slices.Chunk(subscribers, rowsPerInsert) {
		args := make([]any, 0, 6*len(chunk))
		for _, id := range chunk {
			in := list[bySubscriber[id]]
			args = append(args, id, in.Country, in.Language, in.Timezone, in.URL, s.time(nowOr(in.At)))
		}
		// An empty value keeps the stored one (nullif).
		rows, err := tx.Query(ctx, `UPDATE subscribers SET
				country = coalesce(nullif(l.new_country, ''), subscribers.country),
				language = coalesce(nullif(l.new_language, ''), subscribers.language),
				timezone = coalesce(nullif(l.new_timezone, ''), subscribers.timezone),
				url = coalesce(nullif(l.new_url, ''), subscribers.url),
				last_seen_at = l.new_at, unsubscribed_at = NULL
			FROM (SELECT s.id AS sid, v.column2 AS new_country, v.column3 AS new_language, v.column4 AS new_timezone,
					v.column5 AS new_url, v.column6 AS new_at
				FROM subscribers s JOIN (VALUES `+valuesList(len(chunk), 6, map[int]string{5: s.d.DDL.Time})+`) AS v
					ON s.id = v.column1
				ORDER BY s.id `+s.d.ForUpdate("s")+`) AS l
			WHERE subscribers.id = l.sid
			RETURNING subscribers.id, subscribers.timezone, coalesce(subscribers.smart_hour, -1),
				EXISTS (SELECT 1 FROM automation_triggers WHERE subscriber_id = subscribers.id),
				(SELECT timezone FROM websites WHERE id = subscribers.website_id)`, args...)
		type row struct {
			id, timezone    string
			smartHour       int
			pending         bool
			websiteTimezone string
		}
		updated, err := CollectRows(rows, err, func(r *row) []any {
			return []any{&r.id, &r.timezone, &r.smartHour, &r.pending, &r.websiteTimezone}
		})
		if err != nil {
			return nil, fmt.Errorf("updating known subscribers: %w", err)
		}
		if len(updated) != len(chunk) {
			return nil, fmt.Errorf("updating known subscribers: %d of %d updated", len(updated), len(chunk))
		}
		for _, r := range updated {
			i := bySubscriber[r.id]
			in := list[i]
			out[i] = store.SubscriptionResult{SubscriberID: r.id,
				EndpointID: endpoints[key{in.WebsiteID, in.Endpoint}].id, Pending: r.pending}
			if in.Visit <= 0 {
				continue
			}
			// As upsertSubscription: learnHour with the website's time
			// zone given, learnActivity (the smart hour set again)
			// without.
			site, stored := in.SiteTimezone, r.smartHour
			if site == "" {
				site, stored = r.websiteTimezone, -1
			}
			hour := store.LocalHour(nowOr(in.At), r.timezone, site)
			visits = append(visits, activity{r.id, hour, in.Visit})
			if hour != stored {
				smart = append(smart, r.id)
			}
		}
	}
	slices.SortFunc(visits, func(a, b activity) int { return strings.Compare(a.subscriber, b.subscriber) })
	for chunk := range slices.Chunk(visits, rowsPerInsert) {
		args := make([]any, 0, 3*len(chunk))
		for _, v := range chunk {
			args = append(args, v.subscriber, v.hour, v.weight)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO subscriber_activity (subscriber_id, hour, weight)
			VALUES `+valuesList(len(chunk), 3, nil)+`
			ON CONFLICT (subscriber_id, hour) DO UPDATE SET weight = subscriber_activity.weight + excluded.weight`,
			args...); err != nil {
			return nil, fmt.Errorf("learning visits: %w", err)
		}
	}
	if len(smart) > 0 {
		if _, err := tx.Exec(ctx, `UPDATE subscribers SET smart_hour = (SELECT hour FROM subscriber_activity
			WHERE subscriber_id = subscribers.id ORDER BY weight DESC, hour LIMIT 1) WHERE `+s.d.In("id", "$1"),
			s.d.List(smart)); err != nil {
			return nil, fmt.Errorf("learning smart hours: %w", err)
		}
	}
	return slow, nil
}
