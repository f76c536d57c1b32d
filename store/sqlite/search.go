package sqlite

import (
	"context"
	"fmt"

	"github.com/relaybell/relaybell/store"
)

// searchBatch is how many notifications one write of backfillSearch fills
// in.
const searchBatch = 500

// pendingSearchQuery reads a batch of the notifications whose search
// backfillSearch fills in, from the notifications_search_pending index.
const pendingSearchQuery = `SELECT seq, title, body FROM notifications
	WHERE search = '' AND seq > ? ORDER BY seq LIMIT ?`

// backfillSearch fills in the search column (store.SearchText) of the
// notifications written before it existed (migration 11). It runs at every
// Open, and once they are done finds nothing to do without reading the
// table: the notifications_search_pending index holds only them. Each
// batch is one write, so another process opening the file waits for one
// batch at most.
func (s *Store) backfillSearch(ctx context.Context) error {
	var after int64 // the seq of the last row filled in
	filled := 0
	for {
		n := 0
		err := s.write(ctx, func(tx wtx) error {
			n = 0
			// Run once per Open: not for the statement cache.
			rows, err := tx.tx.QueryContext(ctx, pendingSearchQuery, after, searchBatch)
			if err != nil {
				return err
			}
			type pending struct {
				seq         int64
				title, body string
			}
			var batch []pending
			for rows.Next() {
				var p pending
				if err := rows.Scan(&p.seq, &p.title, &p.body); err != nil {
					rows.Close()
					return err
				}
				batch = append(batch, p)
			}
			if err := rows.Close(); err != nil {
				return err
			}
			if err := rows.Err(); err != nil {
				return err
			}
			for _, p := range batch {
				if _, err := tx.tx.ExecContext(ctx, `UPDATE notifications SET search = ? WHERE seq = ?`,
					store.SearchText(p.title, p.body), p.seq); err != nil {
					return err
				}
				after = p.seq
			}
			n = len(batch)
			return nil
		})
		if err != nil {
			return fmt.Errorf("filling in the notification search: %w", err)
		}
		filled += n
		if n < searchBatch {
			break
		}
	}
	if filled > 0 {
		s.logger.Info("filled in the notification search", "notifications", filled)
	}
	return nil
}
