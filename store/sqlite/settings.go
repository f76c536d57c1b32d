package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/relaybell/relaybell/store"
)

// UpdateWebsite changes a website's time zone and settings in one
// transaction.
func (s *Store) UpdateWebsite(ctx context.Context, id string, change func(*store.Website) error) (store.Website, error) {
	var w store.Website
	err := s.write(ctx, func(tx wtx) error {
		w = store.Website{}
		if err := tx.queryRow(`SELECT `+websiteCols+` FROM websites w WHERE w.id = ?`, id).Scan(websiteDest(&w)...); err != nil {
			return notFound(err)
		}
		if err := change(&w); err != nil {
			return err
		}
		settings, err := json.Marshal(w.Settings)
		if err != nil {
			return err
		}
		_, err = tx.exec(`UPDATE websites SET timezone = ?, settings = ? WHERE id = ?`, w.Timezone, string(settings), id)
		return err
	})
	if err != nil {
		return store.Website{}, fmt.Errorf("updating website: %w", err)
	}
	return w, nil
}

// errNoRoom rolls back a take that found a limit without room.
var errNoRoom = errors.New("no room")

// TakeRateLimits counts n uses against every limit, all or none.
func (s *Store) TakeRateLimits(ctx context.Context, limits []store.RateLimit, n int64, now time.Time) ([]int64, bool, error) {
	used := make([]int64, len(limits))
	err := s.write(ctx, func(tx wtx) error {
		for i, l := range limits {
			start := windowStart(l, now)
			if _, err := tx.exec(`DELETE FROM rate_counters WHERE key = ? AND window_start < ?`, l.Key, start); err != nil {
				return err
			}
			err := tx.queryRow(`INSERT INTO rate_counters (key, window_start, count) VALUES (?, ?, ?)
				ON CONFLICT (key, window_start) DO UPDATE SET count = count + excluded.count
				WHERE count + excluded.count <= ? RETURNING count`, l.Key, start, n, l.Max).Scan(&used[i])
			if errors.Is(err, sql.ErrNoRows) || (err == nil && used[i] > l.Max) {
				return errNoRoom
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	if errors.Is(err, errNoRoom) {
		for i, l := range limits {
			err := s.r.queryRow(ctx, `SELECT count FROM rate_counters WHERE key = ? AND window_start = ?`,
				l.Key, windowStart(l, now)).Scan(&used[i])
			if errors.Is(err, sql.ErrNoRows) {
				used[i] = 0
			} else if err != nil {
				return nil, false, fmt.Errorf("reading rate limits: %w", err)
			}
		}
		return used, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("taking rate limits: %w", err)
	}
	return used, true, nil
}

func windowStart(l store.RateLimit, at time.Time) int64 {
	return l.WindowEnd(at).Unix() - int64(l.Window/time.Second)
}
