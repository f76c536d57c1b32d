// Package fanout is the role that turns a send intent into push batches. It
// consumes intents from the bus, runs the checks that must hold at dispatch
// (account verified and not suspended, segment still there), moves the send
// to sending and splits it into one task per audience shard. Shard tasks are
// consumed in parallel (in a cluster, by every fan-out node): each streams its
// shard's endpoints page by page, keeps the ones the target selects, and hands
// batches to the pusher that owns them on the ring. A shard is done once every
// batch's results are recorded; the last shard done finishes the send.
//
// Every step is idempotent, because the bus redelivers whatever was not
// acknowledged: the store's per-(notification, endpoint) results make a
// redone batch skip what was already delivered. Fan-out never talks to push
// services itself.
package fanout
