package fanout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/semaphore"

	"github.com/relaybell/relaybell/analytics"
	"github.com/relaybell/relaybell/audience"
	"github.com/relaybell/relaybell/batch"
	"github.com/relaybell/relaybell/bus"
	"github.com/relaybell/relaybell/notification"
	"github.com/relaybell/relaybell/pusher"
	"github.com/relaybell/relaybell/store"
)

// Config tunes fan-out; the defaults fit one machine.
type Config struct {
	// ShardWorkers is how many shard tasks one node expands at once (default 8).
	ShardWorkers int
	// IntentWorkers is how many intents one node handles at once (default
	// 4 × ShardWorkers). A one-person send (an automation's message, a
	// journey's step) is expanded and pushed in its intent's handler,
	// which mostly waits: on the store's commits and on the pusher, whose
	// answer comes once the push is recorded. With as many as ShardWorkers
	// (8), two fan-out nodes held 16 such messages in flight, and that,
	// not the processor, bounded the cluster's messages a second.
	IntentWorkers int
	// PageSize is how many endpoints one audience query reads (default 2000).
	PageSize int
	// BatchSize is how many recipients go to a pusher at once (default 500).
	BatchSize int
	// InFlight is how many batches of one shard may be pushing at once (default 4).
	InFlight int
	// Held is how many recipients one node holds at most over all its shard
	// tasks: read in a page and not yet past the selection, or in a batch
	// not yet recorded (default 4 pages). It bounds the fan-out's memory
	// whatever the audience's size; it must be at least PageSize.
	Held int
}

func (c *Config) applyDefaults() {
	if c.ShardWorkers <= 0 {
		c.ShardWorkers = 8
	}
	if c.IntentWorkers <= 0 {
		c.IntentWorkers = 4 * c.ShardWorkers
	}
	if c.PageSize <= 0 {
		c.PageSize = 2000
	}
	if c.BatchSize <= 0 {
		c.BatchSize = 500
	}
	if c.InFlight <= 0 {
		c.InFlight = 4
	}
	if c.Held <= 0 {
		c.Held = 4 * c.PageSize
	}
}

// Validate checks the configuration; zero values take the defaults.
func (c Config) Validate() error {
	if c.ShardWorkers < 0 || c.IntentWorkers < 0 || c.PageSize < 0 || c.BatchSize < 0 || c.InFlight < 0 || c.Held < 0 {
		return errors.New("fanout: shard workers, page size, batch size, in-flight batches and held recipients must not be negative")
	}
	c.applyDefaults()
	if c.Held < c.PageSize {
		return fmt.Errorf("fanout: held recipients %d must be at least the page size %d", c.Held, c.PageSize)
	}
	return nil
}

// Store is what fan-out needs from the metadata store.
type Store interface {
	NotificationByID(ctx context.Context, id string) (store.Notification, error)
	Website(ctx context.Context, id string) (store.Website, error)
	Account(ctx context.Context, id string) (store.Account, error)
	Segment(ctx context.Context, websiteID, id string) (store.Segment, error)
	StartSending(ctx context.Context, id string, at time.Time, waves ...time.Time) (store.Notification, error)
	AudienceZones(ctx context.Context, websiteID string) ([]store.Zone, error)
	SetABWinner(ctx context.Context, id, variant string) (string, error)
	FailNotification(ctx context.Context, id, reason string, at time.Time) error
	Audience(ctx context.Context, q store.AudienceQuery) ([]store.Recipient, error)
	ShardsDone(ctx context.Context, notificationID string, shards []int, at time.Time) (bool, error)
	SoleShardDone(ctx context.Context, notificationID string, at time.Time) (bool, error)
	ExternalIDShards(ctx context.Context, websiteID string, externalIDs []string) ([]int, error)
	EndpointShard(ctx context.Context, websiteID, endpointID string) (int, error)
	CappedEndpoints(ctx context.Context, websiteID, notificationID string, endpoints []store.ShardEndpoint, since time.Time, max int) ([]string, error)
}

// Reports reads a send's event log: the A/B auto-winner is decided on its
// variants' click rates.
type Reports interface {
	Report(ctx context.Context, websiteID, notificationID string) (analytics.Report, error)
}

// Router delivers a batch through the pusher that owns key.
type Router interface {
	Push(ctx context.Context, key string, b pusher.Batch) error
}

// Fanout expands sends. Safe for concurrent use.
type Fanout struct {
	cfg     Config
	store   Store
	bus     bus.Bus
	router  Router
	reports Reports
	logger  *slog.Logger
	now     func() time.Time

	mu    sync.Mutex
	plans map[string]*sendPlan // notification id -> what its shards share

	// held counts the recipients the node's shard tasks hold (Config.Held).
	held *semaphore.Weighted
	// shardsDone shares the completions of the node's concurrent shard
	// tasks: one transaction for those that end together.
	shardsDone *batch.Batcher[shardTask, struct{}]

	finished prometheus.Counter
	expanded prometheus.Counter
	capped   prometheus.Counter
	working  *prometheus.GaugeVec // tasks being handled, by topic
}

// sendPlan is what every shard of one send needs, read once per
// notification.
type sendPlan struct {
	target *audience.Selector
	// cap is the website's frequency cap when it applies to the send: nil
	// for a transactional send or a website without one.
	cap *store.FrequencyCap
	// waves is how a send in waves picks each wave's browsers; nil for a
	// send that goes out at once.
	waves *notification.WavePlan
	// lean is set when nothing reads a recipient's subscriber but its id:
	// no filter or segment, no waves, no merge tag (a push's translation
	// is its browser's, store.Endpoint's Language). The audience is then
	// walked without the subscribers (store.AudienceQuery's Lean).
	lean bool
}

// New returns a fan-out role.
func New(cfg Config, st Store, b bus.Bus, router Router, reports Reports, logger *slog.Logger, reg prometheus.Registerer) (*Fanout, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.applyDefaults()
	f := &Fanout{
		cfg: cfg, store: st, bus: b, router: router, reports: reports, logger: logger, now: time.Now,
		plans:    make(map[string]*sendPlan),
		held:     semaphore.NewWeighted(int64(cfg.Held)),
		finished: prometheus.NewCounter(prometheus.CounterOpts{Name: "relaybell_fanout_sends_finished_total", Help: "Sends that finished going out."}),
		expanded: prometheus.NewCounter(prometheus.CounterOpts{Name: "relaybell_fanout_recipients_total", Help: "Recipients handed to pushers."}),
		capped:   prometheus.NewCounter(prometheus.CounterOpts{Name: "relaybell_fanout_capped_total", Help: "Browsers a non-transactional send skipped under the website's frequency cap."}),
		working: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "relaybell_fanout_tasks_in_progress",
			Help: "Bus messages (intents, shards) this node's fan-out is handling now; at the worker count, the backlog waits on the bus."}, []string{"topic"}),
	}
	f.shardsDone = batch.New(f.markShards, f.markShard).WithLinger(shardsDoneLinger)
	f.working.WithLabelValues(bus.Intents)
	f.working.WithLabelValues(bus.Shards)
	if reg != nil {
		reg.MustRegister(f.finished, f.expanded, f.capped, f.working)
	}
	return f, nil
}

// Run consumes intents and shard tasks until ctx ends.
func (f *Fanout) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for topic, h := range map[string]bus.Handler{bus.Intents: f.handleIntent, bus.Shards: f.handleShard} {
		// An automation's message (one person's) is expanded in its
		// intent's handler: intents go IntentWorkers at once.
		parallel := f.cfg.ShardWorkers
		if topic == bus.Intents {
			parallel = f.cfg.IntentWorkers
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			g := f.working.WithLabelValues(topic)
			errs <- f.bus.Consume(ctx, topic, "fanout", parallel, func(ctx context.Context, m bus.Message) error {
				g.Inc()
				defer g.Dec()
				return h(ctx, m)
			})
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func (f *Fanout) handleIntent(ctx context.Context, m bus.Message) error {
	var in bus.Intent
	if err := json.Unmarshal(m.Value, &in); err != nil {
		f.logger.Error("fanout: dropping unreadable intent", "err", err)
		return nil
	}
	n, err := f.store.NotificationByID(ctx, in.NotificationID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if n.Status != store.StatusQueued && n.Status != store.StatusSending {
		return nil // finished, canceled, or not due yet: nothing to do
	}
	now := f.now()
	var waves []time.Time
	var site *store.Website // read by the dispatch check, for the plan
	if n.Status == store.StatusQueued {
		reason, w, err := f.dispatchCheck(ctx, n)
		if err != nil {
			return err
		}
		site = &w
		if reason != "" {
			f.logger.Info("fanout: send failed at dispatch", "notification", n.ID, "reason", reason)
			if err := f.store.FailNotification(ctx, n.ID, reason, now); err != nil && !errors.Is(err, store.ErrConflict) {
				return err
			}
			return nil
		}
		if waves, err = f.waveDues(ctx, n, w, now); err != nil {
			return err
		}
	}
	n, err = f.store.StartSending(ctx, n.ID, now, waves...)
	if err != nil {
		if errors.Is(err, store.ErrConflict) {
			return nil
		}
		return err
	}
	if n.Waves > 0 {
		return nil // the outbox sweep publishes each wave when due
	}
	return f.publishShards(ctx, n, site)
}

// publishShards hands a send's shard tasks to the fan-out nodes. A send
// to one browser (a welcome, whose target names the endpoint) has it in
// the shard the store finds it in now (EndpointShard), a send to one
// person's browsers (an automation's message, whose target names the
// subscriber) has them all in the person's shard (store.ShardOf), and
// a send to a few named people (a target of at most inlineNames external
// ids) in their shards, found in one store query (ExternalIDShards):
// those are expanded here, in the intent's handler, and the send is
// finished with every task done at once (store.SoleShardDone), where each
// of the 64 went through the bus, read its shard (most to find nobody)
// and took a ShardDone transaction on the send's row; ten thousand
// people's messages coming due made 640,000 such tasks. Each shard is
// walked with the send's whole target (its external ids, segment,
// filters, topic, excludes): the lookup only leaves out the shards where
// nobody named is, it never widens the send.
//
// The lookup is a snapshot: a person who gets one of the external ids
// after it (a browser linked to the id while the send starts) is missed
// if nobody else named is in their shard, as a person linked just after a
// broadcast's walk of their shard is; one who loses it is not pushed, the
// walk's query naming the ids again.
//
// Should it fail, the intent is handled again (StartSending is
// idempotent for a send already sending); the pushes already recorded are
// not made again. A send in waves never comes here with its shards: the
// outbox sweep publishes each wave's tasks when due.
//
// n is the send as StartSending returned it, sending: the shards are
// expanded from it, not read again. site, when not nil, is its website
// as the dispatch check read it.
func (f *Fanout) publishShards(ctx context.Context, n store.Notification, site *store.Website) error {
	p, err := f.plan(ctx, n, site)
	if err != nil {
		// An unreadable target fails the send in its shard tasks.
		return bus.PublishShards(ctx, f.bus, n.ID, nil)
	}
	var shards []int
	switch a := p.target; {
	case a.EndpointID != "":
		// One browser (a welcome): the shard it is in now, or none when
		// it is gone, and the send finishes having reached nobody.
		shard, err := f.store.EndpointShard(ctx, n.WebsiteID, a.EndpointID)
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return err
		default:
			shards = []int{shard}
		}
	case a.SubscriberID != "":
		shards = []int{store.ShardOf(a.SubscriberID)}
	case len(a.ExternalIDs) > 0 && len(a.ExternalIDs) <= inlineNames:
		if shards, err = f.store.ExternalIDShards(ctx, n.WebsiteID, a.ExternalIDs); err != nil {
			return err
		}
	default:
		return bus.PublishShards(ctx, f.bus, n.ID, nil)
	}
	for _, shard := range shards {
		x := expansion{n: n, shard: shard, plan: p, inline: true}
		if err := f.expand(ctx, x); err != nil {
			return fmt.Errorf("expanding shard %d of %s: %w", x.shard, n.ID, err)
		}
	}
	finished, err := f.store.SoleShardDone(ctx, n.ID, f.now())
	if err != nil {
		return err
	}
	if finished {
		f.finished.Inc()
		f.logger.Info("send finished", "notification", n.ID)
	}
	return nil
}

// inlineNames is the most external ids a send's target may name to be
// expanded in its intent's handler (publishShards). Their shards are
// walked one after the other there, each a read of the named people of
// one shard through the external id index, where the 64 shard tasks of a
// broadcast spread over the nodes; 64 names have at most 64 shards.
const inlineNames = 64

// waveDues returns the due moments of a send's waves when it goes out in
// waves (nil otherwise), for a start at now.
func (f *Fanout) waveDues(ctx context.Context, n store.Notification, w store.Website, now time.Time) ([]time.Time, error) {
	c, err := notification.DecodeContent(n.Content)
	if err != nil || !c.InWaves() {
		return nil, nil // unreadable content fails as dispatch_error with the first shard
	}
	p := notification.NewWavePlan(c, w.Timezone, now)
	if p == nil {
		return nil, nil
	}
	var zones []store.Zone
	if !p.AutoWinner() {
		if zones, err = f.store.AudienceZones(ctx, n.WebsiteID); err != nil {
			return nil, err
		}
	}
	return p.Dues(zones), nil
}

// dispatchCheck returns the spec 2.3 error a send fails with at dispatch,
// or "", and the send's website.
func (f *Fanout) dispatchCheck(ctx context.Context, n store.Notification) (string, store.Website, error) {
	w, err := f.store.Website(ctx, n.WebsiteID)
	if err != nil {
		return "", w, fmt.Errorf("loading website: %w", err)
	}
	a, err := f.store.Account(ctx, w.AccountID)
	if err != nil {
		return "", w, fmt.Errorf("loading account: %w", err)
	}
	switch {
	case a.Suspended:
		return "suspended", w, nil
	case !a.EmailVerified:
		return "email_not_verified", w, nil
	}
	switch _, err := audience.CompileStored(ctx, f.store, n.WebsiteID, n.Target); {
	case errors.Is(err, audience.ErrUnreadableTarget):
		return "dispatch_error", w, nil
	case errors.Is(err, audience.ErrSegmentMissing):
		return "segment_missing", w, nil
	case err != nil:
		return "", w, err
	}
	return "", w, nil
}

// plan returns the send's compiled target and the frequency cap that
// applies to it, cached per notification. Only a non-transactional send
// reads the website for its cap, unless site is the website already.
func (f *Fanout) plan(ctx context.Context, n store.Notification, site *store.Website) (*sendPlan, error) {
	f.mu.Lock()
	p, ok := f.plans[n.ID]
	f.mu.Unlock()
	if ok {
		return p, nil
	}
	p = &sendPlan{}
	var err error
	if p.target, err = audience.CompileStored(ctx, f.store, n.WebsiteID, n.Target); err != nil {
		return nil, err
	}
	// Content that does not decode is the pusher's to fail on (a send in
	// waves fails here); the walk reads the subscribers meanwhile.
	content, contentErr := notification.DecodeContent(n.Content)
	p.lean = contentErr == nil && !content.Merges() && !p.target.ReadsSubscribers() && n.Waves == 0
	if !n.Transactional || n.Waves > 0 {
		var w store.Website
		if site != nil && site.ID == n.WebsiteID {
			w = *site
		} else if w, err = f.store.Website(ctx, n.WebsiteID); err != nil {
			return nil, fmt.Errorf("loading website: %w", err)
		}
		if !n.Transactional {
			p.cap = w.Settings.FrequencyCap
		}
		if n.Waves > 0 {
			if contentErr != nil || n.StartedAt == nil {
				return nil, fmt.Errorf("%w: content of a send in waves: %v", audience.ErrUnreadableTarget, contentErr)
			}
			if p.waves = notification.NewWavePlan(content, w.Timezone, *n.StartedAt); p.waves == nil {
				return nil, fmt.Errorf("%w: a send in waves without a wave plan", audience.ErrUnreadableTarget)
			}
		}
	}
	f.mu.Lock()
	if len(f.plans) > 1024 {
		clear(f.plans)
	}
	f.plans[n.ID] = p
	f.mu.Unlock()
	return p, nil
}

func (f *Fanout) handleShard(ctx context.Context, m bus.Message) error {
	var task bus.ShardTask
	if err := json.Unmarshal(m.Value, &task); err != nil {
		f.logger.Error("fanout: dropping unreadable shard task", "err", err)
		return nil
	}
	return f.shard(ctx, task)
}

// shard expands one shard task of a send and marks it done.
func (f *Fanout) shard(ctx context.Context, task bus.ShardTask) error {
	n, err := f.store.NotificationByID(ctx, task.NotificationID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if n.Status != store.StatusSending {
		return nil
	}
	p, err := f.plan(ctx, n, nil)
	if errors.Is(err, audience.ErrSegmentMissing) {
		f.logger.Info("fanout: segment deleted while sending", "notification", n.ID, "err", err)
		return f.store.FailNotification(ctx, n.ID, "segment_missing", f.now())
	}
	if err != nil {
		if errors.Is(err, audience.ErrUnreadableTarget) {
			f.logger.Error("fanout: unreadable target", "notification", n.ID, "err", err)
			return f.store.FailNotification(ctx, n.ID, "dispatch_error", f.now())
		}
		return err
	}
	x := expansion{n: n, shard: task.Shard, plan: p}
	if p.waves != nil {
		if task.Due == nil {
			f.logger.Error("fanout: dropping a shard task of a send in waves without its wave", "notification", n.ID)
			return nil
		}
		x.wave, x.due = task.Wave, *task.Due
		if p.waves.AutoWinner() && task.Wave == 1 {
			if x.winner, err = f.winner(ctx, n); err != nil {
				return err
			}
		}
	}
	if err := f.expand(ctx, x); err != nil {
		return fmt.Errorf("expanding shard %d of %s: %w", task.Shard, n.ID, err)
	}
	_, err = f.shardsDone.Do(ctx, shardTask{notificationID: n.ID, task: task.Wave*store.Shards + task.Shard})
	return err
}

// shardsDoneLinger is how long a shard task's completion waits for those
// of the node's other tasks, to be marked in one transaction. Each
// completion was a transaction of its own, and a broadcast's 64 queued on
// the send's row (docs/scale-out.md, "A broadcast's statements"); a task
// ends once its batches are recorded, so the wait holds back no push.
const shardsDoneLinger = 5 * time.Millisecond

// shardTask is a shard task of a send whose completion is to be marked:
// task w*Shards+s is shard s of wave w.
type shardTask struct {
	notificationID string
	task           int
}

// markShards marks the tasks done: one store call a send, the sends in
// order. A send that a call finished is counted and logged once.
func (f *Fanout) markShards(ctx context.Context, tasks []shardTask) ([]struct{}, error) {
	bySend := map[string][]int{}
	for _, t := range tasks {
		bySend[t.notificationID] = append(bySend[t.notificationID], t.task)
	}
	for _, id := range slices.Sorted(maps.Keys(bySend)) {
		finished, err := f.store.ShardsDone(ctx, id, bySend[id], f.now())
		if err != nil {
			return nil, err
		}
		if finished {
			f.finished.Inc()
			f.logger.Info("send finished", "notification", id)
		}
	}
	return make([]struct{}, len(tasks)), nil
}

// markShard marks one task done (a lone one, or one of a batch that
// failed, so that only the task at fault fails).
func (f *Fanout) markShard(ctx context.Context, t shardTask) (struct{}, error) {
	_, err := f.markShards(ctx, []shardTask{t})
	return struct{}{}, err
}

// winner returns the variant an auto-winner send gives the rest of its
// audience, deciding it on the first call: the better click rate
// (clicked / sent) of the test group, A on a tie.
func (f *Fanout) winner(ctx context.Context, n store.Notification) (string, error) {
	if n.ABWinner != "" {
		return n.ABWinner, nil
	}
	rep, err := f.reports.Report(ctx, n.WebsiteID, n.ID)
	if err != nil {
		return "", fmt.Errorf("reading the A/B test's clicks: %w", err)
	}
	var a, b analytics.VariantRow
	for _, v := range rep.Variants {
		switch v.Variant {
		case "a":
			a = v
		case "b":
			b = v
		}
	}
	winner := "a"
	// b.Clicked/b.Sent > a.Clicked/a.Sent, without dividing by zero.
	if b.Sent > 0 && (a.Sent == 0 || b.Clicked*a.Sent > a.Clicked*b.Sent) {
		winner = "b"
	}
	if winner, err = f.store.SetABWinner(ctx, n.ID, winner); err != nil {
		return "", err
	}
	f.logger.Info("A/B winner decided", "notification", n.ID, "winner", winner,
		"a_sent", a.Sent, "a_clicked", a.Clicked, "b_sent", b.Sent, "b_clicked", b.Clicked)
	return winner, nil
}

// expansion is one shard task: a shard of a send, or of one of its waves.
type expansion struct {
	n      store.Notification
	shard  int
	plan   *sendPlan
	wave   int
	due    time.Time
	winner string // the auto-winner's variant, for its second wave
	// inline is set for a shard of a send to one person or a few named
	// people, expanded in its intent's handler (publishShards).
	inline bool
}

// selects reports whether the task includes a recipient: the send's target
// selects it and, for a send in waves, it belongs to the task's wave.
func (x *expansion) selects(r *store.Recipient) bool {
	if !x.plan.target.Selects(&r.Subscriber) {
		return false
	}
	return x.plan.waves == nil || x.plan.waves.Selects(x.n.ID, r, x.wave, x.due)
}

// expand streams one shard's audience and pushes it batch by batch, with up
// to cfg.InFlight batches in flight, each without the browsers the send's
// frequency cap skips. It returns once every batch is recorded.
//
// Each page is read against the node's budget of held recipients
// (cfg.Held): a page takes PageSize of it, gives back at once what the
// selection leaves out, and each batch gives back its recipients once it is
// recorded or failed. A task that must wait for the budget first sends off
// the batch it is filling, so that every recipient held is on its way to
// being given back and the tasks cannot wait on each other.
func (f *Fanout) expand(ctx context.Context, x expansion) error {
	n, shard, p, a := x.n, x.shard, x.plan, x.plan.target
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
		slots    = make(chan struct{}, f.cfg.InFlight)
		pageSize = int64(f.cfg.PageSize)
	)
	if x.inline {
		// A few people's browsers: a small page takes a small share of
		// the budget, so that many such sends read at once.
		pageSize = min(pageSize, onePersonPage)
	}
	fail := func(err error) {
		errOnce.Do(func() { firstErr = err; cancel() })
	}
	flush := func(batch []store.Recipient) {
		held := int64(len(batch))
		b := pusher.Batch{NotificationID: n.ID, WebsiteID: n.WebsiteID, Recipients: batch, Winner: x.winner}
		// Keyed by the batch as read, so a redone batch goes to the same
		// pusher whatever the cap leaves of it.
		key := pusher.BatchKey(b, shard)
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			f.held.Release(held)
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			defer f.held.Release(held)
			if p.cap != nil {
				var err error
				if b.Recipients, err = f.uncapped(ctx, n, p.cap, b.Recipients); err != nil {
					fail(err)
					return
				}
				if len(b.Recipients) == 0 {
					return
				}
			}
			f.expanded.Add(float64(len(b.Recipients)))
			if err := f.router.Push(ctx, key, b); err != nil {
				fail(err)
			}
		}()
	}
	batch := make([]store.Recipient, 0, f.cfg.BatchSize)
	after := ""
	for ctx.Err() == nil {
		if !f.held.TryAcquire(pageSize) {
			if len(batch) > 0 {
				flush(batch)
				batch = make([]store.Recipient, 0, f.cfg.BatchSize)
			}
			if err := f.held.Acquire(ctx, pageSize); err != nil {
				break
			}
		}
		q := a.Query(shard, after, int(pageSize))
		q.Lean = p.lean
		page, err := f.store.Audience(ctx, q)
		if err != nil {
			f.held.Release(pageSize)
			fail(fmt.Errorf("reading audience: %w", err))
			break
		}
		kept := 0
		for _, r := range page {
			if !x.selects(&r) {
				continue
			}
			kept++
			batch = append(batch, r)
			if len(batch) == f.cfg.BatchSize {
				flush(batch)
				batch = make([]store.Recipient, 0, f.cfg.BatchSize)
			}
		}
		f.held.Release(pageSize - int64(kept))
		if len(page) < int(pageSize) {
			break
		}
		after = page[len(page)-1].Endpoint.ID
	}
	if len(batch) > 0 {
		if ctx.Err() == nil {
			flush(batch)
		} else {
			f.held.Release(int64(len(batch)))
		}
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
}

// onePersonPage is the page of the audience walk of a send expanded in
// its intent's handler (one person's, or a few named people's): a person
// has a few browsers, and a page of PageSize (2000) took a quarter
// of the node's budget (Held) for as long as it was read.
const onePersonPage = 50

// uncapped returns the recipients of a batch that the frequency cap lets
// through: those whose browser has not had c.Max pushes from the website's
// other non-transactional sends started within the last c.Hours. It drops
// the others from rs in place and counts them.
func (f *Fanout) uncapped(ctx context.Context, n store.Notification, c *store.FrequencyCap, rs []store.Recipient) ([]store.Recipient, error) {
	keys := make([]store.ShardEndpoint, len(rs))
	for i, r := range rs {
		keys[i] = store.ShardEndpoint{ID: r.Endpoint.ID, Shard: store.ShardOf(r.Subscriber.ID)}
	}
	since := f.now().Add(-time.Duration(c.Hours) * time.Hour)
	capped, err := f.store.CappedEndpoints(ctx, n.WebsiteID, n.ID, keys, since, c.Max)
	if err != nil {
		return nil, fmt.Errorf("checking the frequency cap: %w", err)
	}
	if len(capped) == 0 {
		return rs, nil
	}
	skip := make(map[string]struct{}, len(capped))
	for _, id := range capped {
		skip[id] = struct{}{}
	}
	kept := rs[:0]
	for _, r := range rs {
		if _, ok := skip[r.Endpoint.ID]; !ok {
			kept = append(kept, r)
		}
	}
	f.capped.Add(float64(len(rs) - len(kept)))
	return kept, nil
}
