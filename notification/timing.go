package notification

import (
	"strconv"
	"time"

	"github.com/relaybell/relaybell/store"
)

// QuietUntil reports whether at falls within the quiet hours q of a website
// in zone tz, and when they end. Quiet hours are a daily span of local wall
// time that may cross midnight (22:00-07:00); on a day a clock change
// shortens or skips, the span follows the wall clock (time.Date's rules).
func QuietUntil(q *store.QuietHours, tz string, at time.Time) (time.Time, bool) {
	if q == nil {
		return time.Time{}, false
	}
	sh, sm, ok1 := clock(q.Start)
	eh, em, ok2 := clock(q.End)
	if !ok1 || !ok2 {
		return time.Time{}, false
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		loc = time.UTC
	}
	local := at.In(loc)
	y, m, d := local.Date()
	// The span that started yesterday may still run; then today's.
	for _, day := range []int{d - 1, d} {
		start := time.Date(y, m, day, sh, sm, 0, 0, loc)
		endDay := day
		if eh*60+em <= sh*60+sm {
			endDay++
		}
		end := time.Date(y, m, endDay, eh, em, 0, 0, loc)
		if !at.Before(start) && at.Before(end) {
			return end.UTC(), true
		}
	}
	return time.Time{}, false
}

// clock reads "HH:MM" (as stored).
func clock(s string) (h, m int, ok bool) {
	if len(s) != 5 || s[2] != ':' {
		return 0, 0, false
	}
	h, err1 := strconv.Atoi(s[:2])
	m, err2 := strconv.Atoi(s[3:])
	return h, m, err1 == nil && err2 == nil && h < 24 && m < 60
}

// Timing is when a send goes out.
type Timing struct {
	// At is the moment it is released; zero means now.
	At time.Time
	// Quiet says it waits for the website's quiet hours to end.
	Quiet bool
}

// SendTiming decides when a send goes out: at a future sendAt, and for a
// non-transactional send no earlier than the end of the quiet hours that
// moment falls in. Per-time-zone and smart-time sends start at once (they
// pick each browser's moment themselves), so neither applies to them.
func SendTiming(r *Request, w store.Website, now time.Time) Timing {
	if boolean(r.PerTimezone) || boolean(r.SmartTime) {
		return Timing{}
	}
	var t Timing
	at := now
	if s, ok := parseSendAt(r.SendAt); ok && s.After(now) {
		at, t.At = s, s
	}
	if !boolean(r.Transactional) {
		if end, quiet := QuietUntil(w.Settings.QuietHours, w.Timezone, at); quiet {
			t.At, t.Quiet = end, true
		}
	}
	return t
}
