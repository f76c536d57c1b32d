package bench

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestBenchMeasuresEmbeddedBroadcast runs the bench harness on a small
// audience with the real binaries, so the harness itself stays correct.
func TestBenchMeasuresEmbeddedBroadcast(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binaries")
	}
	dir := t.TempDir()
	for _, cmd := range []string{"relaybell", "fakepush"} {
		if out, err := exec.Command("go", "build", "-o", filepath.Join(dir, cmd), "../cmd/"+cmd).CombinedOutput(); err != nil {
			t.Fatalf("building %s: %v\n%s", cmd, err, out)
		}
	}
	results, err := Run(context.Background(), Config{
		Modes: []string{Embedded}, Audiences: []int{300},
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
	var paced float64
	for _, v := range r.Pace {
		paced += v
	}
	if paced < 99.99 || paced > 100.01 {
		t.Fatalf("pace %v adds up to %v%%", r.Pace, paced)
	}
	t.Log(r)
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
