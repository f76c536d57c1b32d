package analytics

import (
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
	data, err := encodeEvents(in)
	if err != nil {
		t.Fatal(err)
	}
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
	for _, rec := range []string{
		`{"k":"sent"}`,                     // not a list
		`[{"k":"opened","t":0}]`,           // unknown kind
		`[{"k":"sent","t":-1}]`,            // before 1970
		`[{"k":"sent","t":9999999999999}]`, // after 2105
		`[{"k":"sent","t":0},{"k":"x","t":0}]`,
		`[{"k":"sent","t":"soon"}]`,
	} {
		prior := []Event{{Kind: KindSent, EndpointID: "e0"}}
		evs, err := appendEvents(prior, []byte(rec))
		if err == nil {
			t.Errorf("appendEvents(%s) = %+v, want an error", rec, evs)
		}
		if !reflect.DeepEqual(evs, prior) {
			t.Errorf("appendEvents(%s) refused, but left %+v", rec, evs)
		}
	}
}

// FuzzDecodeEvents: any bytes either decode into events that encode back
// to the same events, or are refused; never a panic.
func FuzzDecodeEvents(f *testing.F) {
	f.Add([]byte(`[{"k":"sent","w":"w","n":"n","e":"e","s":"s","d":"desktop","t":1764158400000}]`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`[{"k":"clicked","t":0,"c":"\u0000"}]`))
	f.Add([]byte(strings.Repeat("[", 100)))
	f.Fuzz(func(t *testing.T, data []byte) {
		evs, err := appendEvents(nil, data)
		if err != nil {
			return
		}
		again, err := encodeEvents(evs)
		if err != nil {
			t.Fatal(err)
		}
		back, err := appendEvents(nil, again)
		if err != nil {
			t.Fatalf("re-decoding %s: %v", again, err)
		}
		if len(back) != len(evs) || (len(evs) > 0 && !reflect.DeepEqual(back, evs)) {
			t.Fatalf("round trip\n got  %+v\n want %+v", back, evs)
		}
	})
}
