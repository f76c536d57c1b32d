// Package bench measures broadcasts from POST /api/v1/notifications to the
// last push a fake push service receives, and in the same run the bare
// sender: the pusher's webpush code alone driving the same fake service with
// the same concurrency. End-to-end throughput is reported as a ratio of the
// bare sender's, so the figure means the same on a slow or a fast machine.
//
// Before the broadcasts, RunPeers measures the peers on a fake push service
// of their own: the floor of RFC 8291's crypto (a fresh P-256 key and an
// ECDH, timed on one thread, and on every core at once), the bare sender,
// webpush-go and Node's web-push (bench/node/send.js), each sending one
// push to each of the same browsers. Table puts them and the broadcasts
// side by side, CPU per push of every sender, and ends with a summary
// line. The fake push service checks in full (VAPID signature,
// decryption) only a sample of the pushes and counts the others, so that
// it costs a fraction of what it measures.
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
