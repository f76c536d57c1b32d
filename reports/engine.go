package reports

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/relaybell/relaybell/lease"
	"github.com/relaybell/relaybell/stats"
	"github.com/relaybell/relaybell/store"
)

// Store is what the engine reads and writes.
type Store interface {
	Reader
	store.ReportsLedger
	Website(ctx context.Context, id string) (store.Website, error)
	Account(ctx context.Context, id string) (store.Account, error)
	Members(ctx context.Context, accountID string) ([]store.Member, error)
}

// Config is the engine's.
type Config struct {
	// Poll is how often the engine looks for reports due (default a
	// minute).
	Poll time.Duration
	// Lease is how long a node holds a report it builds (default five
	// minutes): a node that dies holding one leaves it to another after.
	Lease time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Validate fills in the defaults and checks the rest.
func (c *Config) Validate() error {
	if c.Poll == 0 {
		c.Poll = time.Minute
	}
	if c.Lease == 0 {
		c.Lease = 5 * time.Minute
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Poll < 0 || c.Lease < 0 {
		return fmt.Errorf("reports: negative poll or lease")
	}
	return nil
}

// Engine mails each website's report once per period, at the day and
// hour its settings name in its time zone, to the recipients who are
// people of the account at that moment. Any number of nodes may run one:
// a report is built under a lease (ClaimReport), and its messages are
// queued in the transaction that records the period sent (SendReport),
// so a node killed at any moment leaves it either sent once or for
// another node to send.
type Engine struct {
	cfg    Config
	st     Store
	logger *slog.Logger
}

// New builds an engine; cfg is validated.
func New(cfg Config, st Store, logger *slog.Logger) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Engine{cfg: cfg, st: st, logger: logger}, nil
}

// Run sends the reports due until ctx ends.
func (e *Engine) Run(ctx context.Context) error {
	return lease.Loop{What: "reports: sending the reports due", Poll: e.cfg.Poll, RunDue: e.RunDue, Logger: e.logger}.Run(ctx)
}

// Occurrence is the latest moment at or before now when a report of rs is
// due in loc, and the period it covers; ok is false for off.
func Occurrence(rs store.ReportSettings, now time.Time, loc *time.Location) (at time.Time, p Period, ok bool) {
	local := now.In(loc)
	today := stats.DayOf(local)
	moment := func(d stats.Day) time.Time { return time.Date(d.Year, d.Month, d.Day, rs.Hour, 0, 0, 0, loc) }
	var day stats.Day
	switch rs.Frequency {
	case store.ReportDaily:
		day = today
		if moment(day).After(now) {
			day = day.AddDays(-1)
		}
	case store.ReportWeekly:
		want := slices.Index(Weekdays, rs.Day)
		if want < 0 {
			return time.Time{}, Period{}, false
		}
		day = today.AddDays(-((int(local.Weekday()) - want + 7) % 7))
		if moment(day).After(now) {
			day = day.AddDays(-7)
		}
	case store.ReportMonthly:
		n, err := strconv.Atoi(rs.Day)
		if err != nil || n < 1 || n > 28 {
			return time.Time{}, Period{}, false
		}
		day = stats.Day{Year: today.Year, Month: today.Month, Day: n}
		if moment(day).After(now) {
			prev := stats.Day{Year: today.Year, Month: today.Month, Day: 1}.AddDays(-1)
			day = stats.Day{Year: prev.Year, Month: prev.Month, Day: n}
		}
	default:
		return time.Time{}, Period{}, false
	}
	// The report due on day covers the period before it.
	return moment(day), Last(rs.Frequency, moment(day), loc), true
}

// RunDue sends the reports due now and returns how many it sent. A
// report is due once its occurrence has come, if that came after its
// settings were last saved (saving them does not mail at once a report of
// an hour already past).
func (e *Engine) RunDue(ctx context.Context) (int, error) {
	now := e.cfg.Now()
	due, err := e.st.ReportSchedules(ctx)
	if err != nil {
		return 0, err
	}
	sent := 0
	var errs []error
	for _, d := range due {
		ok, err := e.send(ctx, d, now)
		if err != nil {
			errs = append(errs, fmt.Errorf("website %s: %w", d.WebsiteID, err))
		}
		if ok {
			sent++
		}
	}
	return sent, errors.Join(errs...)
}

func (e *Engine) send(ctx context.Context, d store.ReportSchedule, now time.Time) (bool, error) {
	w, err := e.st.Website(ctx, d.WebsiteID)
	if err != nil {
		return false, err
	}
	at, p, ok := Occurrence(d.Settings, now, store.Location(w.Timezone))
	if !ok || at.Before(d.Settings.UpdatedAt) {
		return false, nil
	}
	// The ledger's key names the frequency and the whole period: a daily
	// report of a Monday and the weekly one starting that Monday are two.
	period := d.Settings.Frequency + ":" + p.From.String() + ".." + p.To.String()
	if sent, err := e.st.ReportSent(ctx, w.ID, period); err != nil || sent {
		return false, err
	}
	token, ok, err := e.st.ClaimReport(ctx, w.ID, period, now, e.cfg.Lease)
	if err != nil || !ok {
		return false, err
	}
	acct, err := e.st.Account(ctx, w.AccountID)
	if err != nil {
		return false, err
	}
	ms, err := e.st.Members(ctx, w.AccountID)
	if err != nil {
		return false, err
	}
	members := []string{acct.OwnerEmail}
	for _, m := range ms {
		members = append(members, m.Email)
	}
	to := Current(d.Settings.Recipients, members)
	var mails []store.Email
	if len(to) > 0 {
		rep, err := Build(ctx, e.st, w, p, now)
		if err != nil {
			return false, err
		}
		if mails, err = Mails(rep, to, now); err != nil {
			return false, err
		}
	}
	// A period with no recipient left is recorded too: it is not mailed
	// later to someone who joins.
	if err := e.st.SendReport(ctx, w.ID, period, token, mails, now); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return false, nil // the lease ran out and another node took it
		}
		return false, err
	}
	e.logger.Info("reports: sent", "website", w.ID, "period", period, "recipients", len(mails))
	return len(mails) > 0, nil
}
