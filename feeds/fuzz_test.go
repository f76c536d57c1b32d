package feeds

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/relaybell/relaybell/notification"
)

// FuzzParse feeds arbitrary bytes to the parser and the item mapping: no
// panic, and every item maps to a send whose links are http(s) or absent
// and whose texts are valid UTF-8 and bounded.
func FuzzParse(f *testing.F) {
	f.Add([]byte(rss(item(1), item(2))))
	f.Add([]byte(fmtAtom()))
	f.Add([]byte(`{"version": "https://jsonfeed.org/version/1.1", "items": [{"id": "1", "url": "javascript:alert(1)", "title": "<b>x</b>", "image": "ftp://x"}]}`))
	f.Add([]byte(`<rss><channel><item><title>` + strings.Repeat("é", 500) + `</title><enclosure url="http://[::1" type="image/png"/></item></channel></rss>`))
	f.Add([]byte(``))
	d := New()
	d.Name = "Fuzz"
	yes := true
	d.Audience.Everyone = &yes
	tmpl := "{item.title} {item.summary} {item.link} {item.image} {item.nope} {{first_name}}"
	d.Template.Body = &tmpl
	f.Fuzz(func(t *testing.T, body []byte) {
		items, err := Parse(body)
		if err != nil {
			return
		}
		if len(items) > MaxItems {
			t.Fatalf("%d items", len(items))
		}
		for _, it := range items {
			if utf8.RuneCountInString(it.Title) > maxTitle || utf8.RuneCountInString(it.Summary) > maxSummary {
				t.Fatalf("unbounded texts: %q %q", it.Title, it.Summary)
			}
			if k := it.Key(); len(k) > maxKey+7 {
				t.Fatalf("key of %d bytes", len(k))
			}
			req, err := Request(context.Background(), d, "w", it, nil)
			if err != nil {
				t.Fatal(err)
			}
			if req.Title == nil || *req.Title == "" {
				t.Fatal("a send without a title")
			}
			for _, p := range []*string{req.URL, req.Image} {
				if p != nil && !notification.IsHTTPURL(*p) {
					t.Fatalf("non-http link %q", *p)
				}
			}
			for _, p := range []*string{req.Title, req.Body} {
				if p != nil && !utf8.ValidString(*p) {
					t.Fatalf("invalid UTF-8 %q", *p)
				}
			}
			if _, err := json.Marshal(it); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// FuzzExpand fills arbitrary templates with arbitrary items: no panic, no
// placeholder of the four left, and a template Check accepts expands.
func FuzzExpand(f *testing.F) {
	f.Add("New: {item.title}", "T", "S", "https://x.example/a", "https://x.example/i.png")
	f.Add("{item.summary}{item.summary}{item.", "{item.title}", "", "", "")
	f.Add("{item.}{item.TITLE}{{item.link}}", "a", "b", "c", "d")
	f.Fuzz(func(t *testing.T, tmpl, title, summary, link, image string) {
		it := Item{Title: title, Summary: summary, Link: link, Image: image}
		out := it.Expand(tmpl)
		if !strings.Contains(title+summary+link+image, "{item.") {
			for _, p := range []string{"{item.title}", "{item.summary}", "{item.link}", "{item.image}"} {
				if strings.Contains(out, p) {
					t.Fatalf("%q left in %q", p, out)
				}
			}
		}
		_ = Template{Title: &tmpl}.check()
	})
}

func fmtAtom() string {
	return strings.Replace(atomFeed, "%s", atomEntry(1), 1)
}
