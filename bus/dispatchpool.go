package bus

import (
	"context"
	"log/slog"
	"sync"

	"github.com/relaybell/relaybell/store"
)

// Dispatcher publishes a committed send's intent (Outbox is one).
type Dispatcher interface {
	Dispatch(ctx context.Context, n store.Notification) error
}

// DispatchPool publishes intents from a few workers, so that a caller that
// stores many sends one after another (the automations engine: a message
// per person and step) does not wait for each publish's acknowledgement
// before storing the next. Dispatch queues the send and returns; with the
// queue full it waits. A send still queued when the process dies, or whose
// publish fails, is committed and unpublished: the outbox sweep re-drives
// it after its grace, as any other.
type DispatchPool struct {
	d       Dispatcher
	q       chan store.Notification
	workers int
	logger  *slog.Logger
}

// NewDispatchPool returns a pool of workers publishing through d, holding
// at most queue sends. Run starts the workers.
func NewDispatchPool(d Dispatcher, workers, queue int, logger *slog.Logger) *DispatchPool {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &DispatchPool{d: d, q: make(chan store.Notification, queue), workers: max(workers, 1), logger: logger}
}

// Dispatch queues n for a worker; it waits while the queue is full, until
// ctx ends.
func (p *DispatchPool) Dispatch(ctx context.Context, n store.Notification) error {
	select {
	case p.q <- n:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Run publishes queued sends until ctx ends; what is still queued then is
// left to the outbox sweep.
func (p *DispatchPool) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for range p.workers {
		wg.Go(func() {
			for {
				select {
				case <-ctx.Done():
					return
				case n := <-p.q:
					if err := p.d.Dispatch(ctx, n); err != nil && ctx.Err() == nil {
						p.logger.Warn("dispatching a send; the outbox sweep will retry", "notification_id", n.ID, "err", err)
					}
				}
			}
		})
	}
	wg.Wait()
	return nil
}
