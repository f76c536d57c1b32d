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
// What the browser keeps: the SDK saves its state (externalId, topics,
// subscriberId, endpointId, and the endpoint URL and auth secret registered
// last) in the Cache API, where the worker reads it too, and sends it with
// every registration (POST /subscriptions):
//   - topics, once setTopics was called (even with []), as the subscriber's
//     whole set of opt-ins; never before, so opt-ins made elsewhere (an
//     import) stay until the browser sets its own;
//   - externalId after login; after logout an explicit null, kept until one
//     registration took it, which moves the browser to a new anonymous
//     subscriber (logout also forgets the topics);
//   - replaces, the old endpoint URL, with replacesAuth, its auth secret
//     (proof that this browser held it), when the subscription is not the one
//     registered last: from the worker on pushsubscriptionchange (the
//     event's old subscription, else the saved URL) and from the page when
//     it finds a renewal the worker did not hear of, so that the new
//     subscription takes the old endpoint's place and ids.
//
// track(name, properties) posts the browser's own event (POST /events)
// with the saved endpointId and auth secret, which prove it is this
// browser's; before a registration saved them it sends nothing and
// resolves to null.
//
// The scripts have no dependencies and need no build step. The browser test
// (server/browser_test.go with sdk/browsertest) runs them in Chromium.
package sdk
