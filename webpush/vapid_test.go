package webpush_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"math/big"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relaybell/relaybell/webpush"
)

// fakeClock is a settable clock for WithClock.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

type vapidClaims struct {
	Aud string `json:"aud"`
	Exp int64  `json:"exp"`
	Sub string `json:"sub"`
}

// parseAuthorization checks the header's form and signature and returns its claims.
func parseAuthorization(t *testing.T, key *webpush.VAPIDKey, header string) vapidClaims {
	t.Helper()
	token, k, ok := strings.Cut(strings.TrimPrefix(header, "vapid t="), ", k=")
	if !strings.HasPrefix(header, "vapid t=") || !ok {
		t.Fatalf("header %q is not vapid t=..., k=...", header)
	}
	if k != key.PublicKey() {
		t.Fatalf("k = %s, want %s", k, key.PublicKey())
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("token %q has %d parts", token, len(parts))
	}
	if got := string(b64(t, parts[0])); got != `{"typ":"JWT","alg":"ES256"}` {
		t.Errorf("JOSE header = %s", got)
	}
	pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), b64(t, k))
	if err != nil {
		t.Fatal(err)
	}
	sig := b64(t, parts[2])
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if len(sig) != 64 || !ecdsa.Verify(pub, digest[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
		t.Fatal("signature does not verify")
	}
	var c vapidClaims
	if err := json.Unmarshal(b64(t, parts[1]), &c); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestSignerClaims(t *testing.T) {
	key, _ := webpush.GenerateVAPIDKey()
	clock := &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	tests := []struct {
		subject  string
		opts     []webpush.SignerOption
		lifetime time.Duration
	}{
		{"mailto:ops@relaybell.example", nil, 12 * time.Hour},
		{"https://relaybell.example/contact", []webpush.SignerOption{webpush.WithTokenLifetime(24 * time.Hour)}, 24 * time.Hour},
		{"mailto:ops@relaybell.example", []webpush.SignerOption{webpush.WithTokenLifetime(2 * time.Hour)}, 2 * time.Hour},
	}
	for _, tt := range tests {
		signer, err := webpush.NewSigner(key, tt.subject, append(tt.opts, webpush.WithClock(clock.Now))...)
		if err != nil {
			t.Fatal(err)
		}
		header, err := signer.Authorization("https://fcm.googleapis.com")
		if err != nil {
			t.Fatal(err)
		}
		got := parseAuthorization(t, key, header)
		want := vapidClaims{Aud: "https://fcm.googleapis.com", Exp: clock.Now().Add(tt.lifetime).Unix(), Sub: tt.subject}
		if got != want {
			t.Errorf("claims = %+v, want %+v", got, want)
		}
	}
}

func TestSignerCachesPerOrigin(t *testing.T) {
	key, _ := webpush.GenerateVAPIDKey()
	clock := &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	signer, err := webpush.NewSigner(key, "mailto:ops@relaybell.example", webpush.WithClock(clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	auth := func(origin string) string {
		t.Helper()
		h, err := signer.Authorization(origin)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}

	fcm := auth("https://fcm.googleapis.com")
	if again := auth("https://fcm.googleapis.com"); again != fcm {
		t.Error("second token for the same origin differs: not cached")
	}
	mozilla := auth("https://updates.push.services.mozilla.com")
	if mozilla == fcm {
		t.Error("another origin got the same token")
	}
	if c := parseAuthorization(t, key, mozilla); c.Aud != "https://updates.push.services.mozilla.com" {
		t.Errorf("aud = %q", c.Aud)
	}

	// 12h lifetime, refreshed when less than 1h is left.
	clock.Advance(11*time.Hour - time.Second)
	if again := auth("https://fcm.googleapis.com"); again != fcm {
		t.Error("token replaced with more than 1h left")
	}
	clock.Advance(time.Second)
	refreshed := auth("https://fcm.googleapis.com")
	if refreshed == fcm {
		t.Fatal("token not replaced with 1h left")
	}
	if c := parseAuthorization(t, key, refreshed); c.Exp != clock.Now().Add(12*time.Hour).Unix() {
		t.Errorf("refreshed exp = %d, want %d", c.Exp, clock.Now().Add(12*time.Hour).Unix())
	}
	if again := auth("https://fcm.googleapis.com"); again != refreshed {
		t.Error("refreshed token not cached")
	}
}

func TestSignerConcurrent(t *testing.T) {
	key, _ := webpush.GenerateVAPIDKey()
	signer, err := webpush.NewSigner(key, "mailto:ops@relaybell.example")
	if err != nil {
		t.Fatal(err)
	}
	origins := []string{"https://a.example", "https://b.example", "https://c.example:8443"}
	var wg sync.WaitGroup
	got := make([][]string, 50)
	for i := range got {
		wg.Go(func() {
			for _, o := range origins {
				h, err := signer.Authorization(o)
				if err != nil {
					t.Error(err)
				}
				got[i] = append(got[i], h)
			}
		})
	}
	wg.Wait()
	for i := range got {
		for j := range origins {
			if got[i][j] != got[0][j] {
				t.Fatalf("goroutine %d got a different token for %s", i, origins[j])
			}
		}
	}
}

func TestNewSignerValidates(t *testing.T) {
	key, _ := webpush.GenerateVAPIDKey()
	tests := []struct {
		subject string
		opts    []webpush.SignerOption
		wantErr error // nil: any error
		ok      bool
	}{
		{subject: "mailto:ops@relaybell.example", ok: true},
		{subject: "https://relaybell.example", ok: true},
		{subject: "ops@relaybell.example", wantErr: webpush.ErrInvalidSubject},
		{subject: "mailto:mailto:ops@relaybell.example", wantErr: webpush.ErrInvalidSubject},
		{subject: "mailto:", wantErr: webpush.ErrInvalidSubject},
		{subject: "mailto:@relaybell.example", wantErr: webpush.ErrInvalidSubject},
		{subject: "https://", wantErr: webpush.ErrInvalidSubject},
		{subject: "http://relaybell.example", wantErr: webpush.ErrInvalidSubject},
		{subject: "", wantErr: webpush.ErrInvalidSubject},
		{subject: "mailto:ops@relaybell.example", opts: []webpush.SignerOption{webpush.WithTokenLifetime(25 * time.Hour)}},
		{subject: "mailto:ops@relaybell.example", opts: []webpush.SignerOption{webpush.WithTokenLifetime(0)}},
		{subject: "mailto:ops@relaybell.example", opts: []webpush.SignerOption{webpush.WithTokenRefresh(12 * time.Hour)}},
		{subject: "mailto:ops@relaybell.example", opts: []webpush.SignerOption{webpush.WithTokenRefresh(-time.Second)}},
		{subject: "mailto:ops@relaybell.example", opts: []webpush.SignerOption{webpush.WithClock(nil)}},
	}
	for _, tt := range tests {
		_, err := webpush.NewSigner(key, tt.subject, tt.opts...)
		switch {
		case tt.ok && err != nil:
			t.Errorf("NewSigner(%q): %v", tt.subject, err)
		case !tt.ok && err == nil:
			t.Errorf("NewSigner(%q, %d opts) succeeded, want an error", tt.subject, len(tt.opts))
		case tt.wantErr != nil && !errors.Is(err, tt.wantErr):
			t.Errorf("NewSigner(%q) err = %v, want %v", tt.subject, err, tt.wantErr)
		}
	}
	if _, err := webpush.NewSigner(nil, "mailto:ops@relaybell.example"); !errors.Is(err, webpush.ErrInvalidKey) {
		t.Errorf("nil key: err = %v, want ErrInvalidKey", err)
	}
}

func TestAuthorizationRejectsNonOrigins(t *testing.T) {
	key, _ := webpush.GenerateVAPIDKey()
	signer, _ := webpush.NewSigner(key, "mailto:ops@relaybell.example")
	for _, origin := range []string{"", "fcm.googleapis.com", "https://fcm.googleapis.com/fcm/send/x", "ftp://a.example", "https://"} {
		if _, err := signer.Authorization(origin); err == nil {
			t.Errorf("Authorization(%q) succeeded, want an error", origin)
		}
	}
}
