package helmtest

import (
	"os"
	"reflect"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"sigs.k8s.io/yaml"
)

// The optional PrometheusRule carries the alert rules of
// deploy/prometheus/relaybell-rules.yaml unchanged (the Prometheus template
// text of the annotations included), with the labels the values give it;
// off, nothing is rendered.
func TestChartPrometheusRule(t *testing.T) {
	data, err := os.ReadFile("../prometheus/relaybell-rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var want monitoringv1.PrometheusRuleSpec
	if err := yaml.UnmarshalStrict(data, &want); err != nil {
		t.Fatal(err)
	}
	if len(want.Groups) == 0 || len(want.Groups[0].Rules) < 10 {
		t.Fatalf("rules file read as %+v", want)
	}

	vals := values(t, "../helm/examples/values-cluster-external.yaml")
	var rules []*monitoringv1.PrometheusRule
	for _, o := range render(t, vals) {
		if pr, ok := o.obj.(*monitoringv1.PrometheusRule); ok {
			rules = append(rules, pr)
		}
	}
	if len(rules) != 1 {
		t.Fatalf("%d PrometheusRules rendered, want 1", len(rules))
	}
	pr := rules[0]
	if pr.Name != release+"-relaybell" || pr.Labels["release"] != "prometheus" {
		t.Errorf("PrometheusRule %s labels %v", pr.Name, pr.Labels)
	}
	if !reflect.DeepEqual(pr.Spec, want) {
		got, _ := yaml.Marshal(pr.Spec)
		t.Errorf("the PrometheusRule's spec differs from deploy/prometheus/relaybell-rules.yaml:\n%s", got)
	}

	for _, o := range render(t, values(t, "")) {
		if _, ok := o.obj.(*monitoringv1.PrometheusRule); ok {
			t.Error("a PrometheusRule is rendered with the default values (off)")
		}
	}
}
