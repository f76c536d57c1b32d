package helmtest

import (
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/relaybell/relaybell/server"
)

// addressFields are the settings that name where a node and its peers are:
// loopback ports in the local cluster, pod and Service names in the chart.
// They must be set in both or in neither; every other setting must be the
// same value.
var addressFields = []string{
	"HTTPAddr", "DataDir", "NodeName", "Postgres", "Kafka", "ClickHouse",
	"Join", "GossipAddr", "InternalAddr", "AdvertiseHost", "ClusterToken",
}

// localOnly are set by the local cluster and left to the operator by the
// chart's defaults: the admin token (off until one is set) and the private
// address of the fake push service.
var localOnly = []string{"AdminToken", "PushAllowHosts"}

// TestClusterScriptMatchesChart: deploy/cluster.sh, which the fault tests
// and the bench run, starts each role with the configuration the chart's
// defaults render, so those tests exercise what is deployed. Both are
// parsed by the binary's flag set and compared setting by setting.
func TestClusterScriptMatchesChart(t *testing.T) {
	r := index(t, render(t, map[string]any{}))
	for _, role := range []string{"api", "fanout", "pusher"} {
		t.Run(role, func(t *testing.T) {
			w := r.role(role)
			chartCfg, err := r.checkPod(t, w)
			if err != nil {
				t.Fatal(err)
			}
			args := scriptArgs(t, role+"-0")
			clearEnv(t)
			scriptCfg, err := server.ParseServe(args[1:])
			if err != nil {
				t.Fatalf("cluster.sh's %s: %v (%q)", role, err, args)
			}
			for _, d := range compareConfigs(chartCfg, scriptCfg) {
				t.Error(d)
			}
		})
	}
}

// compareConfigs lists how the local cluster's configuration of a role
// differs from the chart's.
func compareConfigs(chart, script server.Config) []string {
	var diffs []string
	cv, sv := reflect.ValueOf(chart), reflect.ValueOf(script)
	for i := range cv.NumField() {
		f := cv.Type().Field(i)
		if !f.IsExported() || f.Type.Kind() == reflect.Func || slices.Contains(localOnly, f.Name) {
			continue
		}
		a, b := cv.Field(i).Interface(), sv.Field(i).Interface()
		if slices.Contains(addressFields, f.Name) {
			if cv.Field(i).IsZero() != sv.Field(i).IsZero() {
				diffs = append(diffs, fmt.Sprintf("%s: the chart sets %q, cluster.sh %q", f.Name, a, b))
			}
			continue
		}
		if !reflect.DeepEqual(a, b) {
			diffs = append(diffs, fmt.Sprintf("%s: the chart %v, cluster.sh %v", f.Name, a, b))
		}
	}
	return diffs
}

// scriptArgs is `cluster.sh flags NODE`: the arguments the script starts
// the node with, read without starting anything.
func scriptArgs(t *testing.T, node string) []string {
	t.Helper()
	cmd := exec.Command("bash", "../cluster.sh", "flags", node)
	cmd.Env = []string{"CLUSTER_DIR=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("cluster.sh flags %s: %v\n%s", node, err, out)
	}
	args := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if args[0] != "serve" {
		t.Fatalf("cluster.sh flags %s: %q", node, args)
	}
	return args
}

// clearEnv unsets every RELAYBELL_* variable for the rest of the test.
func clearEnv(t *testing.T) {
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "RELAYBELL_") {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
	}
}

// The comparison sees a difference: a grace the chart does not give.
func TestCompareConfigsSeesADifference(t *testing.T) {
	r := index(t, render(t, map[string]any{}))
	chartCfg, err := r.checkPod(t, r.role("pusher"))
	if err != nil {
		t.Fatal(err)
	}
	clearEnv(t)
	args := append(scriptArgs(t, "pusher-0")[1:], "--shutdown-grace", "10s")
	scriptCfg, err := server.ParseServe(args)
	if err != nil {
		t.Fatal(err)
	}
	diffs := compareConfigs(chartCfg, scriptCfg)
	if len(diffs) != 1 || diffs[0] != "ShutdownGrace: the chart 50s, cluster.sh 10s" {
		t.Fatalf("diffs %q", diffs)
	}
	scriptCfg.Join = ""
	if diffs := compareConfigs(chartCfg, scriptCfg); len(diffs) != 2 || !strings.HasPrefix(diffs[1], "Join: the chart sets") {
		t.Fatalf("diffs %q", diffs)
	}
}
