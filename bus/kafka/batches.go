package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/relaybell/relaybell/bus"
)

// batchTimeout bounds a batch's handler: rebalances wait for it, and kgo's
// default rebalance timeout is a minute.
const batchTimeout = 30 * time.Second

// batchFetchBytes is what a batch consumer's fetch waits for at a broker,
// for at most half its window: a sink batches anyway, and a fetch answered
// as soon as a byte arrived made the broker and the sink exchange a fetch
// for each record published (the journal publishes an event a record).
const batchFetchBytes = 32 << 10

// minFetchWait is the least FetchMaxWait kgo takes: a window under twice
// that waits this long at the broker rather than failing to make a client.
const minFetchWait = 10 * time.Millisecond

// errClosed reports a consumer whose bus was closed under it.
var errClosed = errors.New("kafka bus closed")

// ConsumeBatches joins group as one member and hands h the topic's records
// in batches until ctx ends, for a sink that writes them elsewhere: a batch
// is what arrives within window of its first record, at most maxRecords
// records, and no more once its values hold maxBytes (it may pass that by
// the last poll's records); it is committed only once h returned nil. A
// fetch waits at the broker for batchFetchBytes or half the window, so a
// record reaches h at most one and a half windows after it was published.
// When h fails the member leaves the group without committing and joins
// again after a backoff (Config.RetryBackoff doubling up to
// MaxRetryBackoff), so the batch is read again from the committed offsets,
// by this member or another: a sink that cannot write holds nothing in
// memory meanwhile, and nothing is skipped.
// Delivery is at-least-once: a member that dies between h and its commit
// leaves the batch to be handed over again. Rebalances wait while a batch is
// gathered and handled (window plus h); h's context ends after
// batchTimeout, well within the group's rebalance timeout.
func (b *Bus) ConsumeBatches(ctx context.Context, topic, group string, window time.Duration, maxRecords, maxBytes int, h func(context.Context, []bus.Message) error) error {
	lim := limits{records: max(maxRecords, 1), bytes: maxBytes}
	logger := b.logger.With("topic", topic, "group", group)
	failures := 0
	for {
		handled, err := b.consumeBatches(ctx, topic, group, window, lim, h)
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, errClosed):
			return err
		case handled:
			failures = 0
		}
		failures++
		delay := b.cfg.backoff(failures)
		logger.Warn("kafka bus: batch not done; the member rejoins to read it again", "retry_in", delay, "err", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(delay):
		}
	}
}

// consumeBatches is one membership of ConsumeBatches: it returns when h
// fails (reporting whether any batch was done before) or ctx ends.
func (b *Bus) consumeBatches(ctx context.Context, topic, group string, window time.Duration, lim limits, h func(context.Context, []bus.Message) error) (handled bool, err error) {
	cl, leave, err := b.join(topic, group, kgo.FetchMinBytes(batchFetchBytes), kgo.FetchMaxWait(max(window/2, minFetchWait)))
	if err != nil {
		return false, err
	}
	defer leave() // commits nothing: what was not committed is read again
	logger := b.logger.With("topic", topic, "group", group)
	for {
		recs, err := gather(ctx, cl, logger, window, lim)
		if err != nil || ctx.Err() != nil {
			return handled, err
		}
		if len(recs) == 0 {
			cl.AllowRebalance()
			continue
		}
		msgs := make([]bus.Message, len(recs))
		for i, r := range recs {
			msgs[i] = bus.Message{Topic: topic, Key: string(r.Key), Value: r.Value}
		}
		hctx, cancel := context.WithTimeout(ctx, batchTimeout)
		err = h(hctx, msgs)
		cancel()
		if err != nil {
			return handled, err
		}
		handled = true
		commit, cancel := context.WithTimeout(context.Background(), finishTimeout)
		err = cl.CommitRecords(commit, recs...)
		cancel()
		if err != nil {
			// The batch is written but may be handed over again.
			return handled, fmt.Errorf("committing a written batch: %w", err)
		}
		cl.AllowRebalance()
	}
}

// limits bound a batch: records, and the bytes of their values (0: no
// bound).
type limits struct{ records, bytes int }

// gather polls until a record arrives, then goes on polling for window or
// until it holds lim.records records or lim.bytes of values. Rebalancing
// stays blocked from the first poll until the caller allows it.
func gather(ctx context.Context, cl *kgo.Client, logger *slog.Logger, window time.Duration, lim limits) ([]*kgo.Record, error) {
	var recs []*kgo.Record
	size := 0
	poll := ctx
	for len(recs) < lim.records && (lim.bytes <= 0 || size < lim.bytes) {
		fs := cl.PollRecords(poll, lim.records-len(recs))
		if fs.IsClientClosed() {
			return nil, errClosed
		}
		if err := fetchError(fs, logger); err != nil {
			return nil, fmt.Errorf("fetching: %w", err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			recs = append(recs, r)
			size += len(r.Value)
		})
		if poll.Err() != nil || ctx.Err() != nil {
			break
		}
		if poll == ctx && len(recs) > 0 {
			var cancel context.CancelFunc
			poll, cancel = context.WithTimeout(ctx, window)
			defer cancel()
		}
	}
	return recs, nil
}

// join makes the client of a new member of group on the bus topic. It
// commits only when told (no autocommit) and holds rebalances back from a
// poll until AllowRebalance (the consumers commit what they did first); a
// new group starts at the log start, so nothing published is skipped. The
// client is tracked, so Close ends it; leave leaves the group, committing
// nothing, and closes it.
func (b *Bus) join(topic, group string, opts ...kgo.Opt) (cl *kgo.Client, leave func(), err error) {
	opts = append(append([]kgo.Opt{
		kgo.SeedBrokers(b.cfg.Seeds...),
		kgo.ConsumerGroup(b.cfg.TopicPrefix + group),
		kgo.ConsumeTopics(b.topic(topic)),
		kgo.ConsumeStartOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.WithLogger(kgoLogger{b.logger}),
	}, opts...), b.cfg.Opts...)
	cl, err = kgo.NewClient(append(opts, b.cfg.GroupOpts...)...)
	if err != nil {
		return nil, nil, fmt.Errorf("creating kafka consumer for %s: %w", topic, err)
	}
	if !b.track(cl) {
		cl.Close()
		return nil, nil, errClosed
	}
	b.mu.Lock()
	b.groups[b.cfg.TopicPrefix+group] = struct{}{}
	b.mu.Unlock()
	return cl, func() {
		defer cl.Close()
		defer b.untrack(cl)
		cl.AllowRebalance()
		ctx, cancel := context.WithTimeout(context.Background(), finishTimeout)
		defer cancel()
		if err := cl.LeaveGroupContext(ctx); err != nil && !errors.Is(err, kgo.ErrClientClosed) {
			b.logger.Warn("kafka bus: leaving group", "topic", topic, "group", group, "err", err)
		}
	}, nil
}

// fetchError is the first error of a poll that is not the poll's context
// ending. A broker's data loss is logged, not returned: kgo has moved past
// it already, and failing on it would only meet it again.
func fetchError(fs kgo.Fetches, logger *slog.Logger) error {
	var first error
	fs.EachError(func(topic string, p int32, err error) {
		var lost *kgo.ErrDataLoss
		switch {
		case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		case errors.As(err, &lost):
			logger.Error("kafka bus: the broker lost records", "partition", p, "err", err)
		case first == nil:
			first = fmt.Errorf("partition %d: %w", p, err)
		}
	})
	return first
}

// Drained returns once group has committed every record published to topic
// before the call, or when ctx ends. A sink's readers use it to act on
// everything sent its way so far (an erasure must not be followed by
// events that were still on their way).
func (b *Bus) Drained(ctx context.Context, topic, group string) error {
	adm := kadm.NewClient(b.prod)
	ends, err := adm.ListEndOffsets(ctx, b.topic(topic))
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return fmt.Errorf("listing the end of %s: %w", topic, err)
	}
	for {
		committed, err := adm.FetchOffsets(ctx, b.cfg.TopicPrefix+group)
		if errors.Is(err, kerr.GroupIDNotFound) {
			committed, err = nil, nil // no member ever joined: nothing committed
		}
		if err != nil {
			return fmt.Errorf("fetching the offsets of %s: %w", group, err)
		}
		behind := false
		ends.Each(func(end kadm.ListedOffset) {
			c, ok := committed.Lookup(end.Topic, end.Partition)
			if end.Offset > 0 && (!ok || c.Err != nil || c.At < end.Offset) {
				behind = true
			}
		})
		if !behind {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s to read %s: %w", group, topic, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
