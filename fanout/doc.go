// Package fanout is the role that turns a send intent into push batches. It
// consumes intents from the bus, runs the checks that must hold at dispatch
// (account verified and not suspended, segment still there), moves the send
// to sending and splits it into one task per audience shard. Shard tasks are
// consumed in parallel (in a cluster, by every fan-out node): each streams its
// shard's endpoints page by page, keeps the ones the target selects, and hands
// batches to the pusher that owns them on the ring. A shard is done once every
// batch's results are recorded; the last shard done finishes the send.
//
// A send to one person (an automation's message) or to at most 64 named
// people (externalIds) publishes no shard task: its intent's handler finds
// the shards those people are in (the person's ShardOf, or one
// Store.ExternalIDShards query), walks them alone with the send's whole
// target, and finishes the send with every task done at once
// (Store.SoleShardDone). The lookup is a snapshot, taken when the send
// starts. A send to one browser (a new browser's welcome, whose target
// names the endpoint) is expanded the same way, in the shard the endpoint
// is in then (Store.EndpointShard), and reads that endpoint alone, never
// its person's other browsers; an endpoint gone by then reaches nobody.
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
// # Memory
//
// What a fan-out node holds does not grow with the audience: its shard
// tasks share one budget of recipients (Config.Held, 4 pages of 2000 by
// default). A page read takes a page's worth of it; what the target leaves
// out is given back at once, and a batch's recipients when the batch is
// recorded or fails. A task that finds the budget spent sends off the batch
// it is filling before it waits, so the budget is always held by batches on
// their way to a pusher and no task waits on another. In a cluster this
// also bounds what the pushers hold for the node. Without it each of the 8
// shard workers held up to a page and 5 batches (4,500 recipients), which
// a large audience fills: 36 MB of live heap at 1M browsers, 9 at 10k.
//
// Every step is idempotent, because the bus redelivers whatever was not
// acknowledged: the store's per-(notification, endpoint) results make a
// redone batch skip what was already delivered. Fan-out never talks to push
// services itself.
package fanout
