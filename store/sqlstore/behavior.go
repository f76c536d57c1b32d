package sqlstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/relaybell/relaybell/store"
)

// padRows is how many rows a batched statement's VALUES list of n rows
// gets: the next power of two, at most max. The rows past n match
// nothing (their ids are empty). A statement's text then takes one of
// a few forms rather than one per batch size, so that PostgreSQL's
// prepared statements are planned a few times on each connection and
// then reuse a kept plan, as they would not for texts seen once.
func padRows(n, max int) int {
	rows := 1
	for rows < n {
		rows *= 2
	}
	return min(rows, max)
}

// lastInteractionOrder is the order of a subscriber's interactions i in
// which the first is the one a conversion is credited to: a click before
// a delivery, then the latest, then the least notification id.
const lastInteractionOrder = `CASE WHEN i.kind = 'clicked' THEN 0 ELSE 1 END, i.at DESC, i.notification_id`

// LastInteractionQuery finds a subscriber's ($1) last interaction with
// the website's ($2) notifications at or after $3: through
// interactions_endpoint, one lookup per browser of the person.
const LastInteractionQuery = `SELECT i.notification_id, i.kind
		FROM endpoints e
		JOIN interactions i ON i.endpoint_id = e.id
		JOIN notifications n ON n.id = i.notification_id
		WHERE e.subscriber_id = $1 AND e.website_id = $2 AND n.website_id = $2 AND i.at >= $3
		ORDER BY ` + lastInteractionOrder + `
		LIMIT 1`

// LastInteraction is the website's notification the subscriber last
// clicked at or after since, or else last had delivered at or after since.
func (s *Store) LastInteraction(ctx context.Context, websiteID, subscriberID string, since time.Time) (string, bool, error) {
	var (
		id   string
		kind string
	)
	err := s.db.Read().QueryRow(ctx, LastInteractionQuery, subscriberID, websiteID, s.time(since)).Scan(&id, &kind)
	if err != nil {
		return "", false, fmt.Errorf("finding last interaction: %w", s.mapErr(err))
	}
	return id, kind == store.InteractionClicked, nil
}

// attributionsChunk bounds the queries of one Attribute statement (5
// arguments each).
const attributionsChunk = 300

// Attribute credits each query's conversion (store.Behavior): WriteEvents
// with the website's conversions alone.
func (s *Store) Attribute(ctx context.Context, websiteID string, queries []store.Attribution) ([]store.Interaction, error) {
	found, err := s.WriteEvents(ctx, store.EventWrites{Credits: map[string][]store.Attribution{websiteID: queries}})
	if err != nil {
		return nil, err
	}
	out := make([]store.Interaction, len(queries))
	for i, q := range queries {
		out[i] = found[websiteID][q.EventID]
	}
	return out, nil
}

// attributeQueries are the statements crediting a website's conversions,
// one per attributionsChunk: a VALUES list of (event, subscriber, since,
// value, at) joined to the subscribers' interactions with the website's
// notifications, of which each event keeps the first in
// lastInteractionOrder (row_number over its rows), inserted as its
// credit. An event credited before conflicts, and its row is touched (an
// update of nothing) so that RETURNING gives it too, if its notification
// is the website's; one that finds nothing to credit now answers none,
// whatever it was credited to. Their reads put each credit in found, by
// event id.
func (s *Store) attributeQueries(websiteID string, queries []store.Attribution, found map[string]store.Interaction) []Piped {
	// The first query of each event is the one made: an upsert may not
	// touch a row twice.
	first := make(map[string]int, len(queries))
	var events []string
	for i, q := range queries {
		if _, dup := first[q.EventID]; !dup {
			first[q.EventID] = i
			events = append(events, q.EventID)
		}
	}
	var out []Piped
	for chunk := range slices.Chunk(events, attributionsChunk) {
		rows := padRows(len(chunk), attributionsChunk)
		values := make([]string, rows)
		args := make([]any, 0, 5*rows+1)
		for i := range rows {
			n := len(args)
			values[i] = fmt.Sprintf("($%d, $%d, CAST($%d AS %s), CAST($%d AS %s), CAST($%d AS %s))",
				n+1, n+2, n+3, s.d.DDL.Time, n+4, s.d.DDL.Float, n+5, s.d.DDL.Time)
			if i < len(chunk) {
				q := queries[first[chunk[i]]]
				args = append(args, q.EventID, q.SubscriberID, s.time(q.Since), q.Value, s.time(nowOr(q.At)))
			} else { // a pad row: no subscriber has the empty id
				args = append(args, "", "", s.time(time.Unix(0, 0)), 0.0, s.time(time.Unix(0, 0)))
			}
		}
		site := fmt.Sprintf("$%d", len(args)+1)
		args = append(args, websiteID)
		// The credits are inserted in event order, so that two calls
		// never wait for each other crosswise.
		out = append(out, Piped{SQL: `INSERT INTO conversion_credits (event_id, notification_id, value, clicked, at)
			SELECT event_id, notification_id, value, kind = 'clicked', at FROM (
				SELECT v.column1 AS event_id, i.notification_id, i.kind, v.column4 AS value, v.column5 AS at,
					row_number() OVER (PARTITION BY v.column1 ORDER BY ` + lastInteractionOrder + `) AS r
				FROM (VALUES ` + strings.Join(values, ", ") + `) AS v
				JOIN endpoints e ON e.subscriber_id = v.column2 AND e.website_id = ` + site + `
				JOIN interactions i ON i.endpoint_id = e.id AND i.at >= v.column3
				JOIN notifications n ON n.id = i.notification_id AND n.website_id = ` + site + `
			) AS last
			WHERE r = 1
			ORDER BY event_id
			ON CONFLICT (event_id) DO UPDATE SET event_id = excluded.event_id
				WHERE conversion_credits.notification_id IN (SELECT id FROM notifications WHERE website_id = ` + site + `)
			RETURNING event_id, notification_id, clicked`, Args: args, Read: func(rows Rows) error {
			type row struct {
				event, notification string
				clicked             bool
			}
			list, err := CollectRows(rows, nil, func(r *row) []any { return []any{&r.event, &r.notification, &r.clicked} })
			for _, r := range list {
				found[r.event] = store.Interaction{NotificationID: r.notification, Clicked: r.clicked}
			}
			return err
		}})
	}
	return out
}

// WriteEvents credits conversions and records product interests
// (store.Behavior) in one pipeline of statements (Pipeline), the
// interests' first, then each website's credits in website order: one
// transaction, and on PostgreSQL one round trip and one commit, as a
// pgx batch runs in an implicit transaction of its own (TxOptions.Alone).
// A conversion naming a product, and concurrent events of both kinds,
// commit once rather than once for each. A call retried after a failure
// finds the credits it made.
func (s *Store) WriteEvents(ctx context.Context, w store.EventWrites) (map[string]map[string]store.Interaction, error) {
	queries, err := s.interestQueries(w.Interests)
	if err != nil {
		return nil, fmt.Errorf("writing events: %w", err)
	}
	sites := slices.Sorted(maps.Keys(w.Credits))
	found := make(map[string]map[string]store.Interaction, len(sites))
	for _, site := range sites {
		found[site] = map[string]store.Interaction{}
		queries = append(queries, s.attributeQueries(site, w.Credits[site], found[site])...)
	}
	if len(queries) > 0 {
		err := s.db.Tx(ctx, TxOptions{Alone: true}, func(tx Conn) error {
			for _, f := range found { // a retry reads them again
				clear(f)
			}
			return Pipeline(ctx, tx, queries)
		})
		if err != nil {
			return nil, fmt.Errorf("writing events: %w", s.mapErr(err))
		}
	}
	return found, nil
}

// FoldConversions adds up to max unfolded credits to their notifications'
// counters and marks them folded. On PostgreSQL a concurrent fold passes
// over the credits this one holds (SKIP LOCKED) and, should it have picked
// one already, finds it folded once this one commits (the UPDATE's
// condition is checked again), so none is counted twice. Notifications are
// updated in id order, so two folds never wait for each other crosswise.
func (s *Store) FoldConversions(ctx context.Context, max int) (int, error) {
	type sum struct {
		n, clicked int64
		value      float64
	}
	var folded int
	err := s.db.Tx(ctx, TxOptions{}, func(tx Conn) error {
		folded = 0
		rows, err := tx.Query(ctx, `UPDATE conversion_credits SET folded = true WHERE folded = false AND event_id IN
			(SELECT event_id FROM conversion_credits WHERE folded = false ORDER BY at LIMIT $1 `+s.d.SkipLocked()+`)
			RETURNING notification_id, value, clicked`, max)
		if err != nil {
			return err
		}
		sums := map[string]*sum{}
		for rows.Next() {
			var (
				id      string
				value   float64
				clicked bool
			)
			if err := rows.Scan(&id, &value, &clicked); err != nil {
				rows.Close()
				return err
			}
			if sums[id] == nil {
				sums[id] = &sum{}
			}
			sums[id].n++
			if clicked {
				sums[id].clicked++
			}
			sums[id].value += value
			folded++
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		ids := make([]string, 0, len(sums))
		for id := range sums {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		for _, id := range ids {
			if _, err := tx.Exec(ctx, `UPDATE notifications SET conversions = conversions + $2,
				click_conversions = click_conversions + $3, revenue = revenue + $4 WHERE id = $1`,
				id, sums[id].n, sums[id].clicked, sums[id].value); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("folding conversions: %w", s.mapErr(err))
	}
	return folded, nil
}

// AddInterest records or renews a product interest.
func (s *Store) AddInterest(ctx context.Context, in store.ProductInterest) error {
	if in.Kind != store.InterestPriceDrop && in.Kind != store.InterestBackInStock {
		return fmt.Errorf("adding interest: unknown kind %q", in.Kind)
	}
	n, err := s.db.Write().Exec(ctx, `INSERT INTO product_interests (website_id, product_id, kind, subscriber_id, created_at)
		SELECT website_id, $2, $3, id, $4 FROM subscribers WHERE id = $1 AND website_id = $5
		ON CONFLICT (website_id, product_id, kind, subscriber_id) DO UPDATE SET created_at = excluded.created_at`,
		in.SubscriberID, in.ProductID, in.Kind, s.time(nowOr(in.CreatedAt)), in.WebsiteID)
	if err != nil {
		return fmt.Errorf("adding interest: %w", s.mapErr(err))
	}
	if n == 0 {
		return fmt.Errorf("adding interest: %w", store.ErrNotFound)
	}
	return nil
}

// interestsChunk bounds the rows of one AddInterests statement (5
// arguments each).
const interestsChunk = 400

// AddInterests records the interests (store.Behavior): WriteEvents with
// the interests alone.
func (s *Store) AddInterests(ctx context.Context, list []store.ProductInterest) error {
	_, err := s.WriteEvents(ctx, store.EventWrites{Interests: list})
	return err
}

// interestQueries are the statements recording the interests, one per
// interestsChunk: a VALUES list joined to the subscribers it names (of
// their website), upserted as AddInterest does one. Duplicate keys keep
// the latest time (one statement may not upsert a row twice), and the
// rows are inserted in key order (the SELECT's ORDER BY: the join may
// reorder the VALUES list), so that concurrent batches lock them in one
// order and never deadlock each other (a deadlock with another writer of
// subscribers, erasure say, is retried).
func (s *Store) interestQueries(list []store.ProductInterest) ([]Piped, error) {
	type key struct{ website, product, kind, subscriber string }
	latest := make(map[key]time.Time, len(list))
	for _, in := range list {
		if in.Kind != store.InterestPriceDrop && in.Kind != store.InterestBackInStock {
			return nil, fmt.Errorf("adding interests: unknown kind %q", in.Kind)
		}
		k := key{in.WebsiteID, in.ProductID, in.Kind, in.SubscriberID}
		if t, ok := latest[k]; !ok || nowOr(in.CreatedAt).After(t) {
			latest[k] = nowOr(in.CreatedAt)
		}
	}
	keys := slices.SortedFunc(maps.Keys(latest), func(a, b key) int {
		return cmp.Or(strings.Compare(a.website, b.website), strings.Compare(a.product, b.product),
			strings.Compare(a.kind, b.kind), strings.Compare(a.subscriber, b.subscriber))
	})
	var out []Piped
	for chunk := range slices.Chunk(keys, interestsChunk) {
		rows := padRows(len(chunk), interestsChunk)
		values := make([]string, rows)
		args := make([]any, 0, 5*rows)
		for i := range rows {
			n := len(args)
			// Both engines name a VALUES list's columns column1,
			// column2, ...; the time is cast to its column's type.
			values[i] = fmt.Sprintf("($%d, $%d, $%d, $%d, CAST($%d AS %s))", n+1, n+2, n+3, n+4, n+5, s.d.DDL.Time)
			if i < len(chunk) {
				k := chunk[i]
				args = append(args, k.website, k.product, k.kind, k.subscriber, s.time(latest[k]))
			} else { // a pad row: no subscriber has the empty id
				args = append(args, "", "", "", "", s.time(time.Unix(0, 0)))
			}
		}
		out = append(out, Piped{SQL: `INSERT INTO product_interests (website_id, product_id, kind, subscriber_id, created_at)
			SELECT s.website_id, v.column2, v.column3, s.id, v.column5
			FROM (VALUES ` + strings.Join(values, ", ") + `) AS v
			JOIN subscribers s ON s.id = v.column4 AND s.website_id = v.column1
			WHERE true
			ORDER BY v.column1, v.column2, v.column3, v.column4
			ON CONFLICT (website_id, product_id, kind, subscriber_id) DO UPDATE SET created_at = excluded.created_at`, Args: args})
	}
	return out, nil
}

// PersonRefs reads the ids of the people keys name: those whose subscriber
// id is a key, and those whose external id is, each side from its index.
func (s *Store) PersonRefs(ctx context.Context, websiteID string, keys []string) (map[string]store.PersonRef, error) {
	out := make(map[string]store.PersonRef, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	rows, err := s.db.Read().Query(ctx, `SELECT id, coalesce(external_id, ''), 1 FROM subscribers
			WHERE website_id = $1 AND `+s.d.In("id", "$2")+`
		UNION ALL
		SELECT id, external_id, 0 FROM subscribers
			WHERE website_id = $1 AND `+s.d.In("external_id", "$2"), websiteID, s.d.List(keys))
	type found struct {
		ref  store.PersonRef
		byID int
	}
	list, err := CollectRows(rows, err, func(f *found) []any { return []any{&f.ref.ID, &f.ref.ExternalID, &f.byID} })
	if err != nil {
		return nil, fmt.Errorf("loading people: %w", err)
	}
	for _, f := range list {
		if f.byID == 1 {
			out[f.ref.ID] = f.ref // a subscriber id wins over an external id
		}
	}
	for _, f := range list {
		if _, taken := out[f.ref.ExternalID]; f.byID == 0 && !taken {
			out[f.ref.ExternalID] = f.ref
		}
	}
	return out, nil
}

// PeopleVersion reads the people version, which the triggers of the
// people_version migration move with every change of a subscriber's
// external id and every subscriber deleted.
func (s *Store) PeopleVersion(ctx context.Context) (int64, error) {
	var v int64
	if err := s.db.Read().QueryRow(ctx, `SELECT version FROM people_version`).Scan(&v); err != nil {
		return 0, fmt.Errorf("reading people version: %w", err)
	}
	return v, nil
}

// Interests lists the subscribers' live interests, newest first.
func (s *Store) Interests(ctx context.Context, websiteID string, subscriberIDs []string, since time.Time, limit int) ([]store.ProductInterest, error) {
	if len(subscriberIDs) == 0 {
		return nil, nil
	}
	rows, err := s.db.Read().Query(ctx, `SELECT website_id, subscriber_id, product_id, kind, created_at
		FROM product_interests
		WHERE website_id = $1 AND `+s.d.In("subscriber_id", "$2")+` AND created_at >= $3
		ORDER BY created_at DESC, product_id, kind LIMIT $4`,
		websiteID, s.d.List(subscriberIDs), s.time(since), limit)
	if err != nil {
		return nil, fmt.Errorf("loading interests: %w", err)
	}
	defer rows.Close()
	var out []store.ProductInterest
	for rows.Next() {
		var in store.ProductInterest
		if err := rows.Scan(&in.WebsiteID, &in.SubscriberID, &in.ProductID, &in.Kind, timeDest{&in.CreatedAt}); err != nil {
			return nil, fmt.Errorf("loading interests: %w", err)
		}
		out = append(out, in)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("loading interests: %w", err)
	}
	return out, nil
}

// interestedFrom is the subscribed people interested in a product ($1
// website, $2 product, $3 kind, $4 since), newest interest first.
const interestedFrom = `FROM product_interests i
	JOIN subscribers s ON s.id = i.subscriber_id
	WHERE i.website_id = $1 AND i.product_id = $2 AND i.kind = $3 AND i.created_at >= $4
	  AND s.unsubscribed_at IS NULL AND s.browsers > 0`

// CreateProductAlert stores a product alert and fixes its audience.
func (s *Store) CreateProductAlert(ctx context.Context, n *store.Notification, a store.ProductAlert) (store.AlertResult, error) {
	if n.ID == "" {
		n.ID = store.NewID()
	}
	if n.CreatedAt.IsZero() {
		n.CreatedAt = s.storedTime(time.Now())
	}
	if a.Max <= 0 {
		return store.AlertResult{}, errors.New("creating product alert: no audience bound")
	}
	var res store.AlertResult
	err := s.db.Tx(ctx, TxOptions{}, func(tx Conn) error {
		res = store.AlertResult{}
		// The mark moves unless the last alert was asked for after
		// DedupeSince: no row back means it was, and this one is deduped.
		// Without DedupeSince it always moves.
		dedupe := a.DedupeSince
		if dedupe.IsZero() {
			dedupe = n.CreatedAt.AddDate(100, 0, 0)
		}
		rows, err := tx.Query(ctx, `INSERT INTO product_alert_marks (website_id, product_id, kind, at) VALUES ($1, $2, $3, $4)
			ON CONFLICT (website_id, product_id, kind) DO UPDATE SET at = excluded.at
			WHERE product_alert_marks.at <= $5
			RETURNING at`, n.WebsiteID, a.ProductID, a.Kind, s.time(n.CreatedAt), s.time(dedupe))
		if err != nil {
			return err
		}
		moved := rows.Next()
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if !moved {
			res.Deduped = true
			return nil
		}
		if _, err := tx.Exec(ctx, `DELETE FROM product_interests WHERE website_id = $1 AND product_id = $2 AND created_at < $3`,
			n.WebsiteID, a.ProductID, s.time(a.Since)); err != nil {
			return err
		}
		var count int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 `+interestedFrom+` LIMIT $5) x`,
			n.WebsiteID, a.ProductID, a.Kind, s.time(a.Since), a.Max+1).Scan(&count); err != nil {
			return err
		}
		if count == 0 {
			return nil
		}
		res.Audience, res.Truncated = min(count, a.Max), count > a.Max
		if err := s.insertNotification(ctx, tx, n); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO alert_audience (notification_id, shard, subscriber_id)
			SELECT $6, s.shard, s.id `+interestedFrom+`
			ORDER BY i.created_at DESC, s.id LIMIT $5`,
			n.WebsiteID, a.ProductID, a.Kind, s.time(a.Since), a.Max, n.ID); err != nil {
			return err
		}
		res.Created = true
		if a.Kind != store.InterestBackInStock {
			return nil
		}
		_, err = tx.Exec(ctx, `DELETE FROM product_interests WHERE website_id = $1 AND product_id = $2 AND kind = $3
			AND subscriber_id IN (SELECT subscriber_id FROM alert_audience WHERE notification_id = $4)`,
			n.WebsiteID, a.ProductID, a.Kind, n.ID)
		return err
	})
	if err != nil {
		return store.AlertResult{}, fmt.Errorf("creating product alert: %w", s.mapErr(err))
	}
	return res, nil
}

// ClaimIdempotency claims a key, or returns the answer stored under it.
func (s *Store) ClaimIdempotency(ctx context.Context, websiteID, scope, key, request string, now, staleBefore time.Time) ([]byte, bool, error) {
	var (
		answer  []byte
		claimed bool
	)
	err := s.db.Tx(ctx, TxOptions{}, func(tx Conn) error {
		answer, claimed = nil, false
		n, err := tx.Exec(ctx, `INSERT INTO idempotency_keys (website_id, scope, key, request, created_at) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (website_id, scope, key) DO NOTHING`, websiteID, scope, key, request, s.time(now))
		if err != nil || n == 1 {
			claimed = err == nil
			return err
		}
		var (
			text *string
			was  string
		)
		if err := tx.QueryRow(ctx, `SELECT answer, request FROM idempotency_keys WHERE website_id = $1 AND scope = $2 AND key = $3 `+s.d.ForUpdate(),
			websiteID, scope, key).Scan(&text, &was); err != nil {
			return err
		}
		if was != request {
			return store.ErrConflict
		}
		if text != nil {
			answer = []byte(*text)
			return nil
		}
		n, err = tx.Exec(ctx, `UPDATE idempotency_keys SET created_at = $4
			WHERE website_id = $1 AND scope = $2 AND key = $3 AND answer IS NULL AND created_at < $5`,
			websiteID, scope, key, s.time(now), s.time(staleBefore))
		claimed = err == nil && n == 1
		return err
	})
	if err != nil {
		return nil, false, fmt.Errorf("claiming idempotency key: %w", s.mapErr(err))
	}
	return answer, claimed, nil
}

// SettleIdempotency stores a claimed key's answer, or releases the claim.
func (s *Store) SettleIdempotency(ctx context.Context, websiteID, scope, key string, answer []byte) error {
	var err error
	if answer == nil {
		_, err = s.db.Write().Exec(ctx, `DELETE FROM idempotency_keys WHERE website_id = $1 AND scope = $2 AND key = $3 AND answer IS NULL`,
			websiteID, scope, key)
	} else {
		_, err = s.db.Write().Exec(ctx, `UPDATE idempotency_keys SET answer = $4 WHERE website_id = $1 AND scope = $2 AND key = $3`,
			websiteID, scope, key, string(answer))
	}
	if err != nil {
		return fmt.Errorf("settling idempotency key: %w", s.mapErr(err))
	}
	return nil
}

// PurgeBehavior forgets what is no longer needed, a statement for each.
func (s *Store) PurgeBehavior(ctx context.Context, p store.BehaviorPurge) (int64, error) {
	var total int64
	for _, q := range []struct {
		sql    string
		before time.Time
	}{
		{`DELETE FROM idempotency_keys WHERE created_at < $1`, p.Keys},
		{`DELETE FROM conversion_credits WHERE folded = true AND at < $1`, p.Credits},
		{`DELETE FROM product_interests WHERE created_at < $1`, p.Interests},
		{`DELETE FROM integration_deliveries WHERE received_at < $1`, p.Deliveries},
		{`DELETE FROM alert_audience WHERE notification_id IN (SELECT id FROM notifications
			WHERE status IN ('sent', 'failed', 'canceled') AND created_at < $1)`, p.Alerts},
	} {
		if q.before.IsZero() {
			continue
		}
		n, err := s.db.Write().Exec(ctx, q.sql, s.time(q.before))
		if err != nil {
			return total, fmt.Errorf("purging behavior: %w", err)
		}
		total += n
	}
	return total, nil
}
