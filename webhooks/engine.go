package webhooks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/relaybell/relaybell/netpolicy"
	"github.com/relaybell/relaybell/store"
	"github.com/relaybell/relaybell/webhooks/signature"
)

// Limits of spec 6.4 and 8.2.
const (
	// Timeout is how long a receiver has to answer an attempt.
	Timeout = 10 * time.Second
	// MaxRedirects is how many redirects an attempt follows.
	MaxRedirects = 4
	// MaxResponseBody is how much of an answer the log keeps.
	MaxResponseBody = 2 << 10
	// Retention is how long delivery records are kept.
	Retention = 30 * 24 * time.Hour
	// DisableAfterFailures turns a webhook off after that many deliveries
	// in a row failed.
	DisableAfterFailures = 50
	// DisableAfterFailing turns a webhook off when every attempt failed
	// for that long.
	DisableAfterFailing = 72 * time.Hour
)

// RetryDelays are the waits before the retries of a failed delivery, each
// jittered by up to a fifth either way (spec 6.4: about 10.5 hours in all).
var RetryDelays = []time.Duration{time.Minute, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 8 * time.Hour}

// Store is what the engine needs from the metadata store.
type Store interface {
	Website(ctx context.Context, id string) (store.Website, error)
	Account(ctx context.Context, id string) (store.Account, error)
	WebhookEvents(ctx context.Context, afterSeq int64, limit int) ([]store.WebhookEvent, error)
	WebhooksOf(ctx context.Context, websiteID string) ([]store.Webhook, error)
	Webhook(ctx context.Context, websiteID, id string) (store.Webhook, error)
	WebhookCursor(ctx context.Context) (int64, error)
	QueueWebhookDeliveries(ctx context.Context, from, to int64, ds []store.WebhookDelivery) (bool, error)
	ClaimWebhookDeliveries(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]store.WebhookDelivery, error)
	FinishWebhookAttempt(ctx context.Context, a store.WebhookAttempt) (store.Webhook, error)
	DisableWebhook(ctx context.Context, websiteID, id, reason string, at time.Time, mail store.Email) (bool, error)
	PruneWebhookLog(ctx context.Context, before time.Time) (int64, error)
	ClaimEmails(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]store.Email, error)
	MarkEmailSent(ctx context.Context, id string, at time.Time) error
}

// Config tunes the engine.
type Config struct {
	// Allow lists the host:port pairs deliveries may reach on private
	// addresses (RELAYBELL_WEBHOOK_ALLOW_HOSTS); nothing else private is
	// ever dialled.
	Allow netpolicy.AllowList
	// Mailer sends the e-mail outbox; nil keeps the messages there for the
	// operator (admin API).
	Mailer Mailer
	// Every is how often the engine looks for work (default 1 s).
	Every time.Duration
	// Workers is how many attempts run at once on this node (default 16).
	Workers int
	// Timeout is how long a receiver has to answer (default and at most
	// Timeout, the spec's 10 seconds; tests shorten it).
	Timeout time.Duration
}

// Engine delivers the webhook outbox: it turns events into deliveries for
// the websites' webhooks, runs each due attempt, schedules retries, turns
// failing webhooks off, mails their owners and prunes the log. Every step
// is a lease or a compare-and-set in the store, so any number of nodes may
// run engines on one store without an attempt ever running twice within
// its lease.
type Engine struct {
	cfg    Config
	store  Store
	client *http.Client
	logger *slog.Logger
	now    func() time.Time
	jitter func() float64 // in [0, 1)

	attempts *prometheus.CounterVec
	// claimed is how many due attempts the last round claimed, out of
	// Workers: a round after round at Workers means deliveries wait.
	claimed prometheus.Gauge
}

// New returns an engine. The HTTP client dials only public addresses and
// the allow-listed ones, on the first request and on every redirect.
func New(cfg Config, st Store, logger *slog.Logger, reg prometheus.Registerer) *Engine {
	if cfg.Every <= 0 {
		cfg.Every = time.Second
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 16
	}
	if cfg.Timeout <= 0 || cfg.Timeout > Timeout {
		cfg.Timeout = Timeout
	}
	dialer := &netpolicy.Dialer{Allow: cfg.Allow}
	e := &Engine{
		cfg:   cfg,
		store: st,
		client: &http.Client{
			Transport: &http.Transport{
				Proxy:                 nil, // a proxy would dial for us, unchecked
				DialContext:           dialer.DialContext,
				ForceAttemptHTTP2:     true,
				MaxIdleConnsPerHost:   4,
				IdleConnTimeout:       90 * time.Second,
				TLSHandshakeTimeout:   cfg.Timeout,
				ResponseHeaderTimeout: cfg.Timeout,
			},
			CheckRedirect: func(req *http.Request, via []*http.Request) error {
				if len(via) > MaxRedirects {
					return fmt.Errorf("stopped after %d redirects", MaxRedirects)
				}
				return nil
			},
		},
		logger: logger,
		now:    time.Now,
		jitter: rand.Float64,
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "relaybell_webhook_attempts_total", Help: "Webhook delivery attempts by outcome.",
		}, []string{"outcome"}),
		claimed: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "relaybell_webhook_claimed", Help: "Due webhook attempts the engine's last round claimed; at relaybell_webhook_workers round after round, deliveries are waiting (a backlog).",
		}),
	}
	for _, o := range []string{"succeeded", "failed", "no_answer"} {
		e.attempts.WithLabelValues(o)
	}
	if reg != nil {
		workers := prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "relaybell_webhook_workers", Help: "The most webhook attempts one round of the engine claims (its workers).",
		})
		workers.Set(float64(e.cfg.Workers))
		reg.MustRegister(e.attempts, e.claimed, workers)
	}
	return e
}

// Run works until ctx ends.
func (e *Engine) Run(ctx context.Context) error {
	t := time.NewTicker(e.cfg.Every)
	defer t.Stop()
	var pruned time.Time
	for {
		if err := e.Queue(ctx); err != nil && ctx.Err() == nil {
			e.logger.Error("webhooks: queuing events", "err", err)
		}
		if _, err := e.Deliver(ctx); err != nil && ctx.Err() == nil {
			e.logger.Error("webhooks: delivering", "err", err)
		}
		if err := e.Mail(ctx); err != nil && ctx.Err() == nil {
			e.logger.Error("webhooks: mailing", "err", err)
		}
		if now := e.now(); now.Sub(pruned) >= time.Hour {
			if _, err := e.Prune(ctx); err != nil && ctx.Err() == nil {
				e.logger.Error("webhooks: pruning the log", "err", err)
			} else {
				pruned = now
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// queueBatch is how many outbox events one Queue step reads.
const queueBatch = 500

// Queue turns the outbox events after the cursor into deliveries, one per
// event and enabled webhook subscribed to it, and moves the cursor past
// them. Another node that moved the cursor first wins; this one reads
// again.
func (e *Engine) Queue(ctx context.Context) error {
	for {
		from, err := e.store.WebhookCursor(ctx)
		if err != nil {
			return err
		}
		events, err := e.store.WebhookEvents(ctx, from, queueBatch)
		if err != nil || len(events) == 0 {
			return err
		}
		type site struct {
			projectID string
			hooks     []store.Webhook
		}
		sites := map[string]*site{}
		var ds []store.WebhookDelivery
		now := e.now().UTC()
		for _, ev := range events {
			s := sites[ev.WebsiteID]
			if s == nil {
				w, err := e.store.Website(ctx, ev.WebsiteID)
				if errors.Is(err, store.ErrNotFound) {
					continue // the website is gone, and its events with it
				}
				if err != nil {
					return err
				}
				hooks, err := e.store.WebhooksOf(ctx, ev.WebsiteID)
				if err != nil {
					return err
				}
				s = &site{projectID: w.ProjectID, hooks: hooks}
				sites[ev.WebsiteID] = s
			}
			for _, h := range s.hooks {
				if !h.Enabled || !Subscribes(h.Events, ev.Event) {
					continue
				}
				body, err := Body(ev.Event, s.projectID, ev.Data, ev.CreatedAt)
				if err != nil {
					e.logger.Error("webhooks: dropping an unreadable event", "event", ev.ID, "err", err)
					break
				}
				ds = append(ds, store.WebhookDelivery{
					ID: uuid.NewString(), WebhookID: h.ID, WebsiteID: h.WebsiteID, Event: ev.Event, EventID: ev.ID,
					Body: body, Status: store.DeliveryPending, CreatedAt: now, NextAttemptAt: &now,
				})
			}
		}
		to := events[len(events)-1].Seq
		if _, err := e.store.QueueWebhookDeliveries(ctx, from, to, ds); err != nil {
			return err
		}
		if len(events) < queueBatch {
			return nil
		}
	}
}

// Subscribes reports whether a webhook subscribed to events gets event:
// an empty list is every subscribable event; the test event is only ever
// sent on request.
func Subscribes(events []string, event string) bool {
	if event == EventTest {
		return false
	}
	return len(events) == 0 || slices.Contains(events, event)
}

// Deliver runs the attempts that are due, up to a batch, and returns how
// many it ran.
func (e *Engine) Deliver(ctx context.Context) (int, error) {
	// The lease outlives an attempt (Timeout) with room to record it.
	ds, err := e.store.ClaimWebhookDeliveries(ctx, e.now(), 3*e.cfg.Timeout, e.cfg.Workers)
	if err == nil {
		e.claimed.Set(float64(len(ds)))
	}
	if err != nil || len(ds) == 0 {
		return 0, err
	}
	var (
		wg    sync.WaitGroup
		slots = make(chan struct{}, e.cfg.Workers)
	)
	for _, d := range ds {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			if err := e.attempt(ctx, d); err != nil && ctx.Err() == nil {
				e.logger.Error("webhooks: attempt", "delivery", d.ID, "err", err)
			}
		})
	}
	wg.Wait()
	return len(ds), nil
}

// attempt runs one attempt of a claimed delivery and records it.
func (e *Engine) attempt(ctx context.Context, d store.WebhookDelivery) error {
	h, err := e.store.Webhook(ctx, d.WebsiteID, d.WebhookID)
	if errors.Is(err, store.ErrNotFound) {
		return nil // deleted with its log
	}
	if err != nil {
		return err
	}
	at := e.now().UTC()
	a := store.WebhookAttempt{DeliveryID: d.ID, At: at}
	if !h.Enabled && !d.OneShot {
		// Turned off after the attempt was claimed: it ends here.
		a.Error = "webhook disabled"
		_, err := e.store.FinishWebhookAttempt(ctx, a)
		return ignoreGone(err)
	}
	sig, legacy := signature.Sign(h.Secret, at, d.Body)
	a.RequestHeaders = map[string]string{
		"Content-Type":                   "application/json",
		"User-Agent":                     "RelayBell-Webhooks/1",
		signature.HeaderEvent:            d.Event,
		signature.HeaderDelivery:         d.ID,
		signature.HeaderWebhookSignature: sig,
		signature.HeaderSignature:        legacy,
	}
	e.post(ctx, h.URL, d.Body, &a)
	if ctx.Err() != nil {
		return ctx.Err() // shutting down: the lease runs out and another try follows
	}
	a.DurationMS = e.now().Sub(at).Milliseconds()
	gone := a.StatusCode == http.StatusGone
	if !a.Succeeded && !gone && !d.OneShot && d.Retries < len(RetryDelays) {
		next := at.Add(e.jittered(RetryDelays[d.Retries]))
		a.NextAttemptAt = &next
	}
	e.attempts.WithLabelValues(outcome(a)).Inc()
	h, err = e.store.FinishWebhookAttempt(ctx, a)
	if err != nil || a.Succeeded || d.OneShot {
		return ignoreGone(err)
	}
	var reason string
	switch {
	case gone:
	case h.ConsecutiveFailures >= DisableAfterFailures:
		reason = store.DisabledFailed50
	case h.FailingSince != nil && at.Sub(*h.FailingSince) >= DisableAfterFailing:
		reason = store.DisabledFailing3Day
	default:
		return nil
	}
	return e.disable(ctx, h, reason, at)
}

// post sends the body and fills in the attempt's outcome.
func (e *Engine) post(ctx context.Context, url string, body []byte, a *store.WebhookAttempt) {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		a.Error = "invalid url: " + err.Error()
		return
	}
	for k, v := range a.RequestHeaders {
		req.Header.Set(k, v)
	}
	res, err := e.client.Do(req)
	if err != nil {
		a.Error = attemptError(err)
		return
	}
	defer res.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(res.Body, MaxResponseBody))
	a.StatusCode, a.ResponseBody = res.StatusCode, string(answer)
	switch {
	case res.StatusCode < 200 || res.StatusCode > 299:
		a.Error = "receiver answered " + strconv.Itoa(res.StatusCode)
	case err != nil && !errors.Is(err, io.EOF):
		a.Error = attemptError(err) // the answer did not finish in time
	default:
		a.Succeeded = true
	}
}

// attemptError says why an attempt got no answer, in the log's words.
func attemptError(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, netpolicy.ErrPrivateAddress):
		return "refused: the address is private or internal and not allow-listed"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout: no answer in time"
	}
	return err.Error()
}

func outcome(a store.WebhookAttempt) string {
	switch {
	case a.Succeeded:
		return "succeeded"
	case a.StatusCode == 0:
		return "no_answer"
	}
	return "failed"
}

// jittered spreads a retry delay by up to a fifth either way.
func (e *Engine) jittered(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.8 + 0.4*e.jitter()))
}

// disable turns the webhook off and queues the owner's e-mail with it.
func (e *Engine) disable(ctx context.Context, h store.Webhook, reason string, at time.Time) error {
	w, err := e.store.Website(ctx, h.WebsiteID)
	if err != nil {
		return ignoreGone(err)
	}
	acct, err := e.store.Account(ctx, w.AccountID)
	if err != nil {
		return ignoreGone(err)
	}
	why := "it answered 410 Gone"
	switch reason {
	case store.DisabledFailed50:
		why = fmt.Sprintf("%d deliveries in a row failed", DisableAfterFailures)
	case store.DisabledFailing3Day:
		why = "every delivery attempt failed for 3 days"
	}
	mail := store.Email{
		ID:      uuid.NewString(),
		To:      acct.OwnerEmail,
		Subject: "RelayBell turned off a webhook of " + w.Name,
		Body: fmt.Sprintf("RelayBell turned off the webhook %s (%s) of your website %s because %s.\n\n"+
			"Events that happen while it is off are not sent later. Fix the receiver, then turn the webhook\n"+
			"back on with PUT /api/v1/webhooks/%s and {\"enabled\": true}.\n", h.ID, h.URL, w.Name, why, h.ID),
		CreatedAt: at,
	}
	turnedOff, err := e.store.DisableWebhook(ctx, h.WebsiteID, h.ID, reason, at, mail)
	if turnedOff {
		e.logger.Warn("webhook turned off", "webhook", h.ID, "website", h.WebsiteID, "reason", why)
	}
	return ignoreGone(err)
}

// Prune removes delivery records (and passed outbox events) older than
// Retention.
func (e *Engine) Prune(ctx context.Context) (int64, error) {
	return e.store.PruneWebhookLog(ctx, e.now().Add(-Retention))
}

// ignoreGone drops ErrNotFound: the webhook or its website was deleted
// while an attempt ran.
func ignoreGone(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	return err
}
