package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/relaybell/relaybell/store"
)

// DueWaves leases the unpublished waves of sending notifications that are
// due, earliest first (a limit of 0 or less: all), in one statement. On
// PostgreSQL the picked waves are locked with SKIP LOCKED, so sweepers on
// other nodes lease the next ones instead of waiting; SQLite's one writer
// runs the statement alone.
func (s *Store) DueWaves(ctx context.Context, at time.Time, lease time.Duration, limit int) ([]store.Wave, error) {
	at = nowOr(at)
	rows, err := s.db.Write().Query(ctx, `UPDATE notification_waves SET leased_until = $2
		FROM (SELECT w.notification_id AS due_id, w.wave AS due_wave
			FROM notification_waves w JOIN notifications n ON n.id = w.notification_id
			WHERE w.published_at IS NULL AND w.due_at <= $1
			  AND (w.leased_until IS NULL OR w.leased_until <= $1) AND n.status = 'sending'
			ORDER BY w.due_at, w.notification_id, w.wave LIMIT $3
			`+s.d.SkipLocked("w")+`) due
		WHERE notification_id = due.due_id AND wave = due.due_wave
		RETURNING notification_id, wave, due_at`, s.time(at), s.time(at.Add(lease)), limitArg(limit))
	out, err := CollectRows(rows, err, func(w *store.Wave) []any {
		return []any{&w.NotificationID, &w.Wave, timeDest{&w.Due}}
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
	if err := affected(s.db.Write().Exec(ctx, `UPDATE notification_waves SET published_at = $1
		WHERE notification_id = $2 AND wave = $3`, s.now(at), notificationID, wave)); err != nil {
		return fmt.Errorf("marking wave published: %w", err)
	}
	return nil
}

// SetABWinner records the winner once; the first call decides. The UPDATE
// is conditional on no winner yet, which PostgreSQL checks again on the row
// it locks, so of concurrent calls one sets it; a winner is never changed,
// so the one read after finding it set is final.
func (s *Store) SetABWinner(ctx context.Context, id, variant string) (string, error) {
	var winner string
	err := s.db.Write().QueryRow(ctx, `UPDATE notifications SET ab_winner = $1 WHERE id = $2 AND ab_winner = ''
		RETURNING ab_winner`, variant, id).Scan(&winner)
	if errors.Is(err, sql.ErrNoRows) {
		err = s.db.Read().QueryRow(ctx, `SELECT ab_winner FROM notifications WHERE id = $1`, id).Scan(&winner)
	}
	if err != nil {
		return "", fmt.Errorf("setting A/B winner: %w", s.mapErr(err))
	}
	return winner, nil
}

// AudienceZones lists the distinct (time zone, smart hour) pairs of the
// website's subscribed subscribers.
func (s *Store) AudienceZones(ctx context.Context, websiteID string) ([]store.Zone, error) {
	rows, err := s.db.Read().Query(ctx, `SELECT DISTINCT timezone, smart_hour FROM subscribers
		WHERE website_id = $1 AND unsubscribed_at IS NULL`, websiteID)
	out, err := CollectRows(rows, err, func(z *store.Zone) []any { return []any{&z.Timezone, &z.SmartHour} })
	if err != nil {
		return nil, fmt.Errorf("listing audience zones: %w", err)
	}
	store.SortZones(out)
	return out, nil
}

// LearnActivity adds weight to the subscriber's local hour of at and keeps
// smart_hour the heaviest hour.
func (s *Store) LearnActivity(ctx context.Context, subscriberID string, at time.Time, weight int) error {
	err := s.db.Tx(ctx, TxOptions{}, func(tx Conn) error { return s.learnActivity(ctx, tx, subscriberID, at, weight) })
	if err != nil {
		return fmt.Errorf("learning activity: %w", err)
	}
	return nil
}

// learnActivity is LearnActivity in tx (a registration's, with its visit).
// On PostgreSQL the subscriber's row is locked first, so concurrent visits
// of one subscriber count one after the other.
func (s *Store) learnActivity(ctx context.Context, tx Conn, subscriberID string, at time.Time, weight int) error {
	var subTZ, siteTZ string
	err := tx.QueryRow(ctx, `SELECT s.timezone, w.timezone FROM subscribers s JOIN websites w ON w.id = s.website_id
		WHERE s.id = $1 `+s.d.ForUpdate("s"), subscriberID).Scan(&subTZ, &siteTZ)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	return s.learnHour(ctx, tx, subscriberID, store.LocalHour(at, subTZ, siteTZ), weight, -1)
}

// learnHour adds weight to the subscriber's hour and sets their smart hour
// to the heaviest; the caller holds the subscriber's row. smart is the
// smart hour as stored (-1: unknown): weight added to it keeps it the
// heaviest, so it is not set again (a regular visitor's usual hour).
func (s *Store) learnHour(ctx context.Context, tx Conn, subscriberID string, hour, weight, smart int) error {
	if err := s.addVisits(ctx, tx, []visit{{subscriberID, hour, weight}}); err != nil {
		return err
	}
	if hour == smart && weight > 0 {
		return nil
	}
	return s.resetSmartHours(ctx, tx, []string{subscriberID})
}

// visit is weight to add to a subscriber's hour.
type visit struct {
	subscriber   string
	hour, weight int
}

// addVisits adds each visit's weight to its subscriber's hour, a
// statement for up to rowsPerInsert of them; a subscriber is named once.
func (s *Store) addVisits(ctx context.Context, tx Conn, visits []visit) error {
	return Pipeline(ctx, tx, visitQueries(visits))
}

// visitQueries are addVisits' statements, for a pipeline of the caller's.
func visitQueries(visits []visit) []Piped {
	var out []Piped
	for chunk := range slices.Chunk(visits, rowsPerInsert) {
		args := make([]any, 0, 3*len(chunk))
		for _, v := range chunk {
			args = append(args, v.subscriber, v.hour, v.weight)
		}
		out = append(out, Piped{SQL: `INSERT INTO subscriber_activity (subscriber_id, hour, weight)
			VALUES ` + valuesList(len(chunk), 3, nil) + `
			ON CONFLICT (subscriber_id, hour) DO UPDATE SET weight = subscriber_activity.weight + excluded.weight`,
			Args: args})
	}
	return out
}

// resetSmartHours sets the subscribers' smart hours to their heaviest.
func (s *Store) resetSmartHours(ctx context.Context, tx Conn, subscriberIDs []string) error {
	_, err := tx.Exec(ctx, `UPDATE subscribers SET smart_hour = (SELECT hour FROM subscriber_activity
		WHERE subscriber_id = subscribers.id ORDER BY weight DESC, hour LIMIT 1) WHERE `+s.d.In("id", "$1"),
		s.d.List(subscriberIDs))
	return err
}
