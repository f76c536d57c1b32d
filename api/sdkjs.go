package api

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"

	"github.com/relaybell/relaybell/sdk"
)

// scriptMaxAge is how long browsers and caches keep sdk.js and sw.js
// before asking again (with the ETag): short, so a new release or a
// changed public URL reaches every site within minutes.
const scriptMaxAge = "300"

// handleScript serves GET /api/v1/projects/{projectId}/sdk.js and /sw.js:
// the browser SDK or the service worker, with the project's SDK base URL
// written in.
func (a *API) handleScript(s sdk.Script) func(r *request) error {
	return func(r *request) error {
		w, err := a.project(r)
		if err != nil {
			return err
		}
		body, err := sdk.Render(s, a.publicURL(r)+"/api/v1/projects/"+w.ProjectID)
		if err != nil {
			return errorf(CodeBadRequest, "the Host header does not make a URL")
		}
		sum := sha256.Sum256(body)
		etag := `"` + hex.EncodeToString(sum[:12]) + `"`
		h := &r.fc.Response.Header
		h.Set("Cache-Control", "public, max-age="+scriptMaxAge)
		h.Set("ETag", etag)
		h.Set("X-Content-Type-Options", "nosniff")
		if s == sdk.Worker {
			// Lets a site that serves RelayBell at its own origin register
			// this script directly with any scope.
			h.Set("Service-Worker-Allowed", "/")
		}
		if etagMatches(r.fc.Request.Header.Peek("If-None-Match"), etag) {
			r.fc.SetStatusCode(http.StatusNotModified)
			return nil
		}
		r.fc.SetStatusCode(http.StatusOK)
		r.fc.SetContentType("text/javascript; charset=utf-8")
		r.fc.SetBody(body)
		return nil
	}
}

// publicURL is where browsers reach the API: Config.PublicURL, else the
// request's scheme (X-Forwarded-Proto behind a trusted proxy) and Host.
func (a *API) publicURL(r *request) string {
	if a.cfg.PublicURL != "" {
		return strings.TrimRight(a.cfg.PublicURL, "/")
	}
	scheme := "http"
	if r.fc.IsTLS() {
		scheme = "https"
	}
	if a.cfg.TrustProxy {
		first, _, _ := strings.Cut(string(r.fc.Request.Header.Peek("X-Forwarded-Proto")), ",")
		if p := strings.ToLower(strings.TrimSpace(first)); p == "http" || p == "https" {
			scheme = p
		}
	}
	return scheme + "://" + string(r.fc.Host())
}

// etagMatches reports whether an If-None-Match header names etag (weak
// comparison, as RFC 9110 asks for If-None-Match) or is "*".
func etagMatches(header []byte, etag string) bool {
	for _, v := range bytes.Split(header, []byte(",")) {
		v = bytes.TrimPrefix(bytes.TrimSpace(v), []byte("W/"))
		if string(v) == etag || string(v) == "*" {
			return true
		}
	}
	return false
}
