package analytics

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// countingStore records what each write held.
type countingStore struct {
	Store  // nil: only Record, RecordBehaviors and Close are called
	mu     sync.Mutex
	writes [][]Event
	// behaviorWrites are the RecordBehaviors calls.
	behaviorWrites [][]Behavior
	err            error
	closed         bool
	// writeTime is how long a write of behaviors takes (what lets others
	// queue behind it).
	writeTime time.Duration
}

func (s *countingStore) RecordBehaviors(_ context.Context, behaviors []Behavior) error {
	time.Sleep(s.writeTime)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.behaviorWrites = append(s.behaviorWrites, behaviors)
	return s.err
}

func (s *countingStore) Record(_ context.Context, events []Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes = append(s.writes, events)
	return s.err
}
func (s *countingStore) Report(context.Context, string, string) (Report, error) { return Report{}, nil }
func (s *countingStore) Close() error                                           { s.closed = true; return nil }

var batchedAt = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

// events returns n events of kind.
func events(kind string, n int) []Event {
	out := make([]Event, n)
	for i := range out {
		out[i] = Event{Kind: kind, At: batchedAt}
	}
	return out
}

// TestBatchedRefusesBadEventsAlone: a Record holding an event no store can
// hold is refused at once, and the Records queued with it are written.
func TestBatchedRefusesBadEventsAlone(t *testing.T) {
	under := &countingStore{}
	b := NewBatched(under, 50*time.Millisecond, 1000)
	defer b.Close()
	// The first write goes at once; the next ones wait out the gap together.
	if err := b.Record(t.Context(), events(KindSent, 1)); err != nil {
		t.Fatal(err)
	}
	bad := events(KindDelivered, 2)
	bad[1].Kind = "opened"
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i, evs := range [][]Event{events(KindClicked, 3), bad, events(KindExpired, 1)} {
		wg.Go(func() { errs[i] = b.Record(t.Context(), evs) })
	}
	wg.Wait()
	if errs[0] != nil || errs[1] == nil || errs[2] != nil {
		t.Fatalf("errors %v; want only the second Record refused", errs)
	}
	under.mu.Lock()
	defer under.mu.Unlock()
	var kinds []string
	for _, w := range under.writes {
		for _, e := range w {
			kinds = append(kinds, e.Kind)
		}
	}
	slices.Sort(kinds)
	if want := []string{KindClicked, KindClicked, KindClicked, KindExpired, KindSent}; !slices.Equal(kinds, want) {
		t.Fatalf("written %v, want %v", kinds, want)
	}
}

func TestBatchedSharesWrites(t *testing.T) {
	under := &countingStore{}
	b := NewBatched(under, 50*time.Millisecond, 1000)
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			events := make([]Event, 10)
			for j := range events {
				events[j] = Event{Kind: KindSent, EndpointID: string(rune('a' + i)), At: batchedAt}
			}
			if err := b.Record(t.Context(), events); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	under.mu.Lock()
	writes, total := len(under.writes), 0
	for _, w := range under.writes {
		total += len(w)
	}
	under.mu.Unlock()
	if total != 400 || writes > 4 {
		t.Fatalf("%d events in %d writes; want 400 in a few", total, writes)
	}

	// A failed write fails every Record it held.
	under.err = errors.New("clickhouse down")
	if err := b.Record(t.Context(), events(KindSent, 1)); !errors.Is(err, under.err) {
		t.Fatalf("err = %v", err)
	}
	under.err = nil

	// An idle store writes at once; max waiting events end the gap.
	slow := NewBatched(&countingStore{}, time.Hour, 5)
	start := time.Now()
	if err := slow.Record(t.Context(), events(KindSent, 1)); err != nil {
		t.Fatal(err)
	}
	if err := slow.Record(t.Context(), events(KindSent, 5)); err != nil || time.Since(start) > 10*time.Second {
		t.Fatalf("a full batch waited: %v after %s", err, time.Since(start))
	}
	slow.Close()

	// Events waiting out the gap are written by Close, which then closes
	// the store.
	lazy := &countingStore{}
	lb := NewBatched(lazy, time.Hour, 1000)
	if err := lb.Record(t.Context(), events(KindSent, 1)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if err := lb.Record(ctx, events(KindClicked, 1)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Record during the gap: %v", err)
	}
	if err := lb.Close(); err != nil {
		t.Fatal(err)
	}
	if len(lazy.writes) != 2 || len(lazy.writes[1]) != 1 || lazy.writes[1][0].Kind != KindClicked || !lazy.closed {
		t.Fatalf("after Close: writes %v, closed %v", lazy.writes, lazy.closed)
	}
	b.Close()
}

// TestBatchedBehaviors: behaviors posted one at a time by many callers share
// writes (those that come while one is written, or within behaviorGap of
// its start, go in the next), a bad one is refused alone, and the events'
// gap never holds them back.
func TestBatchedBehaviors(t *testing.T) {
	under := &countingStore{writeTime: 20 * time.Millisecond}
	b := NewBatched(under, 50*time.Millisecond, 1000)
	if b.behaviors.gap != behaviorGap || behaviorGap >= 50*time.Millisecond {
		t.Fatalf("behaviors' gap %v, want behaviorGap (%v), not the events'", b.behaviors.gap, behaviorGap)
	}
	var wg sync.WaitGroup
	errs := make([]error, 201)
	for i := range 200 {
		wg.Go(func() {
			errs[i] = b.RecordBehaviors(t.Context(), []Behavior{{ID: fmt.Sprintf("b%d", i), WebsiteID: "w", At: batchedAt}})
		})
	}
	wg.Go(func() {
		errs[200] = b.RecordBehaviors(t.Context(), []Behavior{{ID: "bad", WebsiteID: "w", Properties: json.RawMessage(`[]`), At: batchedAt}})
	})
	for range 20 {
		wg.Go(func() {
			if err := b.Record(t.Context(), events(KindSent, 5)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs[:200]...); err != nil || errs[200] == nil {
		t.Fatalf("errors %v; want only the last refused (%v)", err, errs[200])
	}
	under.mu.Lock()
	var ids []string
	for _, w := range under.behaviorWrites {
		for _, bh := range w {
			ids = append(ids, bh.ID)
		}
	}
	writes, eventWrites := len(under.behaviorWrites), len(under.writes)
	under.mu.Unlock()
	if len(ids) != 200 || writes > 20 || eventWrites > 4 {
		t.Fatalf("%d behaviors in %d writes, events in %d; want 200 in a few", len(ids), writes, eventWrites)
	}

	// A failed write fails every RecordBehaviors it held.
	under.mu.Lock()
	under.err = errors.New("disk full")
	under.mu.Unlock()
	if err := b.RecordBehaviors(t.Context(), []Behavior{{ID: "x", WebsiteID: "w", At: batchedAt}}); !errors.Is(err, under.err) {
		t.Fatalf("err = %v", err)
	}
	b.Close()

	lazy := &countingStore{}
	lb := NewBatched(lazy, time.Hour, 1000)
	if err := lb.RecordBehaviors(t.Context(), []Behavior{{ID: "first", WebsiteID: "w", At: batchedAt}}); err != nil {
		t.Fatal(err)
	}
	if err := lb.Record(t.Context(), events(KindSent, 1)); err != nil {
		t.Fatal(err)
	}
	// Within the events' hour-long gap, a behavior is written at once.
	if err := lb.RecordBehaviors(t.Context(), []Behavior{{ID: "waiting", WebsiteID: "w", At: batchedAt}}); err != nil {
		t.Fatalf("RecordBehaviors during the events' gap: %v", err)
	}
	if err := lb.Close(); err != nil {
		t.Fatal(err)
	}
	if len(lazy.behaviorWrites) != 2 || lazy.behaviorWrites[1][0].ID != "waiting" || !lazy.closed {
		t.Fatalf("after Close: writes %v, closed %v", lazy.behaviorWrites, lazy.closed)
	}
}

// TestBatchedRecordNow: within the events' gap, RecordNow writes at once,
// in writes of its own; what it refuses fails it alone.
func TestBatchedRecordNow(t *testing.T) {
	under := &countingStore{}
	b := NewBatched(under, time.Hour, 1000)
	if err := b.Record(t.Context(), events(KindSent, 2)); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- b.Record(t.Context(), events(KindSent, 1)) }() // waits the hour
	for i := range 2 {
		if err := b.RecordNow(t.Context(), events(KindDelivered, 1)); err != nil {
			t.Fatalf("RecordNow %d during the gap: %v", i, err)
		}
	}
	if err := b.RecordNow(t.Context(), []Event{{Kind: "teleported", At: batchedAt}}); err == nil {
		t.Fatal("RecordNow of an unknown kind succeeded")
	}
	under.mu.Lock()
	var kinds []string
	for _, w := range under.writes {
		kinds = append(kinds, fmt.Sprintf("%s×%d", w[0].Kind, len(w)))
	}
	under.mu.Unlock()
	if !slices.Equal(kinds, []string{"sent×2", "delivered×1", "delivered×1"}) {
		t.Fatalf("writes %v", kinds)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the Record waiting for the gap: %v", err)
	}
	if n := len(under.writes); n != 4 {
		t.Fatalf("%d writes after Close, want 4", n)
	}
}

// TestQueueGapWhenBusy: a queue that keeps its gap for when callers come
// together writes one caller's records one after another as they come,
// with no gap between, and after a write that held several callers'
// records waits its gap (an hour here) for more, unless max are waiting.
func TestQueueGapWhenBusy(t *testing.T) {
	var (
		mu      sync.Mutex
		writes  [][]int
		gate    chan struct{} // when not nil, a write waits for it
		entered = make(chan struct{}, 1)
	)
	q := newQueue(time.Hour, 5, func(_ context.Context, records []int) error {
		mu.Lock()
		g := gate
		mu.Unlock()
		if g != nil {
			entered <- struct{}{}
			<-g
		}
		mu.Lock()
		writes = append(writes, records)
		mu.Unlock()
		return nil
	}).whenBusy()
	defer q.close()
	waiting := func(n int) {
		for {
			q.mu.Lock()
			w := len(q.waiters)
			q.mu.Unlock()
			if w == n {
				return
			}
			time.Sleep(time.Millisecond)
		}
	}
	for i := range 10 { // an hour each, were the gap kept
		if err := q.add(t.Context(), []int{i}); err != nil {
			t.Fatal(err)
		}
	}
	// A write held while two more callers come: the next holds both.
	mu.Lock()
	gate = make(chan struct{})
	mu.Unlock()
	var wg sync.WaitGroup
	wg.Go(func() { _ = q.add(t.Context(), []int{10}) })
	<-entered
	for i := 11; i <= 12; i++ {
		wg.Go(func() { _ = q.add(t.Context(), []int{i}) })
	}
	waiting(2)
	mu.Lock()
	close(gate)
	gate = nil
	mu.Unlock()
	wg.Wait()
	// Now the gap: one more waits, until max are pending.
	done := make(chan struct{})
	go func() { _ = q.add(t.Context(), []int{13}); close(done) }()
	select {
	case <-done:
		t.Fatal("a record after a write of two callers' was written within the gap")
	case <-time.After(50 * time.Millisecond):
	}
	for i := 14; i < 18; i++ {
		wg.Go(func() { _ = q.add(t.Context(), []int{i}) })
	}
	wg.Wait()
	<-done
	mu.Lock()
	defer mu.Unlock()
	var sizes []int
	for _, w := range writes {
		sizes = append(sizes, len(w))
	}
	if !slices.Equal(sizes, []int{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 5}) {
		t.Fatalf("writes of %v records, want ten alone, then the held one, the two that came meanwhile, and max", sizes)
	}
}
