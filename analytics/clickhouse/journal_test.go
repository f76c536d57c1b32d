package clickhouse

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/relaybell/relaybell/analytics"
	"github.com/relaybell/relaybell/bus"
	"github.com/relaybell/relaybell/bus/kafka"
)

// downStore is a ClickHouse store whose first inserts fail, as when the
// server is down.
type downStore struct {
	*Store
	mu   sync.Mutex
	down int // inserts left to fail
}

func (d *downStore) Record(ctx context.Context, events []analytics.Event) error {
	d.mu.Lock()
	if d.down > 0 {
		d.down--
		d.mu.Unlock()
		return errors.New("clickhouse down")
	}
	d.mu.Unlock()
	return d.Store.Record(ctx, events)
}

func openJournal(t *testing.T, st analytics.Store) (*analytics.Journal, *kafka.Bus) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := kafka.Open(ctx, kafka.Config{Seeds: c.ListenAddrs(), RetryBackoff: 20 * time.Millisecond, MaxRetryBackoff: 100 * time.Millisecond,
		GroupOpts: []kgo.Opt{kgo.HeartbeatInterval(100 * time.Millisecond), kgo.FetchMaxWait(200 * time.Millisecond)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return analytics.NewJournal(st, b, slog.New(slog.DiscardHandler)), b
}

func runSink(t *testing.T, j *analytics.Journal) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- j.Sink(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("sink: %v", err)
		}
	})
}

func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; last: %s", what, state)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestJournalLosesNothing: events recorded while ClickHouse refuses
// inserts wait in Kafka and all reach it, each once; a record that is not
// events is dropped without holding the rest back, and a batch with an
// event no store holds is refused by Record.
func TestJournalLosesNothing(t *testing.T) {
	st := openStore(t)
	defer st.Close()
	down := &downStore{Store: st, down: 3}
	j, b := openJournal(t, down)
	ctx := context.Background()
	at := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	const n = 2500 // three records of at most 1,000 in the first call
	var events []analytics.Event
	for i := range n {
		device := "desktop"
		if i%5 == 0 {
			device = "android"
		}
		events = append(events, analytics.Event{Kind: analytics.KindSent, WebsiteID: "w1", NotificationID: "n1",
			EndpointID: fmt.Sprintf("e%d", i), SubscriberID: fmt.Sprintf("s%d", i), Device: device, At: at})
	}
	if err := j.Record(ctx, events[:2100]); err != nil {
		t.Fatal(err)
	}
	if err := b.Publish(ctx, bus.Events, "", []byte("not events")); err != nil {
		t.Fatal(err)
	}
	runSink(t, j)
	if err := j.Record(ctx, events[2100:]); err != nil {
		t.Fatal(err)
	}
	want := []analytics.DeviceRow{{Device: "desktop", Sent: 2000}, {Device: "android", Sent: 500}}
	eventually(t, "every event in ClickHouse", func() (bool, string) {
		r, err := j.Report(ctx, "w1", "n1")
		return err == nil && fmt.Sprint(r.Devices) == fmt.Sprint(want), fmt.Sprintf("%+v %v", r.Devices, err)
	})
	down.mu.Lock()
	left := down.down
	down.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d failing inserts left: the sink never met the outage", left)
	}
	// A batch holding an event no store can hold is refused before it is
	// journaled: its good event never arrives.
	bad := events[0]
	bad.Kind = "opened"
	good := events[0]
	good.EndpointID = "e-good"
	if err := j.Record(ctx, []analytics.Event{good, bad}); err == nil {
		t.Fatal("recording an unknown kind: no error")
	}
	// Nothing arrives twice later either.
	time.Sleep(2 * analytics.SinkWindow)
	if r, err := j.Report(ctx, "w1", "n1"); err != nil || fmt.Sprint(r.Devices) != fmt.Sprint(want) {
		t.Fatalf("later: %+v %v, want %+v", r.Devices, err, want)
	}
}

// TestJournalEraseCoversEventsOnTheirWay: an erasure right after a record
// waits for the sink, so the event does not reach ClickHouse afterwards.
func TestJournalEraseCoversEventsOnTheirWay(t *testing.T) {
	st := openStore(t)
	defer st.Close()
	j, _ := openJournal(t, st)
	runSink(t, j)
	ctx := context.Background()
	at := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	ev := func(sub string) analytics.Event {
		return analytics.Event{Kind: analytics.KindSent, WebsiteID: "w1", NotificationID: "n1", EndpointID: "e-" + sub, SubscriberID: sub, At: at}
	}
	if err := j.Record(ctx, []analytics.Event{ev("gone"), ev("kept")}); err != nil {
		t.Fatal(err)
	}
	if err := j.Erase(ctx, "w1", []string{"gone"}, nil); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the kept event, and the erased one gone", func() (bool, string) {
		gone, err1 := j.PersonCounts(ctx, "w1", []string{"gone"})
		kept, err2 := j.PersonCounts(ctx, "w1", []string{"kept"})
		return len(gone) == 0 && kept[analytics.KindSent] == 1, fmt.Sprint(gone, kept, err1, err2)
	})
	time.Sleep(2 * analytics.SinkWindow)
	if gone, err := j.PersonCounts(ctx, "w1", []string{"gone"}); err != nil || len(gone) != 0 {
		t.Fatalf("after the erasure: %v %v", gone, err)
	}
}

// TestJournalBehaviors: behaviors recorded as a node does (group commit
// over the Journal) wait in Kafka while ClickHouse refuses inserts, and
// all reach it once, beside events, a large one byte for byte; an erasure
// by external id right after a record covers the behavior on its way.
func TestJournalBehaviors(t *testing.T) {
	st := openStore(t)
	defer st.Close()
	down := &downStore{Store: st, down: 2}
	j, _ := openJournal(t, down)
	an := analytics.NewBatched(j, 100*time.Millisecond, 0)
	ctx := context.Background()
	at := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	large := analytics.Behavior{ID: "large", WebsiteID: "w1", Name: "cart.updated", SubscriberID: "s-large", Source: "server",
		At: at.Add(-time.Second)}
	large.Properties = json.RawMessage(`{"items":"` + strings.Repeat("é", (analytics.MaxBehaviorBytes-200)/2) + `"}`)
	var wg sync.WaitGroup
	const n = 300 // posted one at a time, as the API does
	for i := range n {
		wg.Go(func() {
			b := analytics.Behavior{ID: fmt.Sprintf("b%03d", i), WebsiteID: "w1", Name: "purchase", ExternalID: fmt.Sprintf("u%d", i%10),
				SubscriberID: fmt.Sprintf("s%d", i%7), Properties: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i)), Source: "server",
				NotificationID: "n1", Value: float64(i) / 4, Conversion: i%2 == 0, At: at.Add(time.Duration(i) * time.Millisecond)}
			if err := an.RecordBehaviors(ctx, []analytics.Behavior{b}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Go(func() {
		if err := an.RecordBehaviors(ctx, []analytics.Behavior{large}); err != nil {
			t.Error(err)
		}
	})
	wg.Go(func() {
		if err := an.Record(ctx, []analytics.Event{{Kind: analytics.KindSent, WebsiteID: "w1", NotificationID: "n1", EndpointID: "e1",
			SubscriberID: "s1", Device: "desktop", At: at}}); err != nil {
			t.Error(err)
		}
	})
	wg.Wait()
	runSink(t, j)
	eventually(t, "every behavior in ClickHouse", func() (bool, string) {
		bs, err := an.Behaviors(ctx, analytics.BehaviorQuery{WebsiteID: "w1", Limit: analytics.MaxBehaviorLimit})
		return err == nil && len(bs) == n+1, fmt.Sprintf("%d behaviors, %v", len(bs), err)
	})
	bs, err := an.Behaviors(ctx, analytics.BehaviorQuery{WebsiteID: "w1", Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	want := analytics.Behavior{ID: "b299", WebsiteID: "w1", Name: "purchase", ExternalID: "u9", SubscriberID: "s5",
		Properties: json.RawMessage(`{"n":299}`), Source: "server", NotificationID: "n1", Value: 74.75, At: at.Add(299 * time.Millisecond)}
	if len(bs) != 2 || !reflect.DeepEqual(bs[0], want) || bs[1].ID != "b298" || !bs[1].Conversion {
		t.Fatalf("latest two: %+v, want %+v then b298", bs, want)
	}
	got, err := an.Behaviors(ctx, analytics.BehaviorQuery{WebsiteID: "w1", SubscriberIDs: []string{"s-large"}, Limit: 10})
	if err != nil || len(got) != 1 || !reflect.DeepEqual(got[0], large) {
		t.Fatalf("the large behavior: %d behaviors, %v", len(got), err)
	}
	if r, err := an.Report(ctx, "w1", "n1"); err != nil || len(r.Devices) != 1 || r.Devices[0].Sent != 1 {
		t.Fatalf("the event beside them: %+v %v", r, err)
	}
	down.mu.Lock()
	left := down.down
	down.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d failing inserts left: the sink never met the outage", left)
	}

	// u3's behaviors, one of them just recorded, go; the rest stay.
	late := analytics.Behavior{ID: "late", WebsiteID: "w1", Name: "purchase", ExternalID: "u3", At: at.Add(time.Hour)}
	if err := an.RecordBehaviors(ctx, []analytics.Behavior{late}); err != nil {
		t.Fatal(err)
	}
	if err := an.Erase(ctx, "w1", nil, []string{"u3"}); err != nil {
		t.Fatal(err)
	}
	u3 := analytics.BehaviorQuery{WebsiteID: "w1", ExternalID: "u3", Limit: 100}
	eventually(t, "u3's behaviors gone", func() (bool, string) {
		gone, err := an.Behaviors(ctx, u3)
		all, err2 := an.Behaviors(ctx, analytics.BehaviorQuery{WebsiteID: "w1", Limit: analytics.MaxBehaviorLimit})
		return err == nil && err2 == nil && len(gone) == 0 && len(all) == n+1-n/10, fmt.Sprint(len(gone), len(all), err, err2)
	})
	time.Sleep(2 * analytics.SinkWindow)
	if gone, err := an.Behaviors(ctx, u3); err != nil || len(gone) != 0 {
		t.Fatalf("after the erasure: %d of u3's, %v", len(gone), err)
	}
}
