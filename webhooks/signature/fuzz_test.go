package signature

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"
)

func fuzzSeeds() []string {
	good := sig(testSecret, testNow, testBody)
	return []string{
		"t=1700000000,v1=" + good,
		"t=1700000000, v1=" + good + ",v1=" + strings.Repeat("0", 64),
		"v0=x,t=1700000000,,v1=" + strings.ToUpper(good) + ",v2=",
		"t=1700000000,t=1,v1=" + good,
		"t=-1,v1=" + good,
		"t=99999999999999999999,v1=" + good,
		"t=1700000000,v1=" + good[:63] + "g",
		"t= 1700000000,v1=",
		"=,=,",
		",,,",
		"",
		"sha256=" + good,
		"t=1700000000\x00,v1=" + good,
		"\tt=1700000000 ,\tv1=" + good + "\t",
	}
}

// FuzzParseHeader: parseHeader never panics; a refusal always wraps
// ErrMalformed; an accepted header holds a t of digits and 32-byte v1
// values, and writing them back out parses to the same.
func FuzzParseHeader(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, value string) {
		h, err := parseHeader(value)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("parseHeader(%q): %v does not wrap ErrMalformed", value, err)
			}
			return
		}
		unix, err := parseUnix(h.ts)
		if err != nil || unix != h.unix || h.ts == "" || strings.Trim(h.ts, "0123456789") != "" {
			t.Fatalf("parseHeader(%q): t %q, unix %d", value, h.ts, h.unix)
		}
		if len(h.v1) == 0 {
			t.Fatalf("parseHeader(%q): accepted without v1", value)
		}
		canonical := "t=" + h.ts
		for _, s := range h.v1 {
			if len(s) != 32 {
				t.Fatalf("parseHeader(%q): v1 of %d bytes", value, len(s))
			}
			canonical += ",v1=" + hex.EncodeToString(s)
		}
		again, err := parseHeader(canonical)
		if err != nil || again.ts != h.ts || len(again.v1) != len(h.v1) {
			t.Fatalf("canonical form %q of %q: %+v, %v", canonical, value, again, err)
		}
		for i := range h.v1 {
			if !bytes.Equal(again.v1[i], h.v1[i]) {
				t.Fatalf("canonical form %q of %q: v1 %d differs", canonical, value, i)
			}
		}
	})
}

// FuzzVerify: Verify never panics and fails only with one of its errors;
// whatever the body and skew, a header from Sign verifies exactly when the
// skew is within the tolerance, and never for another body.
func FuzzVerify(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s, testID, testBody, int64(0))
	}
	f.Add("", "", []byte{}, int64(300))
	f.Add("t=1,v1=", "x", []byte("\x00\xff"), int64(-301))
	f.Add("t=1700000000,v1="+strings.Repeat("a", 64), testID, []byte("{}"), int64(1<<62))
	f.Fuzz(func(t *testing.T, header, deliveryID string, body []byte, skew int64) {
		now := time.Unix(testNow, 0)
		v := Verifier{Secret: testSecret, Now: func() time.Time { return now }, Seen: NewMemorySeen(0, 0)}
		if err := v.Verify(header, deliveryID, body); err != nil && sentinels(err) != 1 {
			t.Fatalf("Verify(%q, %q): %v is not exactly one of the package errors", header, deliveryID, err)
		}

		// Sign at now+skew seconds, clamped so the sum stays in range.
		skew = max(min(skew, 1<<40), -1<<40)
		signed, _ := Sign(testSecret, time.Unix(testNow+skew, 0), body)
		v = Verifier{Secret: testSecret, Now: func() time.Time { return now }}
		err := v.Verify(signed, "", body)
		within := skew >= -300 && skew <= 300
		switch {
		case within && err != nil:
			t.Fatalf("signed with skew %d s: %v", skew, err)
		case testNow+skew < 0 && !errors.Is(err, ErrMalformed):
			// Unix seconds are digits only; a time before 1970 is "t=-…".
			t.Fatalf("signed before 1970 (skew %d s): %v, want ErrMalformed", skew, err)
		case !within && testNow+skew >= 0 && !errors.Is(err, ErrTimestamp):
			t.Fatalf("signed with skew %d s: %v, want ErrTimestamp", skew, err)
		}
		if within {
			other := append([]byte{}, body...)
			other = append(other, 'x')
			if err := v.Verify(signed, "", other); !errors.Is(err, ErrMismatch) {
				t.Fatalf("other body: %v, want ErrMismatch", err)
			}
		}
	})
}
