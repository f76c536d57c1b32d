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
// once. Record still returns only once a write holding its events
// succeeded, so a caller that records results after its events never has a
// result without its event. Fewer, larger writes cost less: one SQLite
// transaction, or one Kafka record, per write.
//
// RecordBehaviors shares writes the same way in a queue of its own, with a
// gap of its own, behaviorGap (3 ms), kept for when callers come
// together (a write that held more than one): a behavior waits at most
// for the write in flight and that gap, as POST /events answers once its
// event is stored (the events' gap, which paces a cluster node's journal
// writes of push results, put 50-100 ms on every event), and one caller
// recording one behavior after another never waits for it. Behaviors posted one at a time by many
// API keys so cost a transaction, or a Kafka record, per write, not one
// each. RecordNow does
// the same for events a request waits for: a browser's delivered and
// clicked pings (through the gap, 50 ms at the median and 100 at the p99
// at any rate).
type Batched struct {
	Store
	events    *queue[Event]
	now       *queue[Event]
	behaviors *queue[Behavior]
}

// NewBatched wraps s; gap is the least time between the starts of two
// writes of events (0: back to back; a gap gathers more events per write,
// and delays each Record by up to that much) and max the waiting events,
// or behaviors, that end a gap (default 20,000).
func NewBatched(s Store, gap time.Duration, max int) *Batched {
	if max <= 0 {
		max = 20_000
	}
	return &Batched{
		Store:     s,
		events:    newQueue(gap, max, s.Record),
		now:       newQueue(0, max, s.Record),
		behaviors: newQueue(behaviorGap, max, s.RecordBehaviors).whenBusy(),
	}
}

// behaviorGap is the least time between the starts of two writes of
// behaviors. Written back to back, at 3,000 events a second in the local
// cluster, a write held one or two events, and the Kafka records cost
// more than the events: 387 µs of CPU an event across every process
// (the broker's 61), p99 22 ms; with 3 ms, 322 and 317 µs (the broker's
// 24), p99 14 to 17 ms, p50 3.5 ms against 1.3, and 325 µs kept only
// while busy (whenBusy). The embedded default, 248 µs an event against
// 221, p99 6 and 9 ms (docs/scale-out.md, "Behaviors written 3 ms
// apart").
const behaviorGap = 3 * time.Millisecond

// Record queues events for the next write and waits for its outcome. If
// ctx ends first Record returns ctx.Err(); the events may still be written.
// Events Check refuses are refused here, so they never fail the write of
// the others queued with them.
func (b *Batched) Record(ctx context.Context, events []Event) error {
	return record(ctx, b.events, events)
}

// RecordNow is Record without the gap: the events wait only for the
// write in flight, in a queue of their own.
func (b *Batched) RecordNow(ctx context.Context, events []Event) error {
	return record(ctx, b.now, events)
}

// record checks events and adds them to q.
func record(ctx context.Context, q *queue[Event], events []Event) error {
	if len(events) == 0 {
		return nil
	}
	if err := Check(events); err != nil {
		return fmt.Errorf("recording events: %w", err)
	}
	return q.add(ctx, events)
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
	return b.behaviors.add(ctx, behaviors)
}

// Close writes what is pending, then closes the underlying store.
func (b *Batched) Close() error {
	b.events.close()
	b.now.close()
	b.behaviors.close()
	return b.Store.Close()
}

// queue is one kind of record waiting for the next write, and the
// goroutine that writes it.
type queue[T any] struct {
	gap time.Duration
	// busyOnly keeps the gap for after a write that held more than one
	// caller's records (whenBusy).
	busyOnly bool
	max      int
	write    func(context.Context, []T) error

	mu      sync.Mutex
	pending []T
	waiters []chan error
	closed  bool
	full    chan struct{} // signalled when pending reaches max
	wake    chan struct{} // signalled when pending stops being empty
	done    chan struct{}
}

func newQueue[T any](gap time.Duration, max int, write func(context.Context, []T) error) *queue[T] {
	q := &queue[T]{gap: gap, max: max, write: write,
		full: make(chan struct{}, 1), wake: make(chan struct{}, 1), done: make(chan struct{})}
	go q.run()
	return q
}

// whenBusy keeps q's gap for when callers come together: after a write
// that held one caller's records, the next is written as soon as it comes,
// so that one caller recording one thing after another never waits for
// the gap. It returns q.
func (q *queue[T]) whenBusy() *queue[T] {
	q.busyOnly = true
	return q
}

// add queues records for the next write and waits for its outcome (or
// writes them itself once the queue is closed).
func (q *queue[T]) add(ctx context.Context, records []T) error {
	ch := make(chan error, 1)
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return q.write(ctx, records)
	}
	q.pending = append(q.pending, records...)
	q.waiters = append(q.waiters, ch)
	n := len(q.pending)
	q.mu.Unlock()
	signal(q.wake)
	if n >= q.max {
		signal(q.full)
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

func (q *queue[T]) run() {
	defer close(q.done)
	for {
		<-q.wake
		start := time.Now()
		callers, open := q.flush()
		if !open {
			return
		}
		if q.busyOnly && callers <= 1 {
			continue
		}
		if wait := q.gap - time.Since(start); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-q.full:
				t.Stop()
			}
		}
	}
}

// flush writes what is pending and tells for how many callers; open is
// false once closed.
func (q *queue[T]) flush() (callers int, open bool) {
	q.mu.Lock()
	records, waiters, closed := q.pending, q.waiters, q.closed
	q.pending, q.waiters = nil, nil
	q.mu.Unlock()
	if len(records) > 0 {
		err := q.write(context.Background(), records)
		for _, w := range waiters {
			w <- err
		}
	}
	q.mu.Lock()
	more := len(q.pending) > 0
	q.mu.Unlock()
	if more {
		signal(q.wake)
	}
	return len(waiters), !closed
}

// close makes the writer write what is queued and stop, and waits for it.
func (q *queue[T]) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	signal(q.wake)
	signal(q.full)
	<-q.done // run has written everything queued before closed was set
}
