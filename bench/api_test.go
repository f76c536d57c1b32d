package bench

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestAPIBenchMeasuresEmbedded runs the API bench on the embedded default
// with the real binaries at tiny rates, so the harness itself stays
// correct: every route measured, every request answered as expected, and
// every transactional send's push arriving at the fake push service.
func TestAPIBenchMeasuresEmbedded(t *testing.T) {
	dir := buildBinaries(t)
	results, err := RunAPI(context.Background(), APIConfig{
		Config: Config{
			Modes: []string{Embedded}, Relaybell: filepath.Join(dir, "relaybell"), FakePush: filepath.Join(dir, "fakepush"),
		},
		Websites: 3, People: 5, Rates: []int{40}, SendRates: []int{8},
		Warmup: 250 * time.Millisecond, Step: time.Second, Target: time.Minute, SendTarget: time.Minute,
		// A slow or busy machine: every push is waited for.
		PushWait: 3 * time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 1 {
		t.Fatalf("results %+v", results)
	}
	r := results[0]
	if r.Mode != Embedded || r.Websites != 3 || r.APIs != 1 || len(r.Routes) != len(APIRoutes) {
		t.Fatalf("result %+v", r)
	}
	// The load generator's own CPU is not checked: a few requests take it
	// less than /proc's 10 ms tick.
	for i, rt := range r.Routes {
		if rt.Route != APIRoutes[i] || len(rt.Steps) != 1 {
			t.Fatalf("route %d: %+v", i, rt)
		}
		s := rt.Steps[0]
		if s.Errors != 0 || s.Requests == 0 || s.P50 <= 0 || s.P50 > s.P99 || s.P99 > s.P999 || s.P999 > s.Max ||
			s.CPU["relaybell"] <= 0 || s.PerRequest() <= 0 {
			t.Fatalf("%s: step %+v", rt.Route, s)
		}
		if rt.Best != s.Rate {
			t.Fatalf("%s: best %d of a step that passed at %d/s", rt.Route, rt.Best, s.Rate)
		}
	}
	// Every transactional send's push arrived (no errors above), and the
	// step waited for all of them before it ended.
	if tx := r.Routes[len(r.Routes)-1].Steps[0]; tx.Rate != 8 || tx.Sent < 8 || tx.Drain <= 0 {
		t.Fatalf("transactional step %+v", tx)
	}
	report := APIReport(results)
	for _, route := range APIRoutes {
		if !strings.Contains(report, "embedded "+route+":") {
			t.Fatalf("report without %s:\n%s", route, report)
		}
	}
	t.Log("\n" + report)
}

func TestParseRoutes(t *testing.T) {
	got, err := ParseRoutes("subscribe, send")
	if err != nil || len(got) != 2 || got[0] != RouteSubscribe || got[1] != RouteTransactional {
		t.Fatalf("ParseRoutes = %v, %v", got, err)
	}
	if _, err := ParseRoutes("subscribe,teleport"); err == nil {
		t.Fatal("an unknown route parsed")
	}
}
