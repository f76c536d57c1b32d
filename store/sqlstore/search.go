package sqlstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/relaybell/relaybell/store"
)

// searchBatch is how many notifications one transaction of BackfillSearch
// fills in.
const searchBatch = 500

// searchPendingQuery reads a batch of the notifications whose search
// BackfillSearch fills in, from the notifications_search_pending index.
const searchPendingQuery = `SELECT seq, title, body FROM notifications
	WHERE search = '' AND seq > $1 ORDER BY seq LIMIT $2`

// BackfillSearch fills in the search column (store.SearchText) of the
// notifications written before it existed (migration 12). Each engine's
// Open runs it, after Migrate; on SQLite before the readers open, so it
// uses transactions only. Once the rows are
// done it finds nothing to do without reading the table: the
// notifications_search_pending index holds only them.
//
// Each batch is one transaction of two statements (the rows, then one
// UPDATE of them all), so another process opening the SQLite file waits for
// one batch at most. PostgreSQL nodes opening together may read the same
// rows: each fills a row in only while it is still empty, and a deadlock
// between them runs the batch again.
func (s *Store) BackfillSearch(ctx context.Context) error {
	var after int64 // the seq of the last row read
	filled := 0
	for {
		var (
			read, n int
			last    int64
		)
		// fn starts from scratch when PostgreSQL runs it again.
		err := s.db.Tx(ctx, TxOptions{}, func(tx Conn) error {
			read, n, last = 0, 0, after
			type pending struct {
				seq         int64
				title, body string
			}
			rows, err := tx.Query(ctx, searchPendingQuery, after, searchBatch)
			batch, err := CollectRows(rows, err, func(p *pending) []any { return []any{&p.seq, &p.title, &p.body} })
			if err != nil {
				return err
			}
			if read = len(batch); read == 0 {
				return nil
			}
			// One statement per batch: the pairs (seq, search) as VALUES,
			// whose columns both engines name column1 and column2.
			values := make([]string, read)
			args := make([]any, 0, 2*read)
			for i, p := range batch {
				values[i] = fmt.Sprintf("(CAST($%d AS bigint), $%d)", 2*i+1, 2*i+2)
				args = append(args, p.seq, store.SearchText(p.title, p.body))
			}
			changed, err := tx.Exec(ctx, `UPDATE notifications SET search = v.column2
				FROM (VALUES `+strings.Join(values, ", ")+`) AS v
				WHERE notifications.seq = v.column1 AND notifications.search = ''`, args...)
			n, last = int(changed), batch[read-1].seq
			return err
		})
		if err != nil {
			return fmt.Errorf("filling in the notification search: %w", err)
		}
		after, filled = last, filled+n
		if read < searchBatch {
			break
		}
	}
	if filled > 0 {
		s.log.Info("filled in the notification search", "notifications", filled)
	}
	return nil
}
