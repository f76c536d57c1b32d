package webpushtest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// ServeH2 serves HTTP/2 (RFC 9113) on c, after its TLS handshake chose
// "h2", with h: a lean server for load runs, where Go's own (a goroutine
// and several channel exchanges a request) cost the fake push service more
// CPU than the sender it measured. One goroutine reads the connection's
// frames, runs h for each request once its last frame is in, on that same
// goroutine, and writes the answers, flushed once no more input is
// buffered: many answers go out in one TLS record.
//
// So a handler that waits holds up its whole connection: ServeH2 is for
// handlers that answer at once (a Handler whose browsers have no Delay).
// Request bodies are kept in memory up to maxH2Body; a larger one is
// reset. Answers' bodies are sent as the client's flow-control windows
// allow, the rest when it opens them. Use it as an http.Server's
// TLSNextProto["h2"].
func ServeH2(c net.Conn, h http.Handler) {
	sc := &h2server{handler: h, remote: c.RemoteAddr().String(), br: bufio.NewReaderSize(c, 64<<10), bw: bufio.NewWriterSize(c, 64<<10),
		streams: map[uint32]*h2req{}, sendWindow: initialWindow, streamWindow: initialWindow, maxFrame: 16 << 10}
	defer c.Close()
	if err := sc.serve(); err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
		sc.goAway(err)
	}
}

const (
	// initialWindow is HTTP/2's default flow-control window.
	initialWindow = 65_535
	// recvWindow is the window this server gives each stream and the
	// connection: larger than any body it keeps, so that a client sends
	// a body too large in full, or until it is reset, never waiting for
	// a window.
	recvWindow = 1 << 20
	// maxH2Body is the largest request body kept (a push's is at most
	// 4,096 bytes; other routes' are small JSON): maxH2Streams of them
	// at most a connection.
	maxH2Body = 64 << 10
	// maxH2Streams is the most streams open at once a client may have.
	maxH2Streams = 1000
)

type h2server struct {
	handler http.Handler
	remote  string // the client's address, each request's RemoteAddr
	br      *bufio.Reader
	bw      *bufio.Writer
	fr      *http2.Framer
	enc     *hpack.Encoder
	encBuf  bytes.Buffer

	streams map[uint32]*h2req
	lastID  uint32
	// sendWindow is the connection's window for answers' bodies,
	// streamWindow each new stream's (the client's SETTINGS), maxFrame
	// the largest frame the client takes.
	sendWindow, streamWindow int64
	maxFrame                 uint32
	// received counts request body bytes since the last WINDOW_UPDATE of
	// the connection.
	received int64
	// pending are the streams whose answer's body waits for a window.
	pending []*h2req
	// closing is set by the client's GOAWAY: the connection ends once
	// the streams open are done.
	closing bool
}

// h2req is one stream: its request as it comes in, then what of its
// answer's body is left to send.
type h2req struct {
	id     uint32
	method string
	path   string
	host   string
	header http.Header
	body   []byte
	done   bool // the request's last frame is in
	window int64
	left   []byte // the answer's body not sent yet
}

// h2Error is a connection error: the GOAWAY's code and why.
type h2Error struct {
	code http2.ErrCode
	msg  string
}

func (e h2Error) Error() string { return e.code.String() + ": " + e.msg }

func (sc *h2server) serve() error {
	preface := make([]byte, len(http2.ClientPreface))
	if _, err := io.ReadFull(sc.br, preface); err != nil {
		return err
	}
	if string(preface) != http2.ClientPreface {
		return h2Error{http2.ErrCodeProtocol, "bad client preface"}
	}
	sc.fr = http2.NewFramer(sc.bw, sc.br)
	sc.fr.SetMaxReadFrameSize(16 << 10) // HTTP/2's default, which this server keeps
	sc.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	sc.fr.MaxHeaderListSize = 64 << 10
	sc.enc = hpack.NewEncoder(&sc.encBuf)
	if err := sc.fr.WriteSettings(
		http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: maxH2Streams},
		http2.Setting{ID: http2.SettingInitialWindowSize, Val: recvWindow},
		http2.Setting{ID: http2.SettingMaxHeaderListSize, Val: 64 << 10},
	); err != nil {
		return err
	}
	if err := sc.fr.WriteWindowUpdate(0, recvWindow-initialWindow); err != nil {
		return err
	}
	for {
		if sc.br.Buffered() == 0 {
			if err := sc.bw.Flush(); err != nil {
				return err
			}
		}
		f, err := sc.fr.ReadFrame()
		if err != nil {
			var se http2.StreamError
			if errors.As(err, &se) {
				// A new stream's HEADERS among them: its id is used.
				sc.lastID = max(sc.lastID, se.StreamID)
				delete(sc.streams, se.StreamID)
				if err := sc.fr.WriteRSTStream(se.StreamID, se.Code); err != nil {
					return err
				}
				continue
			}
			var ce http2.ConnectionError
			if errors.As(err, &ce) {
				return h2Error{http2.ErrCode(ce), "reading a frame"}
			}
			return err
		}
		if err := sc.handle(f); err != nil {
			return err
		}
		if sc.closing && len(sc.streams) == 0 {
			return sc.bw.Flush()
		}
	}
}

func (sc *h2server) handle(f http2.Frame) error {
	switch f := f.(type) {
	case *http2.SettingsFrame:
		if f.IsAck() {
			return nil
		}
		if err := f.ForeachSetting(sc.setting); err != nil {
			return err
		}
		return sc.fr.WriteSettingsAck()
	case *http2.PingFrame:
		if f.IsAck() {
			return nil
		}
		return sc.fr.WritePing(true, f.Data)
	case *http2.WindowUpdateFrame:
		return sc.windowUpdate(f)
	case *http2.MetaHeadersFrame:
		return sc.headers(f)
	case *http2.DataFrame:
		return sc.data(f)
	case *http2.RSTStreamFrame:
		sc.forget(f.StreamID)
		return nil
	case *http2.GoAwayFrame:
		sc.closing = true
		return nil
	}
	return nil // PRIORITY, unknown frames: ignored, as RFC 9113 says
}

func (sc *h2server) setting(s http2.Setting) error {
	if err := s.Valid(); err != nil {
		code := http2.ErrCodeProtocol
		var ce http2.ConnectionError
		if errors.As(err, &ce) {
			code = http2.ErrCode(ce)
		}
		return h2Error{code, err.Error()}
	}
	switch s.ID {
	case http2.SettingInitialWindowSize:
		delta := int64(s.Val) - sc.streamWindow
		sc.streamWindow = int64(s.Val)
		for _, st := range sc.streams {
			st.window += delta
			if st.window > 1<<31-1 {
				return h2Error{http2.ErrCodeFlowControl, "a stream's window past 2^31-1"}
			}
		}
		return sc.sendPending()
	case http2.SettingMaxFrameSize:
		sc.maxFrame = s.Val
	case http2.SettingHeaderTableSize:
		sc.enc.SetMaxDynamicTableSizeLimit(s.Val)
	}
	return nil
}

func (sc *h2server) windowUpdate(f *http2.WindowUpdateFrame) error {
	if f.StreamID == 0 {
		sc.sendWindow += int64(f.Increment)
		if sc.sendWindow > 1<<31-1 {
			return h2Error{http2.ErrCodeFlowControl, "connection window past 2^31-1"}
		}
		return sc.sendPending()
	}
	st := sc.streams[f.StreamID]
	if st == nil {
		return nil
	}
	st.window += int64(f.Increment)
	if st.window > 1<<31-1 {
		sc.forget(st.id)
		return sc.fr.WriteRSTStream(st.id, http2.ErrCodeFlowControl)
	}
	return sc.sendPending()
}

func (sc *h2server) headers(f *http2.MetaHeadersFrame) error {
	id := f.StreamID
	if id%2 == 1 && id <= sc.lastID {
		st := sc.streams[id]
		switch {
		case st == nil:
			return nil // a stream reset or answered: what was on the wire is ignored
		case !st.done && f.StreamEnded():
			// Trailers: ignored, but they end the request.
			st.done = true
			return sc.run(st)
		}
	}
	if id%2 == 0 || id <= sc.lastID {
		return h2Error{http2.ErrCodeProtocol, "HEADERS on stream " + strconv.FormatUint(uint64(id), 10)}
	}
	sc.lastID = id
	if len(sc.streams) >= maxH2Streams {
		return sc.fr.WriteRSTStream(id, http2.ErrCodeRefusedStream)
	}
	st := &h2req{id: id, header: http.Header{}, window: sc.streamWindow}
	for _, hf := range f.Fields {
		switch hf.Name {
		case ":method":
			st.method = hf.Value
		case ":path":
			st.path = hf.Value
		case ":authority":
			st.host = hf.Value
		case ":scheme":
		default:
			if strings.HasPrefix(hf.Name, ":") {
				return sc.fr.WriteRSTStream(id, http2.ErrCodeProtocol)
			}
			st.header.Add(http.CanonicalHeaderKey(hf.Name), hf.Value)
		}
	}
	if st.method == "" || st.path == "" {
		return sc.fr.WriteRSTStream(id, http2.ErrCodeProtocol)
	}
	if st.host == "" {
		st.host = st.header.Get("Host")
	}
	sc.streams[id] = st
	if f.StreamEnded() {
		st.done = true
		return sc.run(st)
	}
	return nil
}

func (sc *h2server) data(f *http2.DataFrame) error {
	// The whole frame, padding included, counts against the windows.
	n := int64(f.Header().Length)
	sc.received += n
	if sc.received >= recvWindow/2 {
		if err := sc.fr.WriteWindowUpdate(0, uint32(sc.received)); err != nil {
			return err
		}
		sc.received = 0
	}
	st := sc.streams[f.StreamID]
	if st == nil || st.done {
		if f.StreamID > sc.lastID {
			return h2Error{http2.ErrCodeProtocol, "DATA on an idle stream"}
		}
		if st == nil {
			return nil // a stream reset or answered: what was on the wire is ignored
		}
		sc.forget(st.id) // DATA after the request's end
		return sc.fr.WriteRSTStream(st.id, http2.ErrCodeStreamClosed)
	}
	if len(st.body)+len(f.Data()) > maxH2Body {
		// CANCEL, not REFUSED_STREAM: a client may retry a refused
		// stream as it was.
		sc.forget(st.id)
		return sc.fr.WriteRSTStream(st.id, http2.ErrCodeCancel)
	}
	st.body = append(st.body, f.Data()...)
	if f.StreamEnded() {
		st.done = true
		return sc.run(st)
	}
	return nil
}

// run serves a request whose last frame is in, and writes its answer.
func (sc *h2server) run(st *h2req) error {
	u, err := url.ParseRequestURI(st.path)
	if err != nil {
		sc.forget(st.id)
		return sc.fr.WriteRSTStream(st.id, http2.ErrCodeProtocol)
	}
	// No context of its own: the handler runs on this goroutine, so
	// nothing could cancel one while it runs.
	r := &http.Request{
		Method: st.method, URL: u, Proto: "HTTP/2.0", ProtoMajor: 2, Header: st.header, Host: st.host,
		RequestURI: st.path, RemoteAddr: sc.remote, ContentLength: int64(len(st.body)),
		Body: io.NopCloser(bytes.NewReader(st.body)),
	}
	w := &h2answer{header: http.Header{}}
	sc.handler.ServeHTTP(w, r)
	if w.status == 0 {
		w.status = http.StatusOK
	}
	st.body = nil
	st.left = w.body.Bytes()
	if st.method == http.MethodHead || w.status == http.StatusNoContent || w.status == http.StatusNotModified {
		st.left = nil // no body, whatever the handler wrote (HEAD keeps its length)
	}
	if err := sc.writeHeaders(st.id, w, len(st.left) == 0); err != nil {
		return err
	}
	if len(st.left) == 0 {
		sc.forget(st.id)
		return nil
	}
	sc.pending = append(sc.pending, st)
	return sc.sendPending()
}

func (sc *h2server) writeHeaders(id uint32, w *h2answer, end bool) error {
	sc.encBuf.Reset()
	sc.enc.WriteField(hpack.HeaderField{Name: ":status", Value: strconv.Itoa(w.status)})
	for k, vs := range w.header {
		name := strings.ToLower(k)
		if name == "connection" || name == "transfer-encoding" || name == "keep-alive" {
			continue
		}
		for _, v := range vs {
			sc.enc.WriteField(hpack.HeaderField{Name: name, Value: v})
		}
	}
	if w.header.Get("Content-Length") == "" && w.body.Len() > 0 {
		sc.enc.WriteField(hpack.HeaderField{Name: "content-length", Value: strconv.Itoa(w.body.Len())})
	}
	block := sc.encBuf.Bytes()
	first := block[:min(len(block), int(sc.maxFrame))]
	block = block[len(first):]
	if err := sc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: first,
		EndStream: end, EndHeaders: len(block) == 0}); err != nil {
		return err
	}
	for len(block) > 0 {
		chunk := block[:min(len(block), int(sc.maxFrame))]
		block = block[len(chunk):]
		if err := sc.fr.WriteContinuation(id, len(block) == 0, chunk); err != nil {
			return err
		}
	}
	return nil
}

// sendPending sends what the windows allow of the answers' bodies waiting.
func (sc *h2server) sendPending() error {
	kept := sc.pending[:0]
	for _, st := range sc.pending {
		if sc.streams[st.id] != st {
			continue // reset meanwhile
		}
		for len(st.left) > 0 && sc.sendWindow > 0 && st.window > 0 {
			n := min(int64(len(st.left)), sc.sendWindow, st.window, int64(sc.maxFrame))
			chunk := st.left[:n]
			st.left = st.left[n:]
			sc.sendWindow -= n
			st.window -= n
			if err := sc.fr.WriteData(st.id, len(st.left) == 0, chunk); err != nil {
				return err
			}
		}
		if len(st.left) > 0 {
			kept = append(kept, st)
			continue
		}
		sc.forget(st.id)
	}
	clear(sc.pending[len(kept):])
	sc.pending = kept
	return nil
}

func (sc *h2server) forget(id uint32) { delete(sc.streams, id) }

// goAway tells the client why the connection ends, as far as it can.
func (sc *h2server) goAway(err error) {
	code := http2.ErrCodeInternal
	var he h2Error
	if errors.As(err, &he) {
		code = he.code
	}
	if sc.fr != nil {
		sc.fr.WriteGoAway(sc.lastID, code, []byte(fmt.Sprint(err)))
		sc.bw.Flush()
	}
}

// h2answer is the ResponseWriter of ServeH2: the answer is kept whole and
// written once the handler returns.
type h2answer struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *h2answer) Header() http.Header { return w.header }

func (w *h2answer) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *h2answer) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(p)
}
