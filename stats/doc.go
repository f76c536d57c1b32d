// Package stats owns a website's report over days: subscribers, sends,
// clicks and CTR per day of a range in a time zone, with the range's totals
// (what GET /api/v1/stats answers and the dashboard's Home page draws).
//
// It decides what a day is (Day; a day's first instant in a zone, exact on
// days of 23 or 25 hours and where midnight is skipped), which range a
// request means (the last 30 days by default, at most 366), and how the
// store's counts per span of time become days. The counting itself is the
// store's (store.Stats), aggregated by the engine; this package never reads
// a row per browser or per notification.
//
// Subscribers are browsers. A browser that turns notifications off,
// expires (the push service reports it gone) or is erased with its person
// is deleted, and the store records its removal: the website, when it
// subscribed and when it left, nothing personal. So a day's subscribers
// are the browsers subscribed at its end (those made by then, less those
// removed by then), newSubscribers the browsers that subscribed that day
// and unsubscribed those that left that day, whether or not they are
// subscribed now. A browser that moves to another person when it signs in
// stays subscribed.
//
// That history has two limits. It starts with the store's migration 19:
// browsers removed before it are not known, so the days before it count
// only the browsers still subscribed when it ran. And the store forgets a
// removal after RemovalLife, 400 days (Purger, which the composition root
// runs with the other purges): of a range that starts earlier, the browsers removed more than
// 400 days ago are missing from every count.
package stats
