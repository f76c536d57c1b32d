package webpush

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

const (
	// DefaultMaxPerOrigin is how many requests a Client has in flight to one
	// push-service origin at most.
	DefaultMaxPerOrigin = 100
	// DefaultTimeout bounds one Send: connecting, writing, reading the answer.
	DefaultTimeout = 30 * time.Second

	maxResultBody = 256      // bytes of an answer kept in Result.Body
	maxDrain      = 64 << 10 // bytes read past that so the connection can be reused
)

// Result is a push service's answer to one Send.
type Result struct {
	// StatusCode is the HTTP status: 201 accepted, 404/410 subscription
	// gone, 413 payload too large, 429/5xx try again later (RFC 8030).
	StatusCode int
	// RetryAfter is the Retry-After header (seconds or HTTP date) as a
	// duration from now; zero when absent, unreadable or in the past.
	RetryAfter time.Duration
	// Body is the start of an error answer's body (at most 256 bytes), for
	// reporting errors.
	Body string
}

// Client sends push requests with one tuned HTTP transport per push-service
// origin, created on first use, and a bounded number of requests in flight
// per origin. It makes one attempt per Send and never retries. Safe for
// concurrent use.
type Client struct {
	tlsConfig    *tls.Config
	maxPerOrigin int
	timeout      time.Duration
	dial         func(ctx context.Context, network, addr string) (net.Conn, error)
	now          func() time.Time
	probeWait    time.Duration

	// The HTTP/2 path (see WithHTTP2).
	h2          bool
	h2Idle      time.Duration
	h2PingAfter time.Duration
	h2PingWait  time.Duration

	mu    sync.Mutex // guards pools; never held during I/O
	pools map[string]*originPool
}

type originPool struct {
	transport *http.Transport
	client    *http.Client
	slots     chan struct{} // one token per request in flight
	now       func() time.Time

	probeWait time.Duration

	// answered is the start (unix nanoseconds) of a request that had an
	// answer, renewed at most once a second: about when the origin last
	// answered.
	answered atomic.Int64
	// http1 is set once the origin answered over HTTP/1.x: its requests
	// don't share connections, so they don't wait for a probe.
	http1 atomic.Bool
	mu    sync.Mutex
	probe chan struct{} // closed when the request probing a cold origin has its answer or failed; nil when none is out

	h2 h2origin // the HTTP/2 path's connection (see WithHTTP2)
}

// idleTimeout is how long an unused connection to a push service is kept.
// An origin that answered within it most likely has a connection to reuse
// (unless the push service closed it).
const idleTimeout = 90 * time.Second

// defaultProbeWait bounds how long requests to a cold origin wait for the
// first one's answer: a slow answer must not hold up the others for long.
const defaultProbeWait = time.Second

// do sends req. A cold origin, one that answered no request within
// idleTimeout and so has no connection to reuse, gets one request at a
// time until the first has its answer (or fails), at most probeWait: the
// others wait for it and then share the connection it opened over HTTP/2.
// Otherwise each request waiting for a connection dials its own, and all
// but one of the connections are thrown away after their TLS handshake:
// 256 requests at once to a new HTTP/2 origin made 204-216 dials. The
// answer, not the connection, is what to wait for: until the server's
// settings arrive, an HTTP/2 connection takes 100 streams, and requests
// past those dial anew.
func (p *originPool) do(req *http.Request) (*http.Response, error) {
	now := p.now().UnixNano()
	if !p.http1.Load() && now-p.answered.Load() >= int64(idleTimeout) {
		release, err := p.admitCold(req.Context())
		if err != nil {
			return nil, err
		}
		defer release()
	}
	resp, err := p.client.Do(req)
	if err == nil {
		// Every request in flight to the origin shares these words: write
		// them when they change, not on every push.
		if now-p.answered.Load() >= int64(time.Second) {
			p.answered.Store(now)
		}
		if resp.ProtoMajor < 2 && !p.http1.Load() {
			p.http1.Store(true)
		}
	}
	return resp, err
}

// admitCold lets a request to a cold origin go out: the first one at once,
// as the probe, with a release that ends the probe once it has its answer;
// the others once the probe ended, or after probeWait, with nothing to
// release.
func (p *originPool) admitCold(ctx context.Context) (release func(), err error) {
	p.mu.Lock()
	wait := p.probe
	if wait == nil {
		probe := make(chan struct{})
		p.probe = probe
		p.mu.Unlock()
		return func() {
			p.mu.Lock()
			p.probe = nil
			p.mu.Unlock()
			close(probe)
		}, nil
	}
	p.mu.Unlock()
	t := time.NewTimer(p.probeWait)
	defer t.Stop()
	select {
	case <-wait:
	case <-t.C:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return func() {}, nil
}

// Option changes a Client's defaults.
type Option func(*Client)

// WithTLSConfig sets the TLS configuration for connections to push services
// (a copy is used), e.g. to trust a test server's certificate.
// Default: Go's defaults with the system roots.
func WithTLSConfig(cfg *tls.Config) Option {
	return func(c *Client) { c.tlsConfig = cfg }
}

// WithMaxPerOrigin sets how many requests may be in flight to one
// push-service origin; Send waits for a slot. Default: 100 (DefaultMaxPerOrigin).
func WithMaxPerOrigin(n int) Option {
	return func(c *Client) { c.maxPerOrigin = n }
}

// WithTimeout bounds each Send from the first byte written to the end of the
// answer. Default: 30s (DefaultTimeout).
func WithTimeout(d time.Duration) Option {
	return func(c *Client) { c.timeout = d }
}

// WithDialContext sets how connections are opened, e.g. to refuse private
// addresses. Default: a net.Dialer with a 10s timeout and 30s keep-alive.
func WithDialContext(dial func(ctx context.Context, network, addr string) (net.Conn, error)) Option {
	return func(c *Client) { c.dial = dial }
}

// NewClient returns a Client with no connections open yet.
func NewClient(opts ...Option) (*Client, error) {
	c := &Client{
		maxPerOrigin: DefaultMaxPerOrigin,
		timeout:      DefaultTimeout,
		dial:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		now:          time.Now,
		probeWait:    defaultProbeWait,
		h2:           true,
		h2Idle:       idleTimeout,
		h2PingAfter:  h2PingAfter,
		h2PingWait:   h2PingWait,
		pools:        make(map[string]*originPool),
	}
	for _, opt := range opts {
		opt(c)
	}
	switch {
	case c.maxPerOrigin < 1:
		return nil, fmt.Errorf("webpush: max per origin %d is less than 1", c.maxPerOrigin)
	case c.timeout <= 0:
		return nil, fmt.Errorf("webpush: timeout %v is not positive", c.timeout)
	case c.dial == nil:
		return nil, errors.New("webpush: nil dial function")
	case c.h2Idle <= 0 || c.h2PingAfter <= 0 || c.h2PingWait <= 0:
		return nil, errors.New("webpush: HTTP/2 idle and ping timeouts must be positive")
	}
	return c, nil
}

// pool returns origin's pool, creating it on first use.
func (c *Client) pool(origin string) *originPool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p, ok := c.pools[origin]; ok {
		return p
	}
	p := c.newPool()
	c.pools[origin] = p
	return p
}

func (c *Client) newPool() *originPool {
	var tlsConfig *tls.Config
	if c.tlsConfig != nil {
		tlsConfig = c.tlsConfig.Clone()
	}
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	protocols.SetHTTP2(true)
	t := &http.Transport{
		Proxy:                 nil, // push services are reached directly, through the dial filter
		DialContext:           c.dial,
		TLSClientConfig:       tlsConfig,
		TLSHandshakeTimeout:   10 * time.Second,
		ForceAttemptHTTP2:     true, // needed with a custom dialer and TLS config
		Protocols:             protocols,
		MaxIdleConns:          c.maxPerOrigin,
		MaxIdleConnsPerHost:   c.maxPerOrigin, // enough for HTTP/1.1 push services too
		IdleConnTimeout:       idleTimeout,
		ExpectContinueTimeout: time.Second,
		HTTP2: &http.HTTP2Config{
			SendPingTimeout: 30 * time.Second, // ping a connection silent this long...
			PingTimeout:     15 * time.Second, // ...and drop it if the ping is not answered
		},
	}
	return &originPool{
		transport: t,
		client: &http.Client{
			Transport: t,
			Timeout:   c.timeout,
			// A push service answers; it does not redirect. Report a 3xx as is.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		slots:     make(chan struct{}, c.maxPerOrigin),
		now:       c.now,
		probeWait: c.probeWait,
	}
}

// Send encrypts msg for t, signs it with signer and POSTs it: one attempt,
// waiting first for a free slot for t's origin. Over HTTP/2 (see
// WithHTTP2), a request the push service did not process (a refused
// stream, a stream above a GOAWAY's last one) is sent again, as net/http
// does. Any HTTP answer, 201 or
// not, is a Result with a nil error; an error means no answer (ctx done,
// connection refused, timeout, invalid message). The response body is always
// read (up to 64 KiB) and closed.
func (c *Client) Send(ctx context.Context, t *Target, msg Message, signer *Signer) (Result, error) {
	if c.h2 && strings.HasPrefix(t.origin, "https://") {
		p := c.pool(t.origin)
		if p.h2.mode.Load() != h2ModeHTTP1 {
			if res, ok, err := c.sendH2(ctx, p, t, &msg, signer); ok {
				return res, err
			}
		}
	}
	// Encrypt before taking a slot: the slot bounds connections, not CPU.
	req, err := NewRequest(ctx, t, msg, signer)
	if err != nil {
		return Result{}, err
	}
	p := c.pool(t.origin)
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return Result{}, fmt.Errorf("waiting for a connection slot to %s: %w", t.origin, ctx.Err())
	}
	defer func() { <-p.slots }()

	resp, err := p.do(req)
	if err != nil {
		return Result{}, fmt.Errorf("sending push to %s: %w", t.origin, err)
	}
	defer resp.Body.Close()

	res := Result{
		StatusCode: resp.StatusCode,
		RetryAfter: parseRetryAfter(resp.Header.Get("Retry-After"), c.now()),
	}
	if resp.StatusCode >= 300 { // a 201 carries nothing worth keeping
		var buf [maxResultBody]byte
		n, _ := io.ReadFull(resp.Body, buf[:])
		res.Body = strings.ToValidUTF8(string(buf[:n]), "\uFFFD")
	}
	if resp.ContentLength != 0 {
		io.Copy(io.Discard, io.LimitReader(resp.Body, maxDrain))
	}
	return res, nil
}

// parseRetryAfter reads Retry-After as delay-seconds or an HTTP date
// (RFC 9110 section 10.2.3).
func parseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		return time.Duration(min(secs, int64(1<<63-1)/int64(time.Second))) * time.Second
	}
	if at, err := http.ParseTime(v); err == nil {
		if d := at.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// Close closes idle connections to every push service. Sends in flight
// finish; a later Send opens new connections (each origin cold again).
func (c *Client) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.pools {
		p.h2.close()
		p.transport.CloseIdleConnections()
		p.answered.Store(0)
	}
}
