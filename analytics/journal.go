package analytics

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/relaybell/relaybell/bus"
)

// Log is the durable log a Journal writes events to and its sink reads
// them from: the cluster's Kafka bus (bus.Events topic).
type Log interface {
	Publish(ctx context.Context, topic, key string, value []byte) error
	ConsumeBatches(ctx context.Context, topic, group string, window time.Duration, max int, h func(context.Context, []bus.Message) error) error
	// Drained returns once group has committed every record published to
	// topic before the call.
	Drained(ctx context.Context, topic, group string) error
}

// Journal is the Store of a cluster's nodes. Record returns once the
// events are in a durable log, not in the store; Sink, run on any number of
// nodes, moves them from the log into the store a batch at a time, and
// commits its place in the log only after the store took them. So an event
// recorded survives the store's death (ClickHouse killed with -9, or down
// for a while: pushing goes on meanwhile) and the sink's, and ClickHouse
// gets about one large insert a second from each sink instead of many
// small ones from every pusher and API node. Reads go to the store and see
// an event about SinkWindow after it was recorded. The sink is
// at-least-once: one that dies between writing a batch and committing it
// leaves the batch to be written again.
type Journal struct {
	Store
	log    Log
	logger *slog.Logger
}

// Journal tuning.
const (
	// SinkWindow is how long a sink gathers events before it writes them.
	SinkWindow = time.Second
	// sinkRecords bounds the log records of one write (each holds at most
	// recordEvents events).
	sinkRecords = 100
	// recordEvents bounds the events of one log record, keeping it well
	// under Kafka's default 1 MB record limit (about 200 bytes an event).
	recordEvents = 1000
	// eraseWait bounds how long an erasure waits for the sinks (within the
	// API's 30 s per request).
	eraseWait = 15 * time.Second
	// publishTimeout bounds Record: the producer itself retries forever.
	publishTimeout = 30 * time.Second
	// sinkGroup is the sinks' consumer group.
	sinkGroup = "analytics-sink"
)

// NewJournal returns a Journal that records to log and reads from st.
func NewJournal(st Store, log Log, logger *slog.Logger) *Journal {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Journal{Store: st, log: log, logger: logger}
}

// Record publishes the events to the log, a record per recordEvents, and
// returns once the log acknowledged them all, or fails after
// publishTimeout (a node shutting down while Kafka is unreachable must not
// wait for it forever).
func (j *Journal) Record(ctx context.Context, events []Event) error {
	ctx, cancel := context.WithTimeout(ctx, publishTimeout)
	defer cancel()
	var chunks [][]Event
	for len(events) > 0 {
		n := min(len(events), recordEvents)
		chunks, events = append(chunks, events[:n]), events[n:]
	}
	errs := make([]error, len(chunks))
	var wg sync.WaitGroup
	for i, c := range chunks {
		wg.Go(func() {
			data, err := encodeEvents(c)
			if err == nil {
				err = j.log.Publish(ctx, bus.Events, "", data) // no key: spread over the sinks
			}
			errs[i] = err
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("journaling events: %w", err)
	}
	return nil
}

// Erase waits until the sinks have written every event recorded before
// the call, then erases from the store: otherwise events still in the log
// would reach the store after the erasure. It fails, erasing nothing, when
// the sinks are more than eraseWait behind (none running, or ClickHouse
// down), so the caller can try again later.
func (j *Journal) Erase(ctx context.Context, websiteID string, subscriberIDs []string) error {
	if len(subscriberIDs) == 0 {
		return nil
	}
	wait, cancel := context.WithTimeout(ctx, eraseWait)
	defer cancel()
	if err := j.log.Drained(wait, bus.Events, sinkGroup); err != nil {
		return fmt.Errorf("erasing events: %w", err)
	}
	return j.Store.Erase(ctx, websiteID, subscriberIDs)
}

// Sink moves events from the log into the store until ctx ends. Every node
// that runs it shares the log's partitions.
func (j *Journal) Sink(ctx context.Context) error {
	return j.log.ConsumeBatches(ctx, bus.Events, sinkGroup, SinkWindow, sinkRecords, func(ctx context.Context, msgs []bus.Message) error {
		var events []Event
		for _, m := range msgs {
			var err error
			if events, err = appendEvents(events, m.Value); err != nil {
				// Not ours, or damaged: it can never be written, so it must
				// not hold back the rest.
				j.logger.Error("analytics sink: dropping an unreadable record", "key", m.Key, "bytes", len(m.Value), "err", err)
			}
		}
		return j.Store.Record(ctx, events)
	})
}

// wireEvent is an Event in the log, with short names: a broadcast puts
// every one of its pushes there.
type wireEvent struct {
	Kind           string `json:"k"`
	WebsiteID      string `json:"w"`
	NotificationID string `json:"n"`
	EndpointID     string `json:"e"`
	SubscriberID   string `json:"s"`
	Device         string `json:"d,omitempty"`
	Language       string `json:"l,omitempty"`
	Variant        string `json:"v,omitempty"`
	Code           string `json:"c,omitempty"`
	At             int64  `json:"t"` // Unix milliseconds
}

// The times an event may carry: what every store can hold (ClickHouse's
// DateTime ends in 2106).
var (
	minAt = time.Unix(0, 0)
	maxAt = time.Date(2105, 12, 31, 0, 0, 0, 0, time.UTC)
)

// kinds are the event kinds a log record may carry.
var kinds = map[string]bool{KindSent: true, KindFailed: true, KindExpired: true, KindDelivered: true, KindClicked: true}

func encodeEvents(events []Event) ([]byte, error) {
	w := make([]wireEvent, len(events))
	for i, e := range events {
		w[i] = wireEvent{e.Kind, e.WebsiteID, e.NotificationID, e.EndpointID, e.SubscriberID,
			e.Device, e.Language, e.Variant, e.Code, e.At.UnixMilli()}
	}
	return json.Marshal(w)
}

// appendEvents appends the events of a log record to dst. A record with an
// event no store could hold (an unknown kind, a time out of range) is
// refused whole: dst comes back as it was.
func appendEvents(dst []Event, data []byte) ([]Event, error) {
	var w []wireEvent
	if err := json.Unmarshal(data, &w); err != nil {
		return dst, fmt.Errorf("decoding events: %w", err)
	}
	n := len(dst)
	for i, e := range w {
		at := time.UnixMilli(e.At).UTC()
		if !kinds[e.Kind] || at.Before(minAt) || at.After(maxAt) {
			return dst[:n], fmt.Errorf("decoding events: event %d: kind %q at %d cannot be stored", i, e.Kind, e.At)
		}
		dst = append(dst, Event{Kind: e.Kind, WebsiteID: e.WebsiteID, NotificationID: e.NotificationID, EndpointID: e.EndpointID,
			SubscriberID: e.SubscriberID, Device: e.Device, Language: e.Language, Variant: e.Variant, Code: e.Code, At: at})
	}
	return dst, nil
}
