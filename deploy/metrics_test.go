package deploy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kfake"
	"go.yaml.in/yaml/v2"

	"github.com/relaybell/relaybell/store/postgres/pgtest"

	"github.com/relaybell/relaybell/deploy/promnames"
	"github.com/relaybell/relaybell/server"
)

// The dashboard and the alert rules read only metrics the binary exports:
// a real node is started (the embedded default, and a cluster node on
// PostgreSQL and an in-process Kafka-protocol broker when PostgreSQL is
// there), its /metrics scraped, and every metric name of every expression
// looked up in what it exported.
func TestDashboardAndRulesUseExportedMetrics(t *testing.T) {
	used := map[string][]string{} // metric name -> where
	for where, expr := range dashboardExprs(t) {
		for _, n := range promnames.MetricNames(expr) {
			used[n] = append(used[n], where)
		}
	}
	for _, r := range readRules(t) {
		for _, n := range promnames.MetricNames(r.Expr) {
			used[n] = append(used[n], "rule "+r.Alert)
		}
	}
	if len(used) < 10 {
		t.Fatalf("only %d metric names found in the dashboard and rules: the parser is wrong", len(used))
	}

	exported := map[string]string{} // name -> type
	for k, v := range scrape(t, startNode(t, nil)) {
		exported[k] = v
	}
	if testing.Short() {
		t.Log("short: the cluster node (PostgreSQL, Kafka) is not started")
	} else {
		cluster := startClusterNode(t)
		// The consumer lag is read from the broker once the roles have
		// joined their groups: scrape until it shows.
		deadline := time.Now().Add(time.Minute)
		for {
			got := scrape(t, cluster)
			if _, ok := got["relaybell_bus_consumer_lag"]; ok || time.Now().After(deadline) {
				for k, v := range got {
					exported[k] = v
				}
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
	}

	names := make([]string, 0, len(used))
	for n := range used {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if n == "up" {
			continue // recorded by Prometheus for every target, not exported
		}
		if testing.Short() && n == "relaybell_bus_consumer_lag" {
			t.Logf("short: %s (Kafka bus only) not checked", n)
			continue
		}
		if exported[n] != "" {
			continue
		}
		// A histogram's series: name_bucket, name_sum, name_count.
		if slices.ContainsFunc([]string{"_bucket", "_sum", "_count"}, func(suffix string) bool {
			b, found := strings.CutSuffix(n, suffix)
			return found && exported[b] == "HISTOGRAM"
		}) {
			continue
		}
		t.Errorf("%s (used by %s) is not exported by the binary", n, strings.Join(used[n], ", "))
	}
}

// startNode runs an embedded node (every role on SQLite) in this process
// with cfg's changes, sends it a few API requests so the API's series
// exist, and returns its base URL.
func startNode(t *testing.T, mutate func(*server.Config)) string {
	t.Helper()
	cfg := server.Config{
		Roles:         server.All,
		HTTPAddr:      "127.0.0.1:0",
		DataDir:       t.TempDir(),
		AdminToken:    "test-admin-token",
		NodeName:      "metrics",
		ShutdownGrace: 5 * time.Second,
	}
	if mutate != nil {
		mutate(&cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s, err := server.New(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	addr, err := s.Listen()
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("server: %v", err)
		}
		s.Close()
	})
	base := "http://" + addr.String()
	// An answered request (any route) and an API key looked up.
	for _, token := range []string{"", "rb_live_unknownunknownunknownunknownunknown"} {
		req, _ := http.NewRequest("GET", base+"/api/v1/notifications", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("GET /api/v1/notifications with %q: %d, want 401", token, resp.StatusCode)
		}
	}
	return base
}

// startClusterNode runs a node with every role on PostgreSQL (a schema of
// its own) and an in-process Kafka-protocol broker.
func startClusterNode(t *testing.T) string {
	t.Helper()
	dsn := pgtest.DSN(t)
	k, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close)
	return startNode(t, func(c *server.Config) {
		c.Postgres = dsn
		c.Kafka = strings.Join(k.ListenAddrs(), ",")
		c.ClusterToken = "test-cluster-token"
		c.KafkaSessionTimeout = 6 * time.Second
	})
}

// scrape returns the metric families of base's /metrics by type.
func scrape(t *testing.T, base string) map[string]string {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %d", resp.StatusCode)
	}
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			types[f[2]] = strings.ToUpper(f[3])
		}
	}
	// A family declared without a sample would pass unseen: every declared
	// family has at least one.
	for name := range types {
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `(_bucket|_sum|_count)?[{ ]`).Match(data) {
			t.Errorf("/metrics declares %s without a sample", name)
		}
	}
	return types
}

// dashboardExprs returns every PromQL expression of the dashboard, by
// where it is, and checks the dashboard's shape: the data source is the
// variable ${datasource}, and every panel's target reads through it.
func dashboardExprs(t *testing.T) map[string]string {
	t.Helper()
	data, err := os.ReadFile("grafana/relaybell.json")
	if err != nil {
		t.Fatal(err)
	}
	type ds struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	}
	var d struct {
		UID        string `json:"uid"`
		Title      string `json:"title"`
		Templating struct {
			List []struct {
				Name       string `json:"name"`
				Type       string `json:"type"`
				Query      any    `json:"query"`
				Datasource *ds    `json:"datasource"`
			} `json:"list"`
		} `json:"templating"`
		Panels []struct {
			ID         int    `json:"id"`
			Type       string `json:"type"`
			Title      string `json:"title"`
			Datasource *ds    `json:"datasource"`
			Targets    []struct {
				RefID      string `json:"refId"`
				Expr       string `json:"expr"`
				Datasource *ds    `json:"datasource"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatal(err)
	}
	if d.UID == "" || d.Title == "" {
		t.Errorf("dashboard uid %q title %q", d.UID, d.Title)
	}
	exprs := map[string]string{}
	hasDS := false
	for _, v := range d.Templating.List {
		switch {
		case v.Name == "datasource" && v.Type == "datasource" && v.Query == "prometheus":
			hasDS = true
		case v.Type == "query":
			if v.Datasource == nil || v.Datasource.UID != "${datasource}" {
				t.Errorf("variable %s does not read through ${datasource}", v.Name)
			}
			q, _ := v.Query.(map[string]any)
			s, _ := q["query"].(string)
			m := regexp.MustCompile(`^label_values\(([a-zA-Z_:][a-zA-Z0-9_:]*),\s*[a-zA-Z_]+\)$`).FindStringSubmatch(s)
			if m == nil {
				t.Errorf("variable %s: query %q is not label_values(metric, label)", v.Name, s)
				continue
			}
			exprs["variable "+v.Name] = m[1]
		}
	}
	if !hasDS {
		t.Error("the dashboard has no datasource variable of type prometheus")
	}
	ids := map[int]bool{}
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d twice", p.ID)
		}
		ids[p.ID] = true
		if p.Type == "row" {
			continue
		}
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q does not read through ${datasource}", p.Title)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			if tg.Datasource == nil || tg.Datasource.UID != "${datasource}" {
				t.Errorf("panel %q target %s does not read through ${datasource}", p.Title, tg.RefID)
			}
			if strings.TrimSpace(tg.Expr) == "" {
				t.Errorf("panel %q target %s: empty expression", p.Title, tg.RefID)
			}
			exprs[fmt.Sprintf("panel %q %s", p.Title, tg.RefID)] = tg.Expr
		}
	}
	return exprs
}

type rule struct {
	Alert       string            `yaml:"alert"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

// readRules decodes the alert rules strictly (an unknown or repeated key
// fails) and checks what Prometheus and an operator need of each rule.
func readRules(t *testing.T) []rule {
	t.Helper()
	data, err := os.ReadFile("prometheus/relaybell-rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Groups []struct {
			Name     string `yaml:"name"`
			Interval string `yaml:"interval"`
			Rules    []rule `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		t.Fatalf("rules: %v", err)
	}
	if len(f.Groups) == 0 {
		t.Fatal("rules: no group")
	}
	var all []rule
	seen := map[string]bool{}
	for _, g := range f.Groups {
		if g.Name == "" || len(g.Rules) == 0 {
			t.Errorf("group %q: a name and rules are required", g.Name)
		}
		if g.Interval != "" {
			if _, err := model.ParseDuration(g.Interval); err != nil {
				t.Errorf("group %s: interval %q: %v", g.Name, g.Interval, err)
			}
		}
		for _, r := range g.Rules {
			switch {
			case !regexp.MustCompile(`^RelayBell[A-Za-z0-9]+$`).MatchString(r.Alert):
				t.Errorf("alert %q: the name is RelayBell followed by letters", r.Alert)
			case seen[r.Alert]:
				t.Errorf("alert %s twice", r.Alert)
			}
			seen[r.Alert] = true
			if strings.TrimSpace(r.Expr) == "" {
				t.Errorf("alert %s: no expr", r.Alert)
			}
			if strings.Count(r.Expr, "(") != strings.Count(r.Expr, ")") || strings.Count(r.Expr, "{") != strings.Count(r.Expr, "}") || strings.Count(r.Expr, "[") != strings.Count(r.Expr, "]") {
				t.Errorf("alert %s: unbalanced brackets in %q", r.Alert, r.Expr)
			}
			if d, err := model.ParseDuration(r.For); err != nil || d <= 0 {
				t.Errorf("alert %s: for %q: a positive duration is required (%v)", r.Alert, r.For, err)
			}
			if !slices.Contains([]string{"critical", "warning", "info"}, r.Labels["severity"]) || len(r.Labels) != 1 {
				t.Errorf("alert %s: labels %v, want only severity critical, warning or info", r.Alert, r.Labels)
			}
			if r.Annotations["summary"] == "" || r.Annotations["description"] == "" || len(r.Annotations) != 2 {
				t.Errorf("alert %s: annotations %v, want summary and description", r.Alert, r.Annotations)
			}
			all = append(all, r)
		}
	}
	return all
}

// The metric-name parser on the shapes the dashboard and rules use.
func TestMetricNames(t *testing.T) {
	for expr, want := range map[string]string{
		`sum by (outcome) (rate(relaybell_pusher_pushes_total{instance=~"$instance"}[$__rate_interval]))`:                                  "relaybell_pusher_pushes_total",
		`histogram_quantile(0.99, sum by (service, le) (rate(relaybell_push_service_request_seconds_bucket[10m]))) > 2`:                    "relaybell_push_service_request_seconds_bucket",
		"sum(rate(a_total{outcome=\"failed\"}[10m]))\n / clamp_min(sum(rate(a_total[10m])), 1e-9) > 0.05\nand sum(rate(b_total[10m])) > 1": "a_total b_total",
		`relaybell_webhook_claimed >= relaybell_webhook_workers`:                                                                           "relaybell_webhook_claimed relaybell_webhook_workers",
		`max by (group, topic) (deriv(lag[30m])) > 0 and max by (group, topic) (lag) > 1000`:                                               "lag",
		`up{job=~".*relaybell.*"} == 0`: "up",
		`rate(process_cpu_seconds_total{instance=~"$instance"}[5m]) * on (instance) group_left (version) build_info`: "process_cpu_seconds_total build_info",
	} {
		if got := strings.Join(promnames.MetricNames(expr), " "); got != want {
			t.Errorf("MetricNames(%q) = %q, want %q", expr, got, want)
		}
	}
}

// The chart renders its PrometheusRule from a copy of the rules in its
// files/ (Helm reads nothing outside the chart): the copy is the file.
func TestChartRulesAreTheRules(t *testing.T) {
	a, err := os.ReadFile("prometheus/relaybell-rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("helm/relaybell/files/relaybell-rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if string(a) != string(b) {
		t.Fatal("deploy/helm/relaybell/files/relaybell-rules.yaml differs from deploy/prometheus/relaybell-rules.yaml: cp deploy/prometheus/relaybell-rules.yaml deploy/helm/relaybell/files/")
	}
}
