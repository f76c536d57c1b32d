package ring

import (
	"slices"
	"strconv"
)

// DefaultVirtualNodes is the number of points each node gets on a Hash.
const DefaultVirtualNodes = 128

// HashOption configures NewHash.
type HashOption func(*hashConfig)

type hashConfig struct {
	vnodes int
}

// WithVirtualNodes sets how many points each node gets on the ring
// (default DefaultVirtualNodes, 128). More points spread keys more evenly at
// the cost of memory and build time. Values below 1 keep the default.
func WithVirtualNodes(n int) HashOption {
	return func(c *hashConfig) {
		if n > 0 {
			c.vnodes = n
		}
	}
}

// Hash is an immutable consistent hash ring with virtual nodes. Every process
// that builds a Hash from the same node names and options computes the same
// owners: points and keys are hashed with FNV-1a 64 followed by a fixed
// 64-bit finalizer, with no per-process seed.
//
// A membership change builds a new Hash; a Hash is safe for concurrent use.
type Hash struct {
	nodes  []string // sorted, distinct
	points []uint64 // sorted
	owners []int32  // owners[i] indexes nodes for points[i]
}

// NewHash builds a ring over the distinct non-empty names in nodes.
func NewHash(nodes []string, opts ...HashOption) *Hash {
	cfg := hashConfig{vnodes: DefaultVirtualNodes}
	for _, o := range opts {
		o(&cfg)
	}

	names := make([]string, 0, len(nodes))
	for _, n := range nodes {
		if n != "" {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)

	type point struct {
		hash  uint64
		owner int32
	}
	pts := make([]point, 0, len(names)*cfg.vnodes)
	buf := make([]byte, 0, 64)
	for i, name := range names {
		for v := range cfg.vnodes {
			buf = append(buf[:0], name...)
			buf = append(buf, '#')
			buf = strconv.AppendInt(buf, int64(v), 10)
			pts = append(pts, point{hash: hashBytes(buf), owner: int32(i)})
		}
	}
	// Ties (vanishingly rare) break on the node index, which is itself
	// ordered by name, so every process agrees.
	slices.SortFunc(pts, func(a, b point) int {
		switch {
		case a.hash < b.hash:
			return -1
		case a.hash > b.hash:
			return 1
		}
		return int(a.owner - b.owner)
	})

	h := &Hash{
		nodes:  names,
		points: make([]uint64, len(pts)),
		owners: make([]int32, len(pts)),
	}
	for i, p := range pts {
		h.points[i] = p.hash
		h.owners[i] = p.owner
	}
	return h
}

// Nodes returns the ring's node names, sorted. The caller may modify the
// returned slice.
func (h *Hash) Nodes() []string { return slices.Clone(h.nodes) }

// Len is the number of nodes on the ring.
func (h *Hash) Len() int { return len(h.nodes) }

// Owner returns the node owning key: the first point clockwise from the
// key's hash. It returns "" on an empty ring.
func (h *Hash) Owner(key string) string {
	if len(h.points) == 0 {
		return ""
	}
	return h.nodes[h.owners[h.search(hashString(key))]]
}

// Owners returns up to n distinct nodes for key in ring order: the owner
// first, then the node that would own key if the ones before it were gone.
func (h *Hash) Owners(key string, n int) []string {
	n = min(n, len(h.nodes))
	if n <= 0 {
		return nil
	}
	out := make([]string, 0, n)
	start := h.search(hashString(key))
	for i := 0; i < len(h.points) && len(out) < n; i++ {
		name := h.nodes[h.owners[(start+i)%len(h.points)]]
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

// search returns the index of the first point >= x, wrapping to 0.
func (h *Hash) search(x uint64) int {
	lo, hi := 0, len(h.points)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if h.points[m] < x {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == len(h.points) {
		return 0
	}
	return lo
}

const (
	fnvOffset64 = 14695981039346656037
	fnvPrime64  = 1099511628211
)

// hashString is FNV-1a 64 over s followed by fmix64. It is written out
// instead of using hash/fnv so Owner does not allocate.
func hashString(s string) uint64 {
	h := uint64(fnvOffset64)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime64
	}
	return fmix64(h)
}

func hashBytes(b []byte) uint64 {
	h := uint64(fnvOffset64)
	for _, c := range b {
		h ^= uint64(c)
		h *= fnvPrime64
	}
	return fmix64(h)
}

// fmix64 is MurmurHash3's finalizer. FNV-1a alone leaves names that differ
// only in their last bytes (pusher-1#7, pusher-1#8) clustered on the ring;
// the finalizer spreads them.
func fmix64(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}
