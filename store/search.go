package store

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// The notification search (ListQuery.Q) is folded here, in Go, and never by
// the database: SQLite's lower() folds only ASCII and PostgreSQL's follows
// the database's ctype, so the engines would otherwise disagree. Each store
// keeps SearchText(title, body) in a column, written with the title and the
// body, and lists the rows in which it contains FoldSearch(q) as a plain
// substring (instr, strpos).

// searchSep separates the title from the body in SearchText. U+FFFF is a
// noncharacter, which Unicode leaves to programs for internal use such as
// this; FoldSearch reads it as U+FFFD, so a folded query never holds it and
// never matches across the end of the title.
const (
	searchSepRune = '\uFFFF'
	searchSep     = string(searchSepRune)
)

// caseFold is full Unicode case folding (CaseFolding.txt, statuses C and
// F): "ß" and "ẞ" fold to "ss", "Σ", "σ" and "ς" to "σ". It is stateless.
var caseFold = cases.Fold()

// FoldSearch folds text for the notification search: the canonical caseless
// form of Unicode (D145: NFD, full case folding, then NFC rather than NFD,
// which keeps "e" from matching inside "é"), so that texts differing only
// in case or in how their accents are encoded match. The result is valid
// UTF-8 without NUL, which every engine stores and takes as a parameter:
// an invalid byte reads as U+FFFD, as encoding/json reads it in a title,
// and so do NUL and U+FFFF (the separator of SearchText).
func FoldSearch(s string) string {
	// strings.Map also turns each invalid byte into U+FFFD, and returns s
	// itself when nothing changes.
	s = strings.Map(func(r rune) rune {
		if r == 0 || r == searchSepRune {
			return utf8.RuneError
		}
		return r
	}, s)
	s = caseFold.String(norm.NFD.String(s))
	// x/text folds Cherokee lowercase to uppercase, as it should, but also
	// uppercase to lowercase, so the two would not meet: fold both to
	// uppercase, which CaseFolding.txt keeps for stability.
	s = strings.Map(func(r rune) rune {
		if 0x13A0 <= r && r <= 0x13FF || 0xAB70 <= r && r <= 0xABBF {
			return unicode.ToUpper(r)
		}
		return r
	}, s)
	return norm.NFC.String(s)
}

// SearchText is what the stores keep of a notification for the search: its
// folded title and folded body, apart, so that a query matches within one
// of them only. It is never empty, so an empty column marks a row written
// before the column existed.
func SearchText(title, body string) string {
	return FoldSearch(title) + searchSep + FoldSearch(body)
}
