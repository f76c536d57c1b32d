package notification

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/relaybell/relaybell/store"
)

// FuzzPrepare feeds hostile bodies that decode through Prepare: it may not
// panic, every refusal is a spec error, and an accepted send's stored
// content, target and payload are valid JSON, and a send's payload fits
// one push. (The API's decoder has its
// own fuzz test.)
func FuzzPrepare(f *testing.F) {
	for _, seed := range []string{
		`{"title":"Hi"}`,
		`{"title":"a","externalIds":[]}`,
		`{"title":"a","actions":[{"title":"x","url":"javascript:1"},{"title":"y"},{"title":"z"}]}`,
		`{"title":"a","filters":{"match":"any","rules":[{"field":"tag:vip","op":"in","value":["a",1,true]}]}}`,
		`{"title":"a","ab":{"b":{"title":"b"}},"abTest":{"testPercent":-5,"afterHours":999}}`,
		`{"title":"a","sendAt":"2030-01-01T00:00:00Z","perTimezone":true,"localTime":"23:59"}`,
		`{"title":"a","translations":{"de":{"title":"x","body":"y"},"":{}}}`,
		`{"draft":true}`,
		`{"title":"a","ttl":-1}`,
		`{"title":"a"}{}`,
		`[1,2]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := decodeStrict(body)
		if err != nil {
			return
		}
		n, err := Prepare(context.Background(), r, website, lookup, now)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Prepare error %v is not a spec error", err)
			}
			return
		}
		c, err := DecodeContent(n.Content)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := DecodeTarget(n.Target); err != nil {
			t.Fatal(err)
		}
		if len(c.Actions) > MaxActions || c.TTL < 1 || c.TTL > MaxTTL {
			t.Fatalf("content out of range: %+v", c)
		}
		if !json.Valid(n.SendBody) {
			t.Fatalf("sendBody %q", n.SendBody)
		}
		b, err := c.PushPayload(n.ID, &store.Recipient{Endpoint: store.Endpoint{ID: placeholderID, Language: "de"}}, c.Variant(n.ID, "e", ""))
		if err != nil || !json.Valid(b) {
			t.Fatalf("payload %q (%v)", b, err)
		}
		if len(b) > MaxPayload && !r.IsDraft() {
			t.Fatalf("an accepted send's payload is %d bytes", len(b))
		}
	})
}

// FuzzMergeTags feeds arbitrary text to mergeTags: it may not panic, text
// without '{' comes back unchanged, and with no recipient (every tag gives
// its fallback, which is shorter than the tag) the text never grows.
func FuzzMergeTags(f *testing.F) {
	for _, seed := range []string{
		"Hi {first_name|there}!",
		"{external_id}{COUNTRY}{device}",
		`{"a":1} { } {} {|x} {a|{b}}`,
		"https://x.example/?q={q}&c={City|S%C3%A3o}",
		"{", "}", "{{", "}{", "{a|", "{a|b",
		"{" + strings.Repeat("n", 65) + "}",
		"plain",
	} {
		f.Add(seed, true)
	}
	f.Fuzz(func(t *testing.T, s string, query bool) {
		got := mergeTags(s, mergeRecipient, query)
		if !strings.Contains(s, "{") && got != s {
			t.Fatalf("mergeTags(%q) = %q without a brace", s, got)
		}
		if bare := mergeTags(s, nil, query); len(bare) > len(s) {
			t.Fatalf("mergeTags(%q, nil) = %q grew", s, bare)
		}
	})
}
