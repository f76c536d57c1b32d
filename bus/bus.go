package bus

import (
	"context"
	"encoding/json"
	"fmt"
)

// Topics.
const (
	Intents = "intents" // Intent, key = website id
	Shards  = "shards"  // ShardTask, key = notification id
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

// ShardTask asks a fan-out worker to expand one shard of a send's audience.
type ShardTask struct {
	NotificationID string `json:"notificationId"`
	Shard          int    `json:"shard"`
}

// PublishJSON encodes v and publishes it.
func PublishJSON(ctx context.Context, b Bus, topic, key string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding %s message: %w", topic, err)
	}
	return b.Publish(ctx, topic, key, data)
}
