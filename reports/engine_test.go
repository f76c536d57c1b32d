package reports

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/relaybell/relaybell/automations/enginetest"
	"github.com/relaybell/relaybell/store"
)

func utc(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse("2006-01-02 15:04", s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// outbox is the messages queued for the website's report, "to subject"
// in order of address.
func outbox(t *testing.T, st store.Store) []string {
	t.Helper()
	ms, err := st.Emails(context.Background(), false, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range ms {
		if strings.HasPrefix(m.ContentType, "multipart/related;") {
			out = append(out, m.To+" "+m.Subject)
		}
	}
	slices.Sort(out)
	return out
}

func engine(t *testing.T, st store.Store, c *enginetest.Clock) *Engine {
	t.Helper()
	e, err := New(Config{Now: c.Now}, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// A weekly report on Monday at 09:00 in Paris goes out once per week,
// on both stores, with two engines running at every step; to the owner
// and not to an address that is no person of the account.
func TestEngineWeeklyOnce(t *testing.T) {
	for _, s := range enginetest.Stores {
		t.Run(s.Name, func(t *testing.T) {
			st := s.Open(t)
			ctx := context.Background()
			w := enginetest.Website(t, st)
			w, err := st.UpdateWebsite(ctx, w.ID, func(w *store.Website) error { w.Timezone = "Europe/Paris"; return nil })
			if err != nil {
				t.Fatal(err)
			}
			acct, err := st.Account(ctx, w.AccountID)
			if err != nil {
				t.Fatal(err)
			}
			start := utc(t, "2026-03-01 00:00") // a Sunday
			if err := st.PutReportSettings(ctx, w.ID, store.ReportSettings{Frequency: store.ReportWeekly, Day: "mon", Hour: 9,
				Recipients: []string{acct.OwnerEmail, "left@example.com"}, UpdatedAt: start}); err != nil {
				t.Fatal(err)
			}
			c := enginetest.NewClock(start)
			engines := []*Engine{engine(t, st, c), engine(t, st, c)}
			var sentAt []string
			for now := start; now.Before(utc(t, "2026-03-17 00:00")); now = now.Add(30 * time.Minute) {
				c.Set(now)
				for _, n := range enginetest.RunAtOnce(t, engines) {
					if n > 0 {
						sentAt = append(sentAt, now.Format("01-02 15:04"))
					}
				}
			}
			// 09:00 in Paris is 08:00Z in March (before the change of the 29th).
			if want := []string{"03-02 08:00", "03-09 08:00", "03-16 08:00"}; !slices.Equal(sentAt, want) {
				t.Fatalf("sent at %v, want %v", sentAt, want)
			}
			want := []string{
				acct.OwnerEmail + " RelayBell report for Shop: 2026-02-23 to 2026-03-01",
				acct.OwnerEmail + " RelayBell report for Shop: 2026-03-02 to 2026-03-08",
				acct.OwnerEmail + " RelayBell report for Shop: 2026-03-09 to 2026-03-15",
			}
			if got := outbox(t, st); !slices.Equal(got, want) {
				t.Fatalf("outbox %q\nwant %q", got, want)
			}
		})
	}
}

// Nodes of one PostgreSQL, each its own engine, run many websites'
// daily reports at once: each period is mailed by one of them, once.
func TestEngineNodesExactlyOnce(t *testing.T) {
	nodes := enginetest.OpenPostgres(t, 2)
	ctx := context.Background()
	start := utc(t, "2026-05-31 23:00")
	var owners []string
	for range 10 {
		w := enginetest.Website(t, nodes[0])
		acct, err := nodes[0].Account(ctx, w.AccountID)
		if err != nil {
			t.Fatal(err)
		}
		owners = append(owners, acct.OwnerEmail)
		if err := nodes[0].PutReportSettings(ctx, w.ID, store.ReportSettings{Frequency: store.ReportDaily, Hour: 6,
			Recipients: []string{acct.OwnerEmail}, UpdatedAt: start}); err != nil {
			t.Fatal(err)
		}
	}
	c := enginetest.NewClock(start)
	engines := []*Engine{engine(t, nodes[0], c), engine(t, nodes[1], c), engine(t, nodes[0], c), engine(t, nodes[1], c)}
	for now := start; now.Before(utc(t, "2026-06-03 00:00")); now = now.Add(20 * time.Minute) {
		c.Set(now)
		enginetest.RunAtOnce(t, engines)
	}
	var want []string
	for _, o := range owners {
		want = append(want, o+" RelayBell report for Shop: 2026-05-31 to 2026-05-31", o+" RelayBell report for Shop: 2026-06-01 to 2026-06-01")
	}
	slices.Sort(want)
	if got := outbox(t, nodes[1]); !slices.Equal(got, want) {
		t.Fatalf("outbox %d messages %q\nwant %d %q", len(got), got, len(want), want)
	}
}

// Daily reports, then weekly from a Monday: the first weekly period
// starts on a day a daily report was mailed for, and is mailed all the
// same (the ledger names the frequency and the whole period).
func TestEngineFrequencyChange(t *testing.T) {
	st := enginetest.Stores[0].Open(t)
	ctx := context.Background()
	w := enginetest.Website(t, st)
	acct, err := st.Account(ctx, w.AccountID)
	if err != nil {
		t.Fatal(err)
	}
	start := utc(t, "2026-03-08 00:00") // a Sunday
	put := func(freq, day string, at time.Time) {
		t.Helper()
		if err := st.PutReportSettings(ctx, w.ID, store.ReportSettings{Frequency: freq, Day: day, Hour: 9,
			Recipients: []string{acct.OwnerEmail}, UpdatedAt: at}); err != nil {
			t.Fatal(err)
		}
	}
	put(store.ReportDaily, "", start)
	c := enginetest.NewClock(start)
	e := engine(t, st, c)
	step := func(until time.Time) {
		for now := c.Now(); now.Before(until); now = now.Add(30 * time.Minute) {
			c.Set(now)
			if _, err := e.RunDue(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	step(utc(t, "2026-03-10 12:00")) // the daily reports of the 7th, 8th and 9th
	put(store.ReportWeekly, "mon", c.Now())
	step(utc(t, "2026-03-16 12:00")) // Monday the 16th: the week of the 9th to the 15th
	want := []string{
		acct.OwnerEmail + " RelayBell report for Shop: 2026-03-07 to 2026-03-07",
		acct.OwnerEmail + " RelayBell report for Shop: 2026-03-08 to 2026-03-08",
		acct.OwnerEmail + " RelayBell report for Shop: 2026-03-09 to 2026-03-09",
		acct.OwnerEmail + " RelayBell report for Shop: 2026-03-09 to 2026-03-15",
	}
	if got := outbox(t, st); !slices.Equal(got, want) {
		t.Fatalf("outbox %q\nwant %q", got, want)
	}
}
