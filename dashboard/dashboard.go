package dashboard

import (
	"embed"
	"io/fs"
	"mime"
	"path"
)

//go:embed static
var files embed.FS

// CSP is the Content-Security-Policy of every dashboard file: scripts,
// styles and fetches only from RelayBell's own origin, never inline; no
// framing.
const CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: https:; " +
	"connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// Index is the one page: the app's shell.
const Index = "index.html"

// Worker is the service worker the install page registers to subscribe
// the browser it runs in, served at the origin's root (/relaybell-sw.js,
// the SDK's default) so that its scope covers the dashboard.
const Worker = "relaybell-sw.js"

// File returns the named static file (a path under static/, e.g.
// "app.js" or "vendor/preact-htm.module.js") and its content type; ok is
// false for none.
func File(name string) (body []byte, contentType string, ok bool) {
	if !fs.ValidPath(name) {
		return nil, "", false
	}
	body, err := fs.ReadFile(files, path.Join("static", name))
	if err != nil {
		return nil, "", false
	}
	ct := mime.TypeByExtension(path.Ext(name))
	if ct == "" {
		ct = "application/octet-stream"
	}
	return body, ct, true
}
