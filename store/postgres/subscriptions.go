package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

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
// Two registrations racing to create the same endpoint or the same external
// id, or to give a replaced endpoint the new URL: the one that loses runs
// again and finds the other's rows.
func (s *Store) UpsertSubscription(ctx context.Context, in store.SubscriptionInput) (store.SubscriptionResult, error) {
	at := now(in.At)
	slugs := lower(in.Topics)
	var res store.SubscriptionResult
	err := s.inTx(ctx, true, func(tx pgx.Tx) error {
		res = store.SubscriptionResult{}
		var epID, curSub, curExt, curAuth string
		// The endpoint row stays locked: a concurrent registration of the
		// same browser waits for this one.
		find := func(url string) error {
			err := tx.QueryRow(ctx, `SELECT e.id, e.subscriber_id, coalesce(s.external_id, ''), e.auth
				FROM endpoints e JOIN subscribers s ON s.id = e.subscriber_id
				WHERE e.website_id = $1 AND e.url = $2 FOR UPDATE OF e`, in.WebsiteID, url).Scan(&epID, &curSub, &curExt, &curAuth)
			if errors.Is(err, pgx.ErrNoRows) {
				return nil
			}
			return err
		}
		if err := find(in.Endpoint); err != nil {
			return err
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
			case !errors.Is(err, pgx.ErrNoRows):
				return err
			case epID != "" && curExt == "":
				target, setExternal = curSub, true
			}
		}

		var (
			shard   int
			country = in.Country // the subscriber's, as stored
		)
		newSubscriber := target == ""
		if newSubscriber {
			// A new subscriber holds a browser from its start.
			target = uuid.NewString()
			shard = store.ShardOf(target)
			if _, err := tx.Exec(ctx, `INSERT INTO subscribers (id, website_id, external_id, country,
				language, timezone, url, shard, created_at, last_seen_at, consent_at)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9, $9)`,
				target, in.WebsiteID, nullString(in.ExternalID), in.Country, in.Language, in.Timezone, in.URL,
				shard, at); err != nil {
				return err
			}
		} else {
			var ext any
			if setExternal {
				ext = in.ExternalID
			}
			err := tx.QueryRow(ctx, `UPDATE subscribers SET
					external_id = coalesce($2::text, external_id),
					country = CASE WHEN $3::text = '' THEN country ELSE $3 END,
					language = CASE WHEN $4::text = '' THEN language ELSE $4 END,
					timezone = CASE WHEN $5::text = '' THEN timezone ELSE $5 END,
					url = CASE WHEN $6::text = '' THEN url ELSE $6 END,
					last_seen_at = $7, unsubscribed_at = NULL
				WHERE id = $1 RETURNING shard, country`,
				target, ext, in.Country, in.Language, in.Timezone, in.URL, at).Scan(&shard, &country)
			if err != nil {
				return err
			}
		}

		if epID == "" {
			epID = uuid.NewString()
			if _, err := tx.Exec(ctx, `INSERT INTO endpoints (id, website_id, subscriber_id, url, p256dh, auth,
				device, user_agent, shard, created_at, last_seen_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10)`,
				epID, in.WebsiteID, target, in.Endpoint, in.P256dh, in.Auth, in.Device, in.UserAgent, shard, at); err != nil {
				return err
			}
			res.Created = true
			if !newSubscriber { // a new one has it already
				if _, err := tx.Exec(ctx, `UPDATE subscribers SET consent_at = $2 WHERE id = $1 AND consent_at IS NULL`,
					target, at); err != nil {
					return err
				}
			}
		} else {
			if _, err := tx.Exec(ctx, `UPDATE endpoints SET subscriber_id = $2, shard = $3, url = $4, p256dh = $5, auth = $6,
					device = CASE WHEN $7::text = '' THEN device ELSE $7 END,
					user_agent = CASE WHEN $8::text = '' THEN user_agent ELSE $8 END,
					last_seen_at = $9
				WHERE id = $1`,
				epID, target, shard, in.Endpoint, in.P256dh, in.Auth, in.Device, in.UserAgent, at); err != nil {
				return err
			}
			if curSub != target && !detach {
				if err := markUnsubscribedIfEmpty(ctx, tx, []string{curSub}, at); err != nil {
					return err
				}
			}
		}

		if in.SetTopics {
			if _, err := tx.Exec(ctx, `DELETE FROM topic_optins o WHERE o.subscriber_id = $1 AND NOT EXISTS
				(SELECT 1 FROM topics t WHERE t.id = o.topic_id AND lower(t.slug) = ANY ($2::text[]))`,
				target, slugs); err != nil {
				return err
			}
		}
		if len(slugs) > 0 {
			if _, err := tx.Exec(ctx, `INSERT INTO topic_optins (topic_id, subscriber_id, created_at)
				SELECT id, $1, $2 FROM topics WHERE website_id = $3 AND lower(slug) = ANY ($4::text[])
				ON CONFLICT DO NOTHING`, target, at, in.WebsiteID, slugs); err != nil {
				return err
			}
		}
		if in.Visit > 0 {
			if err := learnActivity(ctx, tx, target, at, in.Visit); err != nil {
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
		return addEvent(ctx, tx, in.WebsiteID, store.EventSubscriberCreated, d, at)
	})
	if err != nil {
		return store.SubscriptionResult{}, fmt.Errorf("upserting subscription: %w", mapErr(err))
	}
	return res, nil
}

// markUnsubscribedIfEmpty marks the subscribers left without endpoints
// unsubscribed. It locks them first (in id order) and checks in a statement
// of its own, whose snapshot sees the endpoints that a registration holding
// the lock meanwhile added: checking in the UPDATE alone could miss them.
func markUnsubscribedIfEmpty(ctx context.Context, tx pgx.Tx, subscriberIDs []string, at time.Time) error {
	if _, err := tx.Exec(ctx, `SELECT 1 FROM subscribers WHERE id = ANY ($1::text[]) ORDER BY id FOR UPDATE`,
		subscriberIDs); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `UPDATE subscribers s SET unsubscribed_at = $2
		WHERE s.id = ANY ($1::text[]) AND s.unsubscribed_at IS NULL
		AND NOT EXISTS (SELECT 1 FROM endpoints e WHERE e.subscriber_id = s.id)`, subscriberIDs, at)
	return err
}

const endpointCols = `e.id, e.subscriber_id, e.website_id, e.url, e.p256dh, e.auth, e.device, e.user_agent,
	e.created_at, e.last_seen_at`

// endpointReturning is endpointCols for RETURNING clauses.
var endpointReturning = strings.ReplaceAll(endpointCols, "e.", "")

func endpointDest(e *store.Endpoint) []any {
	return []any{&e.ID, &e.SubscriberID, &e.WebsiteID, &e.URL, &e.P256dh, &e.Auth, &e.Device, &e.UserAgent,
		&e.CreatedAt, &e.LastSeenAt}
}

// DeleteSubscription removes the website's endpoint with that URL, marks
// its subscriber unsubscribed when it was the last one and adds the
// subscriber.unsubscribed event: the visitor turned notifications off.
func (s *Store) DeleteSubscription(ctx context.Context, websiteID, endpointURL string) (store.Endpoint, error) {
	var e store.Endpoint
	err := s.inTx(ctx, false, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `DELETE FROM endpoints WHERE website_id = $1 AND url = $2
			RETURNING `+endpointReturning, websiteID, endpointURL).Scan(endpointDest(&e)...)
		if err != nil {
			return mapErr(err)
		}
		at := now(time.Time{})
		if err := markUnsubscribedIfEmpty(ctx, tx, []string{e.SubscriberID}, at); err != nil {
			return err
		}
		return addEvent(ctx, tx, websiteID, store.EventSubscriberUnsubscribed,
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
	err := s.pool.QueryRow(ctx, `SELECT `+endpointCols+` FROM endpoints e WHERE e.id = $1 AND e.website_id = $2`,
		id, websiteID).Scan(endpointDest(&e)...)
	if err != nil {
		return store.Endpoint{}, fmt.Errorf("loading endpoint: %w", mapErr(err))
	}
	return e, nil
}

// RecordInteraction counts a delivered or clicked ping once per
// (notification, endpoint, kind) and adds event, if any, to the outbox
// when the ping is new. A notification of another website is
// store.ErrNotFound. The endpoint need not exist any more (it may have been
// pruned or unsubscribed since the push). One statement records the
// interaction and the counter it adds to; with an event, a transaction
// holds it and the event's insert.
func (s *Store) RecordInteraction(ctx context.Context, websiteID, notificationID, endpointID, kind string, at time.Time, event *store.WebhookEvent) (bool, error) {
	counter, err := store.InteractionCounter(kind)
	if err != nil {
		return false, fmt.Errorf("recording interaction: %w", err)
	}
	if event != nil && !json.Valid(event.Data) {
		return false, errors.New("recording interaction: event data is not JSON")
	}
	at = now(at)
	var found, isNew bool
	record := func(q querier) error {
		return q.QueryRow(ctx, `WITH n AS (
			SELECT id FROM notifications WHERE id = $1 AND website_id = $2
		), ins AS (
			INSERT INTO interactions (notification_id, endpoint_id, kind, at)
			SELECT n.id, $3, $4, $5 FROM n
			ON CONFLICT DO NOTHING
			RETURNING 1
		), upd AS (
			UPDATE notifications SET `+counter+` = `+counter+` + 1
			WHERE id = $1 AND EXISTS (SELECT 1 FROM ins)
		)
		SELECT EXISTS (SELECT 1 FROM n), EXISTS (SELECT 1 FROM ins)`,
			notificationID, websiteID, endpointID, kind, at).Scan(&found, &isNew)
	}
	if event == nil {
		err = record(s.pool)
	} else {
		err = s.inTx(ctx, false, func(tx pgx.Tx) error {
			if err := record(tx); err != nil || !isNew {
				return err
			}
			if on, err := listened(ctx, tx, websiteID); err != nil || !on {
				return err
			}
			e := *event
			e.WebsiteID = websiteID
			if e.CreatedAt.IsZero() {
				e.CreatedAt = at
			}
			return insertWebhookEvent(ctx, tx, e)
		})
	}
	if err == nil && !found {
		err = store.ErrNotFound
	}
	if err != nil {
		return false, fmt.Errorf("recording interaction: %w", mapErr(err))
	}
	return isNew, nil
}

// lower returns the slugs in lower case (topic slugs match in any case).
func lower(slugs []string) []string {
	out := make([]string, len(slugs))
	for i, s := range slugs {
		out[i] = strings.ToLower(s)
	}
	return out
}
