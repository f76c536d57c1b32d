package notification

import (
	"strings"
	"testing"

	"github.com/relaybell/relaybell/store"
)

// encoderContent is a send with a bit of everything a payload varies by:
// merge tags, a translation, version B and HTML characters.
func encoderContent() *Content {
	bTitle, bImage := "B {{firstName|friend}}", "https://img.example/b.png?x=<b>&y=1"
	return &Content{
		Title: "Hi {{firstName|there}} <&>", Body: "Body \u2028 \"quoted\" \\ é", URL: "https://shop.example/?p={{externalId}}",
		Icon: "https://shop.example/i.png", Image: "https://img.example/a.png", Badge: "b",
		Actions: []Action{{Action: "btn1", Title: "Go", URL: "https://x.example/?a=<>&"}}, RequireInteraction: true, Tag: "t",
		Translations: map[string]Translation{"de": {Title: "Hallo {{firstName|du}}", Body: "Text"}},
		B:            &Variant{Title: &bTitle, Image: &bImage},
	}
}

// TestPayloadEncoderIsPushPayload: each browser's payload from the
// encoder is PushPayload's, byte for byte, whatever its language, tags,
// version and ids, and whether the encoder kept the rest of it or not.
func TestPayloadEncoderIsPushPayload(t *testing.T) {
	long := strings.Repeat("ß", 3000)
	for _, c := range []*Content{encoderContent(), {Title: "plain"}, {Title: "{{firstName}}", Body: long}, {Title: long, Body: long}} {
		for _, nid := range []string{placeholderID, `odd "id" \ <x>`, "\xff\u2028"} {
			enc := c.PayloadEncoder(nid)
			for i, r := range []store.Recipient{
				{Endpoint: store.Endpoint{ID: placeholderID}},
				{Endpoint: store.Endpoint{ID: "e-2", Language: "de-DE"}, Subscriber: store.Subscriber{Tags: map[string]string{"firstName": "Jörg"}}},
				{Endpoint: store.Endpoint{ID: `e"3\` + "\u2028"}, Subscriber: store.Subscriber{ExternalID: "x&y", Tags: map[string]string{"firstName": long}}},
				{Endpoint: store.Endpoint{ID: "e-4", Language: "fr"}, Subscriber: store.Subscriber{Tags: map[string]string{"firstName": "Ann"}}},
				{Endpoint: store.Endpoint{ID: "e-5", Language: "de"}, Subscriber: store.Subscriber{Tags: map[string]string{"firstName": "Jörg"}}},
			} {
				for _, variant := range []string{"", "a", "b"} {
					for range 2 { // the second time from what the encoder kept
						want, wantErr := c.PushPayload(nid, &r, variant)
						got, err := enc.Encode(&r, variant)
						if string(got) != string(want) || (err == nil) != (wantErr == nil) {
							t.Fatalf("content %.20q, id %q, recipient %d, variant %q:\n got %s (%v)\nwant %s (%v)", c.Title, nid, i, variant, got, err, want, wantErr)
						}
					}
				}
			}
		}
	}
}

// FuzzPayloadEncoder: the encoder's payload is PushPayload's for any
// texts, ids and tag values.
func FuzzPayloadEncoder(f *testing.F) {
	f.Add("Hi {{firstName|there}}", "body", "https://x.example/?q={{externalId}}", placeholderID, "e-1", "Ann", "de", "b")
	f.Add("<&>\u2028", "\"\\", "", "\xff", "\x00", "{{x}}", "", "")
	f.Add(strings.Repeat("ß", 2100), strings.Repeat("x", 2100), "", placeholderID, placeholderID, "", "en", "a")
	f.Fuzz(func(t *testing.T, title, body, url, nid, eid, name, lang, variant string) {
		bTitle := title + "!"
		c := &Content{Title: title, Body: body, URL: url, Translations: map[string]Translation{"de": {Title: body}}, B: &Variant{Title: &bTitle}}
		r := store.Recipient{Endpoint: store.Endpoint{ID: eid, Language: lang}, Subscriber: store.Subscriber{Tags: map[string]string{"firstName": name}}}
		enc := c.PayloadEncoder(nid)
		for range 2 {
			want, wantErr := c.PushPayload(nid, &r, variant)
			got, err := enc.Encode(&r, variant)
			if string(got) != string(want) || (err == nil) != (wantErr == nil) {
				t.Fatalf("got %s (%v), want %s (%v)", got, err, want, wantErr)
			}
		}
	})
}

// BenchmarkPayloadEncoder: a broadcast's payload per browser, from
// PushPayload and from one encoder.
func BenchmarkPayloadEncoder(b *testing.B) {
	c := &Content{Title: "Bench", Body: "A broadcast", URL: "https://bench.example", TTL: 86400}
	r := store.Recipient{Endpoint: store.Endpoint{ID: placeholderID}}
	b.Run("PushPayload", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c.PushPayload(placeholderID, &r, "")
		}
	})
	b.Run("Encoder", func(b *testing.B) {
		enc := c.PayloadEncoder(placeholderID)
		b.ReportAllocs()
		for b.Loop() {
			enc.Encode(&r, "")
		}
	})
}
