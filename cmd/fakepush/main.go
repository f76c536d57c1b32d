// Command fakepush runs the project's fake push service (package
// webpush/webpushtest) in its own process, for the README walkthrough, local
// clusters and load runs. It checks each push's VAPID signature, decrypts it
// and keeps it, like a browser's push service would; with -sample N only one
// push in N (and the first of each window) is checked so and kept, the
// others counted, so that under load it costs a fraction of the sender
// (relaybell bench runs it so).
//
//	POST /browsers {"applicationServerKey": "<VAPID public key>"}
//	     -> {"endpoint", "keys": {"p256dh", "auth"}}: a new browser subscription
//	POST /browsers {"applicationServerKey", "count": N, "delayMs": D}
//	     -> {"browsers": [{"endpoint", "keys"}...]}: N browsers at once (at
//	     most 100000), each answering pushes after D milliseconds
//	POST /push/{id}  the push endpoint itself
//	GET  /deliveries -> [{browserId, payload, ttl, urgency, time}] decrypted
//	     pushes, with when each arrived (RFC 3339, nanoseconds); with -sample,
//	     only the sample
//	POST /window     starts counting anew for GET /window
//	GET  /window -> {"pushes", "browsers", "duplicates", "protocols", "first",
//	     "last", "sampled", "notifications"}: the pushes accepted since POST
//	     /window, to how many browsers, over which HTTP versions, when the
//	     first and last arrived, how many were checked in full and the
//	     notificationIds of those by count
//	GET  /count -> {"pushes": N}: accepted pushes so far (cheap to poll)
//	POST /arrivals, GET /arrivals?from=N: each accepted push's browser and
//	     arrival time, once asked for (arrivals.go)
//	GET  /stats?notification=ID -> {"pushes", "browsers", "deliveries",
//	     "duplicates", "protocols", "first", "last"}: all accepted pushes,
//	     and how many browsers got notification ID, how often, over which
//	     HTTP versions, and when the first and last arrived (RFC 3339,
//	     nanoseconds)
//
// It serves plain HTTP on loopback, or HTTPS with HTTP/2 as real push
// services do when given -tls-cert and -tls-key (clients must trust the
// certificate: RelayBell reads SSL_CERT_FILE). With -lean its HTTP/2 is
// webpushtest.ServeH2's, a fraction of the CPU of Go's server a push; the
// bench runs it so. Start RelayBell with
// RELAYBELL_PUSH_ALLOW_HOSTS set to its address.
package main

import (
	"crypto/tls"
	"encoding/json"
	"flag"
	"log"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/relaybell/relaybell/webpush/webpushtest"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8089", "listen address")
	certFile := flag.String("tls-cert", "", "serve HTTPS and HTTP/2 with this certificate (PEM), as real push services do")
	keyFile := flag.String("tls-key", "", "the certificate's private key (PEM)")
	sample := flag.Int("sample", 1, "check in full (VAPID signature, decryption) and keep one push in this many, and the first after POST /window; count the others")
	lean := flag.Bool("lean", false, "with -tls-cert, serve HTTP/2 with webpushtest.ServeH2 (one goroutine a connection, which answers its requests in turn) rather than Go's server, for load runs: browsers answering after delayMs are refused")
	flag.Parse()
	if (*certFile == "") != (*keyFile == "") {
		log.Fatal("-tls-cert and -tls-key go together")
	}
	scheme := "http"
	if *certFile != "" {
		scheme = "https"
	}
	push := webpushtest.NewHandler(scheme+"://"+*addr, webpushtest.WithSample(*sample))
	mux := http.NewServeMux()
	mux.Handle("/push/", withArrivals(mux, push))
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("POST /browsers", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			ApplicationServerKey string `json:"applicationServerKey"`
			Count                int    `json:"count"`
			DelayMS              int    `json:"delayMs"`
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.ApplicationServerKey == "" {
			http.Error(w, `{"error":"applicationServerKey required"}`, http.StatusBadRequest)
			return
		}
		if in.Count < 0 || in.Count > 100_000 || in.DelayMS < 0 || in.DelayMS > 60_000 {
			http.Error(w, `{"error":"count is 0-100000 and delayMs 0-60000"}`, http.StatusBadRequest)
			return
		}
		if in.DelayMS > 0 && *lean {
			// A delayed answer would hold up every push of its connection.
			http.Error(w, `{"error":"delayMs needs fakepush without -lean"}`, http.StatusBadRequest)
			return
		}
		subs := make([]map[string]any, max(in.Count, 1))
		for i := range subs {
			b, err := newBrowser(push, in.ApplicationServerKey)
			if err != nil {
				http.Error(w, `{"error":"applicationServerKey is not a P-256 public key"}`, http.StatusBadRequest)
				return
			}
			if in.DelayMS > 0 {
				b.SetBehavior(webpushtest.Behavior{Delay: time.Duration(in.DelayMS) * time.Millisecond})
			}
			sub := b.Subscription()
			subs[i] = map[string]any{
				"endpoint": sub.Endpoint,
				"keys":     map[string]string{"p256dh": sub.P256dh, "auth": sub.Auth},
			}
		}
		w.Header().Set("Content-Type", "application/json")
		if in.Count == 0 {
			json.NewEncoder(w).Encode(subs[0])
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"browsers": subs})
	})
	mux.HandleFunc("GET /count", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]int{"pushes": push.Count()})
	})
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(stats(push.Deliveries(), r.URL.Query().Get("notification")))
	})
	mux.HandleFunc("POST /window", func(w http.ResponseWriter, r *http.Request) {
		push.OpenWindow()
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte("{}\n"))
	})
	mux.HandleFunc("GET /window", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(window(push.Window()))
	})
	mux.HandleFunc("GET /deliveries", func(w http.ResponseWriter, r *http.Request) {
		out := []map[string]any{}
		for _, d := range push.Deliveries() {
			out = append(out, map[string]any{
				"browserId": d.BrowserID, "payload": json.RawMessage(d.Payload), "ttl": d.TTL, "urgency": d.Urgency,
				"time": d.Time,
			})
		}
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.Encode(out)
	})
	log.Printf("fake push service on %s://%s", scheme, *addr)
	if *certFile != "" {
		srv := &http.Server{Addr: *addr, Handler: mux}
		if *lean {
			srv.TLSConfig = &tls.Config{NextProtos: []string{"h2", "http/1.1"}}
			srv.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){
				"h2": func(_ *http.Server, c *tls.Conn, h http.Handler) { webpushtest.ServeH2(c, h) },
			}
		}
		log.Fatal(srv.ListenAndServeTLS(*certFile, *keyFile))
	}
	log.Fatal(http.ListenAndServe(*addr, mux))
}

// Stats is what GET /stats answers.
type Stats struct {
	Pushes     int            `json:"pushes"`
	Browsers   int            `json:"browsers"`
	Deliveries int            `json:"deliveries"`
	Duplicates int            `json:"duplicates"`
	Protocols  map[string]int `json:"protocols"` // deliveries by HTTP version, "HTTP/2.0": N
	First      *time.Time     `json:"first"`
	Last       *time.Time     `json:"last"`
}

// stats counts the deliveries of one notification, found by the
// notificationId of the decrypted payload RelayBell sends.
func stats(all []webpushtest.Delivery, notificationID string) Stats {
	st := Stats{Pushes: len(all), Protocols: map[string]int{}}
	seen := map[string]bool{}
	for _, d := range all {
		var p struct {
			NotificationID string `json:"notificationId"`
		}
		if notificationID == "" || json.Unmarshal(d.Payload, &p) != nil || p.NotificationID != notificationID {
			continue
		}
		st.Deliveries++
		st.Protocols[d.Proto]++
		if seen[d.BrowserID] {
			st.Duplicates++
		}
		seen[d.BrowserID] = true
		if st.First == nil || d.Time.Before(*st.First) {
			st.First = &d.Time
		}
		if st.Last == nil || d.Time.After(*st.Last) {
			st.Last = &d.Time
		}
	}
	st.Browsers = len(seen)
	return st
}

// WindowStats is what GET /window answers.
type WindowStats struct {
	Pushes     int            `json:"pushes"`
	Browsers   int            `json:"browsers"`
	Duplicates int            `json:"duplicates"`
	Protocols  map[string]int `json:"protocols"`
	First      *time.Time     `json:"first"`
	Last       *time.Time     `json:"last"`
	// Sampled is how many of the pushes were checked in full, and
	// Notifications the notificationId of their decrypted payloads by count
	// ("" for a payload without one).
	Sampled       int            `json:"sampled"`
	Notifications map[string]int `json:"notifications"`
}

func window(w webpushtest.Window) WindowStats {
	st := WindowStats{Pushes: w.Pushes, Browsers: w.Browsers, Duplicates: w.Duplicates, Protocols: w.Protocols,
		Sampled: len(w.Sample), Notifications: map[string]int{}}
	if w.Pushes > 0 {
		st.First, st.Last = &w.First, &w.Last
	}
	for _, d := range w.Sample {
		var p struct {
			NotificationID string `json:"notificationId"`
		}
		json.Unmarshal(d.Payload, &p)
		st.Notifications[p.NotificationID]++
	}
	return st
}

// newBrowser turns NewBrowser's panic on a bad key into an error.
func newBrowser(h *webpushtest.Handler, key string) (b *webpushtest.Browser, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = errBadKey
		}
	}()
	return h.NewBrowser(key), nil
}

type badKey struct{}

func (badKey) Error() string { return "bad application server key" }

var errBadKey = badKey{}
