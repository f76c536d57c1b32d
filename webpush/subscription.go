package webpush

import (
	"crypto/ecdh"
	"encoding/base64"
	"fmt"
	"net/url"
	"strings"
)

// Subscription is a browser's PushSubscription as the browser hands it over:
// the endpoint URL and the p256dh and auth keys in base64 (any alphabet,
// padded or not).
type Subscription struct {
	Endpoint string
	P256dh   string
	Auth     string
}

// Target is a parsed, validated subscription. Parse it once with
// ParseSubscription and encrypt for it as often as needed; it is immutable
// and safe for concurrent use.
type Target struct {
	endpoint string
	origin   string
	path     string // the endpoint's request target: path and query
	uaPublic *ecdh.PublicKey
	// keyInfo is "WebPush: info\x00" || ua_public || as_public with the
	// as_public part left zero; each message fills in its own copy.
	keyInfo [keyInfoLen]byte
	auth    [authLen]byte
}

const (
	authLen           = 16
	pointLen          = 65 // uncompressed P-256 point
	keyInfoPrefix     = "WebPush: info\x00"
	keyInfoLen        = len(keyInfoPrefix) + 2*pointLen
	keyInfoASPublicAt = len(keyInfoPrefix) + pointLen
)

// ParseSubscription checks that the endpoint is an absolute http(s) URL,
// p256dh is a point on P-256 and auth is 16 bytes. Errors wrap
// ErrInvalidSubscription. Whether the endpoint's host may be contacted is
// the caller's decision (see WithDialContext).
func ParseSubscription(s Subscription) (*Target, error) {
	origin, path, ok := splitEndpoint(s.Endpoint)
	if !ok {
		u, err := url.Parse(s.Endpoint)
		if err != nil {
			return nil, fmt.Errorf("%w: endpoint: %v", ErrInvalidSubscription, err)
		}
		if (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
			return nil, fmt.Errorf("%w: endpoint %q is not an absolute http(s) URL", ErrInvalidSubscription, s.Endpoint)
		}
		origin, path = u.Scheme+"://"+u.Host, u.RequestURI()
	}

	p256dh, err := decodeBase64(s.P256dh)
	if err != nil {
		return nil, fmt.Errorf("%w: p256dh: %v", ErrInvalidSubscription, err)
	}
	if len(p256dh) != pointLen {
		return nil, fmt.Errorf("%w: p256dh is %d bytes, want %d", ErrInvalidSubscription, len(p256dh), pointLen)
	}
	uaPublic, err := ecdh.P256().NewPublicKey(p256dh)
	if err != nil {
		return nil, fmt.Errorf("%w: p256dh: %v", ErrInvalidSubscription, err)
	}

	auth, err := decodeBase64(s.Auth)
	if err != nil {
		return nil, fmt.Errorf("%w: auth: %v", ErrInvalidSubscription, err)
	}
	if len(auth) != authLen {
		return nil, fmt.Errorf("%w: auth is %d bytes, want %d", ErrInvalidSubscription, len(auth), authLen)
	}

	t := &Target{
		endpoint: s.Endpoint,
		origin:   origin,
		path:     path,
		uaPublic: uaPublic,
	}
	copy(t.keyInfo[:], keyInfoPrefix)
	copy(t.keyInfo[len(keyInfoPrefix):], p256dh)
	copy(t.auth[:], auth)
	return t, nil
}

// Keys returns the subscription's p256dh and auth in unpadded base64url,
// whatever alphabet and padding they came in: the form to store them in.
func (t *Target) Keys() (p256dh, auth string) {
	return base64.RawURLEncoding.EncodeToString(t.uaPublic.Bytes()), base64.RawURLEncoding.EncodeToString(t.auth[:])
}

// CanonicalKey returns a subscription key (p256dh or auth), given in either
// base64 alphabet with or without padding, in the unpadded base64url form
// Keys stores.
func CanonicalKey(s string) (string, error) {
	raw, err := decodeBase64(s)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrInvalidSubscription, err)
	}
	return base64.RawURLEncoding.EncodeToString(raw), nil
}

// Endpoint returns the push service URL messages for this target go to.
func (t *Target) Endpoint() string { return t.endpoint }

// Origin returns the push service's origin, scheme://host[:port]: the key
// of the Client's connection pools and the aud of the VAPID token.
func (t *Target) Origin() string { return t.origin }

// splitEndpoint is url.Parse's origin and request target of an endpoint of
// the plain form push services hand out, without parsing it: a lower-case
// http(s) scheme, a host of letters, digits, dots and dashes with an
// optional port, and a path of unreserved characters and "/:@$&+,;=" (no
// query, fragment, escape or user). Anything else reports false and goes
// through url.Parse (FuzzSplitEndpoint checks that both agree). A push
// parsed its endpoint twice (here and for its service's metrics); url.Parse
// was about a tenth of the pusher's own CPU per push.
func splitEndpoint(endpoint string) (origin, path string, ok bool) {
	rest, found := strings.CutPrefix(endpoint, "https://")
	if !found {
		if rest, found = strings.CutPrefix(endpoint, "http://"); !found {
			return "", "", false
		}
	}
	hostEnd := strings.IndexByte(rest, '/')
	if hostEnd < 0 {
		hostEnd = len(rest)
	}
	host := rest[:hostEnd]
	name, port, hasPort := strings.Cut(host, ":")
	if name == "" || (hasPort && port == "") {
		return "", "", false
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !isAlnum(c) && c != '.' && c != '-' {
			return "", "", false
		}
	}
	for i := 0; i < len(port); i++ {
		if c := port[i]; c < '0' || c > '9' {
			return "", "", false
		}
	}
	path = rest[hostEnd:]
	for i := 0; i < len(path); i++ {
		if c := path[i]; !isAlnum(c) && !strings.ContainsRune("-._~/:@$&+,;=", rune(c)) {
			return "", "", false
		}
	}
	if path == "" {
		path = "/"
	}
	return endpoint[:len(endpoint)-len(rest)+hostEnd], path, true
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
