package notification

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/relaybell/relaybell/store"
)

func utc(s string) time.Time {
	t, err := time.Parse("2006-01-02 15:04", s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestNextWallClock(t *testing.T) {
	f := func(from, tz string, h, m int, want string) {
		t.Helper()
		got := nextWallClock(utc(from), store.Location(tz), h, m)
		if !got.Equal(utc(want)) {
			t.Errorf("next %02d:%02d in %s from %s = %s, want %s", h, m, tz, from, got.Format("2006-01-02 15:04"), want)
		}
	}
	f("2026-03-01 12:00", "UTC", 12, 0, "2026-03-01 12:00") // now counts
	f("2026-03-01 12:00", "UTC", 11, 59, "2026-03-02 11:59")
	f("2026-03-01 12:00", "America/New_York", 9, 0, "2026-03-01 14:00")
	f("2026-03-01 12:00", "Asia/Kathmandu", 9, 0, "2026-03-02 03:15")
	// Spring forward in Berlin (29 March 2026, 02:00 -> 03:00): 09:00 is
	// CEST that day.
	f("2026-03-28 12:00", "Europe/Berlin", 9, 0, "2026-03-29 07:00")
	// 02:30 does not exist that day; time.Date moves it by the offset.
	got := nextWallClock(utc("2026-03-28 12:00"), store.Location("Europe/Berlin"), 2, 30)
	if d := got.Sub(utc("2026-03-28 12:00")); d <= 0 || d > 24*time.Hour {
		t.Errorf("skipped wall time gave %s, not within 24 hours", got)
	}
	// Fall back in New York (1 November 2026): 09:00 is EST that day.
	f("2026-10-31 20:00", "America/New_York", 9, 0, "2026-11-01 14:00")
}

func TestWavePlanDues(t *testing.T) {
	hour := func(h int) *int { return &h }
	c := &Content{PerTimezone: true, LocalTime: "08:30"}
	p := NewWavePlan(c, "Europe/Paris", utc("2026-07-10 06:45").Add(17*time.Second))
	dues := p.Dues([]store.Zone{
		{Timezone: ""},                                  // the website's: 06:30 UTC tomorrow
		{Timezone: "Europe/Paris"},                      // the same moment
		{Timezone: "Europe/Paris", SmartHour: hour(20)}, // smart hour ignored
		{Timezone: "America/Los_Angeles"},               // 15:30 UTC today
		{Timezone: "Asia/Tokyo"},                        // 23:30 UTC today
	})
	want := []time.Time{utc("2026-07-10 15:30"), utc("2026-07-10 23:30"), utc("2026-07-11 06:30")}
	if !slices.EqualFunc(dues, want, time.Time.Equal) {
		t.Fatalf("dues %v, want %v", dues, want)
	}
	if got := p.Dues(nil); len(got) != 1 || !got[0].Equal(utc("2026-07-10 06:45")) {
		t.Fatalf("no audience: %v, want one wave at the start", got)
	}

	smart := NewWavePlan(&Content{SmartTime: true}, "UTC", utc("2026-07-10 06:45"))
	dues = smart.Dues([]store.Zone{{Timezone: "UTC"}, {Timezone: "UTC", SmartHour: hour(6)}, {Timezone: "UTC", SmartHour: hour(5)}})
	want = []time.Time{utc("2026-07-10 06:45"), utc("2026-07-10 10:00"), utc("2026-07-11 05:00")}
	if !slices.EqualFunc(dues, want, time.Time.Equal) {
		t.Fatalf("smart dues %v, want %v", dues, want)
	}

	ab := &Content{B: &Variant{}, ABTest: &ABSettings{AutoWinner: true, TestPercent: 20, AfterHours: 3}}
	dues = NewWavePlan(ab, "UTC", utc("2026-07-10 06:45")).Dues(nil)
	want = []time.Time{utc("2026-07-10 06:45"), utc("2026-07-10 09:45")}
	if !slices.EqualFunc(dues, want, time.Time.Equal) {
		t.Fatalf("auto-winner dues %v, want %v", dues, want)
	}
	// Timing wins over the auto-winner, and a plain send has no plan.
	ab.SmartTime = true
	if p := NewWavePlan(ab, "UTC", utc("2026-07-10 06:45")); p == nil || p.AutoWinner() {
		t.Fatal("smart time with auto-winner is not a timed plan")
	}
	if p := NewWavePlan(&Content{B: &Variant{}}, "UTC", time.Now()); p != nil {
		t.Fatal("a plain A/B send has a wave plan")
	}
	if p := NewWavePlan(&Content{PerTimezone: true}, "UTC", time.Now()); p != nil {
		t.Fatal("per time zone without a local time has a wave plan")
	}
}

func TestVariantAfterTheWinner(t *testing.T) {
	c := &Content{B: &Variant{}, ABTest: &ABSettings{AutoWinner: true, TestPercent: 25}}
	inTest, rest := 0, 0
	for i := range 400 {
		id := fmt.Sprintf("endpoint-%d", i)
		before := c.Variant("n1", id, "")
		after := c.Variant("n1", id, "b")
		if InTestGroup("n1", id, 25) {
			inTest++
			if after != before {
				t.Fatalf("test group endpoint %s changed variant %s -> %s", id, before, after)
			}
		} else {
			rest++
			if after != "b" {
				t.Fatalf("endpoint %s outside the test group got %s after the winner", id, after)
			}
		}
	}
	if inTest < 70 || inTest > 130 {
		t.Fatalf("test group %d of 400 at 25%%", inTest)
	}
	// Without the auto-winner the winner argument is ignored.
	plain := &Content{B: &Variant{}}
	if plain.Variant("n1", "e", "b") != plain.Variant("n1", "e", "") {
		t.Fatal("a plain A/B send took a winner")
	}
}
