package schedules

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/relaybell/relaybell/lease"
	"github.com/relaybell/relaybell/notification"
	"github.com/relaybell/relaybell/review"
	"github.com/relaybell/relaybell/store"
)

// Dispatcher publishes a stored occurrence's send intent; a failure
// leaves it to the outbox sweep.
type Dispatcher interface {
	Dispatch(ctx context.Context, n store.Notification) error
}

// DefaultReviewThreshold is the API's (package review): a new account's
// first broadcast to this many browsers is held for review.
const DefaultReviewThreshold = review.DefaultThreshold

// maxPerClaim bounds the occurrences one claim of a schedule does (a long
// outage leaves many to skip); the rest wait for the next pass.
const maxPerClaim = 100

// Config tunes an Engine; the zero value is the defaults.
type Config struct {
	// Poll is the longest the engine sleeps between looks at the
	// schedules (another node may have changed one); default 1s.
	Poll time.Duration
	// Lease is how long a claimed schedule stays the claimer's before
	// another node may take it (the claimer died); default 5s. An
	// occurrence done slower than its lease is still done once:
	// FireSchedule's move of next_at is the claim that counts.
	Lease time.Duration
	// Batch is how many schedules one claim takes; default 50.
	Batch int
	// Now is the clock; default time.Now.
	Now func() time.Time
	// BroadcastsPerHour is the website's hourly broadcast budget, the
	// counter the API's sends and the feeds' share
	// (notification.BroadcastBudget); default its
	// notification.BroadcastsPerHour. NoBudget counts none (the server's
	// --no-send-limits, for load tests).
	BroadcastsPerHour int
	NoBudget          bool
	// ReviewThreshold is the API's: an occurrence that is a new account's
	// first broadcast to at least this many browsers is stored
	// held_for_review, as POST /notifications stores it (api's
	// needsReview); default DefaultReviewThreshold, negative: never.
	ReviewThreshold int
	// VerifyRetry is how long an occurrence held while the account's
	// e-mail address is not verified waits before the engine looks at it
	// again; default 1 minute.
	VerifyRetry time.Duration
	// BeforeFire, when set, is called with each occurrence about to be
	// done, after its claim: the fault tests' failpoint.
	BeforeFire func(s store.Schedule, occurrence time.Time)
}

func (c Config) withDefaults() Config {
	if c.Poll <= 0 {
		c.Poll = time.Second
	}
	if c.Lease <= 0 {
		c.Lease = 5 * time.Second
	}
	if c.Batch <= 0 {
		c.Batch = 50
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.BroadcastsPerHour <= 0 {
		c.BroadcastsPerHour = notification.BroadcastsPerHour
	}
	if c.ReviewThreshold == 0 {
		c.ReviewThreshold = DefaultReviewThreshold
	}
	if c.VerifyRetry <= 0 {
		c.VerifyRetry = time.Minute
	}
	return c
}

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	if c = c.withDefaults(); c.Lease < c.Poll {
		return errors.New("schedules: the lease must be at least the poll interval")
	}
	return nil
}

// Engine does schedules' occurrences as they come due, each exactly once.
// Any number of engines may run on one store.
type Engine struct {
	cfg       Config
	st        Store
	templates Templates
	disp      Dispatcher
	logger    *slog.Logger
	done      *prometheus.CounterVec
}

// NewEngine returns an engine. templates and disp may be nil (a schedule
// naming a template is then paused; the outbox sweep publishes every
// send); reg may be nil.
func NewEngine(cfg Config, st Store, templates Templates, disp Dispatcher, logger *slog.Logger, reg prometheus.Registerer) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	e := &Engine{cfg: cfg.withDefaults(), st: st, templates: templates, disp: disp, logger: logger,
		done: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "relaybell_schedule_occurrences_total",
			Help: "Recurring schedules' occurrences done, by outcome (sent, skipped, refused)."}, []string{"outcome"})}
	if reg != nil {
		if err := reg.Register(e.done); err != nil {
			return nil, fmt.Errorf("registering schedule metrics: %w", err)
		}
	}
	return e, nil
}

// Run does due occurrences until ctx ends, sleeping until the next is due,
// at most Poll.
func (e *Engine) Run(ctx context.Context) error {
	return lease.Loop{What: "running schedules", Poll: e.cfg.Poll, RunDue: e.RunDue,
		NextDue: e.st.NextScheduleDue, Now: e.cfg.Now, Logger: e.logger}.Run(ctx)
}

// RunDue claims the schedules due now, a batch at a time, does their due
// occurrences, and returns how many it did (sent, skipped or refused).
func (e *Engine) RunDue(ctx context.Context) (int, error) {
	total := 0
	for {
		now := e.cfg.Now()
		claimed, err := e.st.ClaimSchedules(ctx, now, e.cfg.Lease, e.cfg.Batch)
		if err != nil {
			return total, err
		}
		websites := map[string]store.Website{}
		for _, sc := range claimed {
			n, err := e.runSchedule(ctx, sc, now, websites)
			total += n
			if err != nil && ctx.Err() == nil {
				// It stays leased and is taken again once the lease runs
				// out; the others go on (a failing one would otherwise
				// head every claim and hold every website's schedules).
				e.logger.Warn("running a schedule; tried again after its lease", "schedule_id", sc.ID, "err", err)
			} else if err != nil {
				return total, err
			}
		}
		if len(claimed) < e.cfg.Batch {
			return total, nil
		}
	}
}

// runSchedule does a claimed schedule's occurrences due at now, in order.
func (e *Engine) runSchedule(ctx context.Context, sc store.Schedule, now time.Time, websites map[string]store.Website) (int, error) {
	d, err := Decode(sc)
	if err == nil {
		var timing Timing
		if timing, err = d.Timing(sc); err == nil {
			return e.runTimed(ctx, sc, d, timing, now, websites)
		}
	}
	// Its stored rule or time zone no longer reads (a zone gone from the
	// system's database): it can never send, so it pauses, with the reason.
	return 0, e.pause(ctx, sc, fmt.Sprintf("Its rule or time zone can no longer be read: %s.", err))
}

// runTimed does runSchedule's occurrences, its definition read.
func (e *Engine) runTimed(ctx context.Context, sc store.Schedule, d Definition, timing Timing, now time.Time, websites map[string]store.Website) (int, error) {
	var err error
	w, ok := websites[sc.WebsiteID]
	if !ok {
		if w, err = e.st.Website(ctx, sc.WebsiteID); err != nil {
			return 0, err
		}
		websites[sc.WebsiteID] = w
	}
	if sc.NextAt == nil || sc.NextAt.After(now) {
		return 0, nil
	}
	acct, err := e.st.Account(ctx, w.AccountID)
	if err != nil {
		return 0, err
	}
	if review.Verified(acct) != nil {
		// As POST /notifications refuses it and a feed's items wait: the
		// occurrence is neither done nor failed, and next_at stays; once
		// the address is verified it goes, or is skipped past its
		// catch-up, as any late occurrence.
		if sc.Refusal == nil || sc.Refusal.Reason != ErrNotVerified.Error() || !sc.Refusal.Occurrence.Equal(*sc.NextAt) {
			// Once per occurrence, not at every look.
			e.logger.Info("a schedule's occurrence waits for the account's e-mail address to be verified",
				"schedule_id", sc.ID, "occurrence", sc.NextAt.UTC().Format(time.RFC3339))
		}
		return 0, e.st.HoldSchedule(ctx, sc.WebsiteID, sc.ID, *sc.NextAt, now.Add(e.cfg.VerifyRetry), ErrNotVerified.Error(), now)
	}
	done := 0
	for done < maxPerClaim && sc.NextAt != nil && !sc.NextAt.After(now) {
		occ := *sc.NextAt
		f := store.ScheduleFire{WebsiteID: sc.WebsiteID, ScheduleID: sc.ID, Occurrence: occ, At: now}
		if next, ok := timing.Next(occ); ok {
			f.Next = &next
			// An occurrence due while this one waited for the budget
			// waits for it too.
			f.NextWaits = sc.BudgetWait && !next.After(now)
		}
		late := now.Sub(occ)
		if sc.BudgetWait || late < d.CatchUp() {
			n, err := e.occurrence(ctx, w, acct, sc, d, occ, now)
			var ne *notification.Error
			var se *Error
			if errors.As(err, &ne) || errors.As(err, &se) {
				// The send no longer passes its checks (its template
				// went): the schedule pauses, with the reason.
				return done, e.pause(ctx, sc, fmt.Sprintf("Its occurrence at %s could not be sent: %s.", occ.UTC().Format(time.RFC3339), err))
			}
			if err != nil {
				return done, err
			}
			f.Notification = n
			if !e.cfg.NoBudget {
				b := notification.BroadcastBudget(sc.WebsiteID)
				b.Max = int64(e.cfg.BroadcastsPerHour)
				f.Budget = &b
			}
		}
		if e.cfg.BeforeFire != nil {
			e.cfg.BeforeFire(sc, occ)
		}
		outcome, err := e.st.FireSchedule(ctx, f)
		if err != nil {
			return done, err
		}
		if outcome == "" { // done by another node, or the schedule changed
			return done, nil
		}
		done++
		e.done.WithLabelValues(outcome).Inc()
		if outcome == store.OccurrenceRefused {
			e.logger.Info("a schedule's occurrence waits for the broadcast budget", "schedule_id", sc.ID,
				"occurrence", occ.UTC().Format(time.RFC3339))
			return done, nil
		}
		if outcome == store.OccurrenceSent && f.Notification.Status == store.StatusQueued && e.disp != nil {
			if err := e.disp.Dispatch(ctx, *f.Notification); err != nil {
				e.logger.Warn("dispatching a schedule's send; the outbox sweep will retry", "notification_id", f.Notification.ID, "err", err)
			}
		}
		sc.NextAt, sc.BudgetWait = f.Next, f.NextWaits
	}
	return done, nil
}

// occurrence is the notification of the schedule's occurrence at occ.
func (e *Engine) occurrence(ctx context.Context, w store.Website, acct store.Account, sc store.Schedule, d Definition, occ, now time.Time) (*store.Notification, error) {
	req := d.Request(occ)
	if err := applyTemplate(ctx, e.templates, w.ID, d, req); err != nil {
		return nil, err
	}
	n, err := notification.Prepare(ctx, req, w, e.st, now)
	if err != nil {
		return nil, err
	}
	n.ScheduleID = sc.ID
	if n.Status == store.StatusQueued || n.Status == store.StatusScheduled {
		// The API's rule (package review): a new account's first
		// broadcast to at least ReviewThreshold browsers waits for an
		// operator.
		held, err := review.Held(ctx, e.st, e.cfg.ReviewThreshold, acct, req, n, now)
		if err != nil {
			return nil, fmt.Errorf("deciding review: %w", err)
		}
		if held {
			n.Status = store.StatusHeldForReview
		}
	}
	return n, nil
}

// pause stops a schedule whose send cannot be made, with the reason, and
// tells the website's webhooks (schedule.paused).
func (e *Engine) pause(ctx context.Context, sc store.Schedule, reason string) error {
	e.logger.Warn("pausing a schedule", "schedule_id", sc.ID, "reason", reason)
	_, err := e.st.PauseSchedule(ctx, sc.WebsiteID, sc.ID, store.SchedulePausedSendFailed, reason, e.cfg.Now())
	return err
}

// ErrNotVerified is the reason recorded on a schedule (its refusal)
// whose occurrence waits while the account's e-mail address is not
// verified, as a feed's items wait (feeds.ErrNotVerified).
var ErrNotVerified = errors.New("the account's e-mail address is not verified: occurrences wait until it is")

// HistoryKept is how long a schedule's ledger rows (its history) are
// kept.
const HistoryKept = 90 * 24 * time.Hour

// Purger forgets schedules' history older than HistoryKept (the purge
// module runs it).
type Purger struct {
	Store interface {
		PurgeScheduleRuns(ctx context.Context, before time.Time) (int64, error)
	}
}

// Purge forgets the ledger rows written before now less HistoryKept.
func (p Purger) Purge(ctx context.Context, now time.Time) error {
	_, err := p.Store.PurgeScheduleRuns(ctx, now.Add(-HistoryKept))
	return err
}
