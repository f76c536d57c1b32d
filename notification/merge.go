package notification

import (
	"net/url"
	"strings"

	"github.com/relaybell/relaybell/store"
)

// maxTagName is the longest merge tag name; a longer run is plain text.
const maxTagName = 64

// mergeTags replaces the merge tags in s with the recipient's values. It runs
// once per field per push, so it makes one pass over s and allocates only
// when s holds at least one tag.
//
// Syntax: {name} or {name|fallback}.
//   - name is 1 to 64 ASCII letters, digits, '_', '-', '.' or ':'. Braces
//     around anything else (JSON such as {"a":1}, "{ }", "{}") are text and
//     are left exactly as written, as is a lone or unmatched brace.
//   - The fallback is the literal text between '|' and the closing '}': it
//     may be empty and may contain spaces and '|', but not '{' or '}'. Tags
//     do not nest: "{a|{b}}" is the text "{a|" followed by the tag {b} and
//     the text "}".
//
// Resolution:
//   - These names are subscriber attributes, matched case-insensitively:
//     external_id and externalId, country, language, timezone, device (of
//     the endpoint the push goes to) and subscriber_id. An attribute name
//     always means the attribute, never a tag of that name.
//   - Any other name is the subscriber's tag with exactly that key, or when
//     there is none, a tag whose key matches case-insensitively (the
//     smallest such key, so the result does not depend on map order).
//   - An unknown name or an empty value gives the fallback ("" without one).
//     A nil recipient resolves nothing.
//
// With query set (the notification's url) a subscriber's value is escaped
// with url.QueryEscape so it cannot break the link; the fallback is the
// sender's own text and goes in as written, like the rest of the url. In
// the title and body values go in as they are.
func mergeTags(s string, r *store.Recipient, query bool) string {
	i := strings.IndexByte(s, '{')
	if i < 0 {
		return s
	}
	var b strings.Builder
	done := 0 // s[:done] is already in b (or needs no copy while b is empty)
	for i >= 0 {
		// s[i] is '{'. Scan the name.
		j := i + 1
		for j < len(s) && j-i-1 <= maxTagName && isNameByte(s[j]) {
			j++
		}
		next := j // where the search for the next '{' resumes
		end := -1 // one past the closing '}' when s[i:end] is a tag
		var name, fallback string
		if n := j - i - 1; n >= 1 && n <= maxTagName && j < len(s) {
			name = s[i+1 : j]
			switch s[j] {
			case '}':
				end = j + 1
			case '|':
				k := j + 1
				for k < len(s) && s[k] != '}' && s[k] != '{' {
					k++
				}
				if k < len(s) && s[k] == '}' {
					fallback = s[j+1 : k]
					end = k + 1
				}
				next = k
			}
		}
		if end >= 0 {
			if b.Cap() == 0 {
				b.Grow(len(s) + 32)
			}
			b.WriteString(s[done:i])
			v, ok := lookupTag(name, r)
			switch {
			case !ok || v == "":
				b.WriteString(fallback)
			case query:
				b.WriteString(url.QueryEscape(v))
			default:
				b.WriteString(v)
			}
			done, next = end, end
		}
		if next >= len(s) {
			break
		}
		if k := strings.IndexByte(s[next:], '{'); k >= 0 {
			i = next + k
		} else {
			i = -1
		}
	}
	if b.Cap() == 0 {
		return s // braces, but no tag
	}
	b.WriteString(s[done:])
	return b.String()
}

// isNameByte reports whether c may appear in a merge tag name.
func isNameByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '_' || c == '-' || c == '.' || c == ':'
}

// lookupTag resolves a merge tag name against r (see mergeTags); ok is false
// when the name is unknown.
func lookupTag(name string, r *store.Recipient) (v string, ok bool) {
	if r == nil {
		return "", false
	}
	switch {
	case strings.EqualFold(name, "external_id"), strings.EqualFold(name, "externalId"):
		return r.Subscriber.ExternalID, true
	case strings.EqualFold(name, "country"):
		return r.Subscriber.Country, true
	case strings.EqualFold(name, "language"):
		return r.Subscriber.Language, true
	case strings.EqualFold(name, "timezone"):
		return r.Subscriber.Timezone, true
	case strings.EqualFold(name, "device"):
		return r.Endpoint.Device, true
	case strings.EqualFold(name, "subscriber_id"):
		return r.Subscriber.ID, true
	}
	tags := r.Subscriber.Tags
	if v, ok := tags[name]; ok {
		return v, true
	}
	key := ""
	for k, tv := range tags {
		if strings.EqualFold(k, name) && (!ok || k < key) {
			key, v, ok = k, tv, true
		}
	}
	return v, ok
}

// Merges reports whether a text a browser's payload takes from the content
// (title, body and url, version B's, the translations') holds a merge tag:
// only then does a payload read the recipient's subscriber.
func (c *Content) Merges() bool {
	texts := []string{c.Title, c.Body, c.URL}
	if c.B != nil {
		for _, t := range []*string{c.B.Title, c.B.Body, c.B.URL} {
			if t != nil {
				texts = append(texts, *t)
			}
		}
	}
	for _, t := range c.Translations {
		texts = append(texts, t.Title, t.Body)
	}
	for _, s := range texts {
		// A tag becomes its fallback, always shorter: mergeTags without a
		// recipient changes s exactly when s holds one.
		if mergeTags(s, nil, false) != s {
			return true
		}
	}
	return false
}
