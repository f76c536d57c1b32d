// Package bench measures broadcasts from POST /api/v1/notifications to the
// last push a fake push service receives, and in the same run the bare
// sender: the pusher's webpush code alone driving the same fake service with
// the same concurrency. End-to-end throughput is reported as a ratio of the
// bare sender's, so the figure means the same on a slow or a fast machine.
//
// It only drives RelayBell from outside (HTTP API, SDK routes); it never
// reaches into a role's internals.
package bench
