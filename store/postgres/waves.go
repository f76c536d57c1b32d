package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/relaybell/relaybell/store"
)

// DueWaves leases the unpublished waves of sending notifications that are
// due, earliest first; SKIP LOCKED lets sweepers on other nodes lease the
// next ones instead of waiting.
func (s *Store) DueWaves(ctx context.Context, at time.Time, lease time.Duration, limit int) ([]store.Wave, error) {
	t := now(at)
	rows, err := s.pool.Query(ctx, `UPDATE notification_waves w SET leased_until = $2
		FROM (SELECT w.notification_id, w.wave
			FROM notification_waves w JOIN notifications n ON n.id = w.notification_id
			WHERE w.published_at IS NULL AND w.due_at <= $1
			  AND (w.leased_until IS NULL OR w.leased_until <= $1) AND n.status = 'sending'
			ORDER BY w.due_at, w.notification_id, w.wave LIMIT $3
			FOR UPDATE OF w SKIP LOCKED) due
		WHERE w.notification_id = due.notification_id AND w.wave = due.wave
		RETURNING w.notification_id, w.wave, w.due_at`, t, t.Add(lease), limit)
	if err != nil {
		return nil, fmt.Errorf("leasing due waves: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Wave, error) {
		var w store.Wave
		err := r.Scan(&w.NotificationID, &w.Wave, &w.Due)
		w.Due = w.Due.UTC()
		return w, err
	})
	if err != nil {
		return nil, fmt.Errorf("leasing due waves: %w", err)
	}
	// RETURNING keeps no order.
	store.SortWaves(out)
	return out, nil
}

// MarkWavePublished records that a wave's shard tasks reached the bus.
func (s *Store) MarkWavePublished(ctx context.Context, notificationID string, wave int, at time.Time) error {
	tag, err := s.pool.Exec(ctx, `UPDATE notification_waves SET published_at = $1 WHERE notification_id = $2 AND wave = $3`,
		now(at), notificationID, wave)
	if err == nil && tag.RowsAffected() == 0 {
		err = store.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("marking wave published: %w", err)
	}
	return nil
}

// SetABWinner records the winner once; the first call decides.
func (s *Store) SetABWinner(ctx context.Context, id, variant string) (string, error) {
	var winner string
	err := s.pool.QueryRow(ctx, `WITH upd AS (
			UPDATE notifications SET ab_winner = $2 WHERE id = $1 AND ab_winner = '' RETURNING ab_winner
		)
		SELECT ab_winner FROM upd UNION ALL SELECT ab_winner FROM notifications WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM upd)`,
		id, variant).Scan(&winner)
	if err != nil {
		return "", fmt.Errorf("setting A/B winner: %w", mapErr(err))
	}
	return winner, nil
}

// AudienceZones lists the distinct (time zone, smart hour) pairs of the
// website's subscribed subscribers.
func (s *Store) AudienceZones(ctx context.Context, websiteID string) ([]store.Zone, error) {
	rows, err := s.pool.Query(ctx, `SELECT DISTINCT timezone, smart_hour FROM subscribers
		WHERE website_id = $1 AND unsubscribed_at IS NULL`, websiteID)
	if err != nil {
		return nil, fmt.Errorf("listing audience zones: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Zone, error) {
		var z store.Zone
		err := r.Scan(&z.Timezone, &z.SmartHour)
		return z, err
	})
	if err != nil {
		return nil, fmt.Errorf("listing audience zones: %w", err)
	}
	store.SortZones(out)
	return out, nil
}

// LearnActivity adds weight to the subscriber's local hour of at and keeps
// smart_hour the heaviest hour. The subscriber row is locked first, so
// concurrent visits of one subscriber count one after the other.
func (s *Store) LearnActivity(ctx context.Context, subscriberID string, at time.Time, weight int) error {
	err := s.inTx(ctx, false, func(tx pgx.Tx) error { return learnActivity(ctx, tx, subscriberID, at, weight) })
	if err != nil {
		return fmt.Errorf("learning activity: %w", err)
	}
	return nil
}

// learnActivity is LearnActivity in tx.
func learnActivity(ctx context.Context, tx pgx.Tx, subscriberID string, at time.Time, weight int) error {
	var subTZ, siteTZ string
	err := tx.QueryRow(ctx, `SELECT s.timezone, w.timezone FROM subscribers s JOIN websites w ON w.id = s.website_id
		WHERE s.id = $1 FOR UPDATE OF s`, subscriberID).Scan(&subTZ, &siteTZ)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO subscriber_activity (subscriber_id, hour, weight) VALUES ($1, $2, $3)
		ON CONFLICT (subscriber_id, hour) DO UPDATE SET weight = subscriber_activity.weight + excluded.weight`,
		subscriberID, store.LocalHour(at, subTZ, siteTZ), weight); err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `UPDATE subscribers SET smart_hour = (SELECT hour FROM subscriber_activity
		WHERE subscriber_id = $1 ORDER BY weight DESC, hour LIMIT 1) WHERE id = $1`, subscriberID)
	return err
}
