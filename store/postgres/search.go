package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/relaybell/relaybell/store"
)

// searchBatch is how many notifications one statement of backfillSearch
// fills in.
const searchBatch = 500

// backfillSearch fills in the search column (store.SearchText) of the
// notifications written before it existed (migration 12). It runs at every
// Open, and once they are done finds nothing to do without reading the
// table: the notifications_search_pending index holds only them. Nodes
// opening together may fill in the same rows, each with what the other
// writes; a row filled in meanwhile is left alone.
func (s *Store) backfillSearch(ctx context.Context) error {
	var after int64 // the seq of the last row read
	filled := 0
	for {
		rows, err := s.pool.Query(ctx, `SELECT seq, id, title, body FROM notifications
			WHERE search = '' AND seq > $1 ORDER BY seq LIMIT $2`, after, searchBatch)
		if err != nil {
			return fmt.Errorf("filling in the notification search: %w", err)
		}
		var ids, texts []string
		var id, title, body string
		_, err = pgx.ForEachRow(rows, []any{&after, &id, &title, &body}, func() error {
			ids = append(ids, id)
			texts = append(texts, store.SearchText(title, body))
			return nil
		})
		if err != nil {
			return fmt.Errorf("filling in the notification search: %w", err)
		}
		if len(ids) > 0 {
			// inTx runs it again after a deadlock with another node
			// filling in the same rows in another order.
			var n int64
			err := s.inTx(ctx, false, func(tx pgx.Tx) error {
				tag, err := tx.Exec(ctx, `UPDATE notifications n SET search = u.search
					FROM unnest($1::text[], $2::text[]) AS u (id, search)
					WHERE n.id = u.id AND n.search = ''`, ids, texts)
				n = tag.RowsAffected()
				return err
			})
			if err != nil {
				return fmt.Errorf("filling in the notification search: %w", err)
			}
			filled += int(n)
		}
		if len(ids) < searchBatch {
			break
		}
	}
	if filled > 0 {
		s.logger.Info("filled in the notification search", "notifications", filled)
	}
	return nil
}
