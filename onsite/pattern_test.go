package onsite

import (
	"strings"
	"testing"
)

func TestPatternMatch(t *testing.T) {
	f := func(pattern, page string, want bool) {
		t.Helper()
		p, err := ParsePattern(pattern)
		if err != nil {
			t.Fatalf("ParsePattern(%q): %v", pattern, err)
		}
		if got := p.Match(page); got != want {
			t.Fatalf("%q matches %q: %v, want %v", pattern, page, got, want)
		}
	}
	f("*", "https://shop.example/", true)
	f("/", "https://shop.example/", true)
	f("/", "https://shop.example", true)
	f("/blog", "https://shop.example/blog", true)
	f("/blog", "https://shop.example/blog/post", false)
	f("/blog*", "https://shop.example/blog/post", true)
	f("/blog/*", "https://shop.example/blog", false)
	f("/blog/*/comments", "https://shop.example/blog/a/b/comments", true)
	f("/blog/*/comments", "https://shop.example/blog/comments", false)
	f("*?utm_source=*", "https://shop.example/x?utm_source=mail", true)
	f("*?utm_source=*", "https://shop.example/x", false)
	f("https://shop.example/*", "https://shop.example/a", true)
	f("https://shop.example/*", "https://other.example/a", false)
	f("/a*a", "https://shop.example/a", false)
	f("/a*a", "https://shop.example/aa", true)
	f("/checkout", "https://shop.example/checkout#pay", true)
}

func TestParsePatternRefused(t *testing.T) {
	for _, s := range []string{"", "**", "blog", "/a b", "/a\x00", strings.Repeat("/", MaxPatternLen+1), "/\xff"} {
		if _, err := ParsePattern(s); err == nil {
			t.Errorf("ParsePattern(%q) accepted", s)
		}
	}
	if _, err := ParsePatterns(make([]string, MaxPatterns+1), nil); err == nil {
		t.Error("too many patterns accepted")
	}
}

func TestPatternsMatch(t *testing.T) {
	ps, err := ParsePatterns([]string{"/blog*", "/news*"}, []string{"/blog/private*"})
	if err != nil {
		t.Fatal(err)
	}
	for page, want := range map[string]bool{
		"https://s.example/blog/a":         true,
		"https://s.example/news":           true,
		"https://s.example/blog/private/x": false,
		"https://s.example/shop":           false,
	} {
		if got := ps.Match(page); got != want {
			t.Errorf("%s: %v, want %v", page, got, want)
		}
	}
	if !(Patterns{}).Match("https://s.example/any") {
		t.Error("no patterns: every page")
	}
}

// FuzzPattern: no pattern and page make ParsePattern or Match panic, a
// parsed pattern's text is what was given, and a star-free pattern that
// begins with / matches its own page.
func FuzzPattern(f *testing.F) {
	for _, s := range [][2]string{
		{"/blog/*", "https://s.example/blog/a"}, {"*", ""}, {"*?utm=*", "https://s.example/?utm=1"},
		{"https://s.example/*", "https://s.example/x"}, {"/a*b*c", "https://s.example/abc"},
		{"/%zz", "https://s.example/%zz"}, {"**/x", "::"}, {"/\u00e9*", "https://s.example/\u00e9t\u00e9"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, page string) {
		p, err := ParsePattern(pattern)
		if err != nil {
			return
		}
		if p.String() != pattern {
			t.Fatalf("String %q of %q", p.String(), pattern)
		}
		p.Match(page)
		if !strings.Contains(pattern, "*") && strings.HasPrefix(pattern, "/") && !strings.ContainsAny(pattern, "?#%") {
			if !p.Match("https://s.example"+pattern) && isPlainPath(pattern) {
				t.Fatalf("%q does not match its own page", pattern)
			}
		}
	})
}

// isPlainPath reports a path url.Parse gives back as written.
func isPlainPath(s string) bool {
	for _, r := range s {
		if !(r == '/' || r == '-' || r == '_' || r == '.' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return !strings.Contains(s, "//")
}
