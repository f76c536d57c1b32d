package events

import (
	"context"
	"sync"
	"time"
)

// batchTimeout bounds one batch's store call: it runs on behalf of several
// requests, so none of their contexts is its own.
const batchTimeout = 10 * time.Second

// batcher shares store calls between concurrent requests (group commit):
// a request's item joins the batch being gathered while another call is
// in flight, and the next call takes every item gathered. An idle batcher
// calls at once, so a lone request waits for nothing more than its own
// call. Each request gets its own answer and returns only once the call
// holding its item returned: a write is durable when the request is
// answered (a process killed with -9 loses only requests not answered
// yet).
//
// No goroutine waits for work: the first request to find no call in flight
// makes the call itself, and the next batch, when one gathered meanwhile,
// is made by a goroutine of its own, so that no request waits for more
// than the call in flight and its own.
type batcher[In, Out any] struct {
	call func(ctx context.Context, items []In) ([]Out, error)

	mu      sync.Mutex
	busy    bool
	pending []In
	waiters []chan batchAnswer[Out]
}

type batchAnswer[Out any] struct {
	out Out
	err error
}

func newBatcher[In, Out any](call func(ctx context.Context, items []In) ([]Out, error)) *batcher[In, Out] {
	return &batcher[In, Out]{call: call}
}

// do adds item to the next batch and returns its answer. If ctx ends first
// do returns ctx.Err(); the item may still be written.
func (b *batcher[In, Out]) do(ctx context.Context, item In) (Out, error) {
	ch := make(chan batchAnswer[Out], 1)
	b.mu.Lock()
	b.pending = append(b.pending, item)
	b.waiters = append(b.waiters, ch)
	lead := !b.busy
	b.busy = true
	b.mu.Unlock()
	if lead {
		b.flush(ctx)
	}
	select {
	case a := <-ch:
		return a.out, a.err
	case <-ctx.Done():
		var zero Out
		return zero, ctx.Err()
	}
}

// flush makes one call with what is pending, then hands the next batch,
// if any gathered meanwhile, to a goroutine of its own.
func (b *batcher[In, Out]) flush(ctx context.Context) {
	b.mu.Lock()
	items, waiters := b.pending, b.waiters
	b.pending, b.waiters = nil, nil
	b.mu.Unlock()
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), batchTimeout)
	out, err := b.call(cctx, items)
	cancel()
	for i, w := range waiters {
		var a batchAnswer[Out]
		switch {
		case err != nil:
			a.err = err
		case i < len(out):
			a.out = out[i]
		}
		w <- a
	}
	b.mu.Lock()
	more := len(b.pending) > 0
	if !more {
		b.busy = false
	}
	b.mu.Unlock()
	if more {
		go b.flush(context.WithoutCancel(ctx))
	}
}
