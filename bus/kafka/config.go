package kafka

import (
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/relaybell/relaybell/bus"
	"github.com/relaybell/relaybell/store"
)

// Config configures the Kafka bus.
type Config struct {
	// Seeds are the bootstrap brokers, host:port. Required.
	Seeds []string
	// TopicPrefix is put before every bus topic and consumer group name
	// (default "relaybell.").
	TopicPrefix string
	// Topics are the bus topics created at Open when missing (default
	// bus.Intents, bus.Shards and bus.Events).
	Topics []string
	// Partitions is the partition count of topics created at Open (default
	// store.Shards, 64). It bounds how many consumers of a group can share
	// the work, and how evenly: a partition's records are handled one after
	// another, so the shard tasks of one send, spread over as many
	// partitions as there are shards, go out side by side rather than
	// queued a few to a partition.
	Partitions int
	// ReplicationFactor of topics created at Open (default 1, which fits
	// kfake and single-broker development clusters only: production needs 3
	// with min.insync.replicas 2 for "Publish returned nil" to survive a
	// broker loss).
	ReplicationFactor int
	// RetryBackoff is the delay before a failed message is retried; it
	// doubles per failed attempt up to MaxRetryBackoff (defaults 1 s, 1 min).
	RetryBackoff    time.Duration
	MaxRetryBackoff time.Duration
	// Linger is how long the producer waits to batch records (default 0:
	// Publish waits for the ack anyway, and concurrent publishes batch while
	// a produce request is in flight).
	Linger time.Duration
	// Opts are appended to every client's options (TLS, SASL, tuning).
	Opts []kgo.Opt
	// GroupOpts are appended to the options of consumer-group clients only
	// (e.g. kgo.HeartbeatInterval, kgo.SessionTimeout, kgo.FetchMaxWait: after a
	// rebalance or a resume, newly fetchable partitions may wait up to one
	// in-flight fetch long-poll, 5 s by default, before they are fetched).
	GroupOpts []kgo.Opt
}

// withDefaults fills unset fields.
func (c Config) withDefaults() Config {
	if c.TopicPrefix == "" {
		c.TopicPrefix = "relaybell."
	}
	if len(c.Topics) == 0 {
		c.Topics = []string{bus.Intents, bus.Shards, bus.Events}
	}
	if c.Partitions == 0 {
		c.Partitions = store.Shards
	}
	if c.ReplicationFactor == 0 {
		c.ReplicationFactor = 1
	}
	if c.RetryBackoff == 0 {
		c.RetryBackoff = time.Second
	}
	if c.MaxRetryBackoff == 0 {
		c.MaxRetryBackoff = time.Minute
	}
	return c
}

// Validate reports a configuration Open cannot use. Zero values are valid:
// they take the defaults.
func (c Config) Validate() error {
	var errs []error
	if len(c.Seeds) == 0 {
		errs = append(errs, errors.New("no seed brokers"))
	}
	if c.Partitions < 0 {
		errs = append(errs, fmt.Errorf("partitions %d < 0", c.Partitions))
	}
	if c.ReplicationFactor < 0 || c.ReplicationFactor > 32767 {
		errs = append(errs, fmt.Errorf("replication factor %d out of range", c.ReplicationFactor))
	}
	if c.RetryBackoff < 0 || c.MaxRetryBackoff < 0 {
		errs = append(errs, errors.New("negative retry backoff"))
	}
	if c.Linger < 0 {
		errs = append(errs, errors.New("negative linger"))
	}
	for _, t := range c.Topics {
		if t == "" {
			errs = append(errs, errors.New("empty topic name"))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("kafka bus config: %w", err)
	}
	return nil
}

// backoff is the delay before the given failed attempt (1-based) is retried.
func (c Config) backoff(attempt int) time.Duration {
	d := c.RetryBackoff << min(attempt-1, 20)
	if d <= 0 || d > c.MaxRetryBackoff {
		return c.MaxRetryBackoff
	}
	return d
}
