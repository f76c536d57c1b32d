package api

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/store"
)

// zeroDays is the days from first, n of them, with nothing but
// subscribers, as GET /stats writes them.
func zeroDays(first time.Time, n int, subscribers int64) string {
	days := make([]string, n)
	for i := range days {
		days[i] = fmt.Sprintf(`{"date":%q,"subscribers":%d,"newSubscribers":0,"unsubscribed":0,"notifications":0,`+
			`"recipients":0,"sent":0,"delivered":0,"clicked":0,"ctr":0,"conversions":0,"revenue":0}`,
			first.AddDate(0, 0, i).Format(time.DateOnly), subscribers)
	}
	return strings.Join(days, ",")
}

const zeroTotals = `"totals":{"subscribers":0,"newSubscribers":0,"unsubscribed":0,"notifications":0,"recipients":0,` +
	`"sent":0,"delivered":0,"clicked":0,"ctr":0,"conversions":0,"revenue":0}`

// statsSubscribe registers a browser of the website at the time given,
// straight in the store.
func statsSubscribe(t *testing.T, h *harness, websiteID, at, externalID string) store.SubscriptionInput {
	t.Helper()
	when, err := time.Parse(time.RFC3339Nano, at)
	if err != nil {
		t.Fatal(err)
	}
	id := uuid.NewString()
	in := store.SubscriptionInput{WebsiteID: websiteID, Endpoint: "https://fcm.googleapis.com/fcm/send/" + id,
		P256dh: "p-" + id, Auth: "a-" + id[:8], ExternalID: externalID, At: when}
	if _, err := h.st.UpsertSubscription(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	return in
}

// statsNotification stores a notification of the website made at the
// time given, with its counters.
func statsNotification(t *testing.T, h *harness, websiteID, at string, edit func(*store.Notification)) {
	t.Helper()
	when, err := time.Parse(time.RFC3339Nano, at)
	if err != nil {
		t.Fatal(err)
	}
	n := store.Notification{ID: uuid.NewString(), WebsiteID: websiteID, Status: store.StatusSent, Title: "n", CreatedAt: when}
	if edit != nil {
		edit(&n)
	}
	if err := h.st.CreateNotification(context.Background(), &n); err != nil {
		t.Fatal(err)
	}
}

// Without data or parameters: the 30 days that end today in the
// website's time zone, every one zero.
func TestStatsDefaults(t *testing.T) {
	h := newHarness(t) // UTC; today is 2026-03-01
	r := h.do("GET", "/api/v1/stats", "", auth(h.site.APIKey)...)
	expectBody(t, r, 200, `{"from":"2026-01-31","to":"2026-03-01","timezone":"UTC",`+zeroTotals+`,"days":[`+
		zeroDays(time.Date(2026, 1, 31, 0, 0, 0, 0, time.UTC), 30, 0)+`],"prompts":[]}`)

	// to alone: the 30 days that end with it; from alone: up to today.
	r = h.do("GET", "/api/v1/stats?to=2026-01-01", "", auth(h.site.APIKey)...)
	expectBody(t, r, 200, `{"from":"2025-12-03","to":"2026-01-01","timezone":"UTC",`+zeroTotals+`,"days":[`+
		zeroDays(time.Date(2025, 12, 3, 0, 0, 0, 0, time.UTC), 30, 0)+`],"prompts":[]}`)
	r = h.do("GET", "/api/v1/stats?from=2026-02-27&tz=Asia/Tokyo", "", auth(h.site.APIKey)...)
	expectBody(t, r, 200, `{"from":"2026-02-27","to":"2026-03-01","timezone":"Asia/Tokyo",`+zeroTotals+`,"days":[`+
		zeroDays(time.Date(2026, 2, 27, 0, 0, 0, 0, time.UTC), 3, 0)+`],"prompts":[]}`)

	// 366 days is the longest range.
	r = h.do("GET", "/api/v1/stats?from=2024-01-01&to=2024-12-31", "", auth(h.site.APIKey)...)
	expectBody(t, r, 200, `{"from":"2024-01-01","to":"2024-12-31","timezone":"UTC",`+zeroTotals+`,"days":[`+
		zeroDays(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), 366, 0)+`],"prompts":[]}`)
}

// Days in Europe/Paris around the start of summer time (2026-03-29 has 23
// hours), with another website's data at the same moments.
func TestStatsDaysAcrossDST(t *testing.T) {
	h := newHarness(t)
	h.clock.Add(31 * 24 * time.Hour) // 2026-04-01
	paris, err := CreateWebsite(context.Background(), h.st, NewWebsite{Name: "Paris", URL: "https://paris.example",
		Timezone: "Europe/Paris"}, testStart)
	if err != nil {
		t.Fatal(err)
	}
	p := paris.WebsiteID
	statsSubscribe(t, h, p, "2026-03-27T12:00:00Z", "bob")      // before the range
	statsSubscribe(t, h, p, "2026-03-28T22:59:59.999Z", "")     // 28th, 23:59:59.999 CET
	statsSubscribe(t, h, p, "2026-03-28T23:00:00Z", "")         // 29th, midnight CET
	statsSubscribe(t, h, p, "2026-03-29T21:59:59.999Z", "")     // 29th, 23:59:59.999 CEST
	statsSubscribe(t, h, p, "2026-03-29T22:00:00Z", "")         // 30th, midnight CEST
	anon := statsSubscribe(t, h, p, "2026-03-30T08:00:00Z", "") // 30th
	statsSubscribe(t, h, p, "2026-03-31T10:00:00Z", "")         // after the range
	// The anonymous browser signs in as bob, who has a record already: it
	// moves there and stays subscribed (its record is left empty).
	anon.ExternalID, anon.At = "bob", time.Date(2026, 3, 30, 9, 0, 0, 0, time.UTC)
	if _, err := h.st.UpsertSubscription(context.Background(), anon); err != nil {
		t.Fatal(err)
	}
	statsNotification(t, h, p, "2026-03-28T10:00:00Z", func(n *store.Notification) {
		n.Automation, n.Recipients, n.Sent, n.Delivered, n.Clicked = true, 5, 5, 4, 1
	})
	statsNotification(t, h, p, "2026-03-29T21:30:00Z", func(n *store.Notification) { // 29th, 23:30 CEST
		n.Recipients, n.Sent, n.Delivered, n.Clicked, n.Conversions, n.Revenue = 12, 10, 9, 3, 2, 12.5
	})
	statsNotification(t, h, p, "2026-03-29T12:00:00Z", func(n *store.Notification) {
		n.Status, n.Recipients = store.StatusDraft, 1000
	})
	statsNotification(t, h, p, "2026-03-29T22:00:00Z", func(n *store.Notification) { // 30th, midnight CEST
		n.Recipients, n.Sent, n.Delivered, n.Clicked, n.Conversions, n.Revenue = 3, 3, 2, 1, 1, 7.25
	})
	statsNotification(t, h, p, "2026-03-31T00:00:00Z", func(n *store.Notification) { n.Sent = 1000 })
	// The other website's, in the same days.
	statsSubscribe(t, h, h.site.WebsiteID, "2026-03-29T12:00:00Z", "")
	statsNotification(t, h, h.site.WebsiteID, "2026-03-29T12:00:00Z", func(n *store.Notification) {
		n.Recipients, n.Sent, n.Delivered, n.Clicked, n.Conversions, n.Revenue = 100, 100, 90, 50, 5, 99
	})

	r := h.do("GET", "/api/v1/stats?from=2026-03-28&to=2026-03-30", "", auth(paris.APIKey)...)
	expectBody(t, r, 200, `{"from":"2026-03-28","to":"2026-03-30","timezone":"Europe/Paris",`+
		`"totals":{"subscribers":7,"newSubscribers":5,"unsubscribed":0,"notifications":3,"recipients":20,"sent":18,"delivered":15,"clicked":5,"ctr":27.8,"conversions":3,"revenue":19.75},"days":[`+
		`{"date":"2026-03-28","subscribers":2,"newSubscribers":1,"unsubscribed":0,"notifications":1,"recipients":5,"sent":5,"delivered":4,"clicked":1,"ctr":20,"conversions":0,"revenue":0},`+
		`{"date":"2026-03-29","subscribers":4,"newSubscribers":2,"unsubscribed":0,"notifications":1,"recipients":12,"sent":10,"delivered":9,"clicked":3,"ctr":30,"conversions":2,"revenue":12.5},`+
		`{"date":"2026-03-30","subscribers":6,"newSubscribers":2,"unsubscribed":0,"notifications":1,"recipients":3,"sent":3,"delivered":2,"clicked":1,"ctr":33.3,"conversions":1,"revenue":7.25}],"prompts":[]}`)

	// The other website sees its own alone; in UTC its browser came on the
	// 29th, its notification too.
	r = h.do("GET", "/api/v1/stats?from=2026-03-28&to=2026-03-30", "", auth(h.site.APIKey)...)
	expectBody(t, r, 200, `{"from":"2026-03-28","to":"2026-03-30","timezone":"UTC",`+
		`"totals":{"subscribers":1,"newSubscribers":1,"unsubscribed":0,"notifications":1,"recipients":100,"sent":100,"delivered":90,"clicked":50,"ctr":50,"conversions":5,"revenue":99},"days":[`+
		zeroDays(time.Date(2026, 3, 28, 0, 0, 0, 0, time.UTC), 1, 0)+`,`+
		`{"date":"2026-03-29","subscribers":1,"newSubscribers":1,"unsubscribed":0,"notifications":1,"recipients":100,"sent":100,"delivered":90,"clicked":50,"ctr":50,"conversions":5,"revenue":99},`+
		zeroDays(time.Date(2026, 3, 30, 0, 0, 0, 0, time.UTC), 1, 1)+`],"prompts":[]}`)
}

// Browsers that left count where they were subscribed: turned off
// through the SDK's route, or erased with their person (DELETE
// /subscribers/{id}). The store records a removal at the current time, so
// the clock is today's here.
func TestStatsRemovals(t *testing.T) {
	h := newHarness(t)
	now := time.Now().UTC()
	if left := now.Truncate(24 * time.Hour).Add(24 * time.Hour).Sub(now); left < 10*time.Second {
		time.Sleep(left + time.Second) // the removals must fall on the clock's today
		now = time.Now().UTC()
	}
	h.clock.Add(now.Sub(testStart))
	today := now.Truncate(24 * time.Hour)
	yesterday := today.AddDate(0, 0, -1)
	at := func(day time.Time, hour int) string {
		return day.Add(time.Duration(hour) * time.Hour).Format(time.RFC3339)
	}
	w := h.site.WebsiteID
	statsSubscribe(t, h, w, at(yesterday, -20), "")      // before the range, kept
	off := statsSubscribe(t, h, w, at(yesterday, 1), "") // turned off today
	statsSubscribe(t, h, w, at(yesterday, 2), "eve")     // erased today
	statsSubscribe(t, h, w, at(yesterday, 3), "")        // kept
	statsSubscribe(t, h, w, at(yesterday, 4), "")        // kept
	ann, site := h.owner(t, "ann@example.com", "Shop")   // another website's
	gone := statsSubscribe(t, h, site.ID, at(yesterday, 1), "")
	for _, c := range []struct{ project, endpoint string }{{h.site.ProjectID, off.Endpoint}, {site.ProjectID, gone.Endpoint}} {
		r := h.do("DELETE", "/api/v1/projects/"+c.project+"/subscriptions", fmt.Sprintf(`{"endpoint":%q}`, c.endpoint))
		expectBody(t, r, 200, `{"ok":true}`)
	}
	if r := h.do("DELETE", "/api/v1/subscribers/eve", "", auth(h.site.APIKey)...); r.status != 200 {
		t.Fatalf("erase: %d %s", r.status, r.body)
	}

	day := func(d time.Time, subscribers, newSubscribers, unsubscribed int) string {
		return fmt.Sprintf(`{"date":%q,"subscribers":%d,"newSubscribers":%d,"unsubscribed":%d,"notifications":0,`+
			`"recipients":0,"sent":0,"delivered":0,"clicked":0,"ctr":0,"conversions":0,"revenue":0}`,
			d.Format(time.DateOnly), subscribers, newSubscribers, unsubscribed)
	}
	totals := func(subscribers, newSubscribers, unsubscribed int) string {
		return fmt.Sprintf(`"totals":{"subscribers":%d,"newSubscribers":%d,"unsubscribed":%d,"notifications":0,"recipients":0,`+
			`"sent":0,"delivered":0,"clicked":0,"ctr":0,"conversions":0,"revenue":0}`, subscribers, newSubscribers, unsubscribed)
	}
	query := "/api/v1/stats?from=" + yesterday.Format(time.DateOnly) + "&to=" + today.Format(time.DateOnly)
	r := h.do("GET", query, "", auth(h.site.APIKey)...)
	expectBody(t, r, 200, `{"from":"`+yesterday.Format(time.DateOnly)+`","to":"`+today.Format(time.DateOnly)+`","timezone":"UTC",`+
		totals(3, 4, 2)+`,"days":[`+day(yesterday, 5, 4, 0)+`,`+day(today, 3, 0, 2)+`],"prompts":[]}`)
	r = ann.do("GET", query+"&tz=UTC", "", projectHeader, site.ProjectID)
	expectBody(t, r, 200, `{"from":"`+yesterday.Format(time.DateOnly)+`","to":"`+today.Format(time.DateOnly)+`","timezone":"UTC",`+
		totals(0, 1, 1)+`,"days":[`+day(yesterday, 1, 1, 0)+`,`+day(today, 0, 0, 1)+`],"prompts":[]}`)
}

// A zone 5:45 ahead of UTC: days start at 18:15 UTC.
func TestStatsQuarterHourZone(t *testing.T) {
	h := newHarness(t)
	w := h.site.WebsiteID
	statsNotification(t, h, w, "2026-02-27T18:14:59.999Z", func(n *store.Notification) { n.Sent, n.Clicked = 1, 1 })
	statsNotification(t, h, w, "2026-02-27T18:15:00Z", func(n *store.Notification) { n.Sent = 4 })
	r := h.do("GET", "/api/v1/stats?from=2026-02-27&to=2026-02-28&tz=Asia/Kathmandu", "", auth(h.site.APIKey)...)
	expectBody(t, r, 200, `{"from":"2026-02-27","to":"2026-02-28","timezone":"Asia/Kathmandu",`+
		`"totals":{"subscribers":0,"newSubscribers":0,"unsubscribed":0,"notifications":2,"recipients":0,"sent":5,"delivered":0,"clicked":1,"ctr":20,"conversions":0,"revenue":0},"days":[`+
		`{"date":"2026-02-27","subscribers":0,"newSubscribers":0,"unsubscribed":0,"notifications":1,"recipients":0,"sent":1,"delivered":0,"clicked":1,"ctr":100,"conversions":0,"revenue":0},`+
		`{"date":"2026-02-28","subscribers":0,"newSubscribers":0,"unsubscribed":0,"notifications":1,"recipients":0,"sent":4,"delivered":0,"clicked":0,"ctr":0,"conversions":0,"revenue":0}],"prompts":[]}`)
}

func TestStatsErrors(t *testing.T) {
	h := newHarness(t) // today is 2026-03-01
	f := func(query string, status int, code, message string) {
		t.Helper()
		extra := ""
		if message != "" {
			extra = fmt.Sprintf(`,"message":%q`, message)
		}
		expectError(t, h.do("GET", "/api/v1/stats"+query, "", auth(h.site.APIKey)...), status, code, extra)
	}
	const badDates = "dates are YYYY-MM-DD and the range must not end before it starts"
	const badRange = "the range must not end before it starts, nor be longer than 366 days"
	f("?tz=Mars/Olympus", 400, CodeInvalidTZ, `unknown time zone "Mars/Olympus"`)
	f("?tz=", 400, CodeInvalidTZ, `unknown time zone ""`)
	f("?tz=Local", 400, CodeInvalidTZ, `unknown time zone "Local"`)
	f("?from=2026-03-02&to=2026-03-01", 400, CodeInvalidRange, badDates)
	f("?from=2026-02-30", 400, CodeInvalidRange, badDates)
	f("?to=2026-3-1", 400, CodeInvalidRange, badDates)
	f("?from=yesterday", 400, CodeInvalidRange, badDates)
	f("?from=2025-01-01&to=2026-01-02", 400, CodeInvalidRange, badRange) // 367 days
	f("?from=2026-03-02", 400, CodeInvalidRange, badRange)               // after today
	expectCode(t, h.do("GET", "/api/v1/stats", ""), 401, CodeNotAuthenticated)
}

// Any key reads it, and the dashboard's session naming the website.
func TestStatsAccess(t *testing.T) {
	h := newHarness(t)
	for _, scopes := range [][]string{{ScopeEventsWrite}, {ScopeSubscribersRead}} {
		r := h.do("GET", "/api/v1/stats?from=2026-03-01&to=2026-03-01", "", auth(h.key(scopes, nil))...)
		expectBody(t, r, 200, `{"from":"2026-03-01","to":"2026-03-01","timezone":"UTC",`+zeroTotals+`,"days":[`+
			zeroDays(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), 1, 0)+`],"prompts":[]}`)
	}
	ann, site := h.owner(t, "ann@example.com", "Shop")
	statsSubscribe(t, h, site.ID, "2026-03-01T08:00:00Z", "")
	r := ann.do("GET", "/api/v1/stats?from=2026-03-01&to=2026-03-01", "", projectHeader, site.ProjectID)
	expectBody(t, r, 200, `{"from":"2026-03-01","to":"2026-03-01","timezone":"`+site.Timezone+`",`+
		`"totals":{"subscribers":1,"newSubscribers":1,"unsubscribed":0,"notifications":0,"recipients":0,"sent":0,"delivered":0,"clicked":0,"ctr":0,"conversions":0,"revenue":0},"days":[`+
		`{"date":"2026-03-01","subscribers":1,"newSubscribers":1,"unsubscribed":0,"notifications":0,"recipients":0,"sent":0,"delivered":0,"clicked":0,"ctr":0,"conversions":0,"revenue":0}],"prompts":[]}`)
	expectCode(t, ann.do("GET", "/api/v1/stats", ""), 400, CodeProjectRequired)
}
