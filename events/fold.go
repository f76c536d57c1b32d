package events

import (
	"context"
	"time"
)

// Folding and clean-up.
const (
	// foldBatch is how many credits one fold takes.
	foldBatch = 1000
	// foldSweep is how often a node folds without being woken (credits a
	// node that died before folding them left behind).
	foldSweep = 2 * time.Second
	// IdempotencyLife is how long an Idempotency-Key replays its answer.
	IdempotencyLife = 24 * time.Hour
	// purgeEvery is how often old idempotency keys are removed.
	purgeEvery = 10 * time.Minute
)

// Run folds conversion credits into their notifications' counters until
// ctx ends: at once after a credit (and while a burst keeps coming, one
// fold after another, each taking what came meanwhile), and every
// foldSweep anyway. It also forgets Idempotency-Keys after
// IdempotencyLife. Every API node runs it; folds never count a credit
// twice.
func (s *Service) Run(ctx context.Context) {
	sweep := time.NewTicker(foldSweep)
	defer sweep.Stop()
	purge := time.NewTicker(purgeEvery)
	defer purge.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.kick:
		case <-sweep.C:
		case <-purge.C:
			if _, err := s.st.PurgeIdempotency(ctx, time.Now().Add(-IdempotencyLife)); err != nil && ctx.Err() == nil {
				s.logger.Warn("purging idempotency keys", "err", err)
			}
			continue
		}
		s.Fold(ctx)
	}
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
