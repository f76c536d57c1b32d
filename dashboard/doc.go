// Package dashboard is RelayBell's web app for people who sign in: static
// files embedded in the binary (go:embed), served at / by every API node,
// with no build step and no Node at build or run time. It is a client of
// the public /api/v1 routes, with the session cookie, the CSRF header and
// X-Project-Id (spec 4.8), and has no backend of its own.
//
// The pages are Preact components written with htm's tagged templates
// (static/vendor/preact-htm.module.js: htm 3.1.1's standalone build,
// which holds Preact 10 and its hooks; licences beside it). Routing is on
// the URL's fragment (/#/signin, /#/install…), the form the mailed links
// use, so the server serves one page.
//
// Security: a Content-Security-Policy without inline scripts or styles and
// with frame-ancestors 'none' (CSP); every value from the API is rendered
// as text (htm never parses strings as markup; nothing sets innerHTML).
package dashboard
