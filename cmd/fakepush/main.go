// Command fakepush runs the project's fake push service (package
// webpush/webpushtest) in its own process, for the README walkthrough, local
// clusters and load runs. It checks each push's VAPID signature, decrypts it
// and keeps it, like a browser's push service would.
//
//	POST /browsers {"applicationServerKey": "<VAPID public key>"}
//	     -> {"endpoint", "keys": {"p256dh", "auth"}}: a new browser subscription
//	POST /push/{id}  the push endpoint itself
//	GET  /deliveries -> [{browserId, payload, ttl, urgency}] decrypted pushes
//
// It serves plain HTTP on loopback, so start RelayBell with
// RELAYBELL_PUSH_ALLOW_HOSTS set to its address.
package main

import (
	"encoding/json"
	"flag"
	"log"
	"net/http"

	"github.com/relaybell/relaybell/webpush/webpushtest"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8089", "listen address")
	flag.Parse()
	push := webpushtest.NewHandler("http://" + *addr)
	mux := http.NewServeMux()
	mux.Handle("/push/", push)
	mux.HandleFunc("POST /browsers", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			ApplicationServerKey string `json:"applicationServerKey"`
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.ApplicationServerKey == "" {
			http.Error(w, `{"error":"applicationServerKey required"}`, http.StatusBadRequest)
			return
		}
		b, err := newBrowser(push, in.ApplicationServerKey)
		if err != nil {
			http.Error(w, `{"error":"applicationServerKey is not a P-256 public key"}`, http.StatusBadRequest)
			return
		}
		sub := b.Subscription()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"endpoint": sub.Endpoint,
			"keys":     map[string]string{"p256dh": sub.P256dh, "auth": sub.Auth},
		})
	})
	mux.HandleFunc("GET /deliveries", func(w http.ResponseWriter, r *http.Request) {
		out := []map[string]any{}
		for _, d := range push.Deliveries() {
			out = append(out, map[string]any{
				"browserId": d.BrowserID, "payload": json.RawMessage(d.Payload), "ttl": d.TTL, "urgency": d.Urgency,
			})
		}
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.Encode(out)
	})
	log.Printf("fake push service on http://%s", *addr)
	log.Fatal(http.ListenAndServe(*addr, mux))
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
