// Package pusher is the role that delivers push batches to the browsers'
// push services: it builds each browser's payload, encrypts it and signs the
// request with the website's VAPID key (package webpush), sends it over one
// pooled HTTP/2 transport per push-service origin with bounded concurrency,
// retries 429 and 5xx answers with backoff honouring Retry-After, and records
// every outcome before the batch counts as done.
//
// Outcomes: 2xx sent; 404 and 410 expired (the subscription is pruned); 413
// and other 4xx failed without retry; 429, 5xx and network errors retried,
// then failed. A browser gets a notification once: endpoints that already
// have a recorded result for the notification are skipped.
//
// Router (router.go) sends each batch to the pusher that owns it on the ring
// (package ring answers only who owns a key): this node's Pusher, or another
// node's through Remote, falling through to the next owner when one fails.
//
// In a cluster, fan-out nodes post batches to BatchPath (Handler, Remote) in
// protobuf's wire format (see wire.go), carrying only what a pusher reads.
//
// The pusher never decides who receives a send (fanout does) and never dials
// a non-public address unless it is allow-listed (netpolicy).
package pusher
