package notification

import "testing"

// BenchmarkMergeTags compares the fast path (a title without tags, returned
// as is) with a title that has two tags to replace.
func BenchmarkMergeTags(b *testing.B) {
	for _, bc := range []struct{ name, title string }{
		{"no_tags", "Big summer sale: 50% off everything until Sunday"},
		{"two_tags", "Hi {first_name|there}, big summer sale in {country}: 50% off until Sunday"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					_ = mergeTags(bc.title, mergeRecipient, false)
				}
			})
		})
	}
}
