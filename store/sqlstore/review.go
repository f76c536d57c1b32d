package sqlstore

import (
	"context"
	"fmt"
	"time"

	"github.com/relaybell/relaybell/store"
)

// ReviewNotification decides a send held for review, in one conditional
// UPDATE: of concurrent decisions exactly one finds it held.
func (s *Store) ReviewNotification(ctx context.Context, id string, approve bool, at time.Time) (store.Notification, error) {
	set := `status = CASE WHEN scheduled_at IS NULL THEN 'queued' ELSE 'scheduled' END`
	args := []any{id}
	if !approve {
		set = `status = 'failed', error = 'review_rejected', finished_at = $2`
		args = append(args, s.now(at))
	}
	var n store.Notification
	err := s.db.Write().QueryRow(ctx, `UPDATE notifications SET `+set+`
		WHERE id = $1 AND status = 'held_for_review' RETURNING `+notificationCols, args...).Scan(notificationDest(&n)...)
	if err != nil {
		return store.Notification{}, fmt.Errorf("reviewing notification: %w", s.mapErr(err))
	}
	return n, nil
}

// HeldForReview lists sends held for review, oldest first. A limit of 0 or
// less means no limit.
func (s *Store) HeldForReview(ctx context.Context, limit int) ([]store.Notification, error) {
	out, err := queryNotifications(ctx, s.db.Read(), `SELECT `+notificationCols+` FROM notifications
		WHERE status = 'held_for_review' ORDER BY seq LIMIT $1`, limitArg(limit))
	if err != nil {
		return nil, fmt.Errorf("listing held notifications: %w", err)
	}
	return out, nil
}

// LargestSend is the most recipients a started send of the website reached.
func (s *Store) LargestSend(ctx context.Context, websiteID string) (int64, error) {
	var n int64
	err := s.db.Read().QueryRow(ctx, `SELECT coalesce(max(recipients), 0) FROM notifications
		WHERE website_id = $1 AND status IN ('sending', 'sent')`, websiteID).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("largest send: %w", err)
	}
	return n, nil
}
