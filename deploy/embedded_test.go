package deploy

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/relaybell/relaybell/bench"
)

// TestEmbeddedSurvivesKill9 is the fault test of the embedded default: one
// process with every role on SQLite, broadcasting to 20,000 browsers of the
// fake push service in its own process, is killed with SIGKILL in the
// middle and started again on the same data directory. Every browser gets
// the notification, the counters add up and the send ends sent.
func TestEmbeddedSurvivesKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binaries")
	}
	dir := t.TempDir()
	for _, cmd := range []string{"relaybell", "fakepush"} {
		if out, err := exec.Command("go", "build", "-o", filepath.Join(dir, cmd), "../cmd/"+cmd).CombinedOutput(); err != nil {
			t.Fatalf("building %s: %v\n%s", cmd, err, out)
		}
	}
	pushAddr, err := bench.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	httpAddr, err := bench.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{t: t, dir: dir, apis: []string{"http://" + httpAddr, "http://" + httpAddr}, push: "http://" + pushAddr}
	t.Cleanup(func() { // after the processes are gone
		if t.Failed() {
			c.dumpLogs()
		}
	})
	c.run("fakepush", filepath.Join(dir, "fakepush"), "-addr", pushAddr)
	if err := bench.WaitHTTP(context.Background(), c.push+"/count"); err != nil {
		t.Fatal(err)
	}

	serve := func() *exec.Cmd {
		cmd := c.run("relaybell", filepath.Join(dir, "relaybell"), "serve", "--http", httpAddr, "--data", filepath.Join(dir, "data"),
			"--admin-token", "test-admin-token", "--push-allow-hosts", pushAddr, "--log-level", "warn")
		if err := bench.WaitHTTP(context.Background(), c.apis[0]+"/readyz"); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	node := serve()
	var w website
	if code := call(t, "POST", c.apis[0]+"/admin/v1/websites", "test-admin-token", map[string]any{"name": "Faults", "url": "https://faults.example"}, &w); code != 201 {
		t.Fatalf("creating website: %d", code)
	}
	start := time.Now()
	c.subscribe(w, audience, 20*time.Millisecond)
	t.Logf("%d browsers subscribed in %s", audience, time.Since(start).Round(time.Millisecond))

	base := c.pushes()
	id := c.send(c.apis[0], w, "Survives kill -9")
	c.waitPushes(base+audience/4, time.Minute)
	if err := node.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	node.Wait()
	t.Logf("killed after %d pushes", c.pushes()-base)
	if got := c.stats(id).Browsers; got >= audience {
		t.Fatalf("the broadcast was over (%d browsers) before the kill", got)
	}
	serve()
	c.checkDelivered(c.apis[0], w, id, unrecordedAtKill)
}

// run starts a process of the test with its output in the test's log
// directory, and kills it when the test ends.
func (c *cluster) run(name string, bin string, args ...string) *exec.Cmd {
	c.t.Helper()
	if err := os.MkdirAll(filepath.Join(c.dir, "logs"), 0o755); err != nil {
		c.t.Fatal(err)
	}
	out, err := os.OpenFile(filepath.Join(c.dir, "logs", name+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		c.t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(),
		"RELAYBELL_REVIEW_THRESHOLD=-1",  // a 20,000-browser broadcast from a new account
		"RELAYBELL_PUBLIC_RATE_LIMIT=-1", // subscribed from one address (the limit is tested in the api package)
	)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		c.t.Fatalf("starting %s: %v", name, err)
	}
	c.t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		out.Close()
	})
	return cmd
}
