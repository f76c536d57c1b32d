// Package fanout is the role that turns a send intent into push batches. It
// consumes intents from the bus, runs the checks that must hold at dispatch
// (account verified and not suspended, segment still there), moves the send
// to sending and splits it into one task per audience shard. Shard tasks are
// consumed in parallel (in a cluster, by every fan-out node): each streams its
// shard's endpoints page by page, keeps the ones the target selects, and hands
// batches to the pusher that owns them on the ring. A shard is done once every
// batch's results are recorded; the last shard done finishes the send.
//
// # Frequency cap
//
// A website's frequency cap {Max, Hours} keeps a browser that already got
// Max pushes from the website's non-transactional sends within the last
// Hours from getting a non-transactional send. Each batch, just before it
// goes to its pusher, loses those browsers: one Store.CappedEndpoints call
// per batch counts, for its endpoints, the results with outcome sent of the
// website's other non-transactional sends started (started_at) within the
// last Hours; a browser with Max or more is skipped. The rule, exactly:
//
//   - only sent results count: a failed or pruned push did not reach the
//     browser;
//   - a past push counts by its send's start time, not by when it went out;
//   - transactional sends ignore the cap and don't count toward it;
//   - the send itself never counts, so a redone batch is capped as the
//     first try was (bar the window moving on);
//   - sends going out at the same time don't see each other's pushes
//     until they are recorded, so together they may pass the cap.
//
// A skipped browser is not a recipient: no result is recorded for it, so
// recipients = sent + failed + pruned still holds when the send finishes.
// relaybell_fanout_capped_total counts them. The cap is read with the
// target once per notification (only for a non-transactional send); a
// send without a cap makes no call at all. The batch's ring key is taken
// before the cap drops anything, so a redone batch goes to the same pusher.
//
// Every step is idempotent, because the bus redelivers whatever was not
// acknowledged: the store's per-(notification, endpoint) results make a
// redone batch skip what was already delivered. Fan-out never talks to push
// services itself.
package fanout
