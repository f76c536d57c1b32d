package bench

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestEventsBenchMeasuresEmbedded runs one short step of the events bench
// on the embedded default with the real binaries, so the harness itself
// stays correct: every event answered 202, and the purchases of people who
// had the broadcast delivered credited to it.
func TestEventsBenchMeasuresEmbedded(t *testing.T) {
	dir := buildBinaries(t)
	results, err := RunEvents(context.Background(), EventsConfig{
		Config: Config{
			Modes: []string{Embedded}, Relaybell: filepath.Join(dir, "relaybell"), FakePush: filepath.Join(dir, "fakepush"),
		},
		Audience: 50, Rates: []int{200}, Warmup: 200 * time.Millisecond, Step: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 1 || len(results[0].Steps) != 1 {
		t.Fatalf("results %+v", results)
	}
	r, s := results[0], results[0].Steps[0]
	if r.Mode != Embedded || r.Audience != 50 || r.People != 40 || r.APIs != 1 || r.Target != DefaultEventTarget {
		t.Fatalf("result %+v", r)
	}
	if s.Rate != 200 || s.Requests != 200 || s.Sent != 240 || s.Errors != 0 || s.Achieved <= 0 ||
		s.P50 <= 0 || s.P50 > s.P99 || s.P99 > s.Max || s.CPU["relaybell"] <= 0 || s.CPU["bench"] <= 0 {
		t.Fatalf("step %+v", s)
	}
	// Purchases of known people are the conversions (cart.updated with a
	// value is not one), each credited to the delivered broadcast.
	if s.Conversions == 0 || s.Credited != s.Conversions {
		t.Fatalf("%d conversions, %d credited", s.Conversions, s.Credited)
	}
	if r.Best != 200 && r.Best != 0 || (r.Best == 200) != s.Pass(r.Target) {
		t.Fatalf("best %d of step %+v", r.Best, s)
	}
	report := EventsReport(results)
	if !strings.Contains(report, "cores, shared by the load generator") || !strings.Contains(report, "embedded       200") {
		t.Fatalf("report:\n%s", report)
	}
	t.Log("\n" + report)
}

func TestNextRate(t *testing.T) {
	target := 20 * time.Millisecond
	pass := func(rate int) Step { return Step{Rate: rate, Requests: 1, P99: time.Millisecond} }
	fail := func(rate int) Step { return Step{Rate: rate, Requests: 1, P99: target} }
	errs := func(rate int) Step { return Step{Rate: rate, Requests: 1, Errors: 1, P99: time.Millisecond} }
	rates := []int{100, 200, 400, 800}
	f := func(refine int, done []Step, want int) {
		t.Helper()
		if got := nextRate(rates, refine, done, target); got != want {
			t.Fatalf("after %v (refine %d): next %d, want %d", done, refine, got, want)
		}
	}
	f(2, nil, 100)
	f(2, []Step{pass(100)}, 200)
	f(2, []Step{pass(100), pass(200), pass(400), pass(800)}, 0) // all passed
	f(2, []Step{fail(100)}, 0)                                  // nothing to refine below the first
	f(2, []Step{errs(100)}, 0)
	// 400 failed: two steps between 200 and 400, rising, until one fails.
	f(2, []Step{pass(100), pass(200), fail(400)}, 266)
	f(2, []Step{pass(100), pass(200), errs(400)}, 266)
	f(2, []Step{pass(100), pass(200), fail(400), pass(266)}, 333)
	f(2, []Step{pass(100), pass(200), fail(400), pass(266), pass(333)}, 0)
	f(2, []Step{pass(100), pass(200), fail(400), fail(266)}, 0)
	f(2, []Step{pass(100), pass(200), fail(400), pass(266), errs(333)}, 0)
	f(0, []Step{pass(100), pass(200), fail(400)}, 0)
	f(3, []Step{pass(100), pass(200), fail(400)}, 250)
	// No room between two rates a step apart.
	rates = []int{100, 101}
	f(2, []Step{pass(100), fail(101)}, 0)
}

func TestBest(t *testing.T) {
	target := 20 * time.Millisecond
	steps := []Step{
		{Rate: 100, Requests: 1, P99: time.Millisecond},
		{Rate: 200, Requests: 1, P99: 3 * time.Millisecond},
		{Rate: 400, Requests: 1, P99: 25 * time.Millisecond},
		{Rate: 266, Requests: 1, P99: 19 * time.Millisecond},
		{Rate: 333, Requests: 1, P99: 5 * time.Millisecond, Errors: 1},
	}
	if got := best(steps, target); got != 266 {
		t.Fatalf("best = %d, want 266", got)
	}
	if got := best(steps[2:3], target); got != 0 {
		t.Fatalf("best of a failed step = %d, want 0", got)
	}
}

func TestEventMix(t *testing.T) {
	total := 0
	for _, k := range eventMix {
		total += k.percent
	}
	if total != 100 {
		t.Fatalf("the mix adds up to %d%%", total)
	}
	const n, people = 20_000, 800
	rng := rand.New(rand.NewPCG(1, 2))
	reqs := eventRequests(rng, []string{"http://a", "http://b"}, n, people)
	type kind struct {
		name            string
		person, product bool
	}
	counts := map[kind]int{}
	for i, r := range reqs {
		if want := []string{"http://a", "http://b"}[i%2] + "/api/v1/events"; r.url != want {
			t.Fatalf("request %d goes to %s, want %s", i, r.url, want)
		}
		var ev struct {
			Event      string `json:"event"`
			ExternalID string `json:"externalId"`
			Properties struct {
				ProductID string   `json:"productId"`
				Value     *float64 `json:"value"`
			} `json:"properties"`
		}
		if err := json.Unmarshal(r.body, &ev); err != nil {
			t.Fatal(err)
		}
		if ev.ExternalID != "" {
			var id int
			if !strings.HasPrefix(ev.ExternalID, "u-") || json.Unmarshal([]byte(ev.ExternalID[2:]), &id) != nil || id < 0 || id >= people {
				t.Fatalf("externalId %q names nobody subscribed", ev.ExternalID)
			}
		}
		hasValue := ev.Properties.Value != nil && *ev.Properties.Value > 0
		if hasValue != slices.Contains([]string{"purchase", "cart.updated"}, ev.Event) {
			t.Fatalf("%s with value %v", ev.Event, ev.Properties.Value)
		}
		counts[kind{ev.Event, ev.ExternalID != "", ev.Properties.ProductID != ""}]++
	}
	for _, k := range eventMix {
		got := float64(counts[kind{k.name, k.person, k.product}]) * 100 / n
		if got < float64(k.percent)-1 || got > float64(k.percent)+1 {
			t.Errorf("%s (person %v): %.1f%% of the events, want %d%%", k.name, k.person, got, k.percent)
		}
	}
	if len(counts) != len(eventMix) {
		t.Errorf("kinds drawn: %v", counts)
	}
	// The same seed draws the same events.
	again := eventRequests(rand.New(rand.NewPCG(1, 2)), []string{"http://a", "http://b"}, n, people)
	if !slices.EqualFunc(reqs, again, func(a, b request) bool { return a.url == b.url && string(a.body) == string(b.body) }) {
		t.Fatal("the same seed drew other events")
	}
}
