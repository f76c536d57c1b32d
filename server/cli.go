package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/relaybell/relaybell/accounts"
	"github.com/relaybell/relaybell/api"
	"github.com/relaybell/relaybell/bench"
	"github.com/relaybell/relaybell/store"
	storepostgres "github.com/relaybell/relaybell/store/postgres"
	storesqlite "github.com/relaybell/relaybell/store/sqlite"
)

const usage = `usage:
  relaybell serve [flags]                      run the service (embedded default: every role in one process)
  relaybell bench [--modes embedded,cluster] [--audience 10000,100000,1000000] [--rounds N] [--push-http1] [--peers=false] [--push-sample N]
                                               the peers (floor, bare sender, webpush-go, Node web-push) side by side,
                                               then broadcasts end to end against the bare sender; a table and a summary line
                                               (run from the repository: needs bin/fakepush and deploy/cluster.sh)
  relaybell bench --events [--modes embedded,cluster] [--event-rates 100,200,...] [--event-p99 20ms] [--registrations]
                                               find the highest rate of POST /api/v1/events (--registrations: of browsers' registrations) with p99 under a target
  relaybell bench --api [--modes embedded,cluster] [--api-rates 100,200,...] [--api-send-rates 5,10,...] [--api-routes subscribe,events,notify,list,send]
                                               the REST API's routes and the transactional path (POST to the push) under open-loop load
  relaybell bench --timers [--modes embedded,cluster] [--timers-waiting 1000000] [--timers-due 10000] [--timers-journeys]
                                               the automations engine with a million runs waiting: memory, lateness
                                               of due messages and store CPU per message, against 10,000 waiting
  relaybell version                            print the version this binary was built as
  relaybell admin website create --name N --url U [--owner-email E] [--timezone TZ] [--data DIR | --postgres URL]
                                               create a website and print its ids, API key and VAPID public key
  relaybell admin user create --email E [--name N] [--data DIR | --postgres URL] < password
                                               create a verified person who signs in to the dashboard, owner of an
                                               account of their own; the password is the first line of standard input
Run "relaybell serve -h" for the serve flags.`

// Version is the version the binary was built as, set at link time:
// go build -ldflags "-X github.com/relaybell/relaybell/server.Version=v1.2.3"
// (make build and the Dockerfile do). A plain go build says "dev".
var Version = "dev"

// Main runs the command line.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, usage)
		return errors.New("no command")
	}
	switch args[0] {
	case "serve":
		return serve(ctx, args[1:], stderr)
	case "bench":
		return runBench(ctx, args[1:], stdout, stderr)
	case "admin":
		if len(args) >= 3 && args[1] == "website" && args[2] == "create" {
			return createWebsite(ctx, args[3:], stdout, stderr)
		}
		if len(args) >= 3 && args[1] == "user" && args[2] == "create" {
			return createUser(ctx, args[3:], os.Stdin, stdout, stderr)
		}
	case "version", "--version":
		fmt.Fprintln(stdout, "relaybell", Version)
		return nil
	case "help", "-h", "--help":
		fmt.Fprintln(stdout, usage)
		return nil
	}
	fmt.Fprintln(stderr, usage)
	return fmt.Errorf("unknown command %q", strings.Join(args, " "))
}

func serve(ctx context.Context, args []string, stderr io.Writer) error {
	cfg, opts, err := parseServe(args, stderr)
	if err != nil {
		return err
	}
	if opts.cpuProfile != "" {
		f, err := os.Create(strings.ReplaceAll(opts.cpuProfile, "{node}", cfg.NodeName))
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: opts.level}))
	s, err := New(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer s.Close()
	return s.Run(ctx)
}

// serveOptions are the serve flags that are not the server's Config.
type serveOptions struct {
	level      slog.Level
	cpuProfile string
}

// parseServe reads serve's flags, with their RELAYBELL_* defaults.
func parseServe(args []string, stderr io.Writer) (Config, serveOptions, error) {
	var cfg Config
	var opts serveOptions
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg.RegisterFlags(fs)
	level := fs.String("log-level", envOr("RELAYBELL_LOG_LEVEL", "info"), "debug, info, warn or error (env RELAYBELL_LOG_LEVEL)")
	fs.StringVar(&opts.cpuProfile, "cpu-profile", os.Getenv("RELAYBELL_CPU_PROFILE"), "write a CPU profile of the whole run to this file, {node} standing for the node name (env RELAYBELL_CPU_PROFILE; for measuring)")
	if err := fs.Parse(args); err != nil {
		return cfg, opts, err
	}
	if fs.NArg() > 0 {
		return cfg, opts, fmt.Errorf("serve takes flags only, not %q", fs.Args())
	}
	if err := opts.level.UnmarshalText([]byte(*level)); err != nil {
		return cfg, opts, fmt.Errorf("--log-level or RELAYBELL_LOG_LEVEL %q is not debug, info, warn or error", *level)
	}
	return cfg, opts, nil
}

// ParseServe reads the arguments of relaybell serve (after the word serve)
// and the RELAYBELL_* environment as the command does, and checks the
// result with Validate: an unknown flag, a malformed value or a
// configuration that would not start is an error. The chart's tests
// (deploy/helmtest) parse every rendered pod with it.
func ParseServe(args []string) (Config, error) {
	cfg, _, err := parseServe(args, io.Discard)
	if err != nil {
		return cfg, err
	}
	return cfg, cfg.Validate()
}

// runBench is `relaybell bench`: it prints a line per mode and audience
// size as each run ends, then all of them.
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	modes := fs.String("modes", bench.Embedded+","+bench.Cluster, "modes to measure: embedded, cluster")
	audiences := fs.String("audience", "10000,100000,1000000", "comma-separated audience sizes")
	fakepush := fs.String("fakepush", "bin/fakepush", "fake push service binary (go build -o bin/fakepush ./cmd/fakepush)")
	script := fs.String("cluster-script", "deploy/cluster.sh", "the local cluster's script")
	pg := fs.String("postgres", envOr("RELAYBELL_POSTGRES", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"), "PostgreSQL of cluster runs (a schema per run, dropped after)")
	concurrency := fs.Int("concurrency", 256, "the bare sender's pushes in flight (the pusher's per-origin limit)")
	workdir := fs.String("workdir", "", "keep each run's data and logs here (default: a temporary directory)")
	rounds := fs.Int("rounds", 1, "broadcasts (each with a bare sender's run) per mode and audience size, on the same subscribers; the median ratio's round is reported")
	http1 := fs.Bool("push-http1", false, "the fake push service speaks plain HTTP/1.1 (default: HTTPS with HTTP/2, as real push services)")
	events := fs.Bool("events", false, "measure POST /api/v1/events instead of broadcasts: open-loop load at the --event-rates in turn, each a step of --event-warmup then --event-step, until a step's p99 reaches --event-p99 or it has errors, then --event-refine steps between the last rate that passed and that one; --audience, --rounds and --concurrency do not apply")
	eventRates := fs.String("event-rates", joinInts(bench.DefaultEventRates()), "with --events: comma-separated request rates a second, climbed in order")
	eventAudience := fs.Int("event-audience", bench.DefaultEventAudience, "with --events: browsers subscribed, four in five named by an externalId the events use")
	eventP99 := fs.Duration("event-p99", bench.DefaultEventTarget, "with --events: the p99 latency a step must stay under")
	eventWarmup := fs.Duration("event-warmup", bench.DefaultEventWarmup, "with --events: each step's time at its rate before it is measured")
	eventStep := fs.Duration("event-step", bench.DefaultEventStep, "with --events: each step's measured time")
	eventRefine := fs.Int("event-refine", 2, "with --events: steps between the last rate that passed and the first that did not")
	peers := fs.Bool("peers", true, "before the broadcasts, the peers: the floor of RFC 8291's crypto, the bare sender, webpush-go and Node's web-push (--node-script) each sending one push to each of --audience browsers of the same fake push service; then a table of all and a summary line")
	nodeScript := fs.String("node-script", "bench/node/send.js", "the script that drives Node's web-push (npm ci beside it); n/a without node or its packages")
	pushSample := fs.Int("push-sample", 1000, "the fake push service checks in full (VAPID signature, decryption) and keeps one push in this many during broadcasts and the senders' runs, and counts the others; 1 checks every push")
	apiMode := fs.Bool("api", false, "measure the REST API instead of broadcasts: POST /subscriptions, POST /events, POST /notifications to one externalId and GET /notifications at the --api-rates in turn, then sends to one person each across --api-websites websites from POST to the push at the --api-send-rates, each a step of --api-warmup then --api-step, until a step's p99 reaches --api-p99 (--api-send-p99 for sends) or it has errors; --audience, --rounds and --concurrency do not apply")
	apiRates := fs.String("api-rates", joinInts(bench.DefaultAPIRates()), "with --api: comma-separated request rates a second the REST routes climb")
	apiSendRates := fs.String("api-send-rates", joinInts(bench.DefaultAPISendRates()), "with --api: comma-separated send rates a second the transactional path climbs")
	apiRoutes := fs.String("api-routes", "subscribe,events,notify,list,ping,send", "with --api: the routes measured, of subscribe, events, notify, list, ping (delivery receipts), send (the transactional path)")
	apiWebsites := fs.Int("api-websites", bench.DefaultAPIWebsites, "with --api: websites the requests are spread over")
	apiP99 := fs.Duration("api-p99", bench.DefaultAPITarget, "with --api: the p99 a REST route's step must stay under")
	apiSendP99 := fs.Duration("api-send-p99", bench.DefaultAPISendTarget, "with --api: the p99 from POST to the push a transactional step must stay under")
	apiWarmup := fs.Duration("api-warmup", bench.DefaultAPIWarmup, "with --api: each step's time at its rate before it is measured")
	apiStep := fs.Duration("api-step", bench.DefaultAPIStep, "with --api: each step's measured time")
	registrations := fs.Bool("registrations", false, "with --events: measure browsers' registrations (POST /api/v1/projects/{id}/subscriptions) instead of events, --registration-new of them new browsers, the rest the audience's registering again")
	registrationNew := fs.Float64("registration-new", bench.DefaultNewShare, "with --registrations: the share of new browsers (0 to 1]")
	timers := fs.Bool("timers", false, "measure the automations engine instead of broadcasts: --timers-due people's messages come due with only them waiting (the baseline), then again with --timers-waiting more runs waiting; --audience, --rounds and --concurrency do not apply")
	timersWaiting := fs.Int("timers-waiting", bench.DefaultTimersWaiting, "with --timers: runs waiting in the loaded phase (loaded straight into the store)")
	timersDue := fs.Int("timers-due", bench.DefaultTimersDue, "with --timers: people subscribed, whose message comes due in each phase")
	timersJourneys := fs.Bool("timers-journeys", false, "with --timers: journey enrolments wait and fire (timers of kind journey) instead of automation runs")
	timersSpread := fs.Duration("timers-spread", bench.DefaultTimersSpread, "with --timers: the time the due messages are spread over")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg := bench.Config{FakePush: *fakepush, ClusterScript: *script, Postgres: *pg, Concurrency: *concurrency, WorkDir: *workdir, PushHTTP1: *http1, Rounds: *rounds, Log: stderr, CPUProfile: os.Getenv("RELAYBELL_CPU_PROFILE"),
		PushSample: *pushSample, NodeScript: *nodeScript}
	if *rounds < 1 {
		return fmt.Errorf("--rounds %d: at least 1", *rounds)
	}
	for _, m := range splitList(*modes) {
		if m != bench.Embedded && m != bench.Cluster {
			return fmt.Errorf("unknown mode %q (want embedded or cluster)", m)
		}
		cfg.Modes = append(cfg.Modes, m)
	}
	if *timers {
		if *timersWaiting <= 0 || *timersDue <= 0 || *timersSpread <= 0 {
			return errors.New("--timers-waiting, --timers-due and --timers-spread must be positive")
		}
		results, err := bench.RunTimers(ctx, bench.TimersConfig{Config: cfg, Waiting: *timersWaiting, Due: *timersDue, Spread: *timersSpread,
			Journeys: *timersJourneys})
		fmt.Fprint(stdout, bench.TimersReport(results))
		return err
	}
	if *apiMode {
		acfg := bench.APIConfig{Config: cfg, Websites: *apiWebsites, Target: *apiP99, SendTarget: *apiSendP99, Warmup: *apiWarmup, Step: *apiStep}
		var err error
		if acfg.Rates, err = parseRates(*apiRates); err != nil {
			return err
		}
		if acfg.SendRates, err = parseRates(*apiSendRates); err != nil {
			return err
		}
		if acfg.Routes, err = bench.ParseRoutes(*apiRoutes); err != nil {
			return err
		}
		if *apiWebsites <= 0 || *apiP99 <= 0 || *apiSendP99 <= 0 || *apiWarmup <= 0 || *apiStep <= 0 {
			return errors.New("--api-websites, --api-p99, --api-send-p99, --api-warmup and --api-step must be positive")
		}
		results, err := bench.RunAPI(ctx, acfg)
		fmt.Fprint(stdout, bench.APIReport(results))
		return err
	}
	if *events {
		ecfg := bench.EventsConfig{Config: cfg, Audience: *eventAudience, Target: *eventP99, Warmup: *eventWarmup, Step: *eventStep, Refine: *eventRefine,
			Registrations: *registrations, NewShare: *registrationNew}
		if *registrationNew <= 0 || *registrationNew > 1 {
			return errors.New("--registration-new must be in (0, 1]")
		}
		var err error
		if ecfg.Rates, err = parseRates(*eventRates); err != nil {
			return fmt.Errorf("--event-rates: %w", err)
		}
		if *eventAudience <= 0 || *eventP99 <= 0 || *eventWarmup <= 0 || *eventStep <= 0 || *eventRefine < 0 {
			return errors.New("--event-audience, --event-p99, --event-warmup and --event-step must be positive, --event-refine not negative")
		}
		results, err := bench.RunEvents(ctx, ecfg)
		fmt.Fprint(stdout, bench.EventsReport(results))
		return err
	}
	for _, a := range splitList(*audiences) {
		n, err := strconv.Atoi(a)
		if err != nil || n <= 0 {
			return fmt.Errorf("bad audience size %q", a)
		}
		cfg.Audiences = append(cfg.Audiences, n)
	}
	if *pushSample < 1 {
		return fmt.Errorf("--push-sample %d: at least 1", *pushSample)
	}
	var peerResults []bench.PeerResult
	if *peers {
		var err error
		if peerResults, err = bench.RunPeers(ctx, cfg); err != nil {
			return err
		}
	}
	results, err := bench.Run(ctx, cfg)
	for _, r := range results {
		fmt.Fprintln(stdout, r)
	}
	fmt.Fprint(stdout, bench.Table(peerResults, results))
	return err
}

// parseRates reads comma-separated positive rates.
func parseRates(s string) ([]int, error) {
	var out []int
	for _, r := range splitList(s) {
		n, err := strconv.Atoi(r)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("bad rate %q", r)
		}
		out = append(out, n)
	}
	return out, nil
}

// joinInts is ns comma-separated.
func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

func createWebsite(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("admin website create", flag.ContinueOnError)
	fs.SetOutput(stderr)
	name := fs.String("name", "", "website name (required)")
	url := fs.String("url", "", "website URL (required)")
	owner := fs.String("owner-email", "", "account owner's e-mail")
	tz := fs.String("timezone", "UTC", "website time zone")
	unverified := fs.Bool("unverified", false, "leave the owner's e-mail unverified")
	dataDir, pg := storeFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	st, err := openAdminStore(ctx, *dataDir, *pg, stderr)
	if err != nil {
		return err
	}
	defer st.Close()
	verified := !*unverified
	out, err := api.CreateWebsite(ctx, st, api.NewWebsite{Name: *name, URL: *url, OwnerEmail: *owner, EmailVerified: &verified, Timezone: *tz}, time.Now())
	if err != nil {
		return err
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// createUser is relaybell admin user create: the first owner, made from
// the shell, verified, with an account of their own. The password is read
// from in (its first line), so it shows in no process list.
func createUser(ctx context.Context, args []string, in io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("admin user create", flag.ContinueOnError)
	fs.SetOutput(stderr)
	email := fs.String("email", "", "the person's e-mail address (required)")
	name := fs.String("name", "", "the person's name")
	dataDir, pg := storeFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	line, err := bufio.NewReader(io.LimitReader(in, accounts.MaxPasswordBytes+2)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("reading the password: %w", err)
	}
	password := strings.TrimRight(line, "\r\n")
	st, err := openAdminStore(ctx, *dataDir, *pg, stderr)
	if err != nil {
		return err
	}
	defer st.Close()
	u, acc, err := accounts.New(st, accounts.Config{}, nil).CreateUser(ctx, *email, password, *name, time.Now())
	if errors.Is(err, store.ErrConflict) {
		return fmt.Errorf("%s has an account already", *email)
	}
	if err != nil {
		return err
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(map[string]string{"userId": u.ID, "accountId": acc.ID, "email": u.Email})
}

// storeFlags are the admin commands' flags naming the store: the embedded
// one's directory, or the cluster's PostgreSQL.
func storeFlags(fs *flag.FlagSet) (dataDir, pg *string) {
	dataDir = fs.String("data", envOr("RELAYBELL_DATA_DIR", "./relaybell-data"), "directory of the embedded storage (env RELAYBELL_DATA_DIR)")
	pg = fs.String("postgres", envOr("RELAYBELL_POSTGRES", ""), "the cluster's PostgreSQL URL instead (env RELAYBELL_POSTGRES)")
	return dataDir, pg
}

// openAdminStore opens the store serve would: the cluster's PostgreSQL
// when pg is set, else the embedded store of dataDir.
func openAdminStore(ctx context.Context, dataDir, pg string, stderr io.Writer) (store.Store, error) {
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	if pg != "" {
		return storepostgres.Open(ctx, pg, logger)
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, err
	}
	return storesqlite.Open(ctx, filepath.Join(dataDir, "relaybell.db"), logger)
}
