package onsite

import (
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"
)

// Limits of URL patterns.
const (
	MaxPatterns   = 20
	MaxPatternLen = 200
)

// Pattern is a URL pattern: `*` stands for any run of characters (none
// included), everything else for itself. A pattern that begins with a
// scheme ("https://") is matched against the whole page URL, any other
// against its path and query ("/blog/*", "*?utm_source=*"). A page
// matches when the whole of it matches, so "/blog" is that page only and
// "/blog*" the section.
type Pattern struct {
	text  string
	full  bool
	parts []string // the pattern split at its stars
}

// ParsePattern reads one pattern: 1 to MaxPatternLen characters of valid
// UTF-8, no control character or space, not only stars.
func ParsePattern(s string) (Pattern, error) {
	if s == "" || len(s) > MaxPatternLen {
		return Pattern{}, fmt.Errorf("a URL pattern is 1 to %d characters", MaxPatternLen)
	}
	if !utf8.ValidString(s) {
		return Pattern{}, fmt.Errorf("URL pattern %q is not valid UTF-8", s)
	}
	for _, r := range s {
		if r <= ' ' || r == 0x7f {
			return Pattern{}, fmt.Errorf("URL pattern %q holds a space or a control character", s)
		}
	}
	if strings.Trim(s, "*") == "" && s != "*" {
		return Pattern{}, fmt.Errorf("URL pattern %q: write * for every page", s)
	}
	full := strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://")
	if !full && !strings.HasPrefix(s, "/") && !strings.HasPrefix(s, "*") {
		return Pattern{}, fmt.Errorf("URL pattern %q begins with /, * or https://", s)
	}
	return Pattern{text: s, full: full, parts: strings.Split(s, "*")}, nil
}

// String is the pattern as written.
func (p Pattern) String() string { return p.text }

// Match reports whether the page URL matches: its path and query, or the
// whole URL for a pattern with a scheme. An unparsable URL matches
// nothing.
func (p Pattern) Match(page string) bool {
	subject := page
	if !p.full {
		u, err := url.Parse(page)
		if err != nil {
			return false
		}
		subject = u.EscapedPath()
		if subject == "" {
			subject = "/"
		}
		if u.RawQuery != "" {
			subject += "?" + u.RawQuery
		}
	}
	return globMatch(p.parts, subject)
}

// globMatch matches s against parts (a pattern split at its stars):
// the first part is a prefix, the last a suffix, and the ones between
// found in order, each at its leftmost place (which is always right for
// stars), so the work is linear in s for each part.
func globMatch(parts []string, s string) bool {
	if len(parts) == 1 {
		return parts[0] == s
	}
	first, last := parts[0], parts[len(parts)-1]
	if len(s) < len(first)+len(last) || !strings.HasPrefix(s, first) || !strings.HasSuffix(s, last) {
		return false
	}
	s = s[len(first) : len(s)-len(last)]
	for _, mid := range parts[1 : len(parts)-1] {
		i := strings.Index(s, mid)
		if i < 0 {
			return false
		}
		s = s[i+len(mid):]
	}
	return true
}

// Patterns are include and exclude patterns: a page is chosen when it
// matches an include pattern (or there are none) and no exclude one.
type Patterns struct {
	Include []Pattern
	Exclude []Pattern
}

// ParsePatterns reads include and exclude lists, at most MaxPatterns each.
func ParsePatterns(include, exclude []string) (Patterns, error) {
	var out Patterns
	for _, l := range []struct {
		name string
		in   []string
		out  *[]Pattern
	}{{"include", include, &out.Include}, {"exclude", exclude, &out.Exclude}} {
		if len(l.in) > MaxPatterns {
			return Patterns{}, fmt.Errorf("%s holds at most %d patterns", l.name, MaxPatterns)
		}
		for i, s := range l.in {
			p, err := ParsePattern(s)
			if err != nil {
				return Patterns{}, fmt.Errorf("%s[%d]: %w", l.name, i, err)
			}
			*l.out = append(*l.out, p)
		}
	}
	return out, nil
}

// Match reports whether the page is chosen.
func (ps Patterns) Match(page string) bool {
	in := len(ps.Include) == 0
	for _, p := range ps.Include {
		if p.Match(page) {
			in = true
			break
		}
	}
	if !in {
		return false
	}
	for _, p := range ps.Exclude {
		if p.Match(page) {
			return false
		}
	}
	return true
}
