package helmtest

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/prometheus/promql/parser"
	"sigs.k8s.io/yaml"

	"github.com/relaybell/relaybell/deploy/promnames"
)

// Every expression of the dashboard and the alert rules is valid PromQL
// for Prometheus's own parser (syntax, function names, argument types), and
// the metric names it reads are exactly those deploy/promnames finds, the
// names deploy's test looks up in a running node's /metrics.
func TestPromQLOfDashboardAndRules(t *testing.T) {
	exprs := map[string]string{}
	data, err := os.ReadFile("../prometheus/relaybell-rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var rules monitoringv1.PrometheusRuleSpec
	if err := yaml.UnmarshalStrict(data, &rules); err != nil {
		t.Fatal(err)
	}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			exprs["rule "+r.Alert] = r.Expr.String()
		}
	}
	data, err = os.ReadFile("../grafana/relaybell.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				RefID string `json:"refId"`
				Expr  string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatal(err)
	}
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			// Grafana's variables: the interval one stands for a duration,
			// the others sit inside label matchers' strings.
			exprs["panel "+p.Title+" "+tg.RefID] = strings.ReplaceAll(tg.Expr, "$__rate_interval", "5m")
		}
	}
	if len(exprs) < 25 {
		t.Fatalf("%d expressions read", len(exprs))
	}
	for where, expr := range exprs {
		e, err := parser.ParseExpr(expr)
		if err != nil {
			t.Errorf("%s: %q: %v", where, expr, err)
			continue
		}
		var names []string
		parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
			if vs, ok := n.(*parser.VectorSelector); ok && !slices.Contains(names, vs.Name) {
				names = append(names, vs.Name)
			}
			return nil
		})
		got := promnames.MetricNames(expr)
		slices.Sort(names)
		slices.Sort(got)
		if !slices.Equal(names, got) {
			t.Errorf("%s: Prometheus reads %v, promnames finds %v", where, names, got)
		}
	}
}
