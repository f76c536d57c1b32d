package api

import (
	"io"
	"net"
	"sync"
	"time"
)

// Bounds of a lingering close (see lingerListener). They fit one machine:
// at most lingerConns connections, each a goroutine and a descriptor, for
// at most lingerTime.
const (
	// lingerTime bounds how long a closed connection is drained in all,
	// as nginx's lingering_time (30s there). The answer is already in the
	// client's hands: a client that reads while it sends (Go's net/http,
	// curl, browsers) reads it within a round trip and closes; 5s is for
	// one that first sends the rest of a refused body.
	lingerTime = 5 * time.Second
	// lingerTimeout bounds each wait for the client's next bytes while
	// draining, as nginx's lingering_timeout (5s there): a client that
	// sends nothing more and does not close is cut off after it.
	lingerTimeout = 2 * time.Second
	// lingerBytes bounds what is read and discarded from one connection:
	// four times the default body limit, the rest of any body a client
	// sends before reading an answer, without letting one absorb our
	// bandwidth for the whole lingerTime.
	lingerBytes = 4 << 20
	// lingerConns bounds the connections lingering at once; past it a
	// connection is closed at once, as it was without lingering.
	lingerConns = 1024
)

// Linger wraps the listener the API's server (Server) serves so that every
// connection the server closes lingers (see lingerListener). Production
// serves srv.Serve(api.Linger(ln)); listeners whose connections are not TCP
// are served as they are.
func Linger(ln net.Listener) net.Listener {
	return newLingerListener(ln, lingerTime, lingerTimeout, lingerBytes, lingerConns)
}

// lingerListener closes connections the way nginx's lingering_close does.
//
// The server answers a body over the limit at once (413
// payload_too_large) and closes the connection while the client is still
// sending that body. A socket closed with unread bytes, or that receives
// bytes after it is closed, answers with a TCP reset. The client's next
// write fails with it, and a client still sending (Go's net/http, curl)
// reports that error instead of reading the 413 it already received; some
// kernels also throw away what was received and not read yet. The client
// sees "connection reset by peer" (issue 21: 15 of 40 net/http posts of
// 1.1 MB).
//
// So Close half-closes instead (CloseWrite: the answer already written is
// followed by a FIN), then reads and discards what the client still sends
// until it closes its side, and only then really closes. Draining runs in a
// goroutine of its own, never on fasthttp's worker, and is bounded by a
// total time (nginx's lingering_time), a wait for each read
// (lingering_timeout) and a byte count; at most maxConns connections linger
// at once, past that Close closes at once. A connection closed while idle
// (keep-alive timeout) lingers only until the client answers the FIN with
// its own close, which a well-behaved client does at once.
//
// A Close that comes while the server's worker is in the middle of a Read
// or Write on the connection (fasthttp's Shutdown closing idle
// connections) closes at once: draining would race that pending I/O.
type lingerListener struct {
	net.Listener
	total    time.Duration // all the draining of one connection
	idle     time.Duration // each wait for bytes while draining
	maxBytes int64         // what one connection's draining reads
	slots    chan struct{} // one per lingering connection
}

func newLingerListener(ln net.Listener, total, idle time.Duration, maxBytes int64, maxConns int) *lingerListener {
	return &lingerListener{Listener: ln, total: total, idle: idle, maxBytes: maxBytes, slots: make(chan struct{}, maxConns)}
}

// Accept wraps each TCP connection.
func (l *lingerListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c, nil
	}
	return &lingerConn{Conn: tc, tc: tc, l: l}, nil
}

// lingerConn is a connection whose Close lingers. Once closed, its Read,
// Write and deadlines fail with net.ErrClosed and leave the socket to the
// draining goroutine.
type lingerConn struct {
	net.Conn // tc; gives the addresses
	tc       *net.TCPConn
	l        *lingerListener

	mu     sync.Mutex
	busy   int // Reads and Writes in progress
	closed bool
}

// SetKeepAlive and SetKeepAlivePeriod keep fasthttp's TCPKeepalive working
// on the wrapped connection.
func (c *lingerConn) SetKeepAlive(on bool) error               { return c.tc.SetKeepAlive(on) }
func (c *lingerConn) SetKeepAlivePeriod(d time.Duration) error { return c.tc.SetKeepAlivePeriod(d) }

func (c *lingerConn) Read(p []byte) (int, error) {
	if !c.enter() {
		return 0, net.ErrClosed
	}
	defer c.leave()
	return c.tc.Read(p)
}

func (c *lingerConn) Write(p []byte) (int, error) {
	if !c.enter() {
		return 0, net.ErrClosed
	}
	defer c.leave()
	return c.tc.Write(p)
}

func (c *lingerConn) SetDeadline(t time.Time) error {
	return c.unlessClosed(func() error { return c.tc.SetDeadline(t) })
}

func (c *lingerConn) SetReadDeadline(t time.Time) error {
	return c.unlessClosed(func() error { return c.tc.SetReadDeadline(t) })
}

func (c *lingerConn) SetWriteDeadline(t time.Time) error {
	return c.unlessClosed(func() error { return c.tc.SetWriteDeadline(t) })
}

// enter counts an I/O call in, unless the connection is closed.
func (c *lingerConn) enter() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.busy++
	return true
}

func (c *lingerConn) leave() {
	c.mu.Lock()
	c.busy--
	c.mu.Unlock()
}

func (c *lingerConn) unlessClosed(f func() error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return net.ErrClosed
	}
	return f()
}

// Close half-closes the connection and leaves the rest to a draining
// goroutine; it closes at once when I/O is in progress or too many
// connections linger already.
func (c *lingerConn) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return net.ErrClosed
	}
	c.closed = true
	busy := c.busy > 0
	c.mu.Unlock()
	if busy {
		return c.tc.Close()
	}
	select {
	case c.l.slots <- struct{}{}:
	default:
		return c.tc.Close()
	}
	if err := c.tc.CloseWrite(); err != nil { // the peer is gone already
		<-c.l.slots
		return c.tc.Close()
	}
	go c.drain()
	return nil
}

// drain reads and discards until the client closes its side or a bound is
// reached, then closes.
func (c *lingerConn) drain() {
	defer func() { <-c.l.slots }()
	defer c.tc.Close()
	r := &lingerReader{c: c.tc, end: time.Now().Add(c.l.total), idle: c.l.idle}
	_, _ = io.CopyN(io.Discard, r, c.l.maxBytes) // ends with the client's close, a bound or an error: all the same here
}

// lingerReader reads with a deadline of idle from now, never past end.
type lingerReader struct {
	c    net.Conn
	end  time.Time
	idle time.Duration
}

func (r *lingerReader) Read(p []byte) (int, error) {
	deadline := time.Now().Add(r.idle)
	if deadline.After(r.end) {
		deadline = r.end
	}
	if err := r.c.SetReadDeadline(deadline); err != nil {
		return 0, err
	}
	return r.c.Read(p)
}
