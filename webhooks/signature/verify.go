package signature

import (
	"crypto/hmac"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Defaults a zero Verifier field stands for.
const (
	// DefaultTolerance is how far t may be from the verifier's clock, in
	// either direction (rule 3 of spec 6.3).
	DefaultTolerance = 300 * time.Second
	// DefaultMaxBody is the largest body VerifyRequest reads: 1 MiB, far
	// above any RelayBell event.
	DefaultMaxBody = 1 << 20
)

// The errors a Verifier returns, one per rule of spec 6.3 plus one for an
// oversized body. Returned errors may wrap them with detail; test with
// errors.Is.
var (
	// ErrNoSecret: the Verifier has no secret (rule 1). It is a
	// configuration fault, not a bad request.
	ErrNoSecret = errors.New("signature: no secret to verify with")
	// ErrMalformed: the signature header is missing or unreadable (rule
	// 2), or the delivery id is missing while a Seen is set.
	ErrMalformed = errors.New("signature: malformed signature header")
	// ErrTimestamp: t is more than the tolerance away from the clock, in
	// the past or in the future (rule 3).
	ErrTimestamp = errors.New("signature: timestamp outside the tolerance")
	// ErrMismatch: no v1 value is the HMAC of the request (rule 4): a
	// wrong secret, an altered body or timestamp, or a forgery.
	ErrMismatch = errors.New("signature: no v1 signature matches")
	// ErrDuplicate: the signature is valid but the delivery id was already
	// handled (rule 5). Answer 2xx and do nothing, so the retries stop.
	ErrDuplicate = errors.New("signature: delivery already handled")
	// ErrBodyTooLarge: VerifyRequest met a body over MaxBody bytes.
	ErrBodyTooLarge = errors.New("signature: body too large")
)

// Verifier checks HeaderWebhookSignature on received deliveries. Set the
// fields before first use and leave them alone afterwards; a Verifier is
// then safe for concurrent use (as far as its Seen is).
type Verifier struct {
	// Secret is the webhook's secret exactly as RelayBell showed it,
	// "whsec_" prefix included. Empty refuses every delivery.
	Secret string
	// Tolerance is how far t may be from Now, either way. Zero or less
	// means DefaultTolerance (300 s). A difference of exactly Tolerance
	// passes; the comparison is in whole seconds.
	Tolerance time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Seen, when set, skips deliveries already handled: a delivery whose
	// signature checks out is recorded there, and one already recorded
	// fails with ErrDuplicate. Nil skips rule 5; handlers must then
	// tolerate the same delivery twice.
	Seen Seen
	// MaxBody bounds the body VerifyRequest reads, in bytes. Zero or less
	// means DefaultMaxBody (1 MiB).
	MaxBody int64
}

// Verify checks one delivery against the rules of spec 6.3, in order:
//  1. an empty Secret fails with ErrNoSecret;
//  2. signatureHeader (the HeaderWebhookSignature value) must parse, else
//     ErrMalformed; see below for what parses;
//  3. t more than Tolerance from Now fails with ErrTimestamp;
//  4. the HMAC-SHA256 of "<t>.<body>" keyed with Secret must equal one of
//     the v1 values, compared in constant time, else ErrMismatch;
//  5. with Seen set, a deliveryID (the HeaderDelivery value) already
//     recorded fails with ErrDuplicate; otherwise it is recorded. Only a
//     delivery that passed 1 to 4 is ever recorded, so forged requests
//     cannot mark ids as handled. An empty deliveryID with Seen set fails
//     with ErrMalformed before any HMAC is computed.
//
// body must be the raw bytes received, not JSON decoded and encoded again.
//
// The header is split on commas into key=value elements. Spaces and tabs
// around an element are ignored ("t=1, v1=…" parses) and empty elements are
// skipped, as in any HTTP list; nothing is trimmed inside an element, so
// "t= 1" is malformed. Keys are case-sensitive and keys other than t and v1
// are ignored. t must appear exactly once, as decimal digits; v1 at least
// once, as 64 hex digits each, and any one matching is enough.
func (v *Verifier) Verify(signatureHeader, deliveryID string, body []byte) error {
	if v.Secret == "" {
		return ErrNoSecret
	}
	h, err := parseHeader(signatureHeader)
	if err != nil {
		return err
	}
	if v.Seen != nil && deliveryID == "" {
		return fmt.Errorf("%w: no %s", ErrMalformed, HeaderDelivery)
	}
	now := v.now()
	if err := v.checkTimestamp(h.unix, now); err != nil {
		return err
	}
	want := timestampedMAC(v.Secret, h.ts, body)
	match := 0
	for _, sig := range h.v1 {
		// Compare with every value, without stopping at a match, so the
		// time taken never tells which one matched.
		if hmac.Equal(sig, want) {
			match++
		}
	}
	if match == 0 {
		return ErrMismatch
	}
	if v.Seen != nil && v.Seen.MarkSeen(deliveryID, now) {
		return ErrDuplicate
	}
	return nil
}

// VerifyRequest reads the body of a received delivery, at most MaxBody
// bytes, and verifies it with the request's HeaderWebhookSignature and
// HeaderDelivery headers (see Verify). It returns the body when every rule
// passed and nil with any error; an over-long body fails with
// ErrBodyTooLarge. It does not close r.Body (the server does) and leaves it
// read.
//
// Several HeaderWebhookSignature lines are joined with commas, as HTTP
// combines repeated list headers.
func (v *Verifier) VerifyRequest(r *http.Request) ([]byte, error) {
	if v.Secret == "" {
		return nil, ErrNoSecret
	}
	limit := v.MaxBody
	if limit <= 0 {
		limit = DefaultMaxBody
	}
	if r.ContentLength > limit {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrBodyTooLarge, r.ContentLength, limit)
	}
	var body []byte
	if r.Body != nil {
		var err error
		body, err = io.ReadAll(io.LimitReader(r.Body, limit+1))
		if err != nil {
			return nil, fmt.Errorf("reading webhook body: %w", err)
		}
		if int64(len(body)) > limit {
			return nil, fmt.Errorf("%w: more than %d bytes", ErrBodyTooLarge, limit)
		}
	}
	header := strings.Join(r.Header.Values(HeaderWebhookSignature), ",")
	if err := v.Verify(header, r.Header.Get(HeaderDelivery), body); err != nil {
		return nil, err
	}
	return body, nil
}

func (v *Verifier) now() time.Time {
	if v.Now != nil {
		return v.Now()
	}
	return time.Now()
}

// checkTimestamp applies rule 3 in whole seconds: the signer truncates its
// clock to seconds, so now is truncated too. time.Time.Sub saturates, so
// no t, however far off, overflows.
func (v *Verifier) checkTimestamp(unix int64, now time.Time) error {
	tolerance := v.Tolerance
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	clock, t := time.Unix(now.Unix(), 0), time.Unix(unix, 0)
	if age := clock.Sub(t); age > tolerance {
		return fmt.Errorf("%w: t is %s in the past, tolerance %s", ErrTimestamp, age, tolerance)
	}
	if ahead := t.Sub(clock); ahead > tolerance {
		return fmt.Errorf("%w: t is %s in the future, tolerance %s", ErrTimestamp, ahead, tolerance)
	}
	return nil
}
