package webpush

import (
	"crypto/ecdh"
	"time"
)

// EncryptWith is Encrypt with a chosen ephemeral private key and salt, for
// reproducing the RFC 8291 example.
func EncryptWith(t *Target, payload, ephemeralPrivate, salt []byte) ([]byte, error) {
	eph, err := ecdh.P256().NewPrivateKey(ephemeralPrivate)
	if err != nil {
		return nil, err
	}
	return encrypt(t, payload, eph, (*[saltLen]byte)(salt))
}

// ParseRetryAfter exposes parseRetryAfter.
func ParseRetryAfter(v string, now time.Time) time.Duration { return parseRetryAfter(v, now) }

// WithClientClock sets the Client's clock.
func WithClientClock(now func() time.Time) Option { return func(c *Client) { c.now = now } }

// WithProbeWait sets how long requests to a cold origin wait for the first
// one's answer.
func WithProbeWait(d time.Duration) Option { return func(c *Client) { c.probeWait = d } }

// WithHTTP2Upkeep sets the HTTP/2 path's idle timeout and ping timings.
func WithHTTP2Upkeep(idle, pingAfter, pingWait time.Duration) Option {
	return func(c *Client) { c.h2Idle, c.h2PingAfter, c.h2PingWait = idle, pingAfter, pingWait }
}
