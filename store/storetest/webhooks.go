package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/store"
)

var webhookCases = []testCase{
	{"NotificationSent", testNotificationSent},
	{"NotificationSentConcurrent", testNotificationSentConcurrent},
	{"NotificationSentOnlyWhenSent", testNotificationSentOnlyWhenSent},
	{"WebhookEventsPaging", testWebhookEventsPaging},
	{"AddWebhookEventErrors", testAddWebhookEventErrors},
	{"WebhookEventsTail", testWebhookEventsTail},
}

// webhookEvents reads the whole outbox after afterSeq.
func webhookEvents(t *testing.T, s store.Store, afterSeq int64) []store.WebhookEvent {
	t.Helper()
	es, err := s.WebhookEvents(context.Background(), afterSeq, 0)
	noErr(t, "WebhookEvents", err)
	return es
}

// wantEvents fails unless es are want, Data compared byte for byte (same
// would compare it reformatted) and a Seq expected as 0 taken as any.
func wantEvents(t *testing.T, what string, es, want []store.WebhookEvent) {
	t.Helper()
	if len(es) != len(want) {
		t.Fatalf("%s: %d events, want %d: %+v", what, len(es), len(want), es)
	}
	// Copies without Data: same normalizes what it compares in place.
	got, exp := slices.Clone(es), slices.Clone(want)
	for i := range got {
		if string(got[i].Data) != string(exp[i].Data) {
			t.Fatalf("%s: event %d data\ngot  %s\nwant %s", what, i, got[i].Data, exp[i].Data)
		}
		got[i].Data, exp[i].Data = nil, nil
		if exp[i].Seq == 0 {
			exp[i].Seq = got[i].Seq
		}
	}
	same(t, what, got, exp)
}

// sentData is the exact data of a notification.sent event.
func sentData(id string, recipients, sent, failed, pruned int) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"notificationId":%q,"recipients":%d,"sent":%d,"failed":%d,"pruned":%d}`,
		id, recipients, sent, failed, pruned))
}

// wantSentEvent fails unless the outbox holds exactly one notification.sent
// event, of the website, with data, made at when, with a UUID and a
// positive seq; it returns the event.
func wantSentEvent(t *testing.T, s store.Store, what, websiteID string, data json.RawMessage, when time.Time) store.WebhookEvent {
	t.Helper()
	es := webhookEvents(t, s, 0)
	want := []store.WebhookEvent{{WebsiteID: websiteID, Event: store.EventNotificationSent, Data: data, CreatedAt: when}}
	if len(es) == 1 {
		if _, err := uuid.Parse(es[0].ID); err != nil || es[0].Seq <= 0 {
			t.Fatalf("%s: event id %q, seq %d; want a UUID and a positive seq", what, es[0].ID, es[0].Seq)
		}
		want[0].ID = es[0].ID
	}
	wantEvents(t, what, es, want)
	return es[0]
}

// finishShards reports every shard of the send done and returns how many
// calls reported it finished.
func finishShards(t *testing.T, s store.Store, id string, when time.Time) int {
	t.Helper()
	finished := 0
	for shard := range store.Shards {
		done, err := s.ShardDone(context.Background(), id, shard, when)
		noErr(t, "ShardDone", err)
		if done {
			finished++
		}
	}
	return finished
}

func testNotificationSent(t *testing.T, s store.Store) {
	ctx := context.Background()
	w, other := newWebsite(t, s), newWebsite(t, s)
	n := sending(t, s, w.Website.ID)
	unfinished := sending(t, s, other.Website.ID)
	e := endpoints(t, s, w.Website.ID, 6)

	noErr(t, "RecordResults", s.RecordResults(ctx, n.ID, []store.PushResult{
		{EndpointID: e[0], Outcome: store.OutcomeSent},
		{EndpointID: e[1], Outcome: store.OutcomeSent},
		{EndpointID: e[2], Outcome: store.OutcomeFailed},
	}))
	for shard := store.Shards - 1; shard > 0; shard-- {
		done, err := s.ShardDone(ctx, n.ID, shard, at(2*time.Hour))
		noErr(t, "ShardDone", err)
		if done {
			t.Fatalf("ShardDone(shard %d) finished the send early", shard)
		}
	}
	_, err := s.ShardDone(ctx, unfinished.ID, 0, at(2*time.Hour))
	noErr(t, "ShardDone(other send)", err)
	wantEvents(t, "events before the last shard", webhookEvents(t, s, 0), nil)

	// Results recorded after the other shards but before the last count.
	noErr(t, "RecordResults", s.RecordResults(ctx, n.ID, []store.PushResult{
		{EndpointID: e[3], Outcome: store.OutcomeSent},
		{EndpointID: e[4], Outcome: store.OutcomePruned},
	}))
	done, err := s.ShardDone(ctx, n.ID, 0, at(3*time.Hour))
	noErr(t, "ShardDone(last shard)", err)
	if !done {
		t.Fatal("ShardDone(last shard) = false, want true")
	}
	first := wantSentEvent(t, s, "events after the last shard", w.Website.ID, sentData(n.ID, 5, 3, 1, 1), at(3*time.Hour))

	// Repeated reports, of the last shard or any other, and a late batch
	// add nothing.
	for _, shard := range []int{0, 0, 17} {
		done, err := s.ShardDone(ctx, n.ID, shard, at(4*time.Hour))
		noErr(t, "ShardDone(repeated)", err)
		if done {
			t.Fatalf("repeated ShardDone(shard %d) finished the send again", shard)
		}
	}
	noErr(t, "RecordResults(late)", s.RecordResults(ctx, n.ID, []store.PushResult{{EndpointID: e[5], Outcome: store.OutcomeSent}}))
	_, err = s.ShardDone(ctx, n.ID, 0, at(4*time.Hour))
	noErr(t, "ShardDone(after a late batch)", err)
	wantEvents(t, "events after repeats", webhookEvents(t, s, 0), []store.WebhookEvent{first})
}

// Of concurrent reports of every shard, the one that finishes the send adds
// the only event, with the counters of every batch recorded before.
func testNotificationSentConcurrent(t *testing.T, s store.Store) {
	w := newWebsite(t, s)
	n := sending(t, s, w.Website.ID)
	e := endpoints(t, s, w.Website.ID, 4)
	noErr(t, "RecordResults", s.RecordResults(context.Background(), n.ID, []store.PushResult{
		{EndpointID: e[0], Outcome: store.OutcomeSent},
		{EndpointID: e[1], Outcome: store.OutcomeFailed},
		{EndpointID: e[2], Outcome: store.OutcomeFailed},
		{EndpointID: e[3], Outcome: store.OutcomePruned},
	}))
	var wg sync.WaitGroup
	errs := make([]error, store.Shards*3)
	for i := range errs {
		wg.Go(func() {
			_, errs[i] = s.ShardDone(context.Background(), n.ID, i%store.Shards, at(2*time.Hour))
		})
	}
	wg.Wait()
	for _, err := range errs {
		noErr(t, "concurrent ShardDone", err)
	}
	wantSentEvent(t, s, "events after concurrent reports", w.Website.ID, sentData(n.ID, 4, 1, 2, 1), at(2*time.Hour))
}

// Sends that fail, are canceled or never start add no event; one whose
// shards all finished before it was marked sending adds its event on the
// next report.
func testNotificationSentOnlyWhenSent(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)

	failed := sending(t, s, w.Website.ID)
	noErr(t, "FailNotification", s.FailNotification(ctx, failed.ID, "dispatch_error", at(time.Hour)))
	if n := finishShards(t, s, failed.ID, at(2*time.Hour)); n != 0 {
		t.Fatalf("failed send finished %d times", n)
	}

	canceled := notification(w.Website.ID)
	canceled.Status, canceled.ScheduledAt = store.StatusScheduled, ptr(at(time.Hour))
	canceled = create(t, s, canceled)
	noErr(t, "CancelNotification", s.CancelNotification(ctx, w.Website.ID, canceled.ID, at(time.Minute)))
	if n := finishShards(t, s, canceled.ID, at(2*time.Hour)); n != 0 {
		t.Fatalf("canceled send finished %d times", n)
	}

	queued := create(t, s, notification(w.Website.ID))
	if n := finishShards(t, s, queued.ID, at(2*time.Hour)); n != 0 {
		t.Fatalf("queued send finished %d times", n)
	}
	wantEvents(t, "events of sends that did not finish", webhookEvents(t, s, 0), nil)

	_, err := s.StartSending(ctx, queued.ID, at(3*time.Hour))
	noErr(t, "StartSending", err)
	done, err := s.ShardDone(ctx, queued.ID, 9, at(4*time.Hour))
	noErr(t, "ShardDone", err)
	if !done {
		t.Fatal("ShardDone after StartSending with every shard done = false, want true")
	}
	wantSentEvent(t, s, "events after the late finish", w.Website.ID, sentData(queued.ID, 0, 0, 0, 0), at(4*time.Hour))
}

func testWebhookEventsPaging(t *testing.T, s store.Store) {
	ctx := context.Background()
	w, other := newWebsite(t, s), newWebsite(t, s)
	// Data is kept byte for byte: key order, spaces, numbers as written.
	datas := []string{
		`{"b":1,"a":2}`,
		`{"a": [true, null, 1.50], "z": {"y": "\u00e9"}}`,
		`{}`,
		`[1,2,3]`,
		`"text"`,
	}
	var all []store.WebhookEvent
	for i, d := range datas {
		e := store.WebhookEvent{
			ID:        uuid.NewString(),
			WebsiteID: []string{w.Website.ID, other.Website.ID}[i%2],
			Event:     fmt.Sprintf("test.event%d", i),
			Data:      json.RawMessage(d),
			CreatedAt: at(time.Duration(i) * time.Minute),
		}
		noErr(t, "AddWebhookEvent", s.AddWebhookEvent(ctx, e))
		all = append(all, e)
	}
	got := webhookEvents(t, s, 0)
	wantEvents(t, "every event", got, all)
	for i := 1; i < len(got); i++ {
		if got[i].Seq <= got[i-1].Seq {
			t.Fatalf("seqs not increasing: %d then %d", got[i-1].Seq, got[i].Seq)
		}
	}
	for i := range all {
		all[i].Seq = got[i].Seq
	}

	f := func(afterSeq int64, limit int, want []store.WebhookEvent) {
		t.Helper()
		es, err := s.WebhookEvents(ctx, afterSeq, limit)
		noErr(t, "WebhookEvents", err)
		wantEvents(t, fmt.Sprintf("WebhookEvents(%d, %d)", afterSeq, limit), es, want)
	}
	f(0, 2, all[:2])
	f(all[1].Seq, 2, all[2:4])
	f(all[3].Seq, 2, all[4:])
	f(all[4].Seq, 2, nil)
	f(all[0].Seq, 0, all[1:])
	f(all[0].Seq, -1, all[1:])
	f(all[2].Seq, 100, all[3:])
	f(all[4].Seq+1000, 10, nil)

	// An empty id gets a UUID, a zero time the current one.
	before := time.Now().Add(-time.Second)
	noErr(t, "AddWebhookEvent(no id)", s.AddWebhookEvent(ctx, store.WebhookEvent{
		WebsiteID: w.Website.ID, Event: "test.defaults", Data: json.RawMessage(`{}`),
	}))
	es := webhookEvents(t, s, all[4].Seq)
	if len(es) != 1 {
		t.Fatalf("%d events after the last, want 1", len(es))
	}
	if _, err := uuid.Parse(es[0].ID); err != nil {
		t.Fatalf("assigned id %q is not a UUID", es[0].ID)
	}
	if es[0].CreatedAt.Before(before) || es[0].CreatedAt.After(time.Now().Add(time.Second)) {
		t.Fatalf("assigned CreatedAt %v, want about now", es[0].CreatedAt)
	}
}

func testAddWebhookEventErrors(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	e := store.WebhookEvent{
		ID: uuid.NewString(), WebsiteID: w.Website.ID, Event: "test.event",
		Data: json.RawMessage(`{"a":1}`), CreatedAt: at(time.Minute),
	}
	noErr(t, "AddWebhookEvent", s.AddWebhookEvent(ctx, e))

	dup := e
	dup.Data = json.RawMessage(`{"a":2}`)
	wantErr(t, "AddWebhookEvent(same id)", s.AddWebhookEvent(ctx, dup), store.ErrConflict)
	unknown := e
	unknown.ID, unknown.WebsiteID = uuid.NewString(), uuid.NewString()
	wantErr(t, "AddWebhookEvent(unknown website)", s.AddWebhookEvent(ctx, unknown), store.ErrNotFound)
	for _, d := range []string{``, `{"a":`, `not json`} {
		bad := e
		bad.ID, bad.Data = uuid.NewString(), json.RawMessage(d)
		if err := s.AddWebhookEvent(ctx, bad); err == nil {
			t.Fatalf("AddWebhookEvent(data %q) succeeded", d)
		}
	}
	wantEvents(t, "events after refused ones", webhookEvents(t, s, 0), []store.WebhookEvent{e})
}

// A reader that keeps reading after the last seq it saw, while writers add
// events, sees every event exactly once: seqs commit in increasing order.
func testWebhookEventsTail(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	const writers, each = 8, 25
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for i := range writers {
		wg.Go(func() {
			for j := range each {
				e := store.WebhookEvent{
					WebsiteID: w.Website.ID, Event: "test.tail",
					Data: json.RawMessage(fmt.Sprintf(`{"writer":%d,"n":%d}`, i, j)), CreatedAt: at(time.Minute),
				}
				if err := s.AddWebhookEvent(ctx, e); err != nil {
					errs[i] = err
					return
				}
			}
		})
	}
	stop := make(chan struct{})
	go func() { wg.Wait(); close(stop) }()

	seen := map[string]bool{}
	var last int64
	read := func() {
		es, err := s.WebhookEvents(ctx, last, 7)
		noErr(t, "WebhookEvents", err)
		for _, e := range es {
			if seen[e.ID] {
				t.Fatalf("event %s read twice", e.ID)
			}
			seen[e.ID] = true
			last = e.Seq
		}
	}
	for done := false; !done; {
		select {
		case <-stop:
			done = true
		default:
		}
		read()
	}
	for range writers * each { // drain what the last reads left
		n := len(seen)
		read()
		if len(seen) == n {
			break
		}
	}
	for _, err := range errs {
		noErr(t, "concurrent AddWebhookEvent", err)
	}
	if len(seen) != writers*each {
		t.Fatalf("the reader saw %d events, want %d", len(seen), writers*each)
	}
}
