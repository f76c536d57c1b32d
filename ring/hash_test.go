package ring

import (
	"fmt"
	"hash/fnv"
	"slices"
	"testing"
)

func testKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("notif-%d/%d/endpoint-%d", i/7, i%7, i)
	}
	return keys
}

func TestHashBalance(t *testing.T) {
	f := func(nodes []string) {
		t.Helper()
		h := NewHash(nodes)
		keys := testKeys(100_000)
		counts := map[string]int{}
		for _, k := range keys {
			counts[h.Owner(k)]++
		}
		even := float64(len(keys)) / float64(len(nodes))
		for _, n := range nodes {
			dev := (float64(counts[n]) - even) / even
			if dev < -0.15 || dev > 0.15 {
				t.Errorf("nodes %v: %s owns %d keys, %+.1f%% off even %.0f", nodes, n, counts[n], dev*100, even)
			}
		}
	}
	f([]string{"pusher-0", "pusher-1", "pusher-2"})
	f([]string{"a", "b", "c"})
	f([]string{"10.0.0.1:7946", "10.0.0.2:7946", "10.0.0.3:7946"})
	f([]string{"relaybell-pusher-7f9c4-abcde", "relaybell-pusher-7f9c4-fghij", "relaybell-pusher-7f9c4-klmno"})
}

func TestHashAddNodeMovesAboutAQuarter(t *testing.T) {
	before := NewHash([]string{"pusher-0", "pusher-1", "pusher-2"})
	after := NewHash([]string{"pusher-0", "pusher-1", "pusher-2", "pusher-3"})
	keys := testKeys(100_000)
	moved := 0
	for _, k := range keys {
		b, a := before.Owner(k), after.Owner(k)
		if b == a {
			continue
		}
		moved++
		if a != "pusher-3" {
			t.Fatalf("key %q moved from %s to %s, not to the new node", k, b, a)
		}
	}
	frac := float64(moved) / float64(len(keys))
	if frac < 0.25*0.85 || frac > 0.25*1.15 {
		t.Errorf("%.1f%% of keys moved, want about 25%%", frac*100)
	}
}

func TestHashRemoveNodeMovesOnlyItsKeys(t *testing.T) {
	before := NewHash([]string{"pusher-0", "pusher-1", "pusher-2", "pusher-3"})
	after := NewHash([]string{"pusher-0", "pusher-2", "pusher-3"})
	for _, k := range testKeys(100_000) {
		owners := before.Owners(k, 2)
		got := after.Owner(k)
		if owners[0] != "pusher-1" {
			if got != owners[0] {
				t.Fatalf("key %q of live node %s moved to %s", k, owners[0], got)
			}
			continue
		}
		if got != owners[1] {
			t.Fatalf("key %q of removed node went to %s, Owners said next was %s", k, got, owners[1])
		}
	}
}

func TestHashDeterministic(t *testing.T) {
	// Order and duplicates in the input do not matter; the same names give
	// the same owners in every build (and every process: no seed).
	a := NewHash([]string{"pusher-2", "pusher-0", "pusher-1"})
	b := NewHash([]string{"pusher-0", "pusher-1", "pusher-1", "", "pusher-2"})
	for _, k := range testKeys(10_000) {
		if a.Owner(k) != b.Owner(k) {
			t.Fatalf("key %q: %s vs %s", k, a.Owner(k), b.Owner(k))
		}
		if !slices.Equal(a.Owners(k, 3), b.Owners(k, 3)) {
			t.Fatalf("key %q: %v vs %v", k, a.Owners(k, 3), b.Owners(k, 3))
		}
	}
	// Pinned owners catch a change of hash function, which would move keys
	// between processes running different builds.
	pinned := map[string]string{
		"a":                    "pusher-2",
		"b":                    "pusher-1",
		"c":                    "pusher-1",
		"notif-1/0/endpoint-1": "pusher-2",
		"notif-2/3/endpoint-9": "pusher-0",
	}
	for k, want := range pinned {
		if got := a.Owner(k); got != want {
			t.Errorf("Owner(%q) = %s, pinned %s", k, got, want)
		}
	}
}

func TestHashStringIsFNV1a(t *testing.T) {
	for _, s := range []string{"", "a", "pusher-1#7", "notif/0/ep"} {
		f := fnv.New64a()
		f.Write([]byte(s))
		if got, want := hashString(s), fmix64(f.Sum64()); got != want {
			t.Errorf("hashString(%q) = %x, want %x", s, got, want)
		}
		if hashString(s) != hashBytes([]byte(s)) {
			t.Errorf("hashString and hashBytes differ on %q", s)
		}
	}
}

func TestHashOwners(t *testing.T) {
	h := NewHash([]string{"a", "b", "c"}, WithVirtualNodes(16))
	f := func(key string, n, want int) {
		t.Helper()
		got := h.Owners(key, n)
		if len(got) != want {
			t.Fatalf("Owners(%q, %d) = %v, want %d nodes", key, n, got, want)
		}
		if want > 0 && got[0] != h.Owner(key) {
			t.Fatalf("Owners(%q, %d)[0] = %s, Owner = %s", key, n, got[0], h.Owner(key))
		}
		seen := map[string]bool{}
		for _, g := range got {
			if seen[g] {
				t.Fatalf("Owners(%q, %d) = %v repeats %s", key, n, got, g)
			}
			seen[g] = true
		}
	}
	f("k", 0, 0)
	f("k", 1, 1)
	f("k", 2, 2)
	f("k", 3, 3)
	f("k", 9, 3)

	empty := NewHash(nil)
	if empty.Owner("k") != "" || empty.Owners("k", 2) != nil || empty.Len() != 0 {
		t.Fatalf("empty ring: Owner %q Owners %v", empty.Owner("k"), empty.Owners("k", 2))
	}
	if got := NewHash([]string{"solo"}).Owners("k", 3); !slices.Equal(got, []string{"solo"}) {
		t.Fatalf("one-node Owners = %v", got)
	}
	if got := h.Nodes(); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("Nodes = %v", got)
	}
}
