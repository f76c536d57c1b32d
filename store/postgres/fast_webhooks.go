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
	sender, err := batchSender(tx)
	if err != nil {
		return err
	}
	batch := &pgx.Batch{}
	for _, a := range args {
		batch.Queue(query, a...)
	}
	return sender.SendBatch(ctx, batch).Close()
}

// Pipeline makes conn a sqlstore.Pipeliner: the queries go to the server
// in one pgx batch, one round trip, and each one's rows are read, in
// order, once the server has run them all; the first error ends the
// batch (a transaction is then aborted, and the queries after it not
// run).
func (c conn) Pipeline(ctx context.Context, queries []sqlstore.Piped) error {
	sender, err := batchSender(c)
	if err != nil {
		return err
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

// batchSender is tx's way to send a pgx batch: a transaction's (tx.SendBatch,
// which begins it first if need be).
func batchSender(tx sqlstore.Conn) (interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}, error) {
	c, ok := tx.(conn)
	if !ok {
		return nil, fmt.Errorf("batch on a %T, not a PostgreSQL connection", tx)
	}
	sender, ok := c.q.(interface {
		SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
	})
	if !ok {
		return nil, fmt.Errorf("batch on a %T, which cannot send one", c.q)
	}
	return sender, nil
}
