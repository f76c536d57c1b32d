package webpushtest

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"
)

// Claims are the checked contents of a VAPID Authorization header.
type Claims struct {
	Aud string
	Exp time.Time
	Sub string
	// Key is the k= public key, base64url without padding.
	Key string
}

// authError is a refused Authorization header and the status it earns:
// 401 when missing or invalid, 403 when valid but for another key
// (RFC 8292 section 4.2).
type authError struct {
	status int
	reason string
}

func (e *authError) Error() string { return e.reason }

func unauthorized(format string, args ...any) *authError {
	return &authError{status: 401, reason: fmt.Sprintf(format, args...)}
}

// verifyVAPID checks an "Authorization: vapid t=<jwt>, k=<key>" header
// against the key the browser subscribed with, the push service's origin and
// the clock.
func verifyVAPID(header string, subscribedKey []byte, origin string, now time.Time) (Claims, *authError) {
	scheme, params, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "vapid") {
		return Claims{}, unauthorized("authorization scheme is not vapid: %.40q", header)
	}
	var token, key string
	for _, p := range strings.Split(params, ",") {
		name, value, _ := strings.Cut(strings.TrimSpace(p), "=")
		value = strings.Trim(value, `"`)
		switch strings.ToLower(name) {
		case "t":
			token = value
		case "k":
			key = value
		}
	}
	if token == "" || key == "" {
		return Claims{}, unauthorized("vapid authorization lacks t= or k=")
	}

	keyBytes, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(key, "="))
	if err != nil {
		return Claims{}, unauthorized("k= is not base64url: %v", err)
	}
	pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), keyBytes)
	if err != nil {
		return Claims{}, unauthorized("k= is not a P-256 point: %v", err)
	}

	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return Claims{}, unauthorized("t= is not a JWS compact token")
	}
	var jose struct {
		Alg string `json:"alg"`
		Typ string `json:"typ"`
	}
	if err := decodeJSONPart(parts[0], &jose); err != nil {
		return Claims{}, unauthorized("JWT header: %v", err)
	}
	if jose.Alg != "ES256" {
		return Claims{}, unauthorized("JWT alg is %q, want ES256", jose.Alg)
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || len(sig) != 64 {
		return Claims{}, unauthorized("JWT signature is not 64 bytes of base64url")
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	r := new(big.Int).SetBytes(sig[:32])
	s := new(big.Int).SetBytes(sig[32:])
	if !ecdsa.Verify(pub, digest[:], r, s) {
		return Claims{}, unauthorized("JWT signature does not verify under k=")
	}

	var raw struct {
		Aud *string      `json:"aud"`
		Exp *json.Number `json:"exp"`
		Sub *string      `json:"sub"`
	}
	if err := decodeJSONPart(parts[1], &raw); err != nil {
		return Claims{}, unauthorized("JWT claims: %v", err)
	}
	if raw.Aud == nil || raw.Exp == nil || raw.Sub == nil {
		return Claims{}, unauthorized("JWT claims lack aud, exp or sub")
	}
	exp, err := raw.Exp.Int64()
	if err != nil {
		return Claims{}, unauthorized("JWT exp %q is not an integer", raw.Exp.String())
	}
	c := Claims{Aud: *raw.Aud, Exp: time.Unix(exp, 0), Sub: *raw.Sub, Key: base64.RawURLEncoding.EncodeToString(keyBytes)}
	switch {
	case c.Aud != origin:
		return c, unauthorized("JWT aud %q is not this push service's origin %q", c.Aud, origin)
	case !c.Exp.After(now):
		return c, unauthorized("JWT expired at %v", c.Exp)
	case c.Exp.After(now.Add(24 * time.Hour)):
		return c, unauthorized("JWT exp %v is more than 24h ahead", c.Exp)
	case !strings.HasPrefix(c.Sub, "mailto:") && !strings.HasPrefix(c.Sub, "https:"):
		return c, unauthorized("JWT sub %q is neither mailto: nor https:", c.Sub)
	case strings.HasPrefix(c.Sub, "mailto:mailto:"):
		return c, unauthorized("JWT sub %q has mailto: twice", c.Sub)
	}
	if !bytes.Equal(keyBytes, subscribedKey) {
		return c, &authError{status: 403, reason: "k= is not the applicationServerKey the browser subscribed with"}
	}
	return c, nil
}

func decodeJSONPart(part string, v any) error {
	raw, err := base64.RawURLEncoding.DecodeString(part)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after JSON")
	}
	return nil
}
