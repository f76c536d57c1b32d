package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestArrivals: the accepted pushes (201) are recorded, by browser and in
// order, only once POST /arrivals asked for them; a POST starts anew and
// GET reads on from a place.
func TestArrivals(t *testing.T) {
	mux := http.NewServeMux()
	push := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/push/gone" {
			http.Error(w, "no such subscription", http.StatusNotFound)
			return
		}
		w.WriteHeader(http.StatusCreated)
	})
	mux.Handle("/push/", withArrivals(mux, push))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	send := func(id string, want int) {
		t.Helper()
		resp, err := http.Post(srv.URL+"/push/"+id, "application/octet-stream", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("push to %s: %d, want %d", id, resp.StatusCode, want)
		}
	}
	type page struct {
		Next     int       `json:"next"`
		Arrivals []arrival `json:"arrivals"`
	}
	get := func(from string) page {
		t.Helper()
		resp, err := http.Get(srv.URL + "/arrivals?from=" + from)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var p page
		if resp.StatusCode != 200 || json.NewDecoder(resp.Body).Decode(&p) != nil {
			t.Fatalf("GET /arrivals: %d", resp.StatusCode)
		}
		return p
	}
	start := func() {
		t.Helper()
		resp, err := http.Post(srv.URL+"/arrivals", "application/json", nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("POST /arrivals: %v %v", resp, err)
		}
		resp.Body.Close()
	}

	send("before", 201) // not recording yet
	if p := get("0"); p.Next != 0 || len(p.Arrivals) != 0 {
		t.Fatalf("before POST /arrivals: %+v", p)
	}
	start()
	began := time.Now()
	send("a", 201)
	send("gone", 404) // refused: not an arrival
	send("b", 201)
	p := get("0")
	if p.Next != 2 || len(p.Arrivals) != 2 || p.Arrivals[0].BrowserID != "a" || p.Arrivals[1].BrowserID != "b" ||
		p.Arrivals[0].Time.Before(began.Add(-time.Second)) || p.Arrivals[1].Time.Before(p.Arrivals[0].Time) {
		t.Fatalf("arrivals %+v", p)
	}
	send("c", 201)
	if p := get("2"); p.Next != 3 || len(p.Arrivals) != 1 || p.Arrivals[0].BrowserID != "c" {
		t.Fatalf("from 2: %+v", p)
	}
	if p := get("9"); p.Next != 3 || len(p.Arrivals) != 0 {
		t.Fatalf("from past the end: %+v", p)
	}
	start() // anew
	if p := get("0"); p.Next != 0 || len(p.Arrivals) != 0 {
		t.Fatalf("after a new POST /arrivals: %+v", p)
	}
}
