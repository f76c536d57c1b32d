package bench

import (
	"bufio"
	"cmp"
	"context"
	"crypto/ecdh"
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	webpushgo "github.com/SherClockHolmes/webpush-go"
)

// The peers: the same pushes sent by RelayBell's bare sender, by
// webpush-go and by Node's web-push to the same fake push service, and the
// floor of RFC 8291's crypto, timed in the same run.

// Senders of the peers' table, in its order.
const (
	SenderFloor = "floor"
	// SenderFloorCores is the floor's crypto on every core at once (a
	// thread each), as a sender that spreads its encryption over the
	// cores runs it: a control for cores that slow each other down
	// (shared caches, a shared clock), which would raise the bare
	// sender's ratio to the one-thread floor without being its own cost.
	SenderFloorCores = "floor-every-core"
	SenderBare       = "bare"
	SenderWebpushGo  = "webpush-go"
	SenderNode       = "node-web-push"
)

// PeerResult is one sender's pushes to the fake push service: with several
// rounds, the round of the median CPU per push.
type PeerResult struct {
	Audience int
	Sender   string
	PerSec   float64        // pushes a second (the floors: operations a second, of all their threads)
	Threads  int            // the floors' threads
	CPU      float64        // the sender's processor time per push, in µs
	FakeCPU  float64        // the fake push service's, in µs per push
	Protocol map[string]int // pushes by HTTP version, as the fake service got them
	Rounds   []float64      // CPU per push of each round, in the order measured
	// NA, when set, is why the sender was not measured.
	NA string
}

// RunPeers measures the peers for each audience size: the floor (a fresh
// P-256 key and an ECDH per push, what RFC 8291 requires of any sender, on
// one thread of this process), then the bare sender, webpush-go and Node's
// web-push, each sending one push to each of the same n browsers of the
// same fake push service, cfg.Concurrency in flight, cfg.Rounds times in
// turn. Each sender's CPU is that of its process (this one, or Node's) from
// /proc while it sends. Node's web-push is n/a, with the reason logged, when
// node or the script's packages are missing or it fails.
func RunPeers(ctx context.Context, cfg Config) ([]PeerResult, error) {
	cleanup, err := cfg.fill()
	if err != nil {
		return nil, err
	}
	defer cleanup()
	var out []PeerResult
	for _, n := range cfg.Audiences {
		res, err := runPeers(ctx, cfg, n)
		if err != nil {
			return out, fmt.Errorf("peers, audience %d: %w", n, err)
		}
		for _, r := range res {
			fmt.Fprintln(cfg.Log, r)
		}
		out = append(out, res...)
	}
	return out, nil
}

func (r PeerResult) String() string {
	if r.NA != "" {
		return fmt.Sprintf("peers %d %-14s n/a: %s", r.Audience, r.Sender, r.NA)
	}
	rounds := make([]string, len(r.Rounds))
	for i, v := range r.Rounds {
		rounds[i] = fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("peers %d %-14s %8.0f/s  CPU per push %4.0fµs (rounds %s)  fake push service %3.0fµs  %s",
		r.Audience, r.Sender, r.PerSec, r.CPU, strings.Join(rounds, " "), r.FakeCPU, protocolString(r.Protocol))
}

// peer is a sender of the table: send sends one push to each browser.
type peer struct {
	name string
	pid  int // the process whose CPU is the sender's
	send func(context.Context) error
	na   string
}

func runPeers(ctx context.Context, cfg Config, n int) ([]PeerResult, error) {
	dir, err := os.MkdirTemp(cfg.WorkDir, "peers-"+strconv.Itoa(n)+"-")
	if err != nil {
		return nil, err
	}
	s := &stage{}
	defer s.stop()
	if _, err := s.startFake(ctx, cfg, dir, cfg.pushSample()); err != nil {
		return nil, err
	}
	b, err := newBare(s.push, n, cfg.Concurrency, s.pushTLS)
	if err != nil {
		return nil, err
	}
	defer b.client.Close()
	peers := []*peer{
		{name: SenderBare, pid: os.Getpid(), send: func(ctx context.Context) error { _, _, err := b.send(ctx); return err }},
		{name: SenderWebpushGo, pid: os.Getpid(), send: webpushGoSender(b, s.pushTLS)},
	}
	node, err := startNode(ctx, cfg, dir, b, s.pushCert)
	if err != nil {
		fmt.Fprintf(cfg.Log, "peers: node web-push n/a: %v\n", err)
		peers = append(peers, &peer{name: SenderNode, na: err.Error()})
	} else {
		defer node.close()
		peers = append(peers, &peer{name: SenderNode, pid: node.cmd.Process.Pid, send: node.send})
	}

	rounds := max(cfg.Rounds, 1)
	threads := []int{1}
	if cores := runtime.GOMAXPROCS(0); cores > 1 {
		threads = append(threads, cores)
	}
	floors := make([][]PeerResult, len(threads))
	byPeer := make([][]PeerResult, len(peers))
	for round := range rounds {
		for i, t := range threads {
			if err := quiet(ctx, cfg.Log); err != nil {
				return nil, err
			}
			f, err := floor(b, min(max(n, 1000), 20_000), t)
			if err != nil {
				return nil, err
			}
			f.Audience = n
			floors[i] = append(floors[i], f)
		}
		for i, p := range peers {
			if p.na != "" {
				continue
			}
			if err := quiet(ctx, cfg.Log); err != nil {
				return nil, err
			}
			r, err := measurePeer(ctx, s, p, n)
			if err != nil && p.name == SenderNode {
				// Node's failure costs its column, not the run.
				fmt.Fprintf(cfg.Log, "peers: node web-push n/a: %v\n", err)
				p.na = err.Error()
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", p.name, err)
			}
			fmt.Fprintf(cfg.Log, "peers %d: round %d of %d: %s %.0fµs per push\n", n, round+1, rounds, p.name, r.CPU)
			byPeer[i] = append(byPeer[i], r)
		}
	}
	var out []PeerResult
	for _, f := range floors {
		out = append(out, medianPeer(f))
	}
	for i, p := range peers {
		if p.na != "" {
			out = append(out, PeerResult{Audience: n, Sender: p.name, NA: p.na})
			continue
		}
		out = append(out, medianPeer(byPeer[i]))
	}
	return out, nil
}

// measurePeer has p send one push to each of the n browsers and measures
// it.
func measurePeer(ctx context.Context, s *stage, p *peer, n int) (PeerResult, error) {
	if err := openWindow(s.push); err != nil {
		return PeerResult{}, err
	}
	cpu := startCPU(map[string]int{"sender": p.pid, "fakepush": s.fake.Pid})
	start := time.Now()
	err := p.send(ctx)
	elapsed := time.Since(start)
	used, _ := cpu()
	if err != nil {
		return PeerResult{}, err
	}
	w, err := readWindow(s.push)
	if err == nil {
		err = w.check(n, bareNotification)
	}
	if err != nil {
		return PeerResult{}, err
	}
	return PeerResult{Audience: n, Sender: p.name, PerSec: float64(n) / elapsed.Seconds(),
		CPU: used["sender"] / float64(n) * 1e6, FakeCPU: used["fakepush"] / float64(n) * 1e6, Protocol: w.Protocols}, nil
}

// medianPeer returns the round of the median CPU per push (the lower of
// the two middle ones), with every round's.
func medianPeer(rounds []PeerResult) PeerResult {
	sorted := slices.Clone(rounds)
	slices.SortStableFunc(sorted, func(a, b PeerResult) int {
		switch {
		case a.CPU < b.CPU:
			return -1
		case a.CPU > b.CPU:
			return 1
		}
		return 0
	})
	out := sorted[(len(sorted)-1)/2]
	out.Rounds = nil
	for _, r := range rounds {
		out.Rounds = append(out.Rounds, r.CPU)
	}
	return out
}

// floor times what RFC 8291 requires per push whatever the sender (as
// webpush's BenchmarkEncrypt/floor): a fresh P-256 key pair and one ECDH
// with a browser's key, iterations times on each of threads threads at
// once, each locked to its own, from those threads' CPU time. One thread
// is SenderFloor, more SenderFloorCores.
func floor(b *bare, iterations, threads int) (PeerResult, error) {
	p256dh, _ := b.targets[0].Keys()
	raw, err := base64.RawURLEncoding.DecodeString(p256dh)
	if err != nil {
		return PeerResult{}, err
	}
	peer, err := ecdh.P256().NewPublicKey(raw)
	if err != nil {
		return PeerResult{}, err
	}
	cpus := make([]time.Duration, threads)
	errs := make([]error, threads)
	var wg sync.WaitGroup
	start := time.Now()
	for t := range threads {
		wg.Go(func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			t0 := threadCPU()
			for range iterations {
				eph, err := ecdh.P256().GenerateKey(rand.Reader)
				if err == nil {
					_, err = eph.ECDH(peer)
				}
				if err != nil {
					errs[t] = err
					return
				}
			}
			cpus[t] = threadCPU() - t0
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return PeerResult{}, err
	}
	var cpu time.Duration
	for _, c := range cpus {
		cpu += c
	}
	ops := float64(iterations * threads)
	sender := SenderFloor
	if threads > 1 {
		sender = SenderFloorCores
	}
	return PeerResult{Sender: sender, Threads: threads, CPU: cpu.Seconds() / ops * 1e6,
		PerSec: ops / elapsed.Seconds()}, nil
}

// threadCPU is the calling thread's user and system time (Linux's
// RUSAGE_THREAD).
func threadCPU() time.Duration {
	const rusageThread = 1
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// webpushGoSender sends the bare sender's pushes (same browsers, key,
// payload, TTL, urgency and concurrency) with webpush-go, over an
// http.Client that trusts the fake push service and speaks HTTP/2 to it
// when it offers it, as Go's default client does with real push services.
func webpushGoSender(b *bare, pushTLS *tls.Config) func(context.Context) error {
	tr := &http.Transport{ForceAttemptHTTP2: true, MaxIdleConnsPerHost: b.concurrency}
	if pushTLS != nil {
		tr.TLSClientConfig = pushTLS.Clone()
	}
	hc := &http.Client{Transport: tr}
	key := b.signer.Key()
	opts := &webpushgo.Options{HTTPClient: hc, Subscriber: "bench@relaybell.invalid", TTL: 86400, Urgency: webpushgo.UrgencyNormal,
		VAPIDPublicKey: key.PublicKey(), VAPIDPrivateKey: key.PrivateKey()}
	subs := make([]*webpushgo.Subscription, len(b.targets))
	for i, t := range b.targets {
		p256dh, auth := t.Keys()
		subs[i] = &webpushgo.Subscription{Endpoint: t.Endpoint(), Keys: webpushgo.Keys{P256dh: p256dh, Auth: auth}}
	}
	return func(ctx context.Context) error {
		var next, failed atomic.Int64
		var firstErr error
		var once sync.Once
		var wg sync.WaitGroup
		for range b.concurrency {
			wg.Go(func() {
				for i := int(next.Add(1) - 1); i < len(subs); i = int(next.Add(1) - 1) {
					resp, err := webpushgo.SendNotificationWithContext(ctx, b.payload, subs[i], opts)
					if err == nil {
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						if resp.StatusCode != http.StatusCreated {
							err = fmt.Errorf("status %d", resp.StatusCode)
						}
					}
					if err != nil {
						failed.Add(1)
						once.Do(func() { firstErr = err })
					}
				}
			})
		}
		wg.Wait()
		if f := failed.Load(); f > 0 {
			return fmt.Errorf("%d pushes failed, the first: %w", f, firstErr)
		}
		return nil
	}
}

// nodeSender is bench/node/send.js running Node's web-push.
type nodeSender struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines *bufio.Scanner
	n     int
}

// startNode starts the Node script with the bare sender's pushes and waits
// until it is ready; an error says why Node's web-push cannot be measured.
func startNode(ctx context.Context, cfg Config, dir string, b *bare, certFile string) (*nodeSender, error) {
	if certFile == "" {
		return nil, errors.New("web-push sends over HTTPS only, and the fake push service speaks plain HTTP/1.1 (--push-http1)")
	}
	script := cfg.NodeScript
	if script == "" {
		script = filepath.Join("bench", "node", "send.js")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, errors.New("node is not installed")
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(script), "node_modules", "web-push", "package.json")); err != nil {
		return nil, fmt.Errorf("web-push is not installed beside %s (npm ci there)", script)
	}
	type keys struct {
		P256dh string `json:"p256dh"`
		Auth   string `json:"auth"`
	}
	type subscription struct {
		Endpoint string `json:"endpoint"`
		Keys     keys   `json:"keys"`
	}
	in := struct {
		Subscriptions []subscription    `json:"subscriptions"`
		Payload       []byte            `json:"payload"`
		VAPID         map[string]string `json:"vapid"`
		TTL           int               `json:"ttl"`
		Urgency       string            `json:"urgency"`
		Concurrency   int               `json:"concurrency"`
	}{Payload: b.payload, TTL: 86400, Urgency: "normal", Concurrency: b.concurrency,
		VAPID: map[string]string{"subject": "mailto:bench@relaybell.invalid", "publicKey": b.signer.Key().PublicKey(), "privateKey": b.signer.Key().PrivateKey()}}
	for _, t := range b.targets {
		p256dh, auth := t.Keys()
		in.Subscriptions = append(in.Subscriptions, subscription{t.Endpoint(), keys{p256dh, auth}})
	}
	data, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	config := filepath.Join(dir, "node-config.json")
	if err := os.WriteFile(config, data, 0o600); err != nil {
		return nil, err
	}
	logFile, err := os.Create(filepath.Join(dir, "node.log"))
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	cmd := exec.CommandContext(ctx, node, script, config)
	cmd.Env = append(os.Environ(), "NODE_EXTRA_CA_CERTS="+certFile)
	cmd.Stderr = logFile
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	ns := &nodeSender{cmd: cmd, stdin: stdin, lines: bufio.NewScanner(stdout), n: len(b.targets)}
	ready := make(chan bool, 1)
	go func() { ready <- ns.lines.Scan() && ns.lines.Text() == "ready" }()
	select {
	case ok := <-ready:
		if ok {
			return ns, nil
		}
	case <-time.After(time.Minute):
	}
	ns.close()
	log, _ := os.ReadFile(logFile.Name())
	return nil, fmt.Errorf("%s did not start: %s", script, strings.TrimSpace(string(log)))
}

func (ns *nodeSender) send(ctx context.Context) error {
	if _, err := io.WriteString(ns.stdin, "send\n"); err != nil {
		return err
	}
	if !ns.lines.Scan() {
		return fmt.Errorf("the script ended: %v", ns.lines.Err())
	}
	var out struct {
		Sent   int    `json:"sent"`
		Failed int    `json:"failed"`
		Error  string `json:"error"`
	}
	if err := json.Unmarshal(ns.lines.Bytes(), &out); err != nil {
		return fmt.Errorf("the script answered %q: %w", ns.lines.Text(), err)
	}
	if out.Failed > 0 || out.Sent != ns.n {
		return fmt.Errorf("%d pushes sent, %d failed, the first: %s", out.Sent, out.Failed, out.Error)
	}
	return nil
}

// close ends the script: it exits when its stdin closes.
func (ns *nodeSender) close() {
	ns.stdin.Close()
	done := make(chan struct{})
	go func() { ns.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		ns.cmd.Process.Kill()
		<-done
	}
}

// protocolString is "h2", "HTTP/1.1", or each version's share when mixed.
func protocolString(m map[string]int) string {
	name := func(p string) string {
		if p == "HTTP/2.0" {
			return "h2"
		}
		return p
	}
	if len(m) == 1 {
		for p := range m {
			return name(p)
		}
	}
	total := 0
	for _, v := range m {
		total += v
	}
	var parts []string
	for _, p := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %.0f%%", name(p), float64(m[p])*100/float64(total)))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

// Table is the peers and the broadcasts side by side, a markdown table
// per audience size, then the summary line of the largest: each sender's
// CPU per push, RelayBell's of every process (its store, Kafka and
// ClickHouse included; not the fake push service's), n/a for what was
// not measured.
func Table(peers []PeerResult, results []Result) string {
	var audiences []int
	for _, p := range peers {
		audiences = append(audiences, p.Audience)
	}
	for _, r := range results {
		audiences = append(audiences, r.Audience)
	}
	slices.Sort(audiences)
	audiences = slices.Compact(audiences)
	var sb strings.Builder
	summary := map[string]string{}
	for _, n := range audiences {
		var floorCPU, coresCPU, bareCPU float64
		for _, p := range peers {
			if p.Audience == n && p.Sender == SenderFloor {
				floorCPU = p.CPU
			}
		}
		times := func(cpu float64) string {
			if floorCPU <= 0 {
				return "-"
			}
			return fmt.Sprintf("%.2f", cpu/floorCPU)
		}
		fmt.Fprintf(&sb, "\n%d pushes, %d browsers (the broadcasts: from POST to the last push):\n\n", n, n)
		sb.WriteString("| sender | pushes a second | CPU µs per push | × floor | fake push service µs per push | protocol |\n|---|---|---|---|---|---|\n")
		summary = map[string]string{}
		for _, p := range peers {
			if p.Audience != n {
				continue
			}
			switch {
			case p.NA != "":
				fmt.Fprintf(&sb, "| %s | n/a | n/a | | | %s |\n", p.Sender, p.NA)
				summary[p.Sender] = "n/a"
			case p.Sender == SenderFloor:
				fmt.Fprintf(&sb, "| floor (P-256 key and ECDH, one thread) | %.0f | %.0f | 1.00 | | |\n", p.PerSec, p.CPU)
				summary[p.Sender] = fmt.Sprintf("%.0f", p.CPU)
			case p.Sender == SenderFloorCores:
				fmt.Fprintf(&sb, "| floor on every core (the same, %d threads at once) | %.0f | %.0f | %s | | |\n", p.Threads, p.PerSec, p.CPU, times(p.CPU))
				coresCPU = p.CPU
			default:
				fmt.Fprintf(&sb, "| %s | %.0f | %.0f | %s | %.0f | %s |\n", p.Sender, p.PerSec, p.CPU, times(p.CPU), p.FakeCPU, protocolString(p.Protocol))
				summary[p.Sender] = fmt.Sprintf("%.0f", p.CPU)
				if p.Sender == SenderBare {
					bareCPU = p.CPU
				}
			}
		}
		var notes []string
		if coresCPU > 0 && bareCPU > 0 {
			notes = append(notes, fmt.Sprintf("the bare sender ÷ the floor on every core: %.2f", bareCPU/coresCPU))
		}
		for _, r := range results {
			if r.Audience != n {
				continue
			}
			cpu := r.cpuPerPush()
			fmt.Fprintf(&sb, "| RelayBell %s, every process | %.0f | %.0f | %s | %.0f | %s |\n", r.Mode, r.PushesPerSec, cpu,
				times(cpu), r.CPU["fakepush"]/float64(n)*1e6, protocolString(r.Protocols))
			summary[r.Mode] = fmt.Sprintf("%.0f", cpu)
			if bare := r.bareCPUPerPush(); bare > 0 {
				notes = append(notes, fmt.Sprintf("RelayBell %s ÷ the bare sender run beside it: %.2f (%.0f µs)", r.Mode, cpu/bare, bare))
			}
		}
		for _, note := range notes {
			sb.WriteString("\n" + note)
		}
		if len(notes) > 0 {
			sb.WriteString("\n")
		}
	}
	sb.WriteString("\nsummary:")
	for _, k := range []string{SenderFloor, SenderBare, Embedded, Cluster, SenderWebpushGo, SenderNode} {
		sb.WriteString(" " + k + "=" + cmp.Or(summary[k], "n/a"))
	}
	sb.WriteString("\n")
	return sb.String()
}
