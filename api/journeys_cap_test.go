package api

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"

	"github.com/relaybell/relaybell/analytics"
	"github.com/relaybell/relaybell/bus"
	"github.com/relaybell/relaybell/fanout"
	"github.com/relaybell/relaybell/pusher"
	"github.com/relaybell/relaybell/store"
)

// syncBus is a bus.Bus that runs a topic's handler inside Publish, so
// that a send driven from its intent has gone through every shard of
// fan-out when Publish returns: no test waits for a consumer.
type syncBus struct {
	mu       sync.Mutex
	handlers map[string]bus.Handler
	ready    chan struct{} // closed once intents and shards have a consumer
}

func (b *syncBus) Publish(ctx context.Context, topic, _ string, value []byte) error {
	b.mu.Lock()
	h := b.handlers[topic]
	b.mu.Unlock()
	if h == nil {
		return fmt.Errorf("no consumer of %s", topic)
	}
	return h(ctx, bus.Message{Topic: topic, Value: value})
}

func (b *syncBus) Consume(ctx context.Context, topic, _ string, _ int, h bus.Handler) error {
	b.mu.Lock()
	b.handlers[topic] = h
	if len(b.handlers) == 2 {
		close(b.ready)
	}
	b.mu.Unlock()
	<-ctx.Done()
	return nil
}

func (b *syncBus) Close() error { return nil }

// pushLog is fan-out's Router: it records which endpoints each send was
// handed to and records them sent, as a pusher does.
type pushLog struct {
	st     store.Store
	mu     sync.Mutex
	pushed map[string][]string // notification id -> endpoint ids
}

func (p *pushLog) Push(ctx context.Context, _ string, b pusher.Batch) error {
	results := make([]store.PushResult, len(b.Recipients))
	p.mu.Lock()
	for i, r := range b.Recipients {
		p.pushed[b.NotificationID] = append(p.pushed[b.NotificationID], r.Endpoint.ID)
		results[i] = store.PushResult{EndpointID: r.Endpoint.ID, Outcome: store.OutcomeSent, Shard: store.ShardOf(r.Subscriber.ID)}
	}
	p.mu.Unlock()
	return p.st.RecordResults(ctx, b.NotificationID, results)
}

type noReports struct{}

func (noReports) Report(context.Context, string, string) (analytics.Report, error) {
	return analytics.Report{}, nil
}

// fanoutRig runs the real fan-out over the harness store on a syncBus.
type fanoutRig struct {
	bus *syncBus
	log *pushLog
}

func (h *harness) fanout(t *testing.T) *fanoutRig {
	t.Helper()
	r := &fanoutRig{bus: &syncBus{handlers: map[string]bus.Handler{}, ready: make(chan struct{})},
		log: &pushLog{st: h.st, pushed: map[string][]string{}}}
	f, err := fanout.New(fanout.Config{}, h.st, r.bus, r.log, noReports{}, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); f.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	<-r.bus.ready
	return r
}

// send drives one stored send through fan-out, from its intent, and
// returns the endpoints it was pushed to.
func (r *fanoutRig) send(t *testing.T, n store.Notification) []string {
	t.Helper()
	if err := bus.PublishJSON(context.Background(), r.bus, bus.Intents, n.WebsiteID, bus.Intent{WebsiteID: n.WebsiteID, NotificationID: n.ID}); err != nil {
		t.Fatal(err)
	}
	r.log.mu.Lock()
	defer r.log.mu.Unlock()
	return r.log.pushed[n.ID]
}

// TestJourneyFrequencyCap: the website's frequency cap, which fan-out
// applies, holds a journey's send step once the person had their pushes,
// and lets a transactional step through, through the real fan-out.
func TestJourneyFrequencyCap(t *testing.T) {
	h := newHarness(t)
	ada := h.browser(t, `,"externalId":"ada"`)
	if r := h.do("PUT", "/api/v1/settings", `{"frequencyCap":{"max":1,"hours":24}}`, auth(h.site.APIKey)...); r.status != 200 {
		t.Fatalf("settings: %d %s", r.status, r.body)
	}
	id := h.createJourney(t, `{"name":"Order","status":"active","entry":{"type":"api"},"steps":[
		{"id":"news","type":"send","content":{"title":"News"},"next":"promo"},
		{"id":"promo","type":"send","content":{"title":"Promo"},"next":"receipt"},
		{"id":"receipt","type":"send","content":{"title":"Receipt"},"transactional":true}]}`)["id"].(string)
	if r := h.enroll(t, id, `{"externalId":"ada"}`); r.status != 201 {
		t.Fatalf("enrol: %d %s", r.status, r.body)
	}
	h.runJourneys(t)
	sends := h.notificationsOfJourney(t, id)
	if len(sends) != 3 {
		t.Fatalf("%d sends, want the three steps'", len(sends))
	}
	f := h.fanout(t)
	for i, want := range []struct {
		step          string
		transactional bool
		pushed        string
	}{
		{"news", false, "[" + ada.EndpointID + "]"},
		{"promo", false, "[]"}, // the cap: one push a day, News had it
		{"receipt", true, "[" + ada.EndpointID + "]"},
	} {
		n := sends[i]
		if n.JourneyStep != want.step || n.Transactional != want.transactional {
			t.Fatalf("send %d: step %s transactional %v, want %+v", i, n.JourneyStep, n.Transactional, want)
		}
		if got := fmt.Sprint(f.send(t, n)); got != want.pushed {
			t.Fatalf("%s pushed to %s, want %s", want.step, got, want.pushed)
		}
		done, err := h.st.NotificationByID(context.Background(), n.ID)
		if err != nil {
			t.Fatal(err)
		}
		if done.Status != store.StatusSent {
			t.Fatalf("%s: %s %+v, want sent", want.step, done.Status, done.Counters)
		}
	}
}
