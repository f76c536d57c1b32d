// Package ratelimit counts requests of the public routes against
// fixed-window limits that every API node shares (spec 8.1: 120 a minute per
// visitor IP on the browser SDK routes), without a store round trip per
// request.
//
// Each node counts in memory and, every sync interval, adds what it counted
// to the shared counters of the store (rate_counters, which the send limits
// also use) and reads back the totals, in one transaction for all its
// keys. A request is let through while the total last read plus what this
// node has counted since stays within the limit. So a request costs a map
// lookup under a mutex; the store sees one transaction per node and
// interval, whatever the traffic.
//
// The price is a bounded overrun: between two syncs each node admits up to
// the limit on what it last read, so n nodes together can let through up to
// n-1 intervals' worth of one node's admissions beyond the limit before
// they all see the total. With a 250 ms interval and a limit of 120 a
// minute, a visitor spreading requests over every node gets a few more in
// the first second, then none. The embedded mode runs the same code over
// SQLite with one node, where the count is exact.
package ratelimit

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/relaybell/relaybell/store"
)

// Store is the shared counters.
type Store interface {
	// AddRateCounts adds each count's N to its window's counter (0 reads it)
	// and returns the totals, in one transaction.
	AddRateCounts(ctx context.Context, counts []store.RateCount, now time.Time) ([]int64, error)
}

// DefaultSync is how often a node adds its counts to the shared ones.
const DefaultSync = 250 * time.Millisecond

// maxEntries bounds the keys a node remembers between syncs; past it, new
// keys are counted only by the shared counters at the next sync (no
// request is refused for want of memory).
const maxEntries = 200_000

// Limiter is one node's view of the shared counters.
type Limiter struct {
	st  Store
	log *slog.Logger

	// syncing serialises Sync: two at once would both add the same local
	// counts. Lock order: syncing before mu.
	syncing sync.Mutex
	mu      sync.Mutex
	entries map[string]*entry
}

// entry is one key's window as this node knows it.
type entry struct {
	limit  store.RateLimit
	start  time.Time // the window's start
	shared int64     // the shared total at the last sync (this node's synced counts included)
	local  int64     // counted here since the last sync
}

// New returns a limiter over st. Call Run (or Sync) to share its counts.
func New(st Store, logger *slog.Logger) *Limiter {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Limiter{st: st, log: logger, entries: make(map[string]*entry)}
}

// Take counts one request against l at now when l has room for it, by
// what this node knows, and returns the window's count after the request
// (or, when refused, the count that refused it).
func (lm *Limiter) Take(l store.RateLimit, now time.Time) (used int64, ok bool) {
	start := l.WindowEnd(now).Add(-l.Window)
	lm.mu.Lock()
	defer lm.mu.Unlock()
	e := lm.entries[l.Key]
	if e == nil || !e.start.Equal(start) {
		if e == nil && len(lm.entries) >= maxEntries {
			return 1, true
		}
		e = &entry{limit: l, start: start}
		lm.entries[l.Key] = e
	}
	if e.shared+e.local >= l.Max {
		return e.shared + e.local, false
	}
	e.local++
	return e.shared + e.local, true
}

// Sync adds this node's counts to the shared counters and reads back the
// totals of every key it knows in a current window; keys whose window has
// ended are forgotten. A failed sync keeps the counts for the next. Calls
// run one at a time.
func (lm *Limiter) Sync(ctx context.Context, now time.Time) error {
	lm.syncing.Lock()
	defer lm.syncing.Unlock()
	lm.mu.Lock()
	keys := make([]string, 0, len(lm.entries))
	for k, e := range lm.entries {
		if !now.Before(e.start.Add(e.limit.Window)) && e.local == 0 {
			delete(lm.entries, k)
			continue
		}
		keys = append(keys, k)
	}
	slices.Sort(keys) // every node locks shared rows in the same order
	counts := make([]store.RateCount, len(keys))
	for i, k := range keys {
		e := lm.entries[k]
		counts[i] = store.RateCount{Limit: e.limit, Start: e.start, N: e.local}
	}
	lm.mu.Unlock()
	if len(counts) == 0 {
		return nil
	}
	totals, err := lm.st.AddRateCounts(ctx, counts, now)
	if err != nil {
		return err
	}
	lm.mu.Lock()
	defer lm.mu.Unlock()
	for i, k := range keys {
		e := lm.entries[k]
		if e == nil || !e.start.Equal(counts[i].Start) {
			continue // a new window began meanwhile: it counts on its own
		}
		e.local -= counts[i].N // what was counted during the sync stays local
		e.shared = totals[i]
	}
	return nil
}

// Run syncs every interval until ctx ends, then once more.
func (lm *Limiter) Run(ctx context.Context, interval time.Duration, now func() time.Time) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			final, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			if err := lm.Sync(final, now()); err != nil {
				lm.log.Warn("sharing rate counts", "err", err)
			}
			cancel()
			return
		case <-t.C:
			if err := lm.Sync(ctx, now()); err != nil && ctx.Err() == nil {
				lm.log.Warn("sharing rate counts", "err", err)
			}
		}
	}
}
