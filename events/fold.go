package events

import (
	"context"
	"fmt"
	"time"

	"github.com/relaybell/relaybell/store"
)

// Folding and clean-up.
const (
	// foldBatch is how many credits one fold takes.
	foldBatch = 1000
	// foldSweep is how often a node folds without being woken (credits a
	// node that died before folding them left behind).
	foldSweep = 2 * time.Second
	// foldGap is the least time between two folds of a node: the credits
	// of a burst wait for it and are folded together, so that a hot
	// notification's row takes one update per gap and node, not one per
	// credit.
	foldGap = 250 * time.Millisecond
	// IdempotencyLife is how long an Idempotency-Key replays its answer.
	IdempotencyLife = 24 * time.Hour
	// alertAudienceLife is how long a finished product alert keeps its
	// fixed audience.
	alertAudienceLife = time.Hour
)

// Run folds conversion credits into their notifications' counters until
// ctx ends: after a credit, at most one fold each foldGap (a burst's
// credits folded together), and every foldSweep anyway. Every API node
// runs it (the composition root starts it as a module); folds never count
// a credit twice.
func (s *Service) Run(ctx context.Context) error {
	sweep := time.NewTicker(foldSweep)
	defer sweep.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.kick:
		case <-sweep.C:
		}
		s.Fold(ctx)
		gap := time.NewTimer(foldGap)
		select {
		case <-ctx.Done():
			gap.Stop()
			return nil
		case <-gap.C:
		}
	}
}

// DeliveryLife is how long a commerce platform's delivery id is kept to
// tell its retries (Shopify retries for 48 hours).
const DeliveryLife = 7 * 24 * time.Hour

// Purge forgets the behavior data that is no longer needed
// (store.Behavior.PurgeBehavior): Idempotency-Keys and folded credits
// after IdempotencyLife (a retry comes no later), interests after
// InterestLife, finished alerts' audiences after alertAudienceLife.
func (s *Service) Purge(ctx context.Context, now time.Time) error {
	if _, err := s.st.PurgeBehavior(ctx, store.BehaviorPurge{Keys: now.Add(-IdempotencyLife), Credits: now.Add(-IdempotencyLife),
		Interests: now.Add(-InterestLife), Alerts: now.Add(-alertAudienceLife), Deliveries: now.Add(-DeliveryLife)}); err != nil {
		return fmt.Errorf("purging behavior: %w", err)
	}
	return nil
}

// Fold folds every credit waiting now.
func (s *Service) Fold(ctx context.Context) {
	for {
		n, err := s.st.FoldConversions(ctx, foldBatch)
		if err != nil {
			if ctx.Err() == nil {
				s.logger.Warn("folding conversions", "err", err)
			}
			return
		}
		if n < foldBatch {
			return
		}
	}
}
