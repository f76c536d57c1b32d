package helmtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/releaseutil"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/relaybell/relaybell/server"
)

const (
	chartDir  = "../helm/relaybell"
	release   = "push"
	namespace = "relaybell"
	// podIP stands for status.podIP in a rendered pod's environment.
	podIP = "10.20.30.40"
)

// kubeVersion is the Kubernetes the chart is rendered for: the oldest its
// Chart.yaml accepts (1.30: a preStop sleep needs it). Helm as a library
// would otherwise say v1.20.
var kubeVersion = &chartutil.KubeVersion{Version: "v1.30.0", Major: "1", Minor: "30"}

// valueSets are the configurations the chart is checked with: its defaults
// and the examples in deploy/helm/examples.
var valueSets = []struct {
	name, file string
	mode       string
}{
	{"default", "", "cluster"},
	{"embedded", "../helm/examples/values-embedded.yaml", "embedded"},
	{"cluster-external", "../helm/examples/values-cluster-external.yaml", "cluster"},
	{"large", "../helm/examples/values-large.yaml", "cluster"},
}

func values(t *testing.T, file string) map[string]any {
	t.Helper()
	if file == "" {
		return map[string]any{}
	}
	v, err := chartutil.ReadValuesFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return v.AsMap()
}

func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	c, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestChartLintStrict is `helm lint --strict` with each value set: a
// warning fails too.
func TestChartLintStrict(t *testing.T) {
	for _, vs := range valueSets {
		t.Run(vs.name, func(t *testing.T) {
			lint := action.NewLint()
			lint.Strict = true
			lint.Namespace = namespace
			lint.KubeVersion = kubeVersion
			res := lint.Run([]string{chartDir}, values(t, vs.file))
			for _, m := range res.Messages {
				t.Logf("lint: %s", m)
			}
			if res.TotalChartsLinted != 1 || len(res.Errors) > 0 {
				t.Fatalf("helm lint --strict: %d linted, errors %v", res.TotalChartsLinted, res.Errors)
			}
		})
	}
}

// rendered is one object of a rendered release, decoded into its type.
type rendered struct {
	source string // the template it came from
	kind   string
	name   string
	obj    any
}

// types maps each apiVersion and kind the chart may render to its Go type.
var types = map[string]func() any{
	"apps/v1/Deployment":                      func() any { return &appsv1.Deployment{} },
	"apps/v1/StatefulSet":                     func() any { return &appsv1.StatefulSet{} },
	"v1/Service":                              func() any { return &corev1.Service{} },
	"v1/Secret":                               func() any { return &corev1.Secret{} },
	"networking.k8s.io/v1/NetworkPolicy":      func() any { return &networkingv1.NetworkPolicy{} },
	"networking.k8s.io/v1/Ingress":            func() any { return &networkingv1.Ingress{} },
	"policy/v1/PodDisruptionBudget":           func() any { return &policyv1.PodDisruptionBudget{} },
	"autoscaling/v2/HorizontalPodAutoscaler":  func() any { return &autoscalingv2.HorizontalPodAutoscaler{} },
	"monitoring.coreos.com/v1/ServiceMonitor": func() any { return &monitoringv1.ServiceMonitor{} },
	"monitoring.coreos.com/v1/PrometheusRule": func() any { return &monitoringv1.PrometheusRule{} },
}

// render is `helm template` through Helm's library (a client-only dry-run
// install), every object decoded strictly: a field its type lacks or a
// value of the wrong type fails.
func render(t *testing.T, vals map[string]any) []rendered {
	t.Helper()
	out, err := renderErr(t, vals)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func renderErr(t *testing.T, vals map[string]any) ([]rendered, error) {
	t.Helper()
	install := action.NewInstall(&action.Configuration{Log: t.Logf})
	install.DryRun = true
	install.ClientOnly = true
	install.Replace = true
	install.ReleaseName = release
	install.Namespace = namespace
	install.KubeVersion = kubeVersion
	rel, err := install.Run(loadChart(t), vals)
	if err != nil {
		return nil, err
	}
	manifests := []string{rel.Manifest}
	for _, h := range rel.Hooks {
		manifests = append(manifests, "# Source: "+h.Path+"\n"+h.Manifest)
	}
	var objs []rendered
	for _, m := range manifests {
		for _, doc := range releaseutil.SplitManifests(m) {
			o, err := decode(doc)
			if err != nil {
				return nil, err
			}
			if o != nil {
				objs = append(objs, *o)
			}
		}
	}
	return objs, nil
}

func decode(doc string) (*rendered, error) {
	source := ""
	if i := strings.Index(doc, "# Source: "); i >= 0 {
		source, _, _ = strings.Cut(doc[i+len("# Source: "):], "\n")
	}
	js, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		return nil, fmt.Errorf("%s: %v", source, err)
	}
	if string(js) == "null" {
		return nil, nil
	}
	var tm metav1.TypeMeta
	if err := json.Unmarshal(js, &tm); err != nil {
		return nil, fmt.Errorf("%s: %v", source, err)
	}
	mk, ok := types[tm.APIVersion+"/"+tm.Kind]
	if !ok {
		return nil, fmt.Errorf("%s renders %s %s, which the test has no type for", source, tm.APIVersion, tm.Kind)
	}
	obj := mk()
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(obj); err != nil {
		return nil, fmt.Errorf("%s: %s: %v", source, tm.Kind, err)
	}
	// encoding/json matches a field's name in any case (clusterIp would
	// pass for clusterIP); the API server's decoder does not, nor does
	// this one, which also refuses a key given twice.
	strict, err := sigsjson.UnmarshalStrict(js, mk())
	if err == nil && len(strict) > 0 {
		err = errors.Join(strict...)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %v", source, tm.Kind, err)
	}
	meta := obj.(metav1.Object)
	if meta.GetName() == "" {
		return nil, fmt.Errorf("%s: a %s without a name", source, tm.Kind)
	}
	return &rendered{source: source, kind: tm.Kind, name: meta.GetName(), obj: obj}, nil
}

// TestChartRendersStrictly renders each value set and checks what every
// object says against the others and against the binary.
func TestChartRendersStrictly(t *testing.T) {
	for _, vs := range valueSets {
		t.Run(vs.name, func(t *testing.T) {
			objs := render(t, values(t, vs.file))
			r := index(t, objs)
			if err := r.check(t, vs.mode); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// release is a rendered release, indexed.
type releaseObjs struct {
	objs      []rendered
	secrets   map[string]map[string]string
	workloads []workload
	services  []*corev1.Service
}

// workload is a Deployment or StatefulSet: its pod template and role.
type workload struct {
	kind, name string
	role       string
	replicas   *int32
	pod        *corev1.PodTemplateSpec
	claims     []corev1.PersistentVolumeClaim
	// serviceName is a StatefulSet's governing Service.
	serviceName string
}

func index(t *testing.T, objs []rendered) *releaseObjs {
	r := &releaseObjs{objs: objs, secrets: map[string]map[string]string{}}
	for _, o := range objs {
		switch v := o.obj.(type) {
		case *corev1.Secret:
			m := map[string]string{}
			for k, b := range v.Data {
				m[k] = string(b)
			}
			for k, s := range v.StringData {
				m[k] = s
			}
			r.secrets[v.Name] = m
		case *appsv1.Deployment:
			r.workloads = append(r.workloads, workload{kind: "Deployment", name: v.Name, role: v.Spec.Template.Labels["app.kubernetes.io/component"], replicas: v.Spec.Replicas, pod: &v.Spec.Template})
			if err := selects(v.Spec.Selector, v.Spec.Template.Labels); err != nil {
				t.Errorf("Deployment %s: %v", v.Name, err)
			}
		case *appsv1.StatefulSet:
			r.workloads = append(r.workloads, workload{kind: "StatefulSet", name: v.Name, role: v.Spec.Template.Labels["app.kubernetes.io/component"], replicas: v.Spec.Replicas, pod: &v.Spec.Template, claims: v.Spec.VolumeClaimTemplates, serviceName: v.Spec.ServiceName})
			if err := selects(v.Spec.Selector, v.Spec.Template.Labels); err != nil {
				t.Errorf("StatefulSet %s: %v", v.Name, err)
			}
		case *corev1.Service:
			r.services = append(r.services, v)
		}
	}
	return r
}

func selects(sel *metav1.LabelSelector, podLabels map[string]string) error {
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return err
	}
	if s.Empty() || !s.Matches(labels.Set(podLabels)) {
		return fmt.Errorf("selector %v does not select its pods %v", sel, podLabels)
	}
	return nil
}

func (r *releaseObjs) role(role string) *workload {
	for i := range r.workloads {
		if r.workloads[i].role == role {
			return &r.workloads[i]
		}
	}
	return nil
}

func (r *releaseObjs) service(name string) *corev1.Service {
	for _, s := range r.services {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// podsSelectedBy lists the workloads whose pods a Service selector picks.
func (r *releaseObjs) podsSelectedBy(sel map[string]string) []*workload {
	var out []*workload
	for i := range r.workloads {
		if len(sel) > 0 && labels.SelectorFromSet(sel).Matches(labels.Set(r.workloads[i].pod.Labels)) {
			out = append(out, &r.workloads[i])
		}
	}
	return out
}

// check runs the checks every value set passes; it returns the first
// failure, so the tests that break a rendering on purpose can see it.
func (r *releaseObjs) check(t *testing.T, mode string) error {
	var roles []string
	for _, w := range r.workloads {
		roles = append(roles, w.kind+"/"+w.role)
	}
	slices.Sort(roles)
	want := []string{"Deployment/api", "Deployment/fanout", "StatefulSet/pusher"}
	if mode == "embedded" {
		want = []string{"StatefulSet/embedded"}
	}
	if !slices.Equal(roles, want) {
		return fmt.Errorf("workloads %v, want %v", roles, want)
	}
	cfgs := map[string]server.Config{}
	for i := range r.workloads {
		w := &r.workloads[i]
		cfg, err := r.checkPod(t, w)
		if err != nil {
			return fmt.Errorf("%s %s: %w", w.kind, w.name, err)
		}
		cfgs[w.role] = cfg
	}
	if err := r.checkServices(); err != nil {
		return err
	}
	if mode == "embedded" {
		return r.checkEmbedded(cfgs["embedded"])
	}
	return r.checkCluster(cfgs)
}

// checkPod parses the pod's arguments and environment with the binary's
// own flag set (server.ParseServe: an unknown flag, a malformed
// RELAYBELL_* value or a configuration the binary would refuse to start
// with fails) and checks the pod's ports, probes, grace and filesystem.
func (r *releaseObjs) checkPod(t *testing.T, w *workload) (server.Config, error) {
	var cfg server.Config
	spec := w.pod.Spec
	if len(spec.Containers) != 1 {
		return cfg, fmt.Errorf("%d containers", len(spec.Containers))
	}
	c := spec.Containers[0]
	if len(c.Args) == 0 || c.Args[0] != "serve" {
		return cfg, fmt.Errorf("args %q do not run relaybell serve", c.Args)
	}
	env, err := r.resolveEnv(w, c.Env)
	if err != nil {
		return cfg, err
	}
	// The process environment is the pod's alone while the flags are read.
	clearEnv(t)
	for k, v := range env {
		if !strings.HasPrefix(k, "RELAYBELL_") {
			return cfg, fmt.Errorf("env %s is not a RELAYBELL_ variable", k)
		}
		t.Setenv(k, v)
	}
	cfg, err = server.ParseServe(c.Args[1:])
	if err != nil {
		return cfg, fmt.Errorf("relaybell %s with its env: %w", strings.Join(c.Args, " "), err)
	}
	for _, name := range []string{"RELAYBELL_POSTGRES", "RELAYBELL_SMTP_PASSWORD", "RELAYBELL_ADMIN_TOKEN"} {
		for _, e := range c.Env {
			if e.Name == name && e.Value != "" {
				return cfg, fmt.Errorf("%s is written into the pod, not read from a Secret", name)
			}
		}
	}

	ports := map[string]corev1.ContainerPort{}
	for _, p := range c.Ports {
		ports[p.Name] = p
	}
	if err := portIs(cfg.HTTPAddr, ports["http"], corev1.ProtocolTCP); err != nil {
		return cfg, fmt.Errorf("HTTP: %w", err)
	}
	probe := func(p *corev1.Probe, path string) error {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != path || p.HTTPGet.Port.String() != "http" {
			return fmt.Errorf("probe %+v, want GET %s on port http", p, path)
		}
		return nil
	}
	if err := probe(c.ReadinessProbe, "/readyz"); err != nil {
		return cfg, fmt.Errorf("readiness %w", err)
	}
	if err := probe(c.LivenessProbe, "/healthz"); err != nil {
		return cfg, fmt.Errorf("liveness %w", err)
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		return cfg, fmt.Errorf("resources %v: want cpu and memory requests and a memory limit", c.Resources)
	}

	// Shutdown: the preStop sleep, then the binary's own grace, inside the
	// pod's termination grace.
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil || c.Lifecycle.PreStop.Sleep == nil || c.Lifecycle.PreStop.Sleep.Seconds <= 0 {
		return cfg, fmt.Errorf("no preStop sleep: %+v", c.Lifecycle)
	}
	sleep := time.Duration(c.Lifecycle.PreStop.Sleep.Seconds) * time.Second
	if spec.TerminationGracePeriodSeconds == nil ||
		time.Duration(*spec.TerminationGracePeriodSeconds)*time.Second <= sleep+cfg.ShutdownGrace {
		return cfg, fmt.Errorf("terminationGracePeriodSeconds %v is not over the preStop sleep %v and RELAYBELL_SHUTDOWN_GRACE %v",
			spec.TerminationGracePeriodSeconds, sleep, cfg.ShutdownGrace)
	}

	// The image's user, a read-only root, /tmp and the data dir volumes.
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		return cfg, fmt.Errorf("container securityContext %+v", sc)
	}
	if ps := spec.SecurityContext; ps == nil || ps.RunAsNonRoot == nil || !*ps.RunAsNonRoot || ps.RunAsUser == nil || *ps.RunAsUser != 65532 {
		return cfg, fmt.Errorf("pod securityContext %+v: want non-root 65532, the image's user", ps)
	}
	volumes := map[string]bool{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = true
	}
	for _, cl := range w.claims {
		volumes[cl.Name] = true
	}
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		if !volumes[m.Name] {
			return cfg, fmt.Errorf("mount %s of volume %s, which the pod lacks", m.MountPath, m.Name)
		}
		mounts[m.MountPath] = m.Name
	}
	if mounts["/tmp"] == "" || mounts[cfg.DataDir] == "" {
		return cfg, fmt.Errorf("mounts %v: want /tmp and the data dir %s writable on a read-only root", mounts, cfg.DataDir)
	}
	if len(spec.TopologySpreadConstraints) == 0 {
		return cfg, fmt.Errorf("no topology spread")
	}
	for _, tsc := range spec.TopologySpreadConstraints {
		if err := selects(tsc.LabelSelector, w.pod.Labels); err != nil {
			return cfg, fmt.Errorf("topology spread on %s: %v", tsc.TopologyKey, err)
		}
	}
	return cfg, nil
}

// resolveEnv gives each variable the value the kubelet would: a Secret's
// key from the rendered Secret (a Secret the operator made stands for a
// value of its own), the pod's name or IP.
func (r *releaseObjs) resolveEnv(w *workload, vars []corev1.EnvVar) (map[string]string, error) {
	env := map[string]string{}
	seen := map[string]bool{}
	for _, e := range vars {
		if seen[e.Name] {
			return nil, fmt.Errorf("env %s set twice", e.Name)
		}
		seen[e.Name] = true
		switch {
		case e.ValueFrom == nil:
			if strings.Contains(e.Value, "$(") {
				return nil, fmt.Errorf("env %s=%q: the test does not expand $(VAR)", e.Name, e.Value)
			}
			env[e.Name] = e.Value
		case e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			s, ok := r.secrets[ref.Name]
			switch {
			case !ok:
				// The operator's own Secret (existingSecret).
				env[e.Name] = "from-secret-" + ref.Name + "-" + ref.Key
			case s[ref.Key] != "":
				env[e.Name] = s[ref.Key]
			case ref.Optional != nil && *ref.Optional:
			default:
				if _, has := s[ref.Key]; !has {
					return nil, fmt.Errorf("env %s reads key %s, which Secret %s lacks", e.Name, ref.Key, ref.Name)
				}
			}
		case e.ValueFrom.FieldRef != nil:
			switch e.ValueFrom.FieldRef.FieldPath {
			case "metadata.name":
				env[e.Name] = w.name + "-0"
			case "status.podIP":
				env[e.Name] = podIP
			default:
				return nil, fmt.Errorf("env %s from field %s", e.Name, e.ValueFrom.FieldRef.FieldPath)
			}
		default:
			return nil, fmt.Errorf("env %s: %+v", e.Name, e.ValueFrom)
		}
	}
	return env, nil
}

// portIs checks a listen address's port is the container port.
func portIs(addr string, p corev1.ContainerPort, proto corev1.Protocol) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if p.ContainerPort == 0 || strconv.Itoa(int(p.ContainerPort)) != port || p.Protocol != proto {
		return fmt.Errorf("listens on %s, container port %+v", addr, p)
	}
	return nil
}

// checkServices: each Service selects pods that have the ports it targets.
func (r *releaseObjs) checkServices() error {
	for _, s := range r.services {
		pods := r.podsSelectedBy(s.Spec.Selector)
		if len(pods) == 0 {
			return fmt.Errorf("Service %s selects no pod (%v)", s.Name, s.Spec.Selector)
		}
		for _, sp := range s.Spec.Ports {
			for _, w := range pods {
				found := false
				for _, cp := range w.pod.Spec.Containers[0].Ports {
					if (sp.TargetPort.String() == cp.Name || sp.TargetPort.IntValue() == int(cp.ContainerPort) ||
						(sp.TargetPort.IntValue() == 0 && sp.TargetPort.String() == "0" && sp.Port == cp.ContainerPort)) && sp.Protocol == cp.Protocol {
						found = true
					}
				}
				if !found {
					return fmt.Errorf("Service %s port %s targets %s, which %s's pods lack", s.Name, sp.Name, sp.TargetPort.String(), w.name)
				}
			}
		}
	}
	// A StatefulSet's governing Service gives its pods their stable DNS
	// names: it must be rendered, headless, and select the set's pods.
	for _, w := range r.workloads {
		if w.kind != "StatefulSet" {
			continue
		}
		s := r.service(w.serviceName)
		if s == nil || s.Spec.ClusterIP != corev1.ClusterIPNone ||
			!slices.ContainsFunc(r.podsSelectedBy(s.Spec.Selector), func(p *workload) bool { return p.name == w.name }) {
			return fmt.Errorf("StatefulSet %s: serviceName %q is not a headless Service selecting its pods", w.name, w.serviceName)
		}
	}
	for _, o := range r.objs {
		switch v := o.obj.(type) {
		case *policyv1.PodDisruptionBudget:
			if w := r.role(v.Labels["app.kubernetes.io/component"]); w == nil || selects(v.Spec.Selector, w.pod.Labels) != nil {
				return fmt.Errorf("PodDisruptionBudget %s selects no workload", v.Name)
			}
		case *autoscalingv2.HorizontalPodAutoscaler:
			ref := v.Spec.ScaleTargetRef
			var target *workload
			for i := range r.workloads {
				if r.workloads[i].kind == ref.Kind && r.workloads[i].name == ref.Name {
					target = &r.workloads[i]
				}
			}
			if target == nil || ref.APIVersion != "apps/v1" {
				return fmt.Errorf("HPA %s scales %+v, which is not rendered", v.Name, ref)
			}
			if target.replicas != nil {
				return fmt.Errorf("%s sets replicas beside the HPA %s that scales it", target.name, v.Name)
			}
		case *networkingv1.Ingress:
			for _, rule := range v.Spec.Rules {
				for _, p := range rule.HTTP.Paths {
					s := r.service(p.Backend.Service.Name)
					if s == nil || !slices.ContainsFunc(s.Spec.Ports, func(sp corev1.ServicePort) bool { return sp.Name == p.Backend.Service.Port.Name }) {
						return fmt.Errorf("Ingress %s routes to %s port %s, which is not rendered", v.Name, p.Backend.Service.Name, p.Backend.Service.Port.Name)
					}
				}
			}
		case *monitoringv1.ServiceMonitor:
			var found bool
			for _, s := range r.services {
				if selects(&v.Spec.Selector, s.Labels) == nil {
					found = true
					if len(r.podsSelectedBy(s.Spec.Selector)) != len(r.workloads) {
						return fmt.Errorf("ServiceMonitor %s: Service %s does not select every pod", v.Name, s.Name)
					}
				}
			}
			if !found {
				return fmt.Errorf("ServiceMonitor %s selects no Service", v.Name)
			}
		}
	}
	return nil
}

// checkCluster: the roles reach each other. Fan-out and pusher nodes join
// the ring through a headless Service over them; pushers take batches on
// their internal address, advertised as the pod's IP, which only fan-out
// pods may reach; the cluster token comes from a Secret, the same one for
// all.
func (r *releaseObjs) checkCluster(cfgs map[string]server.Config) error {
	api, fanout, pusher := cfgs["api"], cfgs["fanout"], cfgs["pusher"]
	if api.Roles != "api" || fanout.Roles != "fanout" || pusher.Roles != "pusher" {
		return fmt.Errorf("roles %q %q %q", api.Roles, fanout.Roles, pusher.Roles)
	}
	for role, c := range cfgs {
		if c.Postgres == "" || c.Kafka == "" || c.ClickHouse == "" {
			return fmt.Errorf("%s: postgres %q kafka %q clickhouse %q", role, c.Postgres, c.Kafka, c.ClickHouse)
		}
		if c.Postgres != api.Postgres || c.Kafka != api.Kafka || c.ClickHouse != api.ClickHouse {
			return fmt.Errorf("%s's backends differ from api's", role)
		}
	}
	if api.Join != "" {
		return fmt.Errorf("an api node joins the ring (%s)", api.Join)
	}
	for _, role := range []string{"fanout", "pusher"} {
		c, w := cfgs[role], r.role(role)
		if c.ClusterToken == "" || c.ClusterToken != cfgs["fanout"].ClusterToken {
			return fmt.Errorf("%s: cluster token %q, fan-out's %q", role, c.ClusterToken, cfgs["fanout"].ClusterToken)
		}
		if ref := envFrom(w, "RELAYBELL_CLUSTER_TOKEN"); ref == nil || ref.SecretKeyRef == nil {
			return fmt.Errorf("%s: the cluster token is not read from a Secret", role)
		}
		if c.AdvertiseHost != podIP {
			return fmt.Errorf("%s advertises %q, not the pod's IP", role, c.AdvertiseHost)
		}
		ports := map[string]corev1.ContainerPort{}
		for _, p := range w.pod.Spec.Containers[0].Ports {
			ports[p.Name] = p
		}
		if err := portIs(c.GossipAddr, ports["gossip-tcp"], corev1.ProtocolTCP); err != nil {
			return fmt.Errorf("%s gossip: %w", role, err)
		}
		if err := portIs(c.GossipAddr, ports["gossip-udp"], corev1.ProtocolUDP); err != nil {
			return fmt.Errorf("%s gossip: %w", role, err)
		}
		for seed := range strings.SplitSeq(c.Join, ",") {
			host, port, err := net.SplitHostPort(seed)
			if err != nil {
				return fmt.Errorf("%s seed %q: %v", role, seed, err)
			}
			name, _, _ := strings.Cut(host, ".")
			s := r.service(name)
			if s == nil || s.Spec.ClusterIP != corev1.ClusterIPNone || !s.Spec.PublishNotReadyAddresses {
				return fmt.Errorf("%s joins through %s, not a headless Service listing unready pods", role, seed)
			}
			if rest := strings.TrimPrefix(host, name); rest != "" && !strings.HasPrefix(rest, "."+namespace) {
				return fmt.Errorf("seed %s is in another namespace", seed)
			}
			var members []string
			for _, m := range r.podsSelectedBy(s.Spec.Selector) {
				members = append(members, m.role)
			}
			slices.Sort(members)
			if !slices.Equal(members, []string{"fanout", "pusher"}) {
				return fmt.Errorf("the gossip Service %s selects %v, want the fan-out and pusher pods", s.Name, members)
			}
			for _, proto := range []corev1.Protocol{corev1.ProtocolTCP, corev1.ProtocolUDP} {
				if !slices.ContainsFunc(s.Spec.Ports, func(sp corev1.ServicePort) bool {
					return strconv.Itoa(int(sp.Port)) == port && sp.Protocol == proto
				}) {
					return fmt.Errorf("the gossip Service %s has no %s port %s", s.Name, proto, port)
				}
			}
		}
	}
	// The pushers' batch port: their --internal, a container port, open to
	// fan-out pods.
	pw := r.role("pusher")
	var batches corev1.ContainerPort
	for _, p := range pw.pod.Spec.Containers[0].Ports {
		if p.Name == "batches" {
			batches = p
		}
	}
	if err := portIs(pusher.InternalAddr, batches, corev1.ProtocolTCP); err != nil {
		return fmt.Errorf("pusher internal address: %w", err)
	}
	fw := r.role("fanout")
	admitted := false
	for _, o := range r.objs {
		np, ok := o.obj.(*networkingv1.NetworkPolicy)
		if !ok || selects(&np.Spec.PodSelector, pw.pod.Labels) != nil {
			continue
		}
		for _, rule := range np.Spec.Ingress {
			if !slices.ContainsFunc(rule.Ports, func(p networkingv1.NetworkPolicyPort) bool {
				return p.Port != nil && p.Port.IntValue() == int(batches.ContainerPort)
			}) {
				continue
			}
			if len(rule.From) == 0 {
				return fmt.Errorf("NetworkPolicy %s opens the batch port to everyone", np.Name)
			}
			for _, peer := range rule.From {
				if peer.PodSelector == nil {
					continue
				}
				if selects(peer.PodSelector, fw.pod.Labels) == nil {
					admitted = true
				}
				if selects(peer.PodSelector, r.role("api").pod.Labels) == nil {
					return fmt.Errorf("NetworkPolicy %s admits api pods to the batch port", np.Name)
				}
			}
		}
	}
	if !admitted {
		return fmt.Errorf("no NetworkPolicy admits fan-out pods to the pushers' batch port %d", batches.ContainerPort)
	}
	return nil
}

func envFrom(w *workload, name string) *corev1.EnvVarSource {
	for _, e := range w.pod.Spec.Containers[0].Env {
		if e.Name == name {
			return e.ValueFrom
		}
	}
	return nil
}

// checkEmbedded: one replica, every role, its data on a claimed volume.
func (r *releaseObjs) checkEmbedded(cfg server.Config) error {
	w := r.role("embedded")
	if w.replicas == nil || *w.replicas != 1 {
		return fmt.Errorf("embedded replicas %v, want 1", w.replicas)
	}
	if cfg.Roles != "all" || cfg.Postgres != "" || cfg.Kafka != "" || cfg.Join != "" {
		return fmt.Errorf("embedded config %+v", cfg)
	}
	for _, m := range w.pod.Spec.Containers[0].VolumeMounts {
		if m.MountPath == cfg.DataDir {
			if !slices.ContainsFunc(w.claims, func(c corev1.PersistentVolumeClaim) bool { return c.Name == m.Name }) {
				return fmt.Errorf("the data dir %s is not on a claimed volume", cfg.DataDir)
			}
			return nil
		}
	}
	return fmt.Errorf("the data dir %s is not mounted", cfg.DataDir)
}

// The checks fail on what they are for: a flag the binary does not know,
// a malformed variable, a pusher off the ring, an unknown field.
func TestChartChecksCatchMistakes(t *testing.T) {
	fresh := func() *releaseObjs { return index(t, render(t, map[string]any{})) }
	cases := map[string]struct {
		change func(r *releaseObjs)
		want   string
	}{
		"unknown flag": {func(r *releaseObjs) {
			c := &r.role("api").pod.Spec.Containers[0]
			c.Args = append(c.Args, "--no-such-flag")
		}, "flag provided but not defined: -no-such-flag"},
		"malformed env": {func(r *releaseObjs) {
			setEnv(r.role("pusher"), "RELAYBELL_SHUTDOWN_GRACE", "50")
		}, `RELAYBELL_SHUTDOWN_GRACE="50" is not a duration`},
		"pusher without internal address": {func(r *releaseObjs) {
			setEnv(r.role("pusher"), "RELAYBELL_INTERNAL_ADDR", "0.0.0.0:9999")
		}, "pusher internal address"},
		"seed not headless": {func(r *releaseObjs) {
			setEnv(r.role("fanout"), "RELAYBELL_JOIN", release+"-relaybell-api:7946")
		}, "not a headless Service"},
		"governing service not headless": {func(r *releaseObjs) {
			r.role("pusher").serviceName = release + "-relaybell-api"
		}, `serviceName "` + release + `-relaybell-api" is not a headless Service`},
		"grace too short": {func(r *releaseObjs) {
			g := int64(30)
			r.role("pusher").pod.Spec.TerminationGracePeriodSeconds = &g
		}, "is not over the preStop sleep"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := fresh()
			tc.change(r)
			err := r.check(t, "cluster")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("check = %v, want %q", err, tc.want)
			}
		})
	}
	t.Run("unknown field", func(t *testing.T) {
		_, err := decode("apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec: {clusterIp: None}\n")
		if err == nil || !strings.Contains(err.Error(), `unknown field "spec.clusterIp"`) {
			t.Fatalf("decode = %v", err)
		}
	})
	t.Run("wrong type", func(t *testing.T) {
		_, err := decode("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec: {replicas: \"2\"}\n")
		if err == nil || !strings.Contains(err.Error(), "cannot unmarshal string") {
			t.Fatalf("decode = %v", err)
		}
	})
}

func setEnv(w *workload, name, value string) {
	c := &w.pod.Spec.Containers[0]
	for i := range c.Env {
		if c.Env[i].Name == name {
			c.Env[i] = corev1.EnvVar{Name: name, Value: value}
			return
		}
	}
	c.Env = append(c.Env, corev1.EnvVar{Name: name, Value: value})
}

// The chart refuses what cannot run: a cluster without its database, a
// mode it does not know, and (values.schema.json) a key it does not know or
// a value of the wrong type.
func TestChartRefuses(t *testing.T) {
	for name, tc := range map[string]struct {
		vals map[string]any
		want string
	}{
		"no postgres":             {map[string]any{"postgres": map[string]any{"url": ""}}, "postgres.url is required in cluster mode"},
		"unknown mode":            {map[string]any{"mode": "single"}, "at '/mode': value must be one of 'cluster', 'embedded'"},
		"misspelt key":            {map[string]any{"postgress": map[string]any{"url": "postgres://db/x"}}, "additional properties 'postgress' not allowed"},
		"wrong type":              {map[string]any{"pusher": map[string]any{"replicas": "three"}}, "at '/pusher/replicas': got string, want integer"},
		"extraEnv not RELAYBELL_": {map[string]any{"extraEnv": []any{map[string]any{"name": "GODEBUG", "value": "x"}}}, "at '/extraEnv/0/name': 'GODEBUG' does not match pattern"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := renderErr(t, tc.vals)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("render = %v, want %q", err, tc.want)
			}
		})
	}
}

// A generated cluster token is one value for every pod, and stays with
// existingSecret unset; with it set the chart makes no Secret.
func TestChartSecrets(t *testing.T) {
	r := index(t, render(t, map[string]any{}))
	s := r.secrets[release+"-relaybell"]
	if len(s["cluster-token"]) != 40 {
		t.Fatalf("generated cluster token %q", s["cluster-token"])
	}
	r = index(t, render(t, map[string]any{"secrets": map[string]any{"existingSecret": "mine"}}))
	if len(r.secrets) != 0 {
		t.Fatalf("secrets %v made beside existingSecret", r.secrets)
	}
	if ref := envFrom(r.role("pusher"), "RELAYBELL_CLUSTER_TOKEN"); ref == nil || ref.SecretKeyRef.Name != "mine" {
		t.Fatalf("cluster token from %+v", ref)
	}
}
