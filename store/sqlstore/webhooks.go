package sqlstore

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/relaybell/relaybell/store"
)

var _ store.Webhooks = (*Store)(nil)

// webhookOutboxLock is the Lock key that every insert into webhook_events
// holds until it commits (on PostgreSQL the lock is keyed by the schema
// too, so stores in different schemas of one database do not wait for each
// other).
//
// An identity value is taken when a row is inserted, not when it commits,
// so without the lock an event could commit after one with a greater seq
// that a reader has already passed, and never be read. Holding the lock
// from before the insert to the commit makes seq order commit order. It is
// taken last in its transaction, by its last statement (after the
// notification row's lock in ShardsDone and RecordInteraction, the
// endpoint's and the subscriber's in UpsertSubscription and
// DeleteSubscription), so it never waits while holding it and is held only
// for one insert and the commit. It does serialize the commits of every
// transaction that adds an event: new subscriptions, visitor unsubscribes,
// first clicks and finished sends of the websites that have an enabled
// webhook (listened) commit one at a time across the cluster; other
// websites' never take it. SQLite's one writer commits in seq order anyway.
const webhookOutboxLock = 0x5242574b // "RBWK"

// insertWebhookEvent adds one event to the webhook outbox in tx, under
// webhookOutboxLock: it must be the transaction's last statement. An empty
// id gets a new UUID, a zero time the current one. e.Data must be JSON.
func (s *Store) insertWebhookEvent(ctx context.Context, tx Conn, e store.WebhookEvent) error {
	if e.ID == "" {
		e.ID = store.NewID()
	}
	if err := s.d.Lock(ctx, tx, webhookOutboxLock); err != nil {
		return fmt.Errorf("locking the outbox: %w", err)
	}
	// Text, not []byte: pgx would send bytes to a json column as a bytea.
	_, err := tx.Exec(ctx, `INSERT INTO webhook_events (id, website_id, event, data, created_at)
		VALUES ($1, $2, $3, $4, $5)`, e.ID, e.WebsiteID, e.Event, string(e.Data), s.now(e.CreatedAt))
	return err
}

// listened reports whether the website has an enabled webhook: the
// service's own events are stored only then, since nothing else could ever
// deliver them (an event is queued for the webhooks enabled when the engine
// reads it), and webhookOutboxLock is taken only for websites that have
// one.
func (s *Store) listened(ctx context.Context, tx Conn, websiteID string) (bool, error) {
	var on bool
	err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM webhooks WHERE website_id = $1 AND enabled)`,
		websiteID).Scan(&on)
	return on, err
}

// addEvent adds one of the service's own events to the outbox in tx when
// the website has an enabled webhook (listened), with data encoded as JSON,
// a new id and at as its time; as insertWebhookEvent, it must be the
// transaction's last statement.
func (s *Store) addEvent(ctx context.Context, tx Conn, websiteID, event string, data any, at time.Time) error {
	if on, err := s.listened(ctx, tx, websiteID); err != nil || !on {
		return err
	}
	b, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("encoding %s event: %w", event, err)
	}
	return s.insertWebhookEvent(ctx, tx, store.WebhookEvent{WebsiteID: websiteID, Event: event, Data: b, CreatedAt: at})
}

// addNotificationSent adds the notification.sent event of a send that this
// transaction has just turned sent, with its counters as they are now: on
// PostgreSQL the transaction holds the notification's row lock, so no batch
// of results can change them before it commits.
func (s *Store) addNotificationSent(ctx context.Context, tx Conn, notificationID string, at time.Time) error {
	var websiteID string
	d := store.NotificationSent{NotificationID: notificationID}
	if err := tx.QueryRow(ctx, `SELECT website_id, recipients, sent, failed, pruned FROM notifications WHERE id = $1`,
		notificationID).Scan(&websiteID, &d.Recipients, &d.Sent, &d.Failed, &d.Pruned); err != nil {
		return fmt.Errorf("reading counters: %w", err)
	}
	return s.addEvent(ctx, tx, websiteID, store.EventNotificationSent, d, at)
}

// AddWebhookEvent stores one event of the webhook outbox; the store assigns
// its seq. An empty id gets a new UUID, a zero time the current one.
func (s *Store) AddWebhookEvent(ctx context.Context, e store.WebhookEvent) error {
	if !json.Valid(e.Data) {
		return errors.New("adding webhook event: data is not JSON")
	}
	err := s.db.Tx(ctx, TxOptions{}, func(tx Conn) error {
		return s.insertWebhookEvent(ctx, tx, e)
	})
	if err != nil {
		return fmt.Errorf("adding webhook event: %w", s.mapErr(err))
	}
	return nil
}

// WebhookEvents returns up to limit events of every website after afterSeq,
// oldest first; 0 or less means no limit. Events commit in seq order
// (webhookOutboxLock), so a reader continuing after the last seq it read
// misses none.
func (s *Store) WebhookEvents(ctx context.Context, afterSeq int64, limit int) ([]store.WebhookEvent, error) {
	rows, err := s.db.Read().Query(ctx, `SELECT seq, id, website_id, event, data, created_at FROM webhook_events
		WHERE seq > $1 ORDER BY seq LIMIT $2`, afterSeq, limitArg(limit))
	out, err := CollectRows(rows, err, func(e *store.WebhookEvent) []any {
		return []any{&e.Seq, &e.ID, &e.WebsiteID, &e.Event, rawJSONDest{(*[]byte)(&e.Data)}, timeDest{&e.CreatedAt}}
	})
	if err != nil {
		return nil, fmt.Errorf("listing webhook events: %w", err)
	}
	return out, nil
}

const webhookCols = `id, website_id, url, events, secret, enabled, last_status, last_fired_at,
	consecutive_failures, failing_since, disabled_reason, disabled_at, created_at`

func webhookDest(w *store.Webhook) []any {
	return []any{&w.ID, &w.WebsiteID, &w.URL, jsonDest{&w.Events}, &w.Secret, &w.Enabled, &w.LastStatus,
		timePtrDest{&w.LastFiredAt}, &w.ConsecutiveFailures, timePtrDest{&w.FailingSince},
		textDest{&w.DisabledReason}, timePtrDest{&w.DisabledAt}, timeDest{&w.CreatedAt}}
}

// CreateWebhook stores a new webhook; a zero CreatedAt is the current time.
func (s *Store) CreateWebhook(ctx context.Context, w store.Webhook) error {
	events, err := store.EventsJSON(w.Events)
	if err != nil {
		return fmt.Errorf("creating webhook: %w", err)
	}
	_, err = s.db.Write().Exec(ctx, `INSERT INTO webhooks (id, website_id, url, events, secret, enabled, last_status,
		last_fired_at, consecutive_failures, failing_since, disabled_reason, disabled_at, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
		w.ID, w.WebsiteID, w.URL, events, w.Secret, w.Enabled, w.LastStatus, s.timePtr(w.LastFiredAt),
		w.ConsecutiveFailures, s.timePtr(w.FailingSince), nullString(w.DisabledReason), s.timePtr(w.DisabledAt),
		s.now(w.CreatedAt))
	if err != nil {
		return fmt.Errorf("creating webhook: %w", s.mapErr(err))
	}
	return nil
}

// WebhooksOf lists the website's webhooks, newest first.
func (s *Store) WebhooksOf(ctx context.Context, websiteID string) ([]store.Webhook, error) {
	rows, err := s.db.Read().Query(ctx, `SELECT `+webhookCols+` FROM webhooks WHERE website_id = $1
		ORDER BY created_at DESC, seq DESC`, websiteID)
	out, err := CollectRows(rows, err, webhookDest)
	if err != nil {
		return nil, fmt.Errorf("listing webhooks: %w", err)
	}
	return out, nil
}

// Webhook returns one of the website's webhooks.
func (s *Store) Webhook(ctx context.Context, websiteID, id string) (store.Webhook, error) {
	var w store.Webhook
	err := s.db.Read().QueryRow(ctx, `SELECT `+webhookCols+` FROM webhooks WHERE id = $1 AND website_id = $2`,
		id, websiteID).Scan(webhookDest(&w)...)
	if err != nil {
		return store.Webhook{}, fmt.Errorf("loading webhook: %w", s.mapErr(err))
	}
	return w, nil
}

// errorWebhookDisabled is the error of the waiting deliveries that turning
// their webhook off fails.
const errorWebhookDisabled = "webhook disabled"

// failWaitingQuery fails every waiting normal delivery of a webhook that
// has just been turned off (its row locked by the same transaction, so no
// delivery is queued for it meanwhile).
const failWaitingQuery = `UPDATE webhook_deliveries
	SET status = 'failed', error = '` + errorWebhookDisabled + `', next_attempt_at = NULL, leased_until = NULL
	WHERE webhook_id = $1 AND next_attempt_at IS NOT NULL AND NOT one_shot`

// lockWebhook is the row lock of a transaction that changes a webhook row:
// on PostgreSQL FOR NO KEY UPDATE (as an UPDATE takes), which conflicts
// with the queue's FOR SHARE (queueWebhookDeliveryQuery) but not with the
// key-share locks of foreign key checks, so adding a test delivery never
// waits for an attempt's bookkeeping.
func (s *Store) lockWebhook() string { return s.d.LockRows("NO KEY UPDATE") }

// UpdateWebhook changes a webhook in one transaction, holding its row
// (lockWebhook); only the fields the contract lets change edit are written.
func (s *Store) UpdateWebhook(ctx context.Context, websiteID, id string, change func(*store.Webhook) error) (store.Webhook, error) {
	var (
		w         store.Webhook
		changeErr error
	)
	err := s.db.Tx(ctx, TxOptions{}, func(tx Conn) error {
		w, changeErr = store.Webhook{}, nil
		if err := tx.QueryRow(ctx, `SELECT `+webhookCols+` FROM webhooks WHERE id = $1 AND website_id = $2 `+
			s.lockWebhook(), id, websiteID).Scan(webhookDest(&w)...); err != nil {
			return s.mapErr(err)
		}
		old := w
		if changeErr = change(&w); changeErr != nil {
			return changeErr
		}
		w.ID, w.WebsiteID, w.Secret, w.CreatedAt = old.ID, old.WebsiteID, old.Secret, old.CreatedAt
		w.LastStatus, w.LastFiredAt = old.LastStatus, old.LastFiredAt
		events, err := store.EventsJSON(w.Events)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE webhooks SET url = $1, events = $2, enabled = $3, consecutive_failures = $4,
			failing_since = $5, disabled_reason = $6, disabled_at = $7 WHERE id = $8`,
			w.URL, events, w.Enabled, w.ConsecutiveFailures, s.timePtr(w.FailingSince),
			nullString(w.DisabledReason), s.timePtr(w.DisabledAt), id); err != nil {
			return err
		}
		if old.Enabled && !w.Enabled {
			_, err = tx.Exec(ctx, failWaitingQuery, id)
		}
		return err
	})
	if changeErr != nil {
		return store.Webhook{}, changeErr
	}
	if err != nil {
		return store.Webhook{}, fmt.Errorf("updating webhook: %w", err)
	}
	return w, nil
}

// DeleteWebhook removes the webhook; its deliveries go with it (ON DELETE
// CASCADE).
func (s *Store) DeleteWebhook(ctx context.Context, websiteID, id string) error {
	err := affected(s.db.Write().Exec(ctx, `DELETE FROM webhooks WHERE id = $1 AND website_id = $2`, id, websiteID))
	if err != nil {
		return fmt.Errorf("deleting webhook: %w", err)
	}
	return nil
}

// DisableWebhook turns an enabled webhook off, fails its waiting normal
// deliveries and queues mail, in one transaction. Of callers racing, the
// first holds the row (the UPDATE's condition is re-checked on it); the
// others then find it off.
func (s *Store) DisableWebhook(ctx context.Context, websiteID, id, reason string, at time.Time, mail store.Email) (bool, error) {
	if mail.CreatedAt.IsZero() {
		mail.CreatedAt = at
	}
	var done bool
	err := s.db.Tx(ctx, TxOptions{}, func(tx Conn) error {
		done = false
		n, err := tx.Exec(ctx, `UPDATE webhooks SET enabled = false, disabled_reason = $1, disabled_at = $2
			WHERE id = $3 AND website_id = $4 AND enabled`, nullString(reason), s.time(at), id, websiteID)
		if err != nil || n == 0 {
			return err
		}
		if _, err := tx.Exec(ctx, failWaitingQuery, id); err != nil {
			return err
		}
		if err := s.insertEmail(ctx, tx, mail); err != nil {
			return err
		}
		done = true
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("disabling webhook: %w", s.mapErr(err))
	}
	return done, nil
}

const emailCols = `id, recipient, subject, body, content_type, created_at, sent_at`

func emailDest(m *store.Email) []any {
	return []any{&m.ID, &m.To, &m.Subject, &m.Body, textDest{&m.ContentType}, timeDest{&m.CreatedAt}, timePtrDest{&m.SentAt}}
}

// insertEmail queues a message in c; an empty ID gets a new UUID, a zero
// CreatedAt the current time.
func (s *Store) insertEmail(ctx context.Context, c Conn, m store.Email) error {
	if m.ID == "" {
		m.ID = store.NewID()
	}
	_, err := c.Exec(ctx, `INSERT INTO emails (id, recipient, subject, body, content_type, created_at) VALUES ($1, $2, $3, $4, $5, $6)`,
		m.ID, m.To, m.Subject, m.Body, nullString(m.ContentType), s.now(m.CreatedAt))
	return err
}

// AddEmail queues a message; an empty ID gets a new UUID, a zero CreatedAt
// the current time.
func (s *Store) AddEmail(ctx context.Context, m store.Email) error {
	if err := s.insertEmail(ctx, s.db.Write(), m); err != nil {
		return fmt.Errorf("adding email: %w", s.mapErr(err))
	}
	return nil
}

// Emails lists the outbox newest first, at most limit (0 or less: no
// limit); unsent only when asked.
func (s *Store) Emails(ctx context.Context, unsentOnly bool, limit int) ([]store.Email, error) {
	rows, err := s.db.Read().Query(ctx, `SELECT `+emailCols+` FROM emails WHERE NOT $1 OR sent_at IS NULL
		ORDER BY created_at DESC, seq DESC LIMIT $2`, unsentOnly, limitArg(limit))
	out, err := CollectRows(rows, err, emailDest)
	if err != nil {
		return nil, fmt.Errorf("listing emails: %w", err)
	}
	return out, nil
}

// ClaimEmails leases up to limit unsent messages, oldest first, as
// ClaimWebhookDeliveries does: one statement, whose FOR UPDATE SKIP LOCKED
// on PostgreSQL passes over the rows another claim is taking.
func (s *Store) ClaimEmails(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]store.Email, error) {
	if limit <= 0 {
		return nil, nil
	}
	type claimed struct {
		store.Email
		seq int64
	}
	rows, err := s.db.Write().Query(ctx, `UPDATE emails SET leased_until = $1
		WHERE seq IN (SELECT seq FROM emails
			WHERE sent_at IS NULL AND (leased_until IS NULL OR leased_until <= $2)
			ORDER BY created_at, seq LIMIT $3 `+s.d.SkipLocked()+`)
		RETURNING seq, `+emailCols, s.time(now.Add(lease)), s.time(now), limit)
	out, err := CollectRows(rows, err, func(c *claimed) []any {
		return append([]any{&c.seq}, emailDest(&c.Email)...)
	})
	if err != nil {
		return nil, fmt.Errorf("claiming emails: %w", err)
	}
	// RETURNING has no order.
	slices.SortFunc(out, func(a, b claimed) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.seq, b.seq))
	})
	mails := make([]store.Email, len(out))
	for i, c := range out {
		mails[i] = c.Email
	}
	return mails, nil
}

// MarkEmailSent records that a message went out (the first time only) and
// ends its lease. ErrNotFound for an unknown id.
func (s *Store) MarkEmailSent(ctx context.Context, id string, at time.Time) error {
	err := affected(s.db.Write().Exec(ctx, `UPDATE emails SET sent_at = coalesce(sent_at, $1), leased_until = NULL
		WHERE id = $2`, s.time(at), id))
	if err != nil {
		return fmt.Errorf("marking email sent: %w", err)
	}
	return nil
}
