package bench

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestTimersBenchMeasuresEmbedded runs the timers bench small on the
// embedded default with the real binaries, so the harness stays correct:
// every due message fired once and pushed once, in both phases, with the
// waiting runs loaded in the second.
func TestTimersBenchMeasuresEmbedded(t *testing.T) {
	testTimersBench(t, false)
}

// TestTimersBenchMeasuresEmbeddedJourneys is the same with journey
// enrolments waiting and firing (TimersConfig.Journeys).
func TestTimersBenchMeasuresEmbeddedJourneys(t *testing.T) {
	testTimersBench(t, true)
}

func testTimersBench(t *testing.T, journeys bool) {
	dir := buildBinaries(t)
	results, err := RunTimers(context.Background(), TimersConfig{
		Config: Config{Modes: []string{Embedded}, Relaybell: filepath.Join(dir, "relaybell"), FakePush: filepath.Join(dir, "fakepush")},
		Due:    50, Waiting: 500, Spread: 500 * time.Millisecond, Journeys: journeys,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 1 {
		t.Fatalf("results %+v", results)
	}
	r := results[0]
	b, l := r.Baseline, r.Loaded
	kind := "automation"
	if journeys {
		kind = "journey"
	}
	if r.Mode != Embedded || r.Kind != kind || b.Waiting != 50 || l.Waiting != 550 || b.Fired != 50 || l.Fired != 50 {
		t.Fatalf("result %+v", r)
	}
	for _, p := range []TimersPhase{b, l} {
		if p.Stored[0] > p.Stored[1] || p.Stored[1] > p.Stored[2] || p.Pushed[2] <= 0 || p.StoreCPU <= 0 || p.PushedPerSec <= 0 || p.RSSMiB["relaybell"] <= 0 {
			t.Fatalf("phase %+v", p)
		}
	}
	report := TimersReport(results)
	if !strings.Contains(report, "embedded  loaded") || !strings.Contains(report, "embedded  baseline") ||
		strings.Contains(report, "journey enrolments") != journeys {
		t.Fatalf("report:\n%s", report)
	}
	t.Log("\n" + report)
}
