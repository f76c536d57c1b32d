package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/relaybell/relaybell/store"
)

// outboxLock is the first key of the advisory lock that every insert into
// webhook_events holds until it commits; the second is a hash of the schema,
// so stores in different schemas of one database do not wait for each other.
//
// An identity value is taken when a row is inserted, not when it commits, so
// without the lock an event could commit after one with a greater seq that
// a reader has already passed, and never be read. Holding the lock from
// before the insert to the commit makes seq order commit order. It is taken
// last in its transaction, by its last statement (after the notification
// row's lock in ShardDone and RecordInteraction, the endpoint's and the
// subscriber's in UpsertSubscription and DeleteSubscription), so it never
// waits while holding it and is held only for one insert and the commit.
// It does serialize the commits of every transaction that adds an event:
// new subscriptions, visitor unsubscribes, first clicks and finished sends
// of the websites that have an enabled webhook (listened) commit one at a
// time across the cluster; other websites' never take it.
const outboxLock = 0x5242574b // "RBWK"

const insertWebhookEventQuery = `INSERT INTO webhook_events (id, website_id, event, data, created_at)
	VALUES ($1, $2, $3, $4, $5)`

// insertWebhookEvent adds one event to the outbox in tx, under outboxLock;
// it must be the transaction's last statement. An empty id gets a new UUID,
// a zero time the current one.
func insertWebhookEvent(ctx context.Context, tx pgx.Tx, e store.WebhookEvent) error {
	if e.ID == "" {
		e.ID = uuid.NewString()
	}
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext(current_schema()))`, outboxLock); err != nil {
		return fmt.Errorf("locking the outbox: %w", err)
	}
	// Text, not []byte: pgx would send bytes to a json column as a bytea.
	_, err := tx.Exec(ctx, insertWebhookEventQuery, e.ID, e.WebsiteID, e.Event, string(e.Data), now(e.CreatedAt))
	return err
}

// AddWebhookEvent stores one event of the webhook outbox; the store assigns
// its seq. An empty id gets a new UUID, a zero time the current one.
func (s *Store) AddWebhookEvent(ctx context.Context, e store.WebhookEvent) error {
	if !json.Valid(e.Data) {
		return errors.New("adding webhook event: data is not JSON")
	}
	err := s.inTx(ctx, false, func(tx pgx.Tx) error {
		return insertWebhookEvent(ctx, tx, e)
	})
	if err != nil {
		return fmt.Errorf("adding webhook event: %w", mapErr(err))
	}
	return nil
}

// WebhookEvents returns up to limit events of every website after afterSeq,
// oldest first; 0 or less means no limit. Events commit in seq order
// (outboxLock), so a reader continuing after the last seq it read misses
// none.
func (s *Store) WebhookEvents(ctx context.Context, afterSeq int64, limit int) ([]store.WebhookEvent, error) {
	rows, err := s.pool.Query(ctx, `SELECT seq, id, website_id, event, data::text, created_at FROM webhook_events
		WHERE seq > $1 ORDER BY seq LIMIT $2`, afterSeq, limitArg(limit))
	if err != nil {
		return nil, fmt.Errorf("listing webhook events: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.WebhookEvent, error) {
		var (
			e    store.WebhookEvent
			data string
		)
		err := row.Scan(&e.Seq, &e.ID, &e.WebsiteID, &e.Event, &data, &e.CreatedAt)
		e.Data = json.RawMessage(data)
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("listing webhook events: %w", err)
	}
	return out, nil
}

// addNotificationSent adds the notification.sent event of a send that this
// transaction has just turned sent, with its counters as they are now: the
// transaction holds the notification's row lock, so no batch of results can
// change them before it commits.
func addNotificationSent(ctx context.Context, tx pgx.Tx, notificationID string, at time.Time) error {
	var websiteID string
	d := store.NotificationSent{NotificationID: notificationID}
	if err := tx.QueryRow(ctx, `SELECT website_id, recipients, sent, failed, pruned FROM notifications WHERE id = $1`,
		notificationID).Scan(&websiteID, &d.Recipients, &d.Sent, &d.Failed, &d.Pruned); err != nil {
		return fmt.Errorf("reading counters: %w", err)
	}
	return addEvent(ctx, tx, websiteID, store.EventNotificationSent, d, at)
}

// listened reports whether the website has an enabled webhook: the
// service's own events are stored only then, since nothing else could ever
// deliver them (an event is queued for the webhooks enabled when the engine
// reads it), and outboxLock is taken only for websites that have one.
func listened(ctx context.Context, tx pgx.Tx, websiteID string) (bool, error) {
	var on bool
	err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM webhooks WHERE website_id = $1 AND enabled)`, websiteID).Scan(&on)
	return on, err
}

// addEvent adds one of the service's own events to the outbox in tx, with
// data encoded as JSON, a new id and at as its time; as insertWebhookEvent,
// it must be the transaction's last statement.
func addEvent(ctx context.Context, tx pgx.Tx, websiteID, event string, data any, at time.Time) error {
	if on, err := listened(ctx, tx, websiteID); err != nil || !on {
		return err
	}
	b, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("encoding %s event: %w", event, err)
	}
	return insertWebhookEvent(ctx, tx, store.WebhookEvent{WebsiteID: websiteID, Event: event, Data: b, CreatedAt: at})
}
