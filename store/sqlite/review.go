package sqlite

import (
	"context"
	"fmt"
	"time"

	"github.com/relaybell/relaybell/store"
)

// ReviewNotification decides a send held for review.
func (s *Store) ReviewNotification(ctx context.Context, id string, approve bool, at time.Time) (store.Notification, error) {
	query := `UPDATE notifications SET status = CASE WHEN scheduled_at IS NULL THEN 'queued' ELSE 'scheduled' END
		WHERE id = ? AND status = 'held_for_review' RETURNING ` + notificationReturning
	args := []any{id}
	if !approve {
		query = `UPDATE notifications SET status = 'failed', error = 'review_rejected', finished_at = ?
			WHERE id = ? AND status = 'held_for_review' RETURNING ` + notificationReturning
		args = []any{ms(now(at)), id}
	}
	var n store.Notification
	err := s.write(ctx, func(tx wtx) error {
		return notFound(tx.queryRow(query, args...).Scan(notificationDest(&n)...))
	})
	if err != nil {
		return store.Notification{}, fmt.Errorf("reviewing notification: %w", err)
	}
	return n, nil
}

// HeldForReview lists sends held for review, oldest first.
func (s *Store) HeldForReview(ctx context.Context, limit int) ([]store.Notification, error) {
	rows, err := s.r.query(ctx, `SELECT `+notificationCols+` FROM notifications n
		WHERE n.status = 'held_for_review' ORDER BY n.seq LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("listing held notifications: %w", err)
	}
	out, err := scanNotifications(rows)
	if err != nil {
		return nil, fmt.Errorf("listing held notifications: %w", err)
	}
	return out, nil
}

// LargestSend is the most recipients a started send of the website reached.
func (s *Store) LargestSend(ctx context.Context, websiteID string) (int64, error) {
	var n int64
	err := s.r.queryRow(ctx, `SELECT coalesce(max(recipients), 0) FROM notifications
		WHERE website_id = ? AND status IN ('sending', 'sent')`, websiteID).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("largest send: %w", err)
	}
	return n, nil
}
