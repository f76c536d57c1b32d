package store

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestFoldSearch(t *testing.T) {
	f := func(in, want string) {
		t.Helper()
		if got := FoldSearch(in); got != want {
			t.Errorf("FoldSearch(%q) = %q, want %q", in, got, want)
		}
	}
	f("", "")
	f("Spring SALE", "spring sale")
	f("Über", "über")
	f("U\u0308ber", "über") // decomposed: composed again
	f("Straße", "strasse")
	f("STRAẞE", "strasse")
	f("ΟΔΟΣ", "οδοσ")
	f("οδος", "οδοσ")
	f("ﬁne", "fine")
	f("İ", "i\u0307")
	f("ΐ", "ΐ")
	f("Ꮓꮓᏸ", "ᏃᏃᏰ") // Cherokee folds to uppercase
	f("lines\nand\ttabs", "lines\nand\ttabs")
	f("bad \xff\xfe", "bad \uFFFD\uFFFD")
	f("\xed\xa0\x80", "\uFFFD\uFFFD\uFFFD") // a surrogate half: three invalid bytes
	f("a\x00b", "a\uFFFDb")
	f("a\uFFFFb", "a\uFFFDb")
	f("a\uFFFDb", "a\uFFFDb")
}

// Every character folds as its case variants do (its orbit under simple
// case folding), and a folded text folds to itself. Planes 0 and 1 hold
// every cased character.
func TestFoldSearchCaseVariants(t *testing.T) {
	for r := rune(0); r < 0x20000; r++ {
		if 0xD800 <= r && r <= 0xDFFF {
			continue
		}
		folded := FoldSearch(string(r))
		if again := FoldSearch(folded); again != folded {
			t.Errorf("%U folds to %q, which folds to %q", r, folded, again)
		}
		for v := unicode.SimpleFold(r); v != r; v = unicode.SimpleFold(v) {
			if got := FoldSearch(string(v)); got != folded {
				t.Errorf("%U folds to %q, its case variant %U to %q", r, folded, v, got)
			}
		}
	}
}

func TestSearchText(t *testing.T) {
	f := func(title, body, want string) {
		t.Helper()
		if got := SearchText(title, body); got != want {
			t.Errorf("SearchText(%q, %q) = %q, want %q", title, body, got, want)
		}
	}
	f("", "", "\uFFFF")
	f("Über sale", "Everything MUST go", "über sale\uFFFFeverything must go")
	f("a\uFFFF", "b", "a\uFFFD\uFFFFb")
}

// FuzzFoldSearch checks that any text folds into what every engine stores
// and takes as a parameter, and that no folded query can hold the separator
// of SearchText.
func FuzzFoldSearch(f *testing.F) {
	for _, s := range []string{"Über", "Straße", "ΟΔΟΣ", "\xff", "a\x00b", "\uFFFF", "\u0345\u0301"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := FoldSearch(s)
		if !utf8.ValidString(got) || strings.ContainsRune(got, 0) || strings.Contains(got, searchSep) {
			t.Fatalf("FoldSearch(%q) = %q", s, got)
		}
		if s != "" && got == "" {
			t.Fatalf("FoldSearch(%q) is empty", s)
		}
		if again := FoldSearch(got); again != got {
			t.Fatalf("FoldSearch(%q) = %q, folded again %q", s, got, again)
		}
	})
}

// BenchmarkSearchText is what folding adds to each write of a title and a
// body.
func BenchmarkSearchText(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		SearchText("Über sale: everything must go", "Straße fest, this weekend only. Bring a chair and a friend!")
	}
}
