package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/relaybell/relaybell/store/sqlstore"
)

// execBatch is the dialect's ExecBatch: the statements go to the server in
// one pgx batch, one round trip where an Exec each waits for every one
// (BenchmarkQueueWebhookDeliveries: batch against loop).
func execBatch(ctx context.Context, tx sqlstore.Conn, query string, args [][]any) error {
	c, ok := tx.(conn)
	if !ok {
		return fmt.Errorf("batch on a %T, not a PostgreSQL connection", tx)
	}
	sender, ok := c.q.(interface {
		SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
	})
	if !ok {
		return fmt.Errorf("batch on a %T, which cannot send one", c.q)
	}
	batch := &pgx.Batch{}
	for _, a := range args {
		batch.Queue(query, a...)
	}
	return sender.SendBatch(ctx, batch).Close()
}
