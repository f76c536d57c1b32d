package stats

import (
	"strings"
	"time"
)

// Day is a calendar date, in no time zone. The zero Day is no date.
type Day struct {
	Year  int
	Month time.Month
	Day   int
}

// ParseDay reads a date written YYYY-MM-DD (surrounding spaces allowed).
func ParseDay(s string) (Day, error) {
	t, err := time.Parse(time.DateOnly, strings.TrimSpace(s))
	if err != nil {
		return Day{}, err
	}
	return DayOf(t), nil
}

// DayOf is the date of t in t's location.
func DayOf(t time.Time) Day {
	y, m, d := t.Date()
	return Day{y, m, d}
}

// IsZero reports whether d is the zero Day.
func (d Day) IsZero() bool { return d == Day{} }

// String is d as YYYY-MM-DD.
func (d Day) String() string { return d.utc().Format(time.DateOnly) }

// AddDays is the date n days after d (before it for a negative n).
func (d Day) AddDays(n int) Day { return DayOf(d.utc().AddDate(0, 0, n)) }

// Sub is the number of days from e to d.
func (d Day) Sub(e Day) int { return int(d.utc().Sub(e.utc()) / (24 * time.Hour)) }

// Start is the first instant of d in loc. Where the clocks skip midnight
// (America/Havana, America/Santiago: 00:00 becomes 01:00), it is the
// moment they skip, the day's 01:00; time.Date would answer the day
// before's 23:00, an hour early.
func (d Day) Start(loc *time.Location) time.Time {
	t := time.Date(d.Year, d.Month, d.Day, 0, 0, 0, 0, loc)
	if DayOf(t) != d {
		if _, end := t.ZoneBounds(); !end.IsZero() {
			return end
		}
	}
	return t
}

// utc is d's midnight in UTC, where every day has 24 hours.
func (d Day) utc() time.Time { return time.Date(d.Year, d.Month, d.Day, 0, 0, 0, 0, time.UTC) }
