package sdk

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestRender(t *testing.T) {
	const base = "https://push.example.com/api/v1/projects/0b6f0a4e-8d8e-4f4e-9a53-6f1d3c1f2a10"
	for _, s := range []Script{SDK, Worker} {
		src, err := files.ReadFile(string(s))
		if err != nil {
			t.Fatal(err)
		}
		if n := bytes.Count(src, []byte(placeholder)); n != 1 {
			t.Fatalf("%s holds the placeholder %d times, want once", s, n)
		}
		out, err := Render(s, base)
		if err != nil {
			t.Fatal(err)
		}
		if want := `const BASE = "` + base + `";`; !bytes.Contains(out, []byte(want)) {
			t.Errorf("%s: no %s", s, want)
		}
		if bytes.Contains(out, []byte("__RELAYBELL_BASE__")) {
			t.Errorf("%s: placeholder left", s)
		}
	}

	// A base that would end the string literal is quoted.
	out, err := Render(SDK, `https://x.example/a"</script>`)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(out, []byte(`const BASE = "https://x.example/a\"\u003c/script\u003e";`)) {
		t.Errorf("base not escaped: %s", out[:bytes.IndexByte(out, '\n')])
	}

	for _, bad := range []string{"", "/api/v1/projects/x", "ftp://x.example/", "https://u:p@x.example/", "https://x.example/?q", "javascript:alert(1)"} {
		if _, err := Render(SDK, bad); err == nil {
			t.Errorf("base %q accepted", bad)
		}
	}
	if _, err := Render("other.js", base); err == nil {
		t.Error("unknown script rendered")
	}
}

// TestScriptsParse checks both rendered scripts with node --check when
// node is installed.
func TestScriptsParse(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	dir := t.TempDir()
	for _, s := range []Script{SDK, Worker} {
		out, err := Render(s, "http://127.0.0.1:8080/api/v1/projects/0b6f0a4e-8d8e-4f4e-9a53-6f1d3c1f2a10")
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, string(s))
		if err := os.WriteFile(path, out, 0o644); err != nil {
			t.Fatal(err)
		}
		if msg, err := exec.Command(node, "--check", path).CombinedOutput(); err != nil {
			t.Errorf("%s: %v\n%s", s, err, strings.TrimSpace(string(msg)))
		}
	}
}
