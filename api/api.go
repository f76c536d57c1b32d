package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"github.com/relaybell/relaybell/accounts"
	"github.com/relaybell/relaybell/analytics"
	"github.com/relaybell/relaybell/automations"
	"github.com/relaybell/relaybell/batch"
	"github.com/relaybell/relaybell/defcache"
	"github.com/relaybell/relaybell/events"
	"github.com/relaybell/relaybell/feeds"
	"github.com/relaybell/relaybell/goals"
	"github.com/relaybell/relaybell/integrations"
	"github.com/relaybell/relaybell/journeys"
	"github.com/relaybell/relaybell/netpolicy"
	"github.com/relaybell/relaybell/onsite"
	"github.com/relaybell/relaybell/ratelimit"
	"github.com/relaybell/relaybell/schedules"
	"github.com/relaybell/relaybell/store"
	"github.com/relaybell/relaybell/suggestions"
)

// Defaults of Config.
const (
	DefaultMaxBodyBytes = 1 << 20 // spec 8.2: request body 1 MB
	DefaultKeyCacheTTL  = 30 * time.Second
	DefaultKeyCacheSize = 10000
	DefaultAuthPoll     = 500 * time.Millisecond
	// DefaultPublicRateLimit is spec 8.1's limit of the browser SDK routes,
	// a minute per visitor address.
	DefaultPublicRateLimit = 120
	// DefaultCommerceRateLimit is the commerce receivers' limit, a
	// minute per address: ten times the browser SDK routes' 120 (20 a
	// second), since a store's bulk product edit sends a delivery per
	// product from its one server, WooCommerce does not retry a refused
	// delivery (and disables a webhook after five failures in a row),
	// and Shopify's many stores share its addresses.
	DefaultCommerceRateLimit = 1200
)

// requestTimeout bounds the work of one request on the store and analytics.
const requestTimeout = 30 * time.Second

// Config configures the API role.
type Config struct {
	// AdminToken turns the operator admin API (/admin/v1) on when set
	// (RELAYBELL_ADMIN_TOKEN). Empty: every /admin/v1 route answers 404.
	AdminToken string
	// PushAllowHosts are host:port pairs a push endpoint may use even on a
	// private address or plain http (RELAYBELL_PUSH_ALLOW_HOSTS). Default none.
	PushAllowHosts netpolicy.AllowList
	// MaxBodyBytes is the largest request body accepted; larger answers 413
	// payload_too_large. Default 1 MB (spec 8.2).
	MaxBodyBytes int
	// KeyCacheTTL is how long a resolved API key is trusted without asking
	// the store again. Default 30s. A change to what keys resolve to
	// (suspension, verification, settings, keys created or revoked) drops
	// the cache of the node that made it at once, and of every other node
	// within about AuthPoll.
	KeyCacheTTL time.Duration
	// KeyCacheSize bounds the number of cached keys. Default 10000.
	KeyCacheSize int
	// AuthPoll is how often the node reads the store's auth version, which
	// every change to what keys resolve to moves, on any node, and drops
	// its key cache when it moved (authwatch.go). A node that cannot read
	// it for 4 polls (at least 1 s) stops using its key cache until it
	// can. Default 500ms. Negative turns polling off: changes made through
	// other nodes then show within KeyCacheTTL (for tests and tools that
	// run a single node alone on its store).
	AuthPoll time.Duration
	// CountryHeader names a header set by a trusted proxy that carries the
	// visitor's 2-letter country (e.g. "CF-IPCountry"). Default none: the
	// country is looked up from the visitor's IP address.
	CountryHeader string
	// TrustProxy says the API sits behind a reverse proxy that sets
	// X-Forwarded-For and X-Forwarded-Proto (RELAYBELL_TRUST_PROXY): the
	// visitor's address is the last public one of X-Forwarded-For (the one
	// a proxy added; what comes before is the client's to make up). Default false: the
	// connection's peer is the visitor.
	TrustProxy bool
	// PublicURL is where browsers reach the API, e.g.
	// "https://push.example.com" (RELAYBELL_PUBLIC_URL); the SDK scripts
	// call it. Default: the scheme and Host of the request for the script.
	PublicURL string
	// ReviewThreshold is the audience, in browsers, from which a new
	// account's first broadcast is held for review (RELAYBELL_REVIEW_THRESHOLD).
	// Default 10000; negative turns review off.
	ReviewThreshold int
	// PublicRateLimit is how many requests a minute each visitor address
	// may make to the browser SDK routes and pings, counted across the
	// nodes (RELAYBELL_PUBLIC_RATE_LIMIT). Default 120 (spec 8.1);
	// negative turns the limit off (the bench subscribes its whole
	// audience from one address).
	PublicRateLimit int
	// CommerceRateLimit is how many requests a minute each address may
	// make to the commerce receivers, both platforms and every project
	// together, counted across the nodes (RELAYBELL_COMMERCE_RATE_LIMIT).
	// Default 1200 (DefaultCommerceRateLimit); negative turns the limit
	// off.
	CommerceRateLimit int
	// EventRateLimit is how many calls of POST and GET /events a minute
	// each key may make (RELAYBELL_EVENT_RATE_LIMIT). Default 3000 (spec
	// 8.1); negative turns the limit off (the events bench).
	EventRateLimit int
	// NoSendLimits turns off spec 8.1's send rates per key and hourly send
	// budgets per website (RELAYBELL_NO_SEND_LIMITS=true): for load runs only
	// (the API bench sends thousands a second from one key).
	NoSendLimits bool
}

// withDefaults fills unset fields.
func (c Config) withDefaults() Config {
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.KeyCacheTTL == 0 {
		c.KeyCacheTTL = DefaultKeyCacheTTL
	}
	if c.KeyCacheSize == 0 {
		c.KeyCacheSize = DefaultKeyCacheSize
	}
	if c.AuthPoll == 0 {
		c.AuthPoll = DefaultAuthPoll
	}
	if c.ReviewThreshold == 0 {
		c.ReviewThreshold = DefaultReviewThreshold
	}
	if c.PublicRateLimit == 0 {
		c.PublicRateLimit = DefaultPublicRateLimit
	}
	if c.CommerceRateLimit == 0 {
		c.CommerceRateLimit = DefaultCommerceRateLimit
	}
	if c.EventRateLimit == 0 {
		c.EventRateLimit = DefaultEventRateLimit
	}
	return c
}

// Validate reports a configuration the API cannot run with. Zero values
// are valid and mean the defaults.
func (c Config) Validate() error {
	if c.MaxBodyBytes < 0 {
		return fmt.Errorf("max body bytes %d: must not be negative", c.MaxBodyBytes)
	}
	if c.KeyCacheTTL < 0 {
		return fmt.Errorf("key cache ttl %s: must not be negative", c.KeyCacheTTL)
	}
	if c.KeyCacheSize < 0 {
		return fmt.Errorf("key cache size %d: must not be negative", c.KeyCacheSize)
	}
	if c.AdminToken != "" && strings.ContainsAny(c.AdminToken, " \t\r\n") {
		return errors.New("admin token: must not contain white space")
	}
	if c.CountryHeader != "" && !isToken(c.CountryHeader) {
		return fmt.Errorf("country header %q: not a header name", c.CountryHeader)
	}
	if c.PublicURL != "" {
		if u, err := url.Parse(c.PublicURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") ||
			u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			return fmt.Errorf("public url %q: want an absolute http(s) URL", c.PublicURL)
		}
	}
	return nil
}

// isToken reports whether s is a valid HTTP header name.
func isToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return s != ""
}

// Dispatcher publishes the send intent of a queued notification once it is
// committed. A failure does not fail the request: the notification is
// already stored and the outbox sweep re-drives it. The dispatcher records
// MarkPublished itself once the intent reached the bus.
type Dispatcher interface {
	Dispatch(ctx context.Context, n store.Notification) error
}

// Store is what the API reads and writes of the store: every feature but
// the delivery path's (audience walks, waves, push results), which are the
// fan-out's and the pushers'.
type Store interface {
	store.Accounts
	store.Users
	store.Limits
	store.Subscriptions
	store.People
	store.Notifications
	store.Review
	store.Webhooks
	store.Identity
	store.Behavior
	store.Stats
	store.TestDevices
	store.Automations
	store.Goals
	store.Journeys
	store.Feeds
	store.Templates
	store.Uploads
	store.Schedules
	store.Onsite
	store.Integrations
	store.Reports
}

// maxRegistrationBatch bounds the registrations sharing one transaction
// (the rows it locks, and how long it holds them).
const maxRegistrationBatch = 64

// registrationLinger is how long a transaction of registrations waits for
// more while registrations arrive together (batch.WhenBusy): fewer, larger
// transactions took a fifth off a registration's CPU at 2,000 a second
// and held 3,000 under 50 ms (docs/scale-out.md, stop 53). An idle
// service answers a lone registration at once.
const registrationLinger = 5 * time.Millisecond

// maxPingBatch bounds the pings sharing one transaction.
const maxPingBatch = 256

// pingLinger is how long a transaction of pings waits for more: a browser
// waits for nobody's answer to its receipt, and at a few hundred a second
// a transaction each was most of a receipt's cost.
const pingLinger = 10 * time.Millisecond

// Option changes how New builds the API.
type Option func(*API)

// WithClock replaces time.Now (default) as the API's clock; tests use it to
// pin expiries, cursors and timestamps.
func WithClock(now func() time.Time) Option {
	return func(a *API) { a.now = now }
}

// API serves the public REST API, the browser SDK routes, the operator admin
// API, health, readiness and metrics.
type API struct {
	cfg      Config
	st       Store
	an       analytics.Store
	disp     Dispatcher
	log      *slog.Logger
	now      func() time.Time
	gatherer prometheus.Gatherer
	metrics  *metrics
	keys     *keyCache
	accounts *accounts.Service
	public   *ratelimit.Limiter // the public routes' per-IP limit, shared by every node
	events   *events.Service
	// automations starts runs on subscriptions and opt-ins; nil: none.
	automations *automations.Service
	// goals records the tag goals people reach as labels change; nil:
	// none.
	goals *goals.Service
	// journeys enrols people and moves their enrolments on; nil: the
	// journey routes are not served.
	journeys *journeys.Service
	// feeds checks feed definitions and polls feeds now; nil: the feed
	// routes are not served.
	feeds *feeds.Service
	// integrations receives the commerce platforms' webhooks; nil: the
	// integration routes are not served.
	integrations *integrations.Service
	// segments evaluates segment entry (automations' and journeys') for
	// people whose attributes changed; nil: none.
	segments *automations.Segments
	// schedules checks and stores recurring schedules; nil: the schedule
	// routes are not served.
	schedules *schedules.Service
	// templates fills a welcome's content from a template; nil: a
	// welcome naming a template is refused.
	templates onsite.Templates
	defs      *defcache.Store
	// suggest makes copy suggestions (POST /ai/suggest).
	suggest suggestions.Suggester
	// subs shares one store transaction between concurrent browser
	// registrations (group commit), each answered once it committed.
	subs *batch.Batcher[store.SubscriptionInput, store.SubscriptionResult]
	// pings shares one store transaction between concurrent delivered
	// and clicked pings: a broadcast's receipts all add to its one
	// counters' row, one transaction a ping queued them on its lock.
	pings  *batch.Batcher[store.Ping, pingAnswer]
	sends  pingSends // what pings read of their sends
	router *router
	ready  atomic.Bool

	// base is the context of work a request leaves running (last-used
	// updates, a streamed export); Close ends it.
	base    context.Context
	cancel  context.CancelFunc
	touches sync.WaitGroup
	// touchSlots bounds the last_used_at updates in flight.
	touchSlots chan struct{}
	// decodeSlots bounds the uploaded images decoding at once.
	decodeSlots chan struct{}
}

// Services are the domain services the API's handlers call. The
// composition root (package server) builds them and runs their background
// loops; the API only calls them and starts nothing of its own.
type Services struct {
	// Accounts signs people up and in, and keeps their sessions.
	Accounts *accounts.Service
	// Events takes behavioral events (its folder runs beside the API).
	Events *events.Service
	// Public counts the public routes' and the events routes' per-IP and
	// per-key limits, shared by every node (its Run syncs the counts).
	Public *ratelimit.Limiter
	// Automations starts people's automation runs as their browsers
	// subscribe and opt into topics; nil starts none (events start theirs
	// through Events).
	Automations *automations.Service
	// Goals records the tag goals people reach as their labels change;
	// nil records none (events reach theirs through Events).
	Goals *goals.Service
	// Journeys enrols people in journeys (by the API, their browsers and
	// pings; events reach it through Events); nil serves no journey route.
	Journeys *journeys.Service
	// Feeds checks feed definitions and polls a feed now (POST
	// /feeds/{id}/poll); nil serves no feed route.
	Feeds *feeds.Service
	// Integrations receives the commerce platforms' webhooks (POST
	// /integrations/{platform}/{projectId}); nil serves no integration
	// route.
	Integrations *integrations.Service
	// Segments evaluates the segment_entered automations and journeys of
	// people whose attributes changed (a browser, labels, an import); nil
	// evaluates none.
	Segments *automations.Segments
	// Schedules checks and stores recurring schedules (their engine runs
	// apart); nil serves no schedule route.
	Schedules *schedules.Service
	// Definitions, when set, is the definitions cache the services read
	// through (package defcache), which the API reads identity
	// verification, and the browser SDK's routes the prompt, the welcome,
	// the on-site messages and the topics, through too: the API purges it
	// after every write to automations, journeys, goals, segments,
	// identity verification, the prompt, the welcome, on-site messages or
	// topics it serves, so that this node acts on the change at once. Nil:
	// the API keeps one of its own.
	Definitions *defcache.Store
	// Suggestions makes the copy suggestions of POST /ai/suggest; nil:
	// suggestions.Rules, offline.
	Suggestions suggestions.Suggester
	// Templates fills a welcome notification's content from one of the
	// website's templates; nil refuses a welcome's templateId.
	Templates onsite.Templates
}

// New builds the API. st, an and every member of svc but Automations,
// Goals and Segments are required; d may be nil, which leaves every
// queued send to the outbox sweep. reg may be nil (no metrics registered anywhere but the API's own
// registry). New starts no goroutine: the auth version poller is
// WatchAuth, which the caller runs.
func New(cfg Config, st Store, an analytics.Store, d Dispatcher, svc Services, logger *slog.Logger, reg prometheus.Registerer, opts ...Option) (*API, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("api config: %w", err)
	}
	if st == nil || an == nil {
		return nil, errors.New("api: store and analytics store are required")
	}
	if svc.Accounts == nil || svc.Events == nil || svc.Public == nil {
		return nil, errors.New("api: the accounts, events and rate limit services are required")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	a := &API{
		cfg:         cfg,
		st:          st,
		an:          an,
		disp:        d,
		log:         logger,
		now:         time.Now,
		touchSlots:  make(chan struct{}, 16),
		decodeSlots: make(chan struct{}, 2),
	}
	for _, o := range opts {
		o(a)
	}
	// The metrics go to reg and, when reg cannot be read back, also to a
	// registry of the API's own that /metrics serves.
	var regs []prometheus.Registerer
	if reg != nil {
		regs = append(regs, reg)
	}
	// /metrics serves reg when it is a registry, else the API's own.
	if g, ok := reg.(prometheus.Gatherer); ok {
		a.gatherer = g
	} else {
		own := prometheus.NewRegistry()
		regs = append(regs, own)
		a.gatherer = own
	}
	m, err := newMetrics(regs...)
	if err != nil {
		return nil, fmt.Errorf("api metrics: %w", err)
	}
	a.metrics = m
	a.keys = newKeyCache(cfg.KeyCacheTTL, cfg.KeyCacheSize)
	a.accounts, a.events, a.public = svc.Accounts, svc.Events, svc.Public
	a.automations, a.goals, a.journeys, a.segments = svc.Automations, svc.Goals, svc.Journeys, svc.Segments
	a.feeds, a.integrations = svc.Feeds, svc.Integrations
	a.defs, a.schedules, a.templates = svc.Definitions, svc.Schedules, svc.Templates
	if a.defs == nil {
		a.defs = defcache.New(st, defcache.DefaultTTL, logger)
	}
	a.suggest = svc.Suggestions
	if a.suggest == nil {
		a.suggest = suggestions.Rules{}
	}
	a.subs = batch.New(st.UpsertSubscriptions, st.UpsertSubscription).WithMax(maxRegistrationBatch).
		WithLinger(registrationLinger).WhenBusy()
	a.pings = batch.New(a.recordPings, a.recordOnePing).WithMax(maxPingBatch).WithLinger(pingLinger)
	a.base, a.cancel = context.WithCancel(context.Background())
	a.router = a.routes()
	a.readAuthFirst()
	return a, nil
}

// SetReady flips /readyz between 200 (true) and 503 (false, the start).
func (a *API) SetReady(ready bool) { a.ready.Store(ready) }

// Close ends the work requests left running (last-used updates, streamed
// exports) and waits for the updates.
func (a *API) Close() error {
	a.cancel()
	a.touches.Wait()
	return nil
}

// Handler returns the request handler of every route.
func (a *API) Handler() fasthttp.RequestHandler { return a.serve }

// bodySlack lets bodies a little over the limit reach the handler, which
// answers them with a proper 413; far larger ones are cut off by the server.
const bodySlack = 64 << 10

// Server returns a server preconfigured with the handler, timeouts and the
// body limit; the caller serves it srv.Serve(Linger(ln)), so that a client
// still sending a refused body reads its answer, and Shutdown()s it.
func (a *API) Server() *fasthttp.Server {
	return &fasthttp.Server{
		Handler:                      a.serve,
		ErrorHandler:                 a.transportError,
		Name:                         "RelayBell",
		ReadTimeout:                  30 * time.Second,
		WriteTimeout:                 30 * time.Second,
		IdleTimeout:                  2 * time.Minute,
		ReadBufferSize:               16 << 10,
		MaxRequestBodySize:           a.cfg.MaxBodyBytes + bodySlack,
		DisablePreParseMultipartForm: true,
		CloseOnShutdown:              true,
		TCPKeepalive:                 true,
		Logger:                       printfLogger{a.log},
	}
}

// printfLogger routes fasthttp's own log lines to slog.
type printfLogger struct{ log *slog.Logger }

func (l printfLogger) Printf(format string, args ...any) {
	l.log.Warn("http server", "msg", fmt.Sprintf(format, args...))
}
