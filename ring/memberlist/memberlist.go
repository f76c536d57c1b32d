package memberlist

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	ml "github.com/hashicorp/memberlist"

	"github.com/relaybell/relaybell/ring"
)

var _ ring.Ring = (*Ring)(nil)

// ErrClosed is returned by Leave and Shutdown once the node has shut down.
var ErrClosed = errors.New("memberlist: ring closed")

// Member is a live node of the ring.
type Member struct {
	Name string
	// Addr is the member's gossip address, host:port.
	Addr string
	// Meta is the member's Config.Meta. Callers must not modify it.
	Meta map[string]string
}

// EventType says what happened to a member.
type EventType int

// Event types.
const (
	MemberJoined  EventType = iota + 1
	MemberLeft              // left gracefully or was declared dead
	MemberUpdated           // its meta changed
)

func (t EventType) String() string {
	switch t {
	case MemberJoined:
		return "joined"
	case MemberLeft:
		return "left"
	case MemberUpdated:
		return "updated"
	}
	return "EventType(" + strconv.Itoa(int(t)) + ")"
}

// Event is sent to watchers after the ring has been rebuilt for a change.
type Event struct {
	Type   EventType
	Member Member
	// Hash is the ring after the change; Ring.Owner already answers from it.
	Hash *ring.Hash
}

type snapshot struct {
	hash    *ring.Hash
	members []Member // sorted by name
}

// Ring is this node's view of the memberlist cluster: a consistent Hash over
// the live members, rebuilt on every join and leave. It is safe for
// concurrent use.
type Ring struct {
	self         string
	vnodes       int
	leaveTimeout time.Duration
	owns         func(Member) bool // nil: every member owns keys
	logger       *slog.Logger
	list         *ml.Memberlist

	cur atomic.Pointer[snapshot]

	// life serializes Leave and Shutdown: memberlist panics on a Leave
	// after Shutdown. It is taken before mu, never while holding it.
	life    sync.Mutex
	down    bool          // guarded by life and mu; either is enough to read
	done    chan struct{} // closed by Shutdown
	downErr error

	mu       sync.Mutex // guards members, watchers
	members  map[string]Member
	watchers map[*watcher]struct{}
}

// Join starts this node's gossip listener and, when cfg.Seeds is not empty,
// joins the cluster through them, retrying until a seed answers or ctx ends
// (so nodes may start in any order). logger receives memberlist's own log
// lines at debug level; nil discards them.
func Join(ctx context.Context, cfg Config, logger *slog.Logger) (*Ring, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	logger = logger.With("component", "memberlist", "node", cfg.NodeName)
	meta, err := encodeMeta(cfg.Meta)
	if err != nil {
		return nil, err
	}

	r := &Ring{
		self:         cfg.NodeName,
		vnodes:       cfg.VirtualNodes,
		leaveTimeout: cfg.LeaveTimeout,
		owns:         cfg.Owns,
		logger:       logger,
		members:      map[string]Member{},
		watchers:     map[*watcher]struct{}{},
		done:         make(chan struct{}),
	}
	if r.leaveTimeout == 0 {
		r.leaveTimeout = defaultLeaveTimeout
	}
	r.cur.Store(&snapshot{hash: r.newHash(nil)})

	mc := cfg.memberlistConfig()
	mc.Logger = slog.NewLogLogger(logger.Handler(), slog.LevelDebug)
	mc.Delegate = metaDelegate(meta)
	mc.Events = (*events)(r)

	list, err := ml.Create(mc)
	if err != nil {
		return nil, fmt.Errorf("starting memberlist: %w", err)
	}
	r.list = list
	if len(cfg.Seeds) > 0 {
		if err := r.join(ctx, cfg.Seeds); err != nil {
			_ = r.Shutdown()
			return nil, err
		}
	}
	logger.Info("joined ring", "addr", r.Addr(), "members", len(r.cur.Load().members))
	return r, nil
}

func (r *Ring) join(ctx context.Context, seeds []string) error {
	backoff := 50 * time.Millisecond
	for {
		n, err := r.list.Join(seeds)
		if n > 0 {
			return nil
		}
		r.logger.Debug("no seed answered; retrying", "seeds", seeds, "err", err, "in", backoff)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("joining seeds %v: %w (last error: %v)", seeds, ctx.Err(), err)
		case <-t.C:
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

func (r *Ring) newHash(nodes []string) *ring.Hash {
	return ring.NewHash(nodes, ring.WithVirtualNodes(r.vnodes))
}

// Owner returns the live member owning key.
func (r *Ring) Owner(key string) string { return r.cur.Load().hash.Owner(key) }

// Owners returns up to n distinct live members for key: the owner, then the
// one that takes key over if the owner goes.
func (r *Ring) Owners(key string, n int) []string { return r.cur.Load().hash.Owners(key, n) }

// Self is this node's name.
func (r *Ring) Self() string { return r.self }

// Hash is the current ring.
func (r *Ring) Hash() *ring.Hash { return r.cur.Load().hash }

// Addr is this node's gossip address, host:port, for other nodes' Seeds.
func (r *Ring) Addr() string {
	n := r.list.LocalNode()
	return net.JoinHostPort(n.Addr.String(), strconv.Itoa(int(n.Port)))
}

// Members returns the live members, this node included, sorted by name.
func (r *Ring) Members() []Member { return slices.Clone(r.cur.Load().members) }

// Member returns the live member called name.
func (r *Ring) Member(name string) (Member, bool) {
	ms := r.cur.Load().members
	i, ok := slices.BinarySearchFunc(ms, name, func(m Member, n string) int {
		return strings.Compare(m.Name, n)
	})
	if !ok {
		return Member{}, false
	}
	return ms[i], true
}

// Leave tells the cluster this node is going, waiting up to timeout for the
// message to go out. The node keeps answering gossip until Shutdown.
func (r *Ring) Leave(timeout time.Duration) error {
	r.life.Lock()
	defer r.life.Unlock()
	if r.down {
		return ErrClosed
	}
	if err := r.list.Leave(timeout); err != nil {
		return fmt.Errorf("leaving ring: %w", err)
	}
	return nil
}

// Shutdown stops gossip without telling anyone, as a crash would; the others
// notice after a few probe intervals. Watch channels close. Prefer Close.
func (r *Ring) Shutdown() error {
	r.life.Lock()
	defer r.life.Unlock()
	if r.down {
		return r.downErr
	}
	r.mu.Lock()
	r.down = true
	r.mu.Unlock()
	close(r.done)
	if err := r.list.Shutdown(); err != nil {
		r.downErr = fmt.Errorf("shutting down memberlist: %w", err)
	}
	return r.downErr
}

// Close leaves the cluster (bounded by Config.LeaveTimeout) and shuts down.
func (r *Ring) Close() error {
	var leaveErr error
	if err := r.Leave(r.leaveTimeout); err != nil && !errors.Is(err, ErrClosed) {
		leaveErr = err
	}
	return errors.Join(leaveErr, r.Shutdown())
}

// Watch returns a channel of membership events, each sent after the ring
// was rebuilt for it, in the order they happened. Events queue without bound
// and never block gossip, so a slow reader only delays itself. The channel
// closes when ctx ends or the ring shuts down.
func (r *Ring) Watch(ctx context.Context) <-chan Event {
	w := &watcher{wake: make(chan struct{}, 1), out: make(chan Event)}
	r.mu.Lock()
	if r.down {
		r.mu.Unlock()
		close(w.out)
		return w.out
	}
	r.watchers[w] = struct{}{}
	r.mu.Unlock()
	go func() {
		defer func() {
			r.mu.Lock()
			delete(r.watchers, w)
			r.mu.Unlock()
			close(w.out)
		}()
		w.run(ctx, r.done)
	}()
	return w.out
}

// apply records a membership change and publishes the rebuilt ring. It runs
// on memberlist's delegate calls, which never overlap.
func (r *Ring) apply(t EventType, n *ml.Node) {
	m := Member{
		Name: n.Name,
		Addr: net.JoinHostPort(n.Addr.String(), strconv.Itoa(int(n.Port))),
		Meta: decodeMeta(n.Meta),
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	if t == MemberLeft {
		delete(r.members, m.Name)
	} else {
		r.members[m.Name] = m
	}
	prev := r.cur.Load()
	next := &snapshot{hash: prev.hash, members: slices.SortedFunc(maps.Values(r.members), func(a, b Member) int {
		return strings.Compare(a.Name, b.Name)
	})}
	var owners []string
	for _, m := range next.members {
		if r.owns == nil || r.owns(m) {
			owners = append(owners, m.Name)
		}
	}
	if !slices.Equal(owners, prev.hash.Nodes()) {
		next.hash = r.newHash(owners)
	}
	r.cur.Store(next)
	r.logger.Debug("ring changed", "event", t.String(), "member", m.Name, "members", len(next.members))

	e := Event{Type: t, Member: m, Hash: next.hash}
	for w := range r.watchers {
		w.push(e)
	}
}

// events is Ring seen as memberlist's EventDelegate, kept off Ring's
// exported method set.
type events Ring

func (e *events) NotifyJoin(n *ml.Node)   { (*Ring)(e).apply(MemberJoined, n) }
func (e *events) NotifyLeave(n *ml.Node)  { (*Ring)(e).apply(MemberLeft, n) }
func (e *events) NotifyUpdate(n *ml.Node) { (*Ring)(e).apply(MemberUpdated, n) }

// metaDelegate hands memberlist this node's meta; the ring has no other
// user state to gossip.
type metaDelegate []byte

func (d metaDelegate) NodeMeta(limit int) []byte {
	if len(d) > limit {
		return nil // Validate keeps meta within MetaMaxSize
	}
	return d
}
func (metaDelegate) NotifyMsg([]byte)                           {}
func (metaDelegate) GetBroadcasts(overhead, limit int) [][]byte { return nil }
func (metaDelegate) LocalState(join bool) []byte                { return nil }
func (metaDelegate) MergeRemoteState(buf []byte, join bool)     {}

type watcher struct {
	mu    sync.Mutex
	queue []Event
	wake  chan struct{}
	out   chan Event
}

func (w *watcher) push(e Event) {
	w.mu.Lock()
	w.queue = append(w.queue, e)
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *watcher) run(ctx context.Context, done <-chan struct{}) {
	for {
		w.mu.Lock()
		batch := w.queue
		w.queue = nil
		w.mu.Unlock()
		for _, e := range batch {
			select {
			case w.out <- e:
			case <-ctx.Done():
				return
			case <-done:
				return
			}
		}
		select {
		case <-w.wake:
		case <-ctx.Done():
			return
		case <-done:
			return
		}
	}
}
