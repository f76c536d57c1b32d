// Package bench measures broadcasts from POST /api/v1/notifications to the
// last push a fake push service receives, and in the same run the bare
// sender: the pusher's webpush code alone driving the same fake service with
// the same concurrency. End-to-end throughput is reported as a ratio of the
// bare sender's, so the figure means the same on a slow or a fast machine.
//
// The events bench (RunEvents) starts the same deployments and finds the
// highest rate of POST /api/v1/events whose p99 latency stays under a
// target: open-loop load (each request due on a fixed schedule, its latency
// counted from when it was due) at rising rates, a realistic mix of events
// naming the subscribed audience. The load generator runs in this process,
// on the same cores as the deployment, and reports its share.
//
// It only drives RelayBell from outside (HTTP API, SDK routes); it never
// reaches into a role's internals.
package bench
