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

// IntentPublisher is a Dispatcher whose two halves the pool can run
// apart (Outbox is one): each send's intent published by a worker, and the
// sends published meanwhile recorded together, one store write for many
// where each took its own.
type IntentPublisher interface {
	PublishIntent(ctx context.Context, n store.Notification) error
	MarkAllPublished(ctx context.Context, ids []string) error
}

// markBatch bounds the sends one MarkAllPublished records.
const markBatch = 500

// Run publishes queued sends until ctx ends; what is still queued then is
// left to the outbox sweep. With an IntentPublisher the workers publish
// and one recorder marks what they published: it writes as soon as the
// last write ended, everything published meanwhile (up to markBatch). A
// send published but not yet marked when the process dies is published
// again by the sweep after its grace: fan-out takes an intent twice as
// once.
func (p *DispatchPool) Run(ctx context.Context) error {
	ip, split := p.d.(IntentPublisher)
	var marks chan string
	var wg sync.WaitGroup
	if split {
		marks = make(chan string, cap(p.q)+markBatch)
		wg.Go(func() { p.mark(ctx, ip, marks) })
	}
	for range p.workers {
		wg.Go(func() {
			for {
				select {
				case <-ctx.Done():
					return
				case n := <-p.q:
					var err error
					if split {
						if err = ip.PublishIntent(ctx, n); err == nil {
							select {
							case marks <- n.ID:
							case <-ctx.Done():
							}
						}
					} else {
						err = p.d.Dispatch(ctx, n)
					}
					if err != nil && ctx.Err() == nil {
						p.logger.Warn("dispatching a send; the outbox sweep will retry", "notification_id", n.ID, "err", err)
					}
				}
			}
		})
	}
	wg.Wait()
	return nil
}

// mark records the sends the workers published, many at a time.
func (p *DispatchPool) mark(ctx context.Context, ip IntentPublisher, marks <-chan string) {
	ids := make([]string, 0, markBatch)
	for {
		select {
		case <-ctx.Done():
			return
		case id := <-marks:
			ids = append(ids, id)
		}
	gather:
		for len(ids) < markBatch {
			select {
			case id := <-marks:
				ids = append(ids, id)
			default:
				break gather
			}
		}
		if err := ip.MarkAllPublished(ctx, ids); err != nil && ctx.Err() == nil {
			p.logger.Warn("marking sends published; the outbox sweep will publish them again", "sends", len(ids), "err", err)
		}
		ids = ids[:0]
	}
}
