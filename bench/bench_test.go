package bench

import (
	"context"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestBenchMeasuresEmbeddedBroadcast runs the bench harness on a small
// audience with the real binaries, so the harness itself stays correct.
func TestBenchMeasuresEmbeddedBroadcast(t *testing.T) {
	dir := buildBinaries(t)
	for _, tc := range []struct {
		name   string
		http1  bool
		rounds int
		proto  string
	}{
		{"HTTPS and HTTP/2, two rounds", false, 2, "HTTP/2.0"},
		{"HTTP/1.1", true, 1, "HTTP/1.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			results, err := Run(context.Background(), Config{
				Modes: []string{Embedded}, Audiences: []int{300}, Rounds: tc.rounds, PushHTTP1: tc.http1,
				Relaybell: filepath.Join(dir, "relaybell"), FakePush: filepath.Join(dir, "fakepush"), Concurrency: 32,
			})
			if err != nil {
				t.Fatal(err)
			}
			r := results[0]
			if len(results) != 1 || r.Mode != Embedded || r.Audience != 300 || r.PushesPerSec <= 0 || r.BarePerSec <= 0 ||
				r.FirstPush <= 0 || r.FirstPush > r.EndToEnd || r.PeakRSSMiB["relaybell"] <= 0 || r.PeakAnonMiB["relaybell"] <= 0 {
				t.Fatalf("results %+v", results)
			}
			if len(r.Ratios) != tc.rounds || !slices.Contains(r.Ratios, r.Ratio) {
				t.Fatalf("ratio %v of rounds %v", r.Ratio, r.Ratios)
			}
			if !maps.Equal(r.Protocols, map[string]int{tc.proto: 300}) {
				t.Fatalf("pushes by protocol %v, want all 300 over %s", r.Protocols, tc.proto)
			}
			if len(r.BareProtocols) != 1 || r.BareProtocols[tc.proto] < 300 {
				t.Fatalf("bare sender's pushes by protocol %v, want all over %s", r.BareProtocols, tc.proto)
			}
			var paced float64
			for _, v := range r.Pace {
				paced += v
			}
			if paced < 99.99 || paced > 100.01 {
				t.Fatalf("pace %v adds up to %v%%", r.Pace, paced)
			}
			t.Log(r)
		})
	}
}

func TestMedianRound(t *testing.T) {
	rounds := []Result{
		{Ratio: 0.9, StartAnonMiB: map[string]float64{"a": 2}, PeakAnonMiB: map[string]float64{"a": 10}, PeakRSSMiB: map[string]float64{"a": 20}},
		{Ratio: 0.5, PeakAnonMiB: map[string]float64{"a": 30}, PeakRSSMiB: map[string]float64{"a": 40}},
		{Ratio: 0.7, FirstPush: time.Second, PeakAnonMiB: map[string]float64{"a": 5}, PeakRSSMiB: map[string]float64{"a": 50}},
		{Ratio: 0.6, StartAnonMiB: map[string]float64{"a": 9}, PeakAnonMiB: map[string]float64{"a": 1}, PeakRSSMiB: map[string]float64{"a": 1}},
	}
	got := medianRound(rounds)
	if got.Ratio != 0.6 || !slices.Equal(got.Ratios, []float64{0.9, 0.5, 0.7, 0.6}) ||
		got.PeakAnonMiB["a"] != 30 || got.PeakRSSMiB["a"] != 50 || got.StartAnonMiB["a"] != 2 {
		t.Fatalf("median of 4: %+v", got)
	}
	if got := medianRound(rounds[:3]); got.Ratio != 0.7 || got.FirstPush != time.Second {
		t.Fatalf("median of 3: %+v", got)
	}
	if rounds[2].PeakAnonMiB["a"] != 5 {
		t.Fatal("medianRound changed a round's memory")
	}
}

func TestPace(t *testing.T) {
	ms := time.Millisecond
	// 100 pushes over 1 s: none in the first tenth, 50 by 0.5 s, the last
	// one at 1 s (after the last sample).
	samples := []sample{{50 * ms, 0}, {150 * ms, 10}, {240 * ms, 20}, {500 * ms, 50}, {930 * ms, 90}, {990 * ms, 99}}
	got := pace(samples, time.Second, 100)
	want := [10]float64{0, 10, 10, 0, 30, 0, 0, 0, 0, 50}
	if got != want {
		t.Fatalf("pace = %v, want %v", got, want)
	}
}

// buildBinaries builds relaybell and fakepush into a temporary directory
// and returns it; with -short the test is skipped instead.
func buildBinaries(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the binaries")
	}
	dir := t.TempDir()
	for _, cmd := range []string{"relaybell", "fakepush"} {
		if out, err := exec.Command("go", "build", "-o", filepath.Join(dir, cmd), "../cmd/"+cmd).CombinedOutput(); err != nil {
			t.Fatalf("building %s: %v\n%s", cmd, err, out)
		}
	}
	return dir
}

// TestPeersSendTheSamePushes runs the peers on a small audience with the
// real fake push service: every sender's pushes reach every browser, over
// the protocol it speaks. Node's web-push is measured when node and
// bench/node's packages are installed (npm ci), and n/a with a reason
// otherwise.
func TestPeersSendTheSamePushes(t *testing.T) {
	dir := buildBinaries(t)
	_, nodeErr := exec.LookPath("node")
	if _, err := os.Stat("node/node_modules/web-push/package.json"); nodeErr == nil {
		nodeErr = err
	}
	peers, err := RunPeers(context.Background(), Config{Audiences: []int{300}, Rounds: 1, Concurrency: 32,
		FakePush: filepath.Join(dir, "fakepush"), NodeScript: "node/send.js"})
	if err != nil {
		t.Fatal(err)
	}
	var senders []string
	for _, p := range peers {
		t.Log(p)
		senders = append(senders, p.Sender)
		if p.Audience != 300 {
			t.Errorf("%s: audience %d", p.Sender, p.Audience)
		}
		switch {
		case p.Sender == SenderNode && nodeErr != nil:
			if !strings.Contains(p.NA, "not installed") {
				t.Errorf("node without its packages (%v): %+v", nodeErr, p)
			}
		case p.NA != "":
			t.Errorf("%s not measured: %s", p.Sender, p.NA)
		case p.CPU <= 0 || p.PerSec <= 0 || len(p.Rounds) != 1:
			t.Errorf("%s: %+v", p.Sender, p)
		case p.Sender == SenderFloor || p.Sender == SenderFloorCores:
			if want := map[string]int{SenderFloor: 1, SenderFloorCores: runtime.GOMAXPROCS(0)}[p.Sender]; p.Threads != want {
				t.Errorf("%s: %d threads, want %d", p.Sender, p.Threads, want)
			}
		case p.FakeCPU <= 0:
			t.Errorf("%s: the fake push service used no CPU: %+v", p.Sender, p)
		case p.Sender == SenderNode:
			if !maps.Equal(p.Protocol, map[string]int{"HTTP/1.1": 300}) {
				t.Errorf("node web-push's pushes by protocol %v, want all 300 over HTTP/1.1", p.Protocol)
			}
		default:
			if !maps.Equal(p.Protocol, map[string]int{"HTTP/2.0": 300}) {
				t.Errorf("%s's pushes by protocol %v, want all 300 over HTTP/2", p.Sender, p.Protocol)
			}
		}
	}
	want := []string{SenderFloor, SenderFloorCores, SenderBare, SenderWebpushGo, SenderNode}
	if runtime.GOMAXPROCS(0) == 1 {
		want = slices.Delete(want, 1, 2)
	}
	if !slices.Equal(senders, want) {
		t.Fatalf("senders %v", senders)
	}
}

func TestTableAndSummary(t *testing.T) {
	peers := []PeerResult{
		{Audience: 1000, Sender: SenderFloor, PerSec: 8000, CPU: 125, Threads: 1},
		{Audience: 1000, Sender: SenderFloorCores, PerSec: 12000, CPU: 160, Threads: 2},
		{Audience: 1000, Sender: SenderBare, PerSec: 5000, CPU: 250, FakeCPU: 20, Protocol: map[string]int{"HTTP/2.0": 1000}},
		{Audience: 1000, Sender: SenderWebpushGo, PerSec: 2000, CPU: 500, FakeCPU: 22, Protocol: map[string]int{"HTTP/2.0": 1000}},
		{Audience: 1000, Sender: SenderNode, NA: "node is not installed"},
	}
	results := []Result{{Mode: Embedded, Audience: 1000, PushesPerSec: 4000,
		CPU:     map[string]float64{"relaybell": 0.3, "fakepush": 0.02},
		BareCPU: map[string]float64{"bench": 0.25, "fakepush": 0.02}, Protocols: map[string]int{"HTTP/2.0": 600, "HTTP/1.1": 400}}}
	got := Table(peers, results)
	for _, want := range []string{
		"| floor (P-256 key and ECDH, one thread) | 8000 | 125 | 1.00 | | |\n",
		"| floor on every core (the same, 2 threads at once) | 12000 | 160 | 1.28 | | |\n",
		"| bare | 5000 | 250 | 2.00 | 20 | h2 |\n",
		"the bare sender ÷ the floor on every core: 1.56\n",
		"| webpush-go | 2000 | 500 | 4.00 | 22 | h2 |\n",
		"| node-web-push | n/a | n/a | | | node is not installed |\n",
		"| RelayBell embedded, every process | 4000 | 300 | 2.40 | 20 | HTTP/1.1 40%, h2 60% |\n",
		"RelayBell embedded ÷ the bare sender run beside it: 1.20 (250 µs)\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
	if want := "\nsummary: floor=125 bare=250 embedded=300 cluster=n/a webpush-go=500 node-web-push=n/a\n"; !strings.HasSuffix(got, want) {
		t.Errorf("table ends %q, want %q", got[strings.LastIndex(got[:len(got)-1], "\n"):], want)
	}
}
