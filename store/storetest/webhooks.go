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
	{"SubscriberCreated", testSubscriberCreated},
	{"UpsertSubscriptionsBatch", testUpsertSubscriptionsBatch},
	{"SubscriberUnsubscribed", testSubscriberUnsubscribed},
	{"NotificationClicked", testNotificationClicked},
	{"NotificationClickedConcurrent", testNotificationClickedConcurrent},
	{"EventsOnlyWithAWebhook", testEventsOnlyWithAWebhook},
}

// listenedWebsite is a new website with an enabled webhook, so that the
// service stores its events.
func listenedWebsite(t *testing.T, s store.Store) website {
	t.Helper()
	w := newWebsite(t, s)
	noErr(t, "CreateWebhook", s.CreateWebhook(context.Background(), store.Webhook{ID: uuid.NewString(),
		WebsiteID: w.Website.ID, URL: "https://hooks.example/in", Secret: "whsec_test", Enabled: true, CreatedAt: t0}))
	return w
}

// The service's own events are stored only for a website with an enabled
// webhook; AddWebhookEvent stores what it is given.
func testEventsOnlyWithAWebhook(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	off := store.Webhook{ID: uuid.NewString(), WebsiteID: w.Website.ID, URL: "https://hooks.example/in",
		Secret: "whsec_test", Enabled: false, CreatedAt: t0}
	noErr(t, "CreateWebhook", s.CreateWebhook(ctx, off))
	mark := lastSeq(t, s)
	activity := func() {
		t.Helper()
		in := subscription(w.Website.ID)
		res := subscribe(t, s, in)
		n := sending(t, s, w.Website.ID)
		_, err := s.RecordInteraction(ctx, w.Website.ID, n.ID, res.EndpointID, store.InteractionClicked, at(time.Hour), clickedEvent(n.ID, ""))
		noErr(t, "RecordInteraction", err)
		for shard := range store.Shards {
			_, err := s.ShardDone(ctx, n.ID, shard, at(time.Hour))
			noErr(t, "ShardDone", err)
		}
		_, err = s.DeleteSubscription(ctx, w.Website.ID, in.Endpoint)
		noErr(t, "DeleteSubscription", err)
	}
	activity()
	if got := webhookEvents(t, s, mark); len(got) != 0 {
		t.Fatalf("%d events stored for a website whose only webhook is off", len(got))
	}
	_, err := s.UpdateWebhook(ctx, w.Website.ID, off.ID, func(h *store.Webhook) error { h.Enabled = true; return nil })
	noErr(t, "UpdateWebhook", err)
	activity()
	var names []string
	for _, e := range webhookEvents(t, s, mark) {
		names = append(names, e.Event)
	}
	same(t, "events once the webhook is on", names, []string{store.EventSubscriberCreated,
		store.EventNotificationClicked, store.EventNotificationSent, store.EventSubscriberUnsubscribed})
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

// lastSeq is the seq of the outbox's last event, 0 when it is empty: tests
// read what follows their setup (subscribing adds events) after it.
func lastSeq(t *testing.T, s store.Store) int64 {
	t.Helper()
	es := webhookEvents(t, s, 0)
	if len(es) == 0 {
		return 0
	}
	return es[len(es)-1].Seq
}

// wantNewEvents fails unless the outbox after afterSeq holds exactly want,
// each with a positive seq and a distinct UUID id. An empty ID in want is
// taken as any, a zero CreatedAt as any time in the last minute. It returns
// the events read.
func wantNewEvents(t *testing.T, s store.Store, what string, afterSeq int64, want []store.WebhookEvent) []store.WebhookEvent {
	t.Helper()
	es := webhookEvents(t, s, afterSeq)
	want = slices.Clone(want)
	ids := map[string]bool{}
	for i := range min(len(es), len(want)) {
		if _, err := uuid.Parse(es[i].ID); err != nil || es[i].Seq <= afterSeq || ids[es[i].ID] {
			t.Fatalf("%s: event %d id %q, seq %d; want a new UUID and a seq after %d", what, i, es[i].ID, es[i].Seq, afterSeq)
		}
		ids[es[i].ID] = true
		if want[i].ID == "" {
			want[i].ID = es[i].ID
		}
		if want[i].CreatedAt.IsZero() {
			if c := es[i].CreatedAt; c.Before(time.Now().Add(-time.Minute)) || c.After(time.Now().Add(time.Second)) {
				t.Fatalf("%s: event %d created at %v, want about now", what, i, c)
			}
			want[i].CreatedAt = es[i].CreatedAt
		}
	}
	wantEvents(t, what, es, want)
	return es
}

// sentData is the exact data of a notification.sent event.
func sentData(id string, recipients, sent, failed, pruned int) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"notificationId":%q,"recipients":%d,"sent":%d,"failed":%d,"pruned":%d}`,
		id, recipients, sent, failed, pruned))
}

// wantSentEvent fails unless the outbox after afterSeq holds exactly one
// notification.sent event, of the website, with data, made at when, with a
// UUID and a later seq; it returns the event.
func wantSentEvent(t *testing.T, s store.Store, what string, afterSeq int64, websiteID string, data json.RawMessage, when time.Time) store.WebhookEvent {
	t.Helper()
	return wantNewEvents(t, s, what, afterSeq, []store.WebhookEvent{
		{WebsiteID: websiteID, Event: store.EventNotificationSent, Data: data, CreatedAt: when},
	})[0]
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
	w, other := listenedWebsite(t, s), listenedWebsite(t, s)
	n := sending(t, s, w.Website.ID)
	unfinished := sending(t, s, other.Website.ID)
	e := endpoints(t, s, w.Website.ID, 6)
	mark := lastSeq(t, s) // after the subscriptions' events

	noErr(t, "RecordResults", recordResults(s, ctx, n.ID, []store.PushResult{
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
	wantEvents(t, "events before the last shard", webhookEvents(t, s, mark), nil)

	// Results recorded after the other shards but before the last count.
	noErr(t, "RecordResults", recordResults(s, ctx, n.ID, []store.PushResult{
		{EndpointID: e[3], Outcome: store.OutcomeSent},
		{EndpointID: e[4], Outcome: store.OutcomePruned},
	}))
	done, err := s.ShardDone(ctx, n.ID, 0, at(3*time.Hour))
	noErr(t, "ShardDone(last shard)", err)
	if !done {
		t.Fatal("ShardDone(last shard) = false, want true")
	}
	first := wantSentEvent(t, s, "events after the last shard", mark, w.Website.ID, sentData(n.ID, 5, 3, 1, 1), at(3*time.Hour))

	// Repeated reports, of the last shard or any other, and a late batch
	// add nothing.
	for _, shard := range []int{0, 0, 17} {
		done, err := s.ShardDone(ctx, n.ID, shard, at(4*time.Hour))
		noErr(t, "ShardDone(repeated)", err)
		if done {
			t.Fatalf("repeated ShardDone(shard %d) finished the send again", shard)
		}
	}
	noErr(t, "RecordResults(late)", recordResults(s, ctx, n.ID, []store.PushResult{{EndpointID: e[5], Outcome: store.OutcomeSent}}))
	_, err = s.ShardDone(ctx, n.ID, 0, at(4*time.Hour))
	noErr(t, "ShardDone(after a late batch)", err)
	wantEvents(t, "events after repeats", webhookEvents(t, s, mark), []store.WebhookEvent{first})
}

// Of concurrent reports of every shard, the one that finishes the send adds
// the only event, with the counters of every batch recorded before.
func testNotificationSentConcurrent(t *testing.T, s store.Store) {
	w := listenedWebsite(t, s)
	n := sending(t, s, w.Website.ID)
	e := endpoints(t, s, w.Website.ID, 4)
	mark := lastSeq(t, s)
	noErr(t, "RecordResults", recordResults(s, context.Background(), n.ID, []store.PushResult{
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
	wantSentEvent(t, s, "events after concurrent reports", mark, w.Website.ID, sentData(n.ID, 4, 1, 2, 1), at(2*time.Hour))
}

// Sends that fail, are canceled or never start add no event; one whose
// shards all finished before it was marked sending adds its event on the
// next report.
func testNotificationSentOnlyWhenSent(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := listenedWebsite(t, s)

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
	wantSentEvent(t, s, "events after the late finish", 0, w.Website.ID, sentData(queued.ID, 0, 0, 0, 0), at(4*time.Hour))
}

func testWebhookEventsPaging(t *testing.T, s store.Store) {
	ctx := context.Background()
	w, other := listenedWebsite(t, s), listenedWebsite(t, s)
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
	w := listenedWebsite(t, s)
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
	w := listenedWebsite(t, s)
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

// createdData is the exact data of a subscriber.created event; an empty
// external id is null.
func createdData(res store.SubscriptionResult, externalID, device, country string) json.RawMessage {
	ext := "null"
	if externalID != "" {
		ext = fmt.Sprintf("%q", externalID)
	}
	return json.RawMessage(fmt.Sprintf(`{"subscriberId":%q,"endpointId":%q,"externalId":%s,"device":%q,"country":%q}`,
		res.SubscriberID, res.EndpointID, ext, device, country))
}

// A new browser adds subscriber.created with its subscriber as stored; a
// known one registering again (even moving to another person) adds nothing.
func testSubscriberCreated(t *testing.T, s store.Store) {
	w, other := listenedWebsite(t, s), listenedWebsite(t, s)
	created := func(websiteID string, res store.SubscriptionResult, externalID, device, country string, when time.Time) store.WebhookEvent {
		return store.WebhookEvent{WebsiteID: websiteID, Event: store.EventSubscriberCreated,
			Data: createdData(res, externalID, device, country), CreatedAt: when}
	}
	in := func(websiteID, externalID, device, country string, when time.Time) store.SubscriptionInput {
		x := subscription(websiteID)
		x.ExternalID, x.Device, x.Country, x.At = externalID, device, country, when
		return x
	}

	anon := in(w.Website.ID, "", "desktop", "FR", at(time.Second))
	laptop := in(w.Website.ID, "user-1", "desktop", "DE", at(2*time.Second))
	// The same person on a phone whose country is unknown: it joins the
	// subscriber, whose stored country the event shows.
	phone := in(w.Website.ID, "user-1", "android", "", at(3*time.Second))
	foreign := in(other.Website.ID, "", "ios", "", at(4*time.Second))
	var res []store.SubscriptionResult
	for _, x := range []store.SubscriptionInput{anon, laptop, phone, foreign} {
		res = append(res, subscribe(t, s, x))
	}
	if res[2].SubscriberID != res[1].SubscriberID {
		t.Fatal("the person's second browser got a subscriber of its own")
	}
	wantNewEvents(t, s, "events of new browsers", 0, []store.WebhookEvent{
		created(w.Website.ID, res[0], "", "desktop", "FR", at(time.Second)),
		created(w.Website.ID, res[1], "user-1", "desktop", "DE", at(2*time.Second)),
		created(w.Website.ID, res[2], "user-1", "android", "DE", at(3*time.Second)),
		created(other.Website.ID, res[3], "", "ios", "", at(4*time.Second)),
	})

	mark := lastSeq(t, s)
	again := func(what string, x store.SubscriptionInput) {
		t.Helper()
		x.P256dh, x.Auth, x.At = "BP256-renewed-"+uuid.NewString(), "auth-renewed", at(time.Hour)
		if r := subscribe(t, s, x); r.Created {
			t.Fatalf("%s: Created = true", what)
		}
	}
	again("same browser, new keys and country", func() store.SubscriptionInput { x := anon; x.Country = "US"; return x }())
	again("anonymous browser logging in", func() store.SubscriptionInput { x := anon; x.ExternalID = "user-2"; return x }())
	again("another person on the phone", func() store.SubscriptionInput { x := phone; x.ExternalID = "user-3"; return x }())
	again("the other website's browser", foreign)
	wantEvents(t, "events after known browsers registered again", webhookEvents(t, s, mark), nil)
}

// unsubscribedData is the exact data of a subscriber.unsubscribed event.
func unsubscribedData(subscriberID, endpoint string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"subscriberId":%q,"endpoint":%q}`, subscriberID, endpoint))
}

// A visitor turning notifications off (DeleteSubscription) adds
// subscriber.unsubscribed per browser; an endpoint pruned after the push
// service dropped it, or erased with its person, adds nothing.
func testSubscriberUnsubscribed(t *testing.T, s store.Store) {
	ctx := context.Background()
	w, other := listenedWebsite(t, s), listenedWebsite(t, s)
	person := func(externalID string) store.SubscriptionInput {
		x := subscription(w.Website.ID)
		x.ExternalID = externalID
		return x
	}
	laptop, phone, expired, erased := person("user-1"), person("user-1"), person(""), person("user-2")
	foreign := subscription(other.Website.ID)
	laptopRes, phoneRes := subscribe(t, s, laptop), subscribe(t, s, phone)
	expiredRes, erasedRes := subscribe(t, s, expired), subscribe(t, s, erased)
	subscribe(t, s, foreign)
	mark := lastSeq(t, s)

	// The person turns notifications off on one browser, then the other.
	for _, x := range []store.SubscriptionInput{laptop, phone} {
		_, err := s.DeleteSubscription(ctx, w.Website.ID, x.Endpoint)
		noErr(t, "DeleteSubscription", err)
	}
	_, err := s.DeleteSubscription(ctx, w.Website.ID, laptop.Endpoint)
	wantErr(t, "DeleteSubscription(again)", err, store.ErrNotFound)
	_, err = s.DeleteSubscription(ctx, w.Website.ID, foreign.Endpoint)
	wantErr(t, "DeleteSubscription(another website's)", err, store.ErrNotFound)

	n := sending(t, s, w.Website.ID)
	noErr(t, "RecordResults", recordResults(s, ctx, n.ID, []store.PushResult{{EndpointID: expiredRes.EndpointID, Outcome: store.OutcomePruned}}))
	_, err = s.Endpoint(ctx, w.Website.ID, expiredRes.EndpointID)
	wantErr(t, "Endpoint(pruned)", err, store.ErrNotFound)
	gone, err := s.ErasePeople(ctx, w.Website.ID, []string{erasedRes.SubscriberID})
	noErr(t, "ErasePeople", err)
	if len(gone) != 1 {
		t.Fatalf("ErasePeople erased %d people, want 1", len(gone))
	}

	wantNewEvents(t, s, "events of unsubscribes", mark, []store.WebhookEvent{
		{WebsiteID: w.Website.ID, Event: store.EventSubscriberUnsubscribed, Data: unsubscribedData(laptopRes.SubscriberID, laptop.Endpoint)},
		{WebsiteID: w.Website.ID, Event: store.EventSubscriberUnsubscribed, Data: unsubscribedData(phoneRes.SubscriberID, phone.Endpoint)},
	})
}

// clickedData is the exact data of a notification.clicked event; an empty
// variant is null.
func clickedData(notificationID, variant string) json.RawMessage {
	v := "null"
	if variant != "" {
		v = fmt.Sprintf("%q", variant)
	}
	return json.RawMessage(fmt.Sprintf(`{"notificationId":%q,"variant":%s}`, notificationID, v))
}

func clickedEvent(notificationID, variant string) *store.WebhookEvent {
	return &store.WebhookEvent{Event: store.EventNotificationClicked, Data: clickedData(notificationID, variant)}
}

// RecordInteraction adds the event it is given with a new interaction, and
// only then.
func testNotificationClicked(t *testing.T, s store.Store) {
	ctx := context.Background()
	w, other := listenedWebsite(t, s), listenedWebsite(t, s)
	n := sending(t, s, w.Website.ID)
	foreign := sending(t, s, other.Website.ID)
	e := endpoints(t, s, w.Website.ID, 3)
	mark := lastSeq(t, s)

	f := func(what, notificationID, endpointID, kind string, event *store.WebhookEvent, want bool) {
		t.Helper()
		got, err := s.RecordInteraction(ctx, w.Website.ID, notificationID, endpointID, kind, at(time.Hour), event)
		noErr(t, what, err)
		if got != want {
			t.Fatalf("%s: RecordInteraction = %v, want %v", what, got, want)
		}
	}
	f("first click", n.ID, e[0], store.InteractionClicked, clickedEvent(n.ID, "b"), true)
	f("repeated click", n.ID, e[0], store.InteractionClicked, clickedEvent(n.ID, "b"), false)
	f("delivered", n.ID, e[0], store.InteractionDelivered, nil, true)
	// An event's own id and time are kept; its website is the ping's.
	given := clickedEvent(n.ID, "")
	given.ID, given.WebsiteID, given.CreatedAt = uuid.NewString(), other.Website.ID, at(2*time.Hour)
	f("click with an id and a time", n.ID, e[1], store.InteractionClicked, given, true)

	_, err := s.RecordInteraction(ctx, w.Website.ID, foreign.ID, e[2], store.InteractionClicked, at(time.Hour), clickedEvent(foreign.ID, ""))
	wantErr(t, "RecordInteraction(another website's send)", err, store.ErrNotFound)
	_, err = s.RecordInteraction(ctx, w.Website.ID, uuid.NewString(), e[2], store.InteractionClicked, at(time.Hour), clickedEvent(n.ID, ""))
	wantErr(t, "RecordInteraction(unknown send)", err, store.ErrNotFound)
	bad := clickedEvent(n.ID, "")
	bad.Data = json.RawMessage(`{"notificationId":`)
	if _, err := s.RecordInteraction(ctx, w.Website.ID, n.ID, e[2], store.InteractionClicked, at(time.Hour), bad); err == nil {
		t.Fatal("RecordInteraction(event data not JSON) succeeded")
	}
	f("click after a refused event", n.ID, e[2], store.InteractionClicked, nil, true)

	wantNewEvents(t, s, "events of clicks", mark, []store.WebhookEvent{
		{WebsiteID: w.Website.ID, Event: store.EventNotificationClicked, Data: clickedData(n.ID, "b"), CreatedAt: at(time.Hour)},
		{ID: given.ID, WebsiteID: w.Website.ID, Event: store.EventNotificationClicked, Data: clickedData(n.ID, ""), CreatedAt: at(2 * time.Hour)},
	})
	if c := counters(t, s, n.ID); c.Clicked != 3 || c.Delivered != 1 {
		t.Fatalf("counters after the clicks: clicked %d, delivered %d; want 3, 1", c.Clicked, c.Delivered)
	}
}

// Of concurrent clicks of one browser, one records the click and its event.
func testNotificationClickedConcurrent(t *testing.T, s store.Store) {
	w := listenedWebsite(t, s)
	n := sending(t, s, w.Website.ID)
	e := endpoints(t, s, w.Website.ID, 2)
	mark := lastSeq(t, s)
	var wg sync.WaitGroup
	errs, news := make([]error, 16), make([]bool, 16)
	for i := range errs {
		wg.Go(func() {
			news[i], errs[i] = s.RecordInteraction(context.Background(), w.Website.ID, n.ID, e[i%2],
				store.InteractionClicked, at(time.Hour), clickedEvent(n.ID, "a"))
		})
	}
	wg.Wait()
	for _, err := range errs {
		noErr(t, "concurrent RecordInteraction", err)
	}
	if got := len(slices.DeleteFunc(news, func(b bool) bool { return !b })); got != 2 {
		t.Fatalf("%d concurrent clicks were new, want 2", got)
	}
	click := store.WebhookEvent{WebsiteID: w.Website.ID, Event: store.EventNotificationClicked, Data: clickedData(n.ID, "a"), CreatedAt: at(time.Hour)}
	wantNewEvents(t, s, "events of concurrent clicks", mark, []store.WebhookEvent{click, click})
	if c := counters(t, s, n.ID); c.Clicked != 2 {
		t.Fatalf("clicked %d, want 2", c.Clicked)
	}
}

// UpsertSubscriptions registers browsers in one transaction as
// UpsertSubscription would one after the other: a person's second browser
// in the same batch joins the first's subscriber, a browser registered
// twice is created once, and the subscriber.created events of a listened
// website come in the order of their registrations. A batch holding a
// registration that fails stores nothing.
func testUpsertSubscriptionsBatch(t *testing.T, s store.Store) {
	ctx := context.Background()
	w, quiet := listenedWebsite(t, s), newWebsite(t, s)
	in := func(websiteID, externalID, device, country string, when time.Time) store.SubscriptionInput {
		x := subscription(websiteID)
		x.ExternalID, x.Device, x.Country, x.At = externalID, device, country, when
		return x
	}
	anon := in(w.Website.ID, "", "desktop", "FR", at(time.Second))
	laptop := in(w.Website.ID, "user-1", "desktop", "DE", at(2*time.Second))
	phone := in(w.Website.ID, "user-1", "android", "", at(3*time.Second))
	// Registrations go in the order of their URLs: these are the order
	// given.
	anon.Endpoint, laptop.Endpoint, phone.Endpoint = "https://push.example/a-"+uuid.NewString(),
		"https://push.example/b-"+uuid.NewString(), "https://push.example/c-"+uuid.NewString()
	anonAgain := anon
	anonAgain.At = at(4 * time.Second)
	other := in(quiet.Website.ID, "user-1", "ios", "", at(5*time.Second))
	mark := lastSeq(t, s)
	res, err := s.UpsertSubscriptions(ctx, []store.SubscriptionInput{anon, laptop, phone, anonAgain, other})
	noErr(t, "UpsertSubscriptions", err)
	if len(res) != 5 {
		t.Fatalf("%d answers for 5 registrations", len(res))
	}
	for i, created := range []bool{true, true, true, false, true} {
		if res[i].Created != created || res[i].SubscriberID == "" || res[i].EndpointID == "" {
			t.Fatalf("answer %d = %+v, want Created %v", i, res[i], created)
		}
	}
	if res[2].SubscriberID != res[1].SubscriberID || res[3].SubscriberID != res[0].SubscriberID || res[3].EndpointID != res[0].EndpointID ||
		res[4].SubscriberID == res[1].SubscriberID {
		t.Fatalf("answers %+v: want the phone with the laptop's person, the repeat with the first's ids, the other website's person its own", res)
	}
	all := everyone(t, s, w.Website.ID)
	if len(all) != 3 {
		t.Fatalf("the website has %d endpoints, want 3", len(all))
	}
	want := wantRecipient(anonAgain, res[3])
	want.Endpoint.CreatedAt, want.Subscriber.CreatedAt = anon.At, anon.At
	same(t, "the browser registered twice", all[res[0].EndpointID], want)
	created := func(r store.SubscriptionResult, externalID, device, country string, when time.Time) store.WebhookEvent {
		return store.WebhookEvent{WebsiteID: w.Website.ID, Event: store.EventSubscriberCreated,
			Data: createdData(r, externalID, device, country), CreatedAt: when}
	}
	wantNewEvents(t, s, "events of the batch", mark, []store.WebhookEvent{
		created(res[0], "", "desktop", "FR", at(time.Second)),
		created(res[1], "user-1", "desktop", "DE", at(2*time.Second)),
		created(res[2], "user-1", "android", "DE", at(3*time.Second)),
	})

	// Given in another order, they go in the order of their URLs: the
	// person's browser of the first URL creates the person.
	mark = lastSeq(t, s)
	first := in(w.Website.ID, "user-9", "desktop", "", at(time.Minute))
	second := in(w.Website.ID, "user-9", "ios", "", at(time.Minute))
	first.Endpoint, second.Endpoint = "https://push.example/b-"+uuid.NewString(), "https://push.example/a-"+uuid.NewString()
	res, err = s.UpsertSubscriptions(ctx, []store.SubscriptionInput{first, second})
	noErr(t, "UpsertSubscriptions", err)
	if res[0].SubscriberID != res[1].SubscriberID || !res[0].Created || !res[1].Created {
		t.Fatalf("answers %+v: want two new browsers of one person", res)
	}
	if es := webhookEvents(t, s, mark); len(es) != 2 || string(es[0].Data) != string(createdData(res[1], "user-9", "ios", "")) {
		t.Fatalf("events %+v: want the ios browser's (the first URL) first", es)
	}

	// A registration of an unknown website fails the batch: the new
	// browser beside it is not stored.
	mark = lastSeq(t, s)
	fresh := in(w.Website.ID, "", "desktop", "FR", at(time.Minute))
	if _, err := s.UpsertSubscriptions(ctx, []store.SubscriptionInput{fresh, subscription(uuid.NewString())}); err == nil {
		t.Fatal("a batch with an unknown website's registration: no error")
	}
	if n := len(everyone(t, s, w.Website.ID)); n != 5 {
		t.Fatalf("after a failed batch the website has %d endpoints, want 5", n)
	}
	wantEvents(t, "events after a failed batch", webhookEvents(t, s, mark), nil)
}
