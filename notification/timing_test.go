package notification

import (
	"testing"
	"time"

	"github.com/relaybell/relaybell/store"
)

func TestQuietUntil(t *testing.T) {
	night := &store.QuietHours{Start: "22:00", End: "07:00"}
	lunch := &store.QuietHours{Start: "12:00", End: "13:30"}
	utc := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, c := range []struct {
		q     *store.QuietHours
		tz    string
		at    string
		until string // "" when not quiet
	}{
		{nil, "UTC", "2026-03-01T23:00:00Z", ""},
		{night, "UTC", "2026-03-01T21:59:59Z", ""},
		{night, "UTC", "2026-03-01T22:00:00Z", "2026-03-02T07:00:00Z"},
		{night, "UTC", "2026-03-02T03:00:00Z", "2026-03-02T07:00:00Z"}, // the span that began yesterday
		{night, "UTC", "2026-03-02T07:00:00Z", ""},                     // the end is not quiet
		{night, "Europe/Paris", "2026-03-01T21:30:00Z", "2026-03-02T06:00:00Z"},
		{night, "Europe/Paris", "2026-03-01T20:30:00Z", ""},
		{night, "America/New_York", "2026-03-02T04:00:00Z", "2026-03-02T12:00:00Z"}, // 23:00 local
		// Spring forward in Paris (2026-03-29 02:00 -> 03:00): 07:00 is UTC+2.
		{night, "Europe/Paris", "2026-03-28T23:00:00Z", "2026-03-29T05:00:00Z"},
		{lunch, "UTC", "2026-03-01T12:45:00Z", "2026-03-01T13:30:00Z"},
		{lunch, "UTC", "2026-03-01T11:59:00Z", ""},
		{lunch, "UTC", "2026-03-01T23:00:00Z", ""},
		{&store.QuietHours{Start: "bad", End: "07:00"}, "UTC", "2026-03-01T03:00:00Z", ""},
	} {
		until, quiet := QuietUntil(c.q, c.tz, utc(c.at))
		got := ""
		if quiet {
			got = until.Format(time.RFC3339)
		}
		if got != c.until {
			t.Errorf("QuietUntil(%v, %s, %s) = %q, want %q", c.q, c.tz, c.at, got, c.until)
		}
	}
}
