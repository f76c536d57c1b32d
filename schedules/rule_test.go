package schedules

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseRule(t *testing.T) {
	ok := func(in, want string) {
		t.Helper()
		r, err := ParseRule(in)
		if err != nil {
			t.Fatalf("ParseRule(%q): %v", in, err)
		}
		if got := r.String(); got != want {
			t.Fatalf("ParseRule(%q) = %q, want %q", in, got, want)
		}
	}
	ok("FREQ=DAILY;BYHOUR=9", "FREQ=DAILY;BYHOUR=9;BYMINUTE=0")
	ok("rrule:freq=weekly;byday=fr,mo,mo;byhour=17,8;byminute=30", "FREQ=WEEKLY;BYDAY=MO,FR;BYHOUR=8,17;BYMINUTE=30")
	ok(" FREQ=MONTHLY;INTERVAL=3;BYDAY=1MO,-1FR,+2TU;BYHOUR=10 ", "FREQ=MONTHLY;INTERVAL=3;BYDAY=-1FR,1MO,2TU;BYHOUR=10;BYMINUTE=0")
	ok("FREQ=MONTHLY;BYMONTHDAY=-1,1,15;BYHOUR=0;BYMINUTE=0,59", "FREQ=MONTHLY;BYMONTHDAY=-1,1,15;BYHOUR=0;BYMINUTE=0,59")
	ok("FREQ=DAILY;INTERVAL=1;BYHOUR=23", "FREQ=DAILY;BYHOUR=23;BYMINUTE=0")

	bad := func(in, message string) {
		t.Helper()
		_, err := ParseRule(in)
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeInvalidRule {
			t.Fatalf("ParseRule(%q): %v, want invalid_rule", in, err)
		}
		if e.Message != message {
			t.Fatalf("ParseRule(%q): %q, want %q", in, e.Message, message)
		}
	}
	bad("", "rule: empty; write e.g. FREQ=DAILY;BYHOUR=9;BYMINUTE=0")
	bad("FREQ=HOURLY;BYHOUR=1", "rule: FREQ must be DAILY, WEEKLY or MONTHLY")
	bad("FREQ=DAILY", "rule: BYHOUR is required: the hours of the day it sends at")
	bad("BYHOUR=9", "rule: FREQ is required (DAILY, WEEKLY or MONTHLY)")
	bad("FREQ=WEEKLY;BYHOUR=9", "rule: a WEEKLY rule needs BYDAY: the days of the week it sends on")
	bad("FREQ=MONTHLY;BYHOUR=9", "rule: a MONTHLY rule needs BYMONTHDAY or BYDAY: the days of the month it sends on")
	bad("FREQ=WEEKLY;BYDAY=MO;BYMONTHDAY=1;BYHOUR=9", "rule: BYMONTHDAY does not go with FREQ=WEEKLY")
	bad("FREQ=WEEKLY;BYDAY=1MO;BYHOUR=9", "rule: a numbered BYDAY (1MO) needs FREQ=MONTHLY")
	bad("FREQ=DAILY;BYHOUR=24", "rule: BYHOUR values must be 0 to 23")
	bad("FREQ=DAILY;BYHOUR=9;BYMINUTE=60", "rule: BYMINUTE values must be 0 to 59")
	bad("FREQ=DAILY;BYHOUR=-1", "rule: BYHOUR values must be 0 to 23")
	bad("FREQ=MONTHLY;BYMONTHDAY=0;BYHOUR=9", "rule: BYMONTHDAY values must be 1 to 31 or -1 to -31")
	bad("FREQ=MONTHLY;BYMONTHDAY=32;BYHOUR=9", "rule: BYMONTHDAY values must be 1 to 31 or -1 to -31")
	bad("FREQ=MONTHLY;BYDAY=6MO;BYHOUR=9", `rule: BYDAY "6MO": the number before the day must be 1 to 5 or -1 to -5`)
	bad("FREQ=WEEKLY;BYDAY=XX;BYHOUR=9", `rule: BYDAY "XX" is not a day (MO, TU, WE, TH, FR, SA, SU, optionally numbered: 1MO, -1FR)`)
	bad("FREQ=DAILY;INTERVAL=0;BYHOUR=9", "rule: INTERVAL must be a whole number from 1 to 1000")
	bad("FREQ=DAILY;COUNT=3;BYHOUR=9", "rule: COUNT is not supported; end a schedule with endsAt")
	bad("FREQ=DAILY;UNTIL=20260101T000000Z;BYHOUR=9", "rule: UNTIL is not supported; end a schedule with endsAt")
	bad("FREQ=DAILY;BYSETPOS=1;BYHOUR=9", "rule: BYSETPOS is not supported (FREQ, INTERVAL, BYDAY, BYMONTHDAY, BYHOUR, BYMINUTE are)")
	bad("FREQ=DAILY;FREQ=DAILY;BYHOUR=9", "rule: FREQ is given twice")
	bad("FREQ=DAILY;;BYHOUR=9", `rule: "" is not KEY=VALUE`)
	bad("FREQ=DAILY;BYHOUR=", `rule: "BYHOUR=" is not KEY=VALUE`)
	bad(strings.Repeat("A", 600), "rule: at most 512 characters")
}

// utc reads a UTC time written 2006-01-02 15:04.
func utc(t *testing.T, s string) time.Time {
	t.Helper()
	at, err := time.Parse("2006-01-02 15:04", s)
	if err != nil {
		t.Fatal(err)
	}
	return at
}

// occurrences lists the rule's first n occurrences in zone after from
// (UTC), each written as its UTC time and its local time.
func occurrences(t *testing.T, rule, zone, from string, n int) []string {
	t.Helper()
	r, err := ParseRule(rule)
	if err != nil {
		t.Fatal(err)
	}
	loc, err := time.LoadLocation(zone)
	if err != nil {
		t.Fatal(err)
	}
	start := utc(t, from)
	var out []string
	for _, at := range (Timing{Rule: r, Loc: loc, Anchor: start}).NextN(start, n) {
		out = append(out, at.UTC().Format("01-02 15:04Z")+" = "+at.In(loc).Format("01-02 15:04 MST"))
	}
	return out
}

func same(t *testing.T, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A 09:00 daily send is at 09:00 local on both sides of each change.
func TestDailyAcrossDST(t *testing.T) {
	same(t, occurrences(t, "FREQ=DAILY;BYHOUR=9", "Europe/Paris", "2026-03-27 12:00", 4), []string{
		"03-28 08:00Z = 03-28 09:00 CET",
		"03-29 07:00Z = 03-29 09:00 CEST",
		"03-30 07:00Z = 03-30 09:00 CEST",
		"03-31 07:00Z = 03-31 09:00 CEST",
	})
	same(t, occurrences(t, "FREQ=DAILY;BYHOUR=9", "Europe/Paris", "2026-10-23 12:00", 3), []string{
		"10-24 07:00Z = 10-24 09:00 CEST",
		"10-25 08:00Z = 10-25 09:00 CET",
		"10-26 08:00Z = 10-26 09:00 CET",
	})
	same(t, occurrences(t, "FREQ=DAILY;BYHOUR=9", "America/New_York", "2026-03-06 20:00", 3), []string{
		"03-07 14:00Z = 03-07 09:00 EST",
		"03-08 13:00Z = 03-08 09:00 EDT",
		"03-09 13:00Z = 03-09 09:00 EDT",
	})
	same(t, occurrences(t, "FREQ=DAILY;BYHOUR=9", "America/New_York", "2026-10-30 20:00", 3), []string{
		"10-31 13:00Z = 10-31 09:00 EDT",
		"11-01 14:00Z = 11-01 09:00 EST",
		"11-02 14:00Z = 11-02 09:00 EST",
	})
}

// A 02:30 that does not exist that day goes at 03:00; a 01:30 that
// happens twice goes once, at its first reading.
func TestDSTGapsAndRepeats(t *testing.T) {
	same(t, occurrences(t, "FREQ=DAILY;BYHOUR=2;BYMINUTE=30", "Europe/Paris", "2026-03-28 00:00", 3), []string{
		"03-28 01:30Z = 03-28 02:30 CET",
		"03-29 01:00Z = 03-29 03:00 CEST",
		"03-30 00:30Z = 03-30 02:30 CEST",
	})
	same(t, occurrences(t, "FREQ=DAILY;BYHOUR=2;BYMINUTE=30", "America/New_York", "2026-03-07 00:00", 3), []string{
		"03-07 07:30Z = 03-07 02:30 EST",
		"03-08 07:00Z = 03-08 03:00 EDT",
		"03-09 06:30Z = 03-09 02:30 EDT",
	})
	// Paris goes back from 03:00 to 02:00: 02:30 happens twice.
	same(t, occurrences(t, "FREQ=DAILY;BYHOUR=2;BYMINUTE=30", "Europe/Paris", "2026-10-24 00:00", 3), []string{
		"10-24 00:30Z = 10-24 02:30 CEST",
		"10-25 00:30Z = 10-25 02:30 CEST",
		"10-26 01:30Z = 10-26 02:30 CET",
	})
	// New York goes back from 02:00 to 01:00: 01:30 happens twice.
	same(t, occurrences(t, "FREQ=DAILY;BYHOUR=1;BYMINUTE=30", "America/New_York", "2026-10-31 00:00", 3), []string{
		"10-31 05:30Z = 10-31 01:30 EDT",
		"11-01 05:30Z = 11-01 01:30 EDT",
		"11-02 06:30Z = 11-02 01:30 EST",
	})
	// Every half hour through the night of the change: each wall time
	// once, the skipped hour's at 03:00 once.
	same(t, occurrences(t, "FREQ=DAILY;BYHOUR=1,2,3;BYMINUTE=0,30", "Europe/Paris", "2026-03-28 23:00", 5), []string{
		"03-29 00:00Z = 03-29 01:00 CET",
		"03-29 00:30Z = 03-29 01:30 CET",
		"03-29 01:00Z = 03-29 03:00 CEST",
		"03-29 01:30Z = 03-29 03:30 CEST",
		"03-29 23:00Z = 03-30 01:00 CEST",
	})
	same(t, occurrences(t, "FREQ=DAILY;BYHOUR=0,1,2;BYMINUTE=30", "America/New_York", "2026-11-01 03:00", 4), []string{
		"11-01 04:30Z = 11-01 00:30 EDT",
		"11-01 05:30Z = 11-01 01:30 EDT",
		"11-01 07:30Z = 11-01 02:30 EST",
		"11-02 05:30Z = 11-02 00:30 EST",
	})
}

func TestWeeklyAndMonthly(t *testing.T) {
	// 2026-06-01 is a Monday.
	same(t, occurrences(t, "FREQ=WEEKLY;BYDAY=MO,FR;BYHOUR=8", "UTC", "2026-06-01 00:00", 4), []string{
		"06-01 08:00Z = 06-01 08:00 UTC",
		"06-05 08:00Z = 06-05 08:00 UTC",
		"06-08 08:00Z = 06-08 08:00 UTC",
		"06-12 08:00Z = 06-12 08:00 UTC",
	})
	same(t, occurrences(t, "FREQ=WEEKLY;INTERVAL=2;BYDAY=WE;BYHOUR=8", "UTC", "2026-06-01 00:00", 3), []string{
		"06-03 08:00Z = 06-03 08:00 UTC",
		"06-17 08:00Z = 06-17 08:00 UTC",
		"07-01 08:00Z = 07-01 08:00 UTC",
	})
	same(t, occurrences(t, "FREQ=DAILY;INTERVAL=3;BYHOUR=8", "UTC", "2026-06-01 09:00", 2), []string{
		"06-04 08:00Z = 06-04 08:00 UTC",
		"06-07 08:00Z = 06-07 08:00 UTC",
	})
	same(t, occurrences(t, "FREQ=MONTHLY;BYMONTHDAY=31;BYHOUR=8", "UTC", "2026-06-01 00:00", 3), []string{
		"07-31 08:00Z = 07-31 08:00 UTC",
		"08-31 08:00Z = 08-31 08:00 UTC",
		"10-31 08:00Z = 10-31 08:00 UTC",
	})
	same(t, occurrences(t, "FREQ=MONTHLY;BYMONTHDAY=-1;BYHOUR=8", "UTC", "2026-01-31 09:00", 2), []string{
		"02-28 08:00Z = 02-28 08:00 UTC",
		"03-31 08:00Z = 03-31 08:00 UTC",
	})
	same(t, occurrences(t, "FREQ=MONTHLY;BYDAY=1MO,-1FR;BYHOUR=8", "UTC", "2026-06-01 09:00", 3), []string{
		"06-26 08:00Z = 06-26 08:00 UTC",
		"07-06 08:00Z = 07-06 08:00 UTC",
		"07-31 08:00Z = 07-31 08:00 UTC",
	})
	same(t, occurrences(t, "FREQ=MONTHLY;INTERVAL=3;BYMONTHDAY=1;BYHOUR=8", "UTC", "2026-06-01 09:00", 2), []string{
		"09-01 08:00Z = 09-01 08:00 UTC",
		"12-01 08:00Z = 12-01 08:00 UTC",
	})
}

func TestStartsAndEnds(t *testing.T) {
	r, _ := ParseRule("FREQ=DAILY;BYHOUR=9")
	starts, ends := utc(t, "2026-06-10 00:00"), utc(t, "2026-06-12 09:00")
	tm := Timing{Rule: r, Loc: time.UTC, Anchor: starts, StartsAt: &starts, EndsAt: &ends}
	got := tm.NextN(utc(t, "2026-06-01 00:00"), 5)
	want := []time.Time{utc(t, "2026-06-10 09:00"), utc(t, "2026-06-11 09:00"), utc(t, "2026-06-12 09:00")}
	if len(got) != len(want) {
		t.Fatalf("%v, want %v", got, want)
	}
	for i := range got {
		if !got[i].Equal(want[i]) {
			t.Fatalf("%v, want %v", got, want)
		}
	}
	// A rule whose day never comes has no occurrence.
	r, _ = ParseRule("FREQ=MONTHLY;INTERVAL=12;BYMONTHDAY=30;BYHOUR=9")
	feb := utc(t, "2026-02-01 00:00")
	if at, ok := (Timing{Rule: r, Loc: time.UTC, Anchor: feb}).Next(feb); ok {
		t.Fatalf("an occurrence at %s", at)
	}
}

func FuzzParseRule(f *testing.F) {
	for _, s := range []string{"FREQ=DAILY;BYHOUR=9", "RRULE:FREQ=WEEKLY;BYDAY=MO,FR;BYHOUR=8,17;BYMINUTE=30",
		"FREQ=MONTHLY;INTERVAL=3;BYDAY=1MO,-1FR;BYHOUR=10", "FREQ=MONTHLY;BYMONTHDAY=-1,31;BYHOUR=0", "freq=daily;byhour=+1",
		"FREQ=DAILY;;", "=;=", "BYDAY=-", "FREQ=MONTHLY;BYDAY=-0MO;BYHOUR=1", "FREQ=DAILY;INTERVAL=9999;BYHOUR=23;BYMINUTE=59"} {
		f.Add(s)
	}
	zones := []*time.Location{time.UTC}
	for _, z := range []string{"Europe/Paris", "America/New_York", "Australia/Lord_Howe"} {
		if loc, err := time.LoadLocation(z); err == nil {
			zones = append(zones, loc)
		}
	}
	from := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRule(s)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Code != CodeInvalidRule {
				t.Fatalf("ParseRule(%q): %v is not invalid_rule", s, err)
			}
			return
		}
		// The canonical form reads back as itself.
		again, err := ParseRule(r.String())
		if err != nil || again.String() != r.String() {
			t.Fatalf("ParseRule(%q).String() = %q reads back as %q, %v", s, r.String(), again.String(), err)
		}
		for _, loc := range zones {
			prev := from
			for _, at := range (Timing{Rule: r, Loc: loc, Anchor: from}).NextN(from, 3) {
				if !at.After(prev) {
					t.Fatalf("%q in %s: %s after %s", s, loc, at, prev)
				}
				prev = at
			}
		}
	})
}
