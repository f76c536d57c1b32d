// Package lease holds the loop shared by the background engines that claim
// their work under leases (automations' timers, recurring schedules, feeds):
// do what is due, then sleep until the next thing is due, at most a poll
// interval (a lease that ran out on a dead node, work another node added),
// or until woken.
//
// What it must never do: claim, lease or decide anything itself. Each
// engine's RunDue claims under its own leases in its own store; the loop
// only says when to call it again.
package lease

import (
	"context"
	"log/slog"
	"time"
)

// Loop is one engine's loop. RunDue and Poll are required.
type Loop struct {
	// What names the work in the log line of a failed round.
	What string
	// Poll is the longest sleep between rounds, and the sleep after a
	// failed one.
	Poll time.Duration
	// RunDue does what is due now and says how much it did.
	RunDue func(ctx context.Context) (int, error)
	// NextDue, when set, is the earliest due time of work not leased (ok
	// false when there is none): the loop sleeps until then if it is
	// sooner than Poll. Now is then required.
	NextDue func(ctx context.Context) (due time.Time, ok bool, err error)
	Now     func() time.Time
	// Again runs the next round at once after a round that did some work
	// (more may be due), where NextDue cannot say so.
	Again bool
	// Wake, when not nil, starts a round at once.
	Wake   <-chan struct{}
	Logger *slog.Logger
}

// Run does rounds until ctx ends; it returns nil then.
func (l Loop) Run(ctx context.Context) error {
	logger := l.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	for {
		wait := l.Poll
		n, err := l.RunDue(ctx)
		switch {
		case err != nil:
			if ctx.Err() == nil {
				logger.Warn(l.What, "err", err)
			}
		case l.Again && n > 0:
			wait = 0
		case l.NextDue != nil:
			if due, ok, err := l.NextDue(ctx); err == nil && ok {
				wait = min(wait, max(due.Sub(l.Now()), 0))
			}
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-l.Wake:
		case <-t.C:
		}
		t.Stop()
	}
}
