package kafka

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/relaybell/relaybell/bus"
)

// pollRecords bounds the records one poll takes from the client.
const pollRecords = 500

// maxBacklog is how many fetched records a partition may hold in memory
// before its fetching pauses.
const maxBacklog = 1000

// finishTimeout bounds the final commit and the group leave at shutdown.
const finishTimeout = 10 * time.Second

// Consume joins group as one member and runs h on the topic's records until
// ctx ends; see the package doc for the delivery rules.
func (b *Bus) Consume(ctx context.Context, topic, group string, parallel int, h bus.Handler) error {
	if parallel < 1 {
		parallel = 1
	}
	c := &consumer{
		cfg:      b.cfg,
		logger:   b.logger.With("topic", topic, "group", group),
		busTopic: topic,
		topic:    b.topic(topic),
		parallel: parallel,
		h:        h,
		parts:    make(map[int32]*partition),
	}
	cl, leave, err := b.join(topic, group, kgo.OnPartitionsRevoked(c.revoked), kgo.OnPartitionsLost(c.lost))
	if err != nil {
		return err
	}
	defer leave()
	c.cl = cl
	c.run(ctx)
	return nil
}

// consumer is one group member's state.
type consumer struct {
	cfg      Config
	logger   *slog.Logger
	cl       *kgo.Client
	busTopic string // as the caller names it
	topic    string // as Kafka names it
	parallel int
	h        bus.Handler

	mu      sync.Mutex // guards parts, every partition's state and running
	parts   map[int32]*partition
	running int // drainers working
	// wakePoll ends the poll going on, nil between polls; woken records a
	// drainer's end between polls, so the next poll returns at once. Either
	// way the loop starts another partition without waiting for records.
	wakePoll context.CancelFunc
	woken    bool
	drains   sync.WaitGroup
}

// partition is what the member holds of one partition.
type partition struct {
	backlog   []*kgo.Record // fetched, not yet done, in offset order
	done      *kgo.Record   // last record done; every earlier one is done too
	committed int64         // offset committed (done.Offset+1 once committed), -1 if none
	attempts  int           // failed attempts of backlog[0]
	retryAt   time.Time     // when backlog[0] may be retried
	paused    bool
	// draining is set while a drainer works through the backlog, and ended
	// is closed once it stops. stop marks a partition leaving this member:
	// its drainer ends after its current record and none starts again.
	draining bool
	stop     bool
	ended    chan struct{}
}

func (c *consumer) part(p int32) *partition {
	pt, ok := c.parts[p]
	if !ok {
		pt = &partition{committed: -1}
		c.parts[p] = pt
	}
	return pt
}

// run polls and hands ready partitions to drainers until ctx ends or the
// client is closed, then waits for the drainers and commits what they did.
func (c *consumer) run(ctx context.Context) {
	closed := false
	defer func() {
		c.drains.Wait()
		if !closed {
			c.mu.Lock()
			c.commitParts(c.cl, c.parts)
			c.mu.Unlock()
		}
	}()
	for ctx.Err() == nil {
		pollCtx, cancel := c.pollContext(ctx)
		fs := c.cl.PollRecords(pollCtx, pollRecords)
		cancel()
		if fs.IsClientClosed() {
			closed = true
			return
		}
		err := fetchError(fs, c.logger)
		if err != nil {
			c.logger.Warn("kafka bus: fetching", "err", err)
		}

		c.mu.Lock()
		c.wakePoll = nil
		fs.EachRecord(func(r *kgo.Record) {
			pt := c.part(r.Partition)
			pt.backlog = append(pt.backlog, r)
		})
		c.start(ctx)
		c.commitParts(c.cl, c.parts)
		c.pauseWaiting()
		c.mu.Unlock()
		c.cl.AllowRebalance()

		if err != nil && fs.NumRecords() == 0 {
			select { // do not spin on a persistent fetch error
			case <-ctx.Done():
			case <-time.After(250 * time.Millisecond):
			}
		}
	}
}

// pollContext ends the poll when a drainer ends (another partition may
// start) or at the earliest retry due, so a waiting record is retried on
// time even when nothing new arrives.
func (c *consumer) pollContext(ctx context.Context) (context.Context, context.CancelFunc) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	var next time.Time
	for _, pt := range c.parts {
		if len(pt.backlog) > 0 && !pt.draining && pt.retryAt.After(now) && (next.IsZero() || pt.retryAt.Before(next)) {
			next = pt.retryAt
		}
	}
	pollCtx, cancel := context.WithCancel(ctx)
	if !next.IsZero() {
		pollCtx, cancel = context.WithDeadline(ctx, next)
	}
	if c.woken {
		c.woken = false
		cancel()
	}
	c.wakePoll = cancel
	return pollCtx, cancel
}

// start hands ready partitions (a backlog, no retry pending, no drainer) to
// new drainers, up to c.parallel at once. c.mu is held.
func (c *consumer) start(ctx context.Context) {
	if ctx.Err() != nil {
		return
	}
	now := time.Now()
	for _, pt := range c.parts {
		if c.running >= c.parallel {
			return
		}
		if pt.draining || pt.stop || len(pt.backlog) == 0 || now.Before(pt.retryAt) {
			continue
		}
		pt.draining, pt.ended = true, make(chan struct{})
		c.running++
		c.drains.Add(1)
		go c.drain(ctx, pt)
	}
}

// drain handles pt's backlog in order until it is empty, a handler fails,
// the partition leaves (stop) or ctx ends. Only the handler runs without
// c.mu.
func (c *consumer) drain(ctx context.Context, pt *partition) {
	defer c.drains.Done()
	c.mu.Lock()
	for !pt.stop && ctx.Err() == nil && len(pt.backlog) > 0 && !time.Now().Before(pt.retryAt) {
		r := pt.backlog[0]
		c.mu.Unlock()
		err := c.h(ctx, bus.Message{Topic: c.busTopic, Key: string(r.Key), Value: r.Value})
		c.mu.Lock()
		if err != nil {
			if ctx.Err() != nil {
				break // shutting down: not done, redelivered later
			}
			pt.attempts++
			delay := c.cfg.backoff(pt.attempts)
			pt.retryAt = time.Now().Add(delay)
			c.logger.Warn("kafka bus: handler failed, will retry", "partition", r.Partition, "offset", r.Offset,
				"key", string(r.Key), "attempt", pt.attempts, "retry_in", delay, "err", err)
			break
		}
		pt.done = r
		pt.attempts = 0
		pt.retryAt = time.Time{}
		pt.backlog[0] = nil
		pt.backlog = pt.backlog[1:]
	}
	pt.draining = false
	c.running--
	close(pt.ended)
	if c.wakePoll != nil {
		c.wakePoll()
	} else {
		c.woken = true
	}
	c.mu.Unlock()
}

// commitParts commits the done prefix of every partition of parts not
// committed yet. c.mu is held. A failure is logged and retried at the next
// loop (or lost to a rebalance, which only means redelivery).
func (c *consumer) commitParts(cl *kgo.Client, parts map[int32]*partition) {
	var recs []*kgo.Record
	var pts []*partition
	for _, pt := range parts {
		if pt.done != nil && pt.done.Offset+1 > pt.committed {
			recs = append(recs, pt.done)
			pts = append(pts, pt)
		}
	}
	if len(recs) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), finishTimeout)
	defer cancel()
	if err := cl.CommitRecords(ctx, recs...); err != nil {
		c.logger.Warn("kafka bus: committing offsets", "err", err)
		return
	}
	for i, pt := range pts {
		pt.committed = recs[i].Offset + 1
	}
}

// pauseWaiting pauses fetching for partitions whose backlog reached
// maxBacklog (their head record waits for a retry), so memory stays bounded,
// and resumes them once the backlog shrinks. A short failure does not pause:
// resuming costs up to a fetch long-poll (kgo's FetchMaxWait, 5 s) before the
// partition is fetched again.
func (c *consumer) pauseWaiting() {
	var pause, resume []int32
	for p, pt := range c.parts {
		switch full := len(pt.backlog) >= maxBacklog; {
		case full && !pt.paused:
			pause = append(pause, p)
			pt.paused = true
		case !full && pt.paused:
			resume = append(resume, p)
			pt.paused = false
		}
	}
	if len(pause) > 0 {
		c.cl.PauseFetchPartitions(map[string][]int32{c.topic: pause})
	}
	if len(resume) > 0 {
		c.cl.ResumeFetchPartitions(map[string][]int32{c.topic: resume})
	}
}

// revoked commits what is done on the partitions leaving this member and
// forgets them; their next owner resumes from the committed offsets.
func (c *consumer) revoked(_ context.Context, cl *kgo.Client, revoked map[string][]int32) {
	c.drop(cl, revoked[c.topic], true)
}

// lost forgets partitions taken away without a chance to commit.
func (c *consumer) lost(_ context.Context, cl *kgo.Client, lost map[string][]int32) {
	c.drop(cl, lost[c.topic], false)
}

func (c *consumer) drop(cl *kgo.Client, ps []int32, commit bool) {
	if len(ps) == 0 {
		return
	}
	// A leaving partition starts no drainer again, and its drainer ends
	// after its current record; what it did is committed (revoked) or
	// redelivered to the next owner (lost).
	c.mu.Lock()
	var ended []chan struct{}
	for _, p := range ps {
		if pt, ok := c.parts[p]; ok {
			pt.stop = true
			if pt.draining {
				ended = append(ended, pt.ended)
			}
		}
	}
	c.mu.Unlock()
	for _, e := range ended {
		<-e
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	gone := make(map[int32]*partition, len(ps))
	for _, p := range ps {
		if pt, ok := c.parts[p]; ok {
			gone[p] = pt
			delete(c.parts, p)
		}
	}
	if commit {
		c.commitParts(cl, gone)
	}
	// Pauses outlive assignments: a partition coming back must be fetched.
	cl.ResumeFetchPartitions(map[string][]int32{c.topic: ps})
}
