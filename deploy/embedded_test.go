package deploy

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
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
// the notification, the counters add up and the send ends sent. The fake
// push service speaks HTTPS and HTTP/2, as real ones do, so the pushes go
// through the webpush package's own HTTP/2 path, and the kill cuts its
// connection with streams in flight.
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
	certFile, keyFile := pushCertificate(t, dir)
	c := &cluster{t: t, dir: dir, apis: []string{"http://" + httpAddr, "http://" + httpAddr}, push: "https://" + pushAddr}
	t.Cleanup(func() { // after the processes are gone
		if t.Failed() {
			c.dumpLogs()
		}
	})
	c.run("fakepush", filepath.Join(dir, "fakepush"), "-addr", pushAddr, "-tls-cert", certFile, "-tls-key", keyFile)
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
	if p := c.stats(id).Protocols; len(p) != 1 || p["HTTP/2.0"] == 0 {
		t.Errorf("pushes by protocol %v, want HTTP/2.0 only", p)
	}
}

// pushCertificate writes a self-signed certificate for 127.0.0.1 and its
// key into dir for the fake push service, and makes the RelayBell processes
// (SSL_CERT_FILE, which Go reads in place of the system's roots) and this
// test's HTTP calls trust it.
func pushCertificate(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "RelayBell fault test push service"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "push-cert.pem"), filepath.Join(dir, "push-key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SSL_CERT_FILE", certFile) // the processes started from here
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(cert)
	tr := http.DefaultTransport.(*http.Transport)
	old := tr.TLSClientConfig
	tr.TLSClientConfig = &tls.Config{RootCAs: roots}
	t.Cleanup(func() { tr.TLSClientConfig = old })
	return certFile, keyFile
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
