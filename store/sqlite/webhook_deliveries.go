package sqlite

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/store"
)

var _ store.Webhooks = (*Store)(nil)

// errorWebhookDisabled is the error of the waiting deliveries that turning
// their webhook off fails.
const errorWebhookDisabled = "webhook disabled"

const webhookCols = `id, website_id, url, events, secret, enabled, last_status, last_fired_at,
	consecutive_failures, failing_since, disabled_reason, disabled_at, created_at`

func webhookDest(w *store.Webhook) []any {
	return []any{&w.ID, &w.WebsiteID, &w.URL, jsonText{&w.Events}, &w.Secret, &w.Enabled, &w.LastStatus,
		msTimePtr{&w.LastFiredAt}, &w.ConsecutiveFailures, msTimePtr{&w.FailingSince},
		optString{&w.DisabledReason}, msTimePtr{&w.DisabledAt}, msTime{&w.CreatedAt}}
}

const deliveryCols = `seq, id, webhook_id, website_id, event, event_id, body, status, attempts, retries,
	one_shot, last_status_code, duration_ms, error, request_headers, response_body, created_at,
	last_attempt_at, next_attempt_at, delivered_at`

func deliveryDest(d *store.WebhookDelivery) []any {
	return []any{&d.Seq, &d.ID, &d.WebhookID, &d.WebsiteID, &d.Event, optString{&d.EventID}, &d.Body,
		&d.Status, &d.Attempts, &d.Retries, &d.OneShot, &d.LastStatusCode, &d.DurationMS,
		optString{&d.Error}, jsonText{&d.RequestHeaders}, optString{&d.ResponseBody}, msTime{&d.CreatedAt},
		msTimePtr{&d.LastAttemptAt}, msTimePtr{&d.NextAttemptAt}, msTimePtr{&d.DeliveredAt}}
}

const emailCols = `id, recipient, subject, body, created_at, sent_at`

func emailDest(m *store.Email) []any {
	return []any{&m.ID, &m.To, &m.Subject, &m.Body, msTime{&m.CreatedAt}, msTimePtr{&m.SentAt}}
}

// CreateWebhook stores a new webhook; a zero CreatedAt is the current time.
func (s *Store) CreateWebhook(ctx context.Context, w store.Webhook) error {
	events, err := store.EventsJSON(w.Events)
	if err != nil {
		return fmt.Errorf("creating webhook: %w", err)
	}
	err = s.write(ctx, func(tx wtx) error {
		_, err := tx.exec(`INSERT INTO webhooks (id, website_id, url, events, secret, enabled, last_status,
			last_fired_at, consecutive_failures, failing_since, disabled_reason, disabled_at, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			w.ID, w.WebsiteID, w.URL, events, w.Secret, w.Enabled, w.LastStatus, msPtr(w.LastFiredAt),
			w.ConsecutiveFailures, msPtr(w.FailingSince), nullString(w.DisabledReason), msPtr(w.DisabledAt),
			ms(now(w.CreatedAt)))
		return err
	})
	if err != nil {
		return fmt.Errorf("creating webhook: %w", mapErr(err))
	}
	return nil
}

// WebhooksOf lists the website's webhooks, newest first.
func (s *Store) WebhooksOf(ctx context.Context, websiteID string) ([]store.Webhook, error) {
	rows, err := s.r.query(ctx, `SELECT `+webhookCols+` FROM webhooks WHERE website_id = ?
		ORDER BY created_at DESC, seq DESC`, websiteID)
	if err != nil {
		return nil, fmt.Errorf("listing webhooks: %w", err)
	}
	defer rows.Close()
	var out []store.Webhook
	for rows.Next() {
		var w store.Webhook
		if err := rows.Scan(webhookDest(&w)...); err != nil {
			return nil, fmt.Errorf("listing webhooks: %w", err)
		}
		out = append(out, w)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing webhooks: %w", err)
	}
	return out, nil
}

// Webhook returns one of the website's webhooks.
func (s *Store) Webhook(ctx context.Context, websiteID, id string) (store.Webhook, error) {
	var w store.Webhook
	err := s.r.queryRow(ctx, `SELECT `+webhookCols+` FROM webhooks WHERE id = ? AND website_id = ?`,
		id, websiteID).Scan(webhookDest(&w)...)
	if err != nil {
		return store.Webhook{}, fmt.Errorf("loading webhook: %w", notFound(err))
	}
	return w, nil
}

// failWaitingQuery fails every waiting normal delivery of a webhook that
// has just been turned off.
const failWaitingQuery = `UPDATE webhook_deliveries
	SET status = 'failed', error = '` + errorWebhookDisabled + `', next_attempt_at = NULL, leased_until = NULL
	WHERE webhook_id = ? AND next_attempt_at IS NOT NULL AND one_shot = 0`

// UpdateWebhook changes a webhook in one transaction; only the fields the
// contract lets change edit are written.
func (s *Store) UpdateWebhook(ctx context.Context, websiteID, id string, change func(*store.Webhook) error) (store.Webhook, error) {
	var (
		w         store.Webhook
		changeErr error
	)
	err := s.write(ctx, func(tx wtx) error {
		w = store.Webhook{}
		if err := tx.queryRow(`SELECT `+webhookCols+` FROM webhooks WHERE id = ? AND website_id = ?`,
			id, websiteID).Scan(webhookDest(&w)...); err != nil {
			return notFound(err)
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
		if _, err := tx.exec(`UPDATE webhooks SET url = ?, events = ?, enabled = ?, consecutive_failures = ?,
			failing_since = ?, disabled_reason = ?, disabled_at = ? WHERE id = ?`,
			w.URL, events, w.Enabled, w.ConsecutiveFailures, msPtr(w.FailingSince),
			nullString(w.DisabledReason), msPtr(w.DisabledAt), id); err != nil {
			return err
		}
		if old.Enabled && !w.Enabled {
			_, err = tx.exec(failWaitingQuery, id)
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
	err := s.write(ctx, func(tx wtx) error {
		res, err := tx.exec(`DELETE FROM webhooks WHERE id = ? AND website_id = ?`, id, websiteID)
		if err != nil {
			return err
		}
		return affected(res)
	})
	if err != nil {
		return fmt.Errorf("deleting webhook: %w", err)
	}
	return nil
}

// WebhookCursor is the seq of the last outbox event turned into deliveries.
func (s *Store) WebhookCursor(ctx context.Context) (int64, error) {
	var seq int64
	if err := s.r.queryRow(ctx, `SELECT seq FROM webhook_cursor WHERE id = 1`).Scan(&seq); err != nil {
		return 0, fmt.Errorf("reading webhook cursor: %w", err)
	}
	return seq, nil
}

// insertDelivery inserts a delivery, taking the website from its webhook;
// the webhook's id is the last argument (deliveryArgs).
const insertDelivery = `INSERT INTO webhook_deliveries (id, webhook_id, website_id, event, event_id, body,
	status, attempts, retries, one_shot, last_status_code, duration_ms, error, request_headers,
	response_body, created_at, last_attempt_at, next_attempt_at, delivered_at)
	SELECT ?, w.id, w.website_id, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?
	FROM webhooks w WHERE w.id = ?`

// queueDeliveryQuery leaves out a delivery whose webhook is gone or off,
// or which repeats a (webhook, event) pair.
const queueDeliveryQuery = insertDelivery + ` AND w.enabled ON CONFLICT DO NOTHING`

// deliveryArgs are insertDelivery's arguments for d.
func deliveryArgs(d store.WebhookDelivery) ([]any, error) {
	headers, err := store.HeadersJSON(d.RequestHeaders)
	if err != nil {
		return nil, err
	}
	return []any{d.ID, d.Event, nullString(d.EventID), d.Body, d.Status, d.Attempts, d.Retries, d.OneShot,
		d.LastStatusCode, d.DurationMS, nullString(d.Error), headers, nullString(d.ResponseBody),
		ms(d.CreatedAt), msPtr(d.LastAttemptAt), msPtr(d.NextAttemptAt), msPtr(d.DeliveredAt), d.WebhookID}, nil
}

// QueueWebhookDeliveries stores the deliveries of the outbox events in
// (from, to] and moves the cursor to to, when it still is at from.
func (s *Store) QueueWebhookDeliveries(ctx context.Context, from, to int64, ds []store.WebhookDelivery) (bool, error) {
	args := make([][]any, len(ds))
	for i, d := range ds {
		var err error
		if args[i], err = deliveryArgs(d.WithDefaults(now(d.CreatedAt))); err != nil {
			return false, fmt.Errorf("queuing webhook deliveries: %w", err)
		}
	}
	var moved bool
	err := s.write(ctx, func(tx wtx) error {
		moved = false
		res, err := tx.exec(`UPDATE webhook_cursor SET seq = ? WHERE id = 1 AND seq = ?`, to, from)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return err
		}
		for _, a := range args {
			if _, err := tx.exec(queueDeliveryQuery, a...); err != nil {
				return err
			}
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
	err = s.write(ctx, func(tx wtx) error {
		res, err := tx.exec(insertDelivery, args...)
		if err != nil {
			return err
		}
		return affected(res)
	})
	if err != nil {
		return fmt.Errorf("adding webhook delivery: %w", mapErr(err))
	}
	return nil
}

// claimDeliveriesQuery leases (?1) up to ?3 deliveries due at ?2 whose
// lease has run out or never began, through webhook_deliveries_due.
const claimDeliveriesQuery = `UPDATE webhook_deliveries SET leased_until = ?1
	WHERE seq IN (SELECT seq FROM webhook_deliveries
		WHERE next_attempt_at <= ?2 AND (leased_until IS NULL OR leased_until <= ?2)
		ORDER BY next_attempt_at, seq LIMIT ?3)
	RETURNING ` + deliveryCols

// ClaimWebhookDeliveries leases up to limit due deliveries. The writer
// runs one transaction at a time, so no two claims see the same one free.
func (s *Store) ClaimWebhookDeliveries(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]store.WebhookDelivery, error) {
	if limit <= 0 {
		return nil, nil
	}
	var out []store.WebhookDelivery
	err := s.write(ctx, func(tx wtx) error {
		out = nil
		rows, err := tx.query(claimDeliveriesQuery, ms(now.Add(lease)), ms(now), limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var d store.WebhookDelivery
			if err := rows.Scan(deliveryDest(&d)...); err != nil {
				return err
			}
			out = append(out, d)
		}
		return rows.Err()
	})
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
// in one transaction.
func (s *Store) FinishWebhookAttempt(ctx context.Context, a store.WebhookAttempt) (store.Webhook, error) {
	headers, err := store.HeadersJSON(a.RequestHeaders)
	if err != nil {
		return store.Webhook{}, fmt.Errorf("finishing webhook attempt: %w", err)
	}
	var w store.Webhook
	err = s.write(ctx, func(tx wtx) error {
		var (
			seq       int64
			webhookID string
			oneShot   bool
			retries   int
		)
		if err := tx.queryRow(`SELECT seq, webhook_id, one_shot, retries FROM webhook_deliveries WHERE id = ?`,
			a.DeliveryID).Scan(&seq, &webhookID, &oneShot, &retries); err != nil {
			return notFound(err)
		}
		w = store.Webhook{}
		if err := tx.queryRow(`SELECT `+webhookCols+` FROM webhooks WHERE id = ?`, webhookID).Scan(webhookDest(&w)...); err != nil {
			return notFound(err)
		}
		status, retries, next := store.AttemptOutcome(a, oneShot, retries, &w)
		var code, delivered any
		if a.StatusCode != 0 {
			code = a.StatusCode
		}
		if a.Succeeded {
			delivered = ms(a.At)
		}
		if _, err := tx.exec(`UPDATE webhook_deliveries SET status = ?, attempts = attempts + 1, retries = ?,
			one_shot = 0, last_status_code = ?, duration_ms = ?, error = ?, request_headers = ?,
			response_body = ?, last_attempt_at = ?, next_attempt_at = ?,
			delivered_at = coalesce(?, delivered_at), leased_until = NULL
			WHERE seq = ?`,
			status, retries, code, a.DurationMS, nullString(a.Error), headers, nullString(a.ResponseBody),
			ms(a.At), msPtr(next), delivered, seq); err != nil {
			return err
		}
		_, err := tx.exec(`UPDATE webhooks SET last_status = ?, last_fired_at = ?, consecutive_failures = ?,
			failing_since = ? WHERE id = ?`,
			a.StatusCode, ms(a.At), w.ConsecutiveFailures, msPtr(w.FailingSince), webhookID)
		return err
	})
	if err != nil {
		return store.Webhook{}, fmt.Errorf("finishing webhook attempt: %w", err)
	}
	return w, nil
}

const insertEmailQuery = `INSERT INTO emails (id, recipient, subject, body, created_at) VALUES (?, ?, ?, ?, ?)`

// DisableWebhook turns an enabled webhook off, fails its waiting normal
// deliveries and queues mail, in one transaction.
func (s *Store) DisableWebhook(ctx context.Context, websiteID, id, reason string, at time.Time, mail store.Email) (bool, error) {
	if mail.ID == "" {
		mail.ID = uuid.NewString()
	}
	if mail.CreatedAt.IsZero() {
		mail.CreatedAt = at
	}
	var done bool
	err := s.write(ctx, func(tx wtx) error {
		done = false
		res, err := tx.exec(`UPDATE webhooks SET enabled = 0, disabled_reason = ?, disabled_at = ?
			WHERE id = ? AND website_id = ? AND enabled`, nullString(reason), ms(at), id, websiteID)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return err
		}
		if _, err := tx.exec(failWaitingQuery, id); err != nil {
			return err
		}
		if _, err := tx.exec(insertEmailQuery, mail.ID, mail.To, mail.Subject, mail.Body, ms(mail.CreatedAt)); err != nil {
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

const deliveriesQuery = `SELECT ` + deliveryCols + ` FROM webhook_deliveries
	WHERE webhook_id = ? AND seq < ? ORDER BY seq DESC LIMIT ?`

// WebhookDeliveries lists a webhook's deliveries newest first, those with
// Seq below beforeSeq (0: from the newest), at most limit (0 or less: no
// limit).
func (s *Store) WebhookDeliveries(ctx context.Context, webhookID string, beforeSeq int64, limit int) ([]store.WebhookDelivery, error) {
	if beforeSeq <= 0 {
		beforeSeq = math.MaxInt64
	}
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	rows, err := s.r.query(ctx, deliveriesQuery, webhookID, beforeSeq, limit)
	if err != nil {
		return nil, fmt.Errorf("listing webhook deliveries: %w", err)
	}
	defer rows.Close()
	var out []store.WebhookDelivery
	for rows.Next() {
		var d store.WebhookDelivery
		if err := rows.Scan(deliveryDest(&d)...); err != nil {
			return nil, fmt.Errorf("listing webhook deliveries: %w", err)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing webhook deliveries: %w", err)
	}
	return out, nil
}

// WebhookDelivery returns one delivery of the webhook.
func (s *Store) WebhookDelivery(ctx context.Context, webhookID, id string) (store.WebhookDelivery, error) {
	var d store.WebhookDelivery
	err := s.r.queryRow(ctx, `SELECT `+deliveryCols+` FROM webhook_deliveries WHERE id = ? AND webhook_id = ?`,
		id, webhookID).Scan(deliveryDest(&d)...)
	if err != nil {
		return store.WebhookDelivery{}, fmt.Errorf("loading webhook delivery: %w", notFound(err))
	}
	return d, nil
}

// ResendWebhookDelivery makes a delivery with no waiting attempt wait for
// one OneShot attempt at the given time.
func (s *Store) ResendWebhookDelivery(ctx context.Context, webhookID, id string, at time.Time) (store.WebhookDelivery, error) {
	var d store.WebhookDelivery
	err := s.write(ctx, func(tx wtx) error {
		d = store.WebhookDelivery{}
		err := tx.queryRow(`UPDATE webhook_deliveries SET status = 'pending', one_shot = 1, next_attempt_at = ?,
			leased_until = NULL
			WHERE id = ? AND webhook_id = ? AND next_attempt_at IS NULL
			RETURNING `+deliveryCols, ms(at), id, webhookID).Scan(deliveryDest(&d)...)
		if err = notFound(err); err != store.ErrNotFound {
			return err
		}
		var n int
		if err := tx.queryRow(`SELECT count(*) FROM webhook_deliveries WHERE id = ? AND webhook_id = ?`,
			id, webhookID).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return store.ErrConflict
		}
		return store.ErrNotFound
	})
	if err != nil {
		return store.WebhookDelivery{}, fmt.Errorf("resending webhook delivery: %w", err)
	}
	return d, nil
}

const (
	pruneDeliveriesQuery = `DELETE FROM webhook_deliveries WHERE created_at < ?`
	pruneEventsQuery     = `DELETE FROM webhook_events
		WHERE created_at < ? AND seq <= (SELECT seq FROM webhook_cursor WHERE id = 1)`
)

// PruneWebhookLog deletes the deliveries created before the given time and
// the outbox events created before it that the cursor has passed.
func (s *Store) PruneWebhookLog(ctx context.Context, before time.Time) (int64, error) {
	var n int64
	err := s.write(ctx, func(tx wtx) error {
		res, err := tx.exec(pruneDeliveriesQuery, ms(before))
		if err != nil {
			return err
		}
		if n, err = res.RowsAffected(); err != nil {
			return err
		}
		_, err = tx.exec(pruneEventsQuery, ms(before))
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
	err := s.write(ctx, func(tx wtx) error {
		_, err := tx.exec(insertEmailQuery, m.ID, m.To, m.Subject, m.Body, ms(now(m.CreatedAt)))
		return err
	})
	if err != nil {
		return fmt.Errorf("adding email: %w", mapErr(err))
	}
	return nil
}

// Emails lists the outbox newest first, at most limit (0 or less: no
// limit); unsent only when asked.
func (s *Store) Emails(ctx context.Context, unsentOnly bool, limit int) ([]store.Email, error) {
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	rows, err := s.r.query(ctx, `SELECT `+emailCols+` FROM emails WHERE NOT ? OR sent_at IS NULL
		ORDER BY created_at DESC, seq DESC LIMIT ?`, unsentOnly, limit)
	if err != nil {
		return nil, fmt.Errorf("listing emails: %w", err)
	}
	defer rows.Close()
	var out []store.Email
	for rows.Next() {
		var m store.Email
		if err := rows.Scan(emailDest(&m)...); err != nil {
			return nil, fmt.Errorf("listing emails: %w", err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing emails: %w", err)
	}
	return out, nil
}

// claimEmailsQuery leases (?1) up to ?3 unsent messages whose lease has
// run out at ?2 or never began, through emails_unsent.
const claimEmailsQuery = `UPDATE emails SET leased_until = ?1
	WHERE seq IN (SELECT seq FROM emails
		WHERE sent_at IS NULL AND (leased_until IS NULL OR leased_until <= ?2)
		ORDER BY created_at, seq LIMIT ?3)
	RETURNING seq, ` + emailCols

// ClaimEmails leases up to limit unsent messages, oldest first.
func (s *Store) ClaimEmails(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]store.Email, error) {
	if limit <= 0 {
		return nil, nil
	}
	type claimed struct {
		store.Email
		seq int64
	}
	var out []claimed
	err := s.write(ctx, func(tx wtx) error {
		out = nil
		rows, err := tx.query(claimEmailsQuery, ms(now.Add(lease)), ms(now), limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var c claimed
			if err := rows.Scan(append([]any{&c.seq}, emailDest(&c.Email)...)...); err != nil {
				return err
			}
			out = append(out, c)
		}
		return rows.Err()
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
	err := s.write(ctx, func(tx wtx) error {
		res, err := tx.exec(`UPDATE emails SET sent_at = coalesce(sent_at, ?), leased_until = NULL WHERE id = ?`, ms(at), id)
		if err != nil {
			return err
		}
		return affected(res)
	})
	if err != nil {
		return fmt.Errorf("marking email sent: %w", err)
	}
	return nil
}
