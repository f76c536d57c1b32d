package signature

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"
)

const (
	testSecret = "whsec_test_secret"
	testNow    = 1700000000
	testID     = "0b9c1b9e-6f0e-4b44-9b6a-2a4c1c9f3d11"
)

var testBody = []byte(`{"event":"webhook.test","data":{"webhookId":"wh_1","message":"hi"},"projectId":"prj_1","at":"2023-11-14T22:13:20Z"}`)

// sig is the v1 value (hex) for body at unix t under secret.
func sig(secret string, t int64, body []byte) string {
	h, _ := Sign(secret, time.Unix(t, 0), body)
	return h[strings.Index(h, "v1=")+3:]
}

func TestVerify(t *testing.T) {
	good := sig(testSecret, testNow, testBody)
	other := sig(testSecret, testNow-1, testBody)
	ts := "1700000000"
	tests := []struct {
		name      string
		secret    string        // testSecret when empty and noSecret unset
		noSecret  bool          // verify with an empty secret
		tolerance time.Duration // Verifier.Tolerance
		now       time.Time     // zero: testNow
		header    string
		body      []byte // testBody when nil
		want      error  // nil: verified
	}{
		{name: "valid", header: "t=" + ts + ",v1=" + good},
		{name: "valid from Sign", header: func() string { h, _ := Sign(testSecret, time.Unix(testNow, 0), testBody); return h }()},

		// Rule 1: no secret, whatever else is wrong.
		{name: "no secret", noSecret: true, header: "t=" + ts + ",v1=" + good, want: ErrNoSecret},
		{name: "no secret and no header", noSecret: true, header: "", want: ErrNoSecret},

		// Rule 2: the header.
		{name: "empty header", header: "", want: ErrMalformed},
		{name: "blank header", header: " \t ", want: ErrMalformed},
		{name: "only commas", header: ",,", want: ErrMalformed},
		{name: "no t", header: "v1=" + good, want: ErrMalformed},
		{name: "no v1", header: "t=" + ts, want: ErrMalformed},
		{name: "empty t", header: "t=,v1=" + good, want: ErrMalformed},
		{name: "non-numeric t", header: "t=abc,v1=" + good, want: ErrMalformed},
		{name: "negative t", header: "t=-1700000000,v1=" + good, want: ErrMalformed},
		{name: "signed t", header: "t=+1700000000,v1=" + good, want: ErrMalformed},
		{name: "fractional t", header: "t=1700000000.5,v1=" + good, want: ErrMalformed},
		{name: "t in milliseconds parses, then is too far off", header: "t=1700000000000,v1=" + good, want: ErrTimestamp},
		{name: "t overflows int64", header: "t=99999999999999999999,v1=" + good, want: ErrMalformed},
		{name: "t twice", header: "t=" + ts + ",t=" + ts + ",v1=" + good, want: ErrMalformed},
		{name: "t twice, differing", header: "t=" + ts + ",v1=" + good + ",t=1700000001", want: ErrMalformed},
		{name: "empty v1", header: "t=" + ts + ",v1=", want: ErrMalformed},
		{name: "non-hex v1", header: "t=" + ts + ",v1=" + strings.Repeat("g", 64), want: ErrMalformed},
		{name: "short v1", header: "t=" + ts + ",v1=" + good[:62], want: ErrMalformed},
		{name: "long v1", header: "t=" + ts + ",v1=" + good + "00", want: ErrMalformed},
		{name: "odd v1", header: "t=" + ts + ",v1=" + good + "0", want: ErrMalformed},
		{name: "one malformed v1 among several", header: "t=" + ts + ",v1=" + good + ",v1=xyz", want: ErrMalformed},
		{name: "element without =", header: "t=" + ts + ",v1=" + good + ",flag", want: ErrMalformed},
		{name: "empty key", header: "t=" + ts + ",=1,v1=" + good, want: ErrMalformed},
		{name: "keys are case-sensitive", header: "T=" + ts + ",V1=" + good, want: ErrMalformed},
		{name: "legacy value in the new header", header: "sha256=" + good, want: ErrMalformed},
		{name: "semicolons are not separators", header: "t=" + ts + ";v1=" + good, want: ErrMalformed},

		// Rule 2: what still parses.
		{name: "unknown keys ignored", header: "v0=zzz,t=" + ts + ",scheme=x,v1=" + good + ",v2=" + other + ",a==b"},
		{name: "value may contain =", header: "t=" + ts + ",v1=" + good + ",note=a=b"},
		{name: "order does not matter", header: "v1=" + good + ",t=" + ts},
		{name: "several v1, first matches", header: "t=" + ts + ",v1=" + good + ",v1=" + other},
		{name: "several v1, last matches", header: "t=" + ts + ",v1=" + other + ",v1=" + other + ",v1=" + good},
		{name: "several v1, none matches", header: "t=" + ts + ",v1=" + other + ",v1=" + other, want: ErrMismatch},
		{name: "uppercase hex", header: "t=" + ts + ",v1=" + strings.ToUpper(good)},
		{name: "spaces after commas", header: "t=" + ts + ", v1=" + good},
		{name: "spaces and tabs around elements", header: " \tt=" + ts + " ,\tv1=" + good + "\t "},
		{name: "empty elements skipped", header: ",t=" + ts + ",,v1=" + good + ","},
		{name: "space before a value", header: "t= " + ts + ",v1=" + good, want: ErrMalformed},
		{name: "space after a value", header: "t=" + ts + ",v1=" + good[:32] + " " + good[32:], want: ErrMalformed},
		{name: "space after a key makes it another key", header: "t =" + ts + ",v1=" + good, want: ErrMalformed},
		{name: "leading zeros are text the HMAC covers", header: "t=0" + ts + ",v1=" + good, want: ErrMismatch},

		// Rule 3: the timestamp, both ways, edges included.
		{name: "300 s old", now: time.Unix(testNow+300, 0), header: "t=" + ts + ",v1=" + good},
		{name: "301 s old", now: time.Unix(testNow+301, 0), header: "t=" + ts + ",v1=" + good, want: ErrTimestamp},
		{name: "300 s ahead", now: time.Unix(testNow-300, 0), header: "t=" + ts + ",v1=" + good},
		{name: "301 s ahead", now: time.Unix(testNow-301, 0), header: "t=" + ts + ",v1=" + good, want: ErrTimestamp},
		{name: "whole seconds: 300.999 s old", now: time.Unix(testNow+300, 999_999_999), header: "t=" + ts + ",v1=" + good},
		{name: "t zero", header: "t=0,v1=" + good, want: ErrTimestamp},
		{name: "t the largest int64", header: "t=9223372036854775807,v1=" + good, want: ErrTimestamp},
		{name: "clock far in the past", now: time.Unix(-1<<62, 0), header: "t=" + ts + ",v1=" + good, want: ErrTimestamp},
		{name: "custom tolerance, at the edge", tolerance: 10 * time.Second, now: time.Unix(testNow+10, 0), header: "t=" + ts + ",v1=" + good},
		{name: "custom tolerance, past it", tolerance: 10 * time.Second, now: time.Unix(testNow-11, 0), header: "t=" + ts + ",v1=" + good, want: ErrTimestamp},
		{name: "negative tolerance is the default", tolerance: -time.Second, now: time.Unix(testNow+300, 0), header: "t=" + ts + ",v1=" + good},
		{name: "timestamp is checked before the HMAC", now: time.Unix(testNow+301, 0), header: "t=" + ts + ",v1=" + other, want: ErrTimestamp},

		// Rule 4: the HMAC over the raw bytes.
		{name: "wrong secret", secret: "whsec_other", header: "t=" + ts + ",v1=" + good, want: ErrMismatch},
		{name: "secret without its prefix", secret: strings.TrimPrefix(testSecret, "whsec_"), header: "t=" + ts + ",v1=" + good, want: ErrMismatch},
		{name: "signature of another t", header: "t=" + ts + ",v1=" + other, want: ErrMismatch},
		{name: "t moved, signature kept", now: time.Unix(testNow+1, 0), header: "t=1700000001,v1=" + good, want: ErrMismatch},
		{name: "body altered", header: "t=" + ts + ",v1=" + good, body: bytes.Replace(testBody, []byte("hi"), []byte("ho"), 1), want: ErrMismatch},
		{name: "body re-encoded", header: "t=" + ts + ",v1=" + good, body: bytes.ReplaceAll(testBody, []byte(`,"`), []byte(`, "`)), want: ErrMismatch},
		{name: "trailing newline added", header: "t=" + ts + ",v1=" + good, body: append(append([]byte{}, testBody...), '\n'), want: ErrMismatch},
		{name: "empty body", header: "t=" + ts + ",v1=" + good, body: []byte{}, want: ErrMismatch},
		{name: "legacy signature in v1", header: "t=" + ts + ",v1=" + legacyHex(testSecret, testBody), want: ErrMismatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Verifier{Secret: testSecret, Tolerance: tt.tolerance, Now: func() time.Time { return time.Unix(testNow, 0) }}
			if tt.secret != "" {
				v.Secret = tt.secret
			}
			if tt.noSecret {
				v.Secret = ""
			}
			if !tt.now.IsZero() {
				v.Now = func() time.Time { return tt.now }
			}
			body := tt.body
			if body == nil {
				body = testBody
			}
			err := v.Verify(tt.header, testID, body)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Verify(%q) = %v, want nil", tt.header, err)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("Verify(%q) = %v, want %v", tt.header, err, tt.want)
			}
			if exclusive := sentinels(err); exclusive != 1 {
				t.Errorf("error %v matches %d sentinels, want exactly one", err, exclusive)
			}
			if msg := err.Error(); strings.Contains(msg, good) || strings.Contains(msg, v.Secret+",") || strings.Contains(msg, testSecret) {
				t.Errorf("error quotes a secret or signature: %s", msg)
			}
		})
	}
}

func legacyHex(secret string, body []byte) string {
	_, l := Sign(secret, time.Unix(0, 0), body)
	return strings.TrimPrefix(l, "sha256=")
}

func sentinels(err error) int {
	n := 0
	for _, s := range []error{ErrNoSecret, ErrMalformed, ErrTimestamp, ErrMismatch, ErrDuplicate, ErrBodyTooLarge} {
		if errors.Is(err, s) {
			n++
		}
	}
	return n
}

func TestVerifyErrorMessages(t *testing.T) {
	v := Verifier{Secret: testSecret, Now: func() time.Time { return time.Unix(testNow, 0) }}
	good := sig(testSecret, testNow, testBody)
	f := func(header, want string) {
		t.Helper()
		err := v.Verify(header, "", testBody)
		if err == nil || err.Error() != want {
			t.Errorf("Verify(%q) = %v, want %q", header, err, want)
		}
	}
	f("", "signature: malformed signature header: empty")
	f("t=1700000000", "signature: malformed signature header: no v1")
	f("v1="+good, "signature: malformed signature header: no t")
	f("t=1,t=2,v1="+good, "signature: malformed signature header: t given more than once")
	f("t=x,v1="+good, "signature: malformed signature header: t is not decimal unix seconds")
	f("t=1700000000,v1=ab", "signature: malformed signature header: v1 is 2 characters, want 64 hex digits")
	f("t=1700000000,oops", "signature: malformed signature header: element 2 is not key=value")
	f("t=1699999699,v1="+good, "signature: timestamp outside the tolerance: t is 5m1s in the past, tolerance 5m0s")
	f("t=1700000301,v1="+good, "signature: timestamp outside the tolerance: t is 5m1s in the future, tolerance 5m0s")
	f("t=1700000000,v1="+strings.Repeat("0", 64), "signature: no v1 signature matches")
}

// recordingSeen is a Seen that records its calls.
type recordingSeen struct {
	mu    sync.Mutex
	marks []string
	times []time.Time
	ids   map[string]bool
}

func (s *recordingSeen) MarkSeen(id string, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.marks = append(s.marks, id)
	s.times = append(s.times, now)
	if s.ids == nil {
		s.ids = map[string]bool{}
	}
	already := s.ids[id]
	s.ids[id] = true
	return already
}

func (s *recordingSeen) Forget(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.ids, id)
}

func TestVerifyDuplicates(t *testing.T) {
	now := time.Unix(testNow, 0)
	header, _ := Sign(testSecret, now, testBody)
	forged := "t=1700000000,v1=" + strings.Repeat("ab", 32)
	expired, _ := Sign(testSecret, now.Add(-time.Hour), testBody)

	t.Run("second delivery with one id is a duplicate", func(t *testing.T) {
		v := Verifier{Secret: testSecret, Now: func() time.Time { return now }, Seen: NewMemorySeen(0, 0)}
		if err := v.Verify(header, testID, testBody); err != nil {
			t.Fatalf("first: %v", err)
		}
		// A retry: same id and body, new timestamp and signature.
		retry, _ := Sign(testSecret, now.Add(time.Minute), testBody)
		v.Now = func() time.Time { return now.Add(time.Minute) }
		if err := v.Verify(retry, testID, testBody); !errors.Is(err, ErrDuplicate) {
			t.Fatalf("retry: %v, want ErrDuplicate", err)
		}
		if err := v.Verify(retry, "another-id", testBody); err != nil {
			t.Fatalf("another id: %v", err)
		}
	})

	t.Run("only verified deliveries are recorded", func(t *testing.T) {
		seen := &recordingSeen{}
		v := Verifier{Secret: testSecret, Now: func() time.Time { return now }, Seen: seen}
		for _, c := range []struct {
			header string
			want   error
		}{
			{"", ErrMalformed},
			{forged, ErrMismatch},
			{expired, ErrTimestamp},
		} {
			if err := v.Verify(c.header, testID, testBody); !errors.Is(err, c.want) {
				t.Fatalf("Verify(%q) = %v, want %v", c.header, err, c.want)
			}
		}
		if len(seen.marks) != 0 {
			t.Fatalf("failed deliveries marked ids: %v", seen.marks)
		}
		if err := v.Verify(header, testID, testBody); err != nil {
			t.Fatalf("genuine delivery after forgeries: %v", err)
		}
		if len(seen.marks) != 1 || seen.marks[0] != testID || !seen.times[0].Equal(now) {
			t.Fatalf("marks %v at %v, want [%s] at the verifier's clock", seen.marks, seen.times, testID)
		}
	})

	t.Run("forget lets the retry through", func(t *testing.T) {
		v := Verifier{Secret: testSecret, Now: func() time.Time { return now }, Seen: NewMemorySeen(0, 0)}
		if err := v.Verify(header, testID, testBody); err != nil {
			t.Fatal(err)
		}
		v.Seen.Forget(testID)
		if err := v.Verify(header, testID, testBody); err != nil {
			t.Fatalf("after Forget: %v", err)
		}
	})

	t.Run("a delivery id is required with Seen", func(t *testing.T) {
		seen := &recordingSeen{}
		v := Verifier{Secret: testSecret, Now: func() time.Time { return now }, Seen: seen}
		err := v.Verify(header, "", testBody)
		if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), HeaderDelivery) {
			t.Fatalf("Verify without id = %v, want ErrMalformed naming %s", err, HeaderDelivery)
		}
		if len(seen.marks) != 0 {
			t.Fatalf("marked %v", seen.marks)
		}
	})

	t.Run("without Seen, nothing is deduplicated", func(t *testing.T) {
		v := Verifier{Secret: testSecret, Now: func() time.Time { return now }}
		for range 2 {
			if err := v.Verify(header, testID, testBody); err != nil {
				t.Fatal(err)
			}
		}
		if err := v.Verify(header, "", testBody); err != nil {
			t.Fatalf("no id and no Seen: %v", err)
		}
	})

	t.Run("concurrent duplicates: exactly one passes", func(t *testing.T) {
		v := Verifier{Secret: testSecret, Now: func() time.Time { return now }, Seen: NewMemorySeen(0, 0)}
		var wg sync.WaitGroup
		var mu sync.Mutex
		passed, dup := 0, 0
		for range 32 {
			wg.Go(func() {
				err := v.Verify(header, testID, testBody)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					passed++
				case errors.Is(err, ErrDuplicate):
					dup++
				default:
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if passed != 1 || dup != 31 {
			t.Fatalf("passed %d, duplicates %d; want 1 and 31", passed, dup)
		}
	})
}

func TestVerifyDefaultClock(t *testing.T) {
	header, _ := Sign(testSecret, time.Now(), testBody)
	v := Verifier{Secret: testSecret}
	if err := v.Verify(header, "", testBody); err != nil {
		t.Fatalf("signed now, verified with time.Now: %v", err)
	}
	old, _ := Sign(testSecret, time.Now().Add(-DefaultTolerance-2*time.Second), testBody)
	if err := v.Verify(old, "", testBody); !errors.Is(err, ErrTimestamp) {
		t.Fatalf("signed 302 s ago: %v, want ErrTimestamp", err)
	}
}

// request is a delivery as RelayBell sends it, signed at testNow.
func request(body []byte) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/relaybell", bytes.NewReader(body))
	webhookSig, legacySig := Sign(testSecret, time.Unix(testNow, 0), body)
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set(HeaderEvent, "webhook.test")
	r.Header.Set(HeaderDelivery, testID)
	r.Header.Set(HeaderWebhookSignature, webhookSig)
	r.Header.Set(HeaderSignature, legacySig)
	return r
}

func TestVerifyRequest(t *testing.T) {
	clock := func() time.Time { return time.Unix(testNow, 0) }

	t.Run("returns the exact body", func(t *testing.T) {
		v := Verifier{Secret: testSecret, Now: clock, Seen: NewMemorySeen(0, 0)}
		body, err := v.VerifyRequest(request(testBody))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(body, testBody) {
			t.Fatalf("body %q, want %q", body, testBody)
		}
		body, err = v.VerifyRequest(request(testBody))
		if !errors.Is(err, ErrDuplicate) || body != nil {
			t.Fatalf("second request: %q, %v; want nil, ErrDuplicate", body, err)
		}
	})

	t.Run("no secret: body left unread", func(t *testing.T) {
		r := request(testBody)
		v := Verifier{Now: clock}
		if _, err := v.VerifyRequest(r); !errors.Is(err, ErrNoSecret) {
			t.Fatalf("err %v, want ErrNoSecret", err)
		}
		if rest, _ := io.ReadAll(r.Body); !bytes.Equal(rest, testBody) {
			t.Fatalf("body was read")
		}
	})

	t.Run("headers checked", func(t *testing.T) {
		v := Verifier{Secret: testSecret, Now: clock, Seen: NewMemorySeen(0, 0)}
		r := request(testBody)
		r.Header.Del(HeaderWebhookSignature) // only the legacy header left
		if _, err := v.VerifyRequest(r); !errors.Is(err, ErrMalformed) {
			t.Fatalf("legacy header only: %v, want ErrMalformed", err)
		}
		r = request(testBody)
		r.Header.Del(HeaderDelivery)
		if _, err := v.VerifyRequest(r); !errors.Is(err, ErrMalformed) {
			t.Fatalf("no delivery id: %v, want ErrMalformed", err)
		}
		r = request(testBody)
		r.Body = io.NopCloser(bytes.NewReader(append([]byte(" "), testBody...)))
		if _, err := v.VerifyRequest(r); !errors.Is(err, ErrMismatch) {
			t.Fatalf("altered body: %v, want ErrMismatch", err)
		}
	})

	t.Run("repeated signature header lines are joined", func(t *testing.T) {
		v := Verifier{Secret: testSecret, Now: clock}
		r := request(testBody)
		h := r.Header.Get(HeaderWebhookSignature)
		tPart, v1Part, _ := strings.Cut(h, ",")
		r.Header[HeaderWebhookSignature] = []string{tPart, v1Part}
		if _, err := v.VerifyRequest(r); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("body size", func(t *testing.T) {
		body := bytes.Repeat([]byte("x"), 16)
		v := Verifier{Secret: testSecret, Now: clock, MaxBody: 16}
		if got, err := v.VerifyRequest(request(body)); err != nil || len(got) != 16 {
			t.Fatalf("exactly MaxBody: %d bytes, %v", len(got), err)
		}
		long := append(body, 'x')
		if _, err := v.VerifyRequest(request(long)); !errors.Is(err, ErrBodyTooLarge) {
			t.Fatalf("MaxBody+1 with Content-Length: %v, want ErrBodyTooLarge", err)
		}
		r := request(long)
		r.ContentLength = -1 // chunked: found by reading
		r.Body = io.NopCloser(iotest.OneByteReader(bytes.NewReader(long)))
		if _, err := v.VerifyRequest(r); !errors.Is(err, ErrBodyTooLarge) {
			t.Fatalf("MaxBody+1 streamed: %v, want ErrBodyTooLarge", err)
		}
	})

	t.Run("default limit is 1 MiB", func(t *testing.T) {
		v := Verifier{Secret: testSecret, Now: clock}
		body := bytes.Repeat([]byte("a"), DefaultMaxBody)
		if _, err := v.VerifyRequest(request(body)); err != nil {
			t.Fatalf("1 MiB: %v", err)
		}
		r := request(append(body, 'a'))
		r.ContentLength = -1
		_, err := v.VerifyRequest(r)
		if !errors.Is(err, ErrBodyTooLarge) || err.Error() != "signature: body too large: more than 1048576 bytes" {
			t.Fatalf("1 MiB + 1: %v", err)
		}
	})

	t.Run("read error", func(t *testing.T) {
		v := Verifier{Secret: testSecret, Now: clock}
		r := request(testBody)
		boom := errors.New("connection reset")
		r.Body = io.NopCloser(iotest.ErrReader(boom))
		if _, err := v.VerifyRequest(r); !errors.Is(err, boom) || sentinels(err) != 0 {
			t.Fatalf("err %v, want the read error", err)
		}
	})

	t.Run("nil body is an empty body", func(t *testing.T) {
		v := Verifier{Secret: testSecret, Now: clock}
		r := request(nil)
		r.Body = nil
		if body, err := v.VerifyRequest(r); err != nil || len(body) != 0 {
			t.Fatalf("%q, %v", body, err)
		}
	})
}
