package api

import (
	"strings"
	"testing"

	"github.com/relaybell/relaybell/dashboard"
)

// The dashboard's page and assets are served with the CSP, revalidated by
// ETag; anything else under / stays the API's 404.
func TestDashboardFiles(t *testing.T) {
	h := newHarness(t)
	r := h.do("GET", "/", "")
	if r.status != 200 || !strings.HasPrefix(r.header["Content-Type"], "text/html") || !strings.Contains(string(r.body), `<script type="module" src="/assets/app.js">`) {
		t.Fatalf("GET /: %d %v", r.status, r.header)
	}
	if r.header["Content-Security-Policy"] != dashboard.CSP || !strings.Contains(dashboard.CSP, "frame-ancestors 'none'") ||
		strings.Contains(dashboard.CSP, "unsafe-inline") || r.header["X-Content-Type-Options"] != "nosniff" {
		t.Fatalf("headers %v", r.header)
	}
	if r2 := h.do("GET", "/", "", "If-None-Match", r.header["Etag"]); r2.status != 304 || len(r2.body) != 0 {
		t.Fatalf("revalidation: %d", r2.status)
	}
	for path, ct := range map[string]string{"/assets/app.js": "text/javascript", "/assets/style.css": "text/css",
		"/assets/vendor/preact-htm.module.js": "text/javascript"} {
		if r := h.do("GET", path, ""); r.status != 200 || !strings.HasPrefix(r.header["Content-Type"], ct) || len(r.body) == 0 {
			t.Errorf("GET %s: %d %v", path, r.status, r.header)
		}
	}
	for _, path := range []string{"/assets/nothing.js", "/assets/../dashboard.go", "/assets/", "/index.html", "/assets/vendor/../../doc.go"} {
		expectCode(t, h.do("GET", path, ""), 404, CodeNotFound)
	}
	if r := h.do("POST", "/", ""); r.status != 404 {
		t.Fatalf("POST /: %d", r.status)
	}
	// No inline script or style anywhere in the page.
	page := string(h.do("GET", "/", "").body)
	if strings.Contains(page, "<script>") || strings.Contains(page, "<style") || strings.Contains(page, " style=") || strings.Contains(page, "onload=") {
		t.Fatalf("inline code in the page:\n%s", page)
	}
}
