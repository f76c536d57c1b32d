package journeys

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/automations"
	"github.com/relaybell/relaybell/automations/enginetest"
	"github.com/relaybell/relaybell/store"
)

var start = enginetest.Start

// setup makes a website with people subscribed and an active three-step
// journey (a send now, one a minute later, one an hour after that), and
// enrols every person. It returns the journey's id.
func setup(t *testing.T, st store.Store, people int) (store.Website, string) {
	t.Helper()
	ctx := context.Background()
	w := enginetest.Website(t, st)
	var d Definition
	if err := json.Unmarshal([]byte(`{"steps":[
		{"id":"one","type":"send","content":{"title":"step 1"},"next":"w1"},
		{"id":"w1","type":"wait","seconds":60,"next":"two"},
		{"id":"two","type":"send","content":{"title":"step 2"},"next":"w2"},
		{"id":"w2","type":"wait","seconds":3600,"next":"three"},
		{"id":"three","type":"send","content":{"title":"step 3"}}]}`), &d); err != nil {
		t.Fatal(err)
	}
	d.Name, d.Status, d.Entry, d.Reentry = "Steps", store.AutomationActive, Entry{Type: EntryAPI}, Reentry{Mode: ReentryNever}
	if err := d.Check(ctx, w, st, start); err != nil {
		t.Fatal(err)
	}
	def, _ := json.Marshal(d)
	j := store.Journey{ID: uuid.NewString(), WebsiteID: w.ID, Name: d.Name, Status: d.Status, EntryType: EntryAPI, Version: 1,
		Definition: def, CreatedAt: start, UpdatedAt: start}
	if err := st.CreateJourney(ctx, j); err != nil {
		t.Fatal(err)
	}
	svc := NewService(st, Config{}, nil)
	for i := range people {
		res, err := st.UpsertSubscription(ctx, store.SubscriptionInput{WebsiteID: w.ID, Endpoint: fmt.Sprintf("https://push.example/%s/%d", w.ID, i),
			P256dh: "p", Auth: "a", Device: "desktop", At: start})
		if err != nil {
			t.Fatal(err)
		}
		if _, refused, err := svc.Enroll(ctx, j, res.SubscriberID, start); err != nil || refused != "" {
			t.Fatalf("Enroll: %q %v", refused, err)
		}
	}
	return w, j.ID
}

// sent counts the journey's notifications per (person, title).
func sent(t *testing.T, st store.Store, websiteID, journeyID string) map[string]int {
	t.Helper()
	return enginetest.Sent(t, st, websiteID, func(n store.Notification) bool { return n.JourneyID == journeyID })
}

func engine(t *testing.T, st Store, clk *enginetest.Clock, batch int) *automations.Engine {
	t.Helper()
	as, ok := st.(automations.Store)
	if !ok {
		t.Fatal("not an automations store")
	}
	e, err := automations.NewEngine(automations.Config{Now: clk.Now, Batch: batch, Lease: time.Minute,
		Kinds: map[string]automations.KindHandler{store.TimerJourney: NewEngine(st, nil, nil, nil)}}, as, nil, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestEngineExactlyOnceConcurrent: engines on two nodes of one
// PostgreSQL claim the same due journey timers at once (SKIP LOCKED):
// every step is sent once, none twice, none dropped.
func TestEngineExactlyOnceConcurrent(t *testing.T) {
	nodes := enginetest.OpenPostgres(t, 2)
	const people = 120
	w, id := setup(t, nodes[0], people)
	clk := enginetest.NewClock(start)
	engines := []*automations.Engine{engine(t, nodes[0], clk, 7), engine(t, nodes[1], clk, 7)}
	for _, step := range []time.Duration{0, time.Minute, time.Minute + time.Hour} {
		clk.Set(start.Add(step))
		fired := enginetest.RunAtOnce(t, engines)
		if fired[0]+fired[1] != people {
			t.Fatalf("at %v: fired %v, want %d in all", step, fired, people)
		}
	}
	enginetest.CheckOnce(t, sent(t, nodes[0], w.ID, id), 3*people)
}

// dying fails MoveEnrollment and MoveEnrollments as a node killed between its claim and its
// commit: the transaction never commits.
type dying struct {
	store.Store
}

var errKilled = errors.New("killed")

func (s dying) MoveEnrollment(ctx context.Context, m store.JourneyMove) (bool, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	cancel(errKilled)
	return s.Store.MoveEnrollment(ctx, m)
}

func (s dying) MoveEnrollments(ctx context.Context, ms []store.JourneyMove) ([]bool, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	cancel(errKilled)
	return s.Store.MoveEnrollments(ctx, ms)
}

// TestEngineCrashRedo: a node that claimed journey timers and died before
// its commit leaves them leased; once the lease runs out another node
// runs each step once, and a redo of a committed timer does nothing.
func TestEngineCrashRedo(t *testing.T) {
	for _, c := range enginetest.Stores {
		t.Run(c.Name, func(t *testing.T) {
			st := c.Open(t)
			const people = 20
			w, id := setup(t, st, people)
			clk := enginetest.NewClock(start)
			if _, err := engine(t, dying{st}, clk, 100).RunDue(context.Background()); err == nil {
				t.Fatal("the dying node fired without an error")
			}
			if got := sent(t, st, w.ID, id); len(got) != 0 {
				t.Fatalf("a failed commit sent %v", got)
			}
			e2 := engine(t, st, clk, 100)
			clk.Set(start.Add(30 * time.Second))
			if n, err := e2.RunDue(context.Background()); err != nil || n != 0 {
				t.Fatalf("within the lease: fired %d (%v), want 0", n, err)
			}
			clk.Set(start.Add(61 * time.Second))
			if n, err := e2.RunDue(context.Background()); err != nil || n != people {
				t.Fatalf("after the lease: fired %d (%v), want %d", n, err, people)
			}
			enginetest.CheckOnce(t, sent(t, st, w.ID, id), people)
			// The next step fired, then fired again (a node whose commit
			// went through but whose answer was lost): the redo is a no-op.
			clk.Set(start.Add(3 * time.Minute))
			claimed, err := st.ClaimTimers(context.Background(), clk.Now(), time.Minute, 1000)
			if err != nil || len(claimed) != people {
				t.Fatalf("claimed %d (%v), want %d", len(claimed), err, people)
			}
			h := NewEngine(st, nil, nil, nil)
			for _, tm := range claimed {
				if err := h.FireTimer(context.Background(), tm, clk.Now()); err != nil {
					t.Fatal(err)
				}
				if err := h.FireTimer(context.Background(), tm, clk.Now()); err != nil {
					t.Fatal(err)
				}
			}
			enginetest.CheckOnce(t, sent(t, st, w.ID, id), 2*people)
			// The last step's timers are one per person, due an hour on.
			clk.Set(start.Add(2 * time.Hour))
			if n, err := e2.RunDue(context.Background()); err != nil || n != people {
				t.Fatalf("last step: fired %d (%v)", n, err)
			}
			enginetest.CheckOnce(t, sent(t, st, w.ID, id), 3*people)
		})
	}
}

// batchFails fails every MoveEnrollments after writing its first move,
// as a batch whose transaction fails part way (a deadlock on PostgreSQL).
type batchFails struct {
	store.Store
	batches *int
}

var errBatch = errors.New("the batch's transaction failed")

func (s batchFails) MoveEnrollments(ctx context.Context, ms []store.JourneyMove) ([]bool, error) {
	*s.batches++
	if _, err := s.Store.MoveEnrollments(ctx, ms[:1]); err != nil {
		return nil, err
	}
	return make([]bool, len(ms)), errBatch
}

// TestEngineBatchFallback: when a batch's transaction fails, the engine
// moves its enrolments one at a time: every step is sent once, the one a
// failed batch committed before failing included, and none twice.
func TestEngineBatchFallback(t *testing.T) {
	for _, c := range enginetest.Stores {
		t.Run(c.Name, func(t *testing.T) {
			st := c.Open(t)
			const people = 12
			w, id := setup(t, st, people)
			clk := enginetest.NewClock(start)
			batches := 0
			e := engine(t, batchFails{Store: st, batches: &batches}, clk, 5)
			if n, err := e.RunDue(context.Background()); err != nil || n != people {
				t.Fatalf("fired %d (%v), want %d", n, err, people)
			}
			if batches != 3 { // 12 timers in batches of 5
				t.Fatalf("%d batches tried, want 3", batches)
			}
			enginetest.CheckOnce(t, sent(t, st, w.ID, id), people)
			clk.Set(start.Add(time.Minute))
			if n, err := e.RunDue(context.Background()); err != nil || n != people {
				t.Fatalf("second step: fired %d (%v), want %d", n, err, people)
			}
			enginetest.CheckOnce(t, sent(t, st, w.ID, id), 2*people)
		})
	}
}
