package main

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Arrival times per browser, for the API bench's transactional path
// (relaybell bench --api): which browser a push went to and when it
// arrived, whatever the handler checks or keeps of the push itself. Off
// until POST /arrivals, so that other runs pay nothing for it.
//
//	POST /arrivals   starts recording (anew: what was recorded is dropped)
//	GET  /arrivals?from=N -> {"next": M, "arrivals": [{"browserId", "time"}]}:
//	     the accepted pushes recorded from the N-th on (0 first), in the
//	     order they arrived, time when the request reached the service
//	     (RFC 3339, nanoseconds); pass M as from to read on

// arrival is one accepted push: its browser and when its request came in.
type arrival struct {
	BrowserID string    `json:"browserId"`
	Time      time.Time `json:"time"`
}

// arrivals records the accepted pushes of the handler it wraps.
type arrivals struct {
	on   atomic.Bool
	mu   sync.Mutex
	list []arrival
}

// withArrivals serves POST and GET /arrivals on mux and returns push
// wrapped so that, once recording, its accepted pushes are recorded.
func withArrivals(mux *http.ServeMux, push http.Handler) http.Handler {
	a := &arrivals{}
	mux.HandleFunc("POST /arrivals", func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		a.list = nil
		a.mu.Unlock()
		a.on.Store(true)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte("{}\n"))
	})
	mux.HandleFunc("GET /arrivals", func(w http.ResponseWriter, r *http.Request) {
		from, _ := strconv.Atoi(r.URL.Query().Get("from"))
		a.mu.Lock()
		from = min(max(from, 0), len(a.list))
		out := struct {
			Next     int       `json:"next"`
			Arrivals []arrival `json:"arrivals"`
		}{Next: len(a.list), Arrivals: append([]arrival{}, a.list[from:]...)}
		a.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(out)
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !a.on.Load() {
			push.ServeHTTP(w, r)
			return
		}
		at := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		push.ServeHTTP(sw, r)
		if sw.status == http.StatusCreated {
			id := r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:]
			a.mu.Lock()
			a.list = append(a.list, arrival{BrowserID: id, Time: at})
			a.mu.Unlock()
		}
	})
}

// statusWriter notes the status a handler answered.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}
