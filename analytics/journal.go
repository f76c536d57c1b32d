package analytics

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/relaybell/relaybell/bus"
	"github.com/relaybell/relaybell/wire"
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
	if err := Check(events); err != nil {
		return fmt.Errorf("journaling events: %w", err)
	}
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
			errs[i] = j.log.Publish(ctx, bus.Events, "", encodeEvents(c)) // no key: spread over the sinks
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

// Events travel in the log in protobuf's wire format (package wire), a
// record holding at most recordEvents of them:
//
//	message Events { repeated Event events = 1; }
//	message Event {
//	  string kind = 1;
//	  string website_id = 2;
//	  string notification_id = 3;
//	  string endpoint_id = 4;
//	  string subscriber_id = 5;
//	  string device = 6;
//	  string language = 7;
//	  string variant = 8;
//	  string code = 9;
//	  int64 at = 10; // Unix milliseconds
//	}
//
// A broadcast puts every one of its pushes there, and the sinks decoding
// JSON instead took about a quarter of the fan-out nodes' CPU. Records in
// JSON, from a version before, are still read (appendJSONEvents).

func encodeEvents(events []Event) []byte {
	dst := make([]byte, 0, 200*len(events))
	var e []byte
	for i := range events {
		e = appendEvent(e[:0], &events[i])
		dst = protowire.AppendTag(dst, 1, protowire.BytesType)
		dst = protowire.AppendBytes(dst, e)
	}
	return dst
}

func appendEvent(dst []byte, e *Event) []byte {
	for i, v := range [...]string{e.Kind, e.WebsiteID, e.NotificationID, e.EndpointID, e.SubscriberID, e.Device, e.Language, e.Variant, e.Code} {
		dst = wire.AppendString(dst, protowire.Number(i+1), v)
	}
	return wire.AppendVarint(dst, 10, uint64(e.At.UnixMilli()))
}

// appendEvents appends the events of a log record to dst; their strings
// share one copy of data. A record with an event no store could hold (an
// unknown kind, a time out of range) is refused whole: dst comes back as
// it was.
func appendEvents(dst []Event, data []byte) ([]Event, error) {
	if len(data) > 0 && data[0] == '[' { // a message starts with a field tag, never '['
		return appendJSONEvents(dst, data)
	}
	n := len(dst)
	d := wire.NewDecoder(data)
	err := d.Fields(data, 0, func(num protowire.Number, v []byte, at int) error {
		if num != 1 {
			return nil
		}
		e, err := decodeEvent(d, v, at)
		if err != nil {
			return fmt.Errorf("event %d: %w", len(dst)-n, err)
		}
		dst = append(dst, e)
		return nil
	}, nil)
	if err != nil {
		return dst[:n], fmt.Errorf("decoding events: %w", err)
	}
	return dst, nil
}

// decodeEvent reads an Event message found at offset base of d.All.
func decodeEvent(d wire.Decoder, data []byte, base int) (Event, error) {
	var e Event
	var ms int64
	strs := [...]*string{&e.Kind, &e.WebsiteID, &e.NotificationID, &e.EndpointID, &e.SubscriberID, &e.Device, &e.Language, &e.Variant, &e.Code}
	err := d.Fields(data, base, func(num protowire.Number, v []byte, at int) error {
		if int(num) <= len(strs) {
			*strs[num-1] = d.Str(v, at)
		}
		return nil
	}, func(num protowire.Number, v uint64) error {
		if num == 10 {
			ms = int64(v)
		}
		return nil
	})
	if err != nil {
		return Event{}, err
	}
	return e, storable(&e, ms)
}

// storable sets e.At from Unix milliseconds and checks that every store
// can hold e.
func storable(e *Event, ms int64) error {
	e.At = time.UnixMilli(ms).UTC()
	return e.check()
}

// jsonEvent is an Event in a log record in JSON, as versions before the
// wire format wrote them.
type jsonEvent struct {
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

// appendJSONEvents is appendEvents for a record in JSON.
func appendJSONEvents(dst []Event, data []byte) ([]Event, error) {
	var w []jsonEvent
	if err := json.Unmarshal(data, &w); err != nil {
		return dst, fmt.Errorf("decoding events: %w", err)
	}
	n := len(dst)
	for i, j := range w {
		e := Event{Kind: j.Kind, WebsiteID: j.WebsiteID, NotificationID: j.NotificationID, EndpointID: j.EndpointID,
			SubscriberID: j.SubscriberID, Device: j.Device, Language: j.Language, Variant: j.Variant, Code: j.Code}
		if err := storable(&e, j.At); err != nil {
			return dst[:n], fmt.Errorf("decoding events: event %d: %w", i, err)
		}
		dst = append(dst, e)
	}
	return dst, nil
}
