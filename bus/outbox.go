package bus

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/relaybell/relaybell/store"
)

// OutboxStore is what the outbox needs from the store.
type OutboxStore interface {
	MarkPublished(ctx context.Context, id string, at time.Time) error
	MarkAllPublished(ctx context.Context, ids []string, at time.Time) error
	Unpublished(ctx context.Context, before time.Time, limit int) ([]store.Notification, error)
	DueScheduled(ctx context.Context, now time.Time, limit int) ([]store.Notification, error)
	DueWaves(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]store.Wave, error)
	MarkWavePublished(ctx context.Context, notificationID string, wave int, at time.Time) error
}

// Outbox publishes the intents of committed sends and re-drives the ones
// that never reached the bus; it also releases scheduled sends, and the
// waves of sends in waves, when due.
type Outbox struct {
	store  OutboxStore
	bus    Bus
	logger *slog.Logger
	now    func() time.Time
	// Grace is how old an unpublished send must be before the sweep
	// re-drives it (the API normally publishes within milliseconds).
	Grace time.Duration
	// Every is the sweep interval.
	Every time.Duration
	// WaveLease is how long a sweep holds a due wave while it publishes
	// its shard tasks; a sweeper that dies meanwhile leaves it to another
	// after that.
	WaveLease time.Duration
}

// NewOutbox returns an outbox over st and b.
func NewOutbox(st OutboxStore, b Bus, logger *slog.Logger) *Outbox {
	return &Outbox{store: st, bus: b, logger: logger, now: time.Now, Grace: 5 * time.Second, Every: time.Second, WaveLease: time.Minute}
}

// Dispatch publishes the intent of a committed, queued send and records that
// it was published.
func (o *Outbox) Dispatch(ctx context.Context, n store.Notification) error {
	if err := o.PublishIntent(ctx, n); err != nil {
		return err
	}
	if err := o.store.MarkPublished(ctx, n.ID, o.now()); err != nil {
		return fmt.Errorf("marking %s published: %w", n.ID, err)
	}
	return nil
}

// PublishIntent publishes the intent of a committed, queued send without
// recording it published: MarkAllPublished records many at once (the
// DispatchPool's way).
func (o *Outbox) PublishIntent(ctx context.Context, n store.Notification) error {
	return PublishJSON(ctx, o.bus, Intents, intentKey(n), Intent{WebsiteID: n.WebsiteID, NotificationID: n.ID})
}

// MarkAllPublished records that the intents of the sends ids were
// published, in one store write.
func (o *Outbox) MarkAllPublished(ctx context.Context, ids []string) error {
	if err := o.store.MarkAllPublished(ctx, ids, o.now()); err != nil {
		return fmt.Errorf("marking %d sends published: %w", len(ids), err)
	}
	return nil
}

// intentKey is the partition key of a send's intent: its website, so that
// one website's sends are started in order; an automation's message (one
// person's) its own id, so that many people's messages coming due at once
// spread over the partitions and the fan-out nodes' workers, where on
// their website's partition each waited for the one before it (ten
// thousand people's came out a few dozen a second).
func intentKey(n store.Notification) string {
	if n.Automation {
		return n.ID
	}
	return n.WebsiteID
}

// Sweep runs one pass: due scheduled sends and stale unpublished ones are
// published, then the due waves. It returns how many intents and waves it
// published.
func (o *Outbox) Sweep(ctx context.Context) (int, error) {
	now := o.now()
	// Stale sends first: a scheduled send released below becomes queued and
	// unpublished too, and must not be listed twice.
	stale, err := o.store.Unpublished(ctx, now.Add(-o.Grace), 500)
	if err != nil {
		return 0, fmt.Errorf("listing unpublished sends: %w", err)
	}
	due, err := o.store.DueScheduled(ctx, now, 500)
	if err != nil {
		return 0, fmt.Errorf("releasing scheduled sends: %w", err)
	}
	published := 0
	for _, n := range append(due, stale...) {
		if err := o.Dispatch(ctx, n); err != nil {
			return published, err
		}
		published++
	}
	waves, err := o.store.DueWaves(ctx, now, o.WaveLease, 100)
	if err != nil {
		return published, fmt.Errorf("leasing due waves: %w", err)
	}
	for _, w := range waves {
		if err := PublishShards(ctx, o.bus, w.NotificationID, &w); err != nil {
			return published, err
		}
		if err := o.store.MarkWavePublished(ctx, w.NotificationID, w.Wave, o.now()); err != nil {
			return published, fmt.Errorf("marking wave %d of %s published: %w", w.Wave, w.NotificationID, err)
		}
		published++
	}
	return published, nil
}

// Run sweeps at start and then every o.Every until ctx ends.
func (o *Outbox) Run(ctx context.Context) {
	t := time.NewTicker(o.Every)
	defer t.Stop()
	for {
		if n, err := o.Sweep(ctx); err != nil && ctx.Err() == nil {
			o.logger.Error("outbox sweep", "err", err)
		} else if n > 0 {
			o.logger.Info("outbox re-drove sends", "count", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
