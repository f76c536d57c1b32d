package notification

import (
	"hash/fnv"
	"slices"
	"time"

	"github.com/relaybell/relaybell/store"
)

// DefaultSmartHour is the local hour a smart-time send reaches a browser
// whose most active hour is not known yet: mid-morning, when most people
// read their messages.
const DefaultSmartHour = 10

// WavePlan is how a send goes out in waves instead of all at once:
//
//   - per time zone: each browser at LocalTime on its own wall clock (its
//     subscriber's time zone, else the website's), the next time that
//     clock reads it, at once when it reads it now. Every browser due at
//     the same moment is one wave, so a send has one wave per distinct
//     moment its audience's zones give, all within the next 24 hours.
//   - smart time: the same, at the top of each subscriber's most active
//     local hour (store.Subscriber.SmartHour, DefaultSmartHour until
//     known); a browser whose hour is the current one gets it at once.
//   - A/B auto-winner (neither of the above): wave 0, at once, is the test
//     group, testPercent of the audience split between A and B; wave 1,
//     afterHours later, is everyone else, with the variant that had the
//     better click rate. With per time zone or smart time the auto-winner
//     does not apply (there is no moment everyone has seen the test) and
//     the send is a plain A/B split.
//
// Moments are taken to the minute from the send's start.
type WavePlan struct {
	start  time.Time
	siteTZ string
	// Per time zone or smart time.
	timed        bool
	smart        bool
	hour, minute int
	// Auto-winner.
	testPercent, afterHours int
}

// InWaves reports whether a send with this content goes out in waves.
func (c *Content) InWaves() bool {
	_, _, timed := clock(c.LocalTime)
	return (c.PerTimezone && timed) || c.SmartTime || (c.B != nil && c.ABTest != nil && c.ABTest.AutoWinner)
}

// NewWavePlan returns the wave plan of a send started at start on a
// website in zone siteTZ, or nil when the send goes out at once.
func NewWavePlan(c *Content, siteTZ string, start time.Time) *WavePlan {
	if !c.InWaves() {
		return nil
	}
	p := &WavePlan{start: start.UTC().Truncate(time.Minute), siteTZ: siteTZ}
	switch {
	case c.PerTimezone:
		p.timed = true
		p.hour, p.minute, _ = clock(c.LocalTime)
	case c.SmartTime:
		p.timed, p.smart = true, true
	default:
		p.testPercent, p.afterHours = c.ABTest.TestPercent, c.ABTest.AfterHours
	}
	return p
}

// AutoWinner reports whether the plan is an A/B test group then a winner.
func (p *WavePlan) AutoWinner() bool { return !p.timed }

// Dues returns the due moments of the waves, earliest first: the distinct
// moments of the audience's zones (at least one), or the auto-winner's
// two.
func (p *WavePlan) Dues(zones []store.Zone) []time.Time {
	if !p.timed {
		return []time.Time{p.start, p.start.Add(time.Duration(p.afterHours) * time.Hour)}
	}
	dues := []time.Time{}
	for _, z := range zones {
		dues = append(dues, p.due(z.Timezone, z.SmartHour))
	}
	if len(dues) == 0 {
		dues = append(dues, p.start) // nobody to wait for
	}
	slices.SortFunc(dues, time.Time.Compare)
	return slices.CompactFunc(dues, time.Time.Equal)
}

// Selects reports whether wave w, due at due, includes the recipient.
func (p *WavePlan) Selects(notificationID string, r *store.Recipient, w int, due time.Time) bool {
	if !p.timed {
		return InTestGroup(notificationID, r.Endpoint.ID, p.testPercent) == (w == 0)
	}
	return p.due(r.Subscriber.Timezone, r.Subscriber.SmartHour).Equal(due)
}

// due is when a browser in zone tz with that smart hour gets the send.
func (p *WavePlan) due(tz string, smartHour *int) time.Time {
	if tz == "" {
		tz = p.siteTZ
	}
	loc := store.Location(tz)
	if !p.smart {
		return nextWallClock(p.start, loc, p.hour, p.minute)
	}
	h := DefaultSmartHour
	if smartHour != nil {
		h = *smartHour
	}
	if p.start.In(loc).Hour() == h {
		return p.start
	}
	return nextWallClock(p.start, loc, h, 0)
}

// nextWallClock is the first moment at or after from when the wall clock
// in loc reads h:m; on a day a clock change skips that time, time.Date's
// normalisation picks the moment.
func nextWallClock(from time.Time, loc *time.Location, h, m int) time.Time {
	l := from.In(loc)
	at := time.Date(l.Year(), l.Month(), l.Day(), h, m, 0, 0, loc)
	if at.Before(from) {
		at = time.Date(l.Year(), l.Month(), l.Day()+1, h, m, 0, 0, loc)
	}
	return at.UTC()
}

// InTestGroup reports whether an auto-winner send's test group, percent
// of its audience, includes the endpoint. It hashes the notification with
// the endpoint, so each send draws its own group, independent of the A/B
// split (which hashes the endpoint alone).
func InTestGroup(notificationID, endpointID string, percent int) bool {
	h := fnv.New32a()
	h.Write([]byte(notificationID))
	h.Write([]byte{'/'})
	h.Write([]byte(endpointID))
	return int(h.Sum32()%100) < percent
}
