package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// The API bench: the REST routes a customer's servers and browsers call
// most, and the transactional path from POST /notifications to the push,
// under open-loop load from vegeta at rising fixed rates, on the same
// deployments as the broadcast bench.

// API routes the bench measures, in the order run.
const (
	RouteSubscribe     = "POST /subscriptions"   // the SDK's registration, a new browser each
	RouteEvents        = "POST /events"          // the events bench's mix, people of the website
	RouteNotify        = "POST /notifications"   // a send to one externalId
	RouteList          = "GET /notifications"    // the list's first page
	RoutePing          = "POST /pings/delivered" // a browser's delivery receipt, a new one each, a few sends' at a time
	RouteTransactional = "POST → push (to one)"  // the transactional path, POST to the push arriving
)

// APIRoutes are every route of an API run, in the order run.
var APIRoutes = []string{RouteSubscribe, RouteEvents, RouteNotify, RouteList, RoutePing, RouteTransactional}

// Defaults of an API run.
const (
	DefaultAPIWebsites   = 100
	DefaultAPIPeople     = 20 // people with a browser per website, for events and sends to one
	DefaultAPITarget     = 50 * time.Millisecond
	DefaultAPISendTarget = 100 * time.Millisecond
	DefaultAPIWarmup     = time.Second
	DefaultAPIStep       = 3 * time.Second
	// apiTimeout bounds one request.
	apiTimeout = 10 * time.Second
	// DefaultAPIPushWait bounds the wait for the pushes of a
	// transactional step after its last answer: a push later than that
	// counts as an error.
	DefaultAPIPushWait = 10 * time.Second
	// apiDrainMax bounds the wait, after a step of sends, for every push
	// they make to arrive, so that the next step starts on an idle
	// deployment.
	apiDrainMax = 90 * time.Second
)

// DefaultAPIRates are the rates the REST routes climb by default.
func DefaultAPIRates() []int { return []int{100, 200, 400, 800, 1600, 3200, 6400} }

// DefaultAPISendRates are the rates the transactional path climbs by
// default.
func DefaultAPISendRates() []int { return []int{5, 10, 20, 40, 80, 160, 320} }

// APIConfig describes an API run. Of Config, Modes, Relaybell, FakePush,
// ClusterScript, Postgres, WorkDir, Log and PushHTTP1 apply.
type APIConfig struct {
	Config
	// Websites is how many websites the requests are spread over (default
	// 100), People how many people with a browser each has (default 20).
	Websites, People int
	// Routes are the routes measured, of APIRoutes (default all).
	Routes []string
	// Rates are the REST routes' steps, SendRates the transactional
	// path's, a second, run in order until a step does not pass.
	Rates, SendRates []int
	// Warmup is each step's time at its rate before it is measured
	// (default 1 s), Step its measured time (default 3 s).
	Warmup, Step time.Duration
	// Target is the p99 a REST route's step must stay under (default 50
	// ms), SendTarget the transactional path's (default 100 ms).
	Target, SendTarget time.Duration
	// PushWait is how long after a transactional step's last answer its
	// pushes may still arrive (default DefaultAPIPushWait).
	PushWait time.Duration
}

// APIStep is what one step of a route measured, over the requests due
// after its warm-up.
type APIStep struct {
	Rate     int     // requests a second asked for
	Achieved float64 // answered as expected a second, from the first measured request sent to the last answer
	Requests int     // requests sent after the warm-up
	// Errors counts those that failed: a transport error, an unexpected
	// status, or for the transactional path no push arriving.
	Errors     int
	FirstError string
	// Latencies of the requests that did not fail: from the request sent
	// to its answer, or for the transactional path to its push arriving at
	// the fake push service.
	P50, P99, P999, Max time.Duration
	// CPU is the processor seconds each process used during the step,
	// warm-up included (and, for the transactional path, until the last
	// push arrived): the RelayBell processes, the engines the bench
	// started, PostgreSQL (cluster), the fake push service ("fakepush")
	// and the load generator ("bench"). PostgreSQL's is its backends serving
	// the deployment's connections.
	CPU       map[string]float64
	BusyCores float64
	Sent      int // requests sent, warm-up included
	Elapsed   time.Duration
	// Drain is, for the steps of sends, the time from the last answer
	// until every push of the step's sends had arrived (CPU and Elapsed
	// run until then); -1 when they had not after apiDrainMax.
	Drain time.Duration
	// Idle is the deployment's busy cores by process when it had nothing
	// to do, measured once before the first step: what PerRequest takes
	// off.
	Idle map[string]float64
}

// Pass tells whether the step kept its p99 under target with no errors.
func (s APIStep) Pass(target time.Duration) bool {
	return s.Requests > 0 && s.Errors == 0 && s.P99 < target
}

// deploymentCPU is the CPU of RelayBell and its engines in the step: every
// process but the load generator and the fake push service.
func (s APIStep) deploymentCPU() float64 {
	sum := 0.0
	for name, sec := range s.CPU {
		if name != "bench" && name != "fakepush" {
			sum += sec
		}
	}
	return sum
}

// PerRequest is the CPU of RelayBell and its engines per request sent,
// in µs, less what they use idle (their polls, ClickHouse's merges) over
// the step's time.
func (s APIStep) PerRequest() float64 {
	if s.Sent == 0 {
		return 0
	}
	idle := 0.0
	for _, c := range s.Idle {
		idle += c
	}
	return max(s.deploymentCPU()-idle*s.Elapsed.Seconds(), 0) / float64(s.Sent) * 1e6
}

// perProcess is PerRequest process by process, then the load generator's
// and the fake push service's apart.
func (s APIStep) perProcess() string {
	var parts, apart []string
	for _, name := range slices.Sorted(maps.Keys(s.CPU)) {
		if cpu := s.CPU[name] - s.Idle[name]*s.Elapsed.Seconds(); s.Sent > 0 && cpu > 0 {
			part := fmt.Sprintf("%s %.0f", name, cpu/float64(s.Sent)*1e6)
			if name == "bench" || name == "fakepush" {
				apart = append(apart, part)
			} else {
				parts = append(parts, part)
			}
		}
	}
	out := strings.Join(parts, ", ")
	if len(apart) > 0 {
		out += "; not counted: " + strings.Join(apart, ", ")
	}
	return out
}

// APIRoute is one route's steps in a mode.
type APIRoute struct {
	Route  string
	Target time.Duration
	Steps  []APIStep
	Best   int // the highest rate whose step passed; 0: none did
}

// APIResult is what an API run measured in one mode.
type APIResult struct {
	Mode     string
	Websites int
	APIs     int // API nodes the requests were spread over
	Setup    time.Duration
	// Idle is the deployment's busy cores with nothing to do, by process.
	Idle   map[string]float64
	Routes []APIRoute
}

// RunAPI measures the API routes and the transactional path in each mode.
func RunAPI(ctx context.Context, cfg APIConfig) ([]APIResult, error) {
	cleanup, err := cfg.fill()
	if err != nil {
		return nil, err
	}
	defer cleanup()
	if cfg.Websites <= 0 {
		cfg.Websites = DefaultAPIWebsites
	}
	if cfg.People <= 0 {
		cfg.People = DefaultAPIPeople
	}
	if len(cfg.Routes) == 0 {
		cfg.Routes = APIRoutes
	}
	for _, r := range cfg.Routes {
		if !slices.Contains(APIRoutes, r) {
			return nil, fmt.Errorf("unknown route %q", r)
		}
	}
	if len(cfg.Rates) == 0 {
		cfg.Rates = DefaultAPIRates()
	}
	if len(cfg.SendRates) == 0 {
		cfg.SendRates = DefaultAPISendRates()
	}
	if cfg.Warmup <= 0 {
		cfg.Warmup = DefaultAPIWarmup
	}
	if cfg.Step <= 0 {
		cfg.Step = DefaultAPIStep
	}
	if cfg.Target <= 0 {
		cfg.Target = DefaultAPITarget
	}
	if cfg.SendTarget <= 0 {
		cfg.SendTarget = DefaultAPISendTarget
	}
	if cfg.PushWait <= 0 {
		cfg.PushWait = DefaultAPIPushWait
	}
	var out []APIResult
	for _, mode := range cfg.Modes {
		res, err := runAPI(ctx, cfg, mode)
		if err != nil {
			return out, fmt.Errorf("api, %s: %w", mode, err)
		}
		out = append(out, res)
	}
	return out, nil
}

// apiRun is a mode's run in progress.
type apiRun struct {
	cfg    APIConfig
	mode   string
	s      *stage
	sites  []benchWebsite
	hc     *http.Client
	others map[string]int
	serial int // numbers the fresh people of transactional steps
	// pushes is how many pushes the sends answered 202 so far make in
	// all (one person, one browser each): what the fake push service
	// counts once they all arrived.
	pushes int
	// pingEndpoints are the browsers of the first website that the ping
	// steps' receipts name (subscribed when a step first needs them).
	pingEndpoints []string
}

// pingBrowsers is how many browsers the ping steps' receipts name: the
// receipts of a step go to one send after another, pingBrowsers each, as
// a broadcast's arrive, so that they meet on its counters' row.
const pingBrowsers = 2000

func runAPI(ctx context.Context, cfg APIConfig, mode string) (APIResult, error) {
	// One key a website sends and posts thousands a second: the limits of
	// spec 8.1 are off.
	s, err := startStage(ctx, cfg.Config, mode, "api-"+mode, []string{"RELAYBELL_EVENT_RATE_LIMIT=-1", "RELAYBELL_NO_SEND_LIMITS=true"}, cfg.Config.pushSample())
	if err != nil {
		return APIResult{}, err
	}
	defer s.stop()
	res := APIResult{Mode: mode, Websites: cfg.Websites, APIs: len(s.d.apis)}
	start := time.Now()
	run := &apiRun{cfg: cfg, mode: mode, s: s, sites: []benchWebsite{s.site}}
	for i := 1; i < cfg.Websites; i++ {
		var w benchWebsite
		if err := s.api.do("POST", "/admin/v1/websites", adminToken, map[string]any{"name": "Bench " + strconv.Itoa(i), "url": "https://bench" + strconv.Itoa(i) + ".example"}, 201, &w); err != nil {
			return APIResult{}, err
		}
		run.sites = append(run.sites, w)
	}
	for _, w := range run.sites {
		if err := run.subscribePeople(ctx, w, "u-", 0, cfg.People); err != nil {
			return APIResult{}, err
		}
	}
	res.Setup = time.Since(start)
	fmt.Fprintf(cfg.Log, "api %s: %d websites, %d people with a browser each, in %s\n", mode, cfg.Websites, cfg.People, res.Setup.Round(time.Millisecond))
	if s.d.settle != nil {
		if err := s.d.settle(ctx); err != nil {
			return APIResult{}, err
		}
	}
	run.hc = &http.Client{Timeout: apiTimeout, Transport: &http.Transport{MaxIdleConnsPerHost: 1024, MaxIdleConns: 4096, IdleConnTimeout: time.Minute}}
	defer run.hc.CloseIdleConnections()
	run.others = map[string]int{"bench": os.Getpid(), "fakepush": s.fake.Pid}
	maps.Copy(run.others, s.d.others)

	if res.Idle, err = run.idle(ctx); err != nil {
		return APIResult{}, err
	}
	fmt.Fprintf(cfg.Log, "api %s: idle, the deployment's busy cores: %s\n", mode, cores(res.Idle))
	fmt.Fprintln(cfg.Log, apiStepHeader)
	for _, route := range cfg.Routes {
		rates, target := cfg.Rates, cfg.Target
		if route == RouteTransactional {
			rates, target = cfg.SendRates, cfg.SendTarget
		}
		rt := APIRoute{Route: route, Target: target}
		for rate := nextRate(rates, 0, stepsOf(rt.Steps), target); rate > 0; rate = nextRate(rates, 0, stepsOf(rt.Steps), target) {
			st, err := run.step(ctx, route, rate)
			if err != nil {
				return APIResult{}, fmt.Errorf("%s at %d/s: %w", route, rate, err)
			}
			st.Idle = res.Idle
			rt.Steps = append(rt.Steps, st)
			fmt.Fprintln(cfg.Log, st.row(mode, route))
		}
		for _, st := range rt.Steps {
			if st.Pass(target) {
				rt.Best = max(rt.Best, st.Rate)
			}
		}
		res.Routes = append(res.Routes, rt)
	}
	return res, nil
}

// stepsOf makes Steps of APIStep for nextRate, which only reads what Pass
// reads.
func stepsOf(steps []APIStep) []Step {
	out := make([]Step, len(steps))
	for i, s := range steps {
		out[i] = Step{Rate: s.Rate, Requests: s.Requests, Errors: s.Errors, P99: s.P99}
	}
	return out
}

// subscribePeople subscribes n new browsers to the website, the people
// prefix+from ... prefix+(from+n-1); it returns their browser ids on the
// fake push service, in that order, through ids when set.
func (run *apiRun) subscribePeople(ctx context.Context, w benchWebsite, prefix string, from, n int, ids ...[]string) error {
	subs, err := browsers(run.s.push, w.VAPIDPublicKey, n)
	if err != nil {
		return err
	}
	for i := range subs {
		var sub map[string]any
		if err := json.Unmarshal(subs[i], &sub); err != nil {
			return err
		}
		sub["externalId"] = prefix + strconv.Itoa(from+i)
		if len(ids) > 0 {
			ep, _ := sub["endpoint"].(string)
			ids[0][i] = ep[strings.LastIndexByte(ep, '/')+1:]
		}
		if subs[i], err = json.Marshal(sub); err != nil {
			return err
		}
	}
	return postEach(ctx, run.s.d.apis, "/api/v1/projects/"+w.ProjectID+"/subscriptions", subs, 201, nil)
}

// pingBrowsers subscribes browsers to w until the ping steps have n,
// keeping their endpoint ids.
func (run *apiRun) pingBrowsers(ctx context.Context, w benchWebsite, n int) error {
	k := n - len(run.pingEndpoints)
	if k <= 0 {
		return nil
	}
	subs, err := browsers(run.s.push, w.VAPIDPublicKey, k)
	if err != nil {
		return err
	}
	ids := make([]string, k)
	err = postEach(ctx, run.s.d.apis, "/api/v1/projects/"+w.ProjectID+"/subscriptions", subs, http.StatusCreated, func(i int, body []byte) error {
		var ans struct {
			EndpointID string `json:"endpointId"`
		}
		if err := json.Unmarshal(body, &ans); err != nil || ans.EndpointID == "" {
			return fmt.Errorf("a registration's answer without its endpoint id: %s", body)
		}
		ids[i] = ans.EndpointID
		return nil
	})
	if err != nil {
		return err
	}
	run.pingEndpoints = append(run.pingEndpoints, ids...)
	return nil
}

// step runs one step of a route at rate.
func (run *apiRun) step(ctx context.Context, route string, rate int) (APIStep, error) {
	cfg := run.cfg
	n := int(int64(rate) * int64(cfg.Warmup+cfg.Step) / int64(time.Second))
	targets, want, browserOf, err := run.targets(ctx, route, rate, n)
	if err != nil {
		return APIStep{}, err
	}
	qctx, cancel := context.WithTimeout(ctx, eventsQuietMax)
	quiet(qctx, cfg.Log)
	cancel()
	if err := ctx.Err(); err != nil {
		return APIStep{}, err
	}
	if browserOf != nil {
		if err := run.s.push.do("POST", "/arrivals", "", nil, 200, nil); err != nil {
			return APIStep{}, fmt.Errorf("the fake push service records no arrivals: %w", err)
		}
	}
	sends := route == RouteNotify || route == RouteTransactional
	cpu := startCPU(run.s.d.procs, run.others)
	storeCPU := run.s.d.startStoreCPU(ctx)
	began := time.Now()
	results := attack(ctx, run.hc, targets, rate, cfg.Warmup+cfg.Step)
	answered := time.Now()
	ok := 0
	for _, r := range results {
		if r.Code == uint16(want) {
			ok++
		}
	}
	var arrived map[string]time.Time
	if browserOf != nil {
		if arrived, err = run.arrivals(ctx, ok, answered.Add(cfg.PushWait)); err != nil {
			return APIStep{}, err
		}
	}
	drain := time.Duration(0)
	if sends {
		// Each send goes to one person with one browser; the pushes of
		// the steps before that had not arrived count too.
		run.pushes += ok
		if drain, err = run.drain(ctx, run.pushes, answered); err != nil {
			return APIStep{}, err
		}
	}
	st := summarizeAPI(rate, cfg.Warmup, results, want, browserOf, arrived, cfg.PushWait)
	st.Drain = drain
	st.Elapsed = time.Since(began)
	st.CPU, st.BusyCores = cpu()
	delete(st.CPU, "postgres") // every PostgreSQL process of the machine's, others' too
	if storeCPU != nil {
		st.CPU["postgres"] = storeCPU()
	}
	return st, ctx.Err()
}

// apiIdle is how long the deployment's idle CPU is measured.
const apiIdle = 3 * time.Second

// idle measures the busy cores of the deployment's processes while it has
// nothing to do, once the machine is quiet.
func (run *apiRun) idle(ctx context.Context) (map[string]float64, error) {
	qctx, cancel := context.WithTimeout(ctx, eventsQuietMax)
	quiet(qctx, run.cfg.Log)
	cancel()
	cpu := startCPU(run.s.d.procs, run.s.d.others)
	storeCPU := run.s.d.startStoreCPU(ctx)
	began := time.Now()
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(apiIdle):
	}
	used, _ := cpu()
	delete(used, "postgres")
	if storeCPU != nil {
		used["postgres"] = storeCPU()
	}
	sec := time.Since(began).Seconds()
	for name := range used {
		used[name] /= sec
	}
	return used, nil
}

// cores is busy cores by process, for the log and the report.
func cores(m map[string]float64) string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %.3f", name, m[name]))
	}
	return strings.Join(parts, ", ")
}

// targets are a step's n requests of route, what each must answer and,
// for the transactional path, the browser each one's push goes to by
// index (the index is the target URL's fragment).
func (run *apiRun) targets(ctx context.Context, route string, rate, n int) ([]vegeta.Target, int, []string, error) {
	apis, sites := run.s.d.apis, run.sites
	rng := rand.New(rand.NewPCG(uint64(rate), uint64(len(route))))
	out := make([]vegeta.Target, n)
	auth := func(w benchWebsite) http.Header {
		return http.Header{"Authorization": {"Bearer " + w.APIKey}, "Content-Type": {"application/json"}}
	}
	send := func(w benchWebsite, person string) []byte {
		b, _ := json.Marshal(map[string]any{"title": "Your order shipped", "body": "Order " + strconv.Itoa(rng.IntN(1_000_000)) + " is on its way", "externalId": person})
		return b
	}
	switch route {
	case RouteSubscribe:
		// New browsers, spread over the websites: anonymous registrations,
		// as the SDK makes them before a site links a person.
		per := (n + len(sites) - 1) / len(sites)
		i := 0
		for k, w := range sites {
			subs, err := browsers(run.s.push, w.VAPIDPublicKey, min(per, n-i))
			if err != nil {
				return nil, 0, nil, err
			}
			for _, sub := range subs {
				out[i] = vegeta.Target{Method: "POST", URL: apis[i%len(apis)] + "/api/v1/projects/" + w.ProjectID + "/subscriptions",
					Body: sub, Header: http.Header{"Content-Type": {"application/json"}}}
				i++
			}
			if i == n || k == len(sites)-1 {
				break
			}
		}
		// Spread over time too: not one website after another.
		rng.Shuffle(n, func(a, b int) { out[a], out[b] = out[b], out[a] })
		return out, http.StatusCreated, nil, nil
	case RouteEvents:
		for i := range out {
			w := sites[rng.IntN(len(sites))]
			out[i] = vegeta.Target{Method: "POST", URL: apis[i%len(apis)] + "/api/v1/events", Body: eventBody(rng, run.cfg.People), Header: auth(w)}
		}
		return out, http.StatusAccepted, nil, nil
	case RouteNotify:
		for i := range out {
			w := sites[rng.IntN(len(sites))]
			out[i] = vegeta.Target{Method: "POST", URL: apis[i%len(apis)] + "/api/v1/notifications",
				Body: send(w, "u-"+strconv.Itoa(rng.IntN(run.cfg.People))), Header: auth(w)}
		}
		return out, http.StatusAccepted, nil, nil
	case RouteList:
		for i := range out {
			w := sites[rng.IntN(len(sites))]
			out[i] = vegeta.Target{Method: "GET", URL: apis[i%len(apis)] + "/api/v1/notifications", Header: auth(w)}
		}
		return out, http.StatusOK, nil, nil
	case RoutePing:
		// Each receipt new: a browser's first for a send. A new send
		// (to one person, pushed once) for every pingBrowsers receipts.
		w := sites[0]
		if err := run.pingBrowsers(ctx, w, min(n, pingBrowsers)); err != nil {
			return nil, 0, nil, err
		}
		eps := run.pingEndpoints
		var notificationID string
		for i := range out {
			if i%len(eps) == 0 {
				var sent struct {
					NotificationID string `json:"notificationId"`
				}
				if err := run.s.api.do("POST", "/api/v1/notifications", w.APIKey, map[string]any{"title": "Receipts", "externalId": "u-0"}, http.StatusAccepted, &sent); err != nil {
					return nil, 0, nil, err
				}
				run.pushes++ // to u-0's browser: the drain of the next send step waits for it
				notificationID = sent.NotificationID
			}
			body, _ := json.Marshal(map[string]string{"notificationId": notificationID, "endpointId": eps[i%len(eps)]})
			out[i] = vegeta.Target{Method: "POST", URL: apis[i%len(apis)] + "/api/v1/projects/" + w.ProjectID + "/pings/delivered",
				Body: body, Header: http.Header{"Content-Type": {"application/json"}}}
		}
		return out, http.StatusNoContent, nil, nil
	case RouteTransactional:
		// A person of their own for every send (t<serial>-<k>), so that
		// the push a browser gets tells which send it was, whatever the
		// fake push service decrypts.
		browserOf := make([]string, n)
		per := (n + len(sites) - 1) / len(sites)
		i := 0
		for _, w := range sites {
			k := min(per, n-i)
			if k <= 0 {
				break
			}
			run.serial++
			prefix := "t" + strconv.Itoa(run.serial) + "-"
			if err := run.subscribePeople(ctx, w, prefix, 0, k, browserOf[i:i+k]); err != nil {
				return nil, 0, nil, err
			}
			for j := range k {
				out[i+j] = vegeta.Target{Method: "POST", URL: apis[(i+j)%len(apis)] + "/api/v1/notifications#" + strconv.Itoa(i+j),
					Body: send(w, prefix+strconv.Itoa(j)), Header: auth(w)}
			}
			i += k
		}
		// Interleave the websites in time; the fragment keeps each send's
		// index into browserOf.
		rng.Shuffle(n, func(a, b int) { out[a], out[b] = out[b], out[a] })
		return out, http.StatusAccepted, browserOf, nil
	}
	return nil, 0, nil, fmt.Errorf("unknown route %q", route)
}

// attack sends targets in order at rate for d (vegeta's constant pacer:
// each request goes out when due, in a new worker when the others are all
// waiting for answers) and returns the results.
func attack(ctx context.Context, hc *http.Client, targets []vegeta.Target, rate int, d time.Duration) []vegeta.Result {
	var next atomic.Int64
	tr := func(t *vegeta.Target) error {
		i := next.Add(1) - 1
		if i >= int64(len(targets)) {
			return vegeta.ErrNoTargets
		}
		*t = targets[i]
		return nil
	}
	a := vegeta.NewAttacker(vegeta.Client(hc), vegeta.MaxBody(0), vegeta.Workers(64))
	pace := vegeta.ConstantPacer{Freq: rate, Per: time.Second}
	stop := context.AfterFunc(ctx, func() { a.Stop() })
	defer stop()
	out := make([]vegeta.Result, 0, len(targets))
	for r := range a.Attack(tr, pace, d, "relaybell") {
		if r.Error != vegeta.ErrNoTargets.Error() { // the one hit past the last target
			out = append(out, *r)
		}
	}
	return out
}

// drain waits until the fake push service has counted want pushes in
// all (every send's so far), for at most apiDrainMax (or the run's
// PushWait when longer) after answered; it
// returns the time from answered until then, -1 when they did not all
// arrive.
func (run *apiRun) drain(ctx context.Context, want int, answered time.Time) (time.Duration, error) {
	for {
		got, err := count(run.s.push)
		if err != nil {
			return 0, err
		}
		if got >= want {
			return time.Since(answered), nil
		}
		if wait := max(apiDrainMax, run.cfg.PushWait); time.Since(answered) > wait || ctx.Err() != nil {
			fmt.Fprintf(run.cfg.Log, "api %s: %d pushes of the step's sends still missing after %s\n", run.mode, want-got, wait)
			return -1, ctx.Err()
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// arrivals waits until the fake push service has recorded at least n
// pushes since POST /arrivals, or until deadline, and returns when each
// browser's first push arrived.
func (run *apiRun) arrivals(ctx context.Context, n int, deadline time.Time) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	got, from := 0, 0
	for ctx.Err() == nil {
		var page struct {
			Next     int `json:"next"`
			Arrivals []struct {
				BrowserID string    `json:"browserId"`
				Time      time.Time `json:"time"`
			} `json:"arrivals"`
		}
		if err := run.s.push.do("GET", "/arrivals?from="+strconv.Itoa(from), "", nil, 200, &page); err != nil {
			return nil, err
		}
		for _, a := range page.Arrivals {
			if _, ok := out[a.BrowserID]; !ok {
				out[a.BrowserID] = a.Time
			}
		}
		got, from = got+len(page.Arrivals), page.Next
		if got >= n || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	return out, ctx.Err()
}

// summarizeAPI makes a step of the results of the requests sent from
// warmup on. With browserOf, a request's latency runs to its push's
// arrival, and a request without one fails.
func summarizeAPI(rate int, warmup time.Duration, results []vegeta.Result, want int, browserOf []string, arrived map[string]time.Time, pushWait time.Duration) APIStep {
	st := APIStep{Rate: rate, Sent: len(results)}
	if len(results) == 0 {
		return st
	}
	began := results[0].Timestamp
	for _, r := range results {
		if r.Timestamp.Before(began) {
			began = r.Timestamp
		}
	}
	var lat []time.Duration
	var first, last time.Time
	fail := func(why string) {
		st.Errors++
		if st.FirstError == "" {
			st.FirstError = why
		}
	}
	for _, r := range results {
		if r.Timestamp.Sub(began) < warmup {
			continue
		}
		st.Requests++
		if first.IsZero() || r.Timestamp.Before(first) {
			first = r.Timestamp
		}
		switch {
		case r.Error != "" && r.Code == 0:
			fail(r.Error)
			continue
		case int(r.Code) != want:
			fail(fmt.Sprintf("status %d", r.Code))
			continue
		}
		end := r.End()
		if browserOf != nil {
			_, frag, _ := strings.Cut(r.URL, "#")
			i, err := strconv.Atoi(frag)
			if err != nil || i < 0 || i >= len(browserOf) {
				fail("a send the bench did not make: " + r.URL)
				continue
			}
			at, ok := arrived[browserOf[i]]
			if !ok {
				fail(fmt.Sprintf("no push within %s of the step's last answer", pushWait))
				continue
			}
			// Wall clocks of two processes on one machine: the same clock.
			end = at
		}
		d := end.Round(0).Sub(r.Timestamp.Round(0))
		lat = append(lat, d)
		if end.After(last) {
			last = end
		}
	}
	slices.Sort(lat)
	st.P50, st.P99, st.P999 = percentile(lat, 50), percentile(lat, 99), percentile(lat, 99.9)
	if len(lat) > 0 {
		st.Max = lat[len(lat)-1]
	}
	if last.After(first) {
		st.Achieved = float64(len(lat)) / last.Sub(first).Seconds()
	}
	return st
}

const apiStepHeader = "mode      route                   asked/s  achieved/s  requests  errors      p50       p99     p99.9       max  CPU µs/request  pushes drained  cores: bench deployment fakepush other"

// row is the step as a line of the report's table.
func (s APIStep) row(mode, route string) string {
	ms := func(d time.Duration) string { return fmt.Sprintf("%.2fms", d.Seconds()*1000) }
	var bench, fake float64
	sec := s.Elapsed.Seconds()
	if sec > 0 {
		bench, fake = s.CPU["bench"]/sec, s.CPU["fakepush"]/sec
	}
	deployment := 0.0
	if sec > 0 {
		deployment = s.deploymentCPU() / sec
	}
	drain := "-"
	switch {
	case s.Drain < 0:
		drain = "not in " + apiDrainMax.String()
	case s.Drain > 0:
		drain = fmt.Sprintf("%.1fs", s.Drain.Seconds())
	}
	line := fmt.Sprintf("%-9s %-22s %8d  %10.1f  %8d  %6d  %7s  %8s  %8s  %8s  %14.0f  %14s  %12.2f %10.2f %8.2f %5.2f",
		mode, route, s.Rate, s.Achieved, s.Requests, s.Errors, ms(s.P50), ms(s.P99), ms(s.P999), ms(s.Max),
		s.PerRequest(), drain, bench, deployment, fake, max(s.BusyCores-bench-deployment-fake, 0))
	if s.FirstError != "" {
		line += "  first error: " + s.FirstError
	}
	return line
}

// APIReport is the API run's report: a table per mode, and each route's
// highest rate under its target with the CPU per request there.
func APIReport(results []APIResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "The REST API and the transactional path, open loop (vegeta: each request sent when due at a fixed rate; latency from sending to the answer, or to the push arriving at the fake push service)\n")
	fmt.Fprintf(&b, "this machine has %d cores, shared by the load generator (\"bench\"), the fake push service and every process of the deployment; CPU µs/request is the deployment's, every RelayBell process and engine (PostgreSQL's backends in the cluster), less its idle use, over the requests sent (pushes included for sends)\n", runtime.NumCPU())
	for _, r := range results {
		fmt.Fprintf(&b, "\n%s: %d websites, requests over %d API node(s); idle, the deployment's busy cores (taken off CPU µs/request): %s\n", r.Mode, r.Websites, r.APIs, cores(r.Idle))
		fmt.Fprintln(&b, apiStepHeader)
		for _, rt := range r.Routes {
			for _, s := range rt.Steps {
				fmt.Fprintln(&b, s.row(r.Mode, rt.Route))
			}
		}
		for _, rt := range r.Routes {
			fmt.Fprintf(&b, "%s %-22s ", r.Mode, rt.Route+":")
			if rt.Best == 0 {
				fmt.Fprintf(&b, "no rate kept p99 under %s without errors", rt.Target)
				if len(rt.Steps) > 0 {
					s := rt.Steps[0]
					fmt.Fprintf(&b, " (the lowest, %d/s: p50 %s, p99 %s, %d errors; CPU per request %.0f µs: %s)", s.Rate,
						s.P50.Round(10*time.Microsecond), s.P99.Round(10*time.Microsecond), s.Errors, s.PerRequest(), s.perProcess())
				}
				fmt.Fprintln(&b)
				continue
			}
			for _, s := range rt.Steps {
				if s.Rate == rt.Best && s.Pass(rt.Target) {
					fmt.Fprintf(&b, "highest rate with p99 < %s: %d/s (p99 %s), CPU per request %.0f µs: %s", rt.Target, rt.Best,
						s.P99.Round(10*time.Microsecond), s.PerRequest(), s.perProcess())
					break
				}
			}
			fmt.Fprintln(&b)
		}
	}
	return b.String()
}

// errNoRoute is returned for a route name the bench does not know.
var errNoRoute = errors.New("unknown route")

// ParseRoutes turns a comma-separated list of short route names
// (subscribe, events, notify, list, ping, send) into routes.
func ParseRoutes(s string) ([]string, error) {
	short := map[string]string{"subscribe": RouteSubscribe, "events": RouteEvents, "notify": RouteNotify, "list": RouteList, "ping": RoutePing, "send": RouteTransactional}
	var out []string
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		r, ok := short[name]
		if !ok {
			return nil, fmt.Errorf("%w %q (want subscribe, events, notify, list, ping, send)", errNoRoute, name)
		}
		out = append(out, r)
	}
	return out, nil
}
