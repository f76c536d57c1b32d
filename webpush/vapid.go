package webpush

import (
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"
)

const (
	// DefaultTokenLifetime is how far ahead a VAPID token's exp is set.
	DefaultTokenLifetime = 12 * time.Hour
	// MaxTokenLifetime is the longest exp RFC 8292 allows.
	MaxTokenLifetime = 24 * time.Hour
	// DefaultTokenRefresh: a cached token with less than this left is replaced.
	DefaultTokenRefresh = time.Hour
)

// jwtHeader is the base64url JOSE header of every VAPID token.
var jwtHeader = base64.RawURLEncoding.EncodeToString([]byte(`{"typ":"JWT","alg":"ES256"}`))

// Signer produces RFC 8292 Authorization headers for one VAPID key and
// subject. Tokens are cached per push-service origin and reused until less
// than the refresh margin is left, so the hot path is a map lookup. Safe for
// concurrent use.
type Signer struct {
	key      *VAPIDKey
	subject  string
	lifetime time.Duration
	refresh  time.Duration
	now      func() time.Time

	mu     sync.Mutex // held while signing, so one origin is signed once
	tokens sync.Map   // origin -> *vapidToken
}

type vapidToken struct {
	header  string // "vapid t=<jwt>, k=<public key>"
	expires time.Time
}

// SignerOption changes a Signer's defaults.
type SignerOption func(*Signer)

// WithTokenLifetime sets how far ahead of now a token's exp is. It must be
// more than the refresh margin and at most 24h (MaxTokenLifetime).
// Default: 12h (DefaultTokenLifetime).
func WithTokenLifetime(d time.Duration) SignerOption {
	return func(s *Signer) { s.lifetime = d }
}

// WithTokenRefresh sets the margin before exp at which a cached token is
// replaced by a new one, leaving room for clock skew and requests in flight.
// Default: 1h (DefaultTokenRefresh).
func WithTokenRefresh(d time.Duration) SignerOption {
	return func(s *Signer) { s.refresh = d }
}

// WithClock sets the clock used for exp and for cache expiry, for tests.
// Default: time.Now.
func WithClock(now func() time.Time) SignerOption {
	return func(s *Signer) { s.now = now }
}

// NewSigner returns a Signer for key whose tokens carry subject as sub. The
// subject is the operator's contact and must be a mailto: or https: URI; it
// is used exactly as given.
func NewSigner(key *VAPIDKey, subject string, opts ...SignerOption) (*Signer, error) {
	if key == nil {
		return nil, fmt.Errorf("%w: nil key", ErrInvalidKey)
	}
	if err := validateSubject(subject); err != nil {
		return nil, err
	}
	s := &Signer{
		key:      key,
		subject:  subject,
		lifetime: DefaultTokenLifetime,
		refresh:  DefaultTokenRefresh,
		now:      time.Now,
	}
	for _, opt := range opts {
		opt(s)
	}
	if s.lifetime <= 0 || s.lifetime > MaxTokenLifetime {
		return nil, fmt.Errorf("webpush: token lifetime %v is not in (0, %v]", s.lifetime, MaxTokenLifetime)
	}
	if s.refresh < 0 || s.refresh >= s.lifetime {
		return nil, fmt.Errorf("webpush: token refresh %v is not in [0, lifetime %v)", s.refresh, s.lifetime)
	}
	if s.now == nil {
		return nil, fmt.Errorf("webpush: nil clock")
	}
	return s, nil
}

func validateSubject(subject string) error {
	switch {
	case strings.HasPrefix(subject, "mailto:"):
		addr := strings.TrimPrefix(subject, "mailto:")
		if strings.HasPrefix(addr, "mailto:") {
			return fmt.Errorf("%w: %q has mailto: twice", ErrInvalidSubject, subject)
		}
		if at := strings.IndexByte(addr, '@'); at <= 0 || at == len(addr)-1 {
			return fmt.Errorf("%w: %q has no e-mail address", ErrInvalidSubject, subject)
		}
	case strings.HasPrefix(subject, "https:"):
		u, err := url.Parse(subject)
		if err != nil || u.Host == "" {
			return fmt.Errorf("%w: %q is not an https URL", ErrInvalidSubject, subject)
		}
	default:
		return fmt.Errorf("%w: %q must start with mailto: or https:", ErrInvalidSubject, subject)
	}
	return nil
}

// Key returns the Signer's VAPID key.
func (s *Signer) Key() *VAPIDKey { return s.key }

// Authorization returns the value of the Authorization header for a push
// service at origin (scheme://host[:port], as Target.Origin returns it):
// "vapid t=<ES256 JWT>, k=<public key>". The token is cached for origin and
// reused until less than the refresh margin is left before its exp.
func (s *Signer) Authorization(origin string) (string, error) {
	if tok, ok := s.tokens.Load(origin); ok {
		if tok := tok.(*vapidToken); s.now().Before(tok.expires.Add(-s.refresh)) {
			return tok.header, nil
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if tok, ok := s.tokens.Load(origin); ok {
		if tok := tok.(*vapidToken); now.Before(tok.expires.Add(-s.refresh)) {
			return tok.header, nil // another caller signed it while we waited
		}
	}
	if err := validateOrigin(origin); err != nil {
		return "", err
	}
	tok, err := s.sign(origin, now)
	if err != nil {
		return "", err
	}
	// Signing is rare: take the chance to forget origins no longer used.
	s.tokens.Range(func(k, v any) bool {
		if !now.Before(v.(*vapidToken).expires) {
			s.tokens.Delete(k)
		}
		return true
	})
	s.tokens.Store(origin, tok)
	return tok.header, nil
}

func validateOrigin(origin string) error {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" ||
		u.User != nil || u.Path != "" || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("webpush: VAPID audience %q is not an origin (scheme://host[:port])", origin)
	}
	return nil
}

func (s *Signer) sign(origin string, now time.Time) (*vapidToken, error) {
	// exp is whole seconds; truncate so the cached expiry is not later than
	// what the push service reads.
	expires := now.Add(s.lifetime).Truncate(time.Second)
	claims, err := json.Marshal(struct {
		Aud string `json:"aud"`
		Exp int64  `json:"exp"`
		Sub string `json:"sub"`
	}{origin, expires.Unix(), s.subject})
	if err != nil {
		return nil, fmt.Errorf("encoding VAPID claims: %w", err)
	}

	signingInput := jwtHeader + "." + base64.RawURLEncoding.EncodeToString(claims)
	digest := sha256.Sum256([]byte(signingInput))
	r, sv, err := ecdsa.Sign(rand.Reader, s.key.private, digest[:])
	if err != nil {
		return nil, fmt.Errorf("signing VAPID token: %w", err)
	}
	// JWS ES256 signature: r || s, 32 bytes each, big-endian.
	var sig [64]byte
	r.FillBytes(sig[:32])
	sv.FillBytes(sig[32:])

	header := "vapid t=" + signingInput + "." + base64.RawURLEncoding.EncodeToString(sig[:]) +
		", k=" + s.key.public
	return &vapidToken{header: header, expires: expires}, nil
}
