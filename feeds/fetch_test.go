package feeds

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestFetchLimits: a body over the limit, a redirect loop, a redirect to
// another scheme and a body that is no feed each fail with their reason;
// redirects within the bound are followed.
func TestFetchLimits(t *testing.T) {
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/big":
			w.Write([]byte(rss(item(1), item(2), item(3))))
		case "/loop":
			http.Redirect(w, r, srv.URL+"/loop", http.StatusFound)
		case "/moved":
			http.Redirect(w, r, srv.URL+"/small", http.StatusMovedPermanently)
		case "/ftp":
			http.Redirect(w, r, "ftp://example.com/feed", http.StatusFound)
		case "/html":
			w.Write([]byte("<html><body>Not a feed</body></html>"))
		default:
			w.Write([]byte(rss(item(1))))
		}
	}))
	t.Cleanup(srv.Close)
	f := NewFetcher(FetchConfig{Allow: allowOf(t, srv.URL), MaxBody: 400})
	for _, c := range []struct{ path, err string }{
		{"/big", "the feed is larger than 400 bytes"},
		{"/loop", "stopped after 5 redirects"},
		{"/ftp", "redirected to a ftp address"},
		{"/html", "not an RSS, Atom or JSON feed"},
	} {
		_, err := f.Fetch(context.Background(), srv.URL+c.path, "", "")
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Fatalf("%s: %v, want %q", c.path, err, c.err)
		}
	}
	got, err := f.Fetch(context.Background(), srv.URL+"/moved", "", "")
	if err != nil || len(got.Items) != 1 || got.Items[0].Title != "Post 1" {
		t.Fatalf("a redirect within the bound: %+v %v", got, err)
	}
	// Not allow-listed, a loopback address is refused before connecting.
	if _, err := NewFetcher(FetchConfig{}).Fetch(context.Background(), srv.URL+"/small", "", ""); err == nil ||
		err.Error() != "refused: the address is private or internal and not allow-listed" {
		t.Fatalf("loopback without the allow list: %v", err)
	}
}

// TestParseOrder: items with dates come newest first whatever the feed's
// order; without a date on each, the feed's order is kept.
func TestParseOrder(t *testing.T) {
	dated := `<rss version="2.0"><channel>
<item><guid>a</guid><title>Old</title><pubDate>Mon, 02 Mar 2026 10:00:00 GMT</pubDate></item>
<item><guid>b</guid><title>New</title><pubDate>Wed, 04 Mar 2026 10:00:00 GMT</pubDate></item>
<item><guid>c</guid><title>Middle</title><pubDate>Tue, 03 Mar 2026 10:00:00 GMT</pubDate></item>
</channel></rss>`
	items, err := Parse([]byte(dated))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range items {
		got = append(got, it.Title)
	}
	if strings.Join(got, ",") != "New,Middle,Old" {
		t.Fatalf("dated items in order %v", got)
	}
	undated := strings.Replace(dated, "<pubDate>Tue, 03 Mar 2026 10:00:00 GMT</pubDate>", "", 1)
	items, _ = Parse([]byte(undated))
	got = got[:0]
	for _, it := range items {
		got = append(got, it.Title)
	}
	if strings.Join(got, ",") != "Old,New,Middle" {
		t.Fatalf("items without a date each in order %v", got)
	}
}
