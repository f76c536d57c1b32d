package notification

import (
	"bytes"
	"encoding/json"
	"io"
	"sync"

	"github.com/relaybell/relaybell/store"
)

// PayloadEncoder encodes one send's payloads for many browsers: the bytes
// PushPayload returns, without running encoding/json for each browser.
// Of a browser's payload only the endpoint id is its own unless merge tags,
// a translation or the A/B version change the title, body or url: the rest
// of the JSON is encoded once per (variant, title, body, url) and kept, and
// each browser's copy is that with its endpoint id spliced in. The pusher
// makes one per batch. Safe for concurrent use.
type PayloadEncoder struct {
	c              *Content
	notificationID string
	head           []byte // {"notificationId":"…","endpointId":

	mu    sync.Mutex
	tails map[payloadKey][]byte // what follows the endpoint id
}

// payloadKey is what a payload holds besides the notification and the
// endpoint ids and the content's own fields: the variant chooses the
// image and the "variant" member, the rest is the merged texts.
type payloadKey struct{ variant, title, body, url string }

// maxTails bounds the kept encodings of one encoder: a send whose merge
// tags make every browser's texts different gains nothing from keeping
// them.
const maxTails = 64

// endpointIDMember is the member the head ends with and an encoding
// without an endpoint id has right after it.
const endpointIDMember = `,"endpointId":`

// PayloadEncoder returns an encoder of the send's payloads.
func (c *Content) PayloadEncoder(notificationID string) *PayloadEncoder {
	head := append([]byte(`{"notificationId":`), quoteJSON(notificationID)...)
	head = append(head, endpointIDMember...)
	return &PayloadEncoder{c: c, notificationID: notificationID, head: head, tails: make(map[payloadKey][]byte)}
}

// Encode returns the encoded payload of r (PushPayload's bytes).
func (e *PayloadEncoder) Encode(r *store.Recipient, variant string) ([]byte, error) {
	p := e.c.Payload(e.notificationID, r, variant)
	key := payloadKey{variant, p.Title, p.Body, p.URL}
	e.mu.Lock()
	tail, ok := e.tails[key]
	e.mu.Unlock()
	if !ok {
		anon := p
		anon.EndpointID = ""
		b, err := anon.Encode()
		if err != nil {
			return nil, err
		}
		// The encoding starts with the head and an empty id; anything else
		// (never seen) goes the long way.
		rest, found := bytes.CutPrefix(b, e.head)
		if rest, found = bytes.CutPrefix(rest, []byte(`""`)); !found {
			return e.c.PushPayload(e.notificationID, r, variant)
		}
		tail = rest
		e.mu.Lock()
		if len(e.tails) < maxTails {
			e.tails[key] = tail
		}
		e.mu.Unlock()
	}
	id := quoteJSON(p.EndpointID)
	if len(e.head)+len(id)+len(tail) > MaxPayload {
		return e.c.fit(p, variant, r)
	}
	out := make([]byte, 0, len(e.head)+len(id)+len(tail))
	out = append(append(append(out, e.head...), id...), tail...)
	return out, nil
}

// quoteJSON is s as encoding/json writes it without HTML escaping: quoted
// as is when it holds only printable ASCII other than '"' and '\\' (ids
// do), else through the encoder.
func quoteJSON(s string) []byte {
	plain := true
	for i := 0; i < len(s) && plain; i++ {
		c := s[i]
		plain = c >= 0x20 && c < 0x7f && c != '"' && c != '\\'
	}
	if plain {
		out := make([]byte, 0, len(s)+2)
		return append(append(append(out, '"'), s...), '"')
	}
	var b bytes.Buffer
	enc := newJSONEncoder(&b)
	enc.Encode(s) // a string always encodes
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// newJSONEncoder is an encoder as Payload.Encode's: no HTML escaping.
func newJSONEncoder(w io.Writer) *json.Encoder {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc
}
