package webpush_test

import (
	"bufio"
	"context"
	"crypto/ecdh"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/relaybell/relaybell/cputime"
	"github.com/relaybell/relaybell/webpush"
)

// benchServerEnv, when set, makes the test binary a push service that
// accepts everything (see TestMain): the client benchmark's peer, in a
// process of its own so that the benchmark's CPU is the client's alone.
const benchServerEnv = "WEBPUSH_BENCH_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(benchServerEnv) != "" {
		serveBench()
		return
	}
	os.Exit(m.Run())
}

// serveBench answers 201 to every POST, over TLS with HTTP/2 (or HTTP/1.1
// only when benchServerEnv is "http1"), printing its URL and certificate,
// until stdin closes.
func serveBench() {
	mode := os.Getenv(benchServerEnv)
	browser, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		panic(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if mode == "h2-busy" {
			// What the fake push service's decryption costs, about: an
			// ECDH and a key, so that the server takes CPU from the sender.
			eph, err := ecdh.P256().GenerateKey(rand.Reader)
			if err == nil {
				eph.ECDH(browser.PublicKey())
			}
		}
		w.WriteHeader(http.StatusCreated)
	}))
	srv.EnableHTTP2 = mode != "http1"
	srv.StartTLS()
	fmt.Printf("%s %s\n", srv.URL, base64.StdEncoding.EncodeToString(srv.Certificate().Raw))
	io.Copy(io.Discard, os.Stdin)
	srv.Close()
}

// startBenchServer runs serveBench in a child process.
func startBenchServer(b *testing.B, mode string) (url string, tlsConfig *tls.Config) {
	b.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), benchServerEnv+"="+mode)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { stdin.Close(); cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		b.Fatal(err)
	}
	url, cert, _ := strings.Cut(strings.TrimSpace(line), " ")
	der, err := base64.StdEncoding.DecodeString(cert)
	if err != nil {
		b.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		b.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(c)
	return url, &tls.Config{RootCAs: roots}
}

// floorCPU is BenchmarkEncrypt/floor's work (a fresh P-256 key and one
// ECDH) as CPU time per push, n times over two goroutines.
func floorCPU(b *testing.B, peer *ecdh.PublicKey, n int) time.Duration {
	start := cputime.Process()
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for range n / 2 {
				eph, err := ecdh.P256().GenerateKey(rand.Reader)
				if err != nil {
					panic(err)
				}
				if _, err := eph.ECDH(peer); err != nil {
					panic(err)
				}
			}
		})
	}
	wg.Wait()
	return (cputime.Process() - start) / time.Duration(n/2*2)
}

// BenchmarkClientCPU is the bare sender's CPU per push, the Client's alone
// (the push service runs in another process and accepts everything),
// against BenchmarkEncrypt/floor's work measured in the same benchmark,
// interleaved with the pushes: cpu-µs/push, floor-cpu-µs/push and their
// ratio x-floor.
// 256 pushes in flight to one origin, as the pusher's per-origin limit.
// Sub-benchmarks: encrypt is the signing and encryption alone, in as many
// goroutines (the part of the floor no sender avoids, and RFC 8291's key
// derivation and AES-GCM); h2 is the package's own HTTP/2 path (the default),
// nethttp net/http's transport over HTTP/2, http1 a push service that
// speaks HTTP/1.1 only (net/http's transport, chosen by ALPN); the
// busy-server ones are h2 and nethttp against a push service that spends
// an ECDH per push, as the fake push service does, taking CPU from the
// sender as in make bench.
//
//	go test -run '^$' -bench BenchmarkClientCPU -benchtime 20000x ./webpush/
func BenchmarkClientCPU(b *testing.B) {
	s := newBenchSetup(b)
	payload := []byte(samplePayload)
	peer, err := ecdh.P256().NewPublicKey(b64(b, s.sub.P256dh))
	if err != nil {
		b.Fatal(err)
	}
	const inFlight = 256
	for _, mode := range []struct {
		name   string
		server string
		h2     bool
	}{{"encrypt", "", false}, {"h2", "h2", true}, {"nethttp", "h2", false}, {"http1", "http1", true},
		{"h2-busy-server", "h2-busy", true}, {"nethttp-busy-server", "h2-busy", false}} {
		b.Run(mode.name, func(b *testing.B) {
			url, tlsConfig := "https://push.invalid", (*tls.Config)(nil)
			if mode.server != "" {
				url, tlsConfig = startBenchServer(b, mode.server)
			}
			client, err := webpush.NewClient(webpush.WithTLSConfig(tlsConfig), webpush.WithMaxPerOrigin(inFlight), webpush.WithHTTP2(mode.h2))
			if err != nil {
				b.Fatal(err)
			}
			defer client.Close()
			// Targets of the same browser keys on many endpoints.
			targets := make([]*webpush.Target, 1024)
			for i := range targets {
				sub := s.sub
				sub.Endpoint = fmt.Sprintf("%s/push/%08x-bench-%d", url, i*7919, i)
				if targets[i], err = webpush.ParseSubscription(sub); err != nil {
					b.Fatal(err)
				}
			}
			msg := webpush.Message{Payload: payload, TTL: 86400, Urgency: webpush.UrgencyNormal}
			send := func(n int) {
				var next, failed atomic.Int64
				var wg sync.WaitGroup
				for range min(inFlight, n) {
					wg.Go(func() {
						for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
							if mode.server == "" {
								// What the pusher's goroutines do before sending: sign, encrypt.
								if _, err := s.signer.Authorization(targets[i%len(targets)].Origin()); err != nil {
									b.Fatal(err)
								}
								if _, err := webpush.Encrypt(targets[i%len(targets)], msg.Payload); err != nil {
									b.Fatal(err)
								}
								continue
							}
							res, err := client.Send(context.Background(), targets[i%len(targets)], msg, s.signer)
							if err != nil || res.StatusCode != http.StatusCreated {
								if failed.Add(1) == 1 {
									b.Errorf("Send = %+v, %v", res, err)
								}
							}
						}
					})
				}
				wg.Wait()
			}
			send(inFlight) // connections open, tokens signed
			// The pushes in ten slices, each after a slice of the floor's
			// work, so that both see the same load from whatever else runs
			// on the machine.
			const slices = 10
			var used, sys, floorUsed time.Duration
			floorOps := 0
			b.ResetTimer()
			for i := range slices {
				b.StopTimer()
				floorUsed += floorCPU(b, peer, 200) * 200
				floorOps += 200
				b.StartTimer()
				n := b.N/slices + min(1, max(0, b.N%slices-i))
				user0, sys0 := cputime.Split()
				send(n)
				user1, sys1 := cputime.Split()
				used += user1 + sys1 - user0 - sys0
				sys += sys1 - sys0
			}
			b.StopTimer()
			floor := floorUsed / time.Duration(floorOps)
			perPush := float64(used.Nanoseconds()) / float64(b.N) / 1e3
			b.ReportMetric(perPush, "cpu-µs/push")
			b.ReportMetric(float64(sys.Nanoseconds())/float64(b.N)/1e3, "sys-µs/push")
			b.ReportMetric(float64(floor.Nanoseconds())/1e3, "floor-cpu-µs/push")
			b.ReportMetric(perPush/(float64(floor.Nanoseconds())/1e3), "x-floor")
		})
	}
}
