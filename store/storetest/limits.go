package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/relaybell/relaybell/store"
)

var limitCases = []testCase{
	{"UpdateWebsite", testUpdateWebsite},
	{"RateLimits", testRateLimits},
	{"RateLimitsConcurrent", testRateLimitsConcurrent},
	{"AddRateCounts", testAddRateCounts},
}

func testUpdateWebsite(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	other := newWebsite(t, s)

	want := w.Website
	want.Timezone = "America/New_York"
	want.Settings.QuietHours = &store.QuietHours{Start: "22:00", End: "07:30"}
	want.Settings.FrequencyCap = &store.FrequencyCap{Max: 3, Hours: 24}
	want.Settings.Currency = "EUR"
	want.Settings.ConversionEvents = []string{"purchase", "signup"}
	want.Settings.AttributionHours = 48
	want.Settings.CommerceSecret = "whsec_abc"
	got, err := s.UpdateWebsite(ctx, w.Website.ID, func(w *store.Website) error {
		w.Timezone = want.Timezone
		w.Settings = want.Settings
		w.Name = "ignored" // only the time zone and settings change
		return nil
	})
	noErr(t, "UpdateWebsite", err)
	want.Name = "ignored"
	same(t, "UpdateWebsite answer", got, want)
	want.Name = w.Website.Name
	stored, err := s.Website(ctx, w.Website.ID)
	noErr(t, "Website", err)
	same(t, "Website after update", stored, want)
	owner, err := s.KeyOwner(ctx, w.Key.Hash)
	noErr(t, "KeyOwner", err)
	same(t, "KeyOwner website", owner.Website, want)
	untouched, err := s.Website(ctx, other.Website.ID)
	noErr(t, "Website (other)", err)
	same(t, "other website", untouched, other.Website)

	// An error from change aborts the update and comes back as is.
	refuse := errors.New("refused")
	_, err = s.UpdateWebsite(ctx, w.Website.ID, func(w *store.Website) error {
		w.Timezone = "UTC"
		return refuse
	})
	wantErr(t, "UpdateWebsite refused", err, refuse)
	stored, err = s.Website(ctx, w.Website.ID)
	noErr(t, "Website", err)
	same(t, "Website after refused update", stored, want)

	_, err = s.UpdateWebsite(ctx, "00000000-0000-4000-8000-000000000000", func(*store.Website) error { return nil })
	wantErr(t, "UpdateWebsite unknown", err, store.ErrNotFound)
}

func testRateLimits(t *testing.T, s store.Store) {
	ctx := context.Background()
	minute := store.RateLimit{Key: "k:1m", Window: time.Minute, Max: 3}
	hour := store.RateLimit{Key: "k:1h", Window: time.Hour, Max: 4}
	both := []store.RateLimit{minute, hour}
	// A UTC hour boundary, so windows are easy to reason about.
	h0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	take := func(when time.Time, n int64, wantUsed []int64, wantTaken bool) {
		t.Helper()
		used, taken, err := s.TakeRateLimits(ctx, both, n, when)
		noErr(t, "TakeRateLimits", err)
		if !slices.Equal(used, wantUsed) || taken != wantTaken {
			t.Fatalf("TakeRateLimits(%s, %d) = %v, %v; want %v, %v", when.Format(time.TimeOnly), n, used, taken, wantUsed, wantTaken)
		}
	}
	take(h0, 0, []int64{0, 0}, true) // a read counts nothing
	take(h0.Add(time.Second), 1, []int64{1, 1}, true)
	take(h0.Add(2*time.Second), 1, []int64{2, 2}, true)
	take(h0.Add(59*time.Second), 1, []int64{3, 3}, true)
	take(h0.Add(59*time.Second), 1, []int64{3, 3}, false) // the minute is full: nothing counted
	take(h0.Add(59*time.Second), 0, []int64{3, 3}, true)
	take(h0.Add(time.Minute), 1, []int64{1, 4}, true) // a new minute
	take(h0.Add(time.Minute+time.Second), 1, []int64{1, 4}, false)
	take(h0.Add(time.Minute+time.Second), 5, []int64{1, 4}, false) // more than a window holds
	take(h0.Add(time.Hour), 2, []int64{2, 2}, true)                // a new clock hour

	// Other keys are counted apart.
	used, taken, err := s.TakeRateLimits(ctx, []store.RateLimit{{Key: "other:1h", Window: time.Hour, Max: 1}}, 1, h0.Add(time.Hour))
	noErr(t, "TakeRateLimits other", err)
	same(t, "other key", fmt.Sprint(used, taken), "[1] true")

	if end := hour.WindowEnd(h0.Add(59*time.Minute + 59*time.Second)); !end.Equal(h0.Add(time.Hour)) {
		t.Fatalf("WindowEnd = %s, want %s", end, h0.Add(time.Hour))
	}
}

// testRateLimitsConcurrent: takes racing from many goroutines (many API
// nodes) never overrun a limit.
func testRateLimitsConcurrent(t *testing.T, s store.Store) {
	ctx := context.Background()
	limits := []store.RateLimit{{Key: "race:1m", Window: time.Minute, Max: 25}, {Key: "race:1h", Window: time.Hour, Max: 1000}}
	now := time.Date(2026, 5, 1, 10, 0, 30, 0, time.UTC)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		taken int
	)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				_, ok, err := s.TakeRateLimits(ctx, limits, 1, now)
				if err != nil {
					t.Errorf("TakeRateLimits: %v", err)
					return
				}
				if ok {
					mu.Lock()
					taken++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	used, _, err := s.TakeRateLimits(ctx, limits, 0, now)
	noErr(t, "TakeRateLimits read", err)
	if taken != 25 || !slices.Equal(used, []int64{25, 25}) {
		t.Fatalf("80 racing takes: %d taken, counts %v; want 25 and [25 25]", taken, used)
	}
}

// AddRateCounts adds without a bound, reads with 0, keeps each window's
// count apart, and drops a key's earlier windows when it adds to a later
// one.
func testAddRateCounts(t *testing.T, s store.Store) {
	ctx := context.Background()
	h0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	a := store.RateLimit{Key: "public:a", Window: time.Minute, Max: 2}
	b := store.RateLimit{Key: "public:b", Window: time.Minute, Max: 2}
	add := func(what string, counts []store.RateCount, want ...int64) {
		t.Helper()
		got, err := s.AddRateCounts(ctx, counts, h0)
		noErr(t, what, err)
		same(t, what, got, want)
	}
	add("first", []store.RateCount{{Limit: a, Start: h0, N: 3}, {Limit: b, Start: h0, N: 1}}, 3, 1)
	add("again, past the max", []store.RateCount{{Limit: a, Start: h0, N: 4}, {Limit: b, Start: h0, N: 0}}, 7, 1)
	add("read only", []store.RateCount{{Limit: a, Start: h0}, {Limit: store.RateLimit{Key: "public:none", Window: time.Minute}, Start: h0}}, 7, 0)
	// The send limits read the same counters.
	used, _, err := s.TakeRateLimits(ctx, []store.RateLimit{{Key: "public:a", Window: time.Minute, Max: 100}}, 0, h0.Add(time.Second))
	noErr(t, "TakeRateLimits", err)
	same(t, "the same counter", used, []int64{7})
	next := h0.Add(time.Minute)
	add("next window", []store.RateCount{{Limit: a, Start: next, N: 2}}, 2)
	add("the earlier window is gone", []store.RateCount{{Limit: a, Start: h0}}, 0)
	add("another key's stays", []store.RateCount{{Limit: b, Start: h0}}, 1)
	add("none", nil)
}
