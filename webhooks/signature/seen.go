package signature

import (
	"sync"
	"time"
)

// Seen remembers which deliveries were handled (rule 5 of spec 6.3). A
// receiver with several processes should back it with shared storage, for
// example a table with the delivery id as its primary key.
type Seen interface {
	// MarkSeen records id as handled at now and reports whether it had
	// already been recorded. It must be safe for concurrent use, and two
	// concurrent calls with one id must not both report false.
	MarkSeen(id string, now time.Time) (already bool)
	// Forget removes id, so that a delivery the receiver failed to handle
	// is handled when RelayBell retries it.
	Forget(id string)
}

// Defaults for NewMemorySeen.
const (
	// DefaultSeenWindow covers RelayBell's whole retry schedule (about
	// 10.5 hours, spec 6.4) with room for jitter and slow answers. Retries
	// carry a fresh timestamp, so remembering ids only for the 300 s
	// tolerance would let a retry of a handled delivery through.
	DefaultSeenWindow = 24 * time.Hour
	// DefaultSeenMax bounds memory: about 250 bytes a UUID, 25 MB in all.
	DefaultSeenMax = 100_000
)

var _ Seen = (*MemorySeen)(nil)

// MemorySeen is a Seen in process memory. It remembers an id for a window
// after it was first recorded and at most a fixed number of ids, dropping
// the oldest first. It forgets everything when the process ends and is
// not shared between processes. Safe for concurrent use.
type MemorySeen struct {
	window time.Duration
	maxIDs int

	mu    sync.Mutex
	ids   map[string]uint64 // id → seq of its live entry in queue
	queue []seenEntry       // in the order recorded; live from head on
	head  int
	seq   uint64
}

type seenEntry struct {
	id  string
	at  time.Time
	seq uint64
}

// NewMemorySeen returns a MemorySeen that remembers an id for window after
// it was recorded (zero or less: DefaultSeenWindow) and at most maxIDs ids
// (zero or less: DefaultSeenMax).
func NewMemorySeen(window time.Duration, maxIDs int) *MemorySeen {
	if window <= 0 {
		window = DefaultSeenWindow
	}
	if maxIDs <= 0 {
		maxIDs = DefaultSeenMax
	}
	return &MemorySeen{window: window, maxIDs: maxIDs, ids: make(map[string]uint64)}
}

// MarkSeen records id at now and reports whether it was already recorded.
// Ids recorded more than the window before now are forgotten first. A
// repeated id keeps its first time: the window runs from first handling.
func (m *MemorySeen) MarkSeen(id string, now time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for m.head < len(m.queue) && now.Sub(m.queue[m.head].at) > m.window {
		m.dropOldest()
	}
	if _, ok := m.ids[id]; ok {
		return true
	}
	m.seq++
	m.ids[id] = m.seq
	m.queue = append(m.queue, seenEntry{id: id, at: now, seq: m.seq})
	for len(m.queue)-m.head > m.maxIDs {
		m.dropOldest()
	}
	return false
}

// Forget removes id. Its place in the queue stays until it ages out, so
// memory stays bounded however often ids are forgotten and recorded again.
func (m *MemorySeen) Forget(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.ids, id)
}

// Len is the number of ids remembered.
func (m *MemorySeen) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.ids)
}

// dropOldest removes the oldest queue entry, and its id unless the id was
// forgotten and recorded again since (a newer entry owns it then). It
// compacts the queue once half of it is dropped entries. Callers hold mu.
func (m *MemorySeen) dropOldest() {
	e := m.queue[m.head]
	if m.ids[e.id] == e.seq {
		delete(m.ids, e.id)
	}
	m.queue[m.head] = seenEntry{}
	m.head++
	if m.head*2 >= len(m.queue) {
		n := copy(m.queue, m.queue[m.head:])
		clear(m.queue[n:])
		m.queue = m.queue[:n]
		m.head = 0
	}
}
