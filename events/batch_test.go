package events

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
)

// TestBatcherAnswersEach: concurrent calls are shared (fewer calls than
// items), each item gets its own answer, and a failed call fails each of
// its items.
func TestBatcherAnswersEach(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	gate := make(chan struct{})
	b := newBatcher(func(_ context.Context, items []int) ([]int, error) {
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
	})
	const n = 50
	var wg sync.WaitGroup
	got := make([]int, n)
	wg.Go(func() {
		got[0], _ = b.do(context.Background(), 0)
	})
	for { // the first call is in flight
		mu.Lock()
		c := calls
		mu.Unlock()
		if c == 1 {
			break
		}
		runtime.Gosched()
	}
	for i := 1; i < n; i++ {
		wg.Go(func() {
			v, err := b.do(context.Background(), i)
			if err != nil {
				t.Errorf("item %d: %v", i, err)
			}
			got[i] = v
		})
	}
	// Every other item waits for the call in flight, then goes in one.
	for {
		b.mu.Lock()
		waiting := len(b.pending)
		b.mu.Unlock()
		if waiting == n-1 {
			break
		}
		runtime.Gosched()
	}
	close(gate)
	wg.Wait()
	for i, v := range got {
		if v != i*10 {
			t.Fatalf("item %d answered %d", i, v)
		}
	}
	if calls != 2 {
		t.Fatalf("%d calls for %d items, want 2", calls, n)
	}
	if _, err := b.do(context.Background(), -1); err == nil || err.Error() != "negative" {
		t.Fatalf("a failed call: %v", err)
	}
}
