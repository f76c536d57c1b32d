package schedules

import "time"

// searchDays bounds how far Next looks for a day the rule sends on: a
// rule whose days never come (BYMONTHDAY=31 every 12 months from a
// February) has no occurrence.
const searchDays = 10 * 366

// Timing is when a schedule's occurrences are: its rule read on the wall
// clock of Loc, counted (INTERVAL) from Anchor's day, week or month, at
// or after StartsAt and at or before EndsAt when set.
type Timing struct {
	Rule     Rule
	Loc      *time.Location
	Anchor   time.Time
	StartsAt *time.Time
	EndsAt   *time.Time
}

// Next is the first occurrence strictly after after; ok false when there
// is none (past EndsAt, or none within ten years).
func (t Timing) Next(after time.Time) (time.Time, bool) {
	if t.StartsAt != nil && after.Before(*t.StartsAt) {
		after = t.StartsAt.Add(-time.Nanosecond)
	}
	l := after.In(t.Loc)
	// From the day before: a wall time of yesterday's date may be later
	// than after when it fell in a clock change (it never does by more
	// than a day).
	y, m, d := l.Date()
	for i := -1; i < searchDays; i++ {
		day := time.Date(y, m, d+i, 12, 0, 0, 0, time.UTC) // the civil date, free of zones
		if t.EndsAt != nil && day.AddDate(0, 0, -2).After(*t.EndsAt) {
			return time.Time{}, false
		}
		if !t.onDay(day) {
			continue
		}
		for _, h := range t.Rule.ByHour {
			for _, mi := range t.Rule.ByMinute {
				at := WallTime(day.Year(), day.Month(), day.Day(), h, mi, t.Loc)
				if !at.After(after) || (t.StartsAt != nil && at.Before(*t.StartsAt)) {
					continue
				}
				if t.EndsAt != nil && at.After(*t.EndsAt) {
					return time.Time{}, false
				}
				return at, true
			}
		}
	}
	return time.Time{}, false
}

// NextN is up to n occurrences after after, in order.
func (t Timing) NextN(after time.Time, n int) []time.Time {
	out := []time.Time{}
	for len(out) < n {
		at, ok := t.Next(after)
		if !ok {
			break
		}
		out = append(out, at)
		after = at
	}
	return out
}

// civilDay numbers a civil date (at noon UTC) in days since the epoch.
func civilDay(day time.Time) int64 { return day.Unix() / 86400 }

// mod is n modulo m, never negative.
func mod(n, m int64) int64 { return ((n % m) + m) % m }

// onDay reports whether the rule sends on the civil date day.
func (t Timing) onDay(day time.Time) bool {
	r := t.Rule
	ay, am, ad := t.Anchor.In(t.Loc).Date()
	anchor := time.Date(ay, am, ad, 12, 0, 0, 0, time.UTC)
	iv := int64(r.Interval)
	switch r.Freq {
	case Daily:
		if mod(civilDay(day)-civilDay(anchor), iv) != 0 {
			return false
		}
	case Weekly:
		// Weeks start on Monday (WKST=MO).
		week := func(d time.Time) int64 { return (civilDay(d) - int64((int(d.Weekday())+6)%7)) / 7 }
		if mod(week(day)-week(anchor), iv) != 0 {
			return false
		}
	case Monthly:
		months := int64(day.Year()*12+int(day.Month())) - int64(ay*12+int(am))
		if mod(months, iv) != 0 {
			return false
		}
	}
	last := time.Date(day.Year(), day.Month()+1, 0, 12, 0, 0, 0, time.UTC).Day()
	if len(r.ByMonthDay) > 0 {
		ok := false
		for _, md := range r.ByMonthDay {
			if md == day.Day() || (md < 0 && last+md+1 == day.Day()) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	if len(r.ByDay) > 0 {
		ok := false
		for _, wd := range r.ByDay {
			if wd.Day != day.Weekday() {
				continue
			}
			switch {
			case wd.N == 0,
				wd.N > 0 && (day.Day()-1)/7+1 == wd.N,
				wd.N < 0 && (last-day.Day())/7+1 == -wd.N:
				ok = true
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// WallTime is the moment the wall clock of loc reads h:m on the date:
//   - on a day a clock change skips that time (02:30 when clocks go from
//     02:00 to 03:00), the moment the clock jumps (03:00), the first
//     moment after the gap;
//   - on a day it happens twice (01:30 when clocks go from 02:00 back to
//     01:00), the first of the two: it is one wall time, sent once.
func WallTime(y int, mo time.Month, d, h, mi int, loc *time.Location) time.Time {
	t := time.Date(y, mo, d, h, mi, 0, 0, loc)
	want := time.Date(y, mo, d, h, mi, 0, 0, time.UTC)
	wall := func(x time.Time) time.Time {
		l := x.In(loc)
		return time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), l.Minute(), l.Second(), l.Nanosecond(), time.UTC)
	}
	switch got := wall(t); {
	case got.After(want):
		// In a gap, read with the offset before it: the clock jumped
		// over h:m, and the zone that starts at the jump is t's.
		start, _ := t.ZoneBounds()
		if !start.IsZero() && start.After(t.Add(-24*time.Hour)) {
			return start.UTC()
		}
		return t.UTC()
	case got.Before(want):
		// In a gap, read with the offset after it.
		_, end := t.ZoneBounds()
		if !end.IsZero() {
			return end.UTC()
		}
		return t.UTC()
	}
	// A wall time that happens twice: the earlier reading, if the
	// previous zone also shows it.
	start, _ := t.ZoneBounds()
	if !start.IsZero() && t.Sub(start) < 24*time.Hour {
		_, offNow := t.Zone()
		_, offBefore := start.Add(-time.Nanosecond).Zone()
		if earlier := t.Add(time.Duration(offNow-offBefore) * time.Second); earlier.Before(start) && wall(earlier).Equal(want) {
			return earlier.UTC()
		}
	}
	return t.UTC()
}
