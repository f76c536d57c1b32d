package api

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"
)

// metrics are the API's own series. Labels stay bounded: route is a
// pattern of the route table (or a fixed word), method one of a fixed set.
type metrics struct {
	requests         *prometheus.CounterVec
	duration         *prometheus.HistogramVec
	keyCache         *prometheus.CounterVec
	authPolls        *prometheus.CounterVec
	dispatchFailures prometheus.Counter
	identityFailures *prometheus.CounterVec
}

func newMetrics(regs ...prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "relaybell_api_requests_total",
			Help: "HTTP requests answered, by route pattern, method and status code.",
		}, []string{"route", "method", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "relaybell_api_request_duration_seconds",
			Help:    "Time to answer HTTP requests, by route pattern and method.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"route", "method"}),
		keyCache: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "relaybell_api_key_cache_total",
			Help: "API key lookups by cache result (hit, miss).",
		}, []string{"result"}),
		authPolls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "relaybell_api_auth_version_reads_total",
			Help: "Reads of the store's auth version by result (unchanged; changed: the key cache was dropped; error).",
		}, []string{"result"}),
		dispatchFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "relaybell_api_dispatch_failures_total",
			Help: "Committed sends whose intent could not be published at once (the outbox sweep re-drives them).",
		}),
		identityFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "relaybell_api_identity_verification_failures_total",
			Help: "Browser registrations linking an external id without a valid externalIdHash, by the website's mode (report: let through and logged; enforce: refused) and reason (missing, malformed, mismatch).",
		}, []string{"mode", "reason"}),
	}
	for _, reg := range regs {
		for _, c := range []prometheus.Collector{m.requests, m.duration, m.keyCache, m.authPolls, m.dispatchFailures, m.identityFailures} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

// observe counts one answered request.
func (m *metrics) observe(route, method string, status int, d time.Duration) {
	method = methodLabel(method)
	m.requests.WithLabelValues(route, method, strconv.Itoa(status)).Inc()
	m.duration.WithLabelValues(route, method).Observe(d.Seconds())
}

func methodLabel(m string) string {
	switch m {
	case "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS":
		return m
	}
	return "other"
}

// handleMetrics serves the Prometheus text format of the gatherer.
func (a *API) metricsHandler() func(r *request) error {
	h := fasthttpadaptor.NewFastHTTPHandler(promhttp.HandlerFor(a.gatherer, promhttp.HandlerOpts{}))
	return func(r *request) error {
		h(r.fc)
		return nil
	}
}
