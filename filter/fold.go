package filter

import (
	"unicode"
	"unicode/utf8"
)

// Case-insensitive matching for `contains` uses Unicode simple case folding,
// the same equivalence as strings.EqualFold: two runes are equal when they are
// in the same SimpleFold orbit. Each rune is mapped to the smallest rune of
// its orbit, so a needle can be folded once (Compile) and compared rune by
// rune without allocating. Invalid UTF-8 decodes to utf8.RuneError on both
// sides, identically in the compiled and uncompiled paths.

// foldRune returns the canonical representative of r's case-folding orbit.
func foldRune(r rune) rune {
	if r < utf8.RuneSelf {
		if 'a' <= r && r <= 'z' {
			return r - ('a' - 'A')
		}
		return r
	}
	lowest := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		if f < lowest {
			lowest = f
		}
	}
	return lowest
}

// nextFolded decodes the first rune of s and returns it folded with its width.
func nextFolded(s string) (rune, int) {
	if c := s[0]; c < utf8.RuneSelf {
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		return rune(c), 1
	}
	r, w := utf8.DecodeRuneInString(s)
	return foldRune(r), w
}

// foldNeedle folds every rune of s, for containsFolded.
func foldNeedle(s string) []rune {
	out := make([]rune, 0, len(s))
	for s != "" {
		r, w := nextFolded(s)
		out = append(out, r)
		s = s[w:]
	}
	return out
}

// containsFold reports whether needle occurs in h, ignoring case. An empty
// needle is contained in everything.
func containsFold(h, needle string) bool {
	if isASCII(needle) && isASCII(h) {
		return containsASCIIFold(h, needle)
	}
	for {
		if hasPrefixFold(h, needle) {
			return true
		}
		if h == "" {
			return false
		}
		_, w := nextFolded(h)
		h = h[w:]
	}
}

func hasPrefixFold(s, needle string) bool {
	for needle != "" {
		if s == "" {
			return false
		}
		sr, sw := nextFolded(s)
		nr, nw := nextFolded(needle)
		if sr != nr {
			return false
		}
		s, needle = s[sw:], needle[nw:]
	}
	return true
}

// folded is a contains needle prepared once by Compile.
type folded struct {
	runes []rune // every rune through foldRune
	ascii string // the needle upper-cased when it is all ASCII, else ""
}

func newFolded(s string) folded {
	n := folded{runes: foldNeedle(s)}
	if isASCII(s) {
		n.ascii = string(n.runes)
	}
	return n
}

// in reports whether the needle occurs in h, exactly as containsFold does.
func (n *folded) in(h string) bool {
	if n.ascii != "" && isASCII(h) {
		return containsASCIIFold(h, n.ascii)
	}
	return containsFolded(h, n.runes)
}

// containsFolded is containsFold with a needle already passed through
// foldNeedle.
func containsFolded(h string, needle []rune) bool {
	for {
		if hasPrefixFolded(h, needle) {
			return true
		}
		if h == "" {
			return false
		}
		_, w := nextFolded(h)
		h = h[w:]
	}
}

func hasPrefixFolded(s string, needle []rune) bool {
	for _, nr := range needle {
		if s == "" {
			return false
		}
		sr, sw := nextFolded(s)
		if sr != nr {
			return false
		}
		s = s[sw:]
	}
	return true
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func upperASCII(c byte) byte {
	if 'a' <= c && c <= 'z' {
		return c - ('a' - 'A')
	}
	return c
}

// containsASCIIFold is containsFold for an ASCII h and needle, where simple
// case folding is ASCII upper-casing. The needle need not be upper-cased.
func containsASCIIFold(h, needle string) bool {
	if needle == "" {
		return true
	}
	first := upperASCII(needle[0])
	for i := 0; i+len(needle) <= len(h); i++ {
		if upperASCII(h[i]) != first {
			continue
		}
		j := 1
		for j < len(needle) && upperASCII(h[i+j]) == upperASCII(needle[j]) {
			j++
		}
		if j == len(needle) {
			return true
		}
	}
	return false
}
