package bench

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/relaybell/relaybell/store/postgres"
)

// Modes a run can measure.
const (
	Embedded = "embedded" // `relaybell serve`, every role in one process
	Cluster  = "cluster"  // deploy/cluster.sh: 2 api, 2 fanout, 3 pushers
)

// Config describes a run.
type Config struct {
	Modes     []string
	Audiences []int
	// Relaybell is the binary that serves the embedded default (default:
	// this executable).
	Relaybell string
	// FakePush is the fake push service binary (cmd/fakepush).
	FakePush string
	// ClusterScript starts and stops the local cluster (deploy/cluster.sh).
	ClusterScript string
	// Postgres is the database of cluster runs; each run uses a schema of
	// its own, dropped afterwards.
	Postgres string
	// Concurrency is the bare sender's pushes in flight: the pusher's
	// per-origin limit, as every fake browser shares one origin (default 256).
	Concurrency int
	// WorkDir holds each run's data and logs (default a temporary directory).
	WorkDir string
	// Log receives progress lines (default discarded).
	Log io.Writer
	// PushHTTP1 has the fake push service speak plain HTTP/1.1 instead of
	// HTTPS with HTTP/2, as real push services do (FCM, Mozilla, Apple).
	PushHTTP1 bool
	// Rounds is how many broadcasts, each followed by a bare sender's run,
	// are measured per mode and audience size on the same subscribers
	// (default 1). The result is the round of the median ratio, so that one
	// disturbed round does not make the figure.
	Rounds int
	// PushSample is one push in how many the fake push service checks in
	// full (VAPID signature, decryption) and keeps during broadcasts and the
	// senders' runs; the others it only counts, so that it costs a fraction
	// of the sender (default 1000; 1 checks every push, as the fault tests'
	// fake push service does).
	PushSample int
	// NodeScript is the script that drives Node's web-push among the peers
	// (bench/node/send.js, its packages installed by npm ci beside it).
	NodeScript string
	// CPUProfile, when set, is where the bare sender's CPU profile is
	// written (the first round's), {node} standing for "bare-<mode>-<audience>" (the RelayBell
	// nodes write theirs when RELAYBELL_CPU_PROFILE is set; see serve).
	CPUProfile string
}

// Result is what one broadcast measured: with several rounds, the one of
// the median ratio, with the peak memory of all. Each broadcast and each
// bare sender's run starts once the work before it is done and the
// machine is quiet.
type Result struct {
	Mode         string
	Audience     int
	Subscribe    time.Duration  // subscribing the audience through the SDK route
	Settle       time.Duration  // vacuuming, analyzing and checkpointing PostgreSQL after it (cluster)
	FirstPush    time.Duration  // POST to the first push the fake service received
	EndToEnd     time.Duration  // POST to the last push received
	PushesPerSec float64        // Audience / EndToEnd
	Bare         time.Duration  // the bare sender, same audience, same fake service
	BarePerSec   float64        // Audience / Bare
	Ratio        float64        // PushesPerSec / BarePerSec
	Ratios       []float64      // every round's ratio, in the order measured
	Protocols    map[string]int // the broadcast's pushes by HTTP version, as the fake service got them
	// BareProtocols is the same for the bare sender's pushes (of every
	// round so far).
	BareProtocols map[string]int
	PeakRSSMiB    map[string]float64 // peak resident memory of each RelayBell process during the broadcasts
	PeakAnonMiB   map[string]float64 // the same without file pages (SQLite's memory-mapped database)
	StartAnonMiB  map[string]float64 // anonymous memory when the first broadcast began
	// CPU is the processor time each process used during the broadcast, in
	// seconds: the RelayBell processes, the fake push service and, for the
	// cluster, devkafka, ClickHouse and PostgreSQL ("postgres": the run's
	// backends and the server's own processes).
	CPU map[string]float64
	// BusyCores is the machine's average number of busy cores during the
	// broadcast (every process, PostgreSQL and the kernel included).
	BusyCores float64
	// BareCPU and BareBusyCores are the same for the bare sender's run
	// ("bench" is the sender, this process).
	BareCPU       map[string]float64
	BareBusyCores float64
	// Pace is the share of the pushes (%) that arrived in each tenth of the
	// broadcast, from the POST to the last push: flat when the pipeline is
	// busy throughout, low at the ends when it starts or finishes slowly.
	Pace [10]float64
}

// Run measures a broadcast for each audience size and mode.
func Run(ctx context.Context, cfg Config) ([]Result, error) {
	cleanup, err := cfg.fill()
	if err != nil {
		return nil, err
	}
	defer cleanup()
	var out []Result
	for _, n := range cfg.Audiences {
		for _, mode := range cfg.Modes {
			res, err := runOne(ctx, cfg, mode, n)
			if err != nil {
				return out, fmt.Errorf("%s, audience %d: %w", mode, n, err)
			}
			fmt.Fprintln(cfg.Log, res)
			out = append(out, res)
		}
	}
	return out, nil
}

func (cfg Config) pushSample() int {
	if cfg.PushSample <= 0 {
		return 1000
	}
	return cfg.PushSample
}

// fill sets the defaults every bench shares: no log, this executable,
// a temporary directory that cleanup removes.
func (cfg *Config) fill() (cleanup func(), err error) {
	cleanup = func() {}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 256
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if cfg.Relaybell == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		cfg.Relaybell = exe
	}
	if cfg.WorkDir == "" {
		dir, err := os.MkdirTemp("", "relaybell-bench-")
		if err != nil {
			return nil, err
		}
		cfg.WorkDir = dir
		cleanup = func() { os.RemoveAll(dir) }
	}
	return cleanup, nil
}

func (r Result) String() string {
	var mem []string
	for _, name := range slices.Sorted(maps.Keys(r.PeakRSSMiB)) {
		mem = append(mem, fmt.Sprintf("%s %.0f (%.0f, from %.0f)", name, r.PeakRSSMiB[name], r.PeakAnonMiB[name], r.StartAnonMiB[name]))
	}
	perPush := func(m map[string]float64) string {
		var s []string
		for _, name := range slices.Sorted(maps.Keys(m)) {
			s = append(s, fmt.Sprintf("%s %.0fµs", name, m[name]/float64(r.Audience)*1e6))
		}
		return strings.Join(s, ", ")
	}
	ratio := fmt.Sprintf("%.2f", r.Ratio)
	if len(r.Ratios) > 1 {
		var all []string
		for _, v := range r.Ratios {
			all = append(all, fmt.Sprintf("%.2f", v))
		}
		ratio += " (median of " + strings.Join(all, " ") + ")"
	}
	settled := ""
	if r.Settle > 0 {
		settled = " (settle " + r.Settle.Round(time.Millisecond).String() + ")"
	}
	return fmt.Sprintf("%-8s %8d  %8.0f/s  bare %6.0f/s  ratio %s  first push %6s  end-to-end %8s  subscribe %8s%s  peak RSS (anon, from) MiB: %s\n"+
		"         busy cores %.2f, CPU per push: %s\n"+
		"         bare sender: busy cores %.2f, CPU per push: %s; pushes by protocol %v\n"+
		"         pace, %% of the pushes in each tenth of the broadcast: %s; pushes by protocol %v",
		r.Mode, r.Audience, r.PushesPerSec, r.BarePerSec, ratio, r.FirstPush.Round(time.Millisecond),
		r.EndToEnd.Round(time.Millisecond), r.Subscribe.Round(time.Millisecond), settled, strings.Join(mem, ", "),
		r.BusyCores, perPush(r.CPU), r.BareBusyCores, perPush(r.BareCPU), r.BareProtocols, paceString(r.Pace), r.Protocols)
}

// cpuPerPush is RelayBell's CPU per push in µs, every process but the
// fake push service's.
func (r Result) cpuPerPush() float64 {
	var cpu float64
	for name, sec := range r.CPU {
		if name != "fakepush" {
			cpu += sec
		}
	}
	return cpu / float64(r.Audience) * 1e6
}

// bareCPUPerPush is the CPU per push in µs of the bare sender run beside
// the broadcast, or 0 if it did not run.
func (r Result) bareCPUPerPush() float64 {
	return r.BareCPU["bench"] / float64(r.Audience) * 1e6
}

func paceString(p [10]float64) string {
	s := make([]string, len(p))
	for i, v := range p {
		s[i] = fmt.Sprintf("%.0f", v)
	}
	return strings.Join(s, " ")
}

// sample is the fake push service's count of a broadcast's pushes at a
// moment after the POST.
type sample struct {
	at     time.Duration
	pushes int
}

// pace returns the share of n pushes (%) counted in each tenth of total,
// from samples in time order; a tenth takes the count of its last sample.
func pace(samples []sample, total time.Duration, n int) [10]float64 {
	var out [10]float64
	prev, i := 0, 0
	for tenth := range out {
		end := total * time.Duration(tenth+1) / 10
		for i < len(samples) && samples[i].at <= end {
			i++
		}
		got := prev
		if i > 0 {
			got = samples[i-1].pushes
		}
		if tenth == len(out)-1 {
			got = n // the last push ends the broadcast
		}
		out[tenth] = float64(got-prev) * 100 / float64(n)
		prev = got
	}
	return out
}

// deployment is RelayBell running in one of the modes.
type deployment struct {
	apis   []string
	procs  map[string]int // RelayBell processes: name -> pid
	others map[string]int // the engines it runs on that the bench started
	// store is where its store is: the SQLite database's file (embedded)
	// or the PostgreSQL URL with the run's schema (cluster), whose
	// connections are named appName (application_name).
	store, appName string
	// storeProcs, if set, lists the PostgreSQL processes whose CPU is the
	// deployment's (see runProcesses); unset, PostgreSQL is not its.
	storeProcs func(context.Context) ([]int, error)
	// settle, if set, brings the engines to the state they would reach on
	// their own after the audience subscribed (see settle in postgres.go).
	settle func(context.Context) error
	stop   func()
}

// stage is what a measurement starts from: the fake push service in its
// own process, RelayBell running in a mode and sending to it, and a website
// created through the admin API.
type stage struct {
	push     *client      // the fake push service
	pushTLS  *tls.Config  // what trusts the fake push service (nil: plain HTTP/1.1)
	pushCert string       // the fake push service's certificate (PEM file; "": plain HTTP/1.1)
	fake     *os.Process  // the fake push service
	d        *deployment  // RelayBell
	api      *client      // RelayBell's first API node
	site     benchWebsite // the website measured
	stops    []func()     // in the order started
}

// benchWebsite is what POST /admin/v1/websites answers that the benches use.
type benchWebsite struct {
	WebsiteID      string `json:"websiteId"`
	ProjectID      string `json:"projectId"`
	APIKey         string `json:"apiKey"`
	VAPIDPublicKey string `json:"vapidPublicKey"`
}

// stop stops what the stage started, last first.
func (s *stage) stop() {
	for i := len(s.stops) - 1; i >= 0; i-- {
		s.stops[i]()
	}
}

// startStage starts the fake push service and RelayBell in mode, and
// creates a website. The run's directory under cfg.WorkDir begins with
// name; env is added to the RelayBell processes' environment; the fake push
// service checks in full and keeps one push in sample (1: every one; see
// cmd/fakepush).
func startStage(ctx context.Context, cfg Config, mode, name string, env []string, sample int) (_ *stage, err error) {
	dir, err := os.MkdirTemp(cfg.WorkDir, name+"-")
	if err != nil {
		return nil, err
	}
	s := &stage{}
	defer func() {
		if err != nil {
			s.stop()
		}
	}()
	// What the RelayBell processes need: to reach the push service, and to
	// let the bench's one address subscribe the whole audience (the public
	// routes' limit of 120 a minute per address is off).
	nodeEnv := append([]string{"RELAYBELL_PUBLIC_RATE_LIMIT=-1"}, env...)
	fakeAddr, err := s.startFake(ctx, cfg, dir, sample)
	if err != nil {
		return nil, err
	}
	if s.pushCert != "" {
		nodeEnv = append(nodeEnv, "SSL_CERT_FILE="+s.pushCert)
	}

	switch mode {
	case Embedded:
		s.d, err = startEmbedded(ctx, cfg, dir, fakeAddr, nodeEnv)
	case Cluster:
		s.d, err = startCluster(ctx, cfg, dir, fakeAddr, nodeEnv)
	default:
		err = fmt.Errorf("unknown mode %q", mode)
	}
	if err != nil {
		return nil, err
	}
	s.stops = append(s.stops, s.d.stop)

	s.api = &client{base: s.d.apis[0], hc: http.DefaultClient}
	if err := s.api.do("POST", "/admin/v1/websites", adminToken, map[string]any{"name": "Bench", "url": "https://bench.example"}, 201, &s.site); err != nil {
		return nil, err
	}
	return s, nil
}

// startFake starts the fake push service in its own process, serving HTTPS
// and HTTP/2 with a certificate made in dir (plain HTTP/1.1 with
// cfg.PushHTTP1), checking one push in sample in full; it returns its
// address. s.stop stops it.
func (s *stage) startFake(ctx context.Context, cfg Config, dir string, sample int) (string, error) {
	fakeAddr, err := FreeAddr()
	if err != nil {
		return "", err
	}
	s.push = &client{base: "http://" + fakeAddr, hc: http.DefaultClient}
	args := []string{"-addr", fakeAddr, "-sample", strconv.Itoa(max(sample, 1))}
	if !cfg.PushHTTP1 {
		t, err := newPushTLS(dir)
		if err != nil {
			return "", err
		}
		s.push = &client{base: "https://" + fakeAddr, hc: &http.Client{Transport: &http.Transport{TLSClientConfig: t.config}}}
		args = append(args, "-tls-cert", t.certFile, "-tls-key", t.keyFile, "-lean")
		s.pushTLS, s.pushCert = t.config, t.certFile
	}
	s.fake, err = startProcess(filepath.Join(dir, "fakepush.log"), nil, cfg.FakePush, args...)
	if err != nil {
		return "", fmt.Errorf("starting the fake push service: %w", err)
	}
	s.stops = append(s.stops, func() { stopProcess(s.fake) })
	return fakeAddr, waitHTTP(ctx, s.push.hc, s.push.base+"/count")
}

func runOne(ctx context.Context, cfg Config, mode string, n int) (Result, error) {
	s, err := startStage(ctx, cfg, mode, mode+"-"+strconv.Itoa(n), nil, cfg.pushSample())
	if err != nil {
		return Result{}, err
	}
	defer s.stop()
	api, push, d, site, fake := s.api, s.push, s.d, s.site, s.fake
	res := Result{Mode: mode, Audience: n}
	start := time.Now()
	subs, err := browsers(push, site.VAPIDPublicKey, n)
	if err != nil {
		return Result{}, err
	}
	if err := subscribe(ctx, d.apis, site.ProjectID, subs); err != nil {
		return Result{}, err
	}
	res.Subscribe = time.Since(start)
	fmt.Fprintf(cfg.Log, "%s %d: subscribed in %s\n", mode, n, res.Subscribe.Round(time.Millisecond))
	if d.settle != nil {
		start := time.Now()
		if err := d.settle(ctx); err != nil {
			return Result{}, err
		}
		res.Settle = time.Since(start)
		fmt.Fprintf(cfg.Log, "%s %d: settled in %s\n", mode, n, res.Settle.Round(time.Millisecond))
	}

	b, err := newBare(push, n, cfg.Concurrency, s.pushTLS)
	if err != nil {
		return Result{}, err
	}
	defer b.client.Close()
	rounds := make([]Result, max(cfg.Rounds, 1))
	for i := range rounds {
		rounds[i] = res
		r := &rounds[i]
		if err := quiet(ctx, cfg.Log); err != nil {
			return Result{}, err
		}
		id, err := broadcast(ctx, r, api, site.APIKey, push, d, fake.Pid)
		if err != nil {
			return Result{}, err
		}
		// What RelayBell does after the last push (recording results and
		// events) must not run into the bare sender's time.
		if err := finished(ctx, api, site.APIKey, id, n); err != nil {
			return Result{}, err
		}
		if err := quiet(ctx, cfg.Log); err != nil {
			return Result{}, err
		}
		profile := ""
		if i == 0 {
			profile = cfg.CPUProfile
		}
		stopProfile, err := startProfile(profile, "bare-"+mode+"-"+strconv.Itoa(n))
		if err != nil {
			return Result{}, err
		}
		bareCPU := startCPU(map[string]int{"fakepush": fake.Pid, "bench": os.Getpid()})
		r.Bare, r.BareProtocols, err = b.send(ctx)
		stopProfile()
		if err != nil {
			return Result{}, err
		}
		r.BareCPU, r.BareBusyCores = bareCPU()
		delete(r.BareCPU, "postgres") // no part of the bare sender's
		r.BarePerSec = float64(n) / r.Bare.Seconds()
		r.Ratio = r.PushesPerSec / r.BarePerSec
		if len(rounds) > 1 {
			fmt.Fprintf(cfg.Log, "%s %d: round %d of %d: ratio %.2f, first push %s, CPU per push %.0fµs (postgres %.0f), bare sender %.0fµs\n",
				mode, n, i+1, len(rounds), r.Ratio, r.FirstPush.Round(time.Millisecond),
				r.cpuPerPush(), r.CPU["postgres"]/float64(n)*1e6, r.bareCPUPerPush())
		}
	}
	return medianRound(rounds), nil
}

// broadcast sends a broadcast to every subscriber of the website and
// measures it into r, until the fake push service has received them all;
// it returns the notification's id.
func broadcast(ctx context.Context, r *Result, api *client, apiKey string, push *client, d *deployment, fakePid int) (string, error) {
	n := r.Audience
	before, err := count(push)
	if err != nil {
		return "", err
	}
	var sent struct {
		NotificationID string `json:"notificationId"`
	}
	r.StartAnonMiB = map[string]float64{}
	for name, pid := range d.procs {
		_, r.StartAnonMiB[name] = residentMiB(pid)
	}
	mem := sampleMemory(d.procs)
	others := map[string]int{"fakepush": fakePid}
	maps.Copy(others, d.others)
	if err := openWindow(push); err != nil {
		return "", err
	}
	cpu := startCPU(d.procs, others)
	storeCPU := d.startStoreCPU(ctx)
	start := time.Now()
	if err := api.do("POST", "/api/v1/notifications", apiKey, map[string]any{"title": broadcastTitle, "body": broadcastBody}, 202, &sent); err != nil {
		return "", err
	}
	deadline := time.Now().Add(time.Minute + time.Duration(n)*time.Millisecond)
	var samples []sample
	for {
		got, err := count(push)
		if err != nil {
			return "", err
		}
		samples = append(samples, sample{time.Since(start), got - before})
		if got-before >= n {
			break
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("only %d of %d pushes arrived", got-before, n)
		}
		time.Sleep(25 * time.Millisecond)
	}
	st, err := readWindow(push)
	if err != nil {
		return "", err
	}
	if err := st.check(n, sent.NotificationID); err != nil {
		return "", fmt.Errorf("the broadcast: %w", err)
	}
	r.Protocols = st.Protocols
	r.PeakRSSMiB, r.PeakAnonMiB = mem()
	r.CPU, r.BusyCores = cpu()
	// PostgreSQL's: the run's own processes, none for the embedded default
	// (startCPU counts every PostgreSQL process of the machine).
	delete(r.CPU, "postgres")
	if storeCPU != nil {
		r.CPU["postgres"] = storeCPU()
	}
	r.FirstPush, r.EndToEnd = st.First.Sub(start), st.Last.Sub(start)
	r.PushesPerSec = float64(n) / r.EndToEnd.Seconds()
	r.Pace = pace(samples, r.EndToEnd, n)
	return sent.NotificationID, nil
}

// pushWindow is what the fake push service accepted since openWindow (GET
// /window, see cmd/fakepush).
type pushWindow struct {
	Pushes        int            `json:"pushes"`
	Browsers      int            `json:"browsers"`
	Protocols     map[string]int `json:"protocols"`
	First         time.Time      `json:"first"`
	Last          time.Time      `json:"last"`
	Sampled       int            `json:"sampled"`
	Notifications map[string]int `json:"notifications"`
}

// openWindow has the fake push service count anew.
func openWindow(push *client) error { return push.do("POST", "/window", "", nil, 200, nil) }

func readWindow(push *client) (pushWindow, error) {
	var w pushWindow
	err := push.do("GET", "/window", "", nil, 200, &w)
	return w, err
}

// check is nil when the window holds n pushes, one to each of n browsers,
// and every push checked in full (at least one) was of notification id.
func (w pushWindow) check(n int, id string) error {
	switch {
	case w.Pushes != n || w.Browsers != n:
		return fmt.Errorf("the fake push service got %d pushes to %d browsers, want %d to %d", w.Pushes, w.Browsers, n, n)
	case w.Sampled == 0 || w.Notifications[id] != w.Sampled:
		return fmt.Errorf("of the %d pushes the fake push service decrypted, %d were of notification %s (%v)", w.Sampled, w.Notifications[id], id, w.Notifications)
	}
	return nil
}

// startStoreCPU starts measuring the processor time of the deployment's
// PostgreSQL processes (storeProcs: its connections' backends and the
// server's own); the function it returns gives the seconds they used
// since, a process started meanwhile counting whole. On the embedded
// default, whose store runs in its own process, it is nil.
func (d *deployment) startStoreCPU(ctx context.Context) func() float64 {
	if d.storeProcs == nil {
		return nil
	}
	read := func() map[int]float64 {
		pids, _ := d.storeProcs(ctx)
		out := make(map[int]float64, len(pids))
		for _, pid := range pids {
			out[pid] = cpuSeconds(pid)
		}
		return out
	}
	before := read()
	return func() float64 { return usedSince(before, read()) }
}

// finished waits until the notification is sent with all of its n pushes
// recorded.
func finished(ctx context.Context, api *client, apiKey, id string, n int) error {
	deadline := time.Now().Add(time.Minute)
	for {
		var d struct {
			Notification struct {
				Status string `json:"status"`
				Sent   int    `json:"sent"`
			} `json:"notification"`
		}
		if err := api.do("GET", "/api/v1/notifications/"+id, apiKey, nil, 200, &d); err != nil {
			return err
		}
		if d.Notification.Status == "sent" && d.Notification.Sent == n {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("notification %s is %s with %d of %d pushes recorded", id, d.Notification.Status, d.Notification.Sent, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// medianRound returns the round of the median ratio (the lower of the two
// middle ones for an even count) with every round's ratio, the peak memory
// over all of them and the memory before the first.
func medianRound(rounds []Result) Result {
	byRatio := slices.Clone(rounds)
	slices.SortStableFunc(byRatio, func(a, b Result) int { return cmp.Compare(a.Ratio, b.Ratio) })
	out := byRatio[(len(byRatio)-1)/2]
	out.StartAnonMiB = rounds[0].StartAnonMiB
	out.PeakRSSMiB, out.PeakAnonMiB = map[string]float64{}, map[string]float64{}
	for _, r := range rounds {
		out.Ratios = append(out.Ratios, r.Ratio)
		for name, v := range r.PeakRSSMiB {
			out.PeakRSSMiB[name] = max(out.PeakRSSMiB[name], v)
		}
		for name, v := range r.PeakAnonMiB {
			out.PeakAnonMiB[name] = max(out.PeakAnonMiB[name], v)
		}
	}
	return out
}

const (
	adminToken     = "bench-admin-token"
	broadcastTitle = "Bench"
	broadcastBody  = "A broadcast"
)

func startEmbedded(ctx context.Context, cfg Config, dir, fakeAddr string, env []string) (*deployment, error) {
	addr, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	p, err := startProcess(filepath.Join(dir, "relaybell.log"), env, cfg.Relaybell, "serve",
		"--http", addr, "--data", filepath.Join(dir, "data"), "--admin-token", adminToken,
		"--push-allow-hosts", fakeAddr, "--log-level", "warn", "--review-threshold", "-1")
	if err != nil {
		return nil, err
	}
	d := &deployment{apis: []string{"http://" + addr}, procs: map[string]int{"relaybell": p.Pid}, stop: func() { stopProcess(p) },
		store: filepath.Join(dir, "data", "relaybell.db")}
	if err := WaitHTTP(ctx, d.apis[0]+"/readyz"); err != nil {
		d.stop()
		return nil, err
	}
	return d, nil
}

func startCluster(ctx context.Context, cfg Config, dir, fakeAddr string, nodeEnv []string) (*deployment, error) {
	b := make([]byte, 5)
	rand.Read(b)
	schema := "rb_bench_" + hex.EncodeToString(b)
	dsn, err := postgres.WithSearchPath(cfg.Postgres, schema)
	if err != nil {
		return nil, err
	}
	// Named, so that the CPU of their backends can be told apart.
	if dsn, err = withApplicationName(dsn, schema); err != nil {
		return nil, err
	}
	base := 10000 + int(b[0])%200*100 // below the ephemeral port range
	env := []string{
		"CLUSTER_DIR=" + filepath.Join(dir, "cluster"),
		"BASE_PORT=" + strconv.Itoa(base),
		"RELAYBELL_POSTGRES=" + dsn,
		"RELAYBELL_ADMIN_TOKEN=" + adminToken,
		"FAKEPUSH_ADDR=" + fakeAddr,
		"RELAYBELL_LOG_LEVEL=warn",
		"RELAYBELL_REVIEW_THRESHOLD=-1", // a benchmark's broadcast is not held for review
	}
	env = append(env, nodeEnv...)
	script := func(arg string) error {
		// Not ctx: an interrupted run must still stop its cluster.
		cmd := exec.CommandContext(context.WithoutCancel(ctx), cfg.ClusterScript, arg)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("%s %s: %w\n%s", cfg.ClusterScript, arg, err, out)
		}
		return nil
	}
	stop := func() {
		script("stop")
		dropSchema(cfg.Postgres, schema)
	}
	if err := script("start"); err != nil {
		stop()
		return nil, err
	}
	d := &deployment{
		apis:   []string{fmt.Sprintf("http://127.0.0.1:%d", base), fmt.Sprintf("http://127.0.0.1:%d", base+1)},
		procs:  map[string]int{},
		others: map[string]int{},
		settle: func(ctx context.Context) error { return settle(ctx, cfg.Postgres, schema) },
		storeProcs: func(ctx context.Context) ([]int, error) {
			return runProcesses(ctx, cfg.Postgres, schema)
		},
		stop:    stop,
		store:   dsn,
		appName: schema,
	}
	pids, _ := filepath.Glob(filepath.Join(dir, "cluster", "pids", "*.pid"))
	pids = append(pids, filepath.Join(dir, "cluster", "clickhouse", "clickhouse.pid"))
	for _, f := range pids {
		name := strings.TrimSuffix(filepath.Base(f), ".pid")
		raw, _ := os.ReadFile(f)
		pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
		switch {
		case err != nil:
		case name == "devkafka" || name == "clickhouse":
			d.others[name] = pid
		case name != "fakepush": // started by the bench, not the script
			d.procs[name] = pid
		}
	}
	return d, nil
}

// browsers creates n browsers on the fake push service, subscribed with the
// given application server key, and returns their subscription bodies.
func browsers(push *client, vapid string, n int) ([]json.RawMessage, error) {
	subs := make([]json.RawMessage, 0, n)
	for len(subs) < n {
		var out struct {
			Browsers []json.RawMessage `json:"browsers"`
		}
		if err := push.do("POST", "/browsers", "", map[string]any{"applicationServerKey": vapid, "count": min(50_000, n-len(subs))}, 200, &out); err != nil {
			return nil, err
		}
		subs = append(subs, out.Browsers...)
	}
	return subs, nil
}

// subscribe registers every subscription through the SDK route, spread over
// the API nodes.
func subscribe(ctx context.Context, apis []string, projectID string, subs []json.RawMessage) error {
	return postEach(ctx, apis, "/api/v1/projects/"+projectID+"/subscriptions", subs, 201, nil)
}

// postEach posts every body to path, spread over the API nodes, 32 at a
// time; any status but want is an error. answer, if set, gets each
// answer's body with its body's index (called from several goroutines).
func postEach(ctx context.Context, apis []string, path string, bodies []json.RawMessage, want int, answer func(i int, body []byte) error) error {
	const workers = 32
	var next atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: workers}}
	defer hc.CloseIdleConnections()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < len(bodies) && ctx.Err() == nil; i = int(next.Add(1) - 1) {
				resp, err := hc.Post(apis[i%len(apis)]+path, "application/json", bytes.NewReader(bodies[i]))
				if err == nil {
					var body []byte
					body, err = io.ReadAll(resp.Body)
					resp.Body.Close()
					switch {
					case err != nil:
					case resp.StatusCode != want:
						err = fmt.Errorf("POST %s: status %d %s", path, resp.StatusCode, body)
					case answer != nil:
						err = answer(i, body)
					}
				}
				if err != nil {
					once.Do(func() { firstErr = err })
					return
				}
			}
		}()
	}
	wg.Wait()
	return cmp.Or(firstErr, ctx.Err())
}

func count(push *client) (int, error) {
	var c struct {
		Pushes int `json:"pushes"`
	}
	err := push.do("GET", "/count", "", nil, 200, &c)
	return c.Pushes, err
}

func startProcess(logPath string, env []string, bin string, args ...string) (*os.Process, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), env...)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go cmd.Wait()
	return cmd.Process, nil
}

func stopProcess(p *os.Process) {
	p.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() {
		for p.Signal(nil) == nil {
			time.Sleep(20 * time.Millisecond)
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		p.Kill()
	}
}

// WaitHTTP polls u until it answers 200, for at most 30 s.
func WaitHTTP(ctx context.Context, u string) error {
	return waitHTTP(ctx, http.DefaultClient, u)
}

func waitHTTP(ctx context.Context, hc *http.Client, u string) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := hc.Get(u)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return errors.Join(fmt.Errorf("%s did not become ready", u), err, ctx.Err())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// FreeAddr returns a loopback address with a port free right now.
func FreeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

type client struct {
	base string
	hc   *http.Client
}

func (c *client) do(method, path, token string, body any, want int, out any) error {
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, answer)
	}
	if out != nil {
		return json.Unmarshal(answer, out)
	}
	return nil
}
