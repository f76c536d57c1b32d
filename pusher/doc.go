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
// have a recorded result for the notification are skipped. The store keeps
// a send's sent pushes as runs of one audience shard's endpoint ids (the
// push ledger, one row per write, not one per push), so the pusher names
// each recipient with its shard (store.ShardEndpoint, store.ShardOf of its
// subscriber) in that check and in its results.
//
// Per push the pusher does what the bare webpush client does (parse the
// subscription, encrypt, sign, send) plus its own bookkeeping, kept small:
// the batch's payloads come from one notification.PayloadEncoder (the JSON
// encoded once, the endpoint id spliced in), pushes run on workers kept
// between pushes (up to Concurrency; a worker ends after 10s without one)
// rather than a goroutine each, and the outcome and push-service metric
// series are looked up once, not per push. Outcomes still go one by one to
// the recorder, which writes them per send (store.Delivery's
// RecordAllResults) and to the analytics store; see docs/send-path.md for
// the CPU a push costs and what is left of it.
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
