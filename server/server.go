package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/relaybell/relaybell/analytics"
	analyticssqlite "github.com/relaybell/relaybell/analytics/sqlite"
	"github.com/relaybell/relaybell/api"
	"github.com/relaybell/relaybell/bus"
	"github.com/relaybell/relaybell/fanout"
	"github.com/relaybell/relaybell/netpolicy"
	"github.com/relaybell/relaybell/pusher"
	"github.com/relaybell/relaybell/ring"
	"github.com/relaybell/relaybell/store"
	storesqlite "github.com/relaybell/relaybell/store/sqlite"
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
)

// modules maps each module to the modules it needs (the dependency map).
var modules = map[string][]string{
	Store:     nil,
	Analytics: nil,
	Bus:       nil,
	Outbox:    {Store, Bus},
	Pusher:    {Store, Analytics},
	Ring:      {Pusher},
	Fanout:    {Store, Bus, Ring, Outbox},
	API:       {Store, Analytics, Outbox},
	All:       {API, Fanout, Pusher},
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

	store     store.Store
	analytics analytics.Store
	bus       bus.Bus
	outbox    *bus.Outbox
	pusher    *pusher.Pusher
	router    *ring.Router
	fanout    *fanout.Fanout
	api       *api.API

	services []service
	closers  []func() error
	listener net.Listener
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
	s := &Server{cfg: cfg, logger: logger, reg: prometheus.NewRegistry(), pushAllow: pushAllow}
	s.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	targets, _ := cfg.targets()
	inits := map[string]func(context.Context) error{
		Store: s.initStore, Analytics: s.initAnalytics, Bus: s.initBus, Outbox: s.initOutbox,
		Pusher: s.initPusher, Ring: s.initRing, Fanout: s.initFanout, API: s.initAPI,
		All: func(context.Context) error { return nil },
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
		deps := slices.Clone(modules[m])
		slices.Sort(deps)
		for _, d := range deps {
			visit(d)
		}
		out = append(out, m)
	}
	for _, t := range targets {
		visit(t)
	}
	return out
}

func (s *Server) initStore(ctx context.Context) error {
	if err := os.MkdirAll(s.cfg.DataDir, 0o755); err != nil {
		return err
	}
	st, err := storesqlite.Open(ctx, filepath.Join(s.cfg.DataDir, "relaybell.db"), s.logger)
	if err != nil {
		return err
	}
	s.store = st
	s.closers = append(s.closers, st.Close)
	return nil
}

func (s *Server) initAnalytics(ctx context.Context) error {
	if err := os.MkdirAll(s.cfg.DataDir, 0o755); err != nil {
		return err
	}
	an, err := analyticssqlite.Open(ctx, filepath.Join(s.cfg.DataDir, "analytics.db"))
	if err != nil {
		return err
	}
	s.analytics = an
	s.closers = append(s.closers, an.Close)
	return nil
}

func (s *Server) initBus(ctx context.Context) error {
	if err := os.MkdirAll(s.cfg.DataDir, 0o755); err != nil {
		return err
	}
	b, err := bus.OpenEmbedded(ctx, filepath.Join(s.cfg.DataDir, "bus.db"), s.logger)
	if err != nil {
		return err
	}
	s.bus = b
	s.closers = append(s.closers, b.Close)
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
	return nil
}

func (s *Server) initRing(context.Context) error {
	s.router = ring.NewRouter(ring.Single(s.cfg.NodeName), s.pusher, nil)
	return nil
}

func (s *Server) initFanout(context.Context) error {
	f, err := fanout.New(s.cfg.Fanout, s.store, s.bus, s.router, s.logger, s.reg)
	if err != nil {
		return err
	}
	s.fanout = f
	s.services = append(s.services, f, serviceFunc(func(ctx context.Context) error { s.outbox.Run(ctx); return nil }))
	return nil
}

func (s *Server) initAPI(context.Context) error {
	a, err := api.New(api.Config{
		AdminToken:     s.cfg.AdminToken,
		PushAllowHosts: s.pushAllow,
		CountryHeader:  s.cfg.CountryHeader,
	}, s.store, s.analytics, s.outbox, s.logger, s.reg)
	if err != nil {
		return err
	}
	s.api = a
	return nil
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
		if err := srv.Serve(s.listener); err != nil {
			errs <- fmt.Errorf("serving HTTP: %w", err)
			cancel()
		}
	}()
	if s.api != nil {
		s.api.SetReady(true)
	}
	s.logger.Info("relaybell serving", "addr", s.listener.Addr().String(), "roles", s.cfg.Roles, "data", s.cfg.DataDir)
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
