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
// What the numbers can say is bounded by what the store keeps: a browser
// that turns notifications off or expires is deleted, with no time of its
// leaving. So a past day's subscribers are the browsers subscribed now
// that had subscribed by its end, newSubscribers the browsers subscribed
// now that subscribed that day, and unsubscribed the people (not browsers)
// whose last browser left that day and who have not come back.
package stats
