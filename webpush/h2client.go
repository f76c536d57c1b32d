package webpush

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of the HTTP/2 path's connection upkeep.
const (
	// h2PingAfter: a connection with requests waiting that read nothing
	// this long is pinged...
	h2PingAfter = 30 * time.Second
	// h2PingWait: ...and failed (its requests with it) if the ping is not
	// answered this soon.
	h2PingWait = 15 * time.Second
)

// WithHTTP2 chooses how push services that speak HTTP/2 are reached. On
// (the default), each https origin gets one HTTP/2 connection of the
// package's own, whose writer coalesces the frames of many pushes into few
// TLS records; push services that do not negotiate h2 in ALPN, and http
// origins, go through net/http's transport. Off, every push goes through
// net/http's transport.
func WithHTTP2(on bool) Option {
	return func(c *Client) { c.h2 = on }
}

const (
	h2ModeUnknown int32 = iota
	h2ModeHTTP2
	h2ModeHTTP1 // ALPN chose HTTP/1.1: the origin uses net/http's transport
)

// h2origin is an origin's HTTP/2 connection, or the dial making it.
type h2origin struct {
	mode atomic.Int32
	mu   sync.Mutex
	cc   *h2conn
	dial *h2dial // the dial in progress, nil when none
}

type h2dial struct {
	done  chan struct{}
	cc    *h2conn
	http1 bool
	err   error
}

// sendH2 is Send over the origin's HTTP/2 connection. ok is false when the
// origin turned out not to speak HTTP/2: the caller sends through net/http.
func (c *Client) sendH2(ctx context.Context, p *originPool, t *Target, msg *Message, signer *Signer) (res Result, ok bool, err error) {
	ttl, auth, body, err := prepare(t, msg, signer)
	if err != nil {
		return Result{}, true, err
	}
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return Result{}, true, fmt.Errorf("waiting for a connection slot to %s: %w", t.origin, ctx.Err())
	}
	defer func() { <-p.slots }()

	// The connection's upkeep goroutine ends a stream past its deadline:
	// no timer per push.
	deadline := time.Now().Add(c.timeout)
	timeout := func() error {
		return fmt.Errorf("sending push to %s: no answer within %v: %w", t.origin, c.timeout, context.DeadlineExceeded)
	}
	for attempt := 0; ; attempt++ {
		cc, http1, err := c.h2Conn(ctx, p, t.origin, deadline)
		switch {
		case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
			return Result{}, true, timeout()
		case err != nil:
			return Result{}, true, fmt.Errorf("sending push to %s: %w", t.origin, err)
		case http1:
			return Result{}, false, nil
		}
		s := &h2stream{path: t.path, ttl: ttl, auth: auth, urgency: msg.Urgency, topic: msg.Topic, length: len(body), body: body,
			deadline: deadline.UnixNano(), done: make(chan struct{})}
		if err := cc.queue(s); err != nil {
			if attempt < h2MaxRetries {
				continue // the connection just went away: a new one
			}
			return Result{}, true, fmt.Errorf("sending push to %s: %w", t.origin, err)
		}
		if done := ctx.Done(); done == nil {
			<-s.done
		} else {
			select {
			case <-s.done:
			case <-done:
				cc.cancel(s, ctx.Err())
			}
		}
		// s is finished now (by the reader or by the cancel).
		if s.err != nil {
			var unprocessed *h2Unprocessed
			if errors.As(s.err, &unprocessed) && attempt < h2MaxRetries {
				if errors.Is(s.err, errH2Refused) {
					// The peer is over its limit: give it a moment.
					if err := waitH2(ctx, deadline, time.Duration(10<<attempt)*time.Millisecond); err != nil {
						if ctx.Err() == nil {
							err = timeout()
						}
						return Result{}, true, err
					}
				}
				continue
			}
			if errors.Is(s.err, errH2Timeout) {
				return Result{}, true, timeout()
			}
			return Result{}, true, fmt.Errorf("sending push to %s: %w", t.origin, s.err)
		}
		res := Result{StatusCode: s.status}
		if s.retryAfter != "" {
			res.RetryAfter = parseRetryAfter(s.retryAfter, c.now())
		}
		if s.errBody != nil {
			res.Body = strings.ToValidUTF8(string(s.errBody), "\uFFFD")
		}
		return res, true, nil
	}
}

// waitH2 waits d, or until ctx is done or deadline passes (an error then).
func waitH2(ctx context.Context, deadline time.Time, d time.Duration) error {
	if time.Until(deadline) < d {
		return context.DeadlineExceeded
	}
	w := time.NewTimer(d)
	defer w.Stop()
	select {
	case <-w.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// h2Conn returns origin's HTTP/2 connection, dialing it if there is none
// that takes new streams; one dial at a time per origin, which the others
// wait for. http1 is true when the origin does not speak HTTP/2.
func (c *Client) h2Conn(ctx context.Context, p *originPool, origin string, deadline time.Time) (cc *h2conn, http1 bool, err error) {
	for range 3 {
		o := &p.h2
		o.mu.Lock()
		if o.cc != nil && o.cc.usable() {
			cc := o.cc
			o.mu.Unlock()
			return cc, false, nil
		}
		d := o.dial
		joined := d != nil
		if d == nil {
			d = &h2dial{done: make(chan struct{})}
			o.dial = d
			// The dial runs apart from the callers so that one of them
			// giving up does not fail it for the others.
			go func() {
				d.cc, d.http1, d.err = c.dialH2(origin)
				o.mu.Lock()
				o.dial = nil
				switch {
				case d.http1:
					o.mode.Store(h2ModeHTTP1)
				case d.err == nil:
					o.mode.Store(h2ModeHTTP2)
					o.cc = d.cc
				}
				o.mu.Unlock()
				close(d.done)
			}()
		}
		o.mu.Unlock()
		timer := time.NewTimer(time.Until(deadline)) // only while a dial is going on
		select {
		case <-d.done:
			timer.Stop()
		case <-ctx.Done():
			timer.Stop()
			return nil, false, fmt.Errorf("connecting: %w", ctx.Err())
		case <-timer.C:
			return nil, false, context.DeadlineExceeded
		}
		switch {
		case d.err != nil && joined:
			// Another request's dial failed: try one of our own, as
			// requests through net/http each dial after a failed probe.
			continue
		case d.err != nil:
			return nil, false, d.err
		case d.http1:
			return nil, true, nil
		case d.cc.usable():
			return d.cc, false, nil
		}
		// Closed or going away already: dial again.
	}
	return nil, false, errors.New("new connections close at once")
}

// dialH2 connects to origin (https://host[:port]) offering h2 and
// http/1.1 in ALPN. http1 is true, and the connection closed, when the
// push service chose HTTP/1.1.
func (c *Client) dialH2(origin string) (cc *h2conn, http1 bool, err error) {
	authority := strings.TrimPrefix(origin, "https://")
	addr := authority
	host, _, splitErr := net.SplitHostPort(authority)
	if splitErr != nil {
		host = strings.TrimSuffix(strings.TrimPrefix(authority, "["), "]")
		addr = net.JoinHostPort(host, "443")
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	raw, err := c.dial(ctx, "tcp", addr)
	if err != nil {
		return nil, false, err
	}
	cfg := &tls.Config{}
	if c.tlsConfig != nil {
		cfg = c.tlsConfig.Clone()
	}
	cfg.NextProtos = []string{"h2", "http/1.1"}
	if cfg.ServerName == "" {
		cfg.ServerName = host
	}
	tc := tls.Client(raw, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		raw.Close()
		return nil, false, err
	}
	if tc.ConnectionState().NegotiatedProtocol != "h2" {
		tc.Close()
		return nil, true, nil
	}
	cc, err = newH2Conn(tc, authority, c.h2Idle, c.h2PingAfter, c.h2PingWait, c.timeout)
	if err != nil {
		tc.Close()
		return nil, false, err
	}
	return cc, false, nil
}

// closeH2 closes the origin's HTTP/2 connection once its streams are done.
func (o *h2origin) close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.cc != nil {
		o.cc.close()
		o.cc = nil
	}
}
