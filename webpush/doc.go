// Package webpush sends one Web Push message to one browser subscription:
// RFC 8291 message encryption with the RFC 8188 aes128gcm content coding,
// RFC 8292 VAPID authorization, and the RFC 8030 request to the push
// service.
//
// It owns:
//   - VAPID keys (VAPIDKey) and signed, per-origin cached VAPID tokens (Signer);
//   - parsing a browser's subscription once into a Target that can be
//     encrypted for many times (ParseSubscription, Encrypt);
//   - building the push request (NewRequest) and sending it with a bounded
//     number of requests in flight per push-service origin (Client): over
//     one HTTP/2 connection of its own per origin when the push service
//     negotiates h2 (h2conn.go, h2client.go: a writer goroutine coalescing
//     the frames of many pushes into few TLS records, a reader goroutine
//     dispatching the answers, none per request), through net/http's
//     transport otherwise (WithHTTP2).
//
// It must never:
//   - retry, back off or decide what a status code means for a subscription:
//     Client.Send makes exactly one attempt and reports the status,
//     Retry-After and the start of the body; the caller (the pusher) owns
//     retry and pruning policy. The only requests sent again are those the
//     push service provably did not process (a refused stream, one above a
//     GOAWAY's last stream id, one whose headers never went out), as
//     net/http does;
//   - decide which endpoints may be contacted: the caller plugs its address
//     filter in with WithDialContext, and no proxy from the environment is used;
//   - reuse an ephemeral key or salt between messages (RFC 8291 requires a
//     fresh key pair per message);
//   - log, store or keep payloads, subscription keys or VAPID private keys;
//   - hold package-level clients, caches or state: everything lives in a
//     Client or a Signer that the caller constructs.
//
// Concurrency: Target, VAPIDKey, Signer and Client are safe for concurrent
// use. A Signer signs at most one token at a time (its mutex); readers of
// cached tokens take no lock. A Client takes its mutex only to find or create
// the per-origin pool and never while a request is in flight. An HTTP/2
// connection's mutex guards its stream table and queues and is never held
// during I/O.
package webpush
