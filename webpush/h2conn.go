package webpush

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// The HTTP/2 path: one connection per push-service origin, driven by two
// goroutines, whatever the number of requests in flight. The writer takes
// every request and control frame queued since its last turn, writes their
// frames into one buffer and flushes it when the queue is empty, so many
// pushes share a TLS record; the reader dispatches the answers to the
// requests waiting for them. A request is a stream of this connection from
// the caller's goroutine, which encrypts the body, queues the stream and
// waits for its answer.

const (
	// h2InitialMaxStreams is the stream limit until the peer sets one: none
	// (RFC 9113 section 6.5.2). No stream opens before the peer's first
	// SETTINGS arrive, so a lower limit there is never exceeded; the
	// Client's per-origin limit bounds the streams anyway.
	h2InitialMaxStreams = 1<<32 - 1
	// h2RecvWindow is the receive window announced for the connection and
	// each stream: answers are small; this leaves room for error pages.
	h2RecvWindow = 1 << 20
	// h2WriteBuffer is the writer's buffer: a flush writes at most this much
	// at once, a few TLS records.
	h2WriteBuffer = 64 << 10
	// h2MaxHeaderString bounds one header string in an answer.
	h2MaxHeaderString = 16 << 10
	// h2MaxRetries is how many times a request the peer did not process
	// (refused stream, above a GOAWAY's last stream, connection lost before
	// its headers went out) is sent again, on the same or a new connection.
	h2MaxRetries = 6
	// h2FlushDelay is how long the writer holds written frames while other
	// streams are in flight, for more to share their flush.
	h2FlushDelay = 500 * time.Microsecond
)

// h2Unprocessed marks a request the peer has not processed: safe to send
// again (RFC 9113 section 8.7).
type h2Unprocessed struct{ err error }

func (e *h2Unprocessed) Error() string { return e.err.Error() }
func (e *h2Unprocessed) Unwrap() error { return e.err }

// h2StreamError is a stream reset by the peer with a code other than
// REFUSED_STREAM.
type h2StreamError struct{ code http2.ErrCode }

func (e *h2StreamError) Error() string { return "stream reset by the push service: " + e.code.String() }

var (
	errH2GoingAway = errors.New("connection going away")
	errH2Refused   = errors.New("stream refused by the push service")
	errH2Idle      = errors.New("idle connection closed")
	errH2NoPing    = errors.New("push service did not answer a ping")
	errH2Timeout   = fmt.Errorf("no answer in time: %w", context.DeadlineExceeded)
)

// h2stream is one push request on an h2conn.
type h2stream struct {
	// Set before queueing, read by the writer.
	path    string
	ttl     string
	auth    string
	urgency Urgency
	topic   string
	length  int    // the body's length
	body    []byte // what is left to write; guarded by h2conn.mu once queued
	window  int32  // send window; guarded by h2conn.mu

	deadline int64  // unix nanoseconds: the upkeep goroutine ends the stream then
	id       uint32 // 0 until the writer opens the stream; guarded by mu
	finished bool   // guarded by mu
	queued   bool   // in h2conn.dataq; guarded by mu
	recv     uint32 // bytes of DATA received since the last stream WINDOW_UPDATE; reader only

	// The answer, written by the reader (or by whoever fails the stream)
	// before done is closed.
	status     int
	retryAfter string
	errBody    []byte
	err        error
	done       chan struct{}
}

// h2ctrl is a control frame for the writer.
type h2ctrl struct {
	kind   byte // 's' SETTINGS ack, 'p' PING, 'P' PING ack, 'w' WINDOW_UPDATE, 'r' RST_STREAM
	stream uint32
	val    uint32 // window increment or error code
	data   [8]byte
}

// h2conn is one HTTP/2 connection to a push service.
type h2conn struct {
	authority string
	conn      net.Conn
	bw        *bufio.Writer
	wfr       *http2.Framer // writer goroutine only
	rfr       *http2.Framer // reader goroutine only
	henc      *hpack.Encoder
	hbuf      bytes.Buffer
	// The last content-length written, as a string (writer only).
	lastLength    int
	lastLengthStr string
	hdec          *hpack.Decoder
	idle          time.Duration // close after this long without a stream
	pingAfter     time.Duration // ping after this long without a frame while streams are open
	pingWait      time.Duration // and fail the connection if the ping is not answered in time

	lastRead atomic.Int64 // unix nanoseconds of the last frame read

	// The header block being read (reader only).
	hStatus     int
	hRetryAfter string

	wake    chan struct{} // cap 1: the writer has work
	stopped chan struct{} // closed when the connection has failed or closed

	mu           sync.Mutex
	streams      map[uint32]*h2stream // open streams
	waiting      []*h2stream          // queued, no stream id yet
	dataq        []*h2stream          // open, with body left to write
	ctrl         []h2ctrl
	nextID       uint32
	maxStreams   uint32
	gotSettings  bool  // the peer's first SETTINGS arrived: streams may open
	initWindow   int32 // the peer's SETTINGS_INITIAL_WINDOW_SIZE
	sendWindow   int64 // connection send window
	maxFrame     uint32
	recvUnacked  uint32 // connection-level DATA bytes not yet given back
	goingAway    bool   // no new streams: GOAWAY received, idle, or ids used up
	closed       bool
	lastBusy     time.Time // when the last stream ended (or the connection opened)
	tableSize    uint32    // the peer's SETTINGS_HEADER_TABLE_SIZE, for the encoder
	tableSizeSet bool
	pingOut      bool
	pingSent     time.Time
}

// newH2Conn starts the HTTP/2 connection over conn, a TLS connection that
// negotiated h2: the preface and SETTINGS go out at once, before any request.
func newH2Conn(conn net.Conn, authority string, idle, pingAfter, pingWait, timeout time.Duration) (*h2conn, error) {
	cc := &h2conn{
		authority:  authority,
		conn:       conn,
		bw:         bufio.NewWriterSize(conn, h2WriteBuffer),
		idle:       idle,
		pingAfter:  pingAfter,
		pingWait:   pingWait,
		wake:       make(chan struct{}, 1),
		stopped:    make(chan struct{}),
		streams:    make(map[uint32]*h2stream),
		nextID:     1,
		maxStreams: h2InitialMaxStreams,
		initWindow: 65535,
		sendWindow: 65535,
		maxFrame:   16384,
		lastBusy:   time.Now(),
	}
	cc.wfr = http2.NewFramer(cc.bw, nil)
	cc.rfr = http2.NewFramer(nil, bufio.NewReaderSize(conn, 32<<10))
	cc.rfr.SetReuseFrames()
	cc.henc = hpack.NewEncoder(&cc.hbuf)
	cc.hdec = hpack.NewDecoder(4096, cc.onHeaderField)
	cc.hdec.SetMaxStringLength(h2MaxHeaderString)
	cc.lastRead.Store(time.Now().UnixNano())

	if _, err := cc.bw.WriteString(http2.ClientPreface); err != nil {
		return nil, err
	}
	err := cc.wfr.WriteSettings(
		http2.Setting{ID: http2.SettingEnablePush, Val: 0},
		http2.Setting{ID: http2.SettingInitialWindowSize, Val: h2RecvWindow},
		http2.Setting{ID: http2.SettingMaxHeaderListSize, Val: 64 << 10},
	)
	if err == nil {
		err = cc.wfr.WriteWindowUpdate(0, h2RecvWindow-65535)
	}
	if err == nil {
		err = cc.bw.Flush()
	}
	if err != nil {
		return nil, err
	}
	go cc.readLoop()
	go cc.writeLoop()
	// Upkeep: deadlines to within a sixteenth of the timeout (1ms-1s), and
	// the idle and ping checks.
	go cc.upkeep(min(idle/2, pingAfter/2, pingWait/2, max(time.Millisecond, min(time.Second, timeout/16))))
	return cc, nil
}

// usable reports whether the connection takes new streams.
func (cc *h2conn) usable() bool {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return !cc.closed && !cc.goingAway
}

// signal wakes the writer.
func (cc *h2conn) signal() {
	select {
	case cc.wake <- struct{}{}:
	default:
	}
}

// queue hands s to the writer. An error (unprocessed) means the connection
// takes no new streams.
func (cc *h2conn) queue(s *h2stream) error {
	cc.mu.Lock()
	if cc.closed || cc.goingAway {
		cc.mu.Unlock()
		return &h2Unprocessed{errH2GoingAway}
	}
	cc.waiting = append(cc.waiting, s)
	cc.mu.Unlock()
	cc.signal()
	return nil
}

// cancel ends s with err if it has no answer yet, resetting its stream if
// it is open.
func (cc *h2conn) cancel(s *h2stream, err error) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if s.finished {
		return
	}
	if s.id != 0 && !cc.closed {
		cc.ctrl = append(cc.ctrl, h2ctrl{kind: 'r', stream: s.id, val: uint32(http2.ErrCodeCancel)})
		cc.signal()
	}
	cc.finishLocked(s, err)
}

// finishLocked ends s: its answer (or err) is final and its waiter woken.
func (cc *h2conn) finishLocked(s *h2stream, err error) {
	if s.finished {
		return
	}
	s.finished = true
	s.err = err
	if s.id != 0 {
		if _, ok := cc.streams[s.id]; ok {
			delete(cc.streams, s.id)
			if len(cc.streams) == 0 {
				cc.lastBusy = time.Now()
			}
			if len(cc.waiting) > 0 {
				cc.signal() // a stream slot is free
			}
		}
	}
	close(s.done)
	if cc.goingAway && !cc.closed && len(cc.streams) == 0 && len(cc.waiting) == 0 {
		cc.closeLocked(errH2GoingAway)
	}
}

// fail closes the connection after err, failing every stream: those whose
// headers never went out as unprocessed, the others with err.
func (cc *h2conn) fail(err error) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	cc.closeLocked(err)
}

func (cc *h2conn) closeLocked(err error) {
	if cc.closed {
		return
	}
	cc.closed = true
	for _, s := range cc.waiting {
		cc.finishLocked(s, &h2Unprocessed{fmt.Errorf("connection closed: %w", err)})
	}
	cc.waiting = nil
	for _, s := range cc.streams {
		cc.finishLocked(s, fmt.Errorf("connection lost: %w", err))
	}
	cc.dataq = nil
	// Not under the lock: TLS's Close writes a close_notify alert, which
	// could wait for a peer that does not read.
	go cc.conn.Close()
	close(cc.stopped)
}

// close shuts the connection down once its streams are done: at once when
// idle, otherwise when the last one ends.
func (cc *h2conn) close() {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	cc.goingAway = true
	if !cc.closed && len(cc.streams) == 0 && len(cc.waiting) == 0 {
		cc.closeLocked(errH2GoingAway)
	}
}

// h2item is one frame the writer writes: a stream's headers, a chunk of
// its body, or a control frame.
type h2item struct {
	s    *h2stream
	data []byte
	end  bool
	hdr  bool
	ctrl h2ctrl
}

// writeLoop writes what is queued, as many frames as are ready per flush.
func (cc *h2conn) writeLoop() {
	delay := time.NewTimer(time.Hour)
	delay.Stop()
	var items []h2item
	for {
		select {
		case <-cc.wake:
		case <-cc.stopped:
			return
		}
		// Write what is queued; while other streams are in flight, more
		// is on its way: wait up to h2FlushDelay for it before flushing,
		// so that many pushes share a TLS record and a write.
		var deadline time.Time
		for {
			var busy bool
			items, busy = cc.takeWork(items[:0])
			if len(items) > 0 {
				if err := cc.writeItems(items); err != nil {
					cc.fail(err)
					return
				}
				clear(items) // drop references to bodies
				continue
			}
			if !busy || cc.bw.Buffered() == 0 || cc.bw.Buffered() >= h2WriteBuffer/2 {
				break
			}
			now := time.Now()
			if deadline.IsZero() {
				deadline = now.Add(h2FlushDelay)
			}
			if !now.Before(deadline) {
				break
			}
			// Not woken by each push queued meanwhile: they are taken
			// together when the delay is up.
			delay.Reset(deadline.Sub(now))
			select {
			case <-delay.C:
			case <-cc.stopped:
				return
			}
		}
		if err := cc.bw.Flush(); err != nil {
			cc.fail(err)
			return
		}
	}
}

// takeWork collects the control frames, opens waiting streams while the
// peer's limit allows, and cuts body chunks as the windows allow.
// busy is true when more than one stream is open or waiting.
func (cc *h2conn) takeWork(items []h2item) (_ []h2item, busy bool) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.closed {
		return items, false
	}
	defer func() { busy = len(cc.streams)+len(cc.waiting) > 1 }()
	for _, c := range cc.ctrl {
		items = append(items, h2item{ctrl: c})
	}
	cc.ctrl = cc.ctrl[:0]
	n := 0
	for _, s := range cc.waiting {
		if s.finished {
			n++
			continue
		}
		if cc.goingAway || !cc.gotSettings || uint32(len(cc.streams)) >= cc.maxStreams {
			break
		}
		n++
		if cc.nextID > 1<<31-1 {
			// Stream ids used up: this connection takes no more.
			cc.goingAway = true
			cc.finishLocked(s, &h2Unprocessed{errH2GoingAway})
			continue
		}
		s.id = cc.nextID
		cc.nextID += 2
		s.window = cc.initWindow
		cc.streams[s.id] = s
		items = append(items, h2item{s: s, hdr: true, end: len(s.body) == 0})
		if len(s.body) > 0 && !s.queued {
			s.queued = true
			cc.dataq = append(cc.dataq, s)
		}
	}
	cc.waiting = cc.waiting[:copy(cc.waiting, cc.waiting[n:])]
	if cc.goingAway && len(cc.waiting) > 0 {
		// GOAWAY or ids used up: the rest go to a new connection.
		for _, s := range cc.waiting {
			cc.finishLocked(s, &h2Unprocessed{errH2GoingAway})
		}
		cc.waiting = cc.waiting[:0]
	}

	keep := cc.dataq[:0]
	for _, s := range cc.dataq {
		if s.finished {
			s.queued = false
			continue
		}
		for len(s.body) > 0 && s.window > 0 && cc.sendWindow > 0 {
			n := min(len(s.body), int(s.window), int(cc.maxFrame), int(min(cc.sendWindow, 1<<31-1)))
			chunk := s.body[:n]
			s.body = s.body[n:]
			s.window -= int32(n)
			cc.sendWindow -= int64(n)
			items = append(items, h2item{s: s, data: chunk, end: len(s.body) == 0})
		}
		if len(s.body) > 0 {
			keep = append(keep, s) // waits for a WINDOW_UPDATE
		} else {
			s.queued = false
		}
	}
	clear(cc.dataq[len(keep):])
	cc.dataq = keep
	return items, false
}

func (cc *h2conn) writeItems(items []h2item) error {
	for i := range items {
		it := &items[i]
		var err error
		switch {
		case it.hdr:
			err = cc.writeHeaders(it.s, it.end)
		case it.s != nil:
			err = cc.wfr.WriteData(it.s.id, it.end, it.data)
		default:
			c := &it.ctrl
			switch c.kind {
			case 's':
				err = cc.wfr.WriteSettingsAck()
			case 'p':
				err = cc.wfr.WritePing(false, c.data)
			case 'P':
				err = cc.wfr.WritePing(true, c.data)
			case 'w':
				err = cc.wfr.WriteWindowUpdate(c.stream, c.val)
			case 'r':
				err = cc.wfr.WriteRSTStream(c.stream, http2.ErrCode(c.val))
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// writeHeaders encodes s's request headers. The constant ones (method,
// scheme, authority, content type and encoding, TTL, Authorization,
// Urgency) are indexed by the peer's decoder after their first use, so they
// cost a byte or two each; the path, content length and topic, which vary,
// are sent as literals never indexed so they do not evict them.
func (cc *h2conn) writeHeaders(s *h2stream, end bool) error {
	cc.mu.Lock()
	maxFrame := int(cc.maxFrame)
	if cc.tableSizeSet {
		cc.henc.SetMaxDynamicTableSizeLimit(cc.tableSize)
		cc.tableSizeSet = false
	}
	cc.mu.Unlock()
	cc.hbuf.Reset()
	e := cc.henc
	e.WriteField(hpack.HeaderField{Name: ":method", Value: "POST"})
	e.WriteField(hpack.HeaderField{Name: ":scheme", Value: "https"})
	e.WriteField(hpack.HeaderField{Name: ":authority", Value: cc.authority})
	e.WriteField(hpack.HeaderField{Name: ":path", Value: s.path, Sensitive: true})
	e.WriteField(hpack.HeaderField{Name: "content-encoding", Value: "aes128gcm"})
	e.WriteField(hpack.HeaderField{Name: "content-type", Value: "application/octet-stream"})
	e.WriteField(hpack.HeaderField{Name: "ttl", Value: s.ttl})
	e.WriteField(hpack.HeaderField{Name: "authorization", Value: s.auth})
	if s.urgency != "" {
		e.WriteField(hpack.HeaderField{Name: "urgency", Value: string(s.urgency)})
	}
	if s.topic != "" {
		e.WriteField(hpack.HeaderField{Name: "topic", Value: s.topic, Sensitive: true})
	}
	if s.length != cc.lastLength || cc.lastLengthStr == "" {
		// Pushes of one broadcast have bodies of one length, mostly.
		cc.lastLength, cc.lastLengthStr = s.length, strconv.Itoa(s.length)
	}
	e.WriteField(hpack.HeaderField{Name: "content-length", Value: cc.lastLengthStr, Sensitive: true})

	block := cc.hbuf.Bytes()
	first := block[:min(len(block), maxFrame)]
	block = block[len(first):]
	if err := cc.wfr.WriteHeaders(http2.HeadersFrameParam{StreamID: s.id, BlockFragment: first, EndStream: end, EndHeaders: len(block) == 0}); err != nil {
		return err
	}
	for len(block) > 0 {
		frag := block[:min(len(block), maxFrame)]
		block = block[len(frag):]
		if err := cc.wfr.WriteContinuation(s.id, len(block) == 0, frag); err != nil {
			return err
		}
	}
	return nil
}

// upkeep runs checkHealth every interval until the connection closes.
// It is apart from the writer, which a peer that reads nothing can block.
func (cc *h2conn) upkeep(interval time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			cc.checkHealth()
		case <-cc.stopped:
			return
		}
	}
}

// checkHealth ends the streams past their deadline, closes a connection
// idle too long and pings one silent too long while streams wait, failing
// it if the ping goes unanswered.
func (cc *h2conn) checkHealth() {
	now := time.Now()
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.closed {
		return
	}
	nowNano := now.UnixNano()
	for _, s := range cc.streams {
		if nowNano >= s.deadline {
			cc.ctrl = append(cc.ctrl, h2ctrl{kind: 'r', stream: s.id, val: uint32(http2.ErrCodeCancel)})
			cc.signal()
			cc.finishLocked(s, errH2Timeout)
		}
	}
	for _, s := range cc.waiting {
		if nowNano >= s.deadline {
			cc.finishLocked(s, errH2Timeout) // dropped from waiting by the writer
		}
	}
	if cc.closed {
		return // the last stream of a connection going away
	}
	busy := len(cc.streams) > 0 || len(cc.waiting) > 0
	if !busy {
		if now.Sub(cc.lastBusy) >= cc.idle {
			cc.goingAway = true
			cc.closeLocked(errH2Idle)
		}
		return
	}
	if cc.pingOut {
		if now.Sub(cc.pingSent) >= cc.pingWait {
			cc.closeLocked(errH2NoPing)
		}
		return
	}
	if now.Sub(time.Unix(0, cc.lastRead.Load())) >= cc.pingAfter {
		cc.pingOut = true
		cc.pingSent = now
		cc.ctrl = append(cc.ctrl, h2ctrl{kind: 'p', data: [8]byte{'r', 'e', 'l', 'a', 'y', 'b', 'e', 'l'}})
		cc.signal()
	}
}

// readLoop reads frames until the connection fails.
func (cc *h2conn) readLoop() {
	for {
		f, err := cc.rfr.ReadFrame()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			cc.fail(fmt.Errorf("reading from push service: %w", err))
			return
		}
		cc.lastRead.Store(time.Now().UnixNano())
		if err := cc.handle(f); err != nil {
			cc.fail(err)
			return
		}
	}
}

// onHeaderField collects the fields of the answer being read.
func (cc *h2conn) onHeaderField(f hpack.HeaderField) {
	switch f.Name {
	case ":status":
		if n, err := strconv.Atoi(f.Value); err == nil && n >= 100 && n <= 999 {
			cc.hStatus = n
		}
	case "retry-after":
		cc.hRetryAfter = f.Value
	}
}

func (cc *h2conn) handle(f http2.Frame) error {
	switch f := f.(type) {
	case *http2.HeadersFrame:
		return cc.readHeaders(f.StreamID, f.HeaderBlockFragment(), f.HeadersEnded(), f.StreamEnded())
	case *http2.DataFrame:
		return cc.readData(f)
	case *http2.SettingsFrame:
		return cc.readSettings(f)
	case *http2.WindowUpdateFrame:
		cc.mu.Lock()
		defer cc.mu.Unlock()
		if f.StreamID == 0 {
			cc.sendWindow += int64(f.Increment)
			if cc.sendWindow > 1<<31-1 {
				return errors.New("push service overflowed the connection window")
			}
		} else if s := cc.streams[f.StreamID]; s != nil {
			if int64(s.window)+int64(f.Increment) > 1<<31-1 {
				cc.ctrl = append(cc.ctrl, h2ctrl{kind: 'r', stream: s.id, val: uint32(http2.ErrCodeFlowControl)})
				cc.finishLocked(s, errors.New("push service overflowed a stream window"))
				cc.signal() // the reset goes out now, whatever data waits
			} else {
				s.window += int32(f.Increment)
			}
		}
		if len(cc.dataq) > 0 {
			cc.signal()
		}
	case *http2.RSTStreamFrame:
		cc.mu.Lock()
		defer cc.mu.Unlock()
		if s := cc.streams[f.StreamID]; s != nil {
			if f.ErrCode == http2.ErrCodeRefusedStream {
				cc.finishLocked(s, &h2Unprocessed{errH2Refused})
			} else {
				cc.finishLocked(s, &h2StreamError{f.ErrCode})
			}
		}
	case *http2.PingFrame:
		cc.mu.Lock()
		defer cc.mu.Unlock()
		if f.IsAck() {
			cc.pingOut = false
		} else {
			cc.ctrl = append(cc.ctrl, h2ctrl{kind: 'P', data: f.Data})
			cc.signal()
		}
	case *http2.GoAwayFrame:
		cc.mu.Lock()
		defer cc.mu.Unlock()
		cc.goingAway = true
		for id, s := range cc.streams {
			if id > f.LastStreamID {
				cc.finishLocked(s, &h2Unprocessed{errH2GoingAway})
			}
		}
		for _, s := range cc.waiting {
			cc.finishLocked(s, &h2Unprocessed{errH2GoingAway})
		}
		cc.waiting = cc.waiting[:0]
		if len(cc.streams) == 0 {
			cc.closeLocked(errH2GoingAway)
		}
	case *http2.PushPromiseFrame:
		return errors.New("push service sent PUSH_PROMISE with push disabled")
	}
	return nil
}

// readHeaders decodes a header block (continued by CONTINUATION frames
// until ended) and applies it to its stream.
func (cc *h2conn) readHeaders(id uint32, frag []byte, ended, streamEnded bool) error {
	cc.hStatus, cc.hRetryAfter = 0, ""
	for {
		if _, err := cc.hdec.Write(frag); err != nil {
			return fmt.Errorf("decoding headers: %w", err)
		}
		if ended {
			break
		}
		f, err := cc.rfr.ReadFrame()
		if err != nil {
			return err
		}
		c, ok := f.(*http2.ContinuationFrame)
		if !ok || c.StreamID != id {
			return errors.New("push service interrupted a header block")
		}
		frag, ended = c.HeaderBlockFragment(), c.HeadersEnded()
	}
	if err := cc.hdec.Close(); err != nil {
		return fmt.Errorf("decoding headers: %w", err)
	}

	cc.mu.Lock()
	defer cc.mu.Unlock()
	s := cc.streams[id]
	if s == nil {
		return nil // canceled, or an id we never opened (ignored)
	}
	switch {
	case cc.hStatus == 0:
		cc.ctrl = append(cc.ctrl, h2ctrl{kind: 'r', stream: id, val: uint32(http2.ErrCodeProtocol)})
		cc.signal()
		cc.finishLocked(s, errors.New("push service answered without a :status"))
		return nil
	case cc.hStatus < 200:
		if streamEnded {
			cc.finishLocked(s, errors.New("push service ended a stream with an informational answer"))
		}
		return nil // 1xx: the answer follows
	case s.status != 0:
		// Trailers: the answer is already known.
	default:
		s.status = cc.hStatus
		s.retryAfter = cc.hRetryAfter
	}
	if streamEnded {
		if len(s.body) > 0 {
			// Answered before the body was all written: stop writing it.
			cc.ctrl = append(cc.ctrl, h2ctrl{kind: 'r', stream: id, val: uint32(http2.ErrCodeNo)})
			cc.signal()
		}
		cc.finishLocked(s, nil)
	}
	return nil
}

func (cc *h2conn) readData(f *http2.DataFrame) error {
	n := f.Length // padding counts against flow control
	cc.mu.Lock()
	defer cc.mu.Unlock()
	cc.recvUnacked += n
	if cc.recvUnacked >= h2RecvWindow/2 {
		cc.ctrl = append(cc.ctrl, h2ctrl{kind: 'w', val: cc.recvUnacked})
		cc.recvUnacked = 0
		cc.signal()
	}
	s := cc.streams[f.StreamID]
	if s == nil {
		return nil
	}
	if s.status == 0 {
		cc.ctrl = append(cc.ctrl, h2ctrl{kind: 'r', stream: s.id, val: uint32(http2.ErrCodeProtocol)})
		cc.signal()
		cc.finishLocked(s, errors.New("push service sent a body before its headers"))
		return nil
	}
	if s.status >= 300 && len(s.errBody) < maxResultBody {
		data := f.Data()
		if s.errBody == nil {
			s.errBody = make([]byte, 0, maxResultBody)
		}
		s.errBody = append(s.errBody, data[:min(len(data), maxResultBody-len(s.errBody))]...)
	}
	if f.StreamEnded() {
		cc.finishLocked(s, nil)
		return nil
	}
	s.recv += n
	if s.recv >= h2RecvWindow/2 {
		cc.ctrl = append(cc.ctrl, h2ctrl{kind: 'w', stream: s.id, val: s.recv})
		s.recv = 0
		cc.signal()
	}
	return nil
}

func (cc *h2conn) readSettings(f *http2.SettingsFrame) error {
	if f.IsAck() {
		return nil
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	err := f.ForeachSetting(func(s http2.Setting) error {
		switch s.ID {
		case http2.SettingMaxConcurrentStreams:
			cc.maxStreams = s.Val
		case http2.SettingInitialWindowSize:
			if s.Val > 1<<31-1 {
				return errors.New("push service announced an initial window above 2^31-1")
			}
			// RFC 9113 section 6.9.2: open streams' windows move by the
			// difference, possibly below zero.
			delta := int32(s.Val) - cc.initWindow
			cc.initWindow = int32(s.Val)
			for _, st := range cc.streams {
				st.window += delta
			}
		case http2.SettingMaxFrameSize:
			if s.Val < 16384 || s.Val > 1<<24-1 {
				return fmt.Errorf("push service announced a max frame size of %d", s.Val)
			}
			cc.maxFrame = s.Val
		case http2.SettingHeaderTableSize:
			cc.tableSize, cc.tableSizeSet = s.Val, true // applied by the writer, which owns the encoder
		}
		return nil
	})
	if err != nil {
		return err
	}
	cc.gotSettings = true
	cc.ctrl = append(cc.ctrl, h2ctrl{kind: 's'})
	cc.signal()
	return nil
}
