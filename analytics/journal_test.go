package analytics

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

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
	for _, rec := range []string{
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
		evs, err := appendEvents(prior, []byte(rec))
		if err == nil {
			t.Errorf("appendEvents(%q) = %+v, want an error", rec, evs)
		}
		if !reflect.DeepEqual(evs, prior) {
			t.Errorf("appendEvents(%q) refused, but left %+v", rec, evs)
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

// FuzzDecodeEvents: any bytes either decode into events that encode back
// to the same events, or are refused; never a panic.
func FuzzDecodeEvents(f *testing.F) {
	f.Add([]byte(`[{"k":"sent","w":"w","n":"n","e":"e","s":"s","d":"desktop","t":1764158400000}]`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`[{"k":"clicked","t":0,"c":"\u0000"}]`))
	f.Add([]byte(strings.Repeat("[", 100)))
	f.Add([]byte("\x0a\x12\x0a\x04sent\x12\x01w\x22\x01e\x50\x80\x80\x80\x80\x10"))
	f.Fuzz(func(t *testing.T, data []byte) {
		evs, err := appendEvents(nil, data)
		if err != nil {
			return
		}
		again := encodeEvents(evs)
		back, err := appendEvents(nil, again)
		if err != nil {
			t.Fatalf("re-decoding %s: %v", again, err)
		}
		if len(back) != len(evs) || (len(evs) > 0 && !reflect.DeepEqual(back, evs)) {
			t.Fatalf("round trip\n got  %+v\n want %+v", back, evs)
		}
	})
}
