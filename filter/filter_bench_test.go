package filter

import (
	"fmt"
	"testing"
)

// benchFilters is a typical segment: a country list, a language, a page and
// a tag.
var benchFilters = Filters{Rules: []Rule{
	rule("country", "in", List("US", "CA", "GB", "IE", "AU", "NZ", "DE", "FR", "NL", "SE")),
	rule("language", "neq", Text("de-DE")),
	rule("url", "contains", List("/Pricing", "/checkout")),
	rule("tag:plan", "neq", Text("free")),
}}

func benchSubscribers() []Attributes {
	countries := []string{"US", "BR", "GB", "IN", "DE", "JP"}
	urls := []string{
		"https://shop.example.com/pricing?plan=pro",
		"https://shop.example.com/blog/how-we-ship-notifications-at-scale",
		"https://shop.example.com/CHECKOUT/step-2",
	}
	subs := make([]Attributes, 64)
	for i := range subs {
		subs[i] = Attributes{
			Country:    countries[i%len(countries)],
			Language:   "en-US",
			URL:        urls[i%len(urls)],
			ExternalID: fmt.Sprintf("user-%d", i),
			Tags:       map[string]string{"plan": []string{"free", "pro", "team"}[i%3]},
		}
	}
	return subs
}

// BenchmarkMatch compares evaluating the filters as written with the
// precompiled Matcher that fan-out uses per subscriber.
func BenchmarkMatch(b *testing.B) {
	subs := benchSubscribers()
	for _, mode := range []string{"all", "any"} {
		fs := benchFilters
		fs.Mode = mode
		b.Run(mode+"/uncompiled", func(b *testing.B) {
			b.ReportAllocs()
			n := 0
			for i := 0; b.Loop(); i++ {
				if fs.Match(subs[i%len(subs)]) {
					n++
				}
			}
			_ = n
		})
		b.Run(mode+"/compiled", func(b *testing.B) {
			m := Compile(fs)
			b.ReportAllocs()
			n := 0
			for i := 0; b.Loop(); i++ {
				if m.Match(subs[i%len(subs)]) {
					n++
				}
			}
			_ = n
		})
		b.Run(mode+"/compiled-parallel", func(b *testing.B) {
			m := Compile(fs)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					m.Match(subs[i%len(subs)])
					i++
				}
			})
		})
	}
}

// TestMatchDoesNotAllocate guards the hot path: evaluation must not allocate.
func TestMatchDoesNotAllocate(t *testing.T) {
	subs := benchSubscribers()
	for _, fs := range []Filters{benchFilters, {Mode: "any", Rules: benchFilters.Rules}, {
		Rules: []Rule{rule("url", "contains", Text("\u212aÉ")), rule("tag:x", "exists", Value{}), rule("Country", "EQ", Text("US"))},
	}} {
		m := Compile(fs)
		i := 0
		if n := testing.AllocsPerRun(1000, func() {
			fs.Match(subs[i%len(subs)])
			fs.Excludes(subs[i%len(subs)])
			i++
		}); n != 0 {
			t.Errorf("Filters.Match allocates %v times per run", n)
		}
		if n := testing.AllocsPerRun(1000, func() {
			m.Match(subs[i%len(subs)])
			m.Excludes(subs[i%len(subs)])
			i++
		}); n != 0 {
			t.Errorf("Matcher.Match allocates %v times per run", n)
		}
	}
}

// BenchmarkInList compares scanning an `in` list with a set lookup at several
// list lengths; setThreshold is chosen from it.
func BenchmarkInList(b *testing.B) {
	for _, n := range []int{2, 4, 5, 6, 8, 16, 64} {
		values := make([]string, n)
		for i := range values {
			values[i] = fmt.Sprintf("C%d", i)
		}
		probes := []string{"C1", values[n-1], "US", "XX"}
		scan := compiledRule{kind: fieldCountry, values: values}
		set := compiledRule{kind: fieldCountry, values: values, set: map[string]struct{}{}}
		for _, v := range values {
			set.set[v] = struct{}{}
		}
		for name, r := range map[string]*compiledRule{"scan": &scan, "set": &set} {
			b.Run(fmt.Sprintf("%s/%d", name, n), func(b *testing.B) {
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					r.has(probes[i%len(probes)])
				}
			})
		}
	}
}
