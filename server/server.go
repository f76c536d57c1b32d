package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/relaybell/relaybell/accounts"
	"github.com/relaybell/relaybell/analytics"
	analyticsclickhouse "github.com/relaybell/relaybell/analytics/clickhouse"
	analyticssqlite "github.com/relaybell/relaybell/analytics/sqlite"
	"github.com/relaybell/relaybell/api"
	"github.com/relaybell/relaybell/automations"
	"github.com/relaybell/relaybell/bus"
	"github.com/relaybell/relaybell/bus/kafka"
	"github.com/relaybell/relaybell/defcache"
	"github.com/relaybell/relaybell/events"
	"github.com/relaybell/relaybell/fanout"
	"github.com/relaybell/relaybell/feeds"
	"github.com/relaybell/relaybell/goals"
	"github.com/relaybell/relaybell/integrations"
	"github.com/relaybell/relaybell/journeys"
	"github.com/relaybell/relaybell/netpolicy"
	"github.com/relaybell/relaybell/onsite"
	"github.com/relaybell/relaybell/pusher"
	"github.com/relaybell/relaybell/ratelimit"
	"github.com/relaybell/relaybell/reports"
	"github.com/relaybell/relaybell/ring"
	"github.com/relaybell/relaybell/ring/memberlist"
	"github.com/relaybell/relaybell/schedules"
	"github.com/relaybell/relaybell/stats"
	"github.com/relaybell/relaybell/store"
	storepostgres "github.com/relaybell/relaybell/store/postgres"
	storesqlite "github.com/relaybell/relaybell/store/sqlite"
	"github.com/relaybell/relaybell/suggestions"
	"github.com/relaybell/relaybell/templates"
	"github.com/relaybell/relaybell/webhooks"
)

// Module names. Roles can be chosen with --roles; the others are built when
// a chosen role needs them.
const (
	API       = "api"
	Fanout    = "fanout"
	Pusher    = "pusher"
	All       = "all"
	Store     = "store"
	Analytics = "analytics"
	Bus       = "bus"
	Ring      = "ring"
	Outbox    = "outbox"
	// Events folds conversion credits into their sends' counters (package
	// events), beside the API that takes the events.
	Events = "events"
	// Limits shares the API's rate counts with the other nodes (package
	// ratelimit).
	Limits = "limits"
	// Purge forgets old data, each package's with that package's Purge.
	Purge = "purge"
	// Automations starts and stops people's automation runs as events,
	// subscriptions and opt-ins arrive (package automations), beside the
	// API and the events that take them.
	Automations = "automations"
	// Goals records the goals people reach as events arrive and labels
	// change (package goals), beside the API and the events that take
	// them.
	Goals = "goals"
	// Engine sends automations' messages and runs journeys' steps as they
	// come due (packages automations and journeys: one claim loop for both
	// timer kinds), on the fan-out nodes: see their docs for why and how
	// it scales out.
	Engine = "engine"
	// Feeds polls RSS, Atom and JSON feeds and sends their new items
	// (package feeds): the poller runs on the fan-out nodes, claiming due
	// feeds under leases; every API node polls one on request.
	Feeds = "feeds"
	// Journeys enrols people in journeys and moves their enrolments on as
	// events, browsers, pings and API calls arrive (package journeys),
	// beside the API and the events that take them.
	Journeys = "journeys"
	// Schedules does recurring schedules' occurrences as they come due
	// (package schedules: a claim loop under leases, each occurrence once),
	// on the fan-out nodes, beside the automations' engine.
	Schedules = "schedules"
	// Reports mails each website's report once per period (package
	// reports: a claim loop under leases, the ledger written with the
	// messages queued), on the fan-out nodes.
	Reports = "reports"
)

// modules maps each module to the modules it needs (the dependency map).
var modules = map[string][]string{
	Store:       nil,
	Analytics:   {Bus}, // a cluster journals events to Kafka
	Bus:         nil,
	Outbox:      {Store, Bus},
	Pusher:      {Store, Analytics, Ring},
	Ring:        nil,
	Fanout:      {Store, Analytics, Bus, Ring, Outbox, Engine, Schedules, Feeds, Reports},
	Events:      {Store, Analytics, Outbox, Automations, Goals, Journeys},
	Limits:      {Store},
	Purge:       {Store, Events, Automations},
	Automations: {Store},
	Journeys:    {Store, Automations},
	Goals:       {Store, Journeys},
	Engine:      {Store, Outbox, Automations, Journeys, Goals},
	Schedules:   {Store, Outbox},
	Feeds:       {Store, Outbox},
	Reports:     {Store},
	API:         {Store, Analytics, Outbox, Events, Limits, Purge, Automations, Goals, Journeys, Feeds},
	All:         {API, Fanout, Pusher},
}

var targetable = map[string]bool{API: true, Fanout: true, Pusher: true, All: true}

// service is a module that runs until its context ends.
type service interface {
	Run(ctx context.Context) error
}

// Server is a running set of modules.
type Server struct {
	cfg       Config
	logger    *slog.Logger
	reg       *prometheus.Registry
	pushAllow netpolicy.AllowList // push services reachable on private addresses
	hookAllow netpolicy.AllowList // webhook receivers reachable on private addresses

	store     store.Store
	defs      *defcache.Store // the definitions cache over store (definitions)
	analytics analytics.Store
	bus       bus.Bus
	outbox    *bus.Outbox
	pusher    *pusher.Pusher
	ring      ring.Ring
	members   *memberlist.Ring // the cluster's ring; nil on the embedded default
	router    *pusher.Router
	fanout    *fanout.Fanout
	events    *events.Service
	limiter   *ratelimit.Limiter
	autos     *automations.Service
	goals     *goals.Service
	journeys  *journeys.Service
	feeds     *feeds.Service
	segments  *automations.Segments
	api       *api.API

	services []service
	closers  []func() error
	listener net.Listener
	internal net.Listener // a cluster pusher's batch listener
}

// New builds the modules the configuration targets, in dependency order.
func New(ctx context.Context, cfg Config, logger *slog.Logger) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	pushAllow, err := netpolicy.ParseAllowList(cfg.PushAllowHosts)
	if err != nil {
		return nil, fmt.Errorf("push allow-list: %w", err)
	}
	hookAllow, err := netpolicy.ParseAllowList(cfg.WebhookAllowHosts)
	if err != nil {
		return nil, fmt.Errorf("--webhook-allow-hosts: %w", err)
	}
	s := &Server{cfg: cfg, logger: logger, reg: prometheus.NewRegistry(), pushAllow: pushAllow, hookAllow: hookAllow}
	s.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	targets, _ := cfg.targets()
	inits := map[string]func(context.Context) error{
		Store: s.initStore, Analytics: s.initAnalytics, Bus: s.initBus, Outbox: s.initOutbox,
		Pusher: s.initPusher, Ring: s.initRing, Fanout: s.initFanout, API: s.initAPI,
		Events: s.initEvents, Limits: s.initLimits, Purge: s.initPurge,
		Automations: s.initAutomations, Engine: s.initEngine, Goals: s.initGoals, Journeys: s.initJourneys,
		Schedules: s.initSchedules,
		Feeds:     s.initFeeds,
		Reports:   s.initReports,
		All:       func(context.Context) error { return nil },
	}
	for _, m := range order(targets) {
		if err := inits[m](ctx); err != nil {
			s.Close()
			return nil, fmt.Errorf("starting %s: %w", m, err)
		}
		logger.Debug("module ready", "module", m)
	}
	return s, nil
}

// order returns the targets and everything they need, dependencies first.
func order(targets []string) []string {
	var out []string
	seen := map[string]bool{}
	var visit func(string)
	visit = func(m string) {
		if seen[m] {
			return
		}
		seen[m] = true
		for _, d := range buildOrder(modules[m]) {
			visit(d)
		}
		out = append(out, m)
	}
	for _, t := range buildOrder(targets) {
		visit(t)
	}
	return out
}

// buildOrder sorts modules by name, except that roles come last and the
// pusher before fan-out: a fan-out node that also pushes hands its own
// batches to its local pusher, so the pusher must exist first.
func buildOrder(ms []string) []string {
	rank := func(m string) int { return slices.Index([]string{Pusher, Fanout, API, All}, m) }
	return slices.SortedFunc(slices.Values(ms), func(a, b string) int {
		return cmp.Or(cmp.Compare(rank(a), rank(b)), strings.Compare(a, b))
	})
}

// dataFile is the path of an embedded database, its directory created.
func (s *Server) dataFile(name string) (string, error) {
	return filepath.Join(s.cfg.DataDir, name), os.MkdirAll(s.cfg.DataDir, 0o755)
}

func (s *Server) initStore(ctx context.Context) error {
	if s.cfg.Postgres != "" {
		st, err := storepostgres.Open(ctx, s.cfg.Postgres, s.logger)
		if err != nil {
			return err
		}
		s.store = st
		s.closers = append(s.closers, st.Close)
		return nil
	}
	path, err := s.dataFile("relaybell.db")
	if err != nil {
		return err
	}
	st, err := storesqlite.Open(ctx, path, s.logger)
	if err != nil {
		return err
	}
	s.store = st
	s.closers = append(s.closers, st.Close)
	return nil
}

func (s *Server) initAnalytics(ctx context.Context) error {
	var an analytics.Store
	// SQLite too spaces its writes of events (journalGap): each is a
	// commit whose pages, the events' random endpoint ids spread over two
	// indexes, grow with the writes rather than with the events, and the
	// pusher's result writes, which follow its events', come as seldom.
	// Written back to back, RelayBell embedded measured 2.21 and 2.27 the
	// bare sender's CPU per push; spaced, 1.81 and 1.93 (docs/send-path.md).
	gap := journalGap
	if s.cfg.ClickHouse != "" {
		ch, err := analyticsclickhouse.Open(ctx, analyticsclickhouse.Config{Addr: s.cfg.ClickHouse}, s.logger)
		if err != nil {
			return err
		}
		// Events go to Kafka and reach ClickHouse through the sinks, which
		// fan-out nodes run beside their other background work.
		j := analytics.NewJournal(ch, s.bus.(*kafka.Bus), s.logger) // --clickhouse needs --kafka (Validate)
		if s.cfg.runs(Fanout) {
			s.services = append(s.services, serviceFunc(j.Sink))
		}
		an, gap = j, journalGap
	} else {
		path, err := s.dataFile("analytics.db")
		if err != nil {
			return err
		}
		lite, err := analyticssqlite.Open(ctx, path, s.logger)
		if err != nil {
			return err
		}
		an = lite
	}
	// Concurrent batches and pings share writes: a few large ones, not one
	// per chunk of outcomes.
	b := analytics.NewBatched(an, gap, 0)
	s.analytics = b
	s.closers = append(s.closers, b.Close)
	return nil
}

// journalGap spaces a process's journal writes: a few records a second,
// each with many events, rather than one per chunk of outcomes. A pusher
// records its outcomes after their events, so the gap also paces its
// PostgreSQL writes: without it (tried at 10k) they came smaller and more
// often, and PostgreSQL's CPU per push doubled.
const journalGap = 100 * time.Millisecond

func (s *Server) initBus(ctx context.Context) error {
	if s.cfg.Kafka != "" {
		group := []kgo.Opt{kgo.SessionTimeout(s.cfg.KafkaSessionTimeout), kgo.HeartbeatInterval(s.cfg.KafkaSessionTimeout / 10)}
		if s.cfg.KafkaRebalanceTimeout > 0 {
			group = append(group, kgo.RebalanceTimeout(s.cfg.KafkaRebalanceTimeout))
		}
		b, err := kafka.Open(ctx, kafka.Config{Seeds: splitList(s.cfg.Kafka), GroupOpts: group, ReplicationFactor: s.cfg.KafkaReplicationFactor}, s.logger)
		if err != nil {
			return err
		}
		s.bus = b
		s.closers = append(s.closers, b.Close)
		s.reg.MustRegister(b.LagCollector())
		return nil
	}
	path, err := s.dataFile("bus.db")
	if err != nil {
		return err
	}
	b, err := bus.OpenEmbedded(ctx, path, s.logger)
	if err != nil {
		return err
	}
	s.bus = b
	s.closers = append(s.closers, b.Close)
	s.reg.MustRegister(b.PendingCollector())
	return nil
}

func (s *Server) initOutbox(context.Context) error {
	s.outbox = bus.NewOutbox(s.store, s.bus, s.logger)
	return nil
}

func (s *Server) initPusher(context.Context) error {
	cfg := s.cfg.Pusher
	cfg.Allow = s.pushAllow
	p, err := pusher.New(cfg, s.store, s.analytics, s.logger, s.reg)
	if err != nil {
		return err
	}
	s.pusher = p
	s.closers = append(s.closers, func() error { p.Close(); return nil })
	if s.internal == nil {
		return nil
	}
	// In a cluster, fan-out nodes hand this node its batches over HTTP on
	// the listener the ring announced.
	ln := s.internal
	srv := &http.Server{Handler: pusher.Handler(p, s.cfg.ClusterToken), ReadHeaderTimeout: 10 * time.Second}
	s.services = append(s.services, serviceFunc(func(ctx context.Context) error {
		go func() {
			<-ctx.Done()
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ShutdownGrace)
			defer cancel()
			srv.Shutdown(sctx)
		}()
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("serving batches: %w", err)
		}
		return nil
	}))
	return nil
}

// metaPush is the memberlist meta key holding a pusher's batch address;
// the members that have it own keys on the ring.
const metaPush = "push"

func (s *Server) initRing(ctx context.Context) error {
	if s.cfg.Join == "" {
		s.ring = ring.Single(s.cfg.NodeName)
		return nil
	}
	host, port, err := splitHostPort(s.cfg.GossipAddr)
	if err != nil {
		return fmt.Errorf("--gossip: %w", err)
	}
	cfg := memberlist.Config{
		NodeName:      s.cfg.NodeName,
		BindAddr:      host,
		BindPort:      port,
		AdvertiseAddr: s.cfg.AdvertiseHost,
		Seeds:         splitList(s.cfg.Join),
		Owns:          func(m memberlist.Member) bool { return m.Meta[metaPush] != "" },
	}
	if s.cfg.runs(Pusher) {
		// Bound before joining, so the address announced is live; the
		// pusher module serves it.
		ln, err := net.Listen("tcp", s.cfg.InternalAddr)
		if err != nil {
			return fmt.Errorf("internal listener: %w", err)
		}
		s.closers = append(s.closers, func() error { ln.Close(); return nil })
		s.internal = ln
		_, port, _ := net.SplitHostPort(ln.Addr().String())
		cfg.Meta = map[string]string{metaPush: net.JoinHostPort(s.advertiseHost(), port)}
	}
	if cfg.BindAddr == "" {
		cfg.BindAddr = "0.0.0.0"
	}
	r, err := memberlist.Join(ctx, cfg, s.logger)
	if err != nil {
		return err
	}
	s.ring, s.members = r, r
	s.closers = append(s.closers, r.Close)
	return nil
}

// advertiseHost is the host other nodes reach this one on.
func (s *Server) advertiseHost() string {
	if s.cfg.AdvertiseHost != "" {
		return s.cfg.AdvertiseHost
	}
	if host, _, err := net.SplitHostPort(s.cfg.InternalAddr); err == nil && host != "" {
		if ip := net.ParseIP(host); ip == nil || !ip.IsUnspecified() {
			return host
		}
	}
	return hostname()
}

// remotePusher returns the client of a pusher node, found by its meta on
// the ring; every client shares one connection pool.
func (s *Server) remotePusher() func(node string) (pusher.Deliverer, error) {
	hc := &http.Client{Timeout: 10 * time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: time.Minute}}
	return func(node string) (pusher.Deliverer, error) {
		m, ok := s.members.Member(node)
		if !ok || m.Meta[metaPush] == "" {
			return nil, fmt.Errorf("%s is not a live pusher", node)
		}
		return pusher.NewRemote("http://"+m.Meta[metaPush], s.cfg.ClusterToken, hc), nil
	}
}

func (s *Server) initFanout(context.Context) error {
	var local pusher.Deliverer
	if s.pusher != nil {
		local = s.pusher
	}
	var remote func(string) (pusher.Deliverer, error)
	if s.members != nil {
		remote = s.remotePusher()
	}
	s.router = pusher.NewRouter(s.ring, local, remote)
	f, err := fanout.New(s.cfg.Fanout, s.store, s.bus, s.router, s.analytics, s.logger, s.reg)
	if err != nil {
		return err
	}
	s.fanout = f
	hooks := webhooks.Config{Allow: s.hookAllow}
	if s.cfg.SMTPAddr != "" {
		hooks.Mailer = &webhooks.SMTP{Addr: s.cfg.SMTPAddr, From: s.cfg.SMTPFrom, Username: s.cfg.SMTPUsername, Password: s.cfg.SMTPPassword}
	}
	// Fan-out nodes also run the background deliveries: the outbox sweep
	// and the webhook engine.
	s.services = append(s.services, f, serviceFunc(func(ctx context.Context) error { s.outbox.Run(ctx); return nil }),
		webhooks.New(hooks, s.store, s.logger, s.reg))
	return nil
}

func (s *Server) initEvents(context.Context) error {
	s.events = events.New(s.store, s.analytics, s.dispatcher(), s.logger,
		events.Config{AlertMax: s.cfg.ProductAlertMax, Automations: s.autos, Goals: s.goals, Journeys: s.journeys})
	s.services = append(s.services, s.events)
	return nil
}

// definitions is the store with the definitions every event and
// registration reads cached (package defcache), made on first use: the
// automations', goals' and journeys' services, segment entry and the API
// read through it.
func (s *Server) definitions() *defcache.Store {
	if s.defs == nil {
		s.defs = defcache.New(s.store, defcache.DefaultTTL, s.logger)
	}
	return s.defs
}

func (s *Server) initAutomations(context.Context) error {
	s.autos = automations.NewService(s.definitions(), s.logger)
	return nil
}

// initGoals builds the goals' service; the goals a person reaches end
// the journeys that exit on them.
func (s *Server) initGoals(context.Context) error {
	s.goals = goals.NewService(s.definitions(), s.journeys.GoalReached, s.logger)
	return nil
}

// initJourneys builds the journeys' service. It wakes the engine through
// the automations' wake channel: one engine claims both kinds of timer.
// With it comes segment entry, which evaluates the segment_entered
// automations and journeys together as people change.
func (s *Server) initJourneys(context.Context) error {
	s.journeys = journeys.NewService(s.definitions(), journeys.Config{Wake: s.autos.Wake}, s.logger)
	s.segments = automations.NewSegments(s.definitions(), s.logger, s.autos, s.journeys)
	return nil
}

// welcomeStore is the store with the welcome settings read through the
// definitions cache: the welcome engine reads them for every new browser.
type welcomeStore struct {
	store.Store
	defs *defcache.Store
}

func (w welcomeStore) SiteSettings(ctx context.Context, websiteID, name string) ([]byte, error) {
	return w.defs.SiteSettings(ctx, websiteID, name)
}

// initEngine runs the engine: the automations' claim loop, which fires
// journey timers through the journeys' handler. Its wake channel is the
// automations service's: on a node that also runs the API (the embedded
// default), a run or enrolment started by a request is looked at at once.
// Its messages are published from a pool (engineDispatchers workers), so
// that firing the next timer does not wait for the last message's
// publish: one at a time, an engine fired a few dozen messages a second in
// the cluster, behind ten thousand people's coming due.
//
// On PostgreSQL a node runs engineLoops engines: each claims its own
// batches (SKIP LOCKED), so their transactions overlap, where one engine
// fires one timer after another. SQLite's one writer gains nothing from
// more than one.
func (s *Server) initEngine(context.Context) error {
	cfg := s.cfg.Automations
	if s.cfg.Now != nil {
		cfg.Now = s.cfg.Now
	}
	pool := bus.NewDispatchPool(s.dispatcher(), engineDispatchers, 4*engineDispatchers, s.logger)
	s.services = append(s.services, serviceFunc(pool.Run))
	// A set_tags step's labels do what a label change through the API
	// does: segment entry, tag goals.
	tags := journeys.LabelsChanged(s.segments, s.goals)
	// Welcome notifications (package onsite) ride on the same timers.
	cfg.Kinds = map[string]automations.KindHandler{
		store.TimerJourney: journeys.NewEngine(s.store, pool, tags, s.logger),
		store.TimerWelcome: onsite.NewWelcomeEngine(welcomeStore{s.store, s.definitions()}, pool, s.templates(), s.logger),
	}
	loops := 1
	if s.cfg.Postgres != "" {
		loops = engineLoops
	}
	for i := range loops {
		var reg prometheus.Registerer
		if s.reg != nil { // each loop's counter, told apart
			reg = prometheus.WrapRegistererWith(prometheus.Labels{"loop": strconv.Itoa(i)}, s.reg)
		}
		e, err := automations.NewEngine(cfg, s.store, pool, s.autos.Wakes(), s.logger, reg)
		if err != nil {
			return err
		}
		s.services = append(s.services, e)
	}
	return nil
}

// initSchedules runs the recurring schedules' engine. Any number of
// nodes run it: each claims due schedules under leases, and an
// occurrence's send, budget and ledger row commit together.
// A schedule's templateId is filled by the templates package each time
// it sends.
func (s *Server) initSchedules(context.Context) error {
	cfg := s.cfg.Schedules
	if s.cfg.Now != nil {
		cfg.Now = s.cfg.Now
	}
	cfg.NoBudget = cfg.NoBudget || s.cfg.NoSendLimits
	if cfg.ReviewThreshold == 0 {
		cfg.ReviewThreshold = s.cfg.ReviewThreshold
	}
	if cfg.BeforeFire == nil {
		cfg.BeforeFire = scheduleFailpoint(s.logger)
	}
	e, err := schedules.NewEngine(cfg, s.store, s.templates(), s.scheduleDispatcher(), s.logger, s.reg)
	if err != nil {
		return err
	}
	s.services = append(s.services, e)
	return nil
}

// initFeeds builds the feeds' poller and service. The poller runs on the
// fan-out nodes (beside the engine); an API node that runs none still
// polls a feed on request (POST /feeds/{id}/poll) with it. Its fetches
// follow the webhooks' private-address rules and allow list.
//
// A feed's templateId is resolved through the templates package's
// Service.
func (s *Server) initFeeds(context.Context) error {
	cfg := s.cfg.Feeds
	if s.cfg.Now != nil {
		cfg.Now = s.cfg.Now
	}
	cfg.Fetch.Allow = s.hookAllow
	cfg.NoSendLimits = s.cfg.NoSendLimits
	if cfg.ReviewThreshold == 0 {
		cfg.ReviewThreshold = s.cfg.ReviewThreshold
	}
	cfg.BeforeSend = s.feedFailpoint()
	tpl := s.templates()
	p, err := feeds.NewPoller(cfg, s.store, s.dispatcher(), tpl, s.logger, s.reg)
	if err != nil {
		return err
	}
	s.feeds = feeds.NewService(s.store, tpl, p)
	if s.cfg.runs(Fanout) {
		s.services = append(s.services, p)
	}
	return nil
}

// initReports builds the reports' engine; it runs on the fan-out nodes
// (the module is needed by nothing else). Its messages go to the e-mail
// outbox, which the webhooks' engine sends by SMTP when configured.
func (s *Server) initReports(context.Context) error {
	cfg := s.cfg.Reports
	if s.cfg.Now != nil {
		cfg.Now = s.cfg.Now
	}
	e, err := reports.New(cfg, s.store, s.logger)
	if err != nil {
		return err
	}
	s.services = append(s.services, e)
	return nil
}

// engineDispatchers is how many of the engine's messages are published at
// once; engineLoops how many engines a node on PostgreSQL runs.
const (
	engineDispatchers = 16
	engineLoops       = 4
)

func (s *Server) initLimits(context.Context) error {
	s.limiter = ratelimit.New(s.store, s.logger)
	s.services = append(s.services, serviceFunc(func(ctx context.Context) error {
		s.limiter.Run(ctx, ratelimit.DefaultSync, time.Now)
		return nil
	}))
	return nil
}

// purgeEvery is how often the purge module forgets old data.
const purgeEvery = 10 * time.Minute

// purger forgets one package's data that is no longer needed.
type purger interface {
	Purge(ctx context.Context, now time.Time) error
}

func (s *Server) initPurge(context.Context) error {
	purgers := []purger{
		s.events,                         // Idempotency-Keys, folded credits, interests, alerts' audiences
		stats.Purger{Store: s.store},     // removals of browsers
		s.autos,                          // the automations' ledger
		schedules.Purger{Store: s.store}, // recurring schedules' history
	}
	s.services = append(s.services, serviceFunc(func(ctx context.Context) error {
		tick := time.NewTicker(purgeEvery)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-tick.C:
			}
			for _, p := range purgers {
				if err := p.Purge(ctx, time.Now()); err != nil && ctx.Err() == nil {
					s.logger.Warn("purging", "err", err)
				}
			}
		}
	}))
	return nil
}

// templates fills the templateId of what sends later (schedules, the
// welcome notification) from the website's templates.
func (s *Server) templates() *templates.Service { return templates.NewService(s.store) }

func (s *Server) initAPI(context.Context) error {
	svc := api.Services{
		Accounts:    accounts.New(s.store, accounts.Config{IdleTimeout: s.cfg.SessionIdle, MaxAge: s.cfg.SessionMaxAge}, s.logger),
		Events:      s.events,
		Public:      s.limiter,
		Automations: s.autos,
		Goals:       s.goals,
		Journeys:    s.journeys,
		Segments:    s.segments,
		Schedules:   schedules.NewService(s.store, s.templates()),
		Templates:   s.templates(),
		Feeds:       s.feeds,
	}
	svc.Integrations = integrations.New(s.store, s.events)
	svc.Definitions = s.definitions() // one cache per process, the services' and the API's
	aiAllow, err := netpolicy.ParseAllowList(s.cfg.AIAllowHosts)
	if err != nil {
		return fmt.Errorf("--ai-allow-hosts: %w", err)
	}
	// The AI endpoint is the operator's, yet it is dialled through
	// netpolicy like webhooks: a private address needs --ai-allow-hosts.
	svc.Suggestions, err = suggestions.New(suggestions.Config{URL: s.cfg.AIURL, Key: s.cfg.AIKey, Model: s.cfg.AIModel,
		Timeout: s.cfg.AITimeout, MaxTokens: s.cfg.AIMaxTokens, Allow: aiAllow}, s.logger)
	if err != nil {
		return err
	}
	a, err := api.New(api.Config{
		AdminToken:        s.cfg.AdminToken,
		PushAllowHosts:    s.pushAllow,
		CountryHeader:     s.cfg.CountryHeader,
		TrustProxy:        s.cfg.TrustProxy,
		PublicURL:         s.cfg.PublicURL,
		ReviewThreshold:   s.cfg.ReviewThreshold,
		PublicRateLimit:   s.cfg.PublicRateLimit,
		CommerceRateLimit: s.cfg.CommerceRateLimit,
		EventRateLimit:    s.cfg.EventRateLimit,
		NoSendLimits:      s.cfg.NoSendLimits,
	}, s.store, s.analytics, s.dispatcher(), svc, s.logger, s.reg, s.apiOptions()...)
	if err != nil {
		return err
	}
	s.api = a
	s.services = append(s.services, serviceFunc(a.WatchAuth))
	s.closers = append(s.closers, a.Close)
	return nil
}

// apiOptions are the API's options from the configuration: its clock.
func (s *Server) apiOptions() []api.Option {
	if s.cfg.Now == nil {
		return nil
	}
	return []api.Option{api.WithClock(s.cfg.Now)}
}

type serviceFunc func(ctx context.Context) error

func (f serviceFunc) Run(ctx context.Context) error { return f(ctx) }

// Listen binds the HTTP address (so callers can learn the port before Run).
func (s *Server) Listen() (net.Addr, error) {
	ln, err := net.Listen("tcp", s.cfg.HTTPAddr)
	if err != nil {
		return nil, err
	}
	s.listener = ln
	return ln.Addr(), nil
}

// Run serves until ctx ends, then shuts down gracefully.
func (s *Server) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, len(s.services)+1)
	for _, svc := range s.services {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := svc.Run(ctx); err != nil {
				errs <- err
				cancel()
			}
		}()
	}
	srv := s.httpServer()
	if s.listener == nil {
		if _, err := s.Listen(); err != nil {
			cancel()
			wg.Wait()
			return err
		}
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		// Closed connections linger, so that a client still sending a body
		// the API refused reads the 413 rather than a reset.
		if err := srv.Serve(api.Linger(s.listener)); err != nil && ctx.Err() == nil {
			errs <- fmt.Errorf("serving HTTP: %w", err)
			cancel()
		}
	}()
	if s.api != nil {
		s.api.SetReady(true)
	}
	gogc, memoryLimit := gcInUse()
	s.logger.Info("relaybell serving", "addr", s.listener.Addr().String(), "roles", s.cfg.Roles, "data", s.cfg.DataDir,
		"gogc", gogc, "memory_limit", memoryLimit)
	<-ctx.Done()
	if s.api != nil {
		s.api.SetReady(false)
	}
	done := make(chan struct{})
	go func() { srv.Shutdown(); close(done) }()
	select {
	case <-done:
	case <-time.After(s.cfg.ShutdownGrace):
		s.logger.Warn("shutdown grace elapsed")
	}
	// A Shutdown that came before Serve took the listener (ctx ended at
	// once) leaves Serve accepting: closing the listener ends it.
	s.listener.Close()
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	return errors.Join(all...)
}

// Close releases every module's resources, in reverse order of creation.
func (s *Server) Close() error {
	var errs []error
	for i := len(s.closers) - 1; i >= 0; i-- {
		errs = append(errs, s.closers[i]())
	}
	s.closers = nil
	return errors.Join(errs...)
}

func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

func splitHostPort(addr string) (string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("bad port in %q", addr)
	}
	return host, port, nil
}
