// Package batch shares store calls between concurrent requests (group
// commit): a request's item joins the batch being gathered while another
// call is in flight, and the next call takes every item gathered. An idle
// batcher calls at once (unless it lingers, below), so a lone request
// waits for nothing more than its own call. Each request gets its own
// answer and returns only once the call holding its item returned: a
// write is durable when the request is answered (a process killed with -9
// loses only requests not answered yet).
//
// A batcher may linger (WithLinger): each call then waits a while for more
// items first. WhenBusy keeps that wait for when items arrive together (the
// last call held more than one): a lone request after a quiet spell is
// still called at once.
//
// No goroutine waits for work: the first request to find no call in
// flight makes the call itself, and the next batch, when one gathered
// meanwhile, is made by a goroutine of its own, so that no request waits
// for more than the call in flight and its own (and, lingering, their
// lingers).
//
// When a batch's call fails and the batcher has a call for one item, each
// item of the failed batch is tried again alone: one bad item fails only
// its own request, as the engines' fallback does. A batch of one item is
// made with that call too.
package batch

import (
	"context"
	"sync"
	"time"
)

// Timeout bounds one batch's call: it runs on behalf of several requests,
// so none of their contexts is its own.
const Timeout = 10 * time.Second

// Batcher gathers items of type In into calls answering Out for each.
type Batcher[In, Out any] struct {
	call func(ctx context.Context, items []In) ([]Out, error)
	one  func(ctx context.Context, item In) (Out, error)
	// max bounds the items of one call (0: no bound).
	max int
	// linger is how long a call waits for more items before it takes
	// what is pending (0: none); full ends the wait when max are.
	linger time.Duration
	full   chan struct{}
	// busyOnly: linger only after a call of more than one item (WhenBusy).
	busyOnly bool

	mu      sync.Mutex
	busy    bool
	pending []In
	waiters []chan answer[Out]
	last    int // the items of the last call
}

type answer[Out any] struct {
	out Out
	err error
}

// New returns a Batcher making call with each batch. call answers the
// items in their order (a shorter answer leaves the others' zero). one,
// when not nil, is what an item of a failed batch is tried again with,
// alone; without it each item of a failed batch gets the batch's error.
func New[In, Out any](call func(ctx context.Context, items []In) ([]Out, error), one func(ctx context.Context, item In) (Out, error)) *Batcher[In, Out] {
	return &Batcher[In, Out]{call: call, one: one}
}

// WithMax bounds the items of one call to max; the others wait for the
// next. It returns b.
func (b *Batcher[In, Out]) WithMax(max int) *Batcher[In, Out] {
	b.max = max
	return b
}

// WithLinger makes each call wait d for more items before it takes what
// is pending, unless max of them are already waiting: an idle batcher's
// lone item then waits d, for fewer, larger calls where the answer's
// latency matters less than the call's cost. It returns b.
func (b *Batcher[In, Out]) WithLinger(d time.Duration) *Batcher[In, Out] {
	b.linger = d
	b.full = make(chan struct{}, 1)
	return b
}

// WhenBusy makes the linger (WithLinger) apply only while the batcher is
// busy: after a call that held more than one item. An idle batcher's lone
// item is called at once, as without a linger; once items gather behind
// a call in flight, the calls after it linger, until one holds a single
// item again. It returns b.
func (b *Batcher[In, Out]) WhenBusy() *Batcher[In, Out] {
	b.busyOnly = true
	return b
}

// Do adds item to the next batch and returns its answer. If ctx ends first
// Do returns ctx.Err(); the item may still be written.
func (b *Batcher[In, Out]) Do(ctx context.Context, item In) (Out, error) {
	ch := make(chan answer[Out], 1)
	b.mu.Lock()
	b.pending = append(b.pending, item)
	b.waiters = append(b.waiters, ch)
	if b.full != nil && len(b.pending) == b.max {
		select {
		case b.full <- struct{}{}:
		default:
		}
	}
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

// Pending is how many items wait for the next call (tests use it).
func (b *Batcher[In, Out]) Pending() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.pending)
}

// flush makes one call with what is pending, then hands the next batch,
// if any gathered meanwhile, to a goroutine of its own.
func (b *Batcher[In, Out]) flush(ctx context.Context) {
	b.mu.Lock()
	wait := b.linger > 0 && (!b.busyOnly || b.last > 1) && (b.max <= 0 || len(b.pending) < b.max)
	b.mu.Unlock()
	if wait {
		t := time.NewTimer(b.linger)
		select {
		case <-t.C:
		case <-b.full: // max items wait
		}
		t.Stop()
	}
	b.mu.Lock()
	if b.full != nil {
		select {
		case <-b.full: // taken with these items: no use to the next call
		default:
		}
	}
	items, waiters := b.pending, b.waiters
	if b.max > 0 && len(items) > b.max {
		items, waiters = items[:b.max:b.max], waiters[:b.max:b.max]
		b.pending, b.waiters = b.pending[b.max:], b.waiters[b.max:]
	} else {
		b.pending, b.waiters = nil, nil
	}
	b.last = len(items)
	b.mu.Unlock()
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), Timeout)
	var (
		out []Out
		err error
	)
	if len(items) == 1 && b.one != nil {
		// A lone item goes as it would alone.
		var o Out
		o, err = b.one(cctx, items[0])
		out = []Out{o}
	} else {
		out, err = b.call(cctx, items)
	}
	cancel()
	for i, w := range waiters {
		var a answer[Out]
		switch {
		case err != nil && b.one != nil && len(items) > 1:
			// Alone, so that only the item at fault fails.
			octx, cancel := context.WithTimeout(context.WithoutCancel(ctx), Timeout)
			a.out, a.err = b.one(octx, items[i])
			cancel()
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
