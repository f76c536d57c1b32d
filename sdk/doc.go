// Package sdk holds RelayBell's browser code: the SDK a website loads with
// one script tag (sdk.js) and the service worker a website's own worker
// imports (sw.js). Both are embedded in the binary and rendered per project
// with the absolute URL of the project's SDK routes written in, since the
// worker runs at the website's origin and cannot learn RelayBell's from its
// own location.
//
// It owns the scripts and their rendering. It must never hold state or talk
// to the store: the api package serves what Render returns.
//
// The scripts have no dependencies and need no build step. The browser test
// (server/browser_test.go with sdk/browsertest) runs them in Chromium.
package sdk
