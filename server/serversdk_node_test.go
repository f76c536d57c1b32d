package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// nodeSDK finds node and sdk/node's npm packages: the test skips without
// them (and with -short), and fails instead under CI.
func nodeSDK(t *testing.T) (node, dir string) {
	t.Helper()
	if testing.Short() {
		t.Skip("Node SDK: skipped with -short")
	}
	dir, err := filepath.Abs(filepath.Join("..", "sdk", "node"))
	if err != nil {
		t.Fatal(err)
	}
	node, nodeErr := exec.LookPath("node")
	_, npmErr := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json"))
	for _, missing := range []struct {
		err  error
		what string
	}{
		{nodeErr, "node (apt-get install nodejs npm)"},
		{npmErr, "its npm packages (npm ci in sdk/node)"},
	} {
		if missing.err == nil {
			continue
		}
		if os.Getenv("CI") != "" {
			t.Fatalf("Node SDK: no %s", missing.what)
		}
		t.Skipf("Node SDK: no %s", missing.what)
	}
	return node, dir
}

func runSDKNode(t *testing.T, node, dir string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(node, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("node %s: %v\n%s", strings.Join(args, " "), err, out.Bytes())
	}
	return out.String()
}

// The Node SDK's types are openapi-typescript's output for api/openapi.json
// as checked in: a change to the document the types do not match fails
// here until `npm run generate` in sdk/node is run and committed.
func TestNodeSDKTypesMatchOpenAPI(t *testing.T) {
	node, dir := nodeSDK(t)
	out := filepath.Join(t.TempDir(), "openapi.ts")
	runSDKNode(t, node, dir, nil, filepath.Join("node_modules", "openapi-typescript", "bin", "cli.js"),
		filepath.Join("..", "..", "api", "openapi.json"), "--empty-objects-unknown", "--output", out)
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(dir, "gen", "openapi.ts"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("sdk/node/gen/openapi.ts does not match api/openapi.json: run `npm run generate` in sdk/node and commit it")
	}
}

// The Node SDK's suite (node --test) against an embedded RelayBell, with
// a loopback webhook receiver that shows what it got at /captured.
func TestNodeSDKAgainstServer(t *testing.T) {
	node, dir := nodeSDK(t)
	rc := newSDKWebhookReceiver(t)
	captured := httptestCaptured(rc)
	u, _ := url.Parse(captured)
	ts := startServer(t, func(c *Config) { c.WebhookAllowHosts = u.Host })
	w := ts.createWebsite()
	ts.subscribe(w, ts.push.NewBrowser(w.VAPIDPublicKey), map[string]any{"externalId": "user-1"})

	runSDKNode(t, node, dir, nil, filepath.Join("node_modules", "typescript", "bin", "tsc"), "--project", ".")
	out := runSDKNode(t, node, dir, []string{
		"RELAYBELL_URL=" + ts.base,
		"RELAYBELL_API_KEY=" + w.APIKey,
		"RELAYBELL_WEBHOOK_RECEIVER=" + captured,
		"RELAYBELL_EVENTS_KEY=" + ts.scopedKey(w, "events:write"),
	}, "--test", "--test-reporter=tap", filepath.Join("dist", "test"))
	for _, want := range []string{"# pass 12", "# fail 0", "# skipped 0"} {
		if !strings.Contains(out, want) {
			t.Fatalf("node --test: no %q in\n%s", want, out)
		}
	}
}

// httptestCaptured serves the receiver's deliveries at /captured (as
// [{header, body}], first header values only) next to /in, and returns the
// receiver's base URL.
func httptestCaptured(rc *sdkWebhookReceiver) string {
	inner := rc.srv.Config.Handler
	rc.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/captured" {
			inner.ServeHTTP(w, r)
			return
		}
		type delivery struct {
			Header map[string]string `json:"header"`
			Body   string            `json:"body"`
		}
		rc.mu.Lock()
		all := []delivery{}
		for _, d := range rc.got {
			h := map[string]string{}
			for k := range d.Header {
				h[k] = d.Header.Get(k)
			}
			all = append(all, delivery{h, string(d.Body)})
		}
		rc.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(all)
	})
	return rc.srv.URL
}
