package webpush

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"
)

// Urgency is the RFC 8030 Urgency header: how soon the browser should be
// woken up for the message.
type Urgency string

// Urgency values (RFC 8030 section 5.3).
const (
	UrgencyVeryLow Urgency = "very-low"
	UrgencyLow     Urgency = "low"
	UrgencyNormal  Urgency = "normal"
	UrgencyHigh    Urgency = "high"
)

const (
	// DefaultTTL is the TTL sent when Message.TTL is zero: 24 hours, the
	// API's default.
	DefaultTTL = 24 * 60 * 60
	// TTLImmediate as Message.TTL sends "TTL: 0": deliver only if the
	// browser can be reached now, never store.
	TTLImmediate = -1
	// maxTopicLen is RFC 8030's limit on the Topic header.
	maxTopicLen = 32
)

// Message is one push message and its RFC 8030 delivery options.
type Message struct {
	// Payload is encrypted for the target; at most MaxPayloadSize bytes.
	Payload []byte
	// TTL is how many seconds the push service keeps the message for an
	// offline browser. Zero means DefaultTTL; TTLImmediate sends 0.
	TTL int
	// Urgency, if set, is sent as the Urgency header.
	Urgency Urgency
	// Topic, if set, replaces a pending message with the same topic. At most
	// 32 characters of the base64url alphabet.
	Topic string
}

func (m *Message) ttlHeader() (string, error) {
	switch {
	case m.TTL == 0:
		return strconv.Itoa(DefaultTTL), nil
	case m.TTL == TTLImmediate:
		return "0", nil
	case m.TTL < 0:
		return "", fmt.Errorf("%w: TTL %d", ErrInvalidMessage, m.TTL)
	}
	return strconv.Itoa(m.TTL), nil
}

func (m *Message) validate() error {
	switch m.Urgency {
	case "", UrgencyVeryLow, UrgencyLow, UrgencyNormal, UrgencyHigh:
	default:
		return fmt.Errorf("%w: urgency %q", ErrInvalidMessage, m.Urgency)
	}
	if len(m.Topic) > maxTopicLen {
		return fmt.Errorf("%w: topic longer than %d characters", ErrInvalidMessage, maxTopicLen)
	}
	for i := 0; i < len(m.Topic); i++ {
		if c := m.Topic[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return fmt.Errorf("%w: topic %q has characters outside base64url", ErrInvalidMessage, m.Topic)
		}
	}
	return nil
}

// NewRequest encrypts msg for t and returns the POST to the push service,
// with Content-Encoding, Content-Type, TTL, Urgency and Topic (when set) and
// the Authorization header from signer (cached per origin). The request can
// be sent with any http.Client; Client.Send adds pooling and limits.
func NewRequest(ctx context.Context, t *Target, msg Message, signer *Signer) (*http.Request, error) {
	ttl, auth, body, err := prepare(t, &msg, signer)
	if err != nil {
		return nil, err
	}

	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("building push request: %w", err)
	}
	// Canonical keys set directly, the values sharing one backing array;
	// each slice is capped so an Add by the caller cannot touch the next.
	v := [...]string{"aes128gcm", "application/octet-stream", ttl, auth, string(msg.Urgency), msg.Topic}
	h := req.Header
	h["Content-Encoding"] = v[0:1:1]
	h["Content-Type"] = v[1:2:2]
	h["Ttl"] = v[2:3:3]
	h["Authorization"] = v[3:4:4]
	if msg.Urgency != "" {
		h["Urgency"] = v[4:5:5]
	}
	if msg.Topic != "" {
		h["Topic"] = v[5:6:6]
	}
	return req, nil
}

// prepare checks msg, encrypts it for t and returns its TTL header, the
// Authorization header for t's origin (cached by signer) and the body.
func prepare(t *Target, msg *Message, signer *Signer) (ttl, auth string, body []byte, err error) {
	if err := msg.validate(); err != nil {
		return "", "", nil, err
	}
	if ttl, err = msg.ttlHeader(); err != nil {
		return "", "", nil, err
	}
	if auth, err = signer.Authorization(t.origin); err != nil {
		return "", "", nil, err
	}
	if body, err = Encrypt(t, msg.Payload); err != nil {
		return "", "", nil, err
	}
	return ttl, auth, body, nil
}
