package webpush

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strings"
)

// VAPIDKey is an application server's P-256 key pair (RFC 8292). Its public
// half is the applicationServerKey browsers subscribe with.
type VAPIDKey struct {
	private *ecdsa.PrivateKey
	public  string // base64url (raw) of the 65-byte uncompressed point
}

// GenerateVAPIDKey creates a new random key pair.
func GenerateVAPIDKey() (*VAPIDKey, error) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating VAPID key: %w", err)
	}
	return newVAPIDKey(priv)
}

// ParseVAPIDKey reads a private key as PrivateKey returns it: the 32-byte
// P-256 scalar in base64 (url or standard alphabet, padded or not).
func ParseVAPIDKey(privateB64 string) (*VAPIDKey, error) {
	raw, err := decodeBase64(privateB64)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidKey, err)
	}
	if len(raw) != 32 {
		return nil, fmt.Errorf("%w: private key is %d bytes, want 32", ErrInvalidKey, len(raw))
	}
	priv, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidKey, err)
	}
	return newVAPIDKey(priv)
}

func newVAPIDKey(priv *ecdsa.PrivateKey) (*VAPIDKey, error) {
	pub, err := priv.PublicKey.Bytes()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidKey, err)
	}
	return &VAPIDKey{private: priv, public: base64.RawURLEncoding.EncodeToString(pub)}, nil
}

// PublicKey returns the 65-byte uncompressed public point in base64url
// without padding: the applicationServerKey for pushManager.subscribe and the
// k= parameter of the Authorization header.
func (k *VAPIDKey) PublicKey() string { return k.public }

// PrivateKey returns the 32-byte private scalar in base64url without padding,
// the form ParseVAPIDKey reads. Keep it secret.
func (k *VAPIDKey) PrivateKey() string {
	raw, err := k.private.Bytes()
	if err != nil {
		// Unreachable: the key was parsed or generated on P-256.
		panic("webpush: encoding VAPID private key: " + err.Error())
	}
	return base64.RawURLEncoding.EncodeToString(raw)
}

// decodeBase64 accepts what browsers and key tools hand out: the url or the
// standard alphabet, with or without '=' padding.
func decodeBase64(s string) ([]byte, error) {
	s = strings.TrimRight(s, "=")
	enc := base64.RawURLEncoding
	if strings.ContainsAny(s, "+/") {
		enc = base64.RawStdEncoding
	}
	return enc.DecodeString(s)
}
