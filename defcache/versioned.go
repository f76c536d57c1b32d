package defcache

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// versioned is what a cache keeps to trust its entries behind a store
// version: the version last read, when, and a generation that moves with
// every purge. A fill that read the store before a purge does not put its
// answer back (it holds an older generation), so a purge is never undone
// by a slow reader. mu guards the cache's entries as well.
type versioned struct {
	read   func(context.Context) (int64, error)
	what   string // the version's name, for the log
	ttl    time.Duration
	logger *slog.Logger
	drop   func() // drops the cache's entries; called with mu held

	mu      sync.Mutex
	version int64
	checked time.Time // when version was read; zero: never
	gen     uint64    // moves with every purge
	// refreshing serializes the version reads.
	refreshing sync.Mutex
}

// fill runs f with mu held, unless a purge came since gen: f stores what
// was read under generation gen.
func (v *versioned) fill(gen uint64, f func()) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.gen == gen {
		f()
	}
}

// purgeLocked drops every entry; mu is held.
func (v *versioned) purgeLocked() {
	v.gen++
	v.drop()
}

// fresh reads the version when the last read is older than the TTL (a TTL
// of 0: on every call) and purges when it moved. It returns the generation
// a fill must match to store its answer. A failed read purges and leaves
// the next call to read again: the caller reads the store.
func (v *versioned) fresh(ctx context.Context) (uint64, bool) {
	v.mu.Lock()
	if !v.checked.IsZero() && time.Since(v.checked) < v.ttl {
		gen := v.gen
		v.mu.Unlock()
		return gen, true
	}
	v.mu.Unlock()
	v.refreshing.Lock()
	defer v.refreshing.Unlock()
	v.mu.Lock()
	if !v.checked.IsZero() && time.Since(v.checked) < v.ttl && v.ttl > 0 { // read meanwhile
		gen := v.gen
		v.mu.Unlock()
		return gen, true
	}
	v.mu.Unlock()
	start := time.Now()
	n, err := v.read(ctx)
	v.mu.Lock()
	defer v.mu.Unlock()
	if err != nil {
		v.purgeLocked()
		v.checked = time.Time{}
		v.logger.Warn("cache: reading the "+v.what, "err", err)
		return v.gen, false
	}
	if n != v.version || v.checked.IsZero() {
		v.purgeLocked()
		v.version = n
	}
	v.checked = start
	return v.gen, true
}
