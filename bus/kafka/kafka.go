package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/relaybell/relaybell/bus"
)

// Bus is the Kafka bus: one producer client, plus one consumer-group client
// per running Consume or ConsumeBatches.
type Bus struct {
	cfg    Config
	logger *slog.Logger
	prod   *kgo.Client

	mu        sync.Mutex
	consumers map[*kgo.Client]struct{}
	groups    map[string]struct{} // consumer groups joined, as Kafka names them (LagCollector)
	closeOnce sync.Once
}

var _ bus.Bus = (*Bus)(nil)

// Open connects to the cluster and creates the bus topics that are missing.
func Open(ctx context.Context, cfg Config, logger *slog.Logger) (*Bus, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	b := &Bus{cfg: cfg, logger: logger, consumers: make(map[*kgo.Client]struct{}), groups: make(map[string]struct{})}
	opts := append([]kgo.Opt{
		kgo.SeedBrokers(cfg.Seeds...),
		kgo.RequiredAcks(kgo.AllISRAcks()), // the default, and required by idempotence; stated for readers
		kgo.ProducerLinger(cfg.Linger),
		kgo.RecordPartitioner(partitioner{keyed: kgo.StickyKeyPartitioner(nil), unkeyed: kgo.RoundRobinPartitioner()}),
		kgo.WithLogger(kgoLogger{logger}),
	}, cfg.Opts...)
	prod, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("creating kafka producer: %w", err)
	}
	b.prod = prod
	if err := b.createTopics(ctx); err != nil {
		prod.Close()
		return nil, err
	}
	return b, nil
}

func (b *Bus) topic(t string) string { return b.cfg.TopicPrefix + t }

// createTopics creates the configured topics, leaving existing ones as they are.
func (b *Bus) createTopics(ctx context.Context) error {
	names := make([]string, len(b.cfg.Topics))
	for i, t := range b.cfg.Topics {
		names[i] = b.topic(t)
	}
	resp, err := kadm.NewClient(b.prod).CreateTopics(ctx, int32(b.cfg.Partitions), int16(b.cfg.ReplicationFactor), nil, names...)
	if err != nil {
		return fmt.Errorf("creating kafka topics: %w", err)
	}
	for _, r := range resp.Sorted() {
		if r.Err != nil && !errors.Is(r.Err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("creating kafka topic %s: %w", r.Topic, r.Err)
		}
		if r.Err == nil {
			b.logger.Info("kafka bus: created topic", "topic", r.Topic, "partitions", b.cfg.Partitions, "replication_factor", b.cfg.ReplicationFactor)
		}
	}
	return nil
}

// Publish produces the record keyed by key and returns once all in-sync
// replicas acknowledged it. Records with the same key go to the same
// partition, in order; records without a key ("") go to the partitions in
// turn. The topic should be one of Config.Topics: others
// exist only if the cluster creates topics on use.
func (b *Bus) Publish(ctx context.Context, topic, key string, value []byte) error {
	r := &kgo.Record{Topic: b.topic(topic), Value: value}
	if key != "" {
		r.Key = []byte(key)
	}
	if err := b.prod.ProduceSync(ctx, r).FirstErr(); err != nil {
		return fmt.Errorf("publishing to %s: %w", topic, err)
	}
	return nil
}

func (b *Bus) track(cl *kgo.Client) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.consumers == nil {
		return false // closed
	}
	b.consumers[cl] = struct{}{}
	return true
}

func (b *Bus) untrack(cl *kgo.Client) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.consumers, cl)
}

// Close closes the producer and any consumer client still running (their
// Consume calls return). Stop consumers by ending their contexts first for a
// clean commit and leave. Close is idempotent.
func (b *Bus) Close() error {
	b.closeOnce.Do(func() {
		b.mu.Lock()
		consumers := b.consumers
		b.consumers = nil
		b.mu.Unlock()
		for cl := range consumers {
			cl.Close()
		}
		b.prod.Close()
	})
	return nil
}

// partitioner keeps a key's records on one partition (Kafka's own murmur2
// hash of the key, as other Kafka clients do) and deals records without a
// key to the partitions in turn. The shard tasks of a send go without a
// key: published together by one producer, they then land on as many
// partitions as there are tasks (when every partition takes writes, and
// less evenly when the same producer's other sends interleave), and are
// expanded side by side. Hashing their 64 keys onto 64
// partitions left about a third of them queued behind another task of the
// same send on a shared partition.
type partitioner struct{ keyed, unkeyed kgo.Partitioner }

func (p partitioner) ForTopic(topic string) kgo.TopicPartitioner {
	return topicPartitioner{p.keyed.ForTopic(topic), p.unkeyed.ForTopic(topic)}
}

type topicPartitioner struct{ keyed, unkeyed kgo.TopicPartitioner }

func (p topicPartitioner) RequiresConsistency(r *kgo.Record) bool { return r.Key != nil }

func (p topicPartitioner) Partition(r *kgo.Record, n int) int {
	if r.Key != nil {
		return p.keyed.Partition(r, n)
	}
	return p.unkeyed.Partition(r, n)
}

// kgoLogger sends franz-go's warnings and errors to slog.
type kgoLogger struct{ l *slog.Logger }

func (k kgoLogger) Level() kgo.LogLevel { return kgo.LogLevelWarn }

func (k kgoLogger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	lvl := slog.LevelWarn
	if level == kgo.LogLevelError {
		lvl = slog.LevelError
	}
	k.l.Log(context.Background(), lvl, "kafka: "+msg, keyvals...)
}
