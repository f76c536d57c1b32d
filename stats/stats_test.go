package stats

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/relaybell/relaybell/store"
)

func zone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// A day starts at its first instant, also where the clocks skip midnight,
// and lasts 23, 24 or 25 hours.
func TestDayStart(t *testing.T) {
	f := func(tz, day, wantStart string, wantHours float64) {
		t.Helper()
		d, err := ParseDay(day)
		if err != nil {
			t.Fatal(err)
		}
		loc := zone(t, tz)
		start, next := d.Start(loc), d.AddDays(1).Start(loc)
		if got := start.UTC().Format(time.RFC3339); got != wantStart {
			t.Errorf("%s %s starts at %s, want %s", tz, day, got, wantStart)
		}
		if got := next.Sub(start).Hours(); got != wantHours {
			t.Errorf("%s %s lasts %v hours, want %v", tz, day, got, wantHours)
		}
		if DayOf(start.In(loc)) != d || DayOf(start.Add(-time.Nanosecond).In(loc)) == d {
			t.Errorf("%s %s: %s is not its first instant", tz, day, start)
		}
	}
	f("Europe/Paris", "2026-03-29", "2026-03-28T23:00:00Z", 23)
	f("Europe/Paris", "2026-10-25", "2026-10-24T22:00:00Z", 25)
	f("Europe/Paris", "2026-06-01", "2026-05-31T22:00:00Z", 24)
	f("Asia/Kathmandu", "2026-02-28", "2026-02-27T18:15:00Z", 24)
	f("UTC", "2024-02-29", "2024-02-29T00:00:00Z", 24)
	// Midnight skipped: the day starts at 01:00, an hour short.
	f("America/Havana", "2024-03-10", "2024-03-10T05:00:00Z", 23)
	f("America/Santiago", "2024-09-08", "2024-09-08T04:00:00Z", 23)
	// The day before keeps its 24 hours.
	f("America/Havana", "2024-03-09", "2024-03-09T05:00:00Z", 24)
}

func TestParseDay(t *testing.T) {
	for _, s := range []string{"", "2026-02-30", "2026-2-3", "yesterday", "2026-03-01T00:00:00Z"} {
		if _, err := ParseDay(s); err == nil {
			t.Errorf("ParseDay(%q): no error", s)
		}
	}
	if d, err := ParseDay(" 2026-03-01 "); err != nil || d != (Day{2026, time.March, 1}) || d.String() != "2026-03-01" {
		t.Errorf("ParseDay: %v %v", d, err)
	}
}

func TestRange(t *testing.T) {
	now := time.Date(2026, 3, 1, 23, 30, 0, 0, time.UTC) // already the 2nd in Tokyo
	f := func(from, to Day, tz string, wantFrom, wantTo string, wantErr error) {
		t.Helper()
		gotFrom, gotTo, err := Query{From: from, To: to, Loc: zone(t, tz), Now: now}.Range()
		if !errors.Is(err, wantErr) || (err == nil && (gotFrom.String() != wantFrom || gotTo.String() != wantTo)) {
			t.Errorf("%v %v %s: %s %s %v", from, to, tz, gotFrom, gotTo, err)
		}
	}
	f(Day{}, Day{}, "UTC", "2026-01-31", "2026-03-01", nil)
	f(Day{}, Day{}, "Asia/Tokyo", "2026-02-01", "2026-03-02", nil)
	f(Day{2026, 3, 1}, Day{}, "UTC", "2026-03-01", "2026-03-01", nil)
	f(Day{2026, 3, 2}, Day{}, "UTC", "", "", ErrRange)
	f(Day{}, Day{2024, 12, 31}, "UTC", "2024-12-02", "2024-12-31", nil)
	f(Day{2024, 1, 1}, Day{2024, 12, 31}, "UTC", "2024-01-01", "2024-12-31", nil)
	f(Day{2023, 12, 31}, Day{2024, 12, 31}, "UTC", "", "", ErrRange)
	f(Day{2024, 1, 2}, Day{2024, 1, 1}, "UTC", "", "", ErrRange)
}

// fakeReader answers Activity with its counts and keeps the bounds it
// was given.
type fakeReader struct {
	act    store.Activity
	bounds []time.Time
}

func (f *fakeReader) Activity(_ context.Context, _ string, bounds []time.Time) (store.Activity, error) {
	f.bounds = bounds
	return f.act, nil
}

// Read asks for the bounds of the days and folds the spans into days:
// subscribers walk forward from the first day's start, the rest are the
// span's, totals sums.
func TestRead(t *testing.T) {
	r := &fakeReader{act: store.Activity{Subscribers: 10, Start: 3, Spans: []store.ActivitySpan{
		{NewSubscribers: 2, Sent: 3, Clicked: 1, Revenue: 0.1},
		{Unsubscribed: 1},
		{NewSubscribers: 4, Notifications: 1, Recipients: 7, Sent: 6, Delivered: 5, Clicked: 2, Conversions: 1, Revenue: 0.2},
	}}}
	loc := zone(t, "Europe/Paris")
	rep, err := Read(context.Background(), r, Query{WebsiteID: "w", From: Day{2026, 3, 28}, To: Day{2026, 3, 30}, Loc: loc})
	if err != nil {
		t.Fatal(err)
	}
	wantBounds := []string{"2026-03-27T23:00:00Z", "2026-03-28T23:00:00Z", "2026-03-29T22:00:00Z", "2026-03-30T22:00:00Z"}
	for i, b := range r.bounds {
		if i >= len(wantBounds) || b.UTC().Format(time.RFC3339) != wantBounds[i] {
			t.Fatalf("bounds %v, want %v", r.bounds, wantBounds)
		}
	}
	want := Report{From: "2026-03-28", To: "2026-03-30", Timezone: "Europe/Paris",
		Totals: Counts{Subscribers: 10, NewSubscribers: 6, Unsubscribed: 1, Notifications: 1, Recipients: 7, Sent: 9,
			Delivered: 5, Clicked: 3, Ctr: 33.3, Conversions: 1, Revenue: 0.3},
		Days: []DayStats{
			{"2026-03-28", Counts{Subscribers: 5, NewSubscribers: 2, Sent: 3, Clicked: 1, Ctr: 33.3, Revenue: 0.1}},
			{"2026-03-29", Counts{Subscribers: 4, Unsubscribed: 1}},
			{"2026-03-30", Counts{Subscribers: 8, NewSubscribers: 4, Notifications: 1, Recipients: 7, Sent: 6,
				Delivered: 5, Clicked: 2, Ctr: 33.3, Conversions: 1, Revenue: 0.2}},
		}}
	if !reflect.DeepEqual(rep, want) {
		t.Errorf("report\n %+v\nwant\n %+v", rep, want)
	}
}
