package server

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/relaybell/relaybell/webpush/webpushtest"
)

// TestKill9MidBroadcastLosesNothing runs the real binary on the embedded
// default, kills it with SIGKILL while a broadcast is going out, restarts it
// on the same data directory, and checks that every browser got the
// notification and the counters add up.
func TestKill9MidBroadcastLosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "relaybell")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/relaybell").CombinedOutput(); err != nil {
		t.Fatalf("building: %v\n%s", err, out)
	}

	// The fake push service in this process, over plain HTTP on an
	// allow-listed loopback address; each answer takes a while so the
	// broadcast is still going when the kill comes.
	push := httptest.NewUnstartedServer(nil)
	origin := "http://" + push.Listener.Addr().String()
	handler := webpushtest.NewHandler(origin)
	push.Config.Handler = handler
	push.Start()
	defer push.Close()

	addr := freeAddr(t)
	start := func() *exec.Cmd {
		cmd := exec.Command(bin, "serve", "--http", addr, "--data", filepath.Join(dir, "data"),
			"--admin-token", adminToken, "--push-allow-hosts", push.Listener.Addr().String(), "--log-level", "warn")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		waitReady(t, "http://"+addr)
		return cmd
	}
	cmd := start()
	defer func() { cmd.Process.Kill(); cmd.Wait() }()

	ts := &testServer{t: t, base: "http://" + addr}
	w := ts.createWebsite()
	const audience = 1500
	browsers := make([]*webpushtest.Browser, audience)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < audience; i += 8 {
				b := handler.NewBrowser(w.VAPIDPublicKey)
				b.SetBehavior(webpushtest.Behavior{Delay: 150 * time.Millisecond})
				browsers[i] = b
				sub := b.Subscription()
				body, _ := json.Marshal(map[string]any{"endpoint": sub.Endpoint, "keys": map[string]string{"p256dh": sub.P256dh, "auth": sub.Auth}})
				resp, err := http.Post(ts.base+"/api/v1/projects/"+w.ProjectID+"/subscriptions", "application/json", bytes.NewReader(body))
				if err != nil || resp.StatusCode != 201 {
					t.Errorf("subscribe: %v %v", err, resp)
					return
				}
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}

	id := ts.send(w, map[string]any{"title": "Survives"})
	deadline := time.Now().Add(30 * time.Second)
	for handler.Count() < audience/5 {
		if time.Now().After(deadline) {
			t.Fatalf("only %d pushes before the kill", handler.Count())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	before := handler.Count()
	if before >= audience {
		t.Fatalf("the broadcast finished before the kill (%d pushes); slow the fake down", before)
	}
	t.Logf("killed after %d of %d pushes", before, audience)

	cmd = start()
	d := ts.waitSent(w, id)
	n := d.Notification
	if n.Status != "sent" || n.Recipients != audience || n.Sent != audience || n.Recipients != n.Sent+n.Failed+n.Pruned {
		t.Fatalf("after restart: %+v", n)
	}
	missing, twice := 0, 0
	for _, b := range browsers {
		switch got := len(received(t, b, id)); {
		case got == 0:
			missing++
		case got > 1:
			twice++
		}
	}
	if missing > 0 {
		t.Fatalf("%d browsers never got the notification", missing)
	}
	// A push the service accepted while its result was not yet recorded is
	// sent again after the restart; at most the pushes in flight at the kill.
	t.Logf("%d browsers got it twice (in flight at the kill)", twice)
	if twice > 512 {
		t.Fatalf("%d duplicates is more than the pushes that can be in flight", twice)
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func waitReady(t *testing.T, base string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(base + "/readyz")
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready: %v", base, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
