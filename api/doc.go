// Package api is RelayBell's HTTP front door (fasthttp): the public REST
// API under /api/v1 (spec api-v1.md), the browser SDK routes under
// /api/v1/projects/{projectId}, the operator admin API under /admin/v1, and
// /healthz, /readyz, /metrics.
//
// It owns: routing, the error catalog of spec section 7 (errors.go; every
// error body is written by one function), strict JSON decoding, body size
// limits, request ids, API key authentication with its cache and scope
// checks, CORS for the SDK routes, and the per-route metrics.
//
// It must never: deliver pushes or expand audiences (fan-out and pusher do;
// a queued send is handed to a Dispatcher after it is committed), decide
// what a send request means (package notification validates and renders
// it), keep state a second API node would need (every node answers the same
// from the store; only the key cache is local, and every node drops it
// within Config.AuthPoll of a change made through any node: authwatch.go),
// or reach into another role's configuration. Nor does it build the
// services it calls (accounts, events, the rate limiter: New takes them as
// Services) or start any loop: the composition root (package server) runs
// their loops and the API's own auth version poller (WatchAuth) as modules.
//
// Concurrency: handlers run on fasthttp's goroutines and share only the key
// cache (one mutex, never held across I/O) and atomics. last_used_at
// updates run in goroutines a request starts, bounded by a semaphore;
// Close waits for them. WatchAuth polls the store's auth version
// (authwatch.go) in the goroutine its caller gives it.
package api
