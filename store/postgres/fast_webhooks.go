package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/relaybell/relaybell/store/sqlstore"
)

// Pipeline makes conn a sqlstore.Pipeliner: the queries go to the server
// in one pgx batch, one round trip, and each one's rows are read, in
// order, once the server has run them all; the first error ends the
// batch (a transaction is then aborted, and the queries after it not
// run). A transaction's batch that comes first follows a BEGIN of its own
// (tx.SendBatch). BenchmarkQueueWebhookDeliveries and
// BenchmarkRegisterCPU measure it against one statement after another.
func (c conn) Pipeline(ctx context.Context, queries []sqlstore.Piped) error {
	sender, ok := c.q.(interface {
		SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
	})
	if !ok {
		return fmt.Errorf("a pipeline on a %T, which cannot send a batch", c.q)
	}
	batch := &pgx.Batch{}
	for _, q := range queries {
		queued := batch.Queue(q.SQL, q.Args...)
		if q.Read != nil {
			queued.Query(func(rows pgx.Rows) error { return q.Read(rows) })
		}
	}
	return sender.SendBatch(ctx, batch).Close()
}
