package bench

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
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
	t.Log(r)
}
