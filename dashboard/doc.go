// Package dashboard is RelayBell's web app for people who sign in: static
// files embedded in the binary (go:embed), served at / by every API node,
// with no build step and no Node at build or run time. It is a client of
// the public /api/v1 routes, with the session cookie, the CSRF header and
// X-Project-Id (spec 4.8), and has no backend of its own.
//
// The pages are Preact components written with htm's tagged templates
// (static/vendor/preact-htm.module.js: htm 3.1.1's standalone build,
// which holds Preact 10 and its hooks; licences beside it), as plain ES
// modules the browser loads from /assets/ by relative imports, each
// served with its ETag and revalidated on every load:
//
//   - app.js, the entry index.html loads: who is signed in, and the pages
//     of getting in; shell.js the signed-in header and the page the route
//     names.
//   - Shared: api.js (the only way to the server), router.js (routing on
//     the URL's fragment, /#/signin, /#/install…, the form the mailed links
//     use, so the server serves one page; lists keep their filters in its
//     query, so back and reload keep them; a page with unsent work guards
//     leaving), unsent.js (a form kept in local storage until it is sent,
//     saved or discarded, and the warnings before leaving it; useGuard,
//     the warnings alone, for the automation and journey editors), format.js (numbers, times, time
//     zones), forms.js (fields, form state, errors and alerts, the buttons
//     that change something), lists.js (useLoad, which loads what a page
//     shows and drops any answer older than the latest request, and the
//     breakdown tables), rules.js (the Filters value and its builder, for
//     people and for an automation's conditions on event properties) and
//     sends.js (the composer's form as a send request and back, and a
//     push's content as a form).
//   - pages/: one module a page or feature: auth, websites, install, home,
//     notifications, notification, compose (with content: a push's
//     content fields, shared with the automation editor; preview; texts:
//     merge tags and translations; budget: the push's size as typed
//     and the platforms' visible lengths; and suggest: copy suggestions,
//     each applied with one click), automations (the list) and
//     automation (the editor), journeys (the list) and journey (the
//     builder and a journey's page with its figures by step; steps: one
//     step as a form and its editor), goals (the list with results, and
//     the form), templates (the list and the form, with the composer's
//     content fields and previews; the composer starts from one and saves
//     one), audience (with import), person (with enrolments: a
//     person's journeys and each one's history), segments (with topics),
//     webhooks, webhook (the delivery log), settings (with keys, team,
//     reports: the report by mail and its test button, and logo: the
//     website's logo, uploaded or by address, with a preview).
//
// Every page loads with useLoad and shows a failure where the person is
// looking (Alert, or the field it concerns); no error is dropped.
//
// Security: a Content-Security-Policy without inline scripts or styles and
// with frame-ancestors 'none' (CSP); every value from the API is rendered
// as text (htm never parses strings as markup; nothing sets innerHTML).
package dashboard
