package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/relaybell/relaybell/store"
)

// ReviewNotification decides a send held for review.
func (s *Store) ReviewNotification(ctx context.Context, id string, approve bool, at time.Time) (store.Notification, error) {
	query := `UPDATE notifications n SET status = CASE WHEN n.scheduled_at IS NULL THEN 'queued' ELSE 'scheduled' END
		WHERE n.id = $1 AND n.status = 'held_for_review' RETURNING ` + notificationCols
	args := []any{id}
	if !approve {
		query = `UPDATE notifications n SET status = 'failed', error = 'review_rejected', finished_at = $2
			WHERE n.id = $1 AND n.status = 'held_for_review' RETURNING ` + notificationCols
		args = append(args, ts(now(at)))
	}
	var n store.Notification
	if err := s.pool.QueryRow(ctx, query, args...).Scan(notificationDest(&n)...); err != nil {
		return store.Notification{}, fmt.Errorf("reviewing notification: %w", mapErr(err))
	}
	return n, nil
}

// HeldForReview lists sends held for review, oldest first.
func (s *Store) HeldForReview(ctx context.Context, limit int) ([]store.Notification, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+notificationCols+` FROM notifications n
		WHERE n.status = 'held_for_review' ORDER BY n.seq LIMIT $1`, limitArg(limit))
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
	err := s.pool.QueryRow(ctx, `SELECT coalesce(max(recipients), 0) FROM notifications
		WHERE website_id = $1 AND status IN ('sending', 'sent')`, websiteID).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("largest send: %w", err)
	}
	return n, nil
}
