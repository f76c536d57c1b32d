package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relaybell/relaybell/webhooks/signature"
)

// fake answers each request with the next scripted status and records the
// calls and the waits the client asked for.
type fake struct {
	mu     sync.Mutex
	script []int
	calls  []string
}

func (f *fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	n := len(f.calls)
	f.calls = append(f.calls, r.Method+" "+r.URL.Path+" "+r.Header.Get("User-Agent")+" "+r.Header.Get("Idempotency-Key"))
	status := 200
	if n < len(f.script) {
		status = f.script[n]
	}
	f.mu.Unlock()
	w.Header().Set("X-Request-Id", fmt.Sprintf("req-%d", n))
	switch status {
	case 429:
		w.Header().Set("Retry-After", "7")
		w.WriteHeader(429)
		fmt.Fprintf(w, `{"error":"rate_limited","request_id":"req-%d"}`, n)
	case 403:
		w.WriteHeader(403)
		fmt.Fprintf(w, `{"error":"insufficient_scope","message":"needs send","required":"send","request_id":"req-%d"}`, n)
	case 200:
		fmt.Fprint(w, `{"ok":true,"eventId":"ev1"}`)
	default:
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"error":"internal","request_id":"req-%d"}`, n)
	}
}

func newFake(t *testing.T, script ...int) (*fake, *Client, *[]time.Duration) {
	f := &fake{script: script}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	c := New(srv.URL, "rb_live_x")
	var waits []time.Duration
	c.BaseBackoff, c.MaxBackoff = 100*time.Millisecond, time.Second
	c.Sleep = func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil }
	return f, c, &waits
}

func TestRetriesIdempotentEventOn429And5xx(t *testing.T) {
	f, c, waits := newFake(t, 429, 503, 200)
	out, err := c.Track(context.Background(), EventRequest{Event: Ptr("purchase")}, "k1")
	if err != nil || out.EventID != "ev1" {
		t.Fatalf("Track: %+v %v", out, err)
	}
	want := []string{
		"POST /api/v1/events relaybell-go/1.2.0 k1",
		"POST /api/v1/events relaybell-go/1.2.0 k1",
		"POST /api/v1/events relaybell-go/1.2.0 k1",
	}
	if fmt.Sprint(f.calls) != fmt.Sprint(want) {
		t.Fatalf("calls %q", f.calls)
	}
	// The first wait is Retry-After; the second the backoff of attempt 1
	// (200ms with jitter on its upper half).
	if len(*waits) != 2 || (*waits)[0] != 7*time.Second || (*waits)[1] < 100*time.Millisecond || (*waits)[1] > 200*time.Millisecond {
		t.Fatalf("waits %v", *waits)
	}
}

func TestNoRetryForPostWithoutKey(t *testing.T) {
	f, c, waits := newFake(t, 503, 200)
	_, err := c.Track(context.Background(), EventRequest{Event: Ptr("purchase")}, "")
	var e *Error
	if !errors.As(err, &e) || e.Status != 503 || e.Code != "internal" || e.RequestID != "req-0" {
		t.Fatalf("err %v", err)
	}
	if len(f.calls) != 1 || len(*waits) != 0 {
		t.Fatalf("calls %q waits %v", f.calls, *waits)
	}
	f, c, _ = newFake(t, 503, 200)
	if _, err := c.SendNotification(context.Background(), SendRequest{Title: "x"}); err == nil || len(f.calls) != 1 {
		t.Fatalf("send retried: %v %q", err, f.calls)
	}
	// PUT /settings may rotate a secret: never sent twice.
	f, c, _ = newFake(t, 503, 200)
	if _, err := c.UpdateSettings(context.Background(), SettingsUpdate{RotateCommerceSigningSecret: Ptr(true)}); err == nil || len(f.calls) != 1 {
		t.Fatalf("PUT /settings retried: %v %q", err, f.calls)
	}
}

func TestRetriesGetUpToMax(t *testing.T) {
	f, c, waits := newFake(t, 500, 502, 503, 504, 200)
	c.MaxRetries = 3
	_, err := c.ListTopics(context.Background())
	var e *Error
	if !errors.As(err, &e) || e.Status != 504 || e.RequestID != "req-3" {
		t.Fatalf("err %v", err)
	}
	if len(f.calls) != 4 || len(*waits) != 3 {
		t.Fatalf("calls %d waits %v", len(f.calls), *waits)
	}
}

func TestTypedError(t *testing.T) {
	_, c, _ := newFake(t, 403)
	_, err := c.SendNotification(context.Background(), SendRequest{Title: "x"})
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("err %T %v", err, err)
	}
	if e.Status != 403 || e.Code != "insufficient_scope" || e.Required != "send" || e.RequestID != "req-0" || e.Message != "needs send" {
		t.Fatalf("error %+v", e)
	}
	if e.Error() != "relaybell: 403 insufficient_scope: needs send (required send) [request req-0]" || !IsCode(err, "insufficient_scope") {
		t.Fatalf("Error() %q", e.Error())
	}
}

func TestVerifierAgainstSign(t *testing.T) {
	secret := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	body := []byte(`{"event":"webhook.test","data":{"webhookId":"wh_1","message":"hello"},"projectId":"prj_1","at":"2023-11-14T22:13:20Z"}`)
	at := time.Unix(1700000000, 0)
	header, _ := signature.Sign(secret, at, body)
	now := at
	v := Verifier{Secrets: []string{"whsec_old", secret}, Now: func() time.Time { return now }}
	cases := []struct {
		name   string
		header string
		body   []byte
		now    time.Time
		want   error
	}{
		{"valid", header, body, at, nil},
		{"300s later", header, body, at.Add(300 * time.Second), nil},
		{"301s later", header, body, at.Add(301 * time.Second), ErrTimestamp},
		{"301s early", header, body, at.Add(-301 * time.Second), ErrTimestamp},
		{"extra keys ignored", "t=1700000000,v0=abc,k=v," + strings.TrimPrefix(header, "t=1700000000,") + ",v2=zz", body, at, nil},
		{"second v1 matches", "t=1700000000,v1=" + strings.Repeat("0", 64) + "," + strings.TrimPrefix(header, "t=1700000000,"), body, at, nil},
		{"tampered", header, []byte(strings.Replace(string(body), "hello", "HELLO", 1)), at, ErrMismatch},
		{"empty", "", body, at, ErrNoSignature},
		{"no t", strings.TrimPrefix(header, "t=1700000000,"), body, at, ErrMalformed},
		{"legacy header is not enough", "sha256=2e82fc3d4374980d666349ffd28338b37802b2e94d5b77d32e65ce5531091599", body, at, ErrMalformed},
		{"two t", "t=1,t=2,v1=" + strings.Repeat("0", 64), body, at, ErrMalformed},
	}
	for _, tc := range cases {
		now = tc.now
		if err := v.Verify(tc.header, tc.body); !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}

func TestIdentityHash(t *testing.T) {
	// HMAC-SHA256("key", "The quick brown fox jumps over the lazy dog").
	if got := IdentityHash("key", "The quick brown fox jumps over the lazy dog"); got != "f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8" {
		t.Fatal(got)
	}
}

func FuzzVerify(f *testing.F) {
	f.Add("t=1700000000,v1=7cb961530578c1f9a07e3e6a3ad31767596119cfdb5b59d83185e657fc6bcbad", []byte(`{}`))
	f.Add("t=,v1=", []byte(nil))
	f.Add(",,,=,t=99999999999999999999", []byte("x"))
	f.Fuzz(func(t *testing.T, header string, body []byte) {
		v := Verifier{Secrets: []string{"whsec_x"}, Now: func() time.Time { return time.Unix(1700000000, 0) }}
		_ = v.Verify(header, body)
		// Whatever the body, RelayBell's own signature of it verifies.
		signed, _ := signature.Sign("whsec_x", time.Unix(1700000000, 0), body)
		if err := v.Verify(signed, body); err != nil {
			t.Fatalf("signed by RelayBell: %v", err)
		}
	})
}

// The shared vectors of webhooks/signature verify, each at its own time.
func TestVerifierVectors(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "webhooks", "signature", "testdata", "vectors.json"))
	if err != nil {
		t.Fatal(err)
	}
	var vectors []struct {
		Name, Secret, Body, WebhookSignature string
		T                                    int64
	}
	if err := json.Unmarshal(data, &vectors); err != nil || len(vectors) == 0 {
		t.Fatalf("vectors: %d %v", len(vectors), err)
	}
	for _, vec := range vectors {
		v := Verifier{Secrets: []string{vec.Secret}, Now: func() time.Time { return time.Unix(vec.T, 0) }}
		if err := v.Verify(vec.WebhookSignature, []byte(vec.Body)); err != nil {
			t.Errorf("%s: %v", vec.Name, err)
		}
	}
}

// The package is the standard library's only: customers vendor it alone.
func TestStandardLibraryOnly(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	if got := strings.Fields(string(out)); len(got) != 1 || got[0] != "github.com/relaybell/relaybell/client" {
		t.Fatalf("client depends on %q", got)
	}
}

// A targeting field set empty is sent, never dropped: the server refuses
// it (external_ids_empty) where a dropped one would reach everyone.
func TestSendTargetsAreNeverDropped(t *testing.T) {
	for _, c := range []struct {
		req  SendRequest
		want string
	}{
		{SendRequest{Title: "x"}, `{"title":"x"}`},
		{SendRequest{Title: "x", ExternalID: String("")}, `{"externalId":"","title":"x"}`},
		{SendRequest{Title: "x", ExternalIDs: []string{}}, `{"externalIds":[],"title":"x"}`},
		{SendRequest{Title: "x", SegmentID: String("s1"), TopicID: String("news")}, `{"segmentId":"s1","title":"x","topicId":"news"}`},
	} {
		b, err := json.Marshal(c.req)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		json.Unmarshal(b, &m)
		got, _ := json.Marshal(m) // members sorted
		if string(got) != c.want {
			t.Errorf("%+v: %s, want %s", c.req, got, c.want)
		}
	}
}

// The original header, opt-in: valid (any secret), tampered, another
// secret, malformed, missing; and the shared vectors' legacy signatures.
func TestVerifyOriginal(t *testing.T) {
	secret := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	body := []byte(`{"event":"webhook.test","data":{"webhookId":"wh_1","message":"hello"},"projectId":"prj_1","at":"2023-11-14T22:13:20Z"}`)
	_, header := signature.Sign(secret, time.Unix(1700000000, 0), body)
	v := Verifier{Secrets: []string{"whsec_old", secret}}
	cases := []struct {
		name    string
		secrets []string
		header  string
		body    []byte
		want    error
	}{
		{"valid", v.Secrets, header, body, nil},
		{"valid, spaces around", v.Secrets, " " + header + " ", body, nil},
		{"tampered body", v.Secrets, header, append(append([]byte(nil), body...), ' '), ErrMismatch},
		{"other secret", []string{"whsec_other"}, header, body, ErrMismatch},
		{"no secrets", nil, header, body, ErrMismatch},
		{"missing", v.Secrets, "", body, ErrNoSignature},
		{"no prefix", v.Secrets, strings.TrimPrefix(header, "sha256="), body, ErrMalformed},
		{"other algorithm", v.Secrets, "sha1=" + strings.TrimPrefix(header, "sha256="), body, ErrMalformed},
		{"short", v.Secrets, header[:len(header)-2], body, ErrMalformed},
		{"not hex", v.Secrets, "sha256=" + strings.Repeat("zz", 32), body, ErrMalformed},
		{"timestamped header is not the original", v.Secrets, "t=1700000000,v1=7cb961530578c1f9a07e3e6a3ad31767596119cfdb5b59d83185e657fc6bcbad", body, ErrMalformed},
	}
	for _, tc := range cases {
		v := Verifier{Secrets: tc.secrets}
		if err := v.VerifyOriginal(tc.header, tc.body); !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	data, err := os.ReadFile(filepath.Join("..", "webhooks", "signature", "testdata", "vectors.json"))
	if err != nil {
		t.Fatal(err)
	}
	var vectors []struct{ Name, Secret, Body, LegacySignature string }
	if err := json.Unmarshal(data, &vectors); err != nil || len(vectors) == 0 {
		t.Fatalf("vectors: %d %v", len(vectors), err)
	}
	for _, vec := range vectors {
		v := Verifier{Secrets: []string{vec.Secret}}
		if err := v.VerifyOriginal(vec.LegacySignature, []byte(vec.Body)); err != nil {
			t.Errorf("%s: %v", vec.Name, err)
		}
	}
}
