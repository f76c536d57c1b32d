package defcache

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/relaybell/relaybell/store"
)

// slowGoals is a store whose EventGoals answers a goal named by answer
// when the read began, once release is closed; it counts its reads.
// releaseNew, when set, holds the reads that began after it was instead.
type slowGoals struct {
	Base
	reads      atomic.Int32
	release    chan struct{}
	releaseNew chan struct{}
	answer     atomic.Value // string
}

func (g *slowGoals) EventGoals(ctx context.Context, websiteID, event string) ([]store.Goal, error) {
	answer := g.answer.Load().(string)
	release := g.release
	if answer == "new" {
		release = g.releaseNew
	}
	g.reads.Add(1)
	select {
	case <-release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return []store.Goal{{ID: answer, WebsiteID: websiteID}}, nil
}

// waitReads waits until n reads of g have started.
func waitReads(t *testing.T, g *slowGoals, n int32) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); g.reads.Load() < n; {
		if time.Now().After(deadline) {
			t.Fatalf("%d reads started, want %d", g.reads.Load(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// waitJoined waits until n callers wait for c's reads in flight.
func waitJoined(t *testing.T, c *Store, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; {
		c.v.mu.Lock()
		waiting := 0
		for _, f := range c.flights {
			waiting += f.waiters
		}
		c.v.mu.Unlock()
		if waiting == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d callers wait for a read, want %d", waiting, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestMissesShareARead: requests that miss the same entry together read
// the store once and all get its answer; a request after a purge does not
// join a read from before it, whose answer is not kept.
func TestMissesShareARead(t *testing.T) {
	ctx := context.Background()
	st, site := open(t)
	g := &slowGoals{Base: st, release: make(chan struct{}), releaseNew: make(chan struct{})}
	g.answer.Store("old")
	c := New(g, time.Hour, nil)

	const callers = 20
	got := make([]string, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			list, err := c.EventGoals(ctx, site, "purchase")
			if err != nil || len(list) != 1 {
				t.Errorf("caller %d: %v, %v", i, list, err)
				return
			}
			got[i] = list[0].ID
		})
	}
	waitReads(t, g, 1)
	waitJoined(t, c, callers-1)
	if n := g.reads.Load(); n != 1 {
		t.Fatalf("%d reads for %d concurrent misses, want 1", n, callers)
	}

	// A purge while the read goes on: the next request reads anew.
	c.Purge()
	g.answer.Store("new")
	after := make(chan string, 1)
	go func() {
		list, err := c.EventGoals(ctx, site, "purchase")
		if err != nil || len(list) != 1 {
			t.Errorf("after the purge: %v, %v", list, err)
			after <- ""
			return
		}
		after <- list[0].ID
	}()
	waitReads(t, g, 2)
	close(g.release) // the read from before the purge ends first
	wg.Wait()
	for i, id := range got {
		if id != "old" {
			t.Fatalf("caller %d got %q, want the shared read's %q", i, id, "old")
		}
	}
	// Its answer was not kept: a request now joins the read after the
	// purge (and gives up waiting), where a kept answer would be served.
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	list, err := c.EventGoals(short, site, "purchase")
	cancel()
	if err == nil {
		t.Fatalf("served %v from the read before the purge", list)
	}
	close(g.releaseNew)
	if id := <-after; id != "new" {
		t.Fatalf("after the purge: %q, want %q", id, "new")
	}
	list, err = c.EventGoals(ctx, site, "purchase")
	if err != nil || len(list) != 1 || list[0].ID != "new" {
		t.Fatalf("cached after both reads: %v, %v; want the read after the purge", list, err)
	}
	if n := g.reads.Load(); n != 2 {
		t.Fatalf("%d reads, want 2", n)
	}
}

// TestSharedReadOfAGoneRequest: when the request reading for the others
// ends (its context canceled), the others look up again: one of them
// reads for all, and its answer is kept.
func TestSharedReadOfAGoneRequest(t *testing.T) {
	st, site := open(t)
	g := &slowGoals{Base: st, release: make(chan struct{})}
	g.answer.Store("goal")
	c := New(g, time.Hour, nil)

	gone, cancel := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() {
		_, err := c.EventGoals(gone, site, "purchase")
		first <- err
	}()
	waitReads(t, g, 1)
	const waiting = 3
	answers := make(chan []store.Goal, waiting)
	for range waiting {
		go func() {
			list, err := c.EventGoals(context.Background(), site, "purchase")
			if err != nil {
				t.Errorf("a waiting request: %v", err)
			}
			answers <- list
		}()
	}
	waitJoined(t, c, waiting)
	cancel()
	if err := <-first; err == nil {
		t.Fatal("the canceled request got an answer")
	}
	waitReads(t, g, 2)
	waitJoined(t, c, waiting-1) // the others wait for the one reading now
	close(g.release)
	for range waiting {
		if list := <-answers; len(list) != 1 || list[0].ID != "goal" {
			t.Fatalf("a waiting request got %v", list)
		}
	}
	if list, err := c.EventGoals(context.Background(), site, "purchase"); err != nil || len(list) != 1 {
		t.Fatalf("afterwards: %v, %v", list, err)
	}
	if n := g.reads.Load(); n != 2 {
		t.Fatalf("%d reads, want 2: the canceled one and one for the %d waiting, kept", n, waiting)
	}
}

// panicGoals is a store whose EventGoals panics once release is closed.
type panicGoals struct {
	Base
	reads   atomic.Int32
	release chan struct{}
}

func (g *panicGoals) EventGoals(ctx context.Context, websiteID, event string) ([]store.Goal, error) {
	g.reads.Add(1)
	<-g.release
	panic("the store's read failed")
}

// TestSharedReadThatPanics: the callers waiting for a read that panicked
// get an error, not a hung request, and the next request reads again.
func TestSharedReadThatPanics(t *testing.T) {
	st, site := open(t)
	g := &panicGoals{Base: st, release: make(chan struct{})}
	c := New(g, time.Hour, nil)
	go func() {
		defer func() { recover() }()
		c.EventGoals(context.Background(), site, "purchase")
	}()
	for deadline := time.Now().Add(10 * time.Second); g.reads.Load() < 1; {
		if time.Now().After(deadline) {
			t.Fatal("no read started")
		}
		time.Sleep(time.Millisecond)
	}
	waited := make(chan error, 1)
	go func() {
		_, err := c.EventGoals(context.Background(), site, "purchase")
		waited <- err
	}()
	waitJoined(t, c, 1)
	close(g.release)
	if err := <-waited; !errors.Is(err, errNoAnswer) {
		t.Fatalf("the waiting request: %v, want %v", err, errNoAnswer)
	}
	func() {
		defer func() { recover() }()
		c.EventGoals(context.Background(), site, "purchase")
	}()
	if n := g.reads.Load(); n != 2 {
		t.Fatalf("%d reads, want 2: the flight of the panic is gone", n)
	}
}
