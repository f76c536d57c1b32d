package notification

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/relaybell/relaybell/store"
	"github.com/relaybell/relaybell/webpush"
)

// MaxPayload is the longest encoded Payload, in bytes, that one push can
// carry: the plaintext of one 4,096-byte RFC 8291 record less its header,
// padding delimiter and tag (webpush.MaxPayloadSize, 3,993 bytes).
const MaxPayload = webpush.MaxPayloadSize

// ellipsis ends a text cut to fit a push.
const ellipsis = "…"

// placeholderID stands for the notification and endpoint ids when a send's
// size is checked before they are known: both are 36-character UUIDs.
const placeholderID = "00000000-0000-0000-0000-000000000000"

// Encode is p as the pusher encrypts it: JSON without HTML escaping, so a
// link's '&' costs one byte, not six.
func (p Payload) Encode() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(p); err != nil {
		return nil, fmt.Errorf("encoding payload: %w", err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// PushPayload is the encoded Payload for one browser. A send passed
// checkSize, so only a recipient's merge-tag values can make it longer
// than MaxPayload; then it is cut to fit, never refused (see fit).
func (c *Content) PushPayload(notificationID string, r *store.Recipient, variant string) ([]byte, error) {
	p := c.Payload(notificationID, r, variant)
	b, err := p.Encode()
	if err != nil || len(b) <= MaxPayload {
		return b, err
	}
	return c.fit(p, variant, r)
}

// fit cuts p until its encoding holds at most MaxPayload bytes. The longer
// of title and body is cut first, then the other, each at a rune boundary
// and ending in an ellipsis (or emptied when even the ellipsis is too
// long). A link is never cut, which would break it: when the texts are
// empty and p is still too long, the url goes back to its merge tags'
// fallbacks, the form checkSize let through. A payload that does not fit
// even then (content stored before the check) is returned too long, and
// webpush refuses it.
func (c *Content) fit(p Payload, variant string, r *store.Recipient) ([]byte, error) {
	texts := []*string{&p.Title, &p.Body}
	if len(p.Body) > len(p.Title) {
		texts[0], texts[1] = texts[1], texts[0]
	}
	for _, s := range texts {
		if b, err := p.Encode(); err != nil || len(b) <= MaxPayload {
			return b, err
		}
		whole := *s
		bounds := runeBounds(whole)
		// The longest cut that fits: once the first k runes are too long,
		// so are more, so search for the first k that is too long (whole
		// is, with or without the ellipsis).
		k := sort.Search(len(bounds), func(k int) bool {
			*s = whole[:bounds[k]] + ellipsis
			b, err := p.Encode()
			return err != nil || len(b) > MaxPayload
		})
		if k > 0 {
			*s = whole[:bounds[k-1]] + ellipsis
			return p.Encode()
		}
		*s = ""
	}
	if b, err := p.Encode(); err != nil || len(b) <= MaxPayload {
		return b, err
	}
	language := ""
	if r != nil {
		language = r.Endpoint.Language
	}
	p.URL = c.payload("", "", language, variant, nil).URL
	return p.Encode()
}

// runeBounds lists the byte offsets at which s can be cut without
// splitting a rune: 0, every rune start after it, and len(s).
func runeBounds(s string) []int {
	bounds := make([]int, 0, len(s)+1)
	for i := range s {
		bounds = append(bounds, i)
	}
	return append(bounds, len(s))
}

// checkSize refuses content that some browser could not receive with every
// merge tag at its fallback: each version (A, and B for an A/B test) in
// each language (the main texts and every translation), with ids as long
// as real ones. The error, 413 payload_too_large, names the longest member
// of the longest copy and by how many bytes it is too long.
func (c *Content) checkSize() error {
	variants := []string{""}
	if c.B != nil {
		variants = []string{"a", "b"}
	}
	languages := []string{""}
	for lang := range c.Translations {
		languages = append(languages, lang)
	}
	slices.Sort(languages)
	size, worstVariant, worstLanguage := 0, "", ""
	for _, v := range variants {
		for _, lang := range languages {
			b, err := c.payload(placeholderID, placeholderID, lang, v, nil).Encode()
			if err != nil {
				return err
			}
			if len(b) > size {
				size, worstVariant, worstLanguage = len(b), v, lang
			}
		}
	}
	if size <= MaxPayload {
		return nil
	}
	over := size - MaxPayload
	name, length := c.longestMember(worstVariant, worstLanguage)
	limit := "a push holds at most " + thousands(MaxPayload) + " bytes"
	if length < over {
		return &Error{Code: "payload_too_large", Message: fmt.Sprintf("the push is %s too long (%s); its longest member is %s", bytesText(over), limit, name)}
	}
	return &Error{Code: "payload_too_large", Message: fmt.Sprintf("%s is %s too long for a push (%s)", name, bytesText(over), limit)}
}

// longestMember names the member of the send request whose text takes the
// most bytes in the copy of one version and language, and gives that
// length. Ties go to the member listed first.
func (c *Content) longestMember(variant, language string) (string, int) {
	p := c.payload(placeholderID, placeholderID, language, variant, nil)
	t, translated := c.translation(language)
	b := c.B
	if variant != "b" || b == nil {
		b = &Variant{}
	}
	source := func(translatedText string, override *string, bName, name string) string {
		switch {
		case translated && translatedText != "":
			return "translations." + language[:2] + "." + name
		case override != nil:
			return bName
		}
		return name
	}
	members := []struct {
		name string
		text string
	}{
		{source(t.Title, b.Title, "ab.b.title", "title"), p.Title},
		{source(t.Body, b.Body, "ab.b.body", "body"), p.Body},
		{source("", b.URL, "ab.b.url", "url"), p.URL},
		{"icon", p.Icon},
		{source("", b.Image, "ab.b.image", "image"), p.Image},
		{"badge", p.Badge},
		{"tag", p.Tag},
	}
	for i, a := range p.Actions {
		members = append(members,
			struct{ name, text string }{fmt.Sprintf("actions[%d].title", i), a.Title},
			struct{ name, text string }{fmt.Sprintf("actions[%d].url", i), a.URL})
	}
	name, longest := "", -1
	for _, m := range members {
		if n := encodedLen(m.text); n > longest {
			name, longest = m.name, n
		}
	}
	return name, longest
}

// encodedLen is the length of s's characters as Encode writes them,
// without the quotes.
func encodedLen(s string) int {
	b, _ := Payload{Title: s}.Encode()
	empty, _ := Payload{}.Encode()
	return len(b) - len(empty)
}

// bytesText is "1 byte" or "1,234 bytes".
func bytesText(n int) string {
	if n == 1 {
		return "1 byte"
	}
	return thousands(n) + " bytes"
}

// thousands writes n with a comma between groups of three digits.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// BroadcastsPerHour is a website's hourly budget of broadcasts (spec 8.1):
// every send that names no specific users, a feed's items included.
const BroadcastsPerHour = 30

// BroadcastBudget is the website's hourly broadcast budget, as every node
// counts it (store.TakeRateLimits): the API's sends and the feeds' draw on
// the same counter.
func BroadcastBudget(websiteID string) store.RateLimit {
	return store.RateLimit{Key: "send:website:" + websiteID + ":broadcast", Window: time.Hour, Max: BroadcastsPerHour}
}
