package deploy

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"text/template"

	"go.yaml.in/yaml/v2"
)

// helmFuncs is the part of Helm's template functions the chart uses.
func helmFuncs(t *template.Template) template.FuncMap {
	return template.FuncMap{
		"include": func(name string, data any) (string, error) {
			var b bytes.Buffer
			err := t.ExecuteTemplate(&b, name, data)
			return b.String(), err
		},
		"nindent": func(n int, s string) string {
			pad := strings.Repeat(" ", n)
			return "\n" + pad + strings.ReplaceAll(s, "\n", "\n"+pad)
		},
		"toYaml": func(v any) (string, error) {
			b, err := yaml.Marshal(v)
			return strings.TrimSuffix(string(b), "\n"), err
		},
		"quote": func(v any) string { return fmt.Sprintf("%q", fmt.Sprint(v)) },
		"required": func(msg string, v any) (any, error) {
			if v == nil || v == "" {
				return nil, fmt.Errorf("%s", msg)
			}
			return v, nil
		},
	}
}

// render renders every template of the chart with its default values.
func render(t *testing.T) []map[string]any {
	t.Helper()
	dir := filepath.Join("helm", "relaybell")
	raw, err := os.ReadFile(filepath.Join(dir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var values map[string]any
	if err := yaml.Unmarshal(raw, &values); err != nil {
		t.Fatalf("values.yaml: %v", err)
	}
	data := map[string]any{"Values": values, "Release": map[string]any{"Name": "rb"}}
	files, _ := filepath.Glob(filepath.Join(dir, "templates", "*"))
	root := template.New("chart")
	root.Funcs(helmFuncs(root))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := root.New(filepath.Base(f)).Parse(string(b)); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	var docs []map[string]any
	for _, f := range files {
		if strings.HasPrefix(filepath.Base(f), "_") {
			continue
		}
		var out bytes.Buffer
		if err := root.ExecuteTemplate(&out, filepath.Base(f), data); err != nil {
			t.Fatalf("rendering %s: %v", f, err)
		}
		for _, part := range strings.Split(out.String(), "\n---\n") {
			var doc map[string]any
			if err := yaml.Unmarshal([]byte(part), &doc); err != nil {
				t.Fatalf("%s renders invalid YAML: %v\n%s", f, err, part)
			}
			if doc != nil {
				docs = append(docs, doc)
			}
		}
	}
	return docs
}

// TestHelmChartRendersEveryRole renders the chart with its default values
// and checks each role runs with the settings `relaybell serve` reads.
func TestHelmChartRendersEveryRole(t *testing.T) {
	docs := render(t)
	src, err := os.ReadFile(filepath.Join("..", "server", "config.go"))
	if err != nil {
		t.Fatal(err)
	}
	known := regexp.MustCompile(`"(RELAYBELL_[A-Z_]+)"`).FindAllStringSubmatch(string(src), -1)
	var names []string
	for _, m := range known {
		names = append(names, m[1])
	}
	names = append(names, "RELAYBELL_LOG_LEVEL") // read by the serve command
	roles := map[string]string{}
	for _, d := range docs {
		kind, _ := d["kind"].(string)
		if kind != "Deployment" && kind != "StatefulSet" {
			continue
		}
		spec := d["spec"].(map[any]any)["template"].(map[any]any)["spec"].(map[any]any)
		c := spec["containers"].([]any)[0].(map[any]any)
		args := fmt.Sprint(c["args"])
		env := map[string]bool{}
		for _, e := range c["env"].([]any) {
			name := e.(map[any]any)["name"].(string)
			if !slices.Contains(names, name) {
				t.Errorf("%s sets %s, which relaybell does not read", kind, name)
			}
			env[name] = true
		}
		for _, want := range []string{"RELAYBELL_POSTGRES", "RELAYBELL_KAFKA", "RELAYBELL_CLICKHOUSE", "RELAYBELL_NODE"} {
			if !env[want] {
				t.Errorf("%s %s lacks %s", kind, args, want)
			}
		}
		switch {
		case strings.Contains(args, "pusher"):
			roles["pusher"] = kind
			if !env["RELAYBELL_JOIN"] || !env["RELAYBELL_INTERNAL_ADDR"] || !env["RELAYBELL_CLUSTER_TOKEN"] {
				t.Errorf("pusher env %v", env)
			}
		case strings.Contains(args, "fanout"):
			roles["fanout"] = kind
			if !env["RELAYBELL_JOIN"] || !env["RELAYBELL_CLUSTER_TOKEN"] {
				t.Errorf("fanout env %v", env)
			}
		case strings.Contains(args, "api"):
			roles["api"] = kind
		}
	}
	if roles["api"] != "Deployment" || roles["fanout"] != "Deployment" || roles["pusher"] != "StatefulSet" {
		t.Fatalf("roles %v", roles)
	}
}
