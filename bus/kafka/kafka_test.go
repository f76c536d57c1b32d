package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/relaybell/relaybell/bus"
	"github.com/relaybell/relaybell/bus/bustest"
	"github.com/relaybell/relaybell/store"
)

const testTimeout = 30 * time.Second

func newCluster(t *testing.T) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(3))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func testLogger() *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	return slog.New(slog.DiscardHandler)
}

// testConfig fits kfake: fast retries and heartbeats so rebalances settle in
// a fraction of a second.
func testConfig(c *kfake.Cluster) Config {
	return Config{
		Seeds:           c.ListenAddrs(),
		RetryBackoff:    10 * time.Millisecond,
		MaxRetryBackoff: 100 * time.Millisecond,
		GroupOpts:       []kgo.Opt{kgo.HeartbeatInterval(100 * time.Millisecond), kgo.FetchMaxWait(500 * time.Millisecond)},
	}
}

func openTest(t *testing.T, cfg Config) *Bus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	b, err := Open(ctx, cfg, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func TestConformance(t *testing.T) {
	cluster := bustest.PerTest(newCluster)
	bustest.Run(t, func(t *testing.T) bus.Bus { return openTest(t, testConfig(cluster(t))) })
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitCommitted waits until the group's committed offsets reach the end of
// every partition of the topic: every message acknowledged and committed.
func waitCommitted(t *testing.T, b *Bus, topic, group string) {
	t.Helper()
	adm := kadm.NewClient(b.prod)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	var behind []string
	waitFor(t, "offsets committed to the end", func() bool {
		ends, err := adm.ListEndOffsets(ctx, b.topic(topic))
		if err != nil {
			t.Fatal(err)
		}
		committed, err := adm.FetchOffsets(ctx, b.cfg.TopicPrefix+group)
		if err != nil {
			t.Fatal(err)
		}
		behind = behind[:0]
		ends.Each(func(o kadm.ListedOffset) {
			if o.Offset == 0 {
				return
			}
			c, ok := committed.Lookup(o.Topic, o.Partition)
			if !ok || c.At != o.Offset {
				behind = append(behind, fmt.Sprintf("p%d %d/%d", o.Partition, c.At, o.Offset))
			}
		})
		return len(behind) == 0
	})
}

// TestRebalanceLosesNothing: consumer A is handling when B joins, then A
// leaves mid-stream; every message is handled at least once and the group's
// offsets end committed at the end of every partition.
func TestRebalanceLosesNothing(t *testing.T) {
	b := openTest(t, testConfig(newCluster(t)))
	const n = 300
	var mu sync.Mutex
	handled := map[string]int{}
	var byA, byB atomic.Int32
	handler := func(by *atomic.Int32) bus.Handler {
		return func(_ context.Context, m bus.Message) error {
			time.Sleep(5 * time.Millisecond)
			mu.Lock()
			handled[string(m.Value)]++
			mu.Unlock()
			by.Add(1)
			return nil
		}
	}
	stopA := bustest.Consume(t, b, bus.Intents, "fanout", 2, handler(&byA))

	published := make(chan error, 1)
	go func() {
		for i := range n {
			if err := b.Publish(context.Background(), bus.Intents, fmt.Sprintf("website-%d", i), fmt.Appendf(nil, "m-%d", i)); err != nil {
				published <- err
				return
			}
			time.Sleep(time.Millisecond)
		}
		published <- nil
	}()

	waitFor(t, "A handling", func() bool { return byA.Load() >= 20 })
	bustest.Consume(t, b, bus.Intents, "fanout", 2, handler(&byB))
	waitFor(t, "B handling", func() bool { return byB.Load() >= 20 })
	stopA()
	aAtStop := byA.Load()
	if err := <-published; err != nil {
		t.Fatal(err)
	}

	waitFor(t, "every message handled", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(handled) == n
	})
	waitCommitted(t, b, bus.Intents, "fanout")
	mu.Lock()
	dups := 0
	for _, c := range handled {
		dups += c - 1
	}
	mu.Unlock()
	t.Logf("A handled %d (stopped at %d), B handled %d, %d redeliveries", byA.Load(), aAtStop, byB.Load(), dups)
	if byA.Load() != aAtStop {
		t.Errorf("A handled messages after Consume returned")
	}
}

// TestFailedMessageRetried: a failing message is retried with backoff until
// it succeeds; messages of other partitions go on meanwhile, later messages
// of its own key wait for it, and its offset is committed only after.
func TestFailedMessageRetried(t *testing.T) {
	b := openTest(t, testConfig(newCluster(t)))
	var (
		allow    atomic.Bool
		attempts atomic.Int32
		mu       sync.Mutex
		order    []string
	)
	bustest.Consume(t, b, bus.Intents, "fanout", 4, func(_ context.Context, m bus.Message) error {
		v := string(m.Value)
		if v == "bad" {
			attempts.Add(1)
			if !allow.Load() {
				return errors.New("store unavailable")
			}
		}
		mu.Lock()
		order = append(order, v)
		mu.Unlock()
		return nil
	})
	publish := func(key, v string) {
		t.Helper()
		if err := b.Publish(context.Background(), bus.Intents, key, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	publish("website-bad", "bad")
	publish("website-bad", "after")
	const others = 36
	for i := range others {
		publish(fmt.Sprintf("website-%d", i), fmt.Sprintf("o-%d", i))
	}
	// Other partitions progress while "bad" keeps failing (with 64
	// partitions and 36 keys few others share its partition; half is a safe
	// bar).
	waitFor(t, "other partitions to progress", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(order) >= others/2 && attempts.Load() >= 3
	})
	mu.Lock()
	for _, v := range order {
		if v == "after" {
			t.Errorf("a later message of the failing key was handled before it")
		}
	}
	mu.Unlock()

	allow.Store(true)
	waitFor(t, "all handled", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(order) == others+2
	})
	mu.Lock()
	bad, after := -1, -1
	for i, v := range order {
		switch v {
		case "bad":
			bad = i
		case "after":
			after = i
		}
	}
	mu.Unlock()
	if bad < 0 || after < bad {
		t.Errorf("order of the failing key: bad at %d, after at %d", bad, after)
	}
	waitCommitted(t, b, bus.Intents, "fanout")
	t.Logf("bad attempted %d times", attempts.Load())
}

// TestPartitionsStartWhileOthersRun: a long handler on one partition does
// not hold back records that arrive on other partitions meanwhile (a fan-out
// node's shard tasks start as workers free up, not in rounds).
func TestPartitionsStartWhileOthersRun(t *testing.T) {
	b := openTest(t, testConfig(newCluster(t)))
	started, release := make(chan struct{}), make(chan struct{})
	var (
		mu   sync.Mutex
		fast []string
	)
	bustest.Consume(t, b, bus.Intents, "fanout", 4, func(ctx context.Context, m bus.Message) error {
		if string(m.Value) == "slow" {
			close(started)
			select {
			case <-release:
			case <-ctx.Done():
				return ctx.Err()
			}
			return nil
		}
		mu.Lock()
		fast = append(fast, string(m.Value))
		mu.Unlock()
		return nil
	})
	if err := b.Publish(context.Background(), bus.Intents, "website-slow", []byte("slow")); err != nil {
		t.Fatal(err)
	}
	<-started
	const others = 12
	for i := range others {
		if err := b.Publish(context.Background(), bus.Intents, fmt.Sprintf("website-%d", i), []byte(fmt.Sprintf("fast-%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	// With 64 partitions a few of the 12 keys may share the slow one's
	// partition and wait for it; half is a safe bar.
	waitFor(t, "other partitions handled while the slow handler runs", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(fast) >= others/2
	})
	close(release)
	waitFor(t, "all handled", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(fast) == others
	})
	waitCommitted(t, b, bus.Intents, "fanout")
}

// readRecords reads the first n records of the bus topic, in the order a
// plain (non-group) consumer gets them.
func readRecords(t *testing.T, c *kfake.Cluster, b *Bus, topic string, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics(b.topic(topic)))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	var recs []*kgo.Record
	for len(recs) < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, fs.Records()...)
	}
	return recs
}

// TestPublishKeepsKeyOnOnePartition: records with one key share a partition
// (intents of a website stay in order).
func TestPublishKeepsKeyOnOnePartition(t *testing.T) {
	c := newCluster(t)
	b := openTest(t, testConfig(c))
	for i := range 20 {
		if err := b.Publish(context.Background(), bus.Intents, "website-1", fmt.Appendf(nil, "%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	parts := map[int32]int{}
	for i, r := range readRecords(t, c, b, bus.Intents, 20) {
		if string(r.Value) != fmt.Sprint(i) {
			t.Errorf("record %d is %q: out of order", i, r.Value)
		}
		parts[r.Partition]++
	}
	if len(parts) != 1 {
		t.Errorf("one key spread over partitions %v", parts)
	}
}

// TestShardTasksOfASendGetAPartitionEach: the 64 shard tasks of a send,
// published together, land on 64 distinct partitions, so no task of the
// send waits behind another.
func TestShardTasksOfASendGetAPartitionEach(t *testing.T) {
	c := newCluster(t)
	b := openTest(t, testConfig(c))
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := bus.PublishShards(ctx, b, "n1", nil); err != nil {
		t.Fatal(err)
	}
	parts := map[int32]int{}
	for _, r := range readRecords(t, c, b, bus.Shards, store.Shards) {
		parts[r.Partition]++
	}
	if len(parts) != store.Shards {
		t.Fatalf("%d shard tasks on %d partitions: %v", store.Shards, len(parts), parts)
	}
}

func TestOpenCreatesTopics(t *testing.T) {
	c := newCluster(t)
	cfg := testConfig(c)
	cfg.Partitions = 5
	b := openTest(t, cfg)
	b2 := openTest(t, cfg) // existing topics are fine
	_ = b2
	td, err := kadm.NewClient(b.prod).ListTopics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"relaybell.intents", "relaybell.shards"} {
		if d, ok := td[name]; !ok || len(d.Partitions) != 5 {
			t.Errorf("topic %s: exists %v, partitions %d", name, ok, len(d.Partitions))
		}
	}
}

func TestConfigValidate(t *testing.T) {
	f := func(cfg Config, wantErr bool) {
		t.Helper()
		if err := cfg.Validate(); (err != nil) != wantErr {
			t.Errorf("Validate(%+v) = %v, want error %v", cfg, err, wantErr)
		}
	}
	f(Config{Seeds: []string{"k:9092"}}, false)
	f(Config{}, true)
	f(Config{Seeds: []string{"k:9092"}, Partitions: -1}, true)
	f(Config{Seeds: []string{"k:9092"}, ReplicationFactor: 40000}, true)
	f(Config{Seeds: []string{"k:9092"}, RetryBackoff: -time.Second}, true)
	f(Config{Seeds: []string{"k:9092"}, Topics: []string{""}}, true)

	d := Config{}.withDefaults()
	if d.TopicPrefix != "relaybell." || d.Partitions != 64 || d.ReplicationFactor != 1 || !slices.Equal(d.Topics, []string{bus.Intents, bus.Shards, bus.Events}) {
		t.Errorf("defaults: %+v", d)
	}
}

func TestBackoff(t *testing.T) {
	cfg := Config{RetryBackoff: time.Second, MaxRetryBackoff: 10 * time.Second}
	for attempt, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 4: 8 * time.Second, 5: 10 * time.Second, 100: 10 * time.Second} {
		if got := cfg.backoff(attempt); got != want {
			t.Errorf("backoff(%d) = %v, want %v", attempt, got, want)
		}
	}
}

// TestCloseStopsConsumers: closing the bus ends running Consume calls.
func TestCloseStopsConsumers(t *testing.T) {
	b := openTest(t, testConfig(newCluster(t)))
	got := make(chan struct{}, 1)
	done := make(chan error, 1)
	go func() {
		done <- b.Consume(context.Background(), bus.Intents, "fanout", 2, func(context.Context, bus.Message) error {
			select {
			case got <- struct{}{}:
			default:
			}
			return nil
		})
	}()
	if err := b.Publish(context.Background(), bus.Intents, "k", []byte("x")); err != nil {
		t.Fatal(err)
	}
	<-got
	b.Close()
	select {
	case <-done:
	case <-time.After(testTimeout):
		t.Fatal("Consume still running after Close")
	}
	if err := b.Consume(context.Background(), bus.Intents, "fanout", 1, nil); err == nil {
		t.Error("Consume on a closed bus returned nil")
	}
}
