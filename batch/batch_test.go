package batch

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"
)

// gated returns a batch call that holds its first call until gate closes
// and answers each item ten times itself, failing a batch holding a
// negative item; calls counts the calls.
func gated(gate chan struct{}) (func(context.Context, []int) ([]int, error), func() int) {
	var mu sync.Mutex
	calls := 0
	call := func(_ context.Context, items []int) ([]int, error) {
		mu.Lock()
		calls++
		first := calls == 1
		mu.Unlock()
		if first {
			<-gate // the others gather meanwhile
		}
		out := make([]int, len(items))
		for i, v := range items {
			if v < 0 {
				return nil, errors.New("negative")
			}
			out[i] = v * 10
		}
		return out, nil
	}
	return call, func() int { mu.Lock(); defer mu.Unlock(); return calls }
}

// run sends 0 (held in the first call) then the items of rest
// concurrently, once they all wait, lets the first call go, and returns
// each item's answer and error (0's first).
func run[Out any](t *testing.T, b *Batcher[int, Out], calls func() int, gate chan struct{}, rest []int) ([]Out, []error) {
	t.Helper()
	n := len(rest) + 1
	got, errs := make([]Out, n), make([]error, n)
	var wg sync.WaitGroup
	wg.Go(func() { got[0], errs[0] = b.Do(context.Background(), 0) })
	for calls() != 1 { // the first call is in flight
		runtime.Gosched()
	}
	for i, v := range rest {
		wg.Go(func() { got[i+1], errs[i+1] = b.Do(context.Background(), v) })
	}
	for b.Pending() != len(rest) { // every other item waits for the call in flight
		runtime.Gosched()
	}
	close(gate)
	wg.Wait()
	return got, errs
}

// TestBatcherAnswersEach: concurrent calls are shared (fewer calls than
// items), each item gets its own answer, and, without a call for one, a
// failed call fails each of its items.
func TestBatcherAnswersEach(t *testing.T) {
	gate := make(chan struct{})
	call, calls := gated(gate)
	b := New(call, nil)
	rest := make([]int, 49)
	for i := range rest {
		rest[i] = i + 1
	}
	got, errs := run(t, b, calls, gate, rest)
	for i, v := range got {
		if v != i*10 || errs[i] != nil {
			t.Fatalf("item %d answered %d, %v", i, v, errs[i])
		}
	}
	if c := calls(); c != 2 {
		t.Fatalf("%d calls for 50 items, want 2", c)
	}
	if _, err := b.Do(context.Background(), -1); err == nil || err.Error() != "negative" {
		t.Fatalf("a failed call: %v", err)
	}
}

// TestBatcherFallsBackToOne: a lone item goes through the call for one;
// when a batch fails, each of its items is tried alone, so only the one at
// fault fails.
func TestBatcherFallsBackToOne(t *testing.T) {
	gate := make(chan struct{})
	call, calls := gated(gate)
	var mu sync.Mutex
	alone := map[int]bool{}
	b := New(func(ctx context.Context, items []int) ([]int, error) {
		if len(items) == 1 {
			t.Errorf("a batch call for %v: want the call for one", items)
		}
		return call(ctx, items)
	}, func(ctx context.Context, v int) (int, error) {
		if v == 0 { // the first, held while the others gather
			_, err := call(ctx, []int{v})
			return 0, err
		}
		mu.Lock()
		alone[v] = true
		mu.Unlock()
		if v < 0 {
			return 0, errors.New("negative alone")
		}
		return v * 10, nil
	})
	got, errs := run(t, b, calls, gate, []int{1, -1, 2})
	want := []int{0, 10, 0, 20}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("answers %v, want %v", got, want)
		}
	}
	if errs[0] != nil || errs[1] != nil || errs[3] != nil || errs[2] == nil || errs[2].Error() != "negative alone" {
		t.Fatalf("errors %v: want only the negative item's, from its call alone", errs)
	}
	if len(alone) != 3 || !alone[1] || !alone[-1] || !alone[2] {
		t.Fatalf("tried alone: %v, want the failed batch's three", alone)
	}
	if c := calls(); c != 2 {
		t.Fatalf("%d batch calls, want 2", c)
	}
}

// TestBatcherMax: a batcher bounded to max items a call makes more calls,
// each item still answered.
func TestBatcherMax(t *testing.T) {
	gate := make(chan struct{})
	call, calls := gated(gate)
	b := New(call, nil).WithMax(4)
	rest := make([]int, 10)
	for i := range rest {
		rest[i] = i + 1
	}
	got, errs := run(t, b, calls, gate, rest)
	for i, v := range got {
		if v != i*10 || errs[i] != nil {
			t.Fatalf("item %d answered %d, %v", i, v, errs[i])
		}
	}
	if c := calls(); c != 4 { // 1, then 4 + 4 + 2
		t.Fatalf("%d calls, want 4", c)
	}
}

// callSizes records the number of items of each call, safe for the
// batcher's goroutines.
type callSizes struct {
	mu    sync.Mutex
	sizes []int
}

func (c *callSizes) add(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sizes = append(c.sizes, n)
}

func (c *callSizes) get() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.sizes)
}

func (c *callSizes) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sizes = nil
}

// TestBatcherLinger: a lingering batcher's call takes the items that came
// during its wait, lone ones included, and a full batch does not wait.
func TestBatcherLinger(t *testing.T) {
	var sizes callSizes
	call := func(_ context.Context, items []int) ([]int, error) {
		sizes.add(len(items))
		return items, nil
	}
	calls := sizes.get
	// Max of them waiting: the call goes without waiting out the hour.
	b := New(call, nil).WithLinger(time.Hour).WithMax(3)
	answered := make(chan struct{})
	go func() {
		defer close(answered)
		var wg sync.WaitGroup
		for i := range 3 {
			wg.Go(func() {
				if got, err := b.Do(t.Context(), i); err != nil || got != i {
					t.Errorf("item %d answered %d, %v", i, got, err)
				}
			})
		}
		wg.Wait()
	}()
	select {
	case <-answered:
	case <-time.After(time.Minute):
		t.Fatal("a full batch waited for its linger")
	}
	if got := calls(); !slices.Equal(got, []int{3}) {
		t.Fatalf("calls %v, want one of 3", got)
	}

	sizes.reset()
	lone := New(call, nil).WithLinger(time.Second)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if got, err := lone.Do(t.Context(), 1); err != nil || got != 1 {
			t.Errorf("first: %d, %v", got, err)
		}
	}()
	for lone.Pending() == 0 {
		runtime.Gosched()
	}
	if got, err := lone.Do(t.Context(), 2); err != nil || got != 2 { // joins the lingering call
		t.Errorf("second: %d, %v", got, err)
	}
	<-done
	if got := calls(); !slices.Equal(got, []int{2}) {
		t.Fatalf("calls %v, want one of 2", got)
	}
}

// TestBatcherLingerWhenBusy: with WhenBusy, an idle batcher's lone item is
// called at once, however long the linger; once a call held more than one
// item, the next call lingers, and a lone item then waits for company.
func TestBatcherLingerWhenBusy(t *testing.T) {
	var sizes callSizes
	inFlight, gate := make(chan struct{}), make(chan struct{})
	call := func(_ context.Context, items []int) ([]int, error) {
		if items[0] == 1 {
			close(inFlight)
			<-gate // the first call stays in flight while two gather
		}
		sizes.add(len(items))
		return items, nil
	}
	calls := sizes.get
	b := New(call, nil).WithLinger(time.Hour).WithMax(2).WhenBusy()
	do := func(i int) chan struct{} {
		done := make(chan struct{})
		go func() {
			defer close(done)
			if got, err := b.Do(t.Context(), i); err != nil || got != i {
				t.Errorf("item %d answered %d, %v", i, got, err)
			}
		}()
		return done
	}
	wait := func(what string, done chan struct{}) {
		t.Helper()
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Fatalf("%s waited for the hour's linger", what)
		}
	}

	first := do(1) // idle: called at once, and held in flight
	wait("an idle batcher's lone item", inFlight)
	second, third := do(2), do(3)
	for b.Pending() != 2 {
		runtime.Gosched()
	}
	close(gate)
	wait("an idle batcher's lone item", first)
	wait("the items gathered behind a call (2 of max 2)", second)
	wait("the items gathered behind a call (2 of max 2)", third)
	if got := calls(); !slices.Equal(got, []int{1, 2}) {
		t.Fatalf("calls %v, want one of 1 then one of 2", got)
	}

	// Busy now: a lone item lingers, and the next joins it.
	fourth := do(4)
	for b.Pending() != 1 {
		select {
		case <-fourth:
			t.Fatal("a lone item after a call of two was called without lingering")
		default:
			runtime.Gosched()
		}
	}
	wait("two items of a full batch", do(5))
	wait("two items of a full batch", fourth)
	if got := calls(); !slices.Equal(got, []int{1, 2, 2}) {
		t.Fatalf("calls %v, want 1, 2, then 2 (the lone item waited for the next)", got)
	}
}
