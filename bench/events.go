package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The events bench: POST /api/v1/events under open-loop load (load.go) at
// rising rates, on the same deployments as the broadcast bench, to find the
// highest rate whose p99 latency stays under a target.

// Defaults of an events run.
const (
	DefaultEventAudience = 1000
	DefaultEventTarget   = 20 * time.Millisecond
	DefaultEventWarmup   = time.Second
	DefaultEventStep     = 6 * time.Second
	// eventsInFlight bounds the requests waiting for an answer.
	eventsInFlight = 512
	// eventsMaxLag gives up on a step whose requests go out this late.
	eventsMaxLag = 2 * time.Second
	// eventsQuietMax bounds the wait for a quiet machine before a step.
	eventsQuietMax = 10 * time.Second
	// eventsIdle is how long the deployment's CPU at rest is measured
	// before each step.
	eventsIdle = 2 * time.Second
	// eventsTimeout bounds one request.
	eventsTimeout = 10 * time.Second
)

// DefaultEventRates returns the rates an events run climbs by default:
// doubling from 100 a second.
func DefaultEventRates() []int {
	return []int{100, 200, 400, 800, 1600, 3200, 6400, 12800, 25600}
}

// EventsConfig describes an events run. Of Config, Modes, Relaybell,
// FakePush, ClusterScript, Postgres, WorkDir, Log and PushHTTP1 apply.
type EventsConfig struct {
	Config
	// Audience is how many browsers subscribe (default 1000); four in
	// five are people named by an externalId (u-0, u-1, ...), whom most
	// events name.
	Audience int
	// Rates are the steps' rates, a second, run in order until a step's
	// p99 reaches Target or it has errors (default DefaultEventRates).
	Rates []int
	// Refine is how many steps then run between the last rate that passed
	// and the one that did not, evenly spaced, rising until one does not
	// pass (0: none).
	Refine int
	// Warmup is each step's time at its rate before it is measured
	// (default 1 s), Step its measured time (default 6 s).
	Warmup, Step time.Duration
	// Target is the p99 latency a step must stay under (default 20 ms).
	Target time.Duration
	// Registrations measures POST /api/v1/projects/{id}/subscriptions
	// instead of events: a share of NewShare of the requests register a
	// browser never seen (201), the rest register again one of the
	// audience's, with its externalId (200), as the SDK does on each page
	// view of a subscribed visitor.
	Registrations bool
	// NewShare is the share of new browsers of a registrations run
	// (default DefaultNewShare).
	NewShare float64
}

// DefaultNewShare is the share of new browsers of a registrations run.
const DefaultNewShare = 0.2

// EventsResult is what an events run measured in one mode.
type EventsResult struct {
	Mode string
	// Route is what was measured: "POST /api/v1/events" or the
	// registrations' route.
	Route    string
	Audience int // browsers subscribed
	People   int // of them, named by an externalId
	APIs     int // API nodes the requests were spread over
	// Setup is subscribing the audience, a broadcast to it and every
	// browser's delivered ping (so that conversions have a notification to
	// be credited to).
	Setup  time.Duration
	Target time.Duration
	Steps  []Step // in the order run
	// Best is the highest rate asked whose step passed (0: none did).
	Best int
}

// RunEvents measures POST /api/v1/events in each mode.
func RunEvents(ctx context.Context, cfg EventsConfig) ([]EventsResult, error) {
	cleanup, err := cfg.fill()
	if err != nil {
		return nil, err
	}
	defer cleanup()
	if cfg.Audience <= 0 {
		cfg.Audience = DefaultEventAudience
	}
	if len(cfg.Rates) == 0 {
		cfg.Rates = DefaultEventRates()
	}
	if cfg.Warmup <= 0 {
		cfg.Warmup = DefaultEventWarmup
	}
	if cfg.Step <= 0 {
		cfg.Step = DefaultEventStep
	}
	if cfg.Target <= 0 {
		cfg.Target = DefaultEventTarget
	}
	if cfg.NewShare <= 0 || cfg.NewShare > 1 {
		cfg.NewShare = DefaultNewShare
	}
	var out []EventsResult
	for _, mode := range cfg.Modes {
		res, err := runEvents(ctx, cfg, mode)
		if err != nil {
			return out, fmt.Errorf("events, %s: %w", mode, err)
		}
		out = append(out, res)
	}
	return out, nil
}

func runEvents(ctx context.Context, cfg EventsConfig, mode string) (EventsResult, error) {
	// The bench's one key posts every event: the limit of 3,000 a minute
	// a key is off.
	s, err := startStage(ctx, cfg.Config, mode, "events-"+mode, []string{"RELAYBELL_EVENT_RATE_LIMIT=-1"}, 1)
	if err != nil {
		return EventsResult{}, err
	}
	defer s.stop()
	res := EventsResult{Mode: mode, Route: "POST /api/v1/events", Audience: cfg.Audience, People: cfg.Audience * 4 / 5, APIs: len(s.d.apis), Target: cfg.Target}
	if cfg.Registrations {
		res.Route = fmt.Sprintf("POST /api/v1/projects/{id}/subscriptions (%.0f%% new browsers)", cfg.NewShare*100)
	}
	start := time.Now()
	subs, err := seedAudience(ctx, s, res.Audience, res.People)
	if err != nil {
		return EventsResult{}, err
	}
	res.Setup = time.Since(start)
	fmt.Fprintf(cfg.Log, "events %s: %d browsers subscribed, sent a broadcast and pinged its delivery in %s\n", mode, res.Audience, res.Setup.Round(time.Millisecond))
	if s.d.settle != nil {
		if err := s.d.settle(ctx); err != nil {
			return EventsResult{}, err
		}
	}

	hc := newLoadClient(eventsInFlight, eventsTimeout)
	defer hc.CloseIdleConnections()
	others := map[string]int{"bench": os.Getpid()}
	maps.Copy(others, s.d.others)
	fmt.Fprintln(cfg.Log, stepHeader)
	for rate := nextRate(cfg.Rates, cfg.Refine, res.Steps, cfg.Target); rate > 0; rate = nextRate(cfg.Rates, cfg.Refine, res.Steps, cfg.Target) {
		// The step before may leave work behind (inserts into the event
		// log): wait for it, but not for what other processes do.
		qctx, cancel := context.WithTimeout(ctx, eventsQuietMax)
		quiet(qctx, cfg.Log)
		cancel()
		if err := ctx.Err(); err != nil {
			return EventsResult{}, err
		}
		step := loadStep{rate: rate, warmup: cfg.Warmup, measure: cfg.Step, inFlight: eventsInFlight, maxLag: eventsMaxLag}
		rng := rand.New(rand.NewPCG(uint64(rate), 24))
		var reqs []request
		if cfg.Registrations {
			if reqs, err = registrationRequests(rng, s, subs, step.total(), cfg.NewShare); err != nil {
				return EventsResult{}, err
			}
		} else {
			reqs = eventRequests(rng, s.d.apis, step.total(), res.People)
		}
		// The deployment's CPU at rest (its loops' polls), for the CPU per
		// request net of it.
		idle := startCPU(s.d.procs, others)
		// The cluster's PostgreSQL CPU is its own processes', not the
		// machine's every PostgreSQL process (other databases' work).
		idlePG := s.d.startStoreCPU(ctx)
		idleStart := time.Now()
		time.Sleep(eventsIdle)
		idleUsed, _ := idle()
		if idlePG != nil {
			idleUsed["postgres"] = idlePG()
		}
		idleCores := 0.0
		for name, sec := range idleUsed {
			if name != "bench" && (name != "postgres" || mode != Embedded) {
				idleCores += sec / time.Since(idleStart).Seconds()
			}
		}
		cpu := startCPU(s.d.procs, others)
		pgCPU := s.d.startStoreCPU(ctx)
		began := time.Now()
		shots := fire(ctx, hc, s.site.APIKey, step, reqs)
		if err := ctx.Err(); err != nil {
			return EventsResult{}, err
		}
		st := summarize(rate, cfg.Warmup, shots)
		st.Elapsed = time.Since(began)
		st.CPU, st.BusyCores = cpu()
		st.IdleCores = idleCores
		switch {
		case mode == Embedded:
			delete(st.CPU, "postgres") // not the deployment's: someone else's
		case pgCPU != nil:
			st.CPU["postgres"] = pgCPU()
		}
		res.Steps = append(res.Steps, st)
		fmt.Fprintln(cfg.Log, st.row(mode))
	}
	res.Best = best(res.Steps, cfg.Target)
	return res, nil
}

// seedAudience subscribes n browsers, the first people of them named by
// the externalIds u-0, u-1, ..., then sends them a broadcast and has every
// browser ping its delivery: the last delivered notification is what a
// conversion is credited to. It returns the browsers' registrations.
func seedAudience(ctx context.Context, s *stage, n, people int) ([]json.RawMessage, error) {
	subs, err := browsers(s.push, s.site.VAPIDPublicKey, n)
	if err != nil {
		return nil, err
	}
	return subs, seedRegistered(ctx, s, subs, people)
}

func seedRegistered(ctx context.Context, s *stage, subs []json.RawMessage, people int) error {
	n := len(subs)
	var err error
	for i := range people {
		var sub map[string]any
		if err := json.Unmarshal(subs[i], &sub); err != nil {
			return err
		}
		sub["externalId"] = "u-" + strconv.Itoa(i)
		if subs[i], err = json.Marshal(sub); err != nil {
			return err
		}
	}
	project := "/api/v1/projects/" + s.site.ProjectID
	endpoints := make([]string, n)
	err = postEach(ctx, s.d.apis, project+"/subscriptions", subs, 201, func(i int, body []byte) error {
		var a struct {
			EndpointID string `json:"endpointId"`
		}
		err := json.Unmarshal(body, &a)
		endpoints[i] = a.EndpointID
		return err
	})
	if err != nil {
		return fmt.Errorf("subscribing: %w", err)
	}
	var sent struct {
		NotificationID string `json:"notificationId"`
	}
	if err := s.api.do("POST", "/api/v1/notifications", s.site.APIKey, map[string]any{"title": broadcastTitle, "body": broadcastBody}, 202, &sent); err != nil {
		return err
	}
	if err := finished(ctx, s.api, s.site.APIKey, sent.NotificationID, n); err != nil {
		return err
	}
	pings := make([]json.RawMessage, n)
	for i, id := range endpoints {
		if pings[i], err = json.Marshal(map[string]string{"notificationId": sent.NotificationID, "endpointId": id}); err != nil {
			return err
		}
	}
	if err := postEach(ctx, s.d.apis, project+"/pings/delivered", pings, 204, nil); err != nil {
		return fmt.Errorf("pinging deliveries: %w", err)
	}
	return nil
}

// registrationRequests draws n registrations: a share of new browsers
// (made on the fake push service now), the rest the audience's again.
func registrationRequests(rng *rand.Rand, s *stage, audience []json.RawMessage, n int, share float64) ([]request, error) {
	fresh := int(float64(n) * share)
	news, err := browsers(s.push, s.site.VAPIDPublicKey, fresh)
	if err != nil {
		return nil, err
	}
	url := "/api/v1/projects/" + s.site.ProjectID + "/subscriptions"
	reqs := make([]request, n)
	for i := range reqs {
		body := audience[rng.IntN(len(audience))]
		if len(news) > 0 && (rng.Float64() < share || n-i <= len(news)) {
			body, news = news[0], news[1:]
		}
		reqs[i] = request{url: s.d.apis[i%len(s.d.apis)] + url, body: body, registration: true}
	}
	return reqs, nil
}

// eventKind is one kind of event in the bench's mix.
type eventKind struct {
	name    string
	percent int  // its share of the events
	person  bool // names a person by externalId; false: nobody
	value   bool // carries a numeric properties.value
	product bool // carries a properties.productId: a person's interest
}

// eventMix is what a shop's server might post: mostly views by known
// people, some of products (an interest recorded), some purchases (a
// conversion, credited to the broadcast the person had delivered), carts
// with a value that are not conversions, and a few events naming nobody.
// The percents add up to 100.
var eventMix = []eventKind{
	{name: "page.viewed", percent: 50, person: true},
	{name: "product.viewed", percent: 20, person: true, product: true},
	{name: "purchase", percent: 8, person: true, value: true, product: true},
	{name: "cart.updated", percent: 7, person: true, value: true, product: true},
	{name: "search", percent: 10, person: true},
	{name: "page.viewed", percent: 5},
}

// eventProperties are the properties the mix's events carry.
type eventProperties struct {
	Path      string  `json:"path,omitempty"`
	Query     string  `json:"query,omitempty"`
	ProductID string  `json:"productId,omitempty"`
	Value     float64 `json:"value,omitempty"`
	Currency  string  `json:"currency,omitempty"`
}

// pickKind is the mix's kind for a roll in [0, 100).
func pickKind(roll int) eventKind {
	for _, k := range eventMix {
		if roll < k.percent {
			return k
		}
		roll -= k.percent
	}
	return eventMix[len(eventMix)-1]
}

// eventBody draws an event of the mix; a person is one of u-0 ...
// u-(people-1).
func eventBody(rng *rand.Rand, people int) []byte {
	k := pickKind(rng.IntN(100))
	body := struct {
		Event      string          `json:"event"`
		ExternalID string          `json:"externalId,omitempty"`
		Properties eventProperties `json:"properties"`
	}{Event: k.name}
	if k.person && people > 0 {
		body.ExternalID = "u-" + strconv.Itoa(rng.IntN(people))
	}
	p := &body.Properties
	switch k.name {
	case "page.viewed":
		p.Path = "/pages/" + strconv.Itoa(rng.IntN(500))
	case "search":
		p.Query = "term " + strconv.Itoa(rng.IntN(1000))
	}
	if k.product {
		p.ProductID = "sku-" + strconv.Itoa(rng.IntN(200))
	}
	if k.value {
		p.Value, p.Currency = float64(100+rng.IntN(20000))/100, "EUR"
	}
	b, _ := json.Marshal(body) // plain strings and numbers
	return b
}

// eventRequests draws n events of the mix, spread over the API nodes in
// turn.
func eventRequests(rng *rand.Rand, apis []string, n, people int) []request {
	reqs := make([]request, n)
	for i := range reqs {
		reqs[i] = request{url: apis[i%len(apis)] + "/api/v1/events", body: eventBody(rng, people)}
	}
	return reqs
}

// nextRate is the rate of the step after done, the steps run so far in
// order: rates in order until a step does not pass, then refine rates
// evenly spaced between the last that passed and that one, rising until
// one does not pass; 0 when there is no next step.
func nextRate(rates []int, refine int, done []Step, target time.Duration) int {
	failed := slices.IndexFunc(done, func(s Step) bool { return !s.Pass(target) })
	switch {
	case failed < 0 && len(done) < len(rates):
		return rates[len(done)]
	case failed <= 0: // all rates passed, or the first did not
		return 0
	case failed < len(done)-1 && !done[len(done)-1].Pass(target): // a refining step did not pass
		return 0
	}
	k := len(done) - failed // the refining step to run, from 1
	if k > refine {
		return 0
	}
	lo, hi := done[failed-1].Rate, done[failed].Rate
	r := lo + (hi-lo)*k/(refine+1)
	if r <= done[len(done)-1].Rate && k > 1 || r <= lo {
		return 0 // no room left between them
	}
	return r
}

// best is the highest rate of the steps that passed; 0 for none.
func best(steps []Step, target time.Duration) int {
	b := 0
	for _, s := range steps {
		if s.Pass(target) {
			b = max(b, s.Rate)
		}
	}
	return b
}

const stepHeader = "mode       asked/s  achieved/s  requests  errors      p50       p99       max  gen lag p99  conversions credited  cores: bench deployment other idle  µs/req: deployment net-of-idle postgres"

// row is the step as a line of the report's table. Of the machine's busy
// cores, bench is the load generator's, deployment those of RelayBell and
// its engines (PostgreSQL, devkafka, ClickHouse), other the rest (other
// processes, the kernel's own work). The CPU per request sent (warm-up
// included) follows: of the whole deployment, and of it PostgreSQL's
// backends.
func (s Step) row(mode string) string {
	ms := func(d time.Duration) string { return fmt.Sprintf("%.2fms", d.Seconds()*1000) }
	var bench, deployment float64
	if sec := s.Elapsed.Seconds(); sec > 0 {
		for name, cpu := range s.CPU {
			if name == "bench" {
				bench = cpu / sec
			} else {
				deployment += cpu / sec
			}
		}
	}
	var perReq, netPerReq, pgPerReq float64
	if s.Sent > 0 {
		for name, cpu := range s.CPU {
			if name != "bench" {
				perReq += cpu / float64(s.Sent) * 1e6
			}
		}
		netPerReq = perReq - s.IdleCores*s.Elapsed.Seconds()/float64(s.Sent)*1e6
		pgPerReq = s.CPU["postgres"] / float64(s.Sent) * 1e6
	}
	line := fmt.Sprintf("%-9s %8d  %10.1f  %8d  %6d  %7s  %8s  %8s  %11s  %11d %8d  %12.2f %10.2f %5.2f %4.2f  %18.0f %11.0f %8.0f",
		mode, s.Rate, s.Achieved, s.Requests, s.Errors, ms(s.P50), ms(s.P99), ms(s.Max), ms(s.LagP99),
		s.Conversions, s.Credited, bench, deployment, max(s.BusyCores-bench-deployment, 0), s.IdleCores, perReq, netPerReq, pgPerReq)
	if s.FirstError != "" {
		line += "  first error: " + s.FirstError
	}
	return line
}

// cpuPerEvent is the CPU each process used per request sent in the step.
func (s Step) cpuPerEvent() string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(s.CPU)) {
		if s.Sent > 0 && s.CPU[name] > 0 {
			parts = append(parts, fmt.Sprintf("%s %.0fµs", name, s.CPU[name]/float64(s.Sent)*1e6))
		}
	}
	return strings.Join(parts, ", ")
}

// EventsReport is the events run's report: each mode's steps, its highest
// rate under the target, and the ratio of those rates between the modes.
func EventsReport(results []EventsResult) string {
	var b strings.Builder
	route := "POST /api/v1/events"
	if len(results) > 0 {
		route = results[0].Route
	}
	fmt.Fprintf(&b, "%s, open loop (each request due on a fixed schedule, latency from when it was due to its answer)\n", route)
	fmt.Fprintf(&b, "this machine has %d cores, shared by the load generator (\"bench\" below) and every process of the deployment\n", runtime.NumCPU())
	fmt.Fprintln(&b, stepHeader)
	for _, r := range results {
		for _, s := range r.Steps {
			fmt.Fprintln(&b, s.row(r.Mode))
		}
	}
	fmt.Fprintln(&b, "CPU per request sent, each process (warm-up included):")
	for _, r := range results {
		for _, s := range r.Steps {
			fmt.Fprintf(&b, "  %s %d/s: %s\n", r.Mode, s.Rate, s.cpuPerEvent())
		}
	}
	for _, r := range results {
		fmt.Fprintf(&b, "%s: %d browsers (%d people), requests over %d API node(s): ", r.Mode, r.Audience, r.People, r.APIs)
		if r.Best == 0 {
			fmt.Fprintf(&b, "no rate kept p99 under %s without errors", r.Target)
			if len(r.Steps) > 0 {
				s := r.Steps[0]
				fmt.Fprintf(&b, " (the lowest, %d/s: p50 %s, p99 %s, %d errors)", s.Rate, s.P50.Round(10*time.Microsecond), s.P99.Round(10*time.Microsecond), s.Errors)
			}
			fmt.Fprintln(&b)
			continue
		}
		fmt.Fprintf(&b, "highest rate with p99 < %s: %d/s", r.Target, r.Best)
		for _, s := range r.Steps {
			if s.Rate == r.Best && s.Pass(r.Target) {
				fmt.Fprintf(&b, " (CPU per event there: %s)", s.cpuPerEvent())
				break
			}
		}
		fmt.Fprintln(&b)
	}
	if len(results) > 1 && results[0].Best > 0 {
		for _, r := range results[1:] {
			fmt.Fprintf(&b, "highest rate with p99 < %s, %s/%s: %.2f\n", r.Target, r.Mode, results[0].Mode, float64(r.Best)/float64(results[0].Best))
		}
	}
	return b.String()
}
