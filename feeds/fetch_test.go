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
