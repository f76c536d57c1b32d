package api

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/relaybell/relaybell/dashboard"
)

// serveDashboard answers a GET or HEAD of the dashboard's files (package
// dashboard): its page at / and its assets under /assets/; it reports
// false for any other request, which the router then answers. The
// dashboard is no API route: it is outside the OpenAPI document and only
// calls the API like any client.
func (a *API) serveDashboard(fc *fasthttp.RequestCtx) bool {
	if !fc.IsGet() && !fc.IsHead() {
		return false
	}
	path := string(fc.Path())
	name := ""
	switch {
	case path == "/":
		name = dashboard.Index
	case path == "/"+dashboard.Worker:
		name = dashboard.Worker
	case strings.HasPrefix(path, "/assets/"):
		name = strings.TrimPrefix(path, "/assets/")
	default:
		return false
	}
	body, contentType, ok := dashboard.File(name)
	if !ok {
		return false
	}
	sum := sha256.Sum256(body)
	etag := `"` + hex.EncodeToString(sum[:12]) + `"`
	h := &fc.Response.Header
	h.Set("Content-Security-Policy", dashboard.CSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	// Revalidated on every load, so a new binary's files show at once.
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", etag)
	if etagMatches(fc.Request.Header.Peek("If-None-Match"), etag) {
		fc.SetStatusCode(http.StatusNotModified)
		return true
	}
	h.SetContentType(contentType)
	fc.SetStatusCode(http.StatusOK)
	fc.SetBody(body)
	return true
}
