package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/relaybell/relaybell/store"
)

var _ store.Webhooks = (*Store)(nil)

// Lock order: the cursor row, then webhook rows, then their deliveries,
// then e-mails. Claims lock deliveries only, skipping locked ones. Writers
// of a webhook row take FOR NO KEY UPDATE (as UPDATE does): it conflicts
// with the queue's FOR SHARE but not with the key-share locks of foreign
// key checks, so adding a test delivery never waits for an attempt's
// bookkeeping.

// errorWebhookDisabled is the error of the waiting deliveries that turning
// their webhook off fails.
const errorWebhookDisabled = "webhook disabled"

const webhookCols = `id, website_id, url, events, secret, enabled, last_status, last_fired_at,
	consecutive_failures, failing_since, coalesce(disabled_reason, ''), disabled_at, created_at`

func webhookDest(w *store.Webhook) []any {
	return []any{&w.ID, &w.WebsiteID, &w.URL, &w.Events, &w.Secret, &w.Enabled, &w.LastStatus, &w.LastFiredAt,
		&w.ConsecutiveFailures, &w.FailingSince, &w.DisabledReason, &w.DisabledAt, &w.CreatedAt}
}

const deliveryCols = `seq, id, webhook_id, website_id, event, coalesce(event_id, ''), body, status, attempts,
	retries, one_shot, last_status_code, duration_ms, coalesce(error, ''), request_headers,
	coalesce(response_body, ''), created_at, last_attempt_at, next_attempt_at, delivered_at`

func deliveryDest(d *store.WebhookDelivery) []any {
	return []any{&d.Seq, &d.ID, &d.WebhookID, &d.WebsiteID, &d.Event, &d.EventID, &d.Body, &d.Status,
		&d.Attempts, &d.Retries, &d.OneShot, &d.LastStatusCode, &d.DurationMS, &d.Error, &d.RequestHeaders,
		&d.ResponseBody, &d.CreatedAt, &d.LastAttemptAt, &d.NextAttemptAt, &d.DeliveredAt}
}

func collectDelivery(row pgx.CollectableRow) (store.WebhookDelivery, error) {
	var d store.WebhookDelivery
	err := row.Scan(deliveryDest(&d)...)
	return d, err
}

const emailCols = `id, recipient, subject, body, created_at, sent_at`

func emailDest(m *store.Email) []any {
	return []any{&m.ID, &m.To, &m.Subject, &m.Body, &m.CreatedAt, &m.SentAt}
}

// CreateWebhook stores a new webhook; a zero CreatedAt is the current time.
func (s *Store) CreateWebhook(ctx context.Context, w store.Webhook) error {
	events, err := store.EventsJSON(w.Events)
	if err != nil {
		return fmt.Errorf("creating webhook: %w", err)
	}
	_, err = s.pool.Exec(ctx, `INSERT INTO webhooks (id, website_id, url, events, secret, enabled, last_status,
		last_fired_at, consecutive_failures, failing_since, disabled_reason, disabled_at, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
		w.ID, w.WebsiteID, w.URL, events, w.Secret, w.Enabled, w.LastStatus, tsPtr(w.LastFiredAt),
		w.ConsecutiveFailures, tsPtr(w.FailingSince), nullString(w.DisabledReason), tsPtr(w.DisabledAt),
		now(w.CreatedAt))
	if err != nil {
		return fmt.Errorf("creating webhook: %w", mapErr(err))
	}
	return nil
}

// WebhooksOf lists the website's webhooks, newest first.
func (s *Store) WebhooksOf(ctx context.Context, websiteID string) ([]store.Webhook, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+webhookCols+` FROM webhooks WHERE website_id = $1
		ORDER BY created_at DESC, seq DESC`, websiteID)
	if err != nil {
		return nil, fmt.Errorf("listing webhooks: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Webhook, error) {
		var w store.Webhook
		err := row.Scan(webhookDest(&w)...)
		return w, err
	})
	if err != nil {
		return nil, fmt.Errorf("listing webhooks: %w", err)
	}
	return out, nil
}

// Webhook returns one of the website's webhooks.
func (s *Store) Webhook(ctx context.Context, websiteID, id string) (store.Webhook, error) {
	var w store.Webhook
	err := s.pool.QueryRow(ctx, `SELECT `+webhookCols+` FROM webhooks WHERE id = $1 AND website_id = $2`,
		id, websiteID).Scan(webhookDest(&w)...)
	if err != nil {
		return store.Webhook{}, fmt.Errorf("loading webhook: %w", mapErr(err))
	}
	return w, nil
}

// failWaitingQuery fails every waiting normal delivery of a webhook that
// has just been turned off (its row locked by the same transaction, so no
// delivery is queued for it meanwhile).
const failWaitingQuery = `UPDATE webhook_deliveries
	SET status = 'failed', error = '` + errorWebhookDisabled + `', next_attempt_at = NULL, leased_until = NULL
	WHERE webhook_id = $1 AND next_attempt_at IS NOT NULL AND NOT one_shot`

// UpdateWebhook changes a webhook in one transaction, holding its row;
// only the fields the contract lets change edit are written.
func (s *Store) UpdateWebhook(ctx context.Context, websiteID, id string, change func(*store.Webhook) error) (store.Webhook, error) {
	var (
		w         store.Webhook
		changeErr error
	)
	err := s.inTx(ctx, false, func(tx pgx.Tx) error {
		w, changeErr = store.Webhook{}, nil
		if err := tx.QueryRow(ctx, `SELECT `+webhookCols+` FROM webhooks WHERE id = $1 AND website_id = $2 FOR NO KEY UPDATE`,
			id, websiteID).Scan(webhookDest(&w)...); err != nil {
			return mapErr(err)
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
			w.URL, events, w.Enabled, w.ConsecutiveFailures, tsPtr(w.FailingSince),
			nullString(w.DisabledReason), tsPtr(w.DisabledAt), id); err != nil {
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
	err := affected(s.pool.Exec(ctx, `DELETE FROM webhooks WHERE id = $1 AND website_id = $2`, id, websiteID))
	if err != nil {
		return fmt.Errorf("deleting webhook: %w", err)
	}
	return nil
}

// WebhookCursor is the seq of the last outbox event turned into deliveries.
func (s *Store) WebhookCursor(ctx context.Context) (int64, error) {
	var seq int64
	if err := s.pool.QueryRow(ctx, `SELECT seq FROM webhook_cursor WHERE id = 1`).Scan(&seq); err != nil {
		return 0, fmt.Errorf("reading webhook cursor: %w", err)
	}
	return seq, nil
}

// insertDelivery inserts a delivery, taking the website from its webhook
// ($18).
const insertDelivery = `INSERT INTO webhook_deliveries (id, webhook_id, website_id, event, event_id, body,
	status, attempts, retries, one_shot, last_status_code, duration_ms, error, request_headers,
	response_body, created_at, last_attempt_at, next_attempt_at, delivered_at)
	SELECT $1, w.id, w.website_id, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17
	FROM webhooks w WHERE w.id = $18`

// queueDeliveryQuery leaves out a delivery whose webhook is gone or off,
// or which repeats a (webhook, event) pair. FOR SHARE waits for a
// transaction turning the webhook off and then sees it off, so that no
// delivery is left waiting on a disabled webhook.
const queueDeliveryQuery = insertDelivery + ` AND w.enabled FOR SHARE ON CONFLICT DO NOTHING`

// deliveryArgs are insertDelivery's arguments for d.
func deliveryArgs(d store.WebhookDelivery) ([]any, error) {
	headers, err := store.HeadersJSON(d.RequestHeaders)
	if err != nil {
		return nil, err
	}
	return []any{d.ID, d.Event, nullString(d.EventID), d.Body, d.Status, d.Attempts, d.Retries, d.OneShot,
		d.LastStatusCode, d.DurationMS, nullString(d.Error), headers, nullString(d.ResponseBody),
		d.CreatedAt, tsPtr(d.LastAttemptAt), tsPtr(d.NextAttemptAt), tsPtr(d.DeliveredAt), d.WebhookID}, nil
}

// QueueWebhookDeliveries stores the deliveries of the outbox events in
// (from, to] and moves the cursor to to, when it still is at from. The
// cursor's row lock makes nodes doing it at once wait for each other; the
// later ones then find the cursor moved.
func (s *Store) QueueWebhookDeliveries(ctx context.Context, from, to int64, ds []store.WebhookDelivery) (bool, error) {
	args := make([][]any, len(ds))
	for i, d := range ds {
		var err error
		if args[i], err = deliveryArgs(d.WithDefaults(now(d.CreatedAt))); err != nil {
			return false, fmt.Errorf("queuing webhook deliveries: %w", err)
		}
	}
	var moved bool
	err := s.inTx(ctx, false, func(tx pgx.Tx) error {
		moved = false
		var cur int64
		if err := tx.QueryRow(ctx, `SELECT seq FROM webhook_cursor WHERE id = 1 FOR UPDATE`).Scan(&cur); err != nil {
			return err
		}
		if cur != from {
			return nil
		}
		if len(args) > 0 {
			batch := &pgx.Batch{}
			for _, a := range args {
				batch.Queue(queueDeliveryQuery, a...)
			}
			if err := tx.SendBatch(ctx, batch).Close(); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `UPDATE webhook_cursor SET seq = $1 WHERE id = 1`, to); err != nil {
			return err
		}
		moved = true
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("queuing webhook deliveries: %w", err)
	}
	return moved, nil
}

// AddWebhookDelivery stores one delivery whatever its webhook's state.
// ErrNotFound when the webhook is gone, ErrConflict for a repeated id or
// (webhook, event) pair.
func (s *Store) AddWebhookDelivery(ctx context.Context, d store.WebhookDelivery) error {
	args, err := deliveryArgs(d.WithDefaults(now(d.CreatedAt)))
	if err != nil {
		return fmt.Errorf("adding webhook delivery: %w", err)
	}
	if err := affected(s.pool.Exec(ctx, insertDelivery, args...)); err != nil {
		return fmt.Errorf("adding webhook delivery: %w", mapErr(err))
	}
	return nil
}

// ClaimWebhookDeliveries leases up to limit due deliveries in one
// statement: FOR UPDATE SKIP LOCKED passes over the rows another claim is
// taking, and re-checks the lease of those it committed meanwhile.
func (s *Store) ClaimWebhookDeliveries(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]store.WebhookDelivery, error) {
	if limit <= 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `UPDATE webhook_deliveries SET leased_until = $1
		WHERE seq IN (SELECT seq FROM webhook_deliveries
			WHERE next_attempt_at <= $2 AND (leased_until IS NULL OR leased_until <= $2)
			ORDER BY next_attempt_at, seq LIMIT $3
			FOR UPDATE SKIP LOCKED)
		RETURNING `+deliveryCols, ts(now.Add(lease)), ts(now), limit)
	if err != nil {
		return nil, fmt.Errorf("claiming webhook deliveries: %w", err)
	}
	out, err := pgx.CollectRows(rows, collectDelivery)
	if err != nil {
		return nil, fmt.Errorf("claiming webhook deliveries: %w", err)
	}
	// RETURNING has no order.
	slices.SortFunc(out, func(a, b store.WebhookDelivery) int {
		return cmp.Or(a.NextAttemptAt.Compare(*b.NextAttemptAt), cmp.Compare(a.Seq, b.Seq))
	})
	return out, nil
}

// FinishWebhookAttempt records an attempt on the delivery and its webhook
// in one transaction, holding the webhook's row (the failure count) and
// then the delivery's.
func (s *Store) FinishWebhookAttempt(ctx context.Context, a store.WebhookAttempt) (store.Webhook, error) {
	a.At = ts(a.At) // the precision the webhook is returned with
	headers, err := store.HeadersJSON(a.RequestHeaders)
	if err != nil {
		return store.Webhook{}, fmt.Errorf("finishing webhook attempt: %w", err)
	}
	var w store.Webhook
	err = s.inTx(ctx, false, func(tx pgx.Tx) error {
		var webhookID string
		if err := tx.QueryRow(ctx, `SELECT webhook_id FROM webhook_deliveries WHERE id = $1`,
			a.DeliveryID).Scan(&webhookID); err != nil {
			return mapErr(err)
		}
		w = store.Webhook{}
		if err := tx.QueryRow(ctx, `SELECT `+webhookCols+` FROM webhooks WHERE id = $1 FOR NO KEY UPDATE`,
			webhookID).Scan(webhookDest(&w)...); err != nil {
			return mapErr(err)
		}
		var (
			seq     int64
			oneShot bool
			retries int
		)
		if err := tx.QueryRow(ctx, `SELECT seq, one_shot, retries FROM webhook_deliveries WHERE id = $1 FOR UPDATE`,
			a.DeliveryID).Scan(&seq, &oneShot, &retries); err != nil {
			return mapErr(err)
		}
		status, retries, next := store.AttemptOutcome(a, oneShot, retries, &w)
		var code, delivered any
		if a.StatusCode != 0 {
			code = a.StatusCode
		}
		if a.Succeeded {
			delivered = ts(a.At)
		}
		if _, err := tx.Exec(ctx, `UPDATE webhook_deliveries SET status = $1, attempts = attempts + 1, retries = $2,
			one_shot = false, last_status_code = $3, duration_ms = $4, error = $5, request_headers = $6,
			response_body = $7, last_attempt_at = $8, next_attempt_at = $9,
			delivered_at = coalesce($10, delivered_at), leased_until = NULL
			WHERE seq = $11`,
			status, retries, code, a.DurationMS, nullString(a.Error), headers, nullString(a.ResponseBody),
			ts(a.At), tsPtr(next), delivered, seq); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE webhooks SET last_status = $1, last_fired_at = $2, consecutive_failures = $3,
			failing_since = $4 WHERE id = $5`,
			a.StatusCode, ts(a.At), w.ConsecutiveFailures, tsPtr(w.FailingSince), webhookID)
		return err
	})
	if err != nil {
		return store.Webhook{}, fmt.Errorf("finishing webhook attempt: %w", err)
	}
	return w, nil
}

const insertEmailQuery = `INSERT INTO emails (id, recipient, subject, body, created_at) VALUES ($1, $2, $3, $4, $5)`

// DisableWebhook turns an enabled webhook off, fails its waiting normal
// deliveries and queues mail, in one transaction. Of callers racing, the
// first holds the row; the others then find it off.
func (s *Store) DisableWebhook(ctx context.Context, websiteID, id, reason string, at time.Time, mail store.Email) (bool, error) {
	if mail.ID == "" {
		mail.ID = uuid.NewString()
	}
	if mail.CreatedAt.IsZero() {
		mail.CreatedAt = at
	}
	var done bool
	err := s.inTx(ctx, false, func(tx pgx.Tx) error {
		done = false
		tag, err := tx.Exec(ctx, `UPDATE webhooks SET enabled = false, disabled_reason = $1, disabled_at = $2
			WHERE id = $3 AND website_id = $4 AND enabled`, nullString(reason), ts(at), id, websiteID)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		if _, err := tx.Exec(ctx, failWaitingQuery, id); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, insertEmailQuery, mail.ID, mail.To, mail.Subject, mail.Body, ts(mail.CreatedAt)); err != nil {
			return err
		}
		done = true
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("disabling webhook: %w", mapErr(err))
	}
	return done, nil
}

// WebhookDeliveries lists a webhook's deliveries newest first, those with
// Seq below beforeSeq (0: from the newest), at most limit (0 or less: no
// limit).
func (s *Store) WebhookDeliveries(ctx context.Context, webhookID string, beforeSeq int64, limit int) ([]store.WebhookDelivery, error) {
	if beforeSeq <= 0 {
		beforeSeq = math.MaxInt64
	}
	rows, err := s.pool.Query(ctx, `SELECT `+deliveryCols+` FROM webhook_deliveries
		WHERE webhook_id = $1 AND seq < $2 ORDER BY seq DESC LIMIT $3`, webhookID, beforeSeq, limitArg(limit))
	if err != nil {
		return nil, fmt.Errorf("listing webhook deliveries: %w", err)
	}
	out, err := pgx.CollectRows(rows, collectDelivery)
	if err != nil {
		return nil, fmt.Errorf("listing webhook deliveries: %w", err)
	}
	return out, nil
}

// WebhookDelivery returns one delivery of the webhook.
func (s *Store) WebhookDelivery(ctx context.Context, webhookID, id string) (store.WebhookDelivery, error) {
	var d store.WebhookDelivery
	err := s.pool.QueryRow(ctx, `SELECT `+deliveryCols+` FROM webhook_deliveries WHERE id = $1 AND webhook_id = $2`,
		id, webhookID).Scan(deliveryDest(&d)...)
	if err != nil {
		return store.WebhookDelivery{}, fmt.Errorf("loading webhook delivery: %w", mapErr(err))
	}
	return d, nil
}

// ResendWebhookDelivery makes a delivery with no waiting attempt wait for
// one OneShot attempt at the given time. Of resends racing, the first
// holds the row; the others then find an attempt waiting.
func (s *Store) ResendWebhookDelivery(ctx context.Context, webhookID, id string, at time.Time) (store.WebhookDelivery, error) {
	var d store.WebhookDelivery
	err := s.inTx(ctx, false, func(tx pgx.Tx) error {
		d = store.WebhookDelivery{}
		err := tx.QueryRow(ctx, `UPDATE webhook_deliveries SET status = 'pending', one_shot = true,
			next_attempt_at = $1, leased_until = NULL
			WHERE id = $2 AND webhook_id = $3 AND next_attempt_at IS NULL
			RETURNING `+deliveryCols, ts(at), id, webhookID).Scan(deliveryDest(&d)...)
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM webhook_deliveries WHERE id = $1 AND webhook_id = $2)`,
			id, webhookID).Scan(&exists); err != nil {
			return err
		}
		if exists {
			return store.ErrConflict
		}
		return store.ErrNotFound
	})
	if err != nil {
		return store.WebhookDelivery{}, fmt.Errorf("resending webhook delivery: %w", err)
	}
	return d, nil
}

// PruneWebhookLog deletes the deliveries created before the given time and
// the outbox events created before it that the cursor has passed.
func (s *Store) PruneWebhookLog(ctx context.Context, before time.Time) (int64, error) {
	var n int64
	err := s.inTx(ctx, false, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM webhook_deliveries WHERE created_at < $1`, ts(before))
		if err != nil {
			return err
		}
		n = tag.RowsAffected()
		_, err = tx.Exec(ctx, `DELETE FROM webhook_events
			WHERE created_at < $1 AND seq <= (SELECT seq FROM webhook_cursor WHERE id = 1)`, ts(before))
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("pruning webhook log: %w", err)
	}
	return n, nil
}

// AddEmail queues a message; an empty ID gets a new UUID, a zero CreatedAt
// the current time.
func (s *Store) AddEmail(ctx context.Context, m store.Email) error {
	if m.ID == "" {
		m.ID = uuid.NewString()
	}
	if _, err := s.pool.Exec(ctx, insertEmailQuery, m.ID, m.To, m.Subject, m.Body, now(m.CreatedAt)); err != nil {
		return fmt.Errorf("adding email: %w", mapErr(err))
	}
	return nil
}

func collectEmail(row pgx.CollectableRow) (store.Email, error) {
	var m store.Email
	err := row.Scan(emailDest(&m)...)
	return m, err
}

// Emails lists the outbox newest first, at most limit (0 or less: no
// limit); unsent only when asked.
func (s *Store) Emails(ctx context.Context, unsentOnly bool, limit int) ([]store.Email, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+emailCols+` FROM emails WHERE NOT $1 OR sent_at IS NULL
		ORDER BY created_at DESC, seq DESC LIMIT $2`, unsentOnly, limitArg(limit))
	if err != nil {
		return nil, fmt.Errorf("listing emails: %w", err)
	}
	out, err := pgx.CollectRows(rows, collectEmail)
	if err != nil {
		return nil, fmt.Errorf("listing emails: %w", err)
	}
	return out, nil
}

// ClaimEmails leases up to limit unsent messages, oldest first, as
// ClaimWebhookDeliveries does.
func (s *Store) ClaimEmails(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]store.Email, error) {
	if limit <= 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `WITH claimed AS (
			UPDATE emails SET leased_until = $1
			WHERE seq IN (SELECT seq FROM emails
				WHERE sent_at IS NULL AND (leased_until IS NULL OR leased_until <= $2)
				ORDER BY created_at, seq LIMIT $3
				FOR UPDATE SKIP LOCKED)
			RETURNING seq, `+emailCols+`)
		SELECT `+emailCols+` FROM claimed ORDER BY created_at, seq`, ts(now.Add(lease)), ts(now), limit)
	if err != nil {
		return nil, fmt.Errorf("claiming emails: %w", err)
	}
	out, err := pgx.CollectRows(rows, collectEmail)
	if err != nil {
		return nil, fmt.Errorf("claiming emails: %w", err)
	}
	return out, nil
}

// MarkEmailSent records that a message went out (the first time only) and
// ends its lease. ErrNotFound for an unknown id.
func (s *Store) MarkEmailSent(ctx context.Context, id string, at time.Time) error {
	err := affected(s.pool.Exec(ctx, `UPDATE emails SET sent_at = coalesce(sent_at, $1), leased_until = NULL WHERE id = $2`,
		ts(at), id))
	if err != nil {
		return fmt.Errorf("marking email sent: %w", err)
	}
	return nil
}
