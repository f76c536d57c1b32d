package server

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestLayers: no package imports, directly or not, one above it. The
// storage and membership layers know nothing of the roles they serve, the
// roles nothing of the API, and nothing but this composition root (and the
// command) knows every role.
func TestLayers(t *testing.T) {
	const mod = "github.com/relaybell/relaybell/"
	f := func(pkgs string, forbidden ...string) {
		t.Helper()
		out, err := exec.Command("go", "list", "-deps", "./"+pkgs).Output()
		if err != nil {
			t.Fatalf("go list -deps ./%s: %v", pkgs, err)
		}
		deps := strings.Fields(string(out))
		for _, f := range forbidden {
			if slices.Contains(deps, mod+f) {
				t.Errorf("%s imports %s", pkgs, f)
			}
		}
	}
	t.Chdir("..")
	f("ring/...", "pusher", "fanout", "api")
	f("store/...", "audience", "notification", "events", "api", "fanout", "pusher")
	f("webpush/...", "store", "pusher")
	f("audience/", "api", "fanout", "pusher")
	f("pusher/", "fanout", "api")
	f("fanout/", "api")
	f("api/", "server", "fanout", "pusher", "ring")
	f("reports/", "api", "server", "fanout", "pusher")
}
