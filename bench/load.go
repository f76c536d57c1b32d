package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
)

// The events bench's load generator: open loop, so that a slow answer does
// not hold back the requests after it (no coordinated omission). Request i
// of a step is due at start + i/rate whatever happened before it, goes out
// in a goroutine of its own, and its latency runs from when it was due to
// when its answer was read: time spent waiting for the generator itself (a
// late timer, every slot in flight taken) counts as latency too.

// loadStep is one step of open-loop load: requests at a fixed rate for
// warmup and then for measure, only the latter's counted.
type loadStep struct {
	rate    int           // requests a second
	warmup  time.Duration // sent, not counted
	measure time.Duration // sent and counted
	// inFlight bounds the requests waiting for an answer; when all are
	// taken the next request waits for one, its latency running.
	inFlight int
	// maxLag gives up on the step when a request could only be sent this
	// late: the requests not sent count as errors.
	maxLag time.Duration
}

// total is how many requests the step sends, warm-up included.
func (s loadStep) total() int {
	return int(int64(s.rate) * int64(s.warmup+s.measure) / int64(time.Second))
}

// due is when request i is due, after the step's start.
func (s loadStep) due(i int) time.Duration {
	return time.Duration(int64(i) * int64(time.Second) / int64(s.rate))
}

// shot is one request as it went.
type shot struct {
	due     time.Duration // when it was due, after the step's start
	sent    bool          // false: given up before it was sent
	lag     time.Duration // from due to sent: the generator's own delay
	latency time.Duration // from due to the answer read
	err     string        // why it failed: a transport error or an unexpected status; "" when it did not
	// conversion and credited are what a 202 answered: the event counted as
	// a conversion, and one credited to a notification.
	conversion, credited bool
}

// request is one event to send: where, and with what body.
type request struct {
	url  string
	body []byte
	// registration: a browser's registration (SDK route, no key), which
	// answers 201 or 200; otherwise an event, which answers 202.
	registration bool
}

// newLoadClient is the load generator's HTTP client: fasthttp's, which
// costs this machine about 250 µs of CPU a request against net/http's 360
// (most of either is system calls), CPU the generator takes from the
// deployment it measures.
func newLoadClient(inFlight int, timeout time.Duration) *fasthttp.Client {
	return &fasthttp.Client{
		Name: "relaybell-bench", MaxConnsPerHost: inFlight, MaxConnWaitTimeout: timeout,
		ReadTimeout: timeout, WriteTimeout: timeout, MaxIdleConnDuration: time.Minute,
	}
}

// fire runs the step: reqs[i] is sent when due (len(reqs) is s.total()).
func fire(ctx context.Context, hc *fasthttp.Client, apiKey string, s loadStep, reqs []request) []shot {
	shots := make([]shot, len(reqs))
	slots := make(chan struct{}, s.inFlight)
	var wg sync.WaitGroup
	start := time.Now().Add(10 * time.Millisecond)
	for i := range reqs {
		shots[i].due = s.due(i)
		if wait := time.Until(start.Add(shots[i].due)); wait > 0 {
			time.Sleep(wait)
		}
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
		}
		lag := time.Since(start) - shots[i].due
		if ctx.Err() != nil || lag > s.maxLag {
			for j := i; j < len(reqs); j++ {
				shots[j].due = s.due(j)
				shots[j].err = fmt.Sprintf("not sent: the generator was %s behind", lag.Round(time.Millisecond))
			}
			break
		}
		shots[i].sent, shots[i].lag = true, lag
		wg.Add(1)
		go func(sh *shot, r request) {
			defer wg.Done()
			defer func() { <-slots }()
			post(hc, apiKey, r, sh)
			sh.latency = time.Since(start) - sh.due
		}(&shots[i], reqs[i])
	}
	wg.Wait()
	return shots
}

// post sends one event and notes in sh how it went.
func post(hc *fasthttp.Client, apiKey string, r request, sh *shot) {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(r.url)
	req.Header.SetMethod(fasthttp.MethodPost)
	req.Header.SetContentType("application/json")
	if !r.registration {
		req.Header.Set("Authorization", "Bearer "+apiKey)
	}
	req.SetBodyRaw(r.body)
	if err := hc.Do(req, resp); err != nil {
		sh.err = err.Error()
		return
	}
	if r.registration {
		if c := resp.StatusCode(); c != fasthttp.StatusOK && c != fasthttp.StatusCreated {
			sh.err = fmt.Sprintf("status %d: %.200s", c, resp.Body())
		}
		return
	}
	if resp.StatusCode() != fasthttp.StatusAccepted {
		sh.err = fmt.Sprintf("status %d: %.200s", resp.StatusCode(), resp.Body())
		return
	}
	var ans struct {
		IsConversion bool            `json:"isConversion"`
		Attribution  json.RawMessage `json:"attribution"`
	}
	if err := json.Unmarshal(resp.Body(), &ans); err != nil {
		sh.err = "answer: " + err.Error()
		return
	}
	sh.conversion = ans.IsConversion
	sh.credited = len(ans.Attribution) > 0 && string(ans.Attribution) != "null"
}

// Step is what one step of the events bench measured, over the requests
// due after its warm-up.
type Step struct {
	Rate     int     // requests a second asked for
	Achieved float64 // requests answered a second: Requests over the time from the first one due to the last answer
	Requests int     // requests due after the warm-up
	Errors   int     // of them: no 202 (transport errors, other statuses, not sent at all)
	// FirstError is the first error's text, for the report.
	FirstError string
	// P50, P99 and Max are latencies from when a request was due to its
	// answer, of the requests answered 202.
	P50, P99, Max time.Duration
	// LagP99 is the 99th percentile of the generator's own delay in
	// sending a request; it is part of the latencies.
	LagP99 time.Duration
	// Conversions and Credited count the 202 answers that said the event
	// was a conversion, and one credited to a notification.
	Conversions, Credited int
	// CPU is the processor seconds each process used during the step
	// (warm-up included): the RelayBell processes, the engines the bench
	// started, PostgreSQL, and "bench", this process, the load generator.
	CPU map[string]float64
	// BusyCores is the machine's average number of busy cores during it.
	BusyCores float64
	// IdleCores is the deployment's cores at rest, measured just before
	// the step (the bench's, and the embedded mode's PostgreSQL, aside).
	IdleCores float64
	// Sent is how many requests the step sent, warm-up included, and
	// Elapsed how long it ran.
	Sent    int
	Elapsed time.Duration
}

// Pass tells whether the step kept its p99 under target with no errors.
func (s Step) Pass(target time.Duration) bool {
	return s.Requests > 0 && s.Errors == 0 && s.P99 < target
}

// summarize makes a Step of the shots due from warmup on.
func summarize(rate int, warmup time.Duration, shots []shot) Step {
	st := Step{Rate: rate}
	var lat, lag []time.Duration
	first, last := time.Duration(-1), time.Duration(0)
	for _, sh := range shots {
		if sh.sent {
			st.Sent++
		}
		if sh.due < warmup {
			continue
		}
		st.Requests++
		if first < 0 {
			first = sh.due
		}
		if sh.sent {
			lag = append(lag, sh.lag)
			last = max(last, sh.due+sh.latency)
		}
		if sh.err != "" {
			st.Errors++
			if st.FirstError == "" {
				st.FirstError = sh.err
			}
			continue
		}
		lat = append(lat, sh.latency)
		if sh.conversion {
			st.Conversions++
		}
		if sh.credited {
			st.Credited++
		}
	}
	slices.Sort(lat)
	slices.Sort(lag)
	st.P50, st.P99 = percentile(lat, 50), percentile(lat, 99)
	if len(lat) > 0 {
		st.Max = lat[len(lat)-1]
	}
	st.LagP99 = percentile(lag, 99)
	if answered := st.Requests - st.Errors; answered > 0 && last > first {
		st.Achieved = float64(answered) / (last - first).Seconds()
	}
	return st
}

// percentile is the nearest-rank p-th percentile of sorted: the smallest
// value at least p% of them are at or below; 0 for none.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p*float64(len(sorted))/100 - 1e-9))
	return sorted[min(max(rank, 1), len(sorted))-1]
}
