package pusher

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/relaybell/relaybell/analytics"
	"github.com/relaybell/relaybell/netpolicy"
	"github.com/relaybell/relaybell/notification"
	"github.com/relaybell/relaybell/store"
	"github.com/relaybell/relaybell/webpush"
)

// Config tunes the pusher; the defaults fit one machine.
type Config struct {
	// Concurrency bounds pushes in flight across all batches (default 512).
	Concurrency int
	// MaxPerOrigin bounds requests in flight per push-service origin (default 256).
	MaxPerOrigin int
	// MaxAttempts is how many times a push is tried on 429/5xx/network errors (default 4).
	MaxAttempts int
	// BaseBackoff is the first retry delay, doubled each retry and jittered (default 500ms).
	BaseBackoff time.Duration
	// MaxBackoff caps a retry delay, Retry-After included (default 60s).
	MaxBackoff time.Duration
	// Timeout is one attempt's deadline (default 30s).
	Timeout time.Duration
	// Subject is the VAPID contact, mailto: or https: (default "mailto:push@relaybell.invalid").
	Subject string
	// Allow lists push-service host:port pairs reachable on private addresses.
	Allow netpolicy.AllowList
	// TLSConfig overrides the TLS settings (tests trust their fake push service).
	TLSConfig *tls.Config
	// RecordEvery caps the outcomes, of every batch going out, that wait
	// for a write while another goes on, and so how many one write records
	// (default 2000). Pushes wait when that many are waiting.
	RecordEvery int
	// RecordAfter is how long an outcome that finds the recorder idle waits
	// for others before it is written (default 20ms). A crash leaves
	// unrecorded, and so sent again after it, the pushes in flight, those
	// waiting and those being written: at most Concurrency + 2*RecordEvery,
	// in practice those of the last write's span (see recordLoop).
	RecordAfter time.Duration
	// NetHTTP sends every push through net/http's transport. By default
	// (false) push services that negotiate HTTP/2 get the webpush
	// package's own HTTP/2 connection, one per origin (webpush.WithHTTP2),
	// and the others net/http's.
	NetHTTP bool
}

func (c *Config) applyDefaults() {
	if c.Concurrency <= 0 {
		c.Concurrency = 512
	}
	if c.MaxPerOrigin <= 0 {
		c.MaxPerOrigin = 256
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = 4
	}
	if c.BaseBackoff <= 0 {
		c.BaseBackoff = 500 * time.Millisecond
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = time.Minute
	}
	if c.Timeout <= 0 {
		c.Timeout = 30 * time.Second
	}
	if c.Subject == "" {
		c.Subject = "mailto:push@relaybell.invalid"
	}
	if c.RecordEvery <= 0 {
		c.RecordEvery = 2000
	}
	if c.RecordAfter <= 0 {
		c.RecordAfter = 20 * time.Millisecond
	}
}

// Validate checks the configuration.
func (c Config) Validate() error {
	c.applyDefaults()
	if c.MaxBackoff < c.BaseBackoff {
		return errors.New("pusher: max backoff is below base backoff")
	}
	return nil
}

// Batch is a slice of one send's audience, all owned by one pusher.
type Batch struct {
	NotificationID string
	WebsiteID      string
	Recipients     []store.Recipient
	// Winner is the variant an A/B auto-winner send decided on, for the
	// batches of its second wave ("" otherwise; see Content.Variant).
	Winner string
}

// Store is what the pusher needs from the metadata store.
type Store interface {
	Website(ctx context.Context, id string) (store.Website, error)
	NotificationByID(ctx context.Context, id string) (store.Notification, error)
	Undelivered(ctx context.Context, notificationID string, endpoints []store.ShardEndpoint) ([]string, error)
	RecordResults(ctx context.Context, notificationID string, results []store.PushResult) error
}

// AllResultsRecorder is a Store that records several sends' results in
// one transaction (store.Delivery's RecordAllResults); the recorder uses
// it when a write has more than one send's outcomes.
type AllResultsRecorder interface {
	RecordAllResults(ctx context.Context, bySend map[string][]store.PushResult) (unknown []string, err error)
}

// Pusher delivers batches. Safe for concurrent use.
type Pusher struct {
	cfg       Config
	store     Store
	analytics analytics.Store
	client    *webpush.Client
	logger    *slog.Logger
	slots     chan struct{}
	now       func() time.Time
	sleep     func(ctx context.Context, d time.Duration) error

	outcomes  chan outcome  // to the recorder (recordLoop)
	closed    chan struct{} // closed by Close
	closeOnce sync.Once
	stopped   chan struct{} // closed when recordLoop has returned

	mu       sync.Mutex
	signers  map[string]*webpush.Signer // website id -> signer
	contents map[string]*notification.Content
	inflight map[inflightKey]chan struct{} // endpoint being pushed -> closed when its batch ends

	pushes    *prometheus.CounterVec
	byOutcome map[string]prometheus.Counter // pushes' series, looked up once
	attempts  prometheus.Histogram
	// serviceSeconds and serviceErrors are the push services' answers by
	// service (ServiceOf: a fixed set, so the labels stay bounded).
	serviceSeconds *prometheus.HistogramVec
	serviceErrors  *prometheus.CounterVec
	services       map[string]*serviceSeries // push-service origin -> its series (under mu)

	// jobs hands a push to an idle worker (run); workers exist while
	// pushes go out and a while after, so that a push does not start a
	// goroutine and grow its stack anew.
	jobs chan func()
}

// serviceSeries is a push service's name and its request duration series.
type serviceSeries struct {
	name    string
	seconds prometheus.Observer
}

// workerIdle is how long a worker without a push waits for one before it
// ends.
const workerIdle = 10 * time.Second

// New returns a pusher.
func New(cfg Config, st Store, an analytics.Store, logger *slog.Logger, reg prometheus.Registerer) (*Pusher, error) {
	cfg.applyDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	dialer := &netpolicy.Dialer{Allow: cfg.Allow}
	opts := []webpush.Option{
		webpush.WithMaxPerOrigin(cfg.MaxPerOrigin),
		webpush.WithTimeout(cfg.Timeout),
		webpush.WithDialContext(dialer.DialContext),
		webpush.WithHTTP2(!cfg.NetHTTP),
	}
	if cfg.TLSConfig != nil {
		opts = append(opts, webpush.WithTLSConfig(cfg.TLSConfig))
	}
	client, err := webpush.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("pusher: %w", err)
	}
	p := &Pusher{
		cfg:       cfg,
		store:     st,
		analytics: an,
		client:    client,
		logger:    logger,
		slots:     make(chan struct{}, cfg.Concurrency),
		now:       time.Now,
		sleep:     sleepCtx,
		signers:   make(map[string]*webpush.Signer),
		contents:  make(map[string]*notification.Content),
		inflight:  make(map[inflightKey]chan struct{}),
		services:  make(map[string]*serviceSeries),
		jobs:      make(chan func()),
		outcomes:  make(chan outcome),
		closed:    make(chan struct{}),
		stopped:   make(chan struct{}),
		pushes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "relaybell_pusher_pushes_total", Help: "Pushes by outcome.",
		}, []string{"outcome"}),
		attempts: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "relaybell_pusher_attempt_seconds", Help: "Duration of one push attempt.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
		}),
		serviceSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "relaybell_push_service_request_seconds",
			Help:    "Duration of one request to a push service, by service (fcm, mozilla, apple, wns, other).",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
		}, []string{"service"}),
		serviceErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "relaybell_push_service_errors_total",
			Help: "Push service requests that failed, by service and reason (connection, timeout, throttled: 429, server: 5xx, rejected: another 4xx but 404/410).",
		}, []string{"service", "reason"}),
	}
	// Every series exists from the start, so rates and alerts see a zero
	// rather than nothing.
	p.byOutcome = make(map[string]prometheus.Counter)
	for _, o := range []string{store.OutcomeSent, store.OutcomeFailed, store.OutcomePruned} {
		p.byOutcome[o] = p.pushes.WithLabelValues(o)
	}
	for _, svc := range webpush.Services {
		p.serviceSeconds.WithLabelValues(svc)
		for _, r := range []string{"connection", "timeout", "throttled", "server", "rejected"} {
			p.serviceErrors.WithLabelValues(svc, r)
		}
	}
	if reg != nil {
		reg.MustRegister(p.pushes, p.attempts, p.serviceSeconds, p.serviceErrors)
	}
	go p.recordLoop()
	return p, nil
}

// Close stops recording (batches still going out fail and are pushed again
// elsewhere) and releases idle connections.
func (p *Pusher) Close() {
	p.closeOnce.Do(func() { close(p.closed) })
	<-p.stopped
	p.client.Close()
}

// Push delivers a batch and returns once every outcome is recorded. An error
// means the batch is not done and must be pushed again (recorded endpoints
// are skipped then). Outcomes are recorded as they come in, together with
// those of the other batches going out (see recordLoop). An endpoint that another batch of this process is pushing
// right now (a batch redone while the first try is still going) is not
// pushed again: Push waits for the other batch instead.
func (p *Pusher) Push(ctx context.Context, b Batch) error {
	if len(b.Recipients) == 0 {
		return nil
	}
	keys := make([]store.ShardEndpoint, len(b.Recipients))
	for i, r := range b.Recipients {
		keys[i] = store.ShardEndpoint{ID: r.Endpoint.ID, Shard: store.ShardOf(r.Subscriber.ID)}
	}
	todo, err := p.store.Undelivered(ctx, b.NotificationID, keys)
	if err != nil {
		return fmt.Errorf("checking delivered endpoints: %w", err)
	}
	if len(todo) == 0 {
		return nil
	}
	mine, others := p.claim(b.NotificationID, todo)
	defer p.release(b.NotificationID, mine)
	if err := p.pushAll(ctx, b, keys, mine); err != nil {
		return err
	}
	if len(others) == 0 {
		return nil
	}
	for _, done := range others {
		select {
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	undone := make(map[string]bool, len(todo))
	for _, id := range todo {
		undone[id] = !mine[id]
	}
	waited := make([]store.ShardEndpoint, 0, len(todo)-len(mine))
	for _, k := range keys {
		if undone[k.ID] {
			waited = append(waited, k)
			undone[k.ID] = false // a repeated recipient once
		}
	}
	left, err := p.store.Undelivered(ctx, b.NotificationID, waited)
	if err != nil {
		return fmt.Errorf("checking delivered endpoints: %w", err)
	}
	if len(left) > 0 {
		return fmt.Errorf("%d endpoints of a concurrent batch of %s are not done", len(left), b.NotificationID)
	}
	return nil
}

type inflightKey struct{ notificationID, endpointID string }

// claim marks the endpoints of ids that no other batch of this process is
// pushing as this batch's, and returns them, plus the done channels of the
// batches pushing the rest.
func (p *Pusher) claim(notificationID string, ids []string) (mine map[string]bool, others []chan struct{}) {
	mine = make(map[string]bool, len(ids))
	done := make(chan struct{})
	seen := map[chan struct{}]bool{}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, id := range ids {
		key := inflightKey{notificationID, id}
		if ch, ok := p.inflight[key]; ok {
			if !seen[ch] {
				seen[ch] = true
				others = append(others, ch)
			}
			continue
		}
		p.inflight[key] = done
		mine[id] = true
	}
	if len(mine) == 0 {
		close(done)
	}
	return mine, others
}

// release ends a claim: the endpoints are recorded or left for a redo.
func (p *Pusher) release(notificationID string, mine map[string]bool) {
	var done chan struct{}
	p.mu.Lock()
	for id := range mine {
		key := inflightKey{notificationID, id}
		done = p.inflight[key]
		delete(p.inflight, key)
	}
	p.mu.Unlock()
	if done != nil {
		close(done)
	}
}

// pushAll sends the batch's pushes to the endpoints in ids and waits until
// their outcomes are recorded. keys are the recipients' endpoints with
// their shards, in the batch's order (Push made them once).
func (p *Pusher) pushAll(ctx context.Context, b Batch, keys []store.ShardEndpoint, ids map[string]bool) error {
	if len(ids) == 0 {
		return nil
	}
	content, err := p.content(ctx, b.NotificationID)
	if err != nil {
		return err
	}
	signer, err := p.signer(ctx, b.WebsiteID)
	if err != nil {
		return err
	}
	rec := p.newRecording()
	// The payload's JSON is encoded once for the whole batch, each
	// browser's endpoint id spliced in.
	enc := content.PayloadEncoder(b.NotificationID)
	var wg sync.WaitGroup
	for i := range b.Recipients {
		r, shard := &b.Recipients[i], keys[i].Shard
		if !ids[r.Endpoint.ID] {
			continue
		}
		wg.Add(1)
		if !p.run(ctx, func() {
			defer wg.Done()
			defer p.freeSlot() // before Done: a batch that returned holds no slot
			variant := content.Variant(b.NotificationID, r.Endpoint.ID, b.Winner)
			service, outcome, code := p.deliver(ctx, r, content, enc, variant, signer)
			if ctx.Err() != nil {
				return // not recorded: the batch will be pushed again
			}
			p.outcomeCounter(outcome).Inc()
			result := store.PushResult{EndpointID: r.Endpoint.ID, Outcome: outcome, Service: service, Shard: shard}
			rec.add(b.NotificationID, result, analytics.Event{
				Kind:           eventKind(outcome),
				WebsiteID:      b.WebsiteID,
				NotificationID: b.NotificationID,
				EndpointID:     r.Endpoint.ID,
				SubscriberID:   r.Subscriber.ID,
				Device:         r.Endpoint.Device,
				Language:       r.Endpoint.Language,
				Variant:        variant,
				Code:           code,
				At:             p.now().UTC(),
			})
		}) {
			wg.Done()
			wg.Wait()
			rec.finish()
			return ctx.Err()
		}
	}
	wg.Wait()
	if err := rec.finish(); err != nil {
		return err
	}
	return ctx.Err()
}

// run hands f, one push, to a worker once one of the Concurrency slots
// is free, and reports false if ctx ended first. f gives the slot back
// (freeSlot).
func (p *Pusher) run(ctx context.Context, f func()) bool {
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return false
	}
	select {
	case p.jobs <- f:
	default:
		go p.worker(f)
	}
	return true
}

// freeSlot gives back the slot run took.
func (p *Pusher) freeSlot() { <-p.slots }

// worker runs pushes handed to it until none came for workerIdle or the
// pusher closed.
func (p *Pusher) worker(f func()) {
	idle := time.NewTimer(workerIdle)
	defer idle.Stop()
	for {
		f()
		idle.Reset(workerIdle)
		select {
		case f = <-p.jobs:
		case <-idle.C:
			return
		case <-p.closed:
			return
		}
	}
}

// outcomeCounter is the pushes' series of outcome.
func (p *Pusher) outcomeCounter(outcome string) prometheus.Counter {
	if c, ok := p.byOutcome[outcome]; ok {
		return c
	}
	return p.pushes.WithLabelValues(outcome)
}

// service is the series of the push service at origin (ServiceOf), kept
// per origin so that a push neither parses its URL again nor looks its
// series up.
func (p *Pusher) service(origin string) *serviceSeries {
	p.mu.Lock()
	defer p.mu.Unlock()
	s, ok := p.services[origin]
	if !ok {
		if len(p.services) >= 1024 { // push services are few; forget hostile ones wholesale
			clear(p.services)
		}
		name := webpush.ServiceOf(origin)
		s = &serviceSeries{name: name, seconds: p.serviceSeconds.WithLabelValues(name)}
		p.services[origin] = s
	}
	return s
}

// errClosed fails the batches whose outcomes were not recorded before Close.
var errClosed = errors.New("pusher closed before recording the outcomes")

// recording is a batch's share of what the recorder records: it counts the
// batch's outcomes not yet recorded and keeps the first failure.
type recording struct {
	p       *Pusher
	pending sync.WaitGroup

	mu  sync.Mutex
	err error
}

// outcome is one push's result and event on its way to the recorder.
type outcome struct {
	rec            *recording
	notificationID string
	result         store.PushResult
	event          analytics.Event
}

func (p *Pusher) newRecording() *recording { return &recording{p: p} }

// add hands an outcome to the recorder.
func (rec *recording) add(notificationID string, r store.PushResult, e analytics.Event) {
	rec.pending.Add(1)
	select {
	case rec.p.outcomes <- outcome{rec, notificationID, r, e}:
	case <-rec.p.closed:
		rec.done(errClosed)
	}
}

func (rec *recording) done(err error) {
	if err != nil {
		rec.mu.Lock()
		if rec.err == nil {
			rec.err = err
		}
		rec.mu.Unlock()
	}
	rec.pending.Done()
}

// finish waits until every outcome of the batch is recorded and returns
// the first failure.
func (rec *recording) finish() error {
	recorded := make(chan struct{})
	go func() {
		rec.pending.Wait()
		close(recorded)
	}()
	select {
	case <-recorded:
	case <-rec.p.stopped:
		return errClosed
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return rec.err
}

// recordLoop is the recorder: it gathers the outcomes of every batch going
// out and records them together, one analytics write and one store write
// per send. One write goes on at a time; what comes in meanwhile goes in
// the next one, as soon as it ends, so writes grow with the push rate and
// their own latency instead of queueing up. An outcome that arrives while
// nothing is being written waits RecordAfter for others. The recorder
// holds at most RecordEvery outcomes besides those being written; past
// that, pushes wait for it.
func (p *Pusher) recordLoop() {
	defer close(p.stopped)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		gathered []outcome
		window   <-chan time.Time // ends an idle recorder's wait for more
		writing  chan struct{}    // closed when the write going on ends
	)
	for {
		in := p.outcomes
		if len(gathered) >= p.cfg.RecordEvery {
			in = nil
		}
		select {
		case o := <-in:
			gathered = append(gathered, o)
			if len(gathered) == 1 && writing == nil {
				window = time.After(p.cfg.RecordAfter)
			}
		case <-window:
			window = nil
		case <-writing:
			writing, window = nil, nil
		case <-p.closed:
			cancel() // the write going on fails, and with it its batches
			if writing != nil {
				<-writing
			}
			return // the batches of gathered fail with errClosed
		}
		if writing == nil && len(gathered) > 0 && (window == nil || len(gathered) >= p.cfg.RecordEvery) {
			writing = make(chan struct{})
			go func(batch []outcome, done chan struct{}) {
				defer close(done)
				p.record(ctx, batch)
			}(gathered, writing)
			gathered, window = nil, nil
		}
	}
}

// record writes gathered outcomes and tells their batches. Analytics go
// first: if recording results fails the batch is pushed again and
// analytics may see a push twice, but a result is never recorded without
// its event.
func (p *Pusher) record(ctx context.Context, gathered []outcome) {
	events := make([]analytics.Event, len(gathered))
	bySend := map[string][]store.PushResult{}
	for i, o := range gathered {
		events[i] = o.event
		bySend[o.notificationID] = append(bySend[o.notificationID], o.result)
	}
	errs := map[string]error{}
	if err := p.analytics.Record(ctx, events); err != nil {
		err = fmt.Errorf("recording push events: %w", err)
		for id := range bySend {
			errs[id] = err
		}
	} else if all, ok := p.store.(AllResultsRecorder); ok && len(bySend) > 1 {
		// The sends' results in one transaction: many one-person sends'
		// outcomes come in together, where a transaction each was a
		// commit each.
		unknown, err := all.RecordAllResults(ctx, bySend)
		if err != nil {
			err = fmt.Errorf("recording push results: %w", err)
			for id := range bySend {
				errs[id] = err
			}
		}
		for _, id := range unknown {
			errs[id] = fmt.Errorf("recording push results: %w", store.ErrNotFound)
		}
	} else {
		for id, results := range bySend {
			if err := p.store.RecordResults(ctx, id, results); err != nil {
				errs[id] = fmt.Errorf("recording push results: %w", err)
			}
		}
	}
	for _, o := range gathered {
		o.rec.done(errs[o.notificationID])
	}
}

func eventKind(outcome string) string {
	switch outcome {
	case store.OutcomeSent:
		return analytics.KindSent
	case store.OutcomePruned:
		return analytics.KindExpired
	default:
		return analytics.KindFailed
	}
}

// deliver sends one push with retries and classifies the outcome. service
// is the endpoint's push service (ServiceOf); code is the push service's
// answer for failures ("expired" for pruned).
func (p *Pusher) deliver(ctx context.Context, r *store.Recipient, c *notification.Content, enc *notification.PayloadEncoder, variant string, signer *webpush.Signer) (service, outcome, code string) {
	target, err := webpush.ParseSubscription(webpush.Subscription{Endpoint: r.Endpoint.URL, P256dh: r.Endpoint.P256dh, Auth: r.Endpoint.Auth})
	if err != nil {
		return webpush.ServiceOf(r.Endpoint.URL), store.OutcomeFailed, "invalid_subscription"
	}
	svc := p.service(target.Origin())
	payload, err := enc.Encode(r, variant)
	if err != nil {
		return svc.name, store.OutcomeFailed, "payload"
	}
	msg := webpush.Message{Payload: payload, TTL: c.TTL, Urgency: webpush.UrgencyNormal}
	if c.Transactional {
		msg.Urgency = webpush.UrgencyHigh
	}
	for attempt := 1; ; attempt++ {
		start := time.Now()
		res, err := p.client.Send(ctx, target, msg, signer)
		took := time.Since(start).Seconds()
		p.attempts.Observe(took)
		if ctx.Err() == nil {
			svc.seconds.Observe(took)
			if reason := serviceError(res, err); reason != "" {
				p.serviceErrors.WithLabelValues(svc.name, reason).Inc()
			}
		}
		var retryAfter time.Duration
		switch {
		case err != nil && ctx.Err() != nil:
			return svc.name, store.OutcomeFailed, "canceled"
		case err != nil && errors.Is(err, webpush.ErrPayloadTooLarge):
			return svc.name, store.OutcomeFailed, "413"
		case err != nil:
			code = "connection"
			if errors.Is(err, context.DeadlineExceeded) {
				code = "timeout"
			}
			if errors.Is(err, netpolicy.ErrPrivateAddress) {
				return svc.name, store.OutcomeFailed, "private_address"
			}
		case res.StatusCode >= 200 && res.StatusCode < 300:
			return svc.name, store.OutcomeSent, ""
		case res.StatusCode == 404 || res.StatusCode == 410:
			return svc.name, store.OutcomePruned, "expired"
		case res.StatusCode == 429 || res.StatusCode >= 500:
			code = strconv.Itoa(res.StatusCode)
			retryAfter = res.RetryAfter
		default:
			return svc.name, store.OutcomeFailed, strconv.Itoa(res.StatusCode)
		}
		if attempt >= p.cfg.MaxAttempts {
			return svc.name, store.OutcomeFailed, code
		}
		if err := p.sleep(ctx, p.backoff(attempt, retryAfter)); err != nil {
			return svc.name, store.OutcomeFailed, "canceled"
		}
	}
}

// serviceError is the reason label of a failed push service request, ""
// when the service answered (2xx, and 404/410: the subscription is gone).
func serviceError(res webpush.Result, err error) string {
	switch {
	case err != nil && (errors.Is(err, netpolicy.ErrPrivateAddress) || errors.Is(err, webpush.ErrPayloadTooLarge)):
		return "" // refused here, never sent
	case err != nil && errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case err != nil:
		return "connection"
	case res.StatusCode == 429:
		return "throttled"
	case res.StatusCode >= 500:
		return "server"
	case res.StatusCode >= 400 && res.StatusCode != 404 && res.StatusCode != 410:
		return "rejected"
	}
	return ""
}

// backoff is the delay before retry number attempt: exponential from
// BaseBackoff with full jitter, at least Retry-After, at most MaxBackoff.
func (p *Pusher) backoff(attempt int, retryAfter time.Duration) time.Duration {
	d := p.cfg.BaseBackoff << min(attempt-1, 16)
	d = d/2 + rand.N(d/2+1)
	d = max(d, retryAfter)
	return min(d, p.cfg.MaxBackoff)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (p *Pusher) content(ctx context.Context, id string) (*notification.Content, error) {
	p.mu.Lock()
	c, ok := p.contents[id]
	p.mu.Unlock()
	if ok {
		return c, nil
	}
	n, err := p.store.NotificationByID(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("loading notification %s: %w", id, err)
	}
	if c, err = notification.DecodeContent(n.Content); err != nil {
		return nil, err
	}
	p.mu.Lock()
	if len(p.contents) > 1024 { // sends are few at a time; forget old ones wholesale
		clear(p.contents)
	}
	p.contents[id] = c
	p.mu.Unlock()
	return c, nil
}

func (p *Pusher) signer(ctx context.Context, websiteID string) (*webpush.Signer, error) {
	p.mu.Lock()
	s, ok := p.signers[websiteID]
	p.mu.Unlock()
	if ok {
		return s, nil
	}
	w, err := p.store.Website(ctx, websiteID)
	if err != nil {
		return nil, fmt.Errorf("loading website %s: %w", websiteID, err)
	}
	key, err := webpush.ParseVAPIDKey(w.VAPIDPrivateKey)
	if err != nil {
		return nil, fmt.Errorf("website %s VAPID key: %w", websiteID, err)
	}
	if s, err = webpush.NewSigner(key, p.cfg.Subject); err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.signers[websiteID] = s
	p.mu.Unlock()
	return s, nil
}
