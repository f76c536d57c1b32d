package analytics

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relaybell/relaybell/bus"
)

// appendEvents is appendRecord for a record that must hold only events.
func appendEvents(dst []Event, data []byte) ([]Event, error) {
	events, behaviors, err := appendRecord(dst, nil, data)
	if err == nil && len(behaviors) > 0 {
		return events, fmt.Errorf("%d behaviors in a record of events", len(behaviors))
	}
	return events, err
}

// encodeRecord encodes an Events message holding both.
func encodeRecord(events []Event, behaviors []Behavior) []byte {
	data := encodeEvents(events)
	for i := range behaviors {
		data = appendBehaviorField(data, &behaviors[i])
	}
	return data
}

func TestEventsRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 26, 12, 0, 0, 123_000_000, time.UTC)
	in := []Event{
		{Kind: KindSent, WebsiteID: "w", NotificationID: "n", EndpointID: "e1", SubscriberID: "s1", Device: "desktop", Language: "fr", Variant: "b", At: at},
		{Kind: KindFailed, WebsiteID: "w", NotificationID: "n", EndpointID: "e2", SubscriberID: "s2", Code: "500", At: at.Add(time.Second)},
	}
	data := encodeEvents(in)
	prior := Event{Kind: KindClicked, EndpointID: "e0", At: at}
	out, err := appendEvents([]Event{prior}, data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(out, append([]Event{prior}, in...)) {
		t.Fatalf("round trip\n got  %+v\n want %+v", out, in)
	}
}

// testBehaviors are behaviors with every field set, or none, for the
// round trips.
func testBehaviors(at time.Time) []Behavior {
	return []Behavior{
		{ID: "b1", WebsiteID: "w", Name: "purchase", ExternalID: "user-1", SubscriberID: "s1",
			Properties: json.RawMessage(`{"value": 12.5, "items":[{"sku":"a\u00e9"}], "note":"é"}`), Source: "server",
			NotificationID: "n", Value: -12.5, Conversion: true, At: at},
		{ID: "b2", WebsiteID: "w", At: at.Add(time.Millisecond)}, // no properties: {}
		{ID: "b3", WebsiteID: "w", Name: strings.Repeat("ü", MaxBehaviorName), Properties: json.RawMessage(` {} `),
			Source: "browser", Value: 1e-300, At: time.Unix(0, 0).UTC()},
	}
}

// TestBehaviorsRoundTrip: behaviors read back as they were written, beside
// the events of the same record, and their sizes are what the chunking
// counts.
func TestBehaviorsRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 26, 12, 0, 0, 123_000_000, time.UTC)
	in := testBehaviors(at)
	for i := range in {
		if got, want := len(appendBehavior(nil, &in[i])), behaviorSize(&in[i]); got != want {
			t.Errorf("behavior %d: %d bytes, behaviorSize says %d", i, got, want)
		}
		if got, want := len(appendBehaviorField(nil, &in[i])), behaviorFieldSize(&in[i]); got != want {
			t.Errorf("behavior %d: field of %d bytes, behaviorFieldSize says %d", i, got, want)
		}
	}
	events := []Event{{Kind: KindSent, WebsiteID: "w", EndpointID: "e1", At: at}}
	prior := Behavior{ID: "b0", WebsiteID: "w", At: at}
	gotEvents, got, err := appendRecord(nil, []Behavior{prior}, encodeRecord(events, in))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, append([]Behavior{prior}, in...)) || !reflect.DeepEqual(gotEvents, events) {
		t.Fatalf("round trip\n got  %+v %+v\n want %+v %+v", gotEvents, got, events, in)
	}
	// A record of a version before behaviors (field 1 only) reads as before.
	if gotEvents, got, err := appendRecord(nil, nil, encodeEvents(events)); err != nil || got != nil || !reflect.DeepEqual(gotEvents, events) {
		t.Fatalf("a record of events only: %+v %+v %v", gotEvents, got, err)
	}
}

// TestRecordBehaviorsChunks: the Journal puts behaviors in records of at
// most recordBytes, a large one alone, and they all read back in order.
func TestRecordBehaviorsChunks(t *testing.T) {
	at := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	props := func(n int) json.RawMessage { return json.RawMessage(`{"p":"` + strings.Repeat("x", n) + `"}`) }
	var in []Behavior
	for i, size := range []int{300_000, 300_000, 300_000, 300_000, MaxBehaviorBytes - 100, 10, 10} {
		in = append(in, Behavior{ID: fmt.Sprintf("b%d", i), WebsiteID: "w", Properties: props(size), At: at})
	}
	for i := range 2000 {
		in = append(in, Behavior{ID: fmt.Sprintf("small%d", i), WebsiteID: "w", Name: "page.viewed", Properties: props(200), At: at})
	}
	// The largest behavior CheckBehaviors lets through fits in a record,
	// with its every length of three bytes.
	long := strings.Repeat("i", 1<<14)
	largest := Behavior{ID: long, WebsiteID: long, Name: strings.Repeat("ü", MaxBehaviorName), ExternalID: long, SubscriberID: long,
		Source: long, NotificationID: long, Value: math.MaxFloat64, Conversion: true, At: maxAt}
	largest.Properties = props(MaxBehaviorBytes - largest.textBytes() - 8)
	if err := CheckBehaviors([]Behavior{largest}); err != nil {
		t.Fatal(err)
	}
	if n := behaviorFieldSize(&largest); n > recordBytes {
		t.Fatalf("the largest behavior takes %d bytes, over %d", n, recordBytes)
	}
	log := &captureLog{}
	j := NewJournal(nil, log, nil)
	if err := j.RecordBehaviors(t.Context(), in); err != nil {
		t.Fatal(err)
	}
	var sizes []int
	var got []Behavior
	for _, r := range log.records {
		if len(r) > recordBytes {
			t.Errorf("a record of %d bytes, over %d", len(r), recordBytes)
		}
		sizes = append(sizes, len(r))
		var err error
		if _, got, err = appendRecord(nil, got, r); err != nil {
			t.Fatal(err)
		}
	}
	// Published at once, the records may be in any order.
	order := map[string]int{}
	for i, b := range in {
		order[b.ID] = i
	}
	slices.SortFunc(got, func(a, b Behavior) int { return order[a.ID] - order[b.ID] })
	if len(got) != len(in) || !reflect.DeepEqual(got, in) {
		t.Fatalf("read back %d behaviors of %d", len(got), len(in))
	}
	// Three of 300 KB; the fourth alone, as the large one does not fit
	// beside it; the large one topped up with small ones; the other small
	// ones.
	if len(log.records) != 4 {
		t.Fatalf("%d records of %v bytes", len(log.records), sizes)
	}
	// A batch holding one behavior no store holds is published not at all.
	bad := in[0]
	bad.Properties = json.RawMessage(`[]`)
	log.records = nil
	if err := j.RecordBehaviors(t.Context(), []Behavior{in[1], bad}); err == nil || len(log.records) != 0 {
		t.Fatalf("a bad batch: %v, %d records published", err, len(log.records))
	}
}

// captureLog is a Log that keeps what is published.
type captureLog struct {
	mu      sync.Mutex
	records [][]byte
}

func (l *captureLog) Publish(_ context.Context, topic, _ string, value []byte) error {
	if topic != bus.Events {
		return fmt.Errorf("published to %s", topic)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.records = append(l.records, value)
	return nil
}

func (*captureLog) ConsumeBatches(context.Context, string, string, time.Duration, int, int, func(context.Context, []bus.Message) error) error {
	return nil
}

func (*captureLog) Drained(context.Context, string, string) error { return nil }

// TestDecodeRefusesWhatNoStoreHolds: a record a sink could never write is
// refused whole, so the sink drops it instead of retrying it forever.
func TestDecodeRefusesWhatNoStoreHolds(t *testing.T) {
	at := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	ok := Event{Kind: KindSent, WebsiteID: "w", EndpointID: "e", At: at}
	record := func(events ...Event) string { return string(encodeEvents(events)) }
	unknown, early, late := ok, ok, ok
	unknown.Kind = "opened"
	early.At = time.Unix(-1, 0)
	late.At = time.Date(2106, 1, 1, 0, 0, 0, 0, time.UTC)
	whole := record(ok, ok)
	okB := Behavior{ID: "b", WebsiteID: "w", Properties: json.RawMessage(`{"a":1}`), At: at}
	withB := func(bs ...Behavior) string { return string(encodeRecord([]Event{ok}, append([]Behavior{okB}, bs...))) }
	noID, array, earlyB, nan := okB, okB, okB, okB
	noID.ID = ""
	array.Properties = json.RawMessage(`[1]`)
	earlyB.At = time.Unix(-1, 0)
	nan.Value = math.NaN()
	wholeB := withB(okB)
	for _, rec := range []string{
		withB(noID),
		withB(array),
		withB(earlyB),
		withB(nan),
		wholeB[:len(wholeB)-1],     // cut in the last behavior
		"\x12\x02\x0a\x01",         // a behavior cut in its id
		"\x12\x02\x49\x00",         // a behavior cut in its value
		"\x12\x04\x32\x02[]",       // properties not an object (and no id)
		"\x0a\x00\x12\x02\x58\x01", // an event of no kind beside a behavior
		record(ok, unknown),
		record(early),
		record(late),
		whole[:len(whole)-1],               // cut in the last event
		"\x0a\x05\x0a\x06abc",              // an event cut in its kind
		"\x0a\x02\x50\xff",                 // an event cut in its time
		`{"k":"sent"}`,                     // JSON (a record of a version before): not a list
		`[{"k":"opened","t":0}]`,           // unknown kind
		`[{"k":"sent","t":-1}]`,            // before 1970
		`[{"k":"sent","t":9999999999999}]`, // after 2105
		`[{"k":"sent","t":0},{"k":"x","t":0}]`,
		`[{"k":"sent","t":"soon"}]`,
	} {
		prior := []Event{{Kind: KindSent, EndpointID: "e0"}}
		priorB := []Behavior{{ID: "b0"}}
		evs, bs, err := appendRecord(prior, priorB, []byte(rec))
		if err == nil {
			t.Errorf("appendRecord(%q) = %+v %+v, want an error", rec, evs, bs)
		}
		if !reflect.DeepEqual(evs, prior) || !reflect.DeepEqual(bs, priorB) {
			t.Errorf("appendRecord(%q) refused, but left %+v %+v", rec, evs, bs)
		}
	}
}

// Records a version before wrote in JSON are still read.
func TestDecodeReadsJSONRecords(t *testing.T) {
	rec := `[{"k":"sent","w":"w","n":"n","e":"e1","s":"s1","d":"desktop","l":"fr","v":"b","t":1764158400123},
		{"k":"failed","w":"w","n":"n","e":"e2","s":"s2","c":"500","t":1764158401123}]`
	at := time.UnixMilli(1764158400123).UTC()
	want := []Event{
		{Kind: KindSent, WebsiteID: "w", NotificationID: "n", EndpointID: "e1", SubscriberID: "s1", Device: "desktop", Language: "fr", Variant: "b", At: at},
		{Kind: KindFailed, WebsiteID: "w", NotificationID: "n", EndpointID: "e2", SubscriberID: "s2", Code: "500", At: at.Add(time.Second)},
	}
	got, err := appendEvents(nil, []byte(rec))
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("appendEvents(JSON) = %+v, %v; want %+v", got, err, want)
	}
}

// BenchmarkEventsDecode decodes a record of 1,000 events as a sink does,
// in the wire format and in the JSON of the version before, and encodes
// one both ways.
func BenchmarkEventsDecode(b *testing.B) {
	at := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	events := make([]Event, recordEvents)
	js := make([]jsonEvent, recordEvents)
	for i := range events {
		e := Event{Kind: KindSent, WebsiteID: "6b1f0c7e-1a52-4c37-9d4e-2f4b8e1f9a10", NotificationID: "0d8f6f5e-3a1b-4c2d-8e9f-a1b2c3d4e5f6",
			EndpointID: fmt.Sprintf("00000000-0000-4000-8000-%012d", i), SubscriberID: fmt.Sprintf("10000000-0000-4000-8000-%012d", i),
			Device: "desktop", Language: "en", At: at}
		events[i] = e
		js[i] = jsonEvent{e.Kind, e.WebsiteID, e.NotificationID, e.EndpointID, e.SubscriberID, e.Device, e.Language, e.Variant, e.Code, e.At.UnixMilli()}
	}
	wired := encodeEvents(events)
	jsoned, err := json.Marshal(js)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		data []byte
	}{{"wire", wired}, {"json", jsoned}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			dst := make([]Event, 0, recordEvents)
			for b.Loop() {
				if dst, err = appendEvents(dst[:0], c.data); err != nil || len(dst) != recordEvents {
					b.Fatalf("%d events, %v", len(dst), err)
				}
			}
			b.ReportMetric(float64(len(c.data)), "bytes/record")
		})
	}
	// Encoding, and the JSON encoding of the version before.
	b.Run("wire-encode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			encodeEvents(events)
		}
	})
	b.Run("json-encode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(js); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// FuzzDecodeEvents: any bytes either decode into events and behaviors that
// encode back to the same, or are refused; never a panic.
func FuzzDecodeEvents(f *testing.F) {
	f.Add([]byte(`[{"k":"sent","w":"w","n":"n","e":"e","s":"s","d":"desktop","t":1764158400000}]`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`[{"k":"clicked","t":0,"c":"\u0000"}]`))
	f.Add([]byte(strings.Repeat("[", 100)))
	f.Add([]byte("\x0a\x12\x0a\x04sent\x12\x01w\x22\x01e\x50\x80\x80\x80\x80\x10"))
	at := time.Date(2026, 11, 26, 12, 0, 0, 123_000_000, time.UTC)
	f.Add(encodeRecord([]Event{{Kind: KindSent, WebsiteID: "w", EndpointID: "e", At: at}}, testBehaviors(at)))
	f.Add([]byte("\x12\x0c\x0a\x01b\x12\x01w\x32\x02{}\x49\x00\x00\x00\x00\x00\x00\xf8\x7f")) // value NaN
	f.Fuzz(func(t *testing.T, data []byte) {
		evs, bs, err := appendRecord(nil, nil, data)
		if err != nil {
			return
		}
		again := encodeRecord(evs, bs)
		backEvs, backBs, err := appendRecord(nil, nil, again)
		if err != nil {
			t.Fatalf("re-decoding %q: %v", again, err)
		}
		if len(backEvs) != len(evs) || (len(evs) > 0 && !reflect.DeepEqual(backEvs, evs)) {
			t.Fatalf("round trip\n got  %+v\n want %+v", backEvs, evs)
		}
		if len(backBs) != len(bs) || (len(bs) > 0 && !reflect.DeepEqual(backBs, bs)) {
			t.Fatalf("round trip\n got  %+v\n want %+v", backBs, bs)
		}
	})
}
