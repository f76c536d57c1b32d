package store

import (
	"testing"

	"github.com/google/uuid"
)

// New rows' ids are UUIDs of version 7, each after the one before in
// string order, even within one millisecond, and spread over the shards
// as evenly as random ones: 64,000 give each shard its 1,000 within 30%
// (ten standard deviations).
func TestNewIDsInOrderAndSpread(t *testing.T) {
	prev := ""
	var shards [Shards]int
	for i := range 1_000 * Shards {
		id := NewID()
		u, err := uuid.Parse(id)
		if err != nil || u.Version() != 7 {
			t.Fatalf("id %d: %q (%v), want a UUID of version 7", i, id, err)
		}
		if id <= prev {
			t.Fatalf("id %d: %s after %s", i, id, prev)
		}
		prev = id
		shards[ShardOf(id)]++
	}
	for shard, n := range shards {
		if n < 700 || n > 1_300 {
			t.Errorf("shard %d holds %d of %d ids, want 700 to 1,300", shard, n, 1_000*Shards)
		}
	}
}

// Endpoint ids stay random in their first character, the push ledger's
// bucket: 1,000 of them use all 16 (a time-ordered id would use one).
func TestNewEndpointIDsInEveryBucket(t *testing.T) {
	buckets := map[byte]bool{}
	for range 1_000 {
		buckets[NewEndpointID()[0]] = true
	}
	if len(buckets) != 16 {
		t.Fatalf("1,000 endpoint ids begin with %d different characters, want 16", len(buckets))
	}
}
