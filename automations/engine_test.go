package automations

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/automations/enginetest"
	"github.com/relaybell/relaybell/store"
)

var start = enginetest.Start

// dispatcher counts dispatches per notification.
type dispatcher struct {
	mu   sync.Mutex
	sent map[string]int
}

func (d *dispatcher) Dispatch(_ context.Context, n store.Notification) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.sent == nil {
		d.sent = map[string]int{}
	}
	d.sent[n.ID]++
	return nil
}

// setup makes a website with people subscribed and an active automation
// of three messages (now, a minute and an hour after the trigger), and
// triggers it for every person. It returns the automation's id.
func setup(t *testing.T, st store.Store, people int) (store.Website, string) {
	t.Helper()
	ctx := context.Background()
	w := enginetest.Website(t, st)
	d := New()
	d.Name, d.Status = "Steps", store.AutomationActive
	d.Trigger = Trigger{Type: TriggerEvent, Event: "signed_up"}
	for i, delay := range []int64{0, 60, 3600} {
		title := fmt.Sprintf("step %d", i)
		d.Messages = append(d.Messages, Message{DelaySeconds: &delay})
		d.Messages[i].Title = &title
	}
	if err := d.Check(ctx, w, st, start); err != nil {
		t.Fatal(err)
	}
	def, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	au := store.Automation{ID: uuid.NewString(), WebsiteID: w.ID, Name: d.Name, Status: d.Status, TriggerType: d.Trigger.Type,
		Definition: def, CreatedAt: start, UpdatedAt: start}
	if err := st.CreateAutomation(ctx, au); err != nil {
		t.Fatal(err)
	}
	svc := NewService(st, nil)
	for i := range people {
		res, err := st.UpsertSubscription(ctx, store.SubscriptionInput{WebsiteID: w.ID, Endpoint: fmt.Sprintf("https://push.example/%s/%d", w.ID, i),
			P256dh: "p", Auth: "a", Device: "desktop", At: start})
		if err != nil {
			t.Fatal(err)
		}
		if n, err := svc.Event(ctx, w.ID, res.SubscriberID, "signed_up", nil, start); err != nil || n != 1 {
			t.Fatalf("Event: %d %v", n, err)
		}
	}
	return w, au.ID
}

// sent counts the automation's notifications per (person, title): every
// one must be 1.
func sent(t *testing.T, st store.Store, websiteID, automationID string) map[string]int {
	t.Helper()
	return enginetest.Sent(t, st, websiteID, func(n store.Notification) bool { return n.AutomationID == automationID })
}

// TestEngineExactlyOnceConcurrent: engines on two nodes of one
// PostgreSQL claim the same due timers at the same time (SKIP LOCKED);
// every message is sent once, none twice, none dropped.
func TestEngineExactlyOnceConcurrent(t *testing.T) {
	nodes := enginetest.OpenPostgres(t, 2)
	const people = 150
	w, id := setup(t, nodes[0], people)
	clk := enginetest.NewClock(start)
	disp := &dispatcher{}
	var engines []*Engine
	for _, st := range nodes {
		e, err := NewEngine(Config{Now: clk.Now, Batch: 7}, st, disp, nil, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		engines = append(engines, e)
	}
	for _, step := range []time.Duration{0, time.Minute, time.Hour} {
		clk.Set(start.Add(step))
		fired := enginetest.RunAtOnce(t, engines)
		if fired[0]+fired[1] != people {
			t.Fatalf("at %v: fired %v, want %d in all", step, fired, people)
		}
	}
	enginetest.CheckOnce(t, sent(t, nodes[0], w.ID, id), 3*people)
	if len(disp.sent) != 3*people {
		t.Fatalf("%d notifications dispatched, want %d", len(disp.sent), 3*people)
	}
	for n, c := range disp.sent {
		if c != 1 {
			t.Fatalf("%s dispatched %d times", n, c)
		}
	}
}

// failingStore fails FireTimer with the context cancelled: a node that
// dies between its claim and its commit.
type failingStore struct {
	Store
	fail bool
}

var errKilled = errors.New("killed")

func (s *failingStore) FireTimer(ctx context.Context, t store.Timer, f store.Fire) (string, error) {
	if s.fail {
		ctx, cancel := context.WithCancelCause(ctx)
		cancel(errKilled)
		return s.Store.FireTimer(ctx, t, f)
	}
	return s.Store.FireTimer(ctx, t, f)
}

func (s *failingStore) FireTimers(ctx context.Context, fires []store.TimerFire) ([]string, error) {
	if s.fail {
		ctx, cancel := context.WithCancelCause(ctx)
		cancel(errKilled)
		return s.Store.FireTimers(ctx, fires)
	}
	return s.Store.FireTimers(ctx, fires)
}

// TestEngineCrashRedo: a node that claimed timers and died before its
// commit leaves them leased; once the lease runs out another node sends
// each once, and a redo of a committed timer sends nothing.
func TestEngineCrashRedo(t *testing.T) {
	for _, c := range enginetest.Stores {
		t.Run(c.Name, func(t *testing.T) {
			st := c.Open(t)
			const people = 20
			w, id := setup(t, st, people)
			clk := enginetest.NewClock(start)
			dying := &failingStore{Store: st, fail: true}
			e1, _ := NewEngine(Config{Now: clk.Now, Lease: time.Minute}, dying, nil, nil, nil, nil)
			if _, err := e1.RunDue(context.Background()); err == nil {
				t.Fatal("the dying node fired without an error")
			}
			if got := sent(t, st, w.ID, id); len(got) != 0 {
				t.Fatalf("a failed commit sent %v", got)
			}
			e2, _ := NewEngine(Config{Now: clk.Now, Lease: time.Minute}, st, nil, nil, nil, nil)
			// The dying node's batch is leased; the rest is not.
			clk.Add(30 * time.Second)
			n, err := e2.RunDue(context.Background())
			if err != nil || n != 0 {
				t.Fatalf("within the lease: fired %d (%v), want 0", n, err)
			}
			clk.Add(31 * time.Second) // the lease ran out; the minute's messages are due too
			if n, err := e2.RunDue(context.Background()); err != nil || n != 2*people {
				t.Fatalf("after the lease: fired %d (%v), want %d", n, err, 2*people)
			}
			enginetest.CheckOnce(t, sent(t, st, w.ID, id), 2*people)
			// The last step fired, then fired again (a node whose commit
			// went through but whose answer was lost): the redo does nothing.
			clk.Add(time.Hour)
			claimed, err := st.ClaimTimers(context.Background(), clk.Now(), time.Minute, 1000)
			if err != nil || len(claimed) != people {
				t.Fatalf("claimed %d (%v), want the last step's %d", len(claimed), err, people)
			}
			for _, tm := range claimed {
				if _, err := st.FireTimer(context.Background(), tm, store.Fire{At: clk.Now()}); err != nil {
					t.Fatal(err)
				}
				if out, err := st.FireTimer(context.Background(), tm, store.Fire{At: clk.Now()}); err != nil || out != "" {
					t.Fatalf("redo: %q %v", out, err)
				}
			}
			enginetest.CheckOnce(t, sent(t, st, w.ID, id), 2*people)
		})
	}
}

// TestEngineWakes: a run started in the process is looked at at once,
// whatever the poll interval.
func TestEngineWakes(t *testing.T) {
	st := enginetest.OpenSQLite(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	svc := NewService(st, nil)
	disp := &dispatcher{}
	e, err := NewEngine(Config{Poll: time.Hour, Lease: time.Hour}, st, disp, svc.Wakes(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	w, id := setup(t, st, 0)
	res, err := st.UpsertSubscription(ctx, store.SubscriptionInput{WebsiteID: w.ID, Endpoint: "https://push.example/wake", P256dh: "p", Auth: "a", At: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := svc.Event(ctx, w.ID, res.SubscriberID, "signed_up", nil, time.Now()); err != nil || n != 1 {
		t.Fatalf("Event: %d %v", n, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(sent(t, st, w.ID, id)) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the engine was not woken")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestConcurrentTriggersOneRun: triggers for one person arriving at once
// on several nodes of one PostgreSQL leave one pending run: without
// restart one of them starts it; with restart each starts in turn and
// only the last run's messages wait.
func TestConcurrentTriggersOneRun(t *testing.T) {
	nodes := enginetest.OpenPostgres(t, 4)
	w, id := setup(t, nodes[0], 0)
	ctx := context.Background()
	res, err := nodes[0].UpsertSubscription(ctx, store.SubscriptionInput{WebsiteID: w.ID, Endpoint: "https://push.example/race", P256dh: "p", Auth: "a", At: start})
	if err != nil {
		t.Fatal(err)
	}
	for _, restart := range []bool{false, true} {
		var wg sync.WaitGroup
		var mu sync.Mutex
		started := 0
		for i := range 12 {
			st := nodes[i%len(nodes)]
			wg.Go(func() {
				ok, err := st.TriggerAutomation(ctx, store.AutomationTrigger{WebsiteID: w.ID, AutomationID: id, SubscriberID: res.SubscriberID,
					RunID: uuid.NewString(), Restart: restart, Delays: []time.Duration{time.Hour, 2 * time.Hour}, At: start})
				if err != nil {
					t.Error(err)
				}
				if ok {
					mu.Lock()
					started++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		want := map[bool]int{false: 1, true: 12}[restart]
		if started != want {
			t.Fatalf("restart %v: %d started, want %d", restart, started, want)
		}
		a, err := nodes[0].Automation(ctx, w.ID, id)
		if err != nil {
			t.Fatal(err)
		}
		if a.Stats.Pending != 2 {
			t.Fatalf("restart %v: %d messages pending, want one run's 2", restart, a.Stats.Pending)
		}
	}
}
