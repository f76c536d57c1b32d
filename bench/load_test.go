package bench

import (
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	ms := time.Millisecond
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = time.Duration(i+1) * ms
	}
	f := func(sorted []time.Duration, p float64, want time.Duration) {
		t.Helper()
		if got := percentile(sorted, p); got != want {
			t.Fatalf("percentile(%d values, %v) = %v, want %v", len(sorted), p, got, want)
		}
	}
	f(nil, 99, 0)
	f([]time.Duration{7 * ms}, 50, 7*ms)
	f([]time.Duration{7 * ms}, 99, 7*ms)
	f(hundred, 50, 50*ms)
	f(hundred, 99, 99*ms) // not 100: 99 of the 100 are at or below 99 ms
	f(hundred, 100, 100*ms)
	f(hundred, 0, ms)
	f(hundred[:10], 99, 10*ms) // of ten, the p99 is the largest
	f(hundred[:10], 50, 5*ms)
	f(hundred[:3], 50, 2*ms)
}

func TestLoadStepSchedule(t *testing.T) {
	s := loadStep{rate: 3, warmup: 500 * time.Millisecond, measure: 2 * time.Second}
	if got := s.total(); got != 7 { // 2.5 s at 3 a second
		t.Fatalf("total = %d, want 7", got)
	}
	want := []time.Duration{0, 333333333, 666666666, time.Second, 1333333333, 1666666666, 2 * time.Second}
	for i, w := range want {
		if got := s.due(i); got != w {
			t.Fatalf("due(%d) = %v, want %v", i, got, w)
		}
	}
}

func TestSummarize(t *testing.T) {
	ms := time.Millisecond
	shots := []shot{
		// The warm-up's, not counted (but sent).
		{due: 0, sent: true, latency: 500 * ms, err: "status 500"},
		{due: 500 * ms, sent: true, latency: 900 * ms, conversion: true, credited: true},
		// Measured from 1 s on.
		{due: 1000 * ms, sent: true, lag: 1 * ms, latency: 4 * ms, conversion: true, credited: true},
		{due: 1250 * ms, sent: true, lag: 2 * ms, latency: 2 * ms, conversion: true},
		{due: 1500 * ms, sent: true, lag: 3 * ms, latency: 30 * ms, err: "status 503: busy"},
		{due: 1750 * ms, sent: true, lag: 4 * ms, latency: 8 * ms},
		{due: 2000 * ms, sent: true, lag: 5 * ms, latency: 1 * ms},
		{due: 2250 * ms, err: "not sent: the generator was 2s behind"},
	}
	got := summarize(4, time.Second, shots)
	want := Step{
		Rate: 4, Requests: 6, Errors: 2, FirstError: "status 503: busy",
		P50: 2 * ms, P99: 8 * ms, Max: 8 * ms, LagP99: 5 * ms,
		Conversions: 2, Credited: 1, Sent: 7,
		// 4 answered from the first due (1 s) to the last answer (2 s + 1 ms).
		Achieved: 4 / (1001 * ms).Seconds(),
	}
	if got.Rate != want.Rate || got.Requests != want.Requests || got.Errors != want.Errors || got.FirstError != want.FirstError ||
		got.P50 != want.P50 || got.P99 != want.P99 || got.Max != want.Max || got.LagP99 != want.LagP99 ||
		got.Conversions != want.Conversions || got.Credited != want.Credited || got.Sent != want.Sent || got.Achieved != want.Achieved {
		t.Fatalf("summarize:\n got %+v\nwant %+v", got, want)
	}
	if got.Pass(20 * ms) {
		t.Fatal("a step with errors passed")
	}
	if (Step{Requests: 6, P99: 19 * ms}).Pass(20*ms) != true || (Step{Requests: 6, P99: 20 * ms}).Pass(20*ms) ||
		(Step{}).Pass(20*ms) {
		t.Fatal("Pass: p99 must be under the target, with requests and no errors")
	}
	if empty := summarize(4, time.Second, shots[:2]); empty.Requests != 0 || empty.Sent != 2 || empty.Achieved != 0 || empty.P99 != 0 {
		t.Fatalf("warm-up only: %+v", empty)
	}
}

// The timers bench's quantiles are the p50, p99 and max.
func TestQuantiles(t *testing.T) {
	var d []time.Duration
	for i := range 1000 {
		d = append(d, time.Duration(1000-i)*time.Millisecond)
	}
	if got, want := quantiles(d), [3]time.Duration{500 * time.Millisecond, 990 * time.Millisecond, time.Second}; got != want {
		t.Fatalf("quantiles = %v, want %v", got, want)
	}
}

func TestRowsOf(t *testing.T) {
	if got, want := rowsOf(2, 2, 1, "0"), "($1, 0, $2), ($3, 0, $4)"; got != want {
		t.Fatalf("rowsOf = %q, want %q", got, want)
	}
	if got, want := rowsOf(1, 3, 1, "0", 1, "'a'"), "($1, 0, 'a', $2, $3)"; got != want {
		t.Fatalf("rowsOf = %q, want %q", got, want)
	}
	if got, want := placeholders(2, 3), "$2, $3, $4"; got != want {
		t.Fatalf("placeholders = %q, want %q", got, want)
	}
}
