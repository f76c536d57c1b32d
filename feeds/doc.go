// Package feeds sends the new items of RSS 2.0, Atom and JSON feeds as
// notifications (issue 35, part 2).
//
// It owns a feed's definition (audience, template, poll settings), the
// mapping of an item to a send ({item.title}, {item.summary}, {item.link},
// {item.image} placeholders), the fetch (conditional GET, a timeout, a body
// limit, bounded redirects, the webhooks' private-address rules and allow
// list) and the poller, a module of the composition root that claims due
// feeds under leases, so any number of nodes may run it.
//
// Exactly once: an item is known by its GUID, else its link. The store's
// ledger has one row per (feed, item) ever seen; a new item is recorded
// pending, and SendFeedItem turns it sent in the transaction that stores
// its notification. Edits, reordering and items dropped and re-added find
// their row and send nothing. A node killed at any point leaves either a
// pending row (sent by the next poll, on any node, once its lease runs
// out) or a sent row with its notification: never both or neither.
//
// No back-catalogue blast: the first fetch of a feed records what it holds
// as seen, but for the sendExisting newest. Sends draw on the website's
// hourly broadcast budget (spec 8.1), each send's unit taken in its
// transaction (never spent on a send a crash lost); a refusal is recorded on the feed and
// its items stay pending until the next hour with room. Sends follow POST
// /notifications' rules through package review: a new account's first
// large broadcast is stored held_for_review, and while the account's
// e-mail address is not verified the items wait. The audience is
// notification.Audience, the one type schedules use too; a deleted topic
// pauses the feeds on it with a feed.paused event in the same transaction
// (store.DeleteTopic).
//
// It must never fetch a private address that is not allow-listed, send an
// item twice, or widen an audience: a feed's audience is required and is
// never everyone unless it says so.
package feeds
