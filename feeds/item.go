package feeds

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"html"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/mmcdole/gofeed"

	"github.com/relaybell/relaybell/notification"
	"github.com/relaybell/relaybell/store"
)

// Lengths an item's texts are cut to before they fill a send.
const (
	maxTitle   = 200
	maxSummary = 300
	maxKey     = 200 // longer GUIDs or links are keyed by their SHA-256
)

// Item is what a send takes from one feed item.
type Item struct {
	GUID    string
	Title   string
	Summary string // plain text
	Link    string
	Image   string
}

// Key identifies an item in the ledger: its GUID, else its link; "" when
// it has neither (it cannot be told apart from others, and is not sent).
func (it Item) Key() string {
	k := "guid:" + it.GUID
	if strings.TrimSpace(it.GUID) == "" {
		if strings.TrimSpace(it.Link) == "" {
			return ""
		}
		k = "link:" + it.Link
	}
	if len(k) > maxKey {
		sum := sha256.Sum256([]byte(k))
		k = "sha256:" + hex.EncodeToString(sum[:])
	}
	return k
}

// itemOf reads what a send needs from a parsed item: the image from the
// item's own, else media:content or media:thumbnail, else an image
// enclosure.
func itemOf(g *gofeed.Item) Item {
	it := Item{GUID: strings.TrimSpace(g.GUID), Title: plain(g.Title, maxTitle), Link: strings.TrimSpace(g.Link)}
	summary := g.Description
	if strings.TrimSpace(summary) == "" {
		summary = g.Content
	}
	it.Summary = plain(summary, maxSummary)
	if g.Image != nil && notification.IsHTTPURL(g.Image.URL) {
		it.Image = g.Image.URL
	}
	if it.Image == "" {
		if media, ok := g.Extensions["media"]; ok {
			for _, name := range []string{"content", "thumbnail"} {
				for _, e := range media[name] {
					u := e.Attrs["url"]
					kind := e.Attrs["type"] + e.Attrs["medium"]
					if notification.IsHTTPURL(u) && (name == "thumbnail" || strings.Contains(kind, "image")) {
						it.Image = u
						break
					}
				}
				if it.Image != "" {
					break
				}
			}
		}
	}
	if it.Image == "" {
		for _, e := range g.Enclosures {
			if e != nil && strings.HasPrefix(e.Type, "image/") && notification.IsHTTPURL(e.URL) {
				it.Image = e.URL
				break
			}
		}
	}
	if !notification.IsHTTPURL(it.Link) || len(it.Link) > MaxURL {
		if it.GUID != "" && notification.IsHTTPURL(it.GUID) && len(it.GUID) <= MaxURL {
			it.Link = it.GUID
		} else if !notification.IsHTTPURL(it.Link) {
			it.Link = ""
		}
	}
	if len(it.Image) > MaxURL {
		it.Image = ""
	}
	return it
}

var (
	tagRe   = regexp.MustCompile(`(?s)<[^>]*>`)
	spaceRe = regexp.MustCompile(`\s+`)
)

// plain is s without HTML tags, entities decoded, white space collapsed,
// cut to max runes with an ellipsis.
func plain(s string, max int) string {
	s = tagRe.ReplaceAllString(s, " ")
	s = html.UnescapeString(s)
	s = strings.ToValidUTF8(s, "")
	s = strings.TrimSpace(spaceRe.ReplaceAllString(s, " "))
	if utf8.RuneCountInString(s) > max {
		r := []rune(s)
		s = strings.TrimSpace(string(r[:max-1])) + "…"
	}
	return s
}

// Expand fills the placeholders of s with the item's values.
func (it Item) Expand(s string) string {
	return placeholderRe.ReplaceAllStringFunc(s, func(m string) string {
		switch m {
		case "{item.title}":
			return it.Title
		case "{item.summary}":
			return it.Summary
		case "{item.link}":
			return it.Link
		case "{item.image}":
			return it.Image
		}
		return m
	})
}

// Templates fills a send's content from a saved template (package
// templates): members the request set are kept; an error wraps
// store.ErrNotFound for an unknown template or another website's.
type Templates interface {
	Apply(ctx context.Context, websiteID, templateID string, req *notification.Request) error
}

// ErrNoTemplates is the error of a templateId when no Templates is wired.
var ErrNoTemplates = errors.New("feeds: saved templates are not available on this server")

// Request is the send of an item: the audience, and the content the
// template maps the item to. Members the template leaves empty take the
// item's (title, summary, link, image); a send always has a title (the
// feed's name when the item has none).
func Request(ctx context.Context, d Definition, websiteID string, it Item, tpl Templates) (*notification.Request, error) {
	req := &notification.Request{}
	d.Audience.Apply(req)
	t := d.Template
	if t.TemplateID != nil {
		if tpl == nil {
			return nil, ErrNoTemplates
		}
		if err := tpl.Apply(ctx, websiteID, *t.TemplateID, req); err != nil {
			return nil, fmt.Errorf("applying template: %w", err)
		}
	} else {
		req.Title, req.Body, req.URL, req.Image = t.Title, t.Body, t.URL, t.Image
	}
	fill := func(p **string, placeholder string) {
		v := placeholder
		if *p != nil {
			v = **p
		}
		v = strings.TrimSpace(it.Expand(v))
		*p = &v
	}
	fill(&req.Title, "{item.title}")
	fill(&req.Body, "{item.summary}")
	fill(&req.URL, "{item.link}")
	fill(&req.Image, "{item.image}")
	if *req.Title == "" {
		title := d.Name
		req.Title = &title
	}
	for _, p := range []**string{&req.Body, &req.URL, &req.Image} {
		if **p == "" {
			*p = nil
		}
	}
	for _, p := range []**string{&req.URL, &req.Image} {
		if *p != nil && !notification.IsHTTPURL(**p) {
			*p = nil // a link the item made unusable is left out, not refused
		}
	}
	return req, nil
}

// checkTemplate checks a definition's templateId through tpl.
func checkTemplate(ctx context.Context, d Definition, websiteID string, tpl Templates) error {
	if d.Template.TemplateID == nil {
		return nil
	}
	if tpl == nil {
		return &Error{CodeTemplateNotFound, "saved templates are not available on this server; give title, body, url and image instead"}
	}
	err := tpl.Apply(ctx, websiteID, *d.Template.TemplateID, &notification.Request{})
	if errors.Is(err, store.ErrNotFound) {
		return &Error{CodeTemplateNotFound, "templateId names no template of this website"}
	}
	return err
}
