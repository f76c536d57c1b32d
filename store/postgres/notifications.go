package postgres

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/relaybell/relaybell/store"
)

const notificationCols = `n.id, n.website_id, n.seq, n.status, n.title, n.body, n.content, n.target,
	n.target_summary, n.send_body, n.transactional, n.ab, n.automation, n.created_at, n.scheduled_at,
	n.started_at, n.finished_at, n.published_at, n.error, n.recipients, n.processed, n.sent, n.delivered,
	n.failed, n.pruned, n.clicked, n.conversions, n.revenue, n.waves, n.ab_winner`

func notificationDest(n *store.Notification) []any {
	return []any{&n.ID, &n.WebsiteID, &n.Seq, &n.Status, &n.Title, &n.Body, &n.Content, &n.Target,
		&n.TargetSummary, &n.SendBody, &n.Transactional, &n.AB, &n.Automation, &n.CreatedAt,
		&n.ScheduledAt, &n.StartedAt, &n.FinishedAt, &n.PublishedAt,
		&n.Error, &n.Recipients, &n.Processed, &n.Sent, &n.Delivered, &n.Failed, &n.Pruned, &n.Clicked,
		&n.Conversions, &n.Revenue, &n.Waves, &n.ABWinner}
}

// scanNotifications reads every row of a notificationCols query.
func scanNotifications(rows pgx.Rows) ([]store.Notification, error) {
	defer rows.Close()
	var out []store.Notification
	for rows.Next() {
		var n store.Notification
		if err := rows.Scan(notificationDest(&n)...); err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

// jsonDoc passes a JSON document to a jsonb parameter: nil as NULL.
func jsonDoc(b []byte) any {
	if b == nil {
		return nil
	}
	return b
}

// CreateNotification stores n and sets n.Seq, which is greater than that of
// every notification created before. An empty n.ID gets a new UUID and a
// zero CreatedAt the current time. A duplicate id is store.ErrConflict, an
// unknown website store.ErrNotFound. The JSON documents are stored as jsonb,
// which may reformat them (key order, spacing).
func (s *Store) CreateNotification(ctx context.Context, n *store.Notification) error {
	if n.ID == "" {
		n.ID = uuid.NewString()
	}
	if n.CreatedAt.IsZero() {
		n.CreatedAt = now(time.Time{})
	}
	var seq int64
	err := s.inTx(ctx, false, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `INSERT INTO notifications (id, website_id, status, title, body, content,
		target, target_summary, send_body, transactional, ab, automation, created_at, scheduled_at, started_at,
		finished_at, published_at, error, recipients, processed, sent, delivered, failed, pruned, clicked,
		conversions, revenue, search)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21,
			$22, $23, $24, $25, $26, $27, $28)
		RETURNING seq`,
			n.ID, n.WebsiteID, n.Status, n.Title, n.Body, jsonDoc(n.Content), jsonDoc(n.Target),
			n.TargetSummary, jsonDoc(n.SendBody), n.Transactional, n.AB, n.Automation, ts(n.CreatedAt),
			tsPtr(n.ScheduledAt), tsPtr(n.StartedAt), tsPtr(n.FinishedAt), tsPtr(n.PublishedAt), n.Error,
			n.Recipients, n.Processed, n.Sent, n.Delivered, n.Failed, n.Pruned, n.Clicked, n.Conversions,
			n.Revenue, store.SearchText(n.Title, n.Body)).Scan(&seq); err != nil {
			return err
		}
		if len(n.Segments) == 0 {
			return nil
		}
		_, err := tx.Exec(ctx, `INSERT INTO notification_segments (segment_id, notification_id)
			SELECT DISTINCT unnest($1::text[]), $2 ON CONFLICT DO NOTHING`, n.Segments, n.ID)
		return err
	})
	if err != nil {
		return fmt.Errorf("creating notification: %w", mapErr(err))
	}
	n.Seq = seq
	return nil
}

// CountDrafts counts the website's drafts.
func (s *Store) CountDrafts(ctx context.Context, websiteID string) (int, error) {
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM notifications WHERE website_id = $1 AND status = 'draft'`,
		websiteID).Scan(&n); err != nil {
		return 0, fmt.Errorf("counting drafts: %w", err)
	}
	return n, nil
}

// ReplaceDraft rewrites a draft; a sent one takes the next seq.
func (s *Store) ReplaceDraft(ctx context.Context, n *store.Notification) error {
	err := s.inTx(ctx, false, func(tx pgx.Tx) error {
		if err := draftStatus(tx.QueryRow(ctx, `SELECT status FROM notifications WHERE id = $1 AND website_id = $2
			FOR UPDATE`, n.ID, n.WebsiteID)); err != nil {
			return err
		}
		seq := ""
		if n.Status != store.StatusDraft {
			seq = "seq = DEFAULT, "
		}
		if err := tx.QueryRow(ctx, `UPDATE notifications SET `+seq+`status = $1, title = $2, body = $3, content = $4,
			target = $5, target_summary = $6, send_body = $7, transactional = $8, ab = $9, created_at = $10,
			scheduled_at = $11, search = $13 WHERE id = $12 RETURNING seq`,
			n.Status, n.Title, n.Body, jsonDoc(n.Content), jsonDoc(n.Target), n.TargetSummary, jsonDoc(n.SendBody),
			n.Transactional, n.AB, ts(n.CreatedAt), tsPtr(n.ScheduledAt), n.ID,
			store.SearchText(n.Title, n.Body)).Scan(&n.Seq); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM notification_segments WHERE notification_id = $1`, n.ID); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO notification_segments (segment_id, notification_id)
			SELECT DISTINCT unnest($1::text[]), $2 ON CONFLICT DO NOTHING`, n.Segments, n.ID)
		return err
	})
	if err != nil {
		return fmt.Errorf("replacing draft: %w", mapErr(err))
	}
	return nil
}

// draftStatus reads a notification's status: ErrNotFound without one,
// ErrConflict unless it is a draft.
func draftStatus(r pgx.Row) error {
	var status string
	if err := r.Scan(&status); err != nil {
		return mapErr(err)
	}
	if status != store.StatusDraft {
		return store.ErrConflict
	}
	return nil
}

// DeleteDraft removes a draft.
func (s *Store) DeleteDraft(ctx context.Context, websiteID, id string) error {
	err := s.inTx(ctx, false, func(tx pgx.Tx) error {
		if err := draftStatus(tx.QueryRow(ctx, `SELECT status FROM notifications WHERE id = $1 AND website_id = $2
			FOR UPDATE`, id, websiteID)); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM notifications WHERE id = $1`, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("deleting draft: %w", mapErr(err))
	}
	return nil
}

// CancelNotification cancels a scheduled or held send.
func (s *Store) CancelNotification(ctx context.Context, websiteID, id string, at time.Time) error {
	tag, err := s.pool.Exec(ctx, `UPDATE notifications SET status = 'canceled', finished_at = $1
		WHERE id = $2 AND website_id = $3 AND status IN ('scheduled', 'held_for_review')`, ts(now(at)), id, websiteID)
	if err == nil && tag.RowsAffected() == 0 {
		err = store.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("canceling notification: %w", err)
	}
	return nil
}

// Notification returns one of the website's notifications.
func (s *Store) Notification(ctx context.Context, websiteID, id string) (store.Notification, error) {
	var n store.Notification
	err := s.pool.QueryRow(ctx, `SELECT `+notificationCols+` FROM notifications n WHERE n.id = $1 AND n.website_id = $2`,
		id, websiteID).Scan(notificationDest(&n)...)
	if err != nil {
		return store.Notification{}, fmt.Errorf("loading notification: %w", mapErr(err))
	}
	return n, nil
}

// NotificationByID returns a notification of any website (for the roles
// behind the bus, which carry only the id).
func (s *Store) NotificationByID(ctx context.Context, id string) (store.Notification, error) {
	var n store.Notification
	err := s.pool.QueryRow(ctx, `SELECT `+notificationCols+` FROM notifications n WHERE n.id = $1`, id).
		Scan(notificationDest(&n)...)
	if err != nil {
		return store.Notification{}, fmt.Errorf("loading notification: %w", mapErr(err))
	}
	return n, nil
}

// limitArg is a LIMIT parameter: NULL (no limit) for 0 or less.
func limitArg(limit int) any {
	if limit <= 0 {
		return nil
	}
	return limit
}

// ListNotifications pages a website's notifications newest first. A Limit of
// 0 or less means no limit. Q is looked for in the search column
// (store.SearchText), folded in Go, so the database's ctype plays no part.
func (s *Store) ListNotifications(ctx context.Context, q store.ListQuery) ([]store.Notification, error) {
	var (
		rows pgx.Rows
		err  error
	)
	before := q.BeforeSeq
	if before <= 0 {
		before = math.MaxInt64
	}
	statusFilter := "n.status <> 'draft' AND $4::text[] IS NULL"
	if len(q.Statuses) > 0 {
		statusFilter = "n.status = ANY ($4::text[])"
	}
	var from, to *time.Time
	if !q.From.IsZero() {
		from = &q.From
	}
	if !q.To.IsZero() {
		to = &q.To
	}
	rows, err = s.pool.Query(ctx, `SELECT `+notificationCols+` FROM notifications n
		WHERE n.website_id = $1 AND n.seq < $2 AND `+statusFilter+`
			AND ($5::timestamptz IS NULL OR n.created_at >= $5) AND ($6::timestamptz IS NULL OR n.created_at < $6)
			AND ($7 = '' OR strpos(n.search, $7) > 0)
		ORDER BY n.seq DESC LIMIT $3`, q.WebsiteID, before, limitArg(q.Limit), q.Statuses, from, to, store.FoldSearch(q.Q))
	if err != nil {
		return nil, fmt.Errorf("listing notifications: %w", err)
	}
	out, err := scanNotifications(rows)
	if err != nil {
		return nil, fmt.Errorf("listing notifications: %w", err)
	}
	return out, nil
}

// MarkPublished records that the send intent reached the bus.
func (s *Store) MarkPublished(ctx context.Context, id string, at time.Time) error {
	if err := affected(s.pool.Exec(ctx, `UPDATE notifications SET published_at = $1 WHERE id = $2`, now(at), id)); err != nil {
		return fmt.Errorf("marking notification published: %w", err)
	}
	return nil
}

// Unpublished lists, oldest first, queued sends whose intent never reached
// the bus and that were created before the given time.
func (s *Store) Unpublished(ctx context.Context, before time.Time, limit int) ([]store.Notification, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+notificationCols+` FROM notifications n
		WHERE n.status = 'queued' AND n.published_at IS NULL AND n.created_at < $1
		ORDER BY n.created_at, n.seq LIMIT $2`, ts(before), limitArg(limit))
	if err != nil {
		return nil, fmt.Errorf("listing unpublished notifications: %w", err)
	}
	out, err := scanNotifications(rows)
	if err != nil {
		return nil, fmt.Errorf("listing unpublished notifications: %w", err)
	}
	return out, nil
}

// DueScheduled moves up to limit scheduled sends due at dueAt to queued and
// returns them, earliest first. Concurrent callers (several nodes) never get
// the same send: each locks the rows it picks and skips those another caller
// has locked, so they also don't wait for each other.
func (s *Store) DueScheduled(ctx context.Context, dueAt time.Time, limit int) ([]store.Notification, error) {
	// The picked rows are a MATERIALIZED CTE: as an IN (subquery) the
	// planner may run the subquery again per row, and a second run, no
	// longer seeing the rows this statement already changed, picks more.
	rows, err := s.pool.Query(ctx, `WITH due AS MATERIALIZED (
			SELECT seq FROM notifications
			WHERE status = 'scheduled' AND scheduled_at <= $1
			ORDER BY scheduled_at, seq LIMIT $2
			FOR UPDATE SKIP LOCKED
		)
		UPDATE notifications n SET status = 'queued'
		FROM due WHERE n.seq = due.seq AND n.status = 'scheduled'
		RETURNING `+notificationCols, ts(dueAt), limitArg(limit))
	if err != nil {
		return nil, fmt.Errorf("queueing due notifications: %w", err)
	}
	out, err := scanNotifications(rows)
	if err != nil {
		return nil, fmt.Errorf("queueing due notifications: %w", err)
	}
	// RETURNING order is unspecified.
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].ScheduledAt, out[j].ScheduledAt
		if !a.Equal(*b) {
			return a.Before(*b)
		}
		return out[i].Seq < out[j].Seq
	})
	return out, nil
}

// StartSending moves a queued send to sending and returns it; a send already
// sending is returned unchanged. Any other status is store.ErrConflict.
func (s *Store) StartSending(ctx context.Context, id string, at time.Time, waves ...time.Time) (store.Notification, error) {
	var n store.Notification
	err := s.inTx(ctx, false, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `UPDATE notifications n SET status = 'sending', started_at = $1, waves = $3
			WHERE id = $2 AND status = 'queued' RETURNING `+notificationCols, now(at), id, len(waves)).
			Scan(notificationDest(&n)...)
		if err != nil || len(waves) == 0 {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO notification_waves (notification_id, wave, due_at)
			SELECT $1, i - 1, due FROM unnest($2::timestamptz[]) WITH ORDINALITY AS w (due, i)`, id, waves)
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		// Not queued (any more): a concurrent call may have started it.
		err = s.pool.QueryRow(ctx, `SELECT `+notificationCols+` FROM notifications n WHERE n.id = $1`, id).
			Scan(notificationDest(&n)...)
		if err == nil && n.Status != store.StatusSending {
			err = fmt.Errorf("%w: notification is %s", store.ErrConflict, n.Status)
		}
	}
	if err != nil {
		return store.Notification{}, fmt.Errorf("starting send: %w", mapErr(err))
	}
	return n, nil
}

// FailNotification turns a scheduled, queued, held or sending notification
// into failed with a reason. A draft or a finished one is store.ErrConflict.
func (s *Store) FailNotification(ctx context.Context, id, reason string, at time.Time) error {
	tag, err := s.pool.Exec(ctx, `UPDATE notifications SET status = 'failed', error = $1, finished_at = $2
		WHERE id = $3 AND status IN ('scheduled', 'queued', 'held_for_review', 'sending')`, reason, now(at), id)
	if err == nil && tag.RowsAffected() == 0 {
		var status string
		err = s.pool.QueryRow(ctx, `SELECT status FROM notifications WHERE id = $1`, id).Scan(&status)
		if err == nil {
			err = fmt.Errorf("%w: notification is %s", store.ErrConflict, status)
		}
	}
	if err != nil {
		return fmt.Errorf("failing notification: %w", mapErr(err))
	}
	return nil
}
