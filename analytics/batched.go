package analytics

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Batched is a Store whose concurrent Record calls share writes (group
// commit): events that arrive while a write is going on, or within gap of
// the last write's start, go to the underlying store together in the next
// write; max waiting events end the gap early. An idle store writes at
// once. Record still returns only once a write
// holding its events succeeded, so a caller that records results after its
// events never has a result without its event. Fewer, larger writes cost
// less: one SQLite transaction, or one Kafka record, per write.
//
// RecordBehaviors shares writes the same way: the behaviors waiting go to
// the store in one RecordBehaviors call of the next write (after the
// Record of the events waiting, so a write is two SQLite transactions when
// both wait), and count toward max with the events. Behaviors posted one
// at a time by many API keys so cost a transaction per write, not one each.
type Batched struct {
	Store
	gap time.Duration
	max int

	mu      sync.Mutex
	pending []Event
	waiters []chan error
	// pendingB and waitersB are the behaviors' pending and waiters.
	pendingB []Behavior
	waitersB []chan error
	full     chan struct{} // signalled when pending reaches max
	wake     chan struct{} // signalled when pending stops being empty
	closed   bool
	done     chan struct{}
}

// NewBatched wraps s; gap is the least time between the starts of two
// writes (0: back to back; a gap gathers more events per write, and delays
// each Record by up to that much) and max the waiting events and behaviors
// that end a gap (default 20,000).
func NewBatched(s Store, gap time.Duration, max int) *Batched {
	if max <= 0 {
		max = 20_000
	}
	b := &Batched{Store: s, gap: gap, max: max,
		full: make(chan struct{}, 1), wake: make(chan struct{}, 1), done: make(chan struct{})}
	go b.run()
	return b
}

// Record queues events for the next write and waits for its outcome. If
// ctx ends first Record returns ctx.Err(); the events may still be written.
// Events Check refuses are refused here, so they never fail the write of
// the others queued with them.
func (b *Batched) Record(ctx context.Context, events []Event) error {
	if len(events) == 0 {
		return nil
	}
	if err := Check(events); err != nil {
		return fmt.Errorf("recording events: %w", err)
	}
	ch := make(chan error, 1)
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return b.Store.Record(ctx, events)
	}
	b.pending = append(b.pending, events...)
	b.waiters = append(b.waiters, ch)
	n := len(b.pending) + len(b.pendingB)
	b.mu.Unlock()
	return b.wait(ctx, ch, n)
}

// RecordBehaviors queues behaviors for the next write and waits for its
// outcome, as Record does events; behaviors CheckBehaviors refuses are
// refused here.
func (b *Batched) RecordBehaviors(ctx context.Context, behaviors []Behavior) error {
	if len(behaviors) == 0 {
		return nil
	}
	if err := CheckBehaviors(behaviors); err != nil {
		return fmt.Errorf("recording behaviors: %w", err)
	}
	ch := make(chan error, 1)
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return b.Store.RecordBehaviors(ctx, behaviors)
	}
	b.pendingB = append(b.pendingB, behaviors...)
	b.waitersB = append(b.waitersB, ch)
	n := len(b.pending) + len(b.pendingB)
	b.mu.Unlock()
	return b.wait(ctx, ch, n)
}

// wait wakes the writer for what was just queued, n things now waiting,
// and waits for the outcome on ch.
func (b *Batched) wait(ctx context.Context, ch chan error, n int) error {
	signal(b.wake)
	if n >= b.max {
		signal(b.full)
	}
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

func (b *Batched) run() {
	defer close(b.done)
	for {
		<-b.wake
		start := time.Now()
		if !b.flush() {
			return
		}
		if wait := b.gap - time.Since(start); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-b.full:
				t.Stop()
			}
		}
	}
}

// flush writes what is pending; it reports false once closed.
func (b *Batched) flush() bool {
	b.mu.Lock()
	events, waiters, closed := b.pending, b.waiters, b.closed
	behaviors, waitersB := b.pendingB, b.waitersB
	b.pending, b.waiters, b.pendingB, b.waitersB = nil, nil, nil, nil
	b.mu.Unlock()
	if len(events) > 0 {
		err := b.Store.Record(context.Background(), events)
		for _, w := range waiters {
			w <- err
		}
	}
	if len(behaviors) > 0 {
		err := b.Store.RecordBehaviors(context.Background(), behaviors)
		for _, w := range waitersB {
			w <- err
		}
	}
	b.mu.Lock()
	more := len(b.pending) > 0 || len(b.pendingB) > 0
	b.mu.Unlock()
	if more {
		signal(b.wake)
	}
	return !closed
}

// Close writes what is pending, then closes the underlying store.
func (b *Batched) Close() error {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	signal(b.wake)
	signal(b.full)
	<-b.done // run has written everything queued before closed was set
	return b.Store.Close()
}
