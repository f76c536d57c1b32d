package dashboard

import (
	"io/fs"
	"os"
	"os/exec"
	"path"
	"regexp"
	"strings"
	"testing"
)

var (
	importRe = regexp.MustCompile(`(?m)^import \{([^}]*)\} from '([^']+)';$`)
	exportRe = regexp.MustCompile(`(?m)^export (?:async )?(?:function|const|let|class) (\w+)`)
)

// Every module of the page is served as JavaScript, its relative imports
// name served files and what they import is exported there (a module that
// fails to load leaves the page blank); none is over 600 lines.
func TestDashboardModules(t *testing.T) {
	modules := map[string]string{} // name under static/ -> text
	err := fs.WalkDir(files, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path.Ext(p) != ".js" {
			return err
		}
		name := strings.TrimPrefix(p, "static/")
		body, ct, ok := File(name)
		if !ok || !strings.HasPrefix(ct, "text/javascript") {
			t.Errorf("%s: served %v as %q", name, ok, ct)
		}
		modules[name] = string(body)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"app.js", "api.js", "router.js", "forms.js", "lists.js", "pages/home.js", "pages/compose.js"} {
		if _, ok := modules[want]; !ok {
			t.Errorf("no module %s", want)
		}
	}
	if index, _, _ := File(Index); !strings.Contains(string(index), `<script type="module" src="/assets/app.js"></script>`) {
		t.Errorf("index.html does not load app.js:\n%s", index)
	}
	for name, text := range modules {
		if strings.HasPrefix(name, "vendor/") {
			continue
		}
		if n := strings.Count(text, "\n"); n > 600 {
			t.Errorf("%s: %d lines", name, n)
		}
		for _, m := range importRe.FindAllStringSubmatch(text, -1) {
			target := path.Join(path.Dir(name), m[2])
			if !strings.HasPrefix(m[2], "./") && !strings.HasPrefix(m[2], "../") {
				t.Errorf("%s: import %q is not relative", name, m[2])
				continue
			}
			exported, ok := modules[target]
			if !ok {
				t.Errorf("%s: import %q names no served file", name, m[2])
				continue
			}
			if strings.HasPrefix(target, "vendor/") {
				continue // minified: checked by the browser tests
			}
			have := map[string]bool{}
			for _, e := range exportRe.FindAllStringSubmatch(exported, -1) {
				have[e[1]] = true
			}
			for _, n := range strings.Split(m[1], ",") {
				if n = strings.TrimSpace(n); !have[n] {
					t.Errorf("%s: %s does not export %s", name, target, n)
				}
			}
		}
	}
}

// useLoad drops answers older than the latest request
// (testdata/useload_test.mjs, under node, with the vendored Preact).
func TestDashboardUseLoad(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("no node")
		}
		t.Skip("no node")
	}
	out, err := exec.Command(node, "--experimental-default-type=module", "testdata/useload_test.mjs").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("%v\n%s", err, out)
	}
}
