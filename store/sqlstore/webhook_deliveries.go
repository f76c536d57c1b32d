package sqlstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"database/sql"

	"github.com/relaybell/relaybell/store"
)

// The webhooks' delivery log. On PostgreSQL the lock order is: the cursor
// row, then webhook rows, then their deliveries, then e-mails. Claims lock
// deliveries only, skipping locked ones. Writers of a webhook row take
// lockWebhook's FOR NO KEY UPDATE; the queue takes FOR SHARE of the
// webhooks it queues for.

const webhookDeliveryCols = `seq, id, webhook_id, website_id, event, event_id, body, status, attempts, retries,
	one_shot, last_status_code, duration_ms, error, request_headers, response_body, created_at,
	last_attempt_at, next_attempt_at, delivered_at`

func webhookDeliveryDest(d *store.WebhookDelivery) []any {
	return []any{&d.Seq, &d.ID, &d.WebhookID, &d.WebsiteID, &d.Event, textDest{&d.EventID}, &d.Body,
		&d.Status, &d.Attempts, &d.Retries, &d.OneShot, &d.LastStatusCode, &d.DurationMS,
		textDest{&d.Error}, jsonDest{&d.RequestHeaders}, textDest{&d.ResponseBody}, timeDest{&d.CreatedAt},
		timePtrDest{&d.LastAttemptAt}, timePtrDest{&d.NextAttemptAt}, timePtrDest{&d.DeliveredAt}}
}

// WebhookCursor is the seq of the last outbox event turned into deliveries.
func (s *Store) WebhookCursor(ctx context.Context) (int64, error) {
	var seq int64
	if err := s.db.Read().QueryRow(ctx, `SELECT seq FROM webhook_cursor WHERE id = 1`).Scan(&seq); err != nil {
		return 0, fmt.Errorf("reading webhook cursor: %w", err)
	}
	return seq, nil
}

// insertWebhookDeliveryQuery inserts a delivery, taking the website from
// its webhook ($18); webhookDeliveryArgs are its arguments.
const insertWebhookDeliveryQuery = `INSERT INTO webhook_deliveries (id, webhook_id, website_id, event, event_id, body,
	status, attempts, retries, one_shot, last_status_code, duration_ms, error, request_headers,
	response_body, created_at, last_attempt_at, next_attempt_at, delivered_at)
	SELECT $1, w.id, w.website_id, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17
	FROM webhooks w WHERE w.id = $18`

// queueWebhookDeliveryQuery leaves out a delivery whose webhook is gone or
// off, or which repeats a (webhook, event) pair. On PostgreSQL FOR SHARE
// waits for a transaction turning the webhook off and then sees it off, so
// that no delivery is left waiting on a disabled webhook.
func (s *Store) queueWebhookDeliveryQuery() string {
	return insertWebhookDeliveryQuery + ` AND w.enabled ` + s.d.LockRows("SHARE") + ` ON CONFLICT DO NOTHING`
}

// webhookDeliveryArgs are insertWebhookDeliveryQuery's arguments for d,
// after its defaults (store.WebhookDelivery.WithDefaults).
func (s *Store) webhookDeliveryArgs(d store.WebhookDelivery) ([]any, error) {
	d = d.WithDefaults(nowOr(d.CreatedAt))
	headers, err := store.HeadersJSON(d.RequestHeaders)
	if err != nil {
		return nil, err
	}
	return []any{d.ID, d.Event, nullString(d.EventID), d.Body, d.Status, d.Attempts, d.Retries, d.OneShot,
		d.LastStatusCode, d.DurationMS, nullString(d.Error), headers, nullString(d.ResponseBody),
		s.time(d.CreatedAt), s.timePtr(d.LastAttemptAt), s.timePtr(d.NextAttemptAt), s.timePtr(d.DeliveredAt),
		d.WebhookID}, nil
}

// QueueWebhookDeliveries stores the deliveries of the outbox events in
// (from, to] and moves the cursor to to, when it still is at from: the
// cursor's UPDATE is conditional, and on PostgreSQL its row lock makes
// nodes doing it at once wait for each other; the later ones then find the
// cursor moved.
func (s *Store) QueueWebhookDeliveries(ctx context.Context, from, to int64, ds []store.WebhookDelivery) (bool, error) {
	args := make([][]any, len(ds))
	for i, d := range ds {
		var err error
		if args[i], err = s.webhookDeliveryArgs(d); err != nil {
			return false, fmt.Errorf("queuing webhook deliveries: %w", err)
		}
	}
	query := s.queueWebhookDeliveryQuery()
	var moved bool
	err := s.db.Tx(ctx, TxOptions{}, func(tx Conn) error {
		moved = false
		n, err := tx.Exec(ctx, `UPDATE webhook_cursor SET seq = $1 WHERE id = 1 AND seq = $2`, to, from)
		if err != nil || n == 0 {
			return err
		}
		if err := execEach(ctx, tx, query, args); err != nil {
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

// execEach runs query once with each argument list of args in tx: in one
// round trip where tx pipelines (Pipeline).
func execEach(ctx context.Context, tx Conn, query string, args [][]any) error {
	queries := make([]Piped, len(args))
	for i, a := range args {
		queries[i] = Piped{SQL: query, Args: a}
	}
	return Pipeline(ctx, tx, queries)
}

// AddWebhookDelivery stores one delivery whatever its webhook's state.
// ErrNotFound when the webhook is gone, ErrConflict for a repeated id or
// (webhook, event) pair.
func (s *Store) AddWebhookDelivery(ctx context.Context, d store.WebhookDelivery) error {
	args, err := s.webhookDeliveryArgs(d)
	if err != nil {
		return fmt.Errorf("adding webhook delivery: %w", err)
	}
	if err := affected(s.db.Write().Exec(ctx, insertWebhookDeliveryQuery, args...)); err != nil {
		return fmt.Errorf("adding webhook delivery: %w", s.mapErr(err))
	}
	return nil
}

// ClaimWebhookDeliveries leases up to limit due deliveries in one
// statement, through the partial index webhook_deliveries_due. On
// PostgreSQL FOR UPDATE SKIP LOCKED passes over the rows another claim is
// taking, and re-checks the lease of those it committed meanwhile; SQLite's
// writer runs one statement at a time, so no two claims see the same one
// free.
func (s *Store) ClaimWebhookDeliveries(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]store.WebhookDelivery, error) {
	if limit <= 0 {
		return nil, nil
	}
	rows, err := s.db.Write().Query(ctx, `UPDATE webhook_deliveries SET leased_until = $1
		WHERE seq IN (SELECT seq FROM webhook_deliveries
			WHERE next_attempt_at <= $2 AND (leased_until IS NULL OR leased_until <= $2)
			ORDER BY next_attempt_at, seq LIMIT $3 `+s.d.SkipLocked()+`)
		RETURNING `+webhookDeliveryCols, s.time(now.Add(lease)), s.time(now), limit)
	out, err := CollectRows(rows, err, webhookDeliveryDest)
	if err != nil {
		return nil, fmt.Errorf("claiming webhook deliveries: %w", err)
	}
	// RETURNING has no order.
	slices.SortFunc(out, func(a, b store.WebhookDelivery) int {
		return cmp.Or(a.NextAttemptAt.Compare(*b.NextAttemptAt), cmp.Compare(a.Seq, b.Seq))
	})
	return out, nil
}

// storedTime is t as the store keeps and returns it (to the millisecond on
// SQLite, the microsecond on PostgreSQL, in UTC).
func (s *Store) storedTime(t time.Time) time.Time {
	_ = timeDest{&t}.Scan(s.time(t)) // the dialect's forms always scan
	return t
}

// FinishWebhookAttempt records an attempt on the delivery and its webhook
// in one transaction. On PostgreSQL it holds the webhook's row (the failure
// count, lockWebhook) and then the delivery's, whose state it reads again
// once it holds it.
func (s *Store) FinishWebhookAttempt(ctx context.Context, a store.WebhookAttempt) (store.Webhook, error) {
	a.At = s.storedTime(a.At) // the precision the webhook is returned with
	headers, err := store.HeadersJSON(a.RequestHeaders)
	if err != nil {
		return store.Webhook{}, fmt.Errorf("finishing webhook attempt: %w", err)
	}
	var w store.Webhook
	err = s.db.Tx(ctx, TxOptions{}, func(tx Conn) error {
		var webhookID string
		if err := tx.QueryRow(ctx, `SELECT webhook_id FROM webhook_deliveries WHERE id = $1`,
			a.DeliveryID).Scan(&webhookID); err != nil {
			return s.mapErr(err)
		}
		w = store.Webhook{}
		if err := tx.QueryRow(ctx, `SELECT `+webhookCols+` FROM webhooks WHERE id = $1 `+s.lockWebhook(),
			webhookID).Scan(webhookDest(&w)...); err != nil {
			return s.mapErr(err)
		}
		var (
			seq     int64
			oneShot bool
			retries int
		)
		if err := tx.QueryRow(ctx, `SELECT seq, one_shot, retries FROM webhook_deliveries WHERE id = $1 `+
			s.d.ForUpdate(), a.DeliveryID).Scan(&seq, &oneShot, &retries); err != nil {
			return s.mapErr(err)
		}
		status, retries, next := store.AttemptOutcome(a, oneShot, retries, &w)
		var code, delivered any
		if a.StatusCode != 0 {
			code = a.StatusCode
		}
		if a.Succeeded {
			delivered = s.time(a.At)
		}
		if _, err := tx.Exec(ctx, `UPDATE webhook_deliveries SET status = $1, attempts = attempts + 1, retries = $2,
			one_shot = false, last_status_code = $3, duration_ms = $4, error = $5, request_headers = $6,
			response_body = $7, last_attempt_at = $8, next_attempt_at = $9,
			delivered_at = coalesce($10, delivered_at), leased_until = NULL
			WHERE seq = $11`,
			status, retries, code, a.DurationMS, nullString(a.Error), headers, nullString(a.ResponseBody),
			s.time(a.At), s.timePtr(next), delivered, seq); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE webhooks SET last_status = $1, last_fired_at = $2, consecutive_failures = $3,
			failing_since = $4 WHERE id = $5`,
			a.StatusCode, s.time(a.At), w.ConsecutiveFailures, s.timePtr(w.FailingSince), webhookID)
		return err
	})
	if err != nil {
		return store.Webhook{}, fmt.Errorf("finishing webhook attempt: %w", err)
	}
	return w, nil
}

// WebhookDeliveries lists a webhook's deliveries newest first, those with
// Seq below beforeSeq (0: from the newest), at most limit (0 or less: no
// limit): one range of the index webhook_deliveries_webhook.
func (s *Store) WebhookDeliveries(ctx context.Context, webhookID string, beforeSeq int64, limit int) ([]store.WebhookDelivery, error) {
	if beforeSeq <= 0 {
		beforeSeq = math.MaxInt64
	}
	rows, err := s.db.Read().Query(ctx, `SELECT `+webhookDeliveryCols+` FROM webhook_deliveries
		WHERE webhook_id = $1 AND seq < $2 ORDER BY seq DESC LIMIT $3`, webhookID, beforeSeq, limitArg(limit))
	out, err := CollectRows(rows, err, webhookDeliveryDest)
	if err != nil {
		return nil, fmt.Errorf("listing webhook deliveries: %w", err)
	}
	return out, nil
}

// WebhookDelivery returns one delivery of the webhook.
func (s *Store) WebhookDelivery(ctx context.Context, webhookID, id string) (store.WebhookDelivery, error) {
	var d store.WebhookDelivery
	err := s.db.Read().QueryRow(ctx, `SELECT `+webhookDeliveryCols+` FROM webhook_deliveries
		WHERE id = $1 AND webhook_id = $2`, id, webhookID).Scan(webhookDeliveryDest(&d)...)
	if err != nil {
		return store.WebhookDelivery{}, fmt.Errorf("loading webhook delivery: %w", s.mapErr(err))
	}
	return d, nil
}

// ResendWebhookDelivery makes a delivery with no waiting attempt wait for
// one OneShot attempt at the given time: a conditional UPDATE, so that of
// resends racing on PostgreSQL the first holds the row and the others then
// find an attempt waiting (store.ErrConflict).
func (s *Store) ResendWebhookDelivery(ctx context.Context, webhookID, id string, at time.Time) (store.WebhookDelivery, error) {
	var d store.WebhookDelivery
	err := s.db.Tx(ctx, TxOptions{}, func(tx Conn) error {
		d = store.WebhookDelivery{}
		err := tx.QueryRow(ctx, `UPDATE webhook_deliveries SET status = 'pending', one_shot = true,
			next_attempt_at = $1, leased_until = NULL
			WHERE id = $2 AND webhook_id = $3 AND next_attempt_at IS NULL
			RETURNING `+webhookDeliveryCols, s.time(at), id, webhookID).Scan(webhookDeliveryDest(&d)...)
		if !errors.Is(err, sql.ErrNoRows) {
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
// the outbox events created before it that the cursor has passed, through
// the indexes on created_at.
func (s *Store) PruneWebhookLog(ctx context.Context, before time.Time) (int64, error) {
	var n int64
	err := s.db.Tx(ctx, TxOptions{}, func(tx Conn) error {
		var err error
		if n, err = tx.Exec(ctx, `DELETE FROM webhook_deliveries WHERE created_at < $1`, s.time(before)); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM webhook_events
			WHERE created_at < $1 AND seq <= (SELECT seq FROM webhook_cursor WHERE id = 1)`, s.time(before))
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("pruning webhook log: %w", err)
	}
	return n, nil
}
