package webpushtest

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"io"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// maxBody is the largest push message body accepted; RFC 8030 section 7.2
// lets a push service refuse more than 4096 bytes with 413.
const maxBody = 4096

// Delivery is a push message the service accepted (answered 201).
type Delivery struct {
	BrowserID string
	Payload   []byte // decrypted
	TTL       int
	Urgency   string // header as sent; "" when absent
	Topic     string // header as sent; "" when absent
	Claims    Claims
	Proto     string // e.g. "HTTP/2.0"
	Time      time.Time
}

// Rejection is a push request the service did not accept, and why.
type Rejection struct {
	BrowserID string
	Status    int // 0 when the sender went away before the answer
	Reason    string
	Time      time.Time
}

// Handler is the fake push service as an http.Handler: POST /push/{id}.
// Serve it from NewServer in tests or from any HTTPS server.
type Handler struct {
	origin string
	now    func() time.Time
	mux    *http.ServeMux

	inFlight    atomic.Int64
	maxInFlight atomic.Int64

	// sample is one push in how many that is checked in full and kept (1:
	// every push); seen counts the pushes of the window, to pick them.
	sample int64
	seen   atomic.Int64

	mu         sync.Mutex
	browsers   map[string]*Browser
	accepted   int
	deliveries []Delivery
	rejections []Rejection
	window     Window
	windowID   int           // stamped on a browser when the window counts it
	windowFrom int           // the window's first entry in deliveries
	changed    chan struct{} // closed and replaced when a record is added
}

// Window is what the handler accepted since OpenWindow (or since it
// started): counts and times of every push, kept cheaply whatever the
// sampling.
type Window struct {
	Pushes     int            // accepted
	Browsers   int            // distinct browsers among them
	Duplicates int            // pushes to a browser already counted
	Protocols  map[string]int // pushes by HTTP version, "HTTP/2.0": N
	First      time.Time      // the first accepted push; zero when none
	Last       time.Time      // the last accepted push
	// Sample is the window's pushes that were checked in full (VAPID
	// signature verified, body decrypted): every one by default, one in n
	// with WithSample(n).
	Sample []Delivery
}

// Option changes a Handler's or Server's defaults.
type Option func(*Handler)

// WithClock sets the clock for checking token expiry and stamping records.
// Default: time.Now.
func WithClock(now func() time.Time) Option {
	return func(h *Handler) { h.now = now }
}

// WithSample checks in full only one push in n, and the first of each
// window: its VAPID signature is verified, its body decrypted, and it is
// kept in Deliveries. The others are checked for what costs nothing (a known
// browser, an Authorization header, TTL, Content-Encoding, Urgency, the
// body's size) and only counted (Count, Window), so that under load the
// fake costs a small fraction of the sender it measures. n <= 1 checks and
// keeps every push, the default.
func WithSample(n int) Option {
	return func(h *Handler) { h.sample = int64(max(n, 1)) }
}

// NewHandler returns a push service reachable at origin
// (scheme://host[:port]): browser endpoints start with it and VAPID tokens
// must name it as aud.
func NewHandler(origin string, opts ...Option) *Handler {
	h := &Handler{
		origin:   origin,
		now:      time.Now,
		mux:      http.NewServeMux(),
		browsers: make(map[string]*Browser),
		changed:  make(chan struct{}),
		sample:   1,
		window:   Window{Protocols: map[string]int{}},
		windowID: 1,
	}
	for _, opt := range opts {
		opt(h)
	}
	h.mux.HandleFunc("POST /push/{id}", h.push)
	return h
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// Origin returns the origin the handler was created for.
func (h *Handler) Origin() string { return h.origin }

func (h *Handler) push(w http.ResponseWriter, r *http.Request) {
	n := h.inFlight.Add(1)
	defer h.inFlight.Add(-1)
	for m := h.maxInFlight.Load(); n > m && !h.maxInFlight.CompareAndSwap(m, n); m = h.maxInFlight.Load() {
	}

	id := r.PathValue("id")
	h.mu.Lock()
	b := h.browsers[id]
	h.mu.Unlock()
	if b == nil {
		h.refuse(w, id, http.StatusNotFound, "no such subscription", "")
		return
	}

	seen := h.seen.Add(1)
	full := h.sample <= 1 || seen == 1 || seen%h.sample == 0
	var claims Claims
	if full {
		var authErr *authError
		if claims, authErr = verifyVAPID(r.Header.Get("Authorization"), b.serverKey, h.origin, h.now()); authErr != nil {
			h.refuse(w, id, authErr.status, authErr.reason, "")
			return
		}
	} else if !strings.HasPrefix(r.Header.Get("Authorization"), "vapid ") {
		h.refuse(w, id, http.StatusUnauthorized, "Authorization is not vapid", "")
		return
	}
	ttl, err := strconv.Atoi(r.Header.Get("TTL"))
	if err != nil || ttl < 0 {
		h.refuse(w, id, http.StatusBadRequest, "missing or invalid TTL header", "")
		return
	}
	if ce := r.Header.Get("Content-Encoding"); ce != "aes128gcm" {
		h.refuse(w, id, http.StatusUnsupportedMediaType, "content encoding "+strconv.Quote(ce)+" is not aes128gcm", "")
		return
	}
	urgency := r.Header.Get("Urgency")
	switch urgency {
	case "", "very-low", "low", "normal", "high":
	default:
		h.refuse(w, id, http.StatusBadRequest, "invalid Urgency "+strconv.Quote(urgency), "")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		h.refuse(w, id, http.StatusBadRequest, "reading body: "+err.Error(), "")
		return
	}
	if len(body) > maxBody {
		h.refuse(w, id, http.StatusRequestEntityTooLarge, "body larger than 4096 bytes", "")
		return
	}
	var payload []byte
	if full {
		if payload, err = b.Decrypt(body); err != nil {
			h.refuse(w, id, http.StatusBadRequest, "decrypting: "+err.Error(), "")
			return
		}
	}

	h.mu.Lock()
	status, retryAfter, delay := b.nextAnswer()
	h.mu.Unlock()
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			h.record(Rejection{BrowserID: id, Reason: "sender went away during the delay"})
			return
		}
	}
	if status != http.StatusCreated {
		h.refuse(w, id, status, "behavior: answered "+strconv.Itoa(status), retryAfter)
		return
	}

	h.accept(b, &Delivery{
		BrowserID: id,
		Payload:   payload,
		TTL:       ttl,
		Urgency:   urgency,
		Topic:     r.Header.Get("Topic"),
		Claims:    claims,
		Proto:     r.Proto,
	}, full)
	w.Header().Set("Location", h.origin+"/message/"+randomID())
	w.Header().Set("TTL", strconv.Itoa(ttl))
	w.WriteHeader(http.StatusCreated)
}

func (h *Handler) refuse(w http.ResponseWriter, id string, status int, reason, retryAfter string) {
	h.record(Rejection{BrowserID: id, Status: status, Reason: reason})
	if retryAfter != "" {
		w.Header().Set("Retry-After", retryAfter)
	}
	http.Error(w, reason, status)
}

func (h *Handler) record(r Rejection) {
	h.mu.Lock()
	defer h.mu.Unlock()
	r.Time = h.now()
	h.rejections = append(h.rejections, r)
	close(h.changed)
	h.changed = make(chan struct{})
}

// accept counts an accepted push in the window, and keeps it when it was
// checked in full.
func (h *Handler) accept(b *Browser, d *Delivery, keep bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	d.Time = h.now()
	h.accepted++
	w := &h.window
	w.Pushes++
	if b.window == h.windowID {
		w.Duplicates++
	} else {
		b.window = h.windowID
		w.Browsers++
	}
	w.Protocols[d.Proto]++
	if w.First.IsZero() {
		w.First = d.Time
	}
	w.Last = d.Time
	if keep {
		h.deliveries = append(h.deliveries, *d)
	}
	close(h.changed)
	h.changed = make(chan struct{})
}

// OpenWindow starts counting anew: Window then tells what was accepted
// from now on.
func (h *Handler) OpenWindow() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.window = Window{Protocols: map[string]int{}}
	h.windowID++
	h.windowFrom = len(h.deliveries)
	h.seen.Store(0)
}

// Window returns what was accepted since OpenWindow.
func (h *Handler) Window() Window {
	h.mu.Lock()
	defer h.mu.Unlock()
	w := h.window
	w.Protocols = maps.Clone(w.Protocols)
	w.Sample = append([]Delivery(nil), h.deliveries[h.windowFrom:]...)
	return w
}

// Deliveries returns every accepted message, oldest first (with
// WithSample, those checked in full).
func (h *Handler) Deliveries() []Delivery {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Delivery(nil), h.deliveries...)
}

// Received returns the messages accepted for one browser, oldest first
// (with WithSample, those checked in full).
func (h *Handler) Received(browserID string) []Delivery {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []Delivery
	for _, d := range h.deliveries {
		if d.BrowserID == browserID {
			out = append(out, d)
		}
	}
	return out
}

// Rejections returns every refused request, oldest first.
func (h *Handler) Rejections() []Rejection {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Rejection(nil), h.rejections...)
}

// Count returns how many messages were accepted.
func (h *Handler) Count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.accepted
}

// MaxInFlight returns the most push requests the handler was serving at once.
func (h *Handler) MaxInFlight() int { return int(h.maxInFlight.Load()) }

// WaitFor blocks until at least n messages were accepted or ctx is done.
func (h *Handler) WaitFor(ctx context.Context, n int) error {
	for {
		h.mu.Lock()
		got, changed := h.accepted, h.changed
		h.mu.Unlock()
		if got >= n {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func randomID() string {
	var b [16]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}
