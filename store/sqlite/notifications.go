package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/store"
)

const notificationCols = `n.id, n.website_id, n.seq, n.status, n.title, n.body, n.content, n.target,
	n.target_summary, n.send_body, n.transactional, n.ab, n.automation, n.created_at, n.scheduled_at,
	n.started_at, n.finished_at, n.published_at, n.error, n.recipients, n.processed, n.sent, n.delivered,
	n.failed, n.pruned, n.clicked, n.conversions, n.revenue, n.waves, n.ab_winner`

// notificationReturning is notificationCols for RETURNING clauses, which
// cannot name the table.
var notificationReturning = strings.ReplaceAll(notificationCols, "n.", "")

func notificationDest(n *store.Notification) []any {
	return []any{&n.ID, &n.WebsiteID, &n.Seq, &n.Status, &n.Title, &n.Body, &n.Content, &n.Target,
		&n.TargetSummary, &n.SendBody, &n.Transactional, &n.AB, &n.Automation, msTime{&n.CreatedAt},
		msTimePtr{&n.ScheduledAt}, msTimePtr{&n.StartedAt}, msTimePtr{&n.FinishedAt}, msTimePtr{&n.PublishedAt},
		&n.Error, &n.Recipients, &n.Processed, &n.Sent, &n.Delivered, &n.Failed, &n.Pruned, &n.Clicked,
		&n.Conversions, &n.Revenue, &n.Waves, &n.ABWinner}
}

// scanNotifications reads every row of a notificationCols query.
func scanNotifications(rows *sql.Rows) ([]store.Notification, error) {
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

// CreateNotification stores n and sets n.Seq, which is strictly greater than
// that of every notification created before. An empty n.ID gets a new UUID
// and a zero CreatedAt the current time. A duplicate id is
// store.ErrConflict, an unknown website store.ErrNotFound.
func (s *Store) CreateNotification(ctx context.Context, n *store.Notification) error {
	if n.ID == "" {
		n.ID = uuid.NewString()
	}
	if n.CreatedAt.IsZero() {
		n.CreatedAt = time.Now().UTC().Truncate(time.Millisecond)
	}
	var seq int64
	err := s.write(ctx, func(tx wtx) error {
		if err := tx.queryRow(`INSERT INTO notifications (id, website_id, status, title, body, content,
			target, target_summary, send_body, transactional, ab, automation, created_at, scheduled_at, started_at,
			finished_at, published_at, error, recipients, processed, sent, delivered, failed, pruned, clicked,
			conversions, revenue, search)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			RETURNING seq`,
			n.ID, n.WebsiteID, n.Status, n.Title, n.Body, nullBytes(n.Content), nullBytes(n.Target),
			n.TargetSummary, nullBytes(n.SendBody), n.Transactional, n.AB, n.Automation, ms(n.CreatedAt),
			msPtr(n.ScheduledAt), msPtr(n.StartedAt), msPtr(n.FinishedAt), msPtr(n.PublishedAt), n.Error,
			n.Recipients, n.Processed, n.Sent, n.Delivered, n.Failed, n.Pruned, n.Clicked, n.Conversions,
			n.Revenue, store.SearchText(n.Title, n.Body)).Scan(&seq); err != nil {
			return err
		}
		for _, id := range n.Segments {
			if _, err := tx.exec(`INSERT OR IGNORE INTO notification_segments (segment_id, notification_id) VALUES (?, ?)`,
				id, n.ID); err != nil {
				return err
			}
		}
		return nil
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
	if err := s.r.queryRow(ctx, `SELECT count(*) FROM notifications WHERE website_id = ? AND status = 'draft'`,
		websiteID).Scan(&n); err != nil {
		return 0, fmt.Errorf("counting drafts: %w", err)
	}
	return n, nil
}

// ReplaceDraft rewrites a draft; a sent one takes the next seq.
func (s *Store) ReplaceDraft(ctx context.Context, n *store.Notification) error {
	err := s.write(ctx, func(tx wtx) error {
		if err := draftStatus(tx.queryRow(`SELECT status FROM notifications WHERE id = ? AND website_id = ?`,
			n.ID, n.WebsiteID)); err != nil {
			return err
		}
		seq := "seq"
		if n.Status != store.StatusDraft {
			seq = "(SELECT max(seq) + 1 FROM notifications)"
		}
		if err := tx.queryRow(`UPDATE notifications SET seq = `+seq+`, status = ?, title = ?, body = ?, content = ?,
			target = ?, target_summary = ?, send_body = ?, transactional = ?, ab = ?, created_at = ?, scheduled_at = ?,
			search = ? WHERE id = ? RETURNING seq`,
			n.Status, n.Title, n.Body, nullBytes(n.Content), nullBytes(n.Target), n.TargetSummary, nullBytes(n.SendBody),
			n.Transactional, n.AB, ms(n.CreatedAt), msPtr(n.ScheduledAt), store.SearchText(n.Title, n.Body),
			n.ID).Scan(&n.Seq); err != nil {
			return err
		}
		if _, err := tx.exec(`DELETE FROM notification_segments WHERE notification_id = ?`, n.ID); err != nil {
			return err
		}
		for _, id := range n.Segments {
			if _, err := tx.exec(`INSERT OR IGNORE INTO notification_segments (segment_id, notification_id) VALUES (?, ?)`,
				id, n.ID); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("replacing draft: %w", mapErr(err))
	}
	return nil
}

// draftStatus reads a notification's status: ErrNotFound without one,
// ErrConflict unless it is a draft.
func draftStatus(r row) error {
	var status string
	if err := r.Scan(&status); err != nil {
		return notFound(err)
	}
	if status != store.StatusDraft {
		return store.ErrConflict
	}
	return nil
}

// DeleteDraft removes a draft.
func (s *Store) DeleteDraft(ctx context.Context, websiteID, id string) error {
	err := s.write(ctx, func(tx wtx) error {
		if err := draftStatus(tx.queryRow(`SELECT status FROM notifications WHERE id = ? AND website_id = ?`,
			id, websiteID)); err != nil {
			return err
		}
		_, err := tx.exec(`DELETE FROM notifications WHERE id = ?`, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("deleting draft: %w", mapErr(err))
	}
	return nil
}

// CancelNotification cancels a scheduled or held send.
func (s *Store) CancelNotification(ctx context.Context, websiteID, id string, at time.Time) error {
	res, err := s.w.exec(ctx, `UPDATE notifications SET status = 'canceled', finished_at = ?
		WHERE id = ? AND website_id = ? AND status IN ('scheduled', 'held_for_review')`, ms(now(at)), id, websiteID)
	if err == nil {
		err = affected(res)
	}
	if err != nil {
		return fmt.Errorf("canceling notification: %w", err)
	}
	return nil
}

// Notification returns one of the website's notifications.
func (s *Store) Notification(ctx context.Context, websiteID, id string) (store.Notification, error) {
	var n store.Notification
	err := s.r.queryRow(ctx, `SELECT `+notificationCols+` FROM notifications n WHERE n.id = ? AND n.website_id = ?`,
		id, websiteID).Scan(notificationDest(&n)...)
	if err != nil {
		return store.Notification{}, fmt.Errorf("loading notification: %w", notFound(err))
	}
	return n, nil
}

// NotificationByID returns a notification of any website (for the roles
// behind the bus, which carry only the id).
func (s *Store) NotificationByID(ctx context.Context, id string) (store.Notification, error) {
	var n store.Notification
	err := s.r.queryRow(ctx, `SELECT `+notificationCols+` FROM notifications n WHERE n.id = ?`, id).
		Scan(notificationDest(&n)...)
	if err != nil {
		return store.Notification{}, fmt.Errorf("loading notification: %w", notFound(err))
	}
	return n, nil
}

// ListNotifications pages a website's notifications newest first. A Limit of
// 0 or less means no limit. Q is looked for in the search column
// (store.SearchText), folded in Go: SQLite's lower() folds ASCII only.
func (s *Store) ListNotifications(ctx context.Context, q store.ListQuery) ([]store.Notification, error) {
	before := q.BeforeSeq
	if before <= 0 {
		before = math.MaxInt64
	}
	limit := int64(q.Limit)
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	var statusFilter string
	var statuses []byte
	if len(q.Statuses) > 0 {
		statusFilter = `n.status IN (SELECT value FROM json_each(?3))`
		statuses, _ = json.Marshal(q.Statuses)
	} else {
		statusFilter = `n.status <> 'draft' AND ?3 IS NULL`
	}
	from, to := int64(math.MinInt64), int64(math.MaxInt64)
	if !q.From.IsZero() {
		from = ms(q.From)
	}
	if !q.To.IsZero() {
		to = ms(q.To)
	}
	rows, err := s.r.query(ctx, `SELECT `+notificationCols+` FROM notifications n
		WHERE n.website_id = ?1 AND n.seq < ?2 AND `+statusFilter+` AND n.created_at >= ?5 AND n.created_at < ?6
			AND (?7 = '' OR instr(n.search, ?7) > 0)
		ORDER BY n.seq DESC LIMIT ?4`, q.WebsiteID, before, nullBytes(statuses), limit, from, to, store.FoldSearch(q.Q))
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
	res, err := s.w.exec(ctx, `UPDATE notifications SET published_at = ? WHERE id = ?`, ms(now(at)), id)
	if err == nil {
		err = affected(res)
	}
	if err != nil {
		return fmt.Errorf("marking notification published: %w", err)
	}
	return nil
}

// Unpublished lists, oldest first, queued sends whose intent never reached
// the bus and that were created before the given time.
func (s *Store) Unpublished(ctx context.Context, before time.Time, limit int) ([]store.Notification, error) {
	if limit <= 0 {
		limit = -1
	}
	rows, err := s.r.query(ctx, `SELECT `+notificationCols+` FROM notifications n
		WHERE n.status = 'queued' AND n.published_at IS NULL AND n.created_at < ?
		ORDER BY n.created_at, n.seq LIMIT ?`, ms(before), limit)
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
// returns them, earliest first. The move happens in one write transaction,
// so concurrent callers never get the same send.
func (s *Store) DueScheduled(ctx context.Context, dueAt time.Time, limit int) ([]store.Notification, error) {
	if limit <= 0 {
		limit = -1
	}
	var out []store.Notification
	err := s.write(ctx, func(tx wtx) error {
		rows, err := tx.query(`UPDATE notifications SET status = 'queued'
			WHERE seq IN (SELECT seq FROM notifications
				WHERE status = 'scheduled' AND scheduled_at <= ? ORDER BY scheduled_at, seq LIMIT ?)
			RETURNING `+notificationReturning, ms(dueAt), limit)
		if err != nil {
			return err
		}
		out, err = scanNotifications(rows)
		return err
	})
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
	err := s.write(ctx, func(tx wtx) error {
		err := tx.queryRow(`UPDATE notifications SET status = 'sending', started_at = ?, waves = ?
			WHERE id = ? AND status = 'queued' RETURNING `+notificationReturning, ms(now(at)), len(waves), id).
			Scan(notificationDest(&n)...)
		if err == nil {
			for i, due := range waves {
				if _, err := tx.exec(`INSERT INTO notification_waves (notification_id, wave, due_at) VALUES (?, ?, ?)`,
					id, i, ms(due)); err != nil {
					return err
				}
			}
			return nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		err = tx.queryRow(`SELECT `+notificationCols+` FROM notifications n WHERE n.id = ?`, id).
			Scan(notificationDest(&n)...)
		if err != nil {
			return notFound(err)
		}
		if n.Status != store.StatusSending {
			return fmt.Errorf("%w: notification is %s", store.ErrConflict, n.Status)
		}
		return nil
	})
	if err != nil {
		return store.Notification{}, fmt.Errorf("starting send: %w", err)
	}
	return n, nil
}

// FailNotification turns a scheduled, queued, held or sending notification
// into failed with a reason. A draft or a finished one is store.ErrConflict.
func (s *Store) FailNotification(ctx context.Context, id, reason string, at time.Time) error {
	err := s.write(ctx, func(tx wtx) error {
		res, err := tx.exec(`UPDATE notifications SET status = 'failed', error = ?, finished_at = ?
			WHERE id = ? AND status IN ('scheduled', 'queued', 'held_for_review', 'sending')`, reason, ms(now(at)), id)
		if err != nil {
			return err
		}
		if err := affected(res); err == nil {
			return nil
		}
		var status string
		if err := tx.queryRow(`SELECT status FROM notifications WHERE id = ?`, id).Scan(&status); err != nil {
			return notFound(err)
		}
		return fmt.Errorf("%w: notification is %s", store.ErrConflict, status)
	})
	if err != nil {
		return fmt.Errorf("failing notification: %w", err)
	}
	return nil
}
