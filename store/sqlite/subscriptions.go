package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

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
func (s *Store) UpsertSubscription(ctx context.Context, in store.SubscriptionInput) (store.SubscriptionResult, error) {
	when := now(in.At)
	at := ms(when)
	var res store.SubscriptionResult
	err := s.write(ctx, func(tx wtx) error {
		res = store.SubscriptionResult{}
		var epID, curSub, curExt, curAuth string
		find := func(url string) error {
			err := tx.queryRow(`SELECT e.id, e.subscriber_id, s.external_id, e.auth
				FROM endpoints e JOIN subscribers s ON s.id = e.subscriber_id
				WHERE e.website_id = ? AND e.url = ?`, in.WebsiteID, url).Scan(&epID, &curSub, optString{&curExt}, &curAuth)
			if errors.Is(err, sql.ErrNoRows) {
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
			err := tx.queryRow(`SELECT id FROM subscribers WHERE website_id = ? AND external_id = ?`,
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
			shard   int
			country = in.Country // the subscriber's, as stored
		)
		newSubscriber := target == ""
		if newSubscriber {
			// A new subscriber holds a browser from its start.
			target = uuid.NewString()
			shard = store.ShardOf(target)
			if _, err := tx.exec(`INSERT INTO subscribers (id, website_id, external_id, country,
				language, timezone, url, tags, shard, created_at, last_seen_at, consent_at)
				VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, '{}', ?8, ?9, ?9, ?9)`,
				target, in.WebsiteID, nullString(in.ExternalID), in.Country, in.Language, in.Timezone, in.URL,
				shard, at); err != nil {
				return err
			}
		} else {
			var ext any
			if setExternal {
				ext = in.ExternalID
			}
			err := tx.queryRow(`UPDATE subscribers SET
					external_id = coalesce(?, external_id),
					country = CASE WHEN ? = '' THEN country ELSE ? END,
					language = CASE WHEN ? = '' THEN language ELSE ? END,
					timezone = CASE WHEN ? = '' THEN timezone ELSE ? END,
					url = CASE WHEN ? = '' THEN url ELSE ? END,
					last_seen_at = ?, unsubscribed_at = NULL
				WHERE id = ? RETURNING shard, country`,
				ext, in.Country, in.Country, in.Language, in.Language, in.Timezone, in.Timezone, in.URL, in.URL,
				at, target).Scan(&shard, &country)
			if err != nil {
				return err
			}
		}

		if epID == "" {
			epID = uuid.NewString()
			if _, err := tx.exec(`INSERT INTO endpoints (id, website_id, subscriber_id, url, p256dh, auth,
				device, user_agent, shard, created_at, last_seen_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				epID, in.WebsiteID, target, in.Endpoint, in.P256dh, in.Auth, in.Device, in.UserAgent, shard, at, at); err != nil {
				return err
			}
			res.Created = true
			if !newSubscriber { // a new one has it already
				if _, err := tx.exec(`UPDATE subscribers SET consent_at = ? WHERE id = ? AND consent_at IS NULL`, at, target); err != nil {
					return err
				}
			}
		} else {
			if _, err := tx.exec(`UPDATE endpoints SET subscriber_id = ?, shard = ?, url = ?, p256dh = ?, auth = ?,
					device = CASE WHEN ? = '' THEN device ELSE ? END,
					user_agent = CASE WHEN ? = '' THEN user_agent ELSE ? END,
					last_seen_at = ?
				WHERE id = ?`,
				target, shard, in.Endpoint, in.P256dh, in.Auth, in.Device, in.Device, in.UserAgent, in.UserAgent,
				at, epID); err != nil {
				return err
			}
			if curSub != target && !detach {
				if err := markUnsubscribedIfEmpty(tx, curSub, at); err != nil {
					return err
				}
			}
		}

		if in.SetTopics {
			slugs, err := json.Marshal(append([]string{}, in.Topics...))
			if err != nil {
				return err
			}
			if _, err := tx.exec(`DELETE FROM topic_optins WHERE subscriber_id = ?1 AND topic_id NOT IN
				(SELECT id FROM topics WHERE website_id = ?2 AND slug IN (SELECT value FROM json_each(?3)))`,
				target, in.WebsiteID, string(slugs)); err != nil {
				return err
			}
		}
		for _, slug := range in.Topics {
			if _, err := tx.exec(`INSERT OR IGNORE INTO topic_optins (topic_id, subscriber_id, created_at)
				SELECT id, ?, ? FROM topics WHERE website_id = ? AND slug = ?`, target, at, in.WebsiteID, slug); err != nil {
				return err
			}
		}
		if in.Visit > 0 {
			if err := learnActivity(tx, target, when, in.Visit); err != nil {
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
		return addEvent(tx, in.WebsiteID, store.EventSubscriberCreated, d, at)
	})
	if err != nil {
		return store.SubscriptionResult{}, fmt.Errorf("upserting subscription: %w", mapErr(err))
	}
	return res, nil
}

// markUnsubscribedIfEmpty marks a subscriber without endpoints unsubscribed.
func markUnsubscribedIfEmpty(tx wtx, subscriberID string, at int64) error {
	_, err := tx.exec(`UPDATE subscribers SET unsubscribed_at = ?
		WHERE id = ? AND unsubscribed_at IS NULL
		AND NOT EXISTS (SELECT 1 FROM endpoints WHERE subscriber_id = ?)`, at, subscriberID, subscriberID)
	return err
}

const endpointCols = `e.id, e.subscriber_id, e.website_id, e.url, e.p256dh, e.auth, e.device, e.user_agent,
	e.created_at, e.last_seen_at`

// endpointReturning is endpointCols for RETURNING clauses.
var endpointReturning = strings.ReplaceAll(endpointCols, "e.", "")

func endpointDest(e *store.Endpoint) []any {
	return []any{&e.ID, &e.SubscriberID, &e.WebsiteID, &e.URL, &e.P256dh, &e.Auth, &e.Device, &e.UserAgent,
		msTime{&e.CreatedAt}, msTime{&e.LastSeenAt}}
}

// DeleteSubscription removes the website's endpoint with that URL, marks
// its subscriber unsubscribed when it was the last one and adds the
// subscriber.unsubscribed event: the visitor turned notifications off.
func (s *Store) DeleteSubscription(ctx context.Context, websiteID, endpointURL string) (store.Endpoint, error) {
	var e store.Endpoint
	err := s.write(ctx, func(tx wtx) error {
		err := tx.queryRow(`DELETE FROM endpoints WHERE website_id = ? AND url = ?
			RETURNING `+endpointReturning, websiteID, endpointURL).Scan(endpointDest(&e)...)
		if err != nil {
			return notFound(err)
		}
		at := ms(time.Now())
		if err := markUnsubscribedIfEmpty(tx, e.SubscriberID, at); err != nil {
			return err
		}
		return addEvent(tx, websiteID, store.EventSubscriberUnsubscribed,
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
	err := s.r.queryRow(ctx, `SELECT `+endpointCols+` FROM endpoints e WHERE e.id = ? AND e.website_id = ?`,
		id, websiteID).Scan(endpointDest(&e)...)
	if err != nil {
		return store.Endpoint{}, fmt.Errorf("loading endpoint: %w", notFound(err))
	}
	return e, nil
}

// RecordInteraction counts a delivered or clicked ping once per
// (notification, endpoint, kind) and adds event, if any, to the outbox
// when the ping is new. A notification of another website is
// store.ErrNotFound. The endpoint need not exist any more (it may have been
// pruned or unsubscribed since the push).
func (s *Store) RecordInteraction(ctx context.Context, websiteID, notificationID, endpointID, kind string, at time.Time, event *store.WebhookEvent) (bool, error) {
	counter, err := store.InteractionCounter(kind)
	if err != nil {
		return false, fmt.Errorf("recording interaction: %w", err)
	}
	if event != nil && !json.Valid(event.Data) {
		return false, errors.New("recording interaction: event data is not JSON")
	}
	var isNew bool
	err = s.write(ctx, func(tx wtx) error {
		isNew = false
		var n int
		if err := tx.queryRow(`SELECT count(*) FROM notifications WHERE id = ? AND website_id = ?`,
			notificationID, websiteID).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return store.ErrNotFound
		}
		res, err := tx.exec(`INSERT OR IGNORE INTO interactions (notification_id, endpoint_id, kind, at)
			VALUES (?, ?, ?, ?)`, notificationID, endpointID, kind, ms(now(at)))
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return err
		}
		isNew = true
		if _, err := tx.exec(`UPDATE notifications SET `+counter+` = `+counter+` + 1 WHERE id = ?`, notificationID); err != nil {
			return err
		}
		if event == nil {
			return nil
		}
		if on, err := listened(tx, websiteID); err != nil || !on {
			return err
		}
		e := *event
		e.WebsiteID = websiteID
		if e.CreatedAt.IsZero() {
			e.CreatedAt = at
		}
		return insertWebhookEvent(tx, e)
	})
	if err != nil {
		return false, fmt.Errorf("recording interaction: %w", err)
	}
	return isNew, nil
}
