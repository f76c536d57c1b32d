package ring

import (
	"fmt"
	"hash/fnv"
	"testing"
)

func BenchmarkHashOwner(b *testing.B) {
	for _, nodes := range []int{3, 16, 128} {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			names := make([]string, nodes)
			for i := range names {
				names[i] = fmt.Sprintf("pusher-%d", i)
			}
			h := NewHash(names)
			keys := testKeys(1024)
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					_ = h.Owner(keys[i&1023])
					i++
				}
			})
		})
	}
}

// BenchmarkHashKey compares the inlined FNV-1a with hash/fnv, which
// allocates for the []byte conversion and the hasher.
func BenchmarkHashKey(b *testing.B) {
	key := "0190d5a4-7c1e-7f3a-9b2e-3c4d5e6f7a8b/12/0190d5a4-7c1e-7f3a-9b2e-3c4d5e6f7a8c"
	b.Run("inline", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = hashString(key)
		}
	})
	b.Run("hash/fnv", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			f := fnv.New64a()
			f.Write([]byte(key))
			_ = fmix64(f.Sum64())
		}
	})
}

func BenchmarkNewHash(b *testing.B) {
	names := make([]string, 16)
	for i := range names {
		names[i] = fmt.Sprintf("pusher-%d", i)
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = NewHash(names)
	}
}
