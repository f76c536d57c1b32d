package reports

import (
	"errors"
	"testing"
	"time"

	"github.com/relaybell/relaybell/store"
)

func TestOccurrence(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	f := func(freq, day string, hour int, now, wantAt, wantFrom, wantTo string) {
		t.Helper()
		n, _ := time.Parse(time.RFC3339, now)
		at, p, ok := Occurrence(store.ReportSettings{Frequency: freq, Day: day, Hour: hour}, n, paris)
		if !ok || at.UTC().Format(time.RFC3339) != wantAt || p.From.String() != wantFrom || p.To.String() != wantTo {
			t.Fatalf("%s %s %d at %s: %v %v %s..%s", freq, day, hour, now, ok, at.UTC(), p.From, p.To)
		}
	}
	f("daily", "", 9, "2026-03-10T07:59:00Z", "2026-03-09T08:00:00Z", "2026-03-08", "2026-03-08")
	f("daily", "", 9, "2026-03-10T08:00:00Z", "2026-03-10T08:00:00Z", "2026-03-09", "2026-03-09")
	f("weekly", "mon", 9, "2026-03-10T12:00:00Z", "2026-03-09T08:00:00Z", "2026-03-02", "2026-03-08")
	f("weekly", "wed", 0, "2026-03-10T12:00:00Z", "2026-03-03T23:00:00Z", "2026-02-25", "2026-03-03")
	f("monthly", "1", 6, "2026-03-01T04:00:00Z", "2026-02-01T05:00:00Z", "2026-01-01", "2026-01-31")
	f("monthly", "28", 6, "2026-03-30T04:00:00Z", "2026-03-28T05:00:00Z", "2026-02-01", "2026-02-28")
	f("monthly", "1", 6, "2026-01-15T04:00:00Z", "2026-01-01T05:00:00Z", "2025-12-01", "2025-12-31")
	if _, _, ok := Occurrence(store.ReportSettings{Frequency: "off"}, time.Now(), paris); ok {
		t.Fatal("off has an occurrence")
	}
}

func TestValidate(t *testing.T) {
	members := []string{"Owner@Shop.example", "viewer@shop.example"}
	f := func(rs store.ReportSettings, want error) {
		t.Helper()
		if _, err := Validate(rs, members); !errors.Is(err, want) {
			t.Fatalf("%+v: %v, want %v", rs, err, want)
		}
	}
	f(store.ReportSettings{Frequency: "off"}, nil)
	f(store.ReportSettings{Frequency: "weekly", Day: "sun", Hour: 23, Recipients: []string{"viewer@shop.example", "owner@shop.example"}}, nil)
	f(store.ReportSettings{Frequency: "monthly", Day: "01"}, ErrDay)
	f(store.ReportSettings{Frequency: "monthly", Day: "0"}, ErrDay)
	f(store.ReportSettings{Frequency: "weekly", Day: "Mon"}, ErrDay)
	f(store.ReportSettings{Frequency: "daily", Hour: 24}, ErrHour)
	f(store.ReportSettings{Frequency: "daily", Recipients: []string{"Viewer <viewer@shop.example>"}}, ErrRecipients)
	f(store.ReportSettings{Frequency: "daily", Recipients: make([]string, MaxRecipients+1)}, ErrRecipients)
	f(store.ReportSettings{Frequency: "Daily"}, ErrFrequency)
	if got := Current([]string{"left@shop.example", "OWNER@shop.example", "owner@shop.example"}, members); len(got) != 1 || got[0] != "owner@shop.example" {
		t.Fatalf("Current %q", got)
	}
}

// FuzzValidate: no input panics, and what Validate accepts it accepts
// again unchanged.
func FuzzValidate(f *testing.F) {
	f.Add("weekly", "mon", 9, "owner@shop.example")
	f.Add("monthly", "28", 0, "OWNER@shop.example")
	f.Add("daily", "", 23, "\"a b\"@shop.example")
	f.Add("off", "", -1, "")
	f.Fuzz(func(t *testing.T, freq, day string, hour int, recipient string) {
		members := []string{"owner@shop.example", recipient}
		rs, err := Validate(store.ReportSettings{Frequency: freq, Day: day, Hour: hour, Recipients: []string{recipient}}, members)
		if err != nil {
			return
		}
		again, err := Validate(rs, members)
		if err != nil || again.Day != rs.Day || len(again.Recipients) != len(rs.Recipients) {
			t.Fatalf("%+v accepted, then %+v, %v", rs, again, err)
		}
		if _, _, ok := Occurrence(rs, time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC), time.UTC); ok != (rs.Frequency != store.ReportOff) {
			t.Fatalf("%+v: occurrence %v", rs, ok)
		}
	})
}
