package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/relaybell/relaybell/store"
)

// Scopes of spec 5.
const (
	ScopeFull             = "full"
	ScopeSend             = "send"
	ScopeEventsWrite      = "events:write"
	ScopeSubscribersRead  = "subscribers:read"
	ScopeSubscribersWrite = "subscribers:write"
	ScopeSegmentsWrite    = "segments:write"
	ScopeSettingsWrite    = "settings:write"
	ScopeWebhooksWrite    = "webhooks:write"
)

// Scopes lists every scope a key may hold, in the spec's order.
func Scopes() []string {
	return []string{ScopeFull, ScopeSend, ScopeEventsWrite, ScopeSubscribersRead,
		ScopeSubscribersWrite, ScopeSegmentsWrite, ScopeSettingsWrite, ScopeWebhooksWrite}
}

// hasScope reports whether a key's scopes allow a route's. Keys made before
// scopes existed (no scopes) have full access (spec 5, item 5).
func hasScope(have []string, need string) bool {
	return need == "" || len(have) == 0 || slices.Contains(have, ScopeFull) || slices.Contains(have, need)
}

// touchEvery is how often last_used_at is written per key at most.
const touchEvery = time.Minute

// negativeTTL is how long an unknown key is remembered as unknown.
const negativeTTL = 5 * time.Second

// authenticate resolves the Bearer key of a key route and checks, in order:
// present (401 not_authenticated), known and not revoked (401
// invalid_api_key), not expired (401 api_key_expired), account not
// suspended (403 account_suspended), scope (403 insufficient_scope).
func (a *API) authenticate(r *request) error {
	token, ok := bearer(r.fc.Request.Header.Peek("Authorization"))
	if !ok {
		return errCode(CodeNotAuthenticated)
	}
	if !plausibleKey(token) {
		return errCode(CodeInvalidAPIKey)
	}
	sum := sha256.Sum256(token)
	hash := hex.EncodeToString(sum[:])
	owner, found, err := a.lookupKey(r.ctx, hash, r.now)
	if err != nil {
		return err
	}
	if !found || owner.Key.RevokedAt != nil {
		return errCode(CodeInvalidAPIKey)
	}
	if owner.Key.ExpiresAt != nil && !owner.Key.ExpiresAt.After(r.now) {
		return errCode(CodeAPIKeyExpired)
	}
	if owner.Account.Suspended {
		return errCode(CodeAccountSuspended)
	}
	if !hasScope(owner.Key.Scopes, r.route.scope) {
		return insufficientScope(r.route.scope)
	}
	r.owner = owner
	a.touchKey(owner.Key.ID, r.now)
	return nil
}

// lookupKey answers from the cache or the store; store failures are not
// cached and answer 500. What the store answers is cached under the cache
// generation of before the read, so an answer read before a purge is not
// kept after it (see keyCache).
func (a *API) lookupKey(ctx context.Context, hash string, now time.Time) (store.KeyOwner, bool, error) {
	if owner, found, ok := a.keys.get(hash, now); ok {
		a.metrics.keyCache.WithLabelValues("hit").Inc()
		return owner, found, nil
	}
	a.metrics.keyCache.WithLabelValues("miss").Inc()
	gen := a.keys.generation()
	owner, err := a.st.KeyOwner(ctx, hash)
	switch {
	case errors.Is(err, store.ErrNotFound):
		a.keys.put(hash, store.KeyOwner{}, false, now, gen)
		return store.KeyOwner{}, false, nil
	case err != nil:
		return store.KeyOwner{}, false, fmt.Errorf("looking up api key: %w", err)
	}
	a.keys.put(hash, owner, true, now, gen)
	return owner, true, nil
}

// touchKey records last_used_at at most once a minute per key, off the
// request's path. When too many updates are in flight it skips this one;
// the next use after a minute tries again.
func (a *API) touchKey(id string, now time.Time) {
	if !a.keys.shouldTouch(id, now) {
		return
	}
	select {
	case a.touchSlots <- struct{}{}:
	default:
		a.keys.untouch(id)
		return
	}
	a.touches.Add(1)
	go func() {
		defer func() { <-a.touchSlots; a.touches.Done() }()
		ctx, cancel := context.WithTimeout(a.base, 5*time.Second)
		defer cancel()
		if err := a.st.TouchAPIKey(ctx, id, now); err != nil && !errors.Is(err, context.Canceled) {
			a.log.Warn("updating api key last use", "key_id", id, "err", err)
		}
	}()
}

// checkAdmin compares the admin Bearer token in constant time (hashes of
// equal length, so not even the length leaks).
func (a *API) checkAdmin(r *request) error {
	token, ok := bearer(r.fc.Request.Header.Peek("Authorization"))
	if !ok {
		return errCode(CodeNotAuthenticated)
	}
	got := sha256.Sum256(token)
	want := sha256.Sum256([]byte(a.cfg.AdminToken))
	if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
		return errCode(CodeInvalidAPIKey)
	}
	return nil
}

// bearer extracts the credentials of "Bearer <token>" (scheme in any case).
func bearer(h []byte) ([]byte, bool) {
	const scheme = "bearer "
	if len(h) <= len(scheme) || !bytes.EqualFold(h[:len(scheme)], []byte(scheme)) {
		return nil, false
	}
	tok := bytes.TrimSpace(h[len(scheme):])
	return tok, len(tok) > 0
}

// plausibleKey rejects, without a store lookup, what cannot be a key.
func plausibleKey(tok []byte) bool {
	if len(tok) > 256 {
		return false
	}
	for _, c := range tok {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// keyCache remembers resolved keys (and, briefly, unknown ones) by hash,
// and when each key's last use was last written.
//
// Every node of a cluster drops its entries when the store's auth version
// moves (authwatch.go), and a node drops them at once after a change it
// made itself (purge). A lookup that read the store before such a purge
// and comes back after it must not put what it read back: every purge
// moves the generation, a lookup takes the generation before it reads the
// store, and put keeps only answers of the current generation.
//
// With trustFor set (the auth version is polled), entries are served only
// until trustFor after the start of the last successful read of the auth
// version: a node that cannot read it asks the store for every key, and
// so cannot miss a change for longer than that.
type keyCache struct {
	ttl, negTTL time.Duration
	max         int
	trustFor    time.Duration // 0: no bound (the auth version is not polled)

	mu         sync.Mutex
	entries    map[string]keyEntry
	touched    map[string]time.Time // key id -> last last_used_at write
	gen        uint64               // moves with every purge
	version    int64                // the store's auth version last read (0: none yet)
	trustUntil time.Time            // with trustFor: entries are served before it
}

type keyEntry struct {
	owner   store.KeyOwner
	found   bool
	expires time.Time
}

func newKeyCache(ttl time.Duration, max int) *keyCache {
	return &keyCache{
		ttl:     ttl,
		negTTL:  min(ttl, negativeTTL),
		max:     max,
		entries: make(map[string]keyEntry),
		touched: make(map[string]time.Time),
	}
}

// get returns a live entry; ok is false on a miss, and on every lookup
// while the auth version has not been read for too long.
func (c *keyCache) get(hash string, now time.Time) (owner store.KeyOwner, found, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.trustFor > 0 && !now.Before(c.trustUntil) {
		return store.KeyOwner{}, false, false
	}
	e, ok := c.entries[hash]
	if !ok || !now.Before(e.expires) {
		return store.KeyOwner{}, false, false
	}
	return e.owner, e.found, true
}

// generation is the cache generation to give put for what the store
// answers from now on.
func (c *keyCache) generation() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

// put caches a store answer read in generation gen; an answer read before
// the last purge is dropped.
func (c *keyCache) put(hash string, owner store.KeyOwner, found bool, now time.Time, gen uint64) {
	ttl := c.ttl
	if !found {
		ttl = c.negTTL
	}
	if ttl <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return
	}
	if len(c.entries) >= c.max {
		c.evict(now)
	}
	c.entries[hash] = keyEntry{owner: owner, found: found, expires: now.Add(ttl)}
}

// evict drops expired entries and, if that was not enough, a tenth of the
// rest (map order is random enough for a cache this simple).
func (c *keyCache) evict(now time.Time) {
	for h, e := range c.entries {
		if !now.Before(e.expires) {
			delete(c.entries, h)
		}
	}
	drop := len(c.entries) - c.max + max(c.max/10, 1)
	for h := range c.entries {
		if drop <= 0 {
			break
		}
		delete(c.entries, h)
		drop--
	}
}

// purge forgets every key, so account and key changes take effect at once:
// lookups in flight do not put what they read back.
func (c *keyCache) purge() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.purgeLocked()
}

func (c *keyCache) purgeLocked() {
	clear(c.entries)
	c.gen++
}

// observe records the auth version v, read by a read that started at
// start: when it is not the one last read the cache is purged (changed).
// Either way the entries are trusted until start + trustFor. Only one
// goroutine at a time calls it (New, then the poller).
func (c *keyCache) observe(v int64, start time.Time) (changed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v != c.version {
		c.version = v
		c.purgeLocked()
		changed = true
	}
	if until := start.Add(c.trustFor); until.After(c.trustUntil) {
		c.trustUntil = until
	}
	return changed
}

// shouldTouch reports whether key id's last use is due to be written, and
// if so marks it written at now.
func (c *keyCache) shouldTouch(id string, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if last, ok := c.touched[id]; ok && now.Sub(last) < touchEvery && now.Sub(last) >= 0 {
		return false
	}
	if len(c.touched) >= c.max {
		clear(c.touched)
	}
	c.touched[id] = now
	return true
}

// untouch forgets a planned write that was skipped.
func (c *keyCache) untouch(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.touched, id)
}
