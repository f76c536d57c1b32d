package kafka

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/relaybell/relaybell/bus"
)

// batchSink runs ConsumeBatches in the background and keeps what it hands
// over; fail makes the next calls fail.
type batchSink struct {
	mu      sync.Mutex
	batches [][]string
	fail    int // calls left to fail
	failed  int
}

func (s *batchSink) handle(_ context.Context, msgs []bus.Message) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail > 0 {
		s.fail--
		s.failed++
		return errors.New("store down")
	}
	var vs []string
	for _, m := range msgs {
		vs = append(vs, string(m.Value))
	}
	s.batches = append(s.batches, vs)
	return nil
}

// counts is how many times each value was handed over in a batch that
// succeeded.
func (s *batchSink) counts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for _, b := range s.batches {
		for _, v := range b {
			out[v]++
		}
	}
	return out
}

func runBatches(t *testing.T, b *Bus, s *batchSink, window time.Duration, max int) (stop func()) {
	return runBatchesOf(t, b, s, window, max, 0)
}

// runBatchesOf is runBatches with a bound on a batch's bytes.
func runBatchesOf(t *testing.T, b *Bus, s *batchSink, window time.Duration, max, maxBytes int) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.ConsumeBatches(ctx, bus.Events, "sink", window, max, maxBytes, s.handle) }()
	return func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("ConsumeBatches: %v", err)
			}
		case <-time.After(testTimeout):
			t.Fatal("ConsumeBatches did not return")
		}
	}
}

func publishN(t *testing.T, b *Bus, from, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	for i := from; i < from+n; i++ {
		if err := b.Publish(ctx, bus.Events, "", []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
}

// TestConsumeBatchesGathersAndRereadsFailedBatches: records waiting are
// handed over together, a batch whose handler failed is handed over again
// (the member rejoins and reads from the committed offsets), nothing is
// lost, and what was committed is not read again by the next member.
func TestConsumeBatchesGathersAndRereadsFailedBatches(t *testing.T) {
	b := openTest(t, testConfig(newCluster(t)))
	const n = 300
	publishN(t, b, 0, n)
	s := &batchSink{fail: 2}
	stop := runBatches(t, b, s, 300*time.Millisecond, 1000)
	waitFor(t, "every record handed over", func() bool { return len(s.counts()) == n })
	waitCommitted(t, b, bus.Events, "sink")
	stop()

	s.mu.Lock()
	failed, batches := s.failed, len(s.batches)
	s.mu.Unlock()
	if failed != 2 {
		t.Fatalf("%d failed calls, want 2", failed)
	}
	for v, c := range s.counts() {
		if c != 1 {
			t.Fatalf("record %s handed over %d times in written batches", v, c)
		}
	}
	// 300 records waiting before the member joined: a window gathers them
	// in a few fetches, not one batch per record.
	if batches > 10 {
		t.Fatalf("300 waiting records took %d batches", batches)
	}

	// The next member starts where the group's commits are.
	publishN(t, b, n, 5)
	s2 := &batchSink{}
	stop = runBatches(t, b, s2, 50*time.Millisecond, 1000)
	defer stop()
	waitFor(t, "the new records", func() bool { return len(s2.counts()) == 5 })
	time.Sleep(200 * time.Millisecond)
	got := s2.counts()
	for i := n; i < n+5; i++ {
		if got[fmt.Sprint(i)] != 1 {
			t.Fatalf("the next member got %v, want exactly records %d-%d once", got, n, n+4)
		}
	}
	if len(got) != 5 {
		t.Fatalf("the next member got %d records, want the 5 new ones", len(got))
	}
}

// TestConsumeBatchesBoundsABatch: max caps the records of one batch.
func TestConsumeBatchesBoundsABatch(t *testing.T) {
	b := openTest(t, testConfig(newCluster(t)))
	publishN(t, b, 0, 100)
	s := &batchSink{}
	stop := runBatches(t, b, s, 200*time.Millisecond, 7)
	defer stop()
	waitFor(t, "every record handed over", func() bool { return len(s.counts()) == 100 })
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range s.batches {
		if len(b) > 7 {
			t.Fatalf("a batch of %d records, max 7", len(b))
		}
	}
}

// TestDrainedWaitsForTheGroup: Drained does not return while records
// published before it are unhandled, and returns once they are committed.
func TestDrainedWaitsForTheGroup(t *testing.T) {
	b := openTest(t, testConfig(newCluster(t)))
	publishN(t, b, 0, 20)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	err := b.Drained(ctx, bus.Events, "sink")
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Drained with nothing consumed = %v, want a deadline error", err)
	}
	s := &batchSink{}
	stop := runBatches(t, b, s, 50*time.Millisecond, 1000)
	defer stop()
	ctx, cancel = context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := b.Drained(ctx, bus.Events, "sink"); err != nil {
		t.Fatal(err)
	}
	if got := len(s.counts()); got != 20 {
		t.Fatalf("Drained returned with %d of 20 records written", got)
	}
}

// TestConsumeBatchesFetchesWait: a batch consumer's fetch waits at the
// broker for a batch's worth of bytes, or half its window, rather than
// coming back with each record: records published one at a time cost a
// few fetches, not one each.
func TestConsumeBatchesFetchesWait(t *testing.T) {
	c := newCluster(t)
	var fetches atomic.Int64
	c.ControlKey(int16(kmsg.Fetch), func(kmsg.Request) (kmsg.Response, error, bool) {
		fetches.Add(1)
		return nil, nil, false // counted, then served as usual
	})
	cfg := testConfig(c)
	cfg.GroupOpts = []kgo.Opt{kgo.HeartbeatInterval(100 * time.Millisecond)} // not the tests' FetchMaxWait
	b := openTest(t, cfg)
	s := &batchSink{}
	stop := runBatches(t, b, s, time.Second, 1000)
	defer stop()
	publishN(t, b, 0, 1)
	waitFor(t, "the first record", func() bool { return len(s.counts()) == 1 })

	const n = 100
	before := fetches.Load()
	for i := 1; i <= n; i++ {
		publishN(t, b, i, 1)
		time.Sleep(2 * time.Millisecond)
	}
	waitFor(t, "every record", func() bool { return len(s.counts()) == n+1 })
	// Answered with each record, the fetches would be about n.
	if got := fetches.Load() - before; got > n/2 {
		t.Fatalf("%d fetches for %d records published one at a time", got, n)
	}
}

// TestConsumeBatchesBoundsABatchsBytes: a batch whose values reach the
// bytes bound is handed over then, not at the end of its window.
func TestConsumeBatchesBoundsABatchsBytes(t *testing.T) {
	b := openTest(t, testConfig(newCluster(t)))
	publishN(t, b, 0, 3)
	s := &batchSink{}
	stop := runBatchesOf(t, b, s, time.Minute, 1000, 1)
	defer stop()
	// Within testTimeout, half the window.
	waitFor(t, "the records", func() bool { return len(s.counts()) == 3 })
}

// TestConsumeBatchesShortWindow: a window under twice kgo's least fetch
// wait still makes a consumer (the wait is raised to that least).
func TestConsumeBatchesShortWindow(t *testing.T) {
	cfg := testConfig(newCluster(t))
	cfg.GroupOpts = []kgo.Opt{kgo.HeartbeatInterval(100 * time.Millisecond)} // not the tests' FetchMaxWait
	b := openTest(t, cfg)
	publishN(t, b, 0, 3)
	s := &batchSink{}
	stop := runBatches(t, b, s, 5*time.Millisecond, 1000)
	defer stop()
	waitFor(t, "the records", func() bool { return len(s.counts()) == 3 })
}
