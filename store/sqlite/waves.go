package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/relaybell/relaybell/store"
)

// DueWaves leases the unpublished waves of sending notifications that are
// due, earliest first. SQLite has one writer, so the transaction alone
// keeps two callers from leasing the same wave.
func (s *Store) DueWaves(ctx context.Context, at time.Time, lease time.Duration, limit int) ([]store.Wave, error) {
	t := ms(now(at))
	var out []store.Wave
	err := s.write(ctx, func(tx wtx) error {
		out = nil
		rows, err := tx.query(`SELECT w.notification_id, w.wave, w.due_at
			FROM notification_waves w JOIN notifications n ON n.id = w.notification_id
			WHERE w.published_at IS NULL AND w.due_at <= ?1 AND coalesce(w.leased_until, 0) <= ?1
			  AND n.status = 'sending'
			ORDER BY w.due_at, w.notification_id, w.wave LIMIT ?2`, t, limit)
		if err != nil {
			return err
		}
		for rows.Next() {
			var w store.Wave
			if err := rows.Scan(&w.NotificationID, &w.Wave, msTime{&w.Due}); err != nil {
				rows.Close()
				return err
			}
			out = append(out, w)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, w := range out {
			if _, err := tx.exec(`UPDATE notification_waves SET leased_until = ? WHERE notification_id = ? AND wave = ?`,
				t+lease.Milliseconds(), w.NotificationID, w.Wave); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("leasing due waves: %w", err)
	}
	return out, nil
}

// MarkWavePublished records that a wave's shard tasks reached the bus.
func (s *Store) MarkWavePublished(ctx context.Context, notificationID string, wave int, at time.Time) error {
	res, err := s.w.exec(ctx, `UPDATE notification_waves SET published_at = ? WHERE notification_id = ? AND wave = ?`,
		ms(now(at)), notificationID, wave)
	if err == nil {
		err = affected(res)
	}
	if err != nil {
		return fmt.Errorf("marking wave published: %w", err)
	}
	return nil
}

// SetABWinner records the winner once; the first call decides.
func (s *Store) SetABWinner(ctx context.Context, id, variant string) (string, error) {
	var winner string
	err := s.write(ctx, func(tx wtx) error {
		if _, err := tx.exec(`UPDATE notifications SET ab_winner = ? WHERE id = ? AND ab_winner = ''`, variant, id); err != nil {
			return err
		}
		return notFound(tx.queryRow(`SELECT ab_winner FROM notifications WHERE id = ?`, id).Scan(&winner))
	})
	if err != nil {
		return "", fmt.Errorf("setting A/B winner: %w", err)
	}
	return winner, nil
}

// AudienceZones lists the distinct (time zone, smart hour) pairs of the
// website's subscribed subscribers.
func (s *Store) AudienceZones(ctx context.Context, websiteID string) ([]store.Zone, error) {
	rows, err := s.r.query(ctx, `SELECT DISTINCT timezone, smart_hour FROM subscribers
		WHERE website_id = ? AND unsubscribed_at IS NULL`, websiteID)
	if err != nil {
		return nil, fmt.Errorf("listing audience zones: %w", err)
	}
	defer rows.Close()
	var out []store.Zone
	for rows.Next() {
		var (
			z    store.Zone
			hour sql.NullInt64
		)
		if err := rows.Scan(&z.Timezone, &hour); err != nil {
			return nil, fmt.Errorf("listing audience zones: %w", err)
		}
		if hour.Valid {
			h := int(hour.Int64)
			z.SmartHour = &h
		}
		out = append(out, z)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing audience zones: %w", err)
	}
	store.SortZones(out)
	return out, nil
}

// LearnActivity adds weight to the subscriber's local hour of at and keeps
// smart_hour the heaviest hour.
func (s *Store) LearnActivity(ctx context.Context, subscriberID string, at time.Time, weight int) error {
	if err := s.write(ctx, func(tx wtx) error { return learnActivity(tx, subscriberID, at, weight) }); err != nil {
		return fmt.Errorf("learning activity: %w", err)
	}
	return nil
}

// learnActivity is LearnActivity in tx.
func learnActivity(tx wtx, subscriberID string, at time.Time, weight int) error {
	var subTZ, siteTZ string
	err := tx.queryRow(`SELECT s.timezone, w.timezone FROM subscribers s JOIN websites w ON w.id = s.website_id
		WHERE s.id = ?`, subscriberID).Scan(&subTZ, &siteTZ)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	if _, err := tx.exec(`INSERT INTO subscriber_activity (subscriber_id, hour, weight) VALUES (?, ?, ?)
		ON CONFLICT (subscriber_id, hour) DO UPDATE SET weight = weight + excluded.weight`,
		subscriberID, store.LocalHour(at, subTZ, siteTZ), weight); err != nil {
		return err
	}
	_, err = tx.exec(`UPDATE subscribers SET smart_hour = (SELECT hour FROM subscriber_activity
		WHERE subscriber_id = ?1 ORDER BY weight DESC, hour LIMIT 1) WHERE id = ?1`, subscriberID)
	return err
}
