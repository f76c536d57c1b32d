package client

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Webhook headers of spec 6.
const (
	HeaderEvent            = "X-RelayBell-Event"
	HeaderDelivery         = "X-RelayBell-Delivery"
	HeaderWebhookSignature = "X-RelayBell-Webhook-Signature"
	// HeaderSignature is the original "sha256=<hex>" header (spec 9 keeps
	// it). It has no timestamp: Verify never accepts it; VerifyOriginal
	// checks it for receivers that opt in.
	HeaderSignature = "X-RelayBell-Signature"
)

// DefaultTolerance is how far a signature's timestamp may be from now.
const DefaultTolerance = 300 * time.Second

// Verification errors.
var (
	ErrNoSignature = errors.New("relaybell: no webhook signature header")
	ErrMalformed   = errors.New("relaybell: malformed webhook signature header")
	ErrTimestamp   = errors.New("relaybell: webhook timestamp outside the tolerance")
	ErrMismatch    = errors.New("relaybell: no webhook signature matches")
)

// Verifier checks the X-RelayBell-Webhook-Signature header,
// "t=<unix seconds>,v1=<hex>[,...]": the HMAC-SHA256 of "<t>.<raw body>"
// keyed with the whole webhook secret ("whsec_" included). Keys other than
// t and v1 are ignored; any v1 may match; comparisons are constant-time.
type Verifier struct {
	// Secrets are the webhook's secrets; more than one while rotating.
	Secrets []string
	// Tolerance is DefaultTolerance when zero.
	Tolerance time.Duration
	// Now is time.Now when nil.
	Now func() time.Time
}

// Verify checks header against body.
func (v *Verifier) Verify(header string, body []byte) error {
	if strings.TrimSpace(header) == "" {
		return ErrNoSignature
	}
	var (
		ts    int64
		haveT bool
		sigs  [][]byte
	)
	for part := range strings.SplitSeq(header, ",") {
		k, val, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			continue
		}
		switch k {
		case "t":
			n, err := strconv.ParseInt(val, 10, 64)
			if err != nil || haveT {
				return ErrMalformed
			}
			ts, haveT = n, true
		case "v1":
			b, err := hex.DecodeString(val)
			if err == nil && len(b) == sha256.Size {
				sigs = append(sigs, b)
			}
		}
	}
	if !haveT || len(sigs) == 0 {
		return ErrMalformed
	}
	tol := v.Tolerance
	if tol <= 0 {
		tol = DefaultTolerance
	}
	now := time.Now
	if v.Now != nil {
		now = v.Now
	}
	at := time.Unix(ts, 0)
	if d := now().Sub(at); d > tol || d < -tol {
		return fmt.Errorf("%w: %s off, tolerance %s", ErrTimestamp, d.Round(time.Second), tol)
	}
	match := false
	for _, secret := range v.Secrets {
		m := hmac.New(sha256.New, []byte(secret))
		m.Write([]byte(strconv.FormatInt(ts, 10)))
		m.Write([]byte("."))
		m.Write(body)
		want := m.Sum(nil)
		for _, s := range sigs {
			if hmac.Equal(s, want) {
				match = true // keep going: time does not depend on which matched
			}
		}
	}
	if !match {
		return ErrMismatch
	}
	return nil
}

// VerifyRequest reads r's body (up to 1 MB), verifies it and returns it.
func (v *Verifier) VerifyRequest(r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20+1))
	if err != nil {
		return nil, err
	}
	if len(body) > 1<<20 {
		return nil, fmt.Errorf("%w: body over 1 MB", ErrMalformed)
	}
	return body, v.Verify(r.Header.Get(HeaderWebhookSignature), body)
}

// VerifyOriginal checks the original X-RelayBell-Signature header,
// "sha256=<hex>": the HMAC-SHA256 of the raw body alone, keyed with the
// whole webhook secret, against each of Secrets in constant time.
//
// It is an explicit opt-in for receivers that cannot read the timestamped
// header. The original header carries no timestamp, so it gives no replay
// protection: a delivery captured once verifies for ever (Tolerance does
// not apply). Prefer Verify and X-RelayBell-Webhook-Signature.
func (v *Verifier) VerifyOriginal(header string, body []byte) error {
	header = strings.TrimSpace(header)
	if header == "" {
		return ErrNoSignature
	}
	hexSig, ok := strings.CutPrefix(header, "sha256=")
	if !ok {
		return ErrMalformed
	}
	got, err := hex.DecodeString(hexSig)
	if err != nil || len(got) != sha256.Size {
		return ErrMalformed
	}
	match := false
	for _, secret := range v.Secrets {
		m := hmac.New(sha256.New, []byte(secret))
		m.Write(body)
		if hmac.Equal(got, m.Sum(nil)) {
			match = true // keep going: time does not depend on which matched
		}
	}
	if !match {
		return ErrMismatch
	}
	return nil
}
