package defcache

import "time"

// Expire makes c read the version at its next answer, as it does once its
// TTL passed (for the external tests, which the store's conformance suite
// keeps out of this package: it imports defcache).
func Expire(c *Store) {
	c.v.mu.Lock()
	c.v.checked = time.Now().Add(-2 * c.v.ttl)
	c.v.mu.Unlock()
}

// CachedVersion is the definitions version c last read.
func CachedVersion(c *Store) int64 {
	c.v.mu.Lock()
	defer c.v.mu.Unlock()
	return c.v.version
}
