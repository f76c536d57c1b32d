package memberlist

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relaybell/relaybell/ring"
)

const testProbe = 200 * time.Millisecond

// recorder is a slog.Handler keeping records for assertions. It outlives the
// test safely, unlike a handler on t.Output.
type recorder struct {
	mu      sync.Mutex
	records []slog.Record
}

func (h *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (h *recorder) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	h.records = append(h.records, r)
	h.mu.Unlock()
	return nil
}
func (h *recorder) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *recorder) WithGroup(string) slog.Handler      { return h }

func (h *recorder) find(level slog.Level, substr string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range h.records {
		if r.Level == level && strings.Contains(r.Message, substr) {
			return true
		}
	}
	return false
}

// startCluster starts n nodes pusher-0..n-1, each joining through the first.
func startCluster(t *testing.T, n int) ([]*Ring, *recorder) {
	t.Helper()
	rec := &recorder{}
	logger := slog.New(rec)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	nodes := make([]*Ring, n)
	for i := range nodes {
		cfg := Config{
			NodeName:      fmt.Sprintf("pusher-%d", i),
			ProbeInterval: testProbe,
			LeaveTimeout:  500 * time.Millisecond,
			Meta:          map[string]string{"http": fmt.Sprintf("127.0.0.1:%d", 18080+i)},
		}
		if i > 0 {
			cfg.Seeds = []string{nodes[0].Addr()}
		}
		r, err := Join(ctx, cfg, logger)
		if err != nil {
			t.Fatalf("starting %s: %v", cfg.NodeName, err)
		}
		t.Cleanup(func() { _ = r.Close() })
		nodes[i] = r
	}
	waitMembers(t, nodes, nodeNames(n), 5*time.Second)
	return nodes, rec
}

func nodeNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("pusher-%d", i)
	}
	return names
}

// waitMembers polls until every node in nodes sees exactly want (sorted).
func waitMembers(t *testing.T, nodes []*Ring, want []string, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	deadline := start.Add(within)
	for {
		ok := true
		for _, r := range nodes {
			if !slices.Equal(r.Hash().Nodes(), want) {
				ok = false
				break
			}
		}
		if ok {
			return time.Since(start)
		}
		if time.Now().After(deadline) {
			for _, r := range nodes {
				t.Logf("%s sees %v", r.Self(), r.Hash().Nodes())
			}
			t.Fatalf("members did not converge on %v within %s", want, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func keys(n int) []string {
	ks := make([]string, n)
	for i := range ks {
		ks[i] = fmt.Sprintf("notif-%d/%d/endpoint-%d", i/5, i%5, i)
	}
	return ks
}

func assertAgree(t *testing.T, nodes []*Ring, ks []string) {
	t.Helper()
	for _, k := range ks {
		want := nodes[0].Owner(k)
		for _, r := range nodes[1:] {
			if got := r.Owner(k); got != want {
				t.Fatalf("key %q: %s says %s, %s says %s", k, nodes[0].Self(), want, r.Self(), got)
			}
		}
	}
}

func TestJoinAgreeAndMeta(t *testing.T) {
	t.Parallel()
	nodes, rec := startCluster(t, 3)
	ks := keys(20_000)
	assertAgree(t, nodes, ks)

	owned := map[string]int{}
	for _, k := range ks {
		owned[nodes[1].Owner(k)]++
	}
	for _, name := range nodeNames(3) {
		if owned[name] == 0 {
			t.Errorf("%s owns no keys: %v", name, owned)
		}
	}

	for i, r := range nodes {
		if r.Self() != fmt.Sprintf("pusher-%d", i) {
			t.Errorf("Self = %s", r.Self())
		}
		members := r.Members()
		if len(members) != 3 {
			t.Fatalf("%s: Members = %v", r.Self(), members)
		}
		for j, m := range members {
			if want := fmt.Sprintf("127.0.0.1:%d", 18080+j); m.Meta["http"] != want {
				t.Errorf("%s sees %s meta %v, want http=%s", r.Self(), m.Name, m.Meta, want)
			}
			if m.Addr != nodes[j].Addr() {
				t.Errorf("%s sees %s at %s, want %s", r.Self(), m.Name, m.Addr, nodes[j].Addr())
			}
		}
		if m, ok := r.Member("pusher-2"); !ok || m.Meta["http"] != "127.0.0.1:18082" {
			t.Errorf("%s: Member(pusher-2) = %v, %v", r.Self(), m, ok)
		}
		if _, ok := r.Member("pusher-9"); ok {
			t.Errorf("%s: Member(pusher-9) found", r.Self())
		}
	}
	if !rec.find(slog.LevelDebug, "memberlist:") {
		t.Error("no memberlist log line at debug level")
	}
}

func TestCrashedNodeKeysMoveToNextOwner(t *testing.T) {
	t.Parallel()
	nodes, _ := startCluster(t, 3)
	before := nodes[0].Hash()
	events := nodes[0].Watch(t.Context())

	start := time.Now()
	if err := nodes[2].Shutdown(); err != nil { // no Leave: a crash
		t.Fatal(err)
	}
	live := nodes[:2]
	waitMembers(t, live, []string{"pusher-0", "pusher-1"}, 5*time.Second)
	t.Logf("crash noticed by both survivors after %s", time.Since(start))

	ks := keys(20_000)
	assertAgree(t, live, ks)
	for _, k := range ks {
		prev := before.Owners(k, 2)
		got := live[0].Owner(k)
		switch {
		case got == "pusher-2":
			t.Fatalf("key %q still owned by the dead node", k)
		case prev[0] == "pusher-2" && got != prev[1]:
			t.Fatalf("key %q of the dead node went to %s, Owners said %s", k, got, prev[1])
		case prev[0] != "pusher-2" && got != prev[0]:
			t.Fatalf("key %q of live %s moved to %s", k, prev[0], got)
		}
	}

	e := nextEvent(t, events, 2*time.Second)
	for e.Type == MemberUpdated {
		e = nextEvent(t, events, 2*time.Second)
	}
	if e.Type != MemberLeft || e.Member.Name != "pusher-2" {
		t.Fatalf("event = %v %s, want left pusher-2", e.Type, e.Member.Name)
	}
	if e.Member.Meta["http"] != "127.0.0.1:18082" {
		t.Errorf("left member meta = %v", e.Member.Meta)
	}
	if got := e.Hash.Nodes(); !slices.Equal(got, []string{"pusher-0", "pusher-1"}) {
		t.Errorf("event hash nodes = %v", got)
	}
}

func TestGracefulLeaveIsNoticedFast(t *testing.T) {
	t.Parallel()
	nodes, _ := startCluster(t, 3)
	start := time.Now()
	if err := nodes[1].Close(); err != nil {
		t.Fatal(err)
	}
	// A leave is broadcast, not detected by probes: well under the
	// crash-detection time.
	took := waitMembers(t, []*Ring{nodes[0], nodes[2]}, []string{"pusher-0", "pusher-2"}, 2*time.Second)
	t.Logf("leave noticed after %s (%s including Close)", took, time.Since(start))
	assertAgree(t, []*Ring{nodes[0], nodes[2]}, keys(5_000))

	if err := nodes[1].Leave(time.Second); !errors.Is(err, ErrClosed) {
		t.Errorf("Leave after Close = %v, want ErrClosed", err)
	}
	if err := nodes[1].Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
}

func TestWatchSeesJoinAndClosesOnShutdown(t *testing.T) {
	t.Parallel()
	nodes, _ := startCluster(t, 1)
	events := nodes[0].Watch(t.Context())

	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	other, err := Join(ctx, Config{
		NodeName:      "pusher-9",
		ProbeInterval: testProbe,
		Seeds:         []string{nodes[0].Addr()},
		Meta:          map[string]string{"http": "127.0.0.1:18089"},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()

	e := nextEvent(t, events, 2*time.Second)
	if e.Type != MemberJoined || e.Member.Name != "pusher-9" || e.Member.Meta["http"] != "127.0.0.1:18089" {
		t.Fatalf("event = %v %+v", e.Type, e.Member)
	}
	if got := e.Hash.Nodes(); !slices.Equal(got, []string{"pusher-0", "pusher-9"}) {
		t.Fatalf("event hash nodes = %v", got)
	}

	if err := nodes[0].Shutdown(); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(2 * time.Second)
	for {
		select {
		case _, ok := <-events:
			if !ok {
				if late := nodes[0].Watch(t.Context()); !isClosed(late) {
					t.Fatal("Watch after Shutdown returned an open channel")
				}
				return
			}
		case <-deadline:
			t.Fatal("watch channel not closed after Shutdown")
		}
	}
}

func TestWatchClosesWithContext(t *testing.T) {
	t.Parallel()
	nodes, _ := startCluster(t, 1)
	ctx, cancel := context.WithCancel(t.Context())
	events := nodes[0].Watch(ctx)
	cancel()
	select {
	case _, ok := <-events:
		if ok {
			t.Fatal("unexpected event")
		}
	case <-time.After(2 * time.Second):
		t.Fatal("watch channel not closed after cancel")
	}
}

func TestJoinGivesUpWithContext(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close()

	ctx, cancel := context.WithTimeout(t.Context(), 400*time.Millisecond)
	defer cancel()
	start := time.Now()
	r, err := Join(ctx, Config{NodeName: "lonely", ProbeInterval: testProbe, Seeds: []string{dead}}, nil)
	if err == nil {
		r.Close()
		t.Fatal("Join with no live seed succeeded")
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want DeadlineExceeded", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("Join took %s to give up", took)
	}
}

func TestSingleNodeOwnsEverything(t *testing.T) {
	t.Parallel()
	nodes, _ := startCluster(t, 1)
	var r ring.Ring = nodes[0]
	for _, k := range keys(100) {
		if got := r.Owners(k, 3); len(got) != 1 || got[0] != r.Self() {
			t.Fatalf("Owners(%q) = %v", k, got)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	f := func(cfg Config, want string) {
		t.Helper()
		err := cfg.Validate()
		switch {
		case want == "" && err != nil:
			t.Errorf("Validate(%+v) = %v", cfg, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("Validate(%+v) = %v, want %q", cfg, err, want)
		}
	}
	f(Config{NodeName: "a"}, "")
	f(Config{NodeName: "a", BindPort: 7946, Seeds: []string{"b:7946"}, Meta: map[string]string{"http": "x"}}, "")
	f(Config{}, "node name is required")
	f(Config{NodeName: "a", BindPort: -1}, "bind port")
	f(Config{NodeName: "a", BindPort: 70000}, "bind port")
	f(Config{NodeName: "a", ProbeInterval: -time.Second}, "probe interval")
	f(Config{NodeName: "a", VirtualNodes: -1}, "virtual nodes")
	f(Config{NodeName: "a", LeaveTimeout: -1}, "leave timeout")
	f(Config{NodeName: "a", Seeds: []string{""}}, "empty seed")
	f(Config{NodeName: "a", Meta: map[string]string{"big": strings.Repeat("x", 600)}}, "meta longer than 512")
	if err := (Config{NodeName: "a", Meta: map[string]string{"big": strings.Repeat("x", 600)}}).Validate(); !errors.Is(err, ErrMetaTooLong) {
		t.Errorf("err = %v, want ErrMetaTooLong", err)
	}
}

func TestConfigTimings(t *testing.T) {
	mc := Config{NodeName: "a", ProbeInterval: testProbe}.memberlistConfig()
	if mc.ProbeInterval != testProbe || mc.ProbeTimeout >= testProbe || mc.GossipInterval > testProbe {
		t.Errorf("probe %s timeout %s gossip %s", mc.ProbeInterval, mc.ProbeTimeout, mc.GossipInterval)
	}
	if mc.BindAddr != "127.0.0.1" {
		t.Errorf("default bind addr %q", mc.BindAddr)
	}
	lan := Config{NodeName: "a"}.memberlistConfig()
	if lan.ProbeInterval != time.Second || lan.ProbeTimeout != 500*time.Millisecond {
		t.Errorf("LAN defaults changed: probe %s timeout %s", lan.ProbeInterval, lan.ProbeTimeout)
	}
}

func nextEvent(t *testing.T, ch <-chan Event, within time.Duration) Event {
	t.Helper()
	select {
	case e, ok := <-ch:
		if !ok {
			t.Fatal("watch channel closed")
		}
		return e
	case <-time.After(within):
		t.Fatal("no event")
	}
	return Event{}
}

func isClosed(ch <-chan Event) bool {
	select {
	case _, ok := <-ch:
		return !ok
	case <-time.After(time.Second):
		return false
	}
}

// A fan-out node joins to see the ring but owns no keys; a node whose seed
// list names itself still joins.
func TestOwnsKeepsWatchersOffTheRing(t *testing.T) {
	t.Parallel()
	nodes, _ := startCluster(t, 2)
	pushersOnly := func(m Member) bool { return m.Meta["push"] != "" }
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	watcher, err := Join(ctx, Config{
		NodeName: "fanout-0", ProbeInterval: testProbe, Owns: pushersOnly,
		Seeds: []string{nodes[0].Addr()},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = watcher.Close() })
	self, err := Join(ctx, Config{NodeName: "solo", Owns: pushersOnly, Meta: map[string]string{"push": "127.0.0.1:1"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = self.Close() })
	again, err := Join(ctx, Config{NodeName: "solo-2", Owns: pushersOnly, Seeds: []string{self.Addr()}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = again.Close() })

	// Every member has meta "http" but none has "push": the watcher's ring
	// stays empty although it sees all three members.
	deadline := time.Now().Add(5 * time.Second)
	for len(watcher.Members()) != 3 {
		if time.Now().After(deadline) {
			t.Fatalf("watcher sees %v", watcher.Members())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := watcher.Hash().Nodes(); len(got) != 0 {
		t.Fatalf("watcher's ring = %v, want empty (no member has push meta)", got)
	}
	if watcher.Owner("k") != "" {
		t.Fatal("an empty ring owns a key")
	}
	waitMembers(t, []*Ring{self, again}, []string{"solo"}, 5*time.Second)
	if len(again.Members()) != 2 {
		t.Fatalf("solo-2 sees %v", again.Members())
	}
}
