package sqlite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/store"
)

const insertWebhookEventQuery = `INSERT INTO webhook_events (id, website_id, event, data, created_at)
	VALUES (?, ?, ?, ?, ?)`

// AddWebhookEvent stores one event of the webhook outbox; the store assigns
// its seq. An empty id gets a new UUID, a zero time the current one.
func (s *Store) AddWebhookEvent(ctx context.Context, e store.WebhookEvent) error {
	if !json.Valid(e.Data) {
		return errors.New("adding webhook event: data is not JSON")
	}
	err := s.write(ctx, func(tx wtx) error {
		return insertWebhookEvent(tx, e)
	})
	if err != nil {
		return fmt.Errorf("adding webhook event: %w", mapErr(err))
	}
	return nil
}

// insertWebhookEvent adds one event to the outbox in tx. An empty id gets a
// new UUID, a zero time the current one.
func insertWebhookEvent(tx wtx, e store.WebhookEvent) error {
	if e.ID == "" {
		e.ID = uuid.NewString()
	}
	_, err := tx.exec(insertWebhookEventQuery, e.ID, e.WebsiteID, e.Event, string(e.Data), ms(now(e.CreatedAt)))
	return err
}

// listened reports whether the website has an enabled webhook: the
// service's own events are stored only then, since nothing else could ever
// deliver them (an event is queued for the webhooks enabled when the engine
// reads it).
func listened(tx wtx, websiteID string) (bool, error) {
	var on bool
	err := tx.queryRow(`SELECT EXISTS (SELECT 1 FROM webhooks WHERE website_id = ? AND enabled)`, websiteID).Scan(&on)
	return on, err
}

// addEvent adds one of the service's own events to the outbox in tx, with
// data encoded as JSON, a new id and at (unix milliseconds) as its time,
// when the website has an enabled webhook (listened).
func addEvent(tx wtx, websiteID, event string, data any, at int64) error {
	if on, err := listened(tx, websiteID); err != nil || !on {
		return err
	}
	b, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("encoding %s event: %w", event, err)
	}
	_, err = tx.exec(insertWebhookEventQuery, uuid.NewString(), websiteID, event, string(b), at)
	return err
}

// WebhookEvents returns up to limit events of every website after afterSeq,
// oldest first; 0 or less means no limit. With one writer, seqs commit in
// increasing order, so a reader continuing after the last seq it read
// misses none.
func (s *Store) WebhookEvents(ctx context.Context, afterSeq int64, limit int) ([]store.WebhookEvent, error) {
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	rows, err := s.r.query(ctx, `SELECT seq, id, website_id, event, data, created_at FROM webhook_events
		WHERE seq > ? ORDER BY seq LIMIT ?`, afterSeq, limit)
	if err != nil {
		return nil, fmt.Errorf("listing webhook events: %w", err)
	}
	defer rows.Close()
	var out []store.WebhookEvent
	for rows.Next() {
		var (
			e    store.WebhookEvent
			data string
		)
		if err := rows.Scan(&e.Seq, &e.ID, &e.WebsiteID, &e.Event, &data, msTime{&e.CreatedAt}); err != nil {
			return nil, fmt.Errorf("listing webhook events: %w", err)
		}
		e.Data = json.RawMessage(data)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing webhook events: %w", err)
	}
	return out, nil
}

// addNotificationSent adds the notification.sent event of a send that has
// just become sent, with its counters as this transaction reads them.
func addNotificationSent(tx wtx, notificationID string, at int64) error {
	var (
		websiteID string
		d         = store.NotificationSent{NotificationID: notificationID}
	)
	if err := tx.queryRow(`SELECT website_id, recipients, sent, failed, pruned FROM notifications WHERE id = ?`,
		notificationID).Scan(&websiteID, &d.Recipients, &d.Sent, &d.Failed, &d.Pruned); err != nil {
		return fmt.Errorf("reading counters: %w", err)
	}
	return addEvent(tx, websiteID, store.EventNotificationSent, d, at)
}
