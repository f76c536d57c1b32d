package reports

import (
	"time"

	"github.com/relaybell/relaybell/stats"
	"github.com/relaybell/relaybell/store"
)

// Period is the days a report covers, first and last included, in the
// website's time zone, and the period before it that its figures are
// compared with.
type Period struct {
	From, To         stats.Day
	PrevFrom, PrevTo stats.Day
}

// Days is the period's length in days.
func (p Period) Days() int { return p.To.Sub(p.From) + 1 }

// Last is the last whole period of frequency before now in loc: the day
// before (daily), the seven days before (weekly, and off: a test report
// of a website that has none), or the month before (monthly).
func Last(frequency string, now time.Time, loc *time.Location) Period {
	today := stats.DayOf(now.In(loc))
	switch frequency {
	case store.ReportDaily:
		d := today.AddDays(-1)
		return Period{From: d, To: d, PrevFrom: d.AddDays(-1), PrevTo: d.AddDays(-1)}
	case store.ReportMonthly:
		first := stats.Day{Year: today.Year, Month: today.Month, Day: 1}
		to := first.AddDays(-1)
		from := stats.Day{Year: to.Year, Month: to.Month, Day: 1}
		prevTo := from.AddDays(-1)
		return Period{From: from, To: to, PrevFrom: stats.Day{Year: prevTo.Year, Month: prevTo.Month, Day: 1}, PrevTo: prevTo}
	default:
		to := today.AddDays(-1)
		from := to.AddDays(-6)
		return Period{From: from, To: to, PrevFrom: from.AddDays(-7), PrevTo: from.AddDays(-1)}
	}
}
