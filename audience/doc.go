// Package audience decides who a send, a segment or an audience-list query
// selects, with the one filter engine (package filter), so a segment's
// preview count, the audience list and a send always agree.
//
// # What it owns
//
//   - Selector: a send's target compiled once (external ids, topic, inline
//     filters, saved segments to include and exclude), and the store query
//     that walks one shard of it. Fan-out and segment preview both use it.
//   - Count: how many subscribed browsers a set of selectors reaches, in one
//     walk of the website's audience.
//   - List: the audience list of spec 4.5 (every query parameter, cursor
//     paging, the optional total) over store.People pages.
//
// # What it must never do
//
// No HTTP and no API error codes beyond the typed errors it returns (the api
// maps them); no writes. Limits of the spec (20 rules, 5 topics, 10 tags) are
// the api's to enforce.
package audience
