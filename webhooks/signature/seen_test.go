package signature

import (
	"strconv"
	"sync"
	"testing"
	"time"
)

func TestMemorySeenWindow(t *testing.T) {
	m := NewMemorySeen(time.Hour, 0)
	t0 := time.Unix(testNow, 0)
	f := func(id string, at time.Time, want bool) {
		t.Helper()
		if got := m.MarkSeen(id, at); got != want {
			t.Errorf("MarkSeen(%s, t0+%s) = %v, want %v", id, at.Sub(t0), got, want)
		}
	}
	f("a", t0, false)
	f("a", t0, true)
	f("b", t0.Add(30*time.Minute), false)
	f("a", t0.Add(time.Hour), true) // exactly the window: still remembered
	// The window runs from the first record: the repeat above did not
	// extend it.
	f("a", t0.Add(time.Hour+time.Nanosecond), false)
	f("b", t0.Add(time.Hour+time.Nanosecond), true)
	if n := m.Len(); n != 2 {
		t.Errorf("Len = %d, want 2", n)
	}
	// Everything ages out.
	f("c", t0.Add(10*time.Hour), false)
	if n := m.Len(); n != 1 {
		t.Errorf("Len after the window = %d, want 1", n)
	}
}

func TestMemorySeenBound(t *testing.T) {
	m := NewMemorySeen(time.Hour, 3)
	t0 := time.Unix(testNow, 0)
	for _, id := range []string{"a", "b", "c", "d"} {
		if m.MarkSeen(id, t0) {
			t.Fatalf("%s seen before", id)
		}
	}
	if n := m.Len(); n != 3 {
		t.Fatalf("Len = %d, want 3", n)
	}
	if !m.MarkSeen("d", t0) || !m.MarkSeen("b", t0) {
		t.Fatal("newest ids forgotten")
	}
	if m.MarkSeen("a", t0) {
		t.Fatal("oldest id kept past the bound")
	}

	// Memory stays bounded under a flood of ids, and the queue compacts.
	m = NewMemorySeen(time.Hour, 100)
	for i := range 100_000 {
		m.MarkSeen(strconv.Itoa(i), t0)
		if m.Len() > 100 || len(m.queue)-m.head > 100 {
			t.Fatalf("after %d ids: %d ids, %d queued", i+1, m.Len(), len(m.queue)-m.head)
		}
	}
	if cap(m.queue) > 1000 {
		t.Errorf("queue capacity %d for 100 ids", cap(m.queue))
	}
}

func TestMemorySeenForget(t *testing.T) {
	m := NewMemorySeen(time.Hour, 2)
	t0 := time.Unix(testNow, 0)
	m.MarkSeen("a", t0)
	m.Forget("a")
	m.Forget("never recorded")
	if m.MarkSeen("a", t0.Add(time.Second)) {
		t.Fatal("forgotten id still seen")
	}
	// The queue now holds a's first entry, then its second. Dropping the
	// first (the bound is 2) must not drop the id its second entry owns.
	m.MarkSeen("b", t0.Add(2*time.Second))
	if !m.MarkSeen("a", t0.Add(3*time.Second)) {
		t.Fatal("re-recorded id dropped with its forgotten entry")
	}
	// Forgetting and re-recording over and over keeps memory bounded.
	for i := range 1000 {
		m.Forget("a")
		m.MarkSeen("a", t0.Add(time.Duration(i)*time.Millisecond))
	}
	if len(m.queue)-m.head > 2 {
		t.Fatalf("%d entries queued, bound 2", len(m.queue)-m.head)
	}
}

func TestMemorySeenDefaults(t *testing.T) {
	m := NewMemorySeen(0, -1)
	if m.window != DefaultSeenWindow || m.maxIDs != DefaultSeenMax {
		t.Fatalf("window %s, max %d; want %s, %d", m.window, m.maxIDs, DefaultSeenWindow, DefaultSeenMax)
	}
	// The default window outlasts the retry schedule of spec 6.4: a retry
	// 10.5 hours after the first delivery is still a duplicate.
	t0 := time.Unix(testNow, 0)
	m.MarkSeen("a", t0)
	if !m.MarkSeen("a", t0.Add(10*time.Hour+30*time.Minute)) {
		t.Fatal("retry after 10.5 h not recognised")
	}
}

func TestMemorySeenConcurrent(t *testing.T) {
	m := NewMemorySeen(time.Minute, 50)
	t0 := time.Unix(testNow, 0)
	var wg sync.WaitGroup
	var mu sync.Mutex
	first := map[string]int{}
	for g := range 16 {
		wg.Go(func() {
			for i := range 2000 {
				id := strconv.Itoa(i % 40)
				at := t0.Add(time.Duration(i) * time.Millisecond)
				if !m.MarkSeen(id, at) {
					mu.Lock()
					first[id]++
					mu.Unlock()
				}
				if i%97 == g {
					m.Forget(id)
				}
				_ = m.Len()
			}
		})
	}
	wg.Wait()
	if m.Len() > 50 {
		t.Fatalf("Len %d over the bound", m.Len())
	}
	if len(first) != 40 {
		t.Fatalf("%d ids recorded first, want 40", len(first))
	}
}
