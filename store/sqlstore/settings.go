package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/relaybell/relaybell/store"
)

// UpdateWebsite changes a website's time zone and settings in one
// transaction, holding the website's row (PostgreSQL) from the read to the
// write.
func (s *Store) UpdateWebsite(ctx context.Context, id string, change func(*store.Website) error) (store.Website, error) {
	var w store.Website
	err := s.db.Tx(ctx, TxOptions{}, func(tx Conn) error {
		w = store.Website{}
		if err := tx.QueryRow(ctx, `SELECT `+websiteCols+` FROM websites w WHERE w.id = $1 `+s.d.ForUpdate(), id).
			Scan(websiteDest(&w)...); err != nil {
			return s.mapErr(err)
		}
		if err := change(&w); err != nil {
			return err
		}
		settings, err := jsonText(w.Settings)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE websites SET timezone = $1, settings = $2 WHERE id = $3`, w.Timezone, settings, id)
		return err
	})
	if err != nil {
		return store.Website{}, fmt.Errorf("updating website: %w", err)
	}
	return w, nil
}

// errNoRoom rolls back a take that found a limit without room.
var errNoRoom = errors.New("no room")

// TakeRateLimits counts n uses against every limit, all or none. On
// PostgreSQL the upsert holds each counter's row until the transaction
// ends, so concurrent takes on several API nodes never overrun a limit; a
// take that lost the race to insert a window's row runs again.
func (s *Store) TakeRateLimits(ctx context.Context, limits []store.RateLimit, n int64, now time.Time) ([]int64, bool, error) {
	used := make([]int64, len(limits))
	err := s.db.Tx(ctx, TxOptions{RetryUnique: true}, func(tx Conn) error {
		for i, l := range limits {
			var err error
			if used[i], err = s.takeRateLimit(ctx, tx, l, n, now); err != nil {
				return err
			}
		}
		return nil
	})
	if errors.Is(err, errNoRoom) {
		for i, l := range limits {
			err := s.db.Read().QueryRow(ctx, `SELECT count FROM rate_counters WHERE key = $1 AND window_start = $2`,
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

// takeRateLimit counts n uses against l in tx when its window has room
// for them, and returns the window's uses after it; errNoRoom when it has
// none. Earlier windows of l's key go.
func (s *Store) takeRateLimit(ctx context.Context, tx Conn, l store.RateLimit, n int64, now time.Time) (int64, error) {
	start := windowStart(l, now)
	if _, err := tx.Exec(ctx, `DELETE FROM rate_counters WHERE key = $1 AND window_start < $2`, l.Key, start); err != nil {
		return 0, err
	}
	var used int64
	err := tx.QueryRow(ctx, `INSERT INTO rate_counters (key, window_start, count) VALUES ($1, $2, $3)
		ON CONFLICT (key, window_start) DO UPDATE SET count = rate_counters.count + excluded.count
		WHERE rate_counters.count + excluded.count <= $4 RETURNING count`, l.Key, start, n, l.Max).Scan(&used)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && used > l.Max) {
		return 0, errNoRoom
	}
	return used, err
}

// AddRateCounts adds each count to its window's counter and returns the
// totals, in one transaction; earlier windows of the same keys go. The
// counts come in key order (package ratelimit sorts them), so two nodes
// adding overlapping keys lock their rows in the same order.
func (s *Store) AddRateCounts(ctx context.Context, counts []store.RateCount, now time.Time) ([]int64, error) {
	totals := make([]int64, len(counts))
	err := s.db.Tx(ctx, TxOptions{RetryUnique: true}, func(tx Conn) error {
		if s.d.AddRateCounts != nil && len(counts) > 0 {
			got, err := s.d.AddRateCounts(ctx, tx, counts)
			copy(totals, got)
			return err
		}
		old := map[int64][]string{} // window start -> keys whose earlier windows go
		for i, c := range counts {
			start := c.Start.Unix()
			if c.N == 0 {
				err := tx.QueryRow(ctx, `SELECT count FROM rate_counters WHERE key = $1 AND window_start = $2`,
					c.Limit.Key, start).Scan(&totals[i])
				if errors.Is(err, sql.ErrNoRows) {
					totals[i], err = 0, nil
				}
				if err != nil {
					return err
				}
				continue
			}
			if err := tx.QueryRow(ctx, `INSERT INTO rate_counters (key, window_start, count) VALUES ($1, $2, $3)
				ON CONFLICT (key, window_start) DO UPDATE SET count = rate_counters.count + excluded.count
				RETURNING count`, c.Limit.Key, start, c.N).Scan(&totals[i]); err != nil {
				return err
			}
			old[start] = append(old[start], c.Limit.Key)
		}
		for start, keys := range old {
			if _, err := tx.Exec(ctx, `DELETE FROM rate_counters WHERE window_start < $1 AND `+s.d.In("key", "$2"),
				start, s.d.List(keys)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("adding rate counts: %w", err)
	}
	return totals, nil
}

// windowStart is the unix second l's window at at began.
func windowStart(l store.RateLimit, at time.Time) int64 {
	return l.WindowEnd(at).Unix() - int64(l.Window/time.Second)
}
