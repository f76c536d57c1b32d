package bus

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/relaybell/relaybell/store"
)

// Topics.
const (
	Intents = "intents" // Intent, key = website id
	Shards  = "shards"  // ShardTask, no key
	Events  = "events"  // a batch of analytics events (cluster only; see analytics.Journal)
)

// Message is one unit of work on a topic.
type Message struct {
	Topic string
	Key   string
	Value []byte
}

// Handler processes a message; nil acknowledges it, an error redelivers it later.
type Handler func(ctx context.Context, m Message) error

// Bus publishes and consumes messages.
type Bus interface {
	Publish(ctx context.Context, topic, key string, value []byte) error
	// Consume runs h on the topic's messages with the given parallelism until
	// ctx ends. Consumers with the same group share the messages.
	Consume(ctx context.Context, topic, group string, parallel int, h Handler) error
	Close() error
}

// Intent asks fan-out to deliver a committed notification.
type Intent struct {
	WebsiteID      string `json:"websiteId"`
	NotificationID string `json:"notificationId"`
}

// ShardTask asks a fan-out worker to expand one shard of a send's audience,
// or of one wave of a send in waves.
type ShardTask struct {
	NotificationID string     `json:"notificationId"`
	Shard          int        `json:"shard"`
	Wave           int        `json:"wave,omitempty"`
	Due            *time.Time `json:"due,omitempty"` // the wave's due moment
}

// PublishShards publishes the tasks of every shard of a send (wave nil) or
// of one of its waves. Without a key, so the tasks go to the partitions in
// turn and every fan-out node expands some of them at once, each task on a
// partition of its own when there are as many partitions as shards. They
// are published together, not one acknowledgement after another, so that
// they reach the consumers together: the first of them would otherwise
// start alone, and the rest queue behind it.
func PublishShards(ctx context.Context, b Bus, notificationID string, wave *store.Wave) error {
	errs := make([]error, store.Shards)
	var wg sync.WaitGroup
	for shard := range store.Shards {
		t := ShardTask{NotificationID: notificationID, Shard: shard}
		if wave != nil {
			t.Wave, t.Due = wave.Wave, &wave.Due
		}
		wg.Go(func() { errs[shard] = PublishJSON(ctx, b, Shards, "", t) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// PublishJSON encodes v and publishes it.
func PublishJSON(ctx context.Context, b Bus, topic, key string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding %s message: %w", topic, err)
	}
	return b.Publish(ctx, topic, key, data)
}
