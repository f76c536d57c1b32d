package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The security each route declares in openapi.json is what run checks
// (router.go), so that a client generated from the document sends what
// the server needs: the API key or a session on key routes, the session
// alone on the routes of people, the csrf scheme's header with the session
// on every change (checkCSRF) and alone on the /auth routes that need no
// session, the operator token on the admin API, nothing on public routes.
func TestOpenAPISecurity(t *testing.T) {
	h := newHarness(t)
	var doc struct {
		Security []map[string][]string `json:"security"`
		Paths    map[string]map[string]struct {
			Security *[]map[string][]string `json:"security"`
		} `json:"paths"`
		Components struct {
			SecuritySchemes map[string]struct{ Type, In, Name string } `json:"securitySchemes"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openAPIDoc, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Security != nil {
		t.Errorf("the document's default security %v: every operation states its own", doc.Security)
	}
	if csrf := doc.Components.SecuritySchemes["csrf"]; csrf.Type != "apiKey" || csrf.In != "header" || csrf.Name != csrfHeader {
		t.Errorf("csrf scheme %+v, want the apiKey in the header %s", csrf, csrfHeader)
	}
	type requirements = []map[string][]string
	for _, rt := range h.api.router.routes {
		changes := rt.method != http.MethodGet && rt.method != http.MethodHead
		session := map[string][]string{"session": {}}
		if changes {
			session["csrf"] = []string{}
		}
		var want requirements
		switch {
		case rt.auth == authNone:
			want = requirements{}
		case rt.auth == authAdmin:
			want = requirements{{"adminToken": {}}}
		case rt.auth == authPerson && changes:
			want = requirements{{"csrf": {}}}
		case rt.auth == authPerson:
			want = requirements{}
		case rt.auth == authSession || rt.sessionOnly:
			want = requirements{session}
		default:
			want = requirements{{"apiKey": {}}, session}
		}
		got := doc.Paths[rt.pattern][strings.ToLower(rt.method)].Security
		if got == nil {
			t.Errorf("%s %s declares no security; want %v", rt.method, rt.pattern, want)
		} else if !reflect.DeepEqual(*got, want) {
			t.Errorf("%s %s security %v, want %v", rt.method, rt.pattern, *got, want)
		}
	}
}

// contractTools is the npm project of the contract tooling (contracttest)
// and node, or skips the test when node or its packages are missing (fails
// instead under CI, where .ci/run installs them) and with -short.
func contractTools(t *testing.T) (node, dir string) {
	t.Helper()
	if testing.Short() {
		t.Skip("contract tooling: skipped with -short")
	}
	dir, err := filepath.Abs("contracttest")
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
		{npmErr, "its npm packages (npm ci in api/contracttest)"},
	} {
		if missing.err == nil {
			continue
		}
		if os.Getenv("CI") != "" {
			t.Fatalf("contract tooling: no %s", missing.what)
		}
		t.Skipf("contract tooling: no %s", missing.what)
	}
	return node, dir
}

// nodeCommand runs a script, such as one of dir's node_modules/.bin, in
// dir with env added to this process's environment.
func nodeCommand(node, dir string, env []string, args ...string) *exec.Cmd {
	cmd := exec.Command(node, args...)
	cmd.Dir = dir
	// Redocly CLI would otherwise send usage data and look for updates.
	cmd.Env = append(append(os.Environ(), "REDOCLY_TELEMETRY=off", "REDOCLY_SUPPRESS_UPDATE_NOTICE=true"), env...)
	return cmd
}

// runNode runs nodeCommand and returns its standard output; it fails the
// test when the script fails.
func runNode(t *testing.T, node, dir string, env []string, args ...string) []byte {
	t.Helper()
	cmd := nodeCommand(node, dir, env, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout.Bytes(), stderr.Bytes())
	}
	return stdout.Bytes()
}

// openapi.json passes Redocly CLI's recommended rules (contracttest/redocly.yaml)
// with no error and no warning.
func TestOpenAPILint(t *testing.T) {
	node, dir := contractTools(t)
	cmd := nodeCommand(node, dir, nil, filepath.Join("node_modules", ".bin", "redocly"), "lint", "--format=json", filepath.Join("..", "openapi.json"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, runErr := cmd.Output()
	var report struct {
		Totals struct {
			Errors, Warnings, Ignored int
		} `json:"totals"`
		Problems []struct {
			RuleID   string `json:"ruleId"`
			Severity string `json:"severity"`
			Message  string `json:"message"`
			Location []struct {
				Pointer string `json:"pointer"`
			} `json:"location"`
		} `json:"problems"`
	}
	if err := json.Unmarshal(out, &report); err != nil {
		t.Fatalf("redocly lint: %v (%v)\nstdout:\n%s\nstderr:\n%s", err, runErr, out, stderr.Bytes())
	}
	for _, p := range report.Problems {
		where := ""
		if len(p.Location) > 0 {
			where = p.Location[0].Pointer
		}
		t.Errorf("%s %s at %s: %s", p.Severity, p.RuleID, where, p.Message)
	}
	if report.Totals.Errors != 0 || report.Totals.Warnings != 0 || report.Totals.Ignored != 0 || runErr != nil {
		t.Errorf("redocly lint: %+v, exit %v", report.Totals, runErr)
	}
}

// A client generated from openapi.json works against a real server: the
// types openapi-typescript makes from it compile under tsc --strict, and
// contracttest/client.ts, with openapi-fetch, signs in, makes a change
// under the session (which the server takes only with the CSRF header the
// document declares for it), reads without that header, and makes a change
// and a read with an API key. The types are made from the file in the
// tree, the security each call carries is read from the served document.
func TestOpenAPIClient(t *testing.T) {
	node, dir := contractTools(t)
	h := newHarness(t)
	base := serveLingering(t, h.api)
	h.member(t, "owner@contract.example", testPassword, h.site.AccountID, "owner")

	bin := func(name string) string { return filepath.Join("node_modules", ".bin", name) }
	runNode(t, node, dir, nil, bin("openapi-typescript"), filepath.Join("..", "openapi.json"), "--output", filepath.Join("gen", "openapi.ts"))
	runNode(t, node, dir, nil, bin("tsc"), "--project", ".")
	out := runNode(t, node, dir, []string{
		"RELAYBELL_URL=" + base,
		"RELAYBELL_EMAIL=owner@contract.example",
		"RELAYBELL_PASSWORD=" + testPassword,
		"RELAYBELL_PROJECT_ID=" + h.site.ProjectID,
		"RELAYBELL_API_KEY=" + h.site.APIKey,
	}, filepath.Join("dist", "client.js"))

	want := `POST /api/v1/auth/login 200 csrf
  signed in as owner@contract.example
POST /api/v1/topics 201 session+csrf
  topic release-notes
GET /api/v1/topics 200 session
  topics release-notes
POST /api/v1/segments 201 apiKey
  segment German speakers: 1 rule
GET /api/v1/segments 200 apiKey
  segments German speakers
`
	if string(out) != want {
		t.Errorf("client.js printed\n%s\nwant\n%s", out, want)
	}
}
