package analytics

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
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
	ConsumeBatches(ctx context.Context, topic, group string, window time.Duration, maxRecords, maxBytes int, h func(context.Context, []bus.Message) error) error
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
	// SinkWindow is how long a sink gathers events before it writes them
	// (on the Kafka bus, an event waits up to half as long again at the
	// broker for a fetch's worth: kafka.Bus.ConsumeBatches).
	SinkWindow = time.Second
	// sinkRecords and sinkBytes bound the log records of one write (each
	// holds at most recordEvents events or recordBytes of behaviors). An
	// event posted to the API is a record of its own, about 300 bytes: a
	// bound of 100 records made ClickHouse take ten inserts a second from
	// each sink at 2,000 events a second, and spend 70 to 180 µs an event
	// on them; at 1,000 it spent 12 to 14 (docs/scale-out.md).
	sinkRecords = 10_000
	sinkBytes   = 100 << 20
	// recordEvents bounds the events of one log record, keeping it well
	// under Kafka's default 1 MB record limit (about 200 bytes an event).
	recordEvents = 1000
	// recordBytes bounds the behaviors of one log record by their encoded
	// size: under the producer's default limit of 1,000,012 bytes a record,
	// with room for the record's own framing, and above what the largest
	// behavior CheckBehaviors lets through takes (MaxBehaviorBytes of text
	// and at most about 60 bytes of tags and numbers).
	recordBytes = 996_000
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
// publishTimeout.
func (j *Journal) Record(ctx context.Context, events []Event) error {
	if err := Check(events); err != nil {
		return fmt.Errorf("journaling events: %w", err)
	}
	var records [][]byte
	for len(events) > 0 {
		n := min(len(events), recordEvents)
		records, events = append(records, encodeEvents(events[:n])), events[n:]
	}
	if err := j.publish(ctx, records); err != nil {
		return fmt.Errorf("journaling events: %w", err)
	}
	return nil
}

// RecordBehaviors publishes the behaviors to the log as Record does
// events, in records of at most recordBytes (one that does not fit beside
// those before it starts the next), and returns once the log acknowledged
// them all.
func (j *Journal) RecordBehaviors(ctx context.Context, behaviors []Behavior) error {
	if err := CheckBehaviors(behaviors); err != nil {
		return fmt.Errorf("journaling behaviors: %w", err)
	}
	var records [][]byte
	var rec []byte
	for i := range behaviors {
		if n := behaviorFieldSize(&behaviors[i]); len(rec) > 0 && len(rec)+n > recordBytes {
			records, rec = append(records, rec), nil
		}
		rec = appendBehaviorField(rec, &behaviors[i])
	}
	if len(rec) > 0 {
		records = append(records, rec)
	}
	if err := j.publish(ctx, records); err != nil {
		return fmt.Errorf("journaling behaviors: %w", err)
	}
	return nil
}

// publish publishes the records at once and returns once the log
// acknowledged them all, or fails after publishTimeout (a node shutting
// down while Kafka is unreachable must not wait for it forever).
func (j *Journal) publish(ctx context.Context, records [][]byte) error {
	ctx, cancel := context.WithTimeout(ctx, publishTimeout)
	defer cancel()
	errs := make([]error, len(records))
	var wg sync.WaitGroup
	for i, r := range records {
		wg.Go(func() {
			errs[i] = j.log.Publish(ctx, bus.Events, "", r) // no key: spread over the sinks
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Erase waits until the sinks have written every event and behavior
// recorded before the call, then erases from the store: otherwise those
// still in the log would reach the store after the erasure. It fails,
// erasing nothing, when the sinks are more than eraseWait behind (none
// running, or ClickHouse down), so the caller can try again later.
func (j *Journal) Erase(ctx context.Context, websiteID string, subscriberIDs, externalIDs []string) error {
	if len(NonEmpty(subscriberIDs)) == 0 && len(NonEmpty(externalIDs)) == 0 {
		return nil
	}
	wait, cancel := context.WithTimeout(ctx, eraseWait)
	defer cancel()
	if err := j.log.Drained(wait, bus.Events, sinkGroup); err != nil {
		return fmt.Errorf("erasing events: %w", err)
	}
	return j.Store.Erase(ctx, websiteID, subscriberIDs, externalIDs)
}

// Sink moves events and behaviors from the log into the store until ctx
// ends. Every node that runs it shares the log's partitions. A write holds
// at most sinkRecords records, and stops gathering at sinkBytes (about
// 100 MB, one fetch more at most).
func (j *Journal) Sink(ctx context.Context) error {
	return j.log.ConsumeBatches(ctx, bus.Events, sinkGroup, SinkWindow, sinkRecords, sinkBytes, func(ctx context.Context, msgs []bus.Message) error {
		var (
			events    []Event
			behaviors []Behavior
		)
		for _, m := range msgs {
			var err error
			if events, behaviors, err = appendRecord(events, behaviors, m.Value); err != nil {
				// Not ours, or damaged: it can never be written, so it must
				// not hold back the rest.
				j.logger.Error("analytics sink: dropping an unreadable record", "key", m.Key, "bytes", len(m.Value), "err", err)
			}
		}
		// Should the behaviors fail after the events were written, the
		// batch comes again whole: reads count an event or a behavior
		// written twice once.
		if err := j.Store.Record(ctx, events); err != nil {
			return err
		}
		return j.Store.RecordBehaviors(ctx, behaviors)
	})
}

// Events and behaviors travel in the log in protobuf's wire format
// (package wire), a record holding at most recordEvents events or
// recordBytes of behaviors (Journal writes each record with one or the
// other; a sink reads both from any record):
//
//	message Events {
//	  repeated Event events = 1;
//	  repeated Behavior behaviors = 2;
//	}
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
//	message Behavior {
//	  string id = 1;
//	  string website_id = 2;
//	  string name = 3;
//	  string external_id = 4;
//	  string subscriber_id = 5;
//	  bytes properties = 6; // a JSON object; absent: {}
//	  string source = 7;
//	  string notification_id = 8;
//	  double value = 9;
//	  bool conversion = 10;
//	  int64 at = 11; // Unix milliseconds
//	  int64 seq = 12; // Behavior.Seq; absent: 0
//	}
//
// A broadcast puts every one of its pushes there, and the sinks decoding
// JSON instead took about a quarter of the fan-out nodes' CPU. Records in
// JSON, from a version before, are still read (appendJSONEvents); records
// of a version before behaviors hold only field 1. A sink of that version
// skips field 2: during a rolling upgrade, the nodes that run sinks
// (fan-out) go first, or behaviors recorded meanwhile may be dropped.

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

// appendBehaviorField appends b as a behaviors field of an Events message.
func appendBehaviorField(dst []byte, b *Behavior) []byte {
	dst = protowire.AppendTag(dst, 2, protowire.BytesType)
	dst = protowire.AppendVarint(dst, uint64(behaviorSize(b)))
	return appendBehavior(dst, b)
}

// behaviorFieldSize is what appendBehaviorField appends.
func behaviorFieldSize(b *Behavior) int {
	return protowire.SizeTag(2) + protowire.SizeBytes(behaviorSize(b))
}

func appendBehavior(dst []byte, b *Behavior) []byte {
	for i, v := range [...]string{b.ID, b.WebsiteID, b.Name, b.ExternalID, b.SubscriberID} {
		dst = wire.AppendString(dst, protowire.Number(i+1), v)
	}
	if len(b.Properties) > 0 {
		dst = protowire.AppendTag(dst, 6, protowire.BytesType)
		dst = protowire.AppendBytes(dst, b.Properties)
	}
	dst = wire.AppendString(dst, 7, b.Source)
	dst = wire.AppendString(dst, 8, b.NotificationID)
	if b.Value != 0 {
		dst = protowire.AppendTag(dst, 9, protowire.Fixed64Type)
		dst = protowire.AppendFixed64(dst, math.Float64bits(b.Value))
	}
	if b.Conversion {
		dst = wire.AppendVarint(dst, 10, 1)
	}
	dst = wire.AppendVarint(dst, 11, uint64(b.At.UnixMilli()))
	return wire.AppendVarint(dst, 12, uint64(b.Seq))
}

// behaviorSize is what appendBehavior appends.
func behaviorSize(b *Behavior) int {
	n := 0
	for i, v := range [...]string{b.ID, b.WebsiteID, b.Name, b.ExternalID, b.SubscriberID} {
		n += wire.StringSize(protowire.Number(i+1), v)
	}
	if len(b.Properties) > 0 {
		n += protowire.SizeTag(6) + protowire.SizeBytes(len(b.Properties))
	}
	n += wire.StringSize(7, b.Source) + wire.StringSize(8, b.NotificationID)
	if b.Value != 0 {
		n += protowire.SizeTag(9) + protowire.SizeFixed64()
	}
	if b.Conversion {
		n += protowire.SizeTag(10) + protowire.SizeVarint(1)
	}
	if ms := uint64(b.At.UnixMilli()); ms != 0 {
		n += protowire.SizeTag(11) + protowire.SizeVarint(ms)
	}
	if b.Seq != 0 {
		n += protowire.SizeTag(12) + protowire.SizeVarint(uint64(b.Seq))
	}
	return n
}

// appendRecord appends the events and behaviors of a log record to events
// and behaviors; their strings share one copy of data (properties are
// copied apart). A record with an event or a behavior no store could hold
// (an unknown kind, a time out of range, properties that are not an
// object, ...) is refused whole: both come back as they were.
func appendRecord(events []Event, behaviors []Behavior, data []byte) ([]Event, []Behavior, error) {
	if len(data) > 0 && data[0] == '[' { // a message starts with a field tag, never '['
		events, err := appendJSONEvents(events, data)
		return events, behaviors, err
	}
	ne, nb := len(events), len(behaviors)
	d := wire.NewDecoder(data)
	err := d.Fields(data, 0, func(num protowire.Number, v []byte, at int) error {
		switch num {
		case 1:
			e, err := decodeEvent(d, v, at)
			if err != nil {
				return fmt.Errorf("event %d: %w", len(events)-ne, err)
			}
			events = append(events, e)
		case 2:
			b, err := decodeBehavior(d, v, at)
			if err != nil {
				return fmt.Errorf("behavior %d: %w", len(behaviors)-nb, err)
			}
			behaviors = append(behaviors, b)
		}
		return nil
	}, nil)
	if err != nil {
		return events[:ne], behaviors[:nb], fmt.Errorf("decoding events: %w", err)
	}
	return events, behaviors, nil
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

// decodeBehavior reads a Behavior message found at offset base of d.All.
// It walks the fields itself, as wire.Decoder.Fields skips fixed64 (value).
func decodeBehavior(d wire.Decoder, data []byte, base int) (Behavior, error) {
	var b Behavior
	var ms int64
	strs := [...]*string{1: &b.ID, 2: &b.WebsiteID, 3: &b.Name, 4: &b.ExternalID, 5: &b.SubscriberID, 7: &b.Source, 8: &b.NotificationID}
	for off := 0; off < len(data); {
		num, typ, n := protowire.ConsumeTag(data[off:])
		if n < 0 {
			return Behavior{}, protowire.ParseError(n)
		}
		off += n
		n = protowire.ConsumeFieldValue(num, typ, data[off:])
		if n < 0 {
			return Behavior{}, protowire.ParseError(n)
		}
		field := data[off : off+n]
		switch {
		case typ == protowire.BytesType:
			v, m := protowire.ConsumeBytes(field)
			switch {
			case num == 6:
				b.Properties = nil
				if len(v) > 0 {
					b.Properties = bytes.Clone(v)
				}
			case int(num) < len(strs) && strs[num] != nil:
				*strs[num] = d.Str(v, base+off+m-len(v))
			}
		case typ == protowire.Fixed64Type && num == 9:
			v, _ := protowire.ConsumeFixed64(field)
			b.Value = math.Float64frombits(v)
		case typ == protowire.VarintType && num == 10:
			v, _ := protowire.ConsumeVarint(field)
			b.Conversion = v != 0
		case typ == protowire.VarintType && num == 11:
			v, _ := protowire.ConsumeVarint(field)
			ms = int64(v)
		case typ == protowire.VarintType && num == 12:
			v, _ := protowire.ConsumeVarint(field)
			b.Seq = int64(v)
		}
		off += n
	}
	b.At = time.UnixMilli(ms).UTC()
	return b, b.check()
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
