package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/relaybell/relaybell/store"
)

// UpsertSubscription registers a browser subscription:
//
//   - a known endpoint URL (per website) is updated in place, together with
//     its subscriber, and keeps its ids (Created=false);
//   - a new endpoint URL that Replaces a known one (the push service renewed
//     the subscription) takes that endpoint's place: its URL and keys
//     change, its ids stay (Created=false);
//   - a new endpoint joins the subscriber holding ExternalID if there is one
//     (one person, several browsers), otherwise a new subscriber;
//   - a known endpoint registered with an ExternalID held by another
//     subscriber moves to that subscriber; if its own subscriber has no
//     external id yet it takes this one, and if it has a different one the
//     endpoint moves to a new subscriber for the new id (another person
//     logged in on that browser). A subscriber left without endpoints so is
//     marked unsubscribed;
//   - Logout moves a known endpoint whose subscriber has an external id to
//     a new anonymous subscriber; the person it leaves keeps its tags and
//     topics and is not marked unsubscribed (with no endpoint left it has
//     no device).
//
// Language, timezone, country, URL, device and user agent are only
// overwritten when given. The subscriber becomes subscribed again and is
// opted into every given topic slug that exists (any case); with SetTopics
// its other opt-ins are removed. A new endpoint adds the subscriber.created
// event.
//
// On PostgreSQL the endpoint's row stays locked from the first read, so a
// concurrent registration of the same browser waits for this one; two
// registrations racing to create the same endpoint or the same external
// id, or to give a replaced endpoint the new URL: the one that loses runs
// again (RetryUnique) and finds the other's rows. The event is the last
// statement: on PostgreSQL it takes the outbox lock (insertWebhookEvent).
func (s *Store) UpsertSubscription(ctx context.Context, in store.SubscriptionInput) (store.SubscriptionResult, error) {
	var res store.SubscriptionResult
	err := s.db.Tx(ctx, TxOptions{RetryUnique: true}, func(tx Conn) error {
		var (
			created *store.SubscriberCreated
			err     error
		)
		if res, created, err = s.upsertSubscription(ctx, tx, in); err != nil || created == nil {
			return err
		}
		return s.addEvent(ctx, tx, in.WebsiteID, store.EventSubscriberCreated, *created, nowOr(in.At))
	})
	if err != nil {
		return store.SubscriptionResult{}, fmt.Errorf("upserting subscription: %w", s.mapErr(err))
	}
	return res, nil
}

// UpsertSubscriptions registers each browser as UpsertSubscription does,
// one after the other in one transaction (group commit: concurrent
// registrations share its commit), so that a later registration of the
// same browser or person finds an earlier one's rows. They go in the
// order of their websites and endpoint URLs, those of one URL in the
// order given: concurrent batches lock endpoints in one order, and do not
// deadlock on them. Known browsers registering again as the same person
// and new browsers of new subscribers go first, with a few multi-row
// statements for them all (upsertBatch), storing what they would one
// after the other. The subscriber.created events come last, in the
// batch's order (as one after the other), under one outbox lock. Any
// failure fails them all, and nothing is stored: the caller registers
// each alone then.
func (s *Store) UpsertSubscriptions(ctx context.Context, list []store.SubscriptionInput) ([]store.SubscriptionResult, error) {
	out := make([]store.SubscriptionResult, len(list))
	order := make([]int, len(list))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Or(strings.Compare(list[a].WebsiteID, list[b].WebsiteID), strings.Compare(list[a].Endpoint, list[b].Endpoint))
	})
	err := s.db.Tx(ctx, TxOptions{RetryUnique: true}, func(tx Conn) error {
		// created: the subscriber.created event's data of a new endpoint.
		created := make([]*store.SubscriberCreated, len(list))
		// Known browsers registering again as the same person and new
		// browsers of new subscribers first, a few statements for all;
		// the others one after the other.
		slow, err := s.upsertBatch(ctx, tx, list, order, out, created)
		if err != nil {
			return err
		}
		for _, i := range slow {
			res, c, err := s.upsertSubscription(ctx, tx, list[i])
			if err != nil {
				return err
			}
			out[i], created[i] = res, c
		}
		// Last, as addEvent wants: the outbox lock is held from the
		// first insert to the commit.
		listened := map[string]bool{}
		for _, i := range order {
			in := list[i]
			if created[i] == nil {
				continue
			}
			on, seen := listened[in.WebsiteID]
			if !seen {
				var err error
				if on, err = s.listened(ctx, tx, in.WebsiteID); err != nil {
					return err
				}
				listened[in.WebsiteID] = on
			}
			if !on {
				continue
			}
			b, err := json.Marshal(created[i])
			if err != nil {
				return fmt.Errorf("encoding %s event: %w", store.EventSubscriberCreated, err)
			}
			if err := s.insertWebhookEvent(ctx, tx, store.WebhookEvent{WebsiteID: in.WebsiteID,
				Event: store.EventSubscriberCreated, Data: b, CreatedAt: nowOr(in.At)}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("upserting subscriptions: %w", s.mapErr(err))
	}
	return out, nil
}

// upsertSubscription is UpsertSubscription's work in tx but its event: it
// returns the subscriber.created event's data of a new endpoint (nil for
// a known one) for the caller to add last.
func (s *Store) upsertSubscription(ctx context.Context, tx Conn, in store.SubscriptionInput) (store.SubscriptionResult, *store.SubscriberCreated, error) {
	when := nowOr(in.At)
	at := s.time(when)
	var slugs any
	if in.SetTopics || len(in.Topics) > 0 {
		slugs = s.d.List(lowerSlugs(in.Topics))
	}
	var created *store.SubscriberCreated
	res := store.SubscriptionResult{}
	err := func() error {
		var epID, curSub, curExt, curAuth string
		find := func(url string) error {
			err := tx.QueryRow(ctx, `SELECT e.id, e.subscriber_id, coalesce(s.external_id, ''), e.auth
				FROM endpoints e JOIN subscribers s ON s.id = e.subscriber_id
				WHERE e.website_id = $1 AND e.url = $2 `+s.d.ForUpdate("e"),
				in.WebsiteID, url).Scan(&epID, &curSub, &curExt, &curAuth)
			if errors.Is(err, sql.ErrNoRows) {
				return nil
			}
			return err
		}
		// A known browser registering again as the same person (the SDK
		// does on every page view) is updated, and its row locked, by one
		// statement that also finds it; a browser of another person, or
		// one logging out, goes the long way.
		updated := false
		if !in.Logout {
			// The device, in an index, is set apart when it changes
			// (setChanged).
			var device string
			err := tx.QueryRow(ctx, `UPDATE endpoints SET p256dh = $3, auth = $4,
					user_agent = coalesce(nullif($5, ''), user_agent),
					language = coalesce(nullif($8, ''), language),
					last_seen_at = $6
				WHERE website_id = $1 AND url = $2 AND (CAST($7 AS TEXT) = '' OR subscriber_id =
					(SELECT id FROM subscribers WHERE website_id = $1 AND external_id = $7))
				RETURNING id, subscriber_id, device`,
				in.WebsiteID, in.Endpoint, in.P256dh, in.Auth, in.UserAgent, at, in.ExternalID,
				in.Language).Scan(&epID, &curSub, &device)
			switch {
			case err == nil:
				updated, curExt = true, in.ExternalID
				if changes(in.Device, device) {
					if err := s.setChanged(ctx, tx, "endpoints", "device", [][2]any{{epID, in.Device}}); err != nil {
						return err
					}
				}
			case !errors.Is(err, sql.ErrNoRows):
				return err
			}
		}
		// Without an external id the statement above takes any person's
		// browser: none is known by that URL.
		if !updated && (in.Logout || in.ExternalID != "") {
			if err := find(in.Endpoint); err != nil {
				return err
			}
		}
		if epID == "" && in.Replaces != "" && in.Replaces != in.Endpoint {
			if err := find(in.Replaces); err != nil {
				return err
			}
			if !store.ProvesEndpoint(curAuth, in.ReplacesAuth) {
				epID, curSub, curExt = "", "", "" // not its browser: a new endpoint
			}
		}

		// Choose the subscriber the endpoint belongs to from now on.
		target, setExternal, detach := "", false, false
		switch {
		case in.Logout:
			// A known endpoint of a person leaves it for a new subscriber.
			detach = curExt != ""
			if !detach {
				target = curSub
			}
		case in.ExternalID == "" || (epID != "" && curExt == in.ExternalID):
			target = curSub // "" for a new endpoint: new subscriber
		default:
			err := tx.QueryRow(ctx, `SELECT id FROM subscribers WHERE website_id = $1 AND external_id = $2`,
				in.WebsiteID, in.ExternalID).Scan(&target)
			switch {
			case err == nil:
			case !errors.Is(err, sql.ErrNoRows):
				return err
			case epID != "" && curExt == "":
				target, setExternal = curSub, true
			}
		}

		var (
			shard    int
			country  = in.Country  // the subscriber's, as stored
			timezone = in.Timezone // the same
			// learned: the visit is learned here, without reading the
			// time zones again (the website's is the caller's).
			learned bool
			// smartHour is a known subscriber's, as stored (-1: none).
			smartHour = -1
			// language is the subscriber's, as stored: a new endpoint
			// without a language of its own takes it.
			language = in.Language
		)
		newSubscriber := target == ""
		if newSubscriber {
			// A new subscriber holds a browser from its start. Its one
			// visit is its heaviest hour.
			target = store.NewID()
			shard = store.ShardOf(target)
			var smart any
			if in.Visit > 0 && in.SiteTimezone != "" {
				hour := store.LocalHour(when, in.Timezone, in.SiteTimezone)
				smart, learned = hour, true
			}
			if _, err := tx.Exec(ctx, `INSERT INTO subscribers (id, website_id, external_id, country,
				language, timezone, url, shard, created_at, last_seen_at, consent_at, smart_hour)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9, $9, $10)`,
				target, in.WebsiteID, nullString(in.ExternalID), in.Country, in.Language, in.Timezone, in.URL,
				shard, at, smart); err != nil {
				return err
			}
			if learned {
				// The smart hour is set above: learnHour adds the weight
				// and, the hour being it, updates nothing more.
				hour := smart.(int)
				if err := s.learnHour(ctx, tx, target, hour, in.Visit, hour); err != nil {
					return err
				}
			}
		} else {
			// An empty value keeps the stored one (nullif). The columns
			// in an index are set apart, when they change (setChanged).
			err := tx.QueryRow(ctx, `UPDATE subscribers SET
					timezone = coalesce(nullif($2, ''), timezone),
					url = coalesce(nullif($3, ''), url),
					last_seen_at = $4, unsubscribed_at = NULL
				WHERE id = $1 RETURNING shard, country, timezone, language, coalesce(smart_hour, -1),
					EXISTS (SELECT 1 FROM automation_triggers WHERE subscriber_id = $1)`,
				target, in.Timezone, in.URL, at).Scan(&shard, &country, &timezone, &language, &smartHour, &res.Pending)
			if err != nil {
				return err
			}
			if setExternal {
				if _, err := tx.Exec(ctx, `UPDATE subscribers SET external_id = $2 WHERE id = $1`, target, in.ExternalID); err != nil {
					return err
				}
			}
			if changes(in.Country, country) {
				country = in.Country
				if err := s.setChanged(ctx, tx, "subscribers", "country", [][2]any{{target, country}}); err != nil {
					return err
				}
			}
			if changes(in.Language, language) {
				language = in.Language
				if err := s.setChanged(ctx, tx, "subscribers", "language", [][2]any{{target, language}}); err != nil {
					return err
				}
			}
		}

		if epID == "" {
			epID = store.NewEndpointID()
			if _, err := tx.Exec(ctx, `INSERT INTO endpoints (id, website_id, subscriber_id, url, p256dh, auth,
				device, user_agent, language, shard, created_at, last_seen_at)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $11)`,
				epID, in.WebsiteID, target, in.Endpoint, in.P256dh, in.Auth, in.Device, in.UserAgent, language,
				shard, at); err != nil {
				return err
			}
			res.Created = true
			if !newSubscriber { // a new one has it already
				if _, err := tx.Exec(ctx, `UPDATE subscribers SET consent_at = $2 WHERE id = $1 AND consent_at IS NULL`,
					target, at); err != nil {
					return err
				}
			}
		} else if !updated {
			if _, err := tx.Exec(ctx, `UPDATE endpoints SET subscriber_id = $2, shard = $3, url = $4, p256dh = $5, auth = $6,
					device = coalesce(nullif($7, ''), device),
					user_agent = coalesce(nullif($8, ''), user_agent),
					language = coalesce(nullif($10, ''), language),
					last_seen_at = $9
				WHERE id = $1`,
				epID, target, shard, in.Endpoint, in.P256dh, in.Auth, in.Device, in.UserAgent, at, in.Language); err != nil {
				return err
			}
			if curSub != target && !detach {
				if err := s.markUnsubscribedIfEmpty(ctx, tx, []string{curSub}, when); err != nil {
					return err
				}
			}
		}

		if in.SetTopics {
			if _, err := tx.Exec(ctx, `DELETE FROM topic_optins WHERE subscriber_id = $1 AND NOT EXISTS
				(SELECT 1 FROM topics t WHERE t.id = topic_optins.topic_id AND `+s.d.In("lower(t.slug)", "$2")+`)`,
				target, slugs); err != nil {
				return err
			}
		}
		if len(in.Topics) > 0 {
			rows, err := tx.Query(ctx, `INSERT INTO topic_optins (topic_id, subscriber_id, created_at)
				SELECT id, $1, $2 FROM topics WHERE website_id = $3 AND `+s.d.In("lower(slug)", "$4")+`
				ON CONFLICT DO NOTHING RETURNING topic_id`, target, at, in.WebsiteID, slugs)
			if res.OptedIn, err = CollectRows(rows, err, func(id *string) []any { return []any{id} }); err != nil {
				return err
			}
		}
		// The triggers this registration makes are stored with it.
		if res.Created {
			queued, err := s.queueTriggersN(ctx, tx, in.WebsiteID, target, store.TriggerSubscribed, nil, when)
			if err != nil {
				return err
			}
			res.Pending = res.Pending || queued
		}
		queued, err := s.queueTriggersN(ctx, tx, in.WebsiteID, target, store.TriggerTopicOptIn, res.OptedIn, when)
		if err != nil {
			return err
		}
		if res.Created && in.Welcome != nil {
			if err := s.queueWelcome(ctx, tx, in.WebsiteID, epID, target, in.Endpoint, when.Add(*in.Welcome)); err != nil {
				return err
			}
		}
		res.Pending = res.Pending || queued
		switch {
		case in.Visit <= 0 || learned:
		case in.SiteTimezone != "":
			// The subscriber's row is locked by the UPDATE above.
			if err := s.learnHour(ctx, tx, target, store.LocalHour(when, timezone, in.SiteTimezone), in.Visit, smartHour); err != nil {
				return err
			}
		default:
			if err := s.learnActivity(ctx, tx, target, when, in.Visit); err != nil {
				return err
			}
		}
		res.SubscriberID, res.EndpointID = target, epID
		if !res.Created {
			return nil
		}
		// A new endpoint's subscriber holds in.ExternalID: it was found by
		// it or created with it.
		d := store.SubscriberCreated{SubscriberID: target, EndpointID: epID, Device: in.Device, Country: country}
		if ext := in.ExternalID; ext != "" {
			d.ExternalID = &ext
		}
		created = &d
		return nil
	}()
	if err != nil {
		return store.SubscriptionResult{}, nil, err
	}
	return res, created, nil
}

// lowerSlugs returns the topic slugs in lower case, which the queries
// compare with lower(slug): slugs match in any case.
func lowerSlugs(slugs []string) []string {
	out := make([]string, len(slugs))
	for i, slug := range slugs {
		out[i] = strings.ToLower(slug)
	}
	return out
}

// changes says whether a registration's value for an indexed column
// changes what is stored: an empty one keeps it.
func changes(given, stored string) bool {
	return given != "" && given != stored
}

// setChanged sets the column col of the rows of table whose id is each
// row's first value to its second, in one statement for up to
// rowsPerInsert rows.
//
// A browser registering again (the SDK does on every page view) names the
// same device, country and language as before. Set anyway, SQLite deletes
// and inserts their index entries all the same, each a page more in the
// commit's log (four of a registration's seven, with the external id): so
// the registrations' UPDATEs leave those columns out and return what is
// stored, and each is set here where it changes.
func (s *Store) setChanged(ctx context.Context, tx Conn, table, col string, rows [][2]any) error {
	for chunk := range slices.Chunk(rows, rowsPerInsert) {
		args := make([]any, 0, 2*len(chunk))
		for _, r := range chunk {
			args = append(args, r[0], r[1])
		}
		if _, err := tx.Exec(ctx, `UPDATE `+table+` SET `+col+` = v.column2
			FROM (VALUES `+valuesList(len(chunk), 2, nil)+`) AS v
			WHERE `+table+`.id = v.column1`, args...); err != nil {
			return fmt.Errorf("setting %s's %s: %w", table, col, err)
		}
	}
	return nil
}

// markUnsubscribedIfEmpty marks the subscribers left without endpoints
// unsubscribed. On PostgreSQL it locks them first (in id order) and checks
// in a statement of its own, whose snapshot sees the endpoints that a
// registration holding the lock meanwhile added: checking in the UPDATE
// alone could miss them. SQLite's one writer needs no lock.
func (s *Store) markUnsubscribedIfEmpty(ctx context.Context, tx Conn, subscriberIDs []string, at time.Time) error {
	ids := s.d.List(subscriberIDs)
	if lock := s.d.ForUpdate(); lock != "" {
		if _, err := tx.Exec(ctx, `SELECT 1 FROM subscribers WHERE `+s.d.In("id", "$1")+` ORDER BY id `+lock,
			ids); err != nil {
			return err
		}
	}
	_, err := tx.Exec(ctx, `UPDATE subscribers SET unsubscribed_at = $2
		WHERE `+s.d.In("id", "$1")+` AND unsubscribed_at IS NULL
		AND NOT EXISTS (SELECT 1 FROM endpoints e WHERE e.subscriber_id = subscribers.id)`, ids, s.time(at))
	return err
}

const endpointCols = `e.id, e.subscriber_id, e.website_id, e.url, e.p256dh, e.auth, e.device, e.user_agent,
	e.language, e.created_at, e.last_seen_at`

// endpointReturning is endpointCols for RETURNING clauses.
var endpointReturning = strings.ReplaceAll(endpointCols, "e.", "")

func endpointDest(e *store.Endpoint) []any {
	return []any{&e.ID, &e.SubscriberID, &e.WebsiteID, &e.URL, &e.P256dh, &e.Auth, &e.Device, &e.UserAgent,
		&e.Language, timeDest{&e.CreatedAt}, timeDest{&e.LastSeenAt}}
}

// DeleteSubscription removes the website's endpoint with that URL, records
// its removal (the stats' history), marks its subscriber unsubscribed when
// it was the last one and adds the subscriber.unsubscribed event: the
// visitor turned notifications off.
func (s *Store) DeleteSubscription(ctx context.Context, websiteID, endpointURL string) (store.Endpoint, error) {
	var e store.Endpoint
	err := s.db.Tx(ctx, TxOptions{}, func(tx Conn) error {
		at := time.Now()
		if err := s.recordRemovals(ctx, tx, at, "website_id = $2 AND url = $3", websiteID, endpointURL); err != nil {
			return err
		}
		err := tx.QueryRow(ctx, `DELETE FROM endpoints WHERE website_id = $1 AND url = $2
			RETURNING `+endpointReturning, websiteID, endpointURL).Scan(endpointDest(&e)...)
		if err != nil {
			return s.mapErr(err)
		}
		if err := s.markUnsubscribedIfEmpty(ctx, tx, []string{e.SubscriberID}, at); err != nil {
			return err
		}
		return s.addEvent(ctx, tx, websiteID, store.EventSubscriberUnsubscribed,
			store.SubscriberUnsubscribed{SubscriberID: e.SubscriberID, Endpoint: e.URL}, at)
	})
	if err != nil {
		return store.Endpoint{}, fmt.Errorf("deleting subscription: %w", err)
	}
	return e, nil
}

// Endpoint returns one of the website's endpoints by id.
func (s *Store) Endpoint(ctx context.Context, websiteID, id string) (store.Endpoint, error) {
	var e store.Endpoint
	err := s.db.Read().QueryRow(ctx, `SELECT `+endpointCols+` FROM endpoints e WHERE e.id = $1 AND e.website_id = $2`,
		id, websiteID).Scan(endpointDest(&e)...)
	if err != nil {
		return store.Endpoint{}, fmt.Errorf("loading endpoint: %w", s.mapErr(err))
	}
	return e, nil
}

// Endpoints returns the website's endpoints among ids.
func (s *Store) Endpoints(ctx context.Context, websiteID string, ids []string) ([]store.Endpoint, error) {
	if len(ids) == 0 {
		return []store.Endpoint{}, nil
	}
	out, err := readList(ctx, s, endpointDest, `SELECT `+endpointCols+` FROM endpoints e
		WHERE e.website_id = $1 AND `+s.d.In("e.id", "$2"), websiteID, s.d.List(ids))
	if err != nil {
		return nil, fmt.Errorf("loading endpoints: %w", err)
	}
	return out, nil
}

// RecordInteraction counts a delivered or clicked ping once per
// (notification, endpoint, kind) and adds event, if any, to the outbox
// when the ping is new. A notification of another website is
// store.ErrNotFound. The endpoint need not exist any more (it may have been
// pruned or unsubscribed since the push). One transaction records the
// interaction, the counter it adds to and the event.
func (s *Store) RecordInteraction(ctx context.Context, websiteID, notificationID, endpointID, kind string, at time.Time, event *store.WebhookEvent) (bool, error) {
	isNew, err := s.RecordInteractions(ctx, []store.Ping{{WebsiteID: websiteID, NotificationID: notificationID,
		EndpointID: endpointID, Kind: kind, At: at, Event: event}})
	if err != nil || isNew[0] {
		return err == nil, err
	}
	// Counted before, or no notification of the website.
	var found bool
	if err := s.db.Read().QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM notifications WHERE id = $1 AND website_id = $2)`,
		notificationID, websiteID).Scan(&found); err != nil {
		return false, fmt.Errorf("recording interaction: %w", err)
	}
	if !found {
		return false, fmt.Errorf("recording interaction: %w", store.ErrNotFound)
	}
	return false, nil
}

// pingsChunk bounds the rows of one RecordInteractions insert (5
// arguments each).
const pingsChunk = 256

// RecordInteractions records the pings in one transaction: each new
// (notification, endpoint, kind) once, through a VALUES list joined to the
// notifications of the pings' websites, whose RETURNING rows are the new
// ones (the rows go in key order within a statement, so that concurrent
// batches lock them in one order; a deadlock is retried); then one UPDATE
// of each notification's counters, in id order, instead of one a ping (a
// broadcast's receipts all count on its one row), which says whose the
// notification is, so that of pings naming it from several websites the
// one of its own is the new one; then the webhook events of the new pings
// that carry one, last, as insertWebhookEvent requires. A list's rows are
// padded to a power of two with rows that join nothing, so that its
// statements have a few texts, not one a size.
func (s *Store) RecordInteractions(ctx context.Context, pings []store.Ping) ([]bool, error) {
	type key struct{ notification, endpoint, kind, website string }
	first := make(map[key]int, len(pings)) // a key's first ping
	for i, p := range pings {
		if _, err := store.InteractionCounter(p.Kind); err != nil {
			return nil, fmt.Errorf("recording interactions: %w", err)
		}
		if p.Event != nil && !json.Valid(p.Event.Data) {
			return nil, errors.New("recording interactions: event data is not JSON")
		}
		k := key{p.NotificationID, p.EndpointID, p.Kind, p.WebsiteID}
		if _, ok := first[k]; !ok {
			first[k] = i
		}
	}
	keys := slices.SortedFunc(maps.Keys(first), func(a, b key) int {
		return cmp.Or(strings.Compare(a.notification, b.notification), strings.Compare(a.endpoint, b.endpoint),
			strings.Compare(a.kind, b.kind), strings.Compare(a.website, b.website))
	})
	isNew := make([]bool, len(pings))
	err := s.db.Tx(ctx, TxOptions{}, func(tx Conn) error {
		clear(isNew)
		var inserted []key // website unknown yet
		for chunk := range slices.Chunk(keys, pingsChunk) {
			rows := 1
			for rows < len(chunk) {
				rows *= 2
			}
			values := make([]string, rows)
			args := make([]any, 0, 5*rows)
			for i := range rows {
				n := len(args)
				// Both engines name a VALUES list's columns column1,
				// column2, ...; the time is cast to its column's type.
				values[i] = fmt.Sprintf("($%d, $%d, $%d, $%d, CAST($%d AS %s))", n+1, n+2, n+3, n+4, n+5, s.d.DDL.Time)
				if i >= len(chunk) { // padding: no notification has the id ""
					args = append(args, "", "", "", "", args[4])
					continue
				}
				k := chunk[i]
				args = append(args, k.website, k.notification, k.endpoint, k.kind, s.time(nowOr(pings[first[k]].At)))
			}
			// WHERE true: SQLite would read ON CONFLICT as the join's ON.
			found, err := tx.Query(ctx, `INSERT INTO interactions (notification_id, endpoint_id, kind, at)
				SELECT n.id, v.column3, v.column4, v.column5
				FROM (VALUES `+strings.Join(values, ", ")+`) AS v
				JOIN notifications n ON n.id = v.column2 AND n.website_id = v.column1
				WHERE true
				ORDER BY v.column2, v.column3, v.column4
				ON CONFLICT DO NOTHING
				RETURNING notification_id, endpoint_id, kind`, args...)
			if err != nil {
				return err
			}
			for found.Next() {
				var k key
				if err := found.Scan(&k.notification, &k.endpoint, &k.kind); err != nil {
					found.Close()
					return err
				}
				inserted = append(inserted, k)
			}
			found.Close()
			if err := found.Err(); err != nil {
				return err
			}
		}
		added := map[string]*[2]int64{} // notification -> delivered, clicked
		for _, k := range inserted {
			c := added[k.notification]
			if c == nil {
				c = new([2]int64)
				added[k.notification] = c
			}
			if k.kind == store.InteractionClicked {
				c[1]++
			} else {
				c[0]++
			}
		}
		websiteOf := make(map[string]string, len(added))
		for _, id := range slices.Sorted(maps.Keys(added)) {
			var website string
			if err := tx.QueryRow(ctx, `UPDATE notifications SET delivered = delivered + $2, clicked = clicked + $3 WHERE id = $1
				RETURNING website_id`, id, added[id][0], added[id][1]).Scan(&website); err != nil {
				return err
			}
			websiteOf[id] = website
		}
		listened := map[string]bool{}
		for _, k := range inserted {
			k.website = websiteOf[k.notification]
			i := first[k]
			isNew[i] = true
			if _, seen := listened[k.website]; !seen && pings[i].Event != nil {
				// Read before the first event takes the outbox's lock.
				on, err := s.listened(ctx, tx, k.website)
				if err != nil {
					return err
				}
				listened[k.website] = on
			}
		}
		for i, p := range pings {
			if !isNew[i] || p.Event == nil || !listened[p.WebsiteID] {
				continue
			}
			e := *p.Event
			e.WebsiteID = p.WebsiteID
			if e.CreatedAt.IsZero() {
				e.CreatedAt = nowOr(p.At)
			}
			if err := s.insertWebhookEvent(ctx, tx, e); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("recording interactions: %w", s.mapErr(err))
	}
	return isNew, nil
}
