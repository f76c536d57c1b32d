package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/relaybell/relaybell/store"
)

// UpdateWebsite changes a website's time zone and settings in one
// transaction, holding the website's row.
func (s *Store) UpdateWebsite(ctx context.Context, id string, change func(*store.Website) error) (store.Website, error) {
	var w store.Website
	err := s.inTx(ctx, false, func(tx pgx.Tx) error {
		w = store.Website{}
		if err := tx.QueryRow(ctx, `SELECT `+websiteCols+` FROM websites w WHERE w.id = $1 FOR UPDATE`, id).Scan(websiteDest(&w)...); err != nil {
			return mapErr(err)
		}
		if err := change(&w); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE websites SET timezone = $1, settings = $2 WHERE id = $3`, w.Timezone, w.Settings, id)
		return err
	})
	if err != nil {
		return store.Website{}, fmt.Errorf("updating website: %w", err)
	}
	return w, nil
}

// errNoRoom rolls back a take that found a limit without room.
var errNoRoom = errors.New("no room")

// TakeRateLimits counts n uses against every limit, all or none. The
// upsert holds each counter's row until the transaction ends, so concurrent
// takes on several API nodes never overrun a limit.
func (s *Store) TakeRateLimits(ctx context.Context, limits []store.RateLimit, n int64, now time.Time) ([]int64, bool, error) {
	used := make([]int64, len(limits))
	err := s.inTx(ctx, true, func(tx pgx.Tx) error {
		for i, l := range limits {
			start := windowStart(l, now)
			if _, err := tx.Exec(ctx, `DELETE FROM rate_counters WHERE key = $1 AND window_start < $2`, l.Key, start); err != nil {
				return err
			}
			err := tx.QueryRow(ctx, `INSERT INTO rate_counters AS c (key, window_start, count) VALUES ($1, $2, $3)
				ON CONFLICT (key, window_start) DO UPDATE SET count = c.count + excluded.count
				WHERE c.count + excluded.count <= $4 RETURNING c.count`, l.Key, start, n, l.Max).Scan(&used[i])
			if errors.Is(err, pgx.ErrNoRows) || (err == nil && used[i] > l.Max) {
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
			err := s.pool.QueryRow(ctx, `SELECT count FROM rate_counters WHERE key = $1 AND window_start = $2`,
				l.Key, windowStart(l, now)).Scan(&used[i])
			if errors.Is(err, pgx.ErrNoRows) {
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
