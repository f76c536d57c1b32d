// Package bustest is the conformance suite every bus.Bus implementation
// runs, so the embedded bus and the Kafka bus behave the same to the roles.
// It owns no implementation and must never import one.
package bustest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/relaybell/relaybell/bus"
)

// Timeout bounds every wait of the suite.
var Timeout = 30 * time.Second

// Run runs the suite, each case as a subtest. open returns a bus over the
// backing state of the test it is given: every call with the same *testing.T
// must reach the same state (the same file, the same cluster), so that a bus
// closed and opened again sees what was published before; different tests
// should get fresh state. PerTest builds such state. open may register
// t.Cleanup; the suite closes every bus it opens (Close may be called more
// than once if open also registers it). Handlers of an implementation should
// retry failed messages within a second or so (configure short backoffs).
//
// The suite publishes to bus.Intents and bus.Shards only.
func Run(t *testing.T, open func(t *testing.T) bus.Bus) {
	t.Run("DeliversEveryMessage", func(t *testing.T) { deliversEveryMessage(t, open) })
	t.Run("HandlerErrorRedelivers", func(t *testing.T) { handlerErrorRedelivers(t, open) })
	t.Run("ParallelBound", func(t *testing.T) { parallelBound(t, open) })
	t.Run("GroupSharesWork", func(t *testing.T) { groupSharesWork(t, open) })
	t.Run("SurvivesReopen", func(t *testing.T) { survivesReopen(t, open) })
	t.Run("UnfinishedRedeliveredAfterRestart", func(t *testing.T) { unfinishedRedelivered(t, open) })
}

// PerTest returns a function giving each test its own value of create(t):
// made on the test's first call, the same value on later calls within that
// test. Use it for the backing state of Run's open func.
func PerTest[S any](create func(t *testing.T) S) func(t *testing.T) S {
	var mu sync.Mutex
	state := map[*testing.T]S{}
	return func(t *testing.T) S {
		t.Helper()
		mu.Lock()
		defer mu.Unlock()
		if s, ok := state[t]; ok {
			return s
		}
		s := create(t)
		state[t] = s
		t.Cleanup(func() {
			mu.Lock()
			defer mu.Unlock()
			delete(state, t)
		})
		return s
	}
}

// openBus opens a bus closed at the end of the test (or earlier by calling
// the returned func).
func openBus(t *testing.T, open func(t *testing.T) bus.Bus) (bus.Bus, func()) {
	t.Helper()
	b := open(t)
	var once sync.Once
	closeBus := func() {
		once.Do(func() {
			if err := b.Close(); err != nil {
				t.Errorf("closing bus: %v", err)
			}
		})
	}
	t.Cleanup(closeBus)
	return b, closeBus
}

// Consume runs b.Consume in the background; the returned stop ends it and
// waits for it to return (also done at cleanup, before the bus closes).
func Consume(t *testing.T, b bus.Bus, topic, group string, parallel int, h bus.Handler) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Consume(ctx, topic, group, parallel, h) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Consume returned %v", err)
				}
			case <-time.After(Timeout):
				t.Errorf("Consume did not return %v after its context ended", Timeout)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func publish(t *testing.T, b bus.Bus, topic, key, value string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	if err := b.Publish(ctx, topic, key, []byte(value)); err != nil {
		t.Fatalf("publishing %s: %v", value, err)
	}
}

// seen counts the handling of each message value.
type seen struct {
	mu     sync.Mutex
	counts map[string]int
	keys   map[string]string
	topic  map[string]string
	change chan struct{}
}

func newSeen() *seen {
	return &seen{counts: map[string]int{}, keys: map[string]string{}, topic: map[string]string{}, change: make(chan struct{}, 1)}
}

func (s *seen) add(m bus.Message) {
	s.mu.Lock()
	v := string(m.Value)
	s.counts[v]++
	s.keys[v] = m.Key
	s.topic[v] = m.Topic
	s.mu.Unlock()
	select {
	case s.change <- struct{}{}:
	default:
	}
}

func (s *seen) count(v string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[v]
}

// waitAll waits until every value was handled at least once.
func (s *seen) waitAll(t *testing.T, values []string) {
	t.Helper()
	deadline := time.After(Timeout)
	for {
		missing := 0
		s.mu.Lock()
		for _, v := range values {
			if s.counts[v] == 0 {
				missing++
			}
		}
		s.mu.Unlock()
		if missing == 0 {
			return
		}
		select {
		case <-s.change:
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			t.Fatalf("%d of %d messages never handled", missing, len(values))
		}
	}
}

func values(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%03d", prefix, i)
	}
	return out
}

func deliversEveryMessage(t *testing.T, open func(t *testing.T) bus.Bus) {
	b, _ := openBus(t, open)
	s := newSeen()
	Consume(t, b, bus.Intents, "g", 4, func(_ context.Context, m bus.Message) error {
		s.add(m)
		return nil
	})
	vs := values("m", 50)
	for i, v := range vs {
		publish(t, b, bus.Intents, fmt.Sprintf("website-%d", i%7), v)
	}
	s.waitAll(t, vs)
	time.Sleep(100 * time.Millisecond) // let duplicates, if any, show up
	for i, v := range vs {
		if n := s.count(v); n != 1 {
			t.Errorf("%s handled %d times, want 1", v, n)
		}
		s.mu.Lock()
		key, topic := s.keys[v], s.topic[v]
		s.mu.Unlock()
		if want := fmt.Sprintf("website-%d", i%7); key != want || topic != bus.Intents {
			t.Errorf("%s arrived as topic %q key %q, want %q %q", v, topic, key, bus.Intents, want)
		}
	}
}

func handlerErrorRedelivers(t *testing.T, open func(t *testing.T) bus.Bus) {
	b, _ := openBus(t, open)
	s := newSeen()
	var attempts atomic.Int32
	Consume(t, b, bus.Shards, "g", 2, func(_ context.Context, m bus.Message) error {
		if string(m.Value) == "flaky" && attempts.Add(1) < 2 {
			return errors.New("not yet")
		}
		s.add(m)
		return nil
	})
	publish(t, b, bus.Shards, "n1", "flaky")
	publish(t, b, bus.Shards, "n1", "after")
	publish(t, b, bus.Shards, "n2", "other")
	s.waitAll(t, []string{"flaky", "after", "other"})
	time.Sleep(100 * time.Millisecond)
	if got := attempts.Load(); got != 2 {
		t.Errorf("flaky message attempted %d times, want 2", got)
	}
	for _, v := range []string{"flaky", "after", "other"} {
		if n := s.count(v); n != 1 {
			t.Errorf("%s acknowledged %d times, want 1", v, n)
		}
	}
}

func parallelBound(t *testing.T, open func(t *testing.T) bus.Bus) {
	const parallel = 3
	b, _ := openBus(t, open)
	s := newSeen()
	var inFlight, peak atomic.Int32
	Consume(t, b, bus.Shards, "g", parallel, func(_ context.Context, m bus.Message) error {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		time.Sleep(10 * time.Millisecond)
		s.add(m)
		return nil
	})
	vs := values("p", 40)
	for _, v := range vs {
		publish(t, b, bus.Shards, v, v)
	}
	s.waitAll(t, vs)
	if p := peak.Load(); p > parallel || p < 1 {
		t.Errorf("peak %d handlers in flight, want 1..%d", p, parallel)
	} else {
		t.Logf("peak %d handlers in flight (bound %d)", p, parallel)
	}
}

func groupSharesWork(t *testing.T, open func(t *testing.T) bus.Bus) {
	b, _ := openBus(t, open)
	type member struct {
		probes atomic.Int32
		s      *seen
	}
	members := []*member{{s: newSeen()}, {s: newSeen()}}
	for _, mb := range members {
		Consume(t, b, bus.Intents, "g", 2, func(_ context.Context, m bus.Message) error {
			if len(m.Value) > 6 && string(m.Value[:6]) == "probe-" {
				mb.probes.Add(1)
				return nil
			}
			time.Sleep(2 * time.Millisecond)
			mb.s.add(m)
			return nil
		})
	}
	// Warm up until both members handle messages, so the group is settled
	// (both hold partitions) before the counted messages go out.
	deadline := time.Now().Add(Timeout)
	for i := 0; members[0].probes.Load() == 0 || members[1].probes.Load() == 0; i++ {
		if time.Now().After(deadline) {
			t.Fatalf("members never both handled messages (probes %d, %d)", members[0].probes.Load(), members[1].probes.Load())
		}
		publish(t, b, bus.Intents, fmt.Sprintf("probe-key-%d", i), fmt.Sprintf("probe-%d", i))
		time.Sleep(20 * time.Millisecond)
	}

	vs := values("w", 100)
	for i, v := range vs {
		publish(t, b, bus.Intents, fmt.Sprintf("website-%d", i), v)
	}
	deadline = time.Now().Add(Timeout)
	for {
		missing := 0
		for _, v := range vs {
			if members[0].s.count(v)+members[1].s.count(v) == 0 {
				missing++
			}
		}
		if missing == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d messages never handled", missing, len(vs))
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	var per [2]int
	for _, v := range vs {
		a, c := members[0].s.count(v), members[1].s.count(v)
		per[0] += a
		per[1] += c
		if a+c != 1 {
			t.Errorf("%s handled %d times in the group, want 1", v, a+c)
		}
	}
	if per[0] == 0 || per[1] == 0 {
		t.Errorf("work not shared: members handled %d and %d messages", per[0], per[1])
	}
	t.Logf("members handled %d and %d messages", per[0], per[1])
}

func survivesReopen(t *testing.T, open func(t *testing.T) bus.Bus) {
	b, closeBus := openBus(t, open)
	vs := values("r", 20)
	for i, v := range vs {
		publish(t, b, bus.Intents, fmt.Sprintf("website-%d", i%3), v)
	}
	closeBus()

	b, _ = openBus(t, open)
	s := newSeen()
	Consume(t, b, bus.Intents, "g", 2, func(_ context.Context, m bus.Message) error {
		s.add(m)
		return nil
	})
	s.waitAll(t, vs)
}

func unfinishedRedelivered(t *testing.T, open func(t *testing.T) bus.Bus) {
	b, _ := openBus(t, open)
	started := make(chan struct{})
	var once sync.Once
	stop := Consume(t, b, bus.Intents, "g", 1, func(ctx context.Context, m bus.Message) error {
		once.Do(func() { close(started) })
		<-ctx.Done() // the process stops while handling
		return ctx.Err()
	})
	publish(t, b, bus.Intents, "website-1", "x")
	select {
	case <-started:
	case <-time.After(Timeout):
		t.Fatal("message never handled")
	}
	stop()

	s := newSeen()
	Consume(t, b, bus.Intents, "g", 1, func(_ context.Context, m bus.Message) error {
		s.add(m)
		return nil
	})
	s.waitAll(t, []string{"x"})
}
