package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/store"
)

var deliveryCases = []testCase{
	{"Undelivered", testUndelivered},
	{"UndeliveredAcrossShards", testUndeliveredAcrossShards},
	{"RecordResultsCounters", testRecordResultsCounters},
	{"RecordResultsConcurrentReplays", testRecordResultsConcurrent},
	{"RecordResultsPrunes", testRecordResultsPrunes},
	{"RecordResultsErrors", testRecordResultsErrors},
	{"PushLedgerRuns", testPushLedgerRuns},
	{"PushLedgerManyRuns", testPushLedgerManyRuns},
	{"RecordAllResults", testRecordAllResults},
	{"ShardDone", testShardDone},
	{"ShardDoneConcurrent", testShardDoneConcurrent},
	{"ShardsDone", testShardsDone},
	{"ShardDoneBeforeSending", testShardDoneBeforeSending},
	{"RecordInteraction", testRecordInteraction},
	{"RecordInteractions", testRecordInteractions},
	{"RecordInteractionsConcurrent", testRecordInteractionsConcurrent},
	{"Endpoints", testEndpoints},
}

// endpoints registers n browsers on the website and returns their ids.
func endpoints(t *testing.T, s store.Store, websiteID string, n int) []string {
	t.Helper()
	out := make([]string, n)
	for i := range out {
		out[i] = subscribe(t, s, subscription(websiteID)).EndpointID
	}
	return out
}

func counters(t *testing.T, s store.Store, id string) store.Counters {
	t.Helper()
	return getNotification(t, s, id).Counters
}

func testUndelivered(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	n := create(t, s, notification(w.Website.ID))
	other := create(t, s, notification(w.Website.ID))
	e := endpoints(t, s, w.Website.ID, 5)
	input := []string{e[3], e[0], e[4], e[1], e[2]}

	f := func(id string, in, want []string) {
		t.Helper()
		got, err := s.Undelivered(ctx, id, keyed(in))
		noErr(t, "Undelivered", err)
		same(t, "Undelivered", got, want)
	}
	f(n.ID, input, input)
	f(n.ID, nil, nil)
	noErr(t, "RecordResults", recordResults(s, ctx, n.ID, []store.PushResult{
		{EndpointID: e[0], Outcome: store.OutcomeSent},
		{EndpointID: e[4], Outcome: store.OutcomeFailed},
	}))
	f(n.ID, input, []string{e[3], e[1], e[2]})
	f(other.ID, input, input)
	// Ids the store never saw (an endpoint pruned since) are undelivered too.
	unknown := uuid.NewString()
	f(n.ID, []string{unknown, e[0]}, []string{unknown})
	noErr(t, "RecordResults", recordResults(s, ctx, n.ID, []store.PushResult{
		{EndpointID: e[1], Outcome: store.OutcomeSent},
		{EndpointID: e[2], Outcome: store.OutcomeSent},
		{EndpointID: e[3], Outcome: store.OutcomePruned},
	}))
	f(n.ID, input, nil)
}

// testUndeliveredAcrossShards: a write and a check of endpoints of every
// shard (one read of the ledger for them all) see each shard's results
// alone: an endpoint recorded in one shard is still undelivered when
// asked for in another, and a replay of the whole write counts nothing.
func testUndeliveredAcrossShards(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	n := create(t, s, notification(w.Website.ID))
	e := endpoints(t, s, w.Website.ID, 2*store.Shards+6)
	slices.Sort(e)
	keys := make([]store.ShardEndpoint, len(e))
	var results []store.PushResult
	for i, id := range e {
		keys[i] = store.ShardEndpoint{ID: id, Shard: i % store.Shards}
		if i%3 != 0 {
			results = append(results, store.PushResult{EndpointID: id, Outcome: store.OutcomeSent, Shard: i % store.Shards})
		}
	}
	noErr(t, "RecordResults", s.RecordResults(ctx, n.ID, results))
	same(t, "counters", counters(t, s, n.ID).Sent, int64(len(results)))
	var want []string
	for i, id := range e {
		if i%3 == 0 {
			want = append(want, id)
		}
	}
	got, err := s.Undelivered(ctx, n.ID, keys)
	noErr(t, "Undelivered", err)
	same(t, "Undelivered", got, want)
	// The recorded endpoints, each asked for in the shard after its own.
	moved := make([]store.ShardEndpoint, 0, len(results))
	for _, r := range results {
		moved = append(moved, store.ShardEndpoint{ID: r.EndpointID, Shard: (r.Shard + 1) % store.Shards})
	}
	got, err = s.Undelivered(ctx, n.ID, moved)
	noErr(t, "Undelivered (other shards)", err)
	same(t, "Undelivered (other shards)", len(got), len(moved))
	noErr(t, "RecordResults (replay)", s.RecordResults(ctx, n.ID, results))
	same(t, "counters after the replay", counters(t, s, n.ID).Sent, int64(len(results)))
}

func testRecordResultsCounters(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	n := create(t, s, notification(w.Website.ID))
	other := create(t, s, notification(w.Website.ID))
	e := endpoints(t, s, w.Website.ID, 8)

	first := []store.PushResult{
		{EndpointID: e[0], Outcome: store.OutcomeSent},
		{EndpointID: e[1], Outcome: store.OutcomeSent},
		{EndpointID: e[2], Outcome: store.OutcomeSent},
		{EndpointID: e[3], Outcome: store.OutcomeFailed},
		{EndpointID: e[4], Outcome: store.OutcomeFailed},
		{EndpointID: e[5], Outcome: store.OutcomePruned},
	}
	noErr(t, "RecordResults", recordResults(s, ctx, n.ID, first))
	want := store.Counters{Recipients: 6, Processed: 6, Sent: 3, Failed: 2, Pruned: 1}
	same(t, "counters after first batch", counters(t, s, n.ID), want)

	// A replayed batch (a pusher that died before acknowledging) counts nothing.
	noErr(t, "RecordResults(replay)", recordResults(s, ctx, n.ID, first))
	same(t, "counters after replay", counters(t, s, n.ID), want)

	// An overlapping batch counts only the new endpoints, whatever outcome
	// the replay claims for the old ones; a duplicate within a batch counts once.
	noErr(t, "RecordResults(overlap)", recordResults(s, ctx, n.ID, []store.PushResult{
		{EndpointID: e[0], Outcome: store.OutcomeFailed},
		{EndpointID: e[3], Outcome: store.OutcomeSent},
		{EndpointID: e[6], Outcome: store.OutcomeSent},
		{EndpointID: e[7], Outcome: store.OutcomeFailed},
		{EndpointID: e[7], Outcome: store.OutcomeFailed},
	}))
	want = store.Counters{Recipients: 8, Processed: 8, Sent: 4, Failed: 3, Pruned: 1}
	same(t, "counters after overlapping batch", counters(t, s, n.ID), want)
	noErr(t, "RecordResults(empty)", recordResults(s, ctx, n.ID, nil))
	same(t, "counters after empty batch", counters(t, s, n.ID), want)

	// Results are per notification.
	same(t, "other counters", counters(t, s, other.ID), store.Counters{})
	noErr(t, "RecordResults(other)", recordResults(s, ctx, other.ID, first[:2]))
	same(t, "other counters", counters(t, s, other.ID), store.Counters{Recipients: 2, Processed: 2, Sent: 2})
	same(t, "counters unchanged by other", counters(t, s, n.ID), want)

	// An endpoint twice in one batch with different outcomes: the first
	// result counts, and only an endpoint whose counted result is pruned
	// is deleted. The pairs are uneven, so last-wins would count
	// differently.
	third := create(t, s, notification(w.Website.ID))
	f := endpoints(t, s, w.Website.ID, 3)
	noErr(t, "RecordResults(conflicting)", recordResults(s, ctx, third.ID, []store.PushResult{
		{EndpointID: f[0], Outcome: store.OutcomeFailed},
		{EndpointID: f[0], Outcome: store.OutcomeSent},
		{EndpointID: f[1], Outcome: store.OutcomeSent},
		{EndpointID: f[1], Outcome: store.OutcomePruned},
		{EndpointID: f[2], Outcome: store.OutcomeSent},
		{EndpointID: f[2], Outcome: store.OutcomeFailed},
	}))
	same(t, "first result of an endpoint counts", counters(t, s, third.ID),
		store.Counters{Recipients: 3, Processed: 3, Sent: 2, Failed: 1})
	if _, err := s.Endpoint(ctx, w.Website.ID, f[1]); err != nil {
		t.Fatalf("endpoint counted as sent was deleted by a later pruned result: %v", err)
	}
}

// A send's sent pushes are kept as runs of a shard's endpoint ids, one a
// write: a check of a batch finds exactly the ids the runs hold, not the
// ids their ranges span, and only under the shard they were recorded in;
// writes cut differently from the first ones (a shard redone after a
// fan-out node died) count each browser once.
func testPushLedgerRuns(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	n := create(t, s, notification(w.Website.ID))
	// One shard's browsers in its audience's order, of one bucket (the
	// ids' first character): runs written at once interleave.
	e := make([]string, 40)
	for i := range e {
		e[i] = fmt.Sprintf("c%03d-%s", i, uuid.NewString())
	}
	shard := 7
	in := func(ids ...string) []store.ShardEndpoint {
		out := make([]store.ShardEndpoint, len(ids))
		for i, id := range ids {
			out[i] = store.ShardEndpoint{ID: id, Shard: shard}
		}
		return out
	}
	write := func(ids ...string) {
		t.Helper()
		rs := make([]store.PushResult, len(ids))
		for i, id := range ids {
			rs[i] = store.PushResult{EndpointID: id, Outcome: store.OutcomeSent, Shard: shard}
		}
		noErr(t, "RecordResults", s.RecordResults(ctx, n.ID, rs))
	}
	undelivered := func(name string, keys []store.ShardEndpoint, want []string) {
		t.Helper()
		got, err := s.Undelivered(ctx, n.ID, keys)
		noErr(t, "Undelivered", err)
		same(t, name, got, want)
	}
	// Two runs whose ranges interleave (two batches of the shard recorded
	// together), with gaps inside them.
	write(e[0], e[2], e[4], e[20], e[22])
	write(e[1], e[3], e[21], e[23])
	undelivered("inside the runs' ranges", in(e[0:6]...), []string{e[5]})
	undelivered("between and after the runs", in(e[4], e[10], e[19], e[23], e[24], e[39]), []string{e[10], e[19], e[24], e[39]})
	undelivered("another shard", []store.ShardEndpoint{{ID: e[0], Shard: (shard + 1) % store.Shards}}, []string{e[0]})
	// Checked together, each shard's runs count for its own browsers only:
	// e[2] is in the run shard 7's read of e[0] finds.
	undelivered("two shards in one check", []store.ShardEndpoint{{ID: e[0], Shard: shard}, {ID: e[2], Shard: (shard + 1) % store.Shards}}, []string{e[2]})
	// A redo cut anew: ids recorded and new ones in one write.
	write(e[3], e[4], e[5], e[6], e[22], e[23], e[24])
	same(t, "counters", counters(t, s, n.ID), store.Counters{Recipients: 12, Processed: 12, Sent: 12})
	undelivered("after the redo", in(e[0:8]...), []string{e[7]})
	// A failed result of a browser sent already is not counted, and a sent
	// one of a browser failed already neither.
	noErr(t, "RecordResults", s.RecordResults(ctx, n.ID, []store.PushResult{
		{EndpointID: e[0], Outcome: store.OutcomeFailed, Shard: shard},
		{EndpointID: e[30], Outcome: store.OutcomeFailed, Shard: shard},
	}))
	write(e[30], e[31])
	same(t, "counters", counters(t, s, n.ID), store.Counters{Recipients: 14, Processed: 14, Sent: 13, Failed: 1})
	undelivered("after failures", in(e[0], e[29], e[30], e[31], e[32]), []string{e[29], e[32]})
}

// One write of results spread over every shard and bucket, as a large
// broadcast's recorder writes them, stores its thousands of runs (in
// several statements) and counts each browser once; written again, with
// new browsers among them, only the new ones count.
func testPushLedgerManyRuns(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	n := create(t, s, notification(w.Website.ID))
	var rs []store.PushResult
	var keys []store.ShardEndpoint
	for shard := range store.Shards {
		for bucket := range 16 {
			for i, outcome := range []string{store.OutcomeSent, store.OutcomeSent, store.OutcomeFailed} {
				id := fmt.Sprintf("%x%02d%d-%s", bucket, shard, i, uuid.NewString())
				rs = append(rs, store.PushResult{EndpointID: id, Outcome: outcome, Service: "fcm", Shard: shard})
				keys = append(keys, store.ShardEndpoint{ID: id, Shard: shard})
			}
		}
	}
	noErr(t, "RecordResults", s.RecordResults(ctx, n.ID, rs))
	all := int64(len(rs))
	want := store.Counters{Recipients: all, Processed: all, Sent: all * 2 / 3, Failed: all / 3}
	same(t, "counters", counters(t, s, n.ID), want)
	left, err := s.Undelivered(ctx, n.ID, keys)
	noErr(t, "Undelivered", err)
	same(t, "undelivered", len(left), 0)
	trouble, err := s.DeliveryTrouble(ctx, w.Website.ID, []string{n.ID})
	noErr(t, "DeliveryTrouble", err)
	same(t, "delivery trouble", trouble, []store.ServiceTrouble{{Service: "fcm", Failed: all / 3}})

	// Again, with one new browser a shard.
	var fresh []store.ShardEndpoint
	for shard := range store.Shards {
		id := fmt.Sprintf("0%02d9-%s", shard, uuid.NewString())
		rs = append(rs, store.PushResult{EndpointID: id, Outcome: store.OutcomeSent, Shard: shard})
		fresh = append(fresh, store.ShardEndpoint{ID: id, Shard: shard})
	}
	noErr(t, "RecordResults", s.RecordResults(ctx, n.ID, rs))
	more := int64(store.Shards)
	want.Recipients, want.Processed, want.Sent = all+more, all+more, want.Sent+more
	same(t, "counters after the write again", counters(t, s, n.ID), want)
	left, err = s.Undelivered(ctx, n.ID, append(keys, fresh...))
	noErr(t, "Undelivered", err)
	same(t, "undelivered after the write again", len(left), 0)
}

func testRecordResultsConcurrent(t *testing.T, s store.Store) {
	w := newWebsite(t, s)
	n := create(t, s, notification(w.Website.ID))
	e := endpoints(t, s, w.Website.ID, 40)
	var batch []store.PushResult
	for i, id := range e {
		outcome := store.OutcomeSent
		if i%4 == 0 {
			outcome = store.OutcomeFailed
		}
		// Five shards: each write locks those its results are in
		// (several at once), and the overlapping ones wait for each other.
		batch = append(batch, store.PushResult{EndpointID: id, Outcome: outcome, Shard: i % 5})
	}
	var wg sync.WaitGroup
	errs := make([]error, 12)
	for i := range errs {
		wg.Go(func() {
			// Overlapping halves and the whole batch, from several "pushers".
			b := batch
			switch i % 3 {
			case 1:
				b = batch[:25]
			case 2:
				b = batch[15:]
			}
			errs[i] = recordResults(s, context.Background(), n.ID, b)
		})
	}
	wg.Wait()
	for _, err := range errs {
		noErr(t, "concurrent RecordResults", err)
	}
	same(t, "counters after concurrent replays", counters(t, s, n.ID), store.Counters{Recipients: 40, Processed: 40, Sent: 30, Failed: 10})
}

func testRecordResultsPrunes(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	n := create(t, s, notification(w.Website.ID))

	// A person with two browsers, one of which is gone.
	laptop := subscription(w.Website.ID)
	laptop.ExternalID = "user-1"
	phone := subscription(w.Website.ID)
	phone.ExternalID = "user-1"
	l, p := subscribe(t, s, laptop), subscribe(t, s, phone)
	// A person with one browser, gone.
	alone := subscribe(t, s, subscription(w.Website.ID))
	kept := subscribe(t, s, subscription(w.Website.ID))

	noErr(t, "RecordResults", recordResults(s, ctx, n.ID, []store.PushResult{
		{EndpointID: l.EndpointID, Outcome: store.OutcomePruned},
		{EndpointID: alone.EndpointID, Outcome: store.OutcomePruned},
		{EndpointID: kept.EndpointID, Outcome: store.OutcomeSent},
		{EndpointID: p.EndpointID, Outcome: store.OutcomeFailed},
	}))
	for _, id := range []string{l.EndpointID, alone.EndpointID} {
		_, err := s.Endpoint(ctx, w.Website.ID, id)
		wantErr(t, "Endpoint(pruned)", err, store.ErrNotFound)
	}
	all := everyone(t, s, w.Website.ID)
	if len(all) != 2 {
		t.Fatalf("audience has %d endpoints after pruning, want 2", len(all))
	}
	if r, ok := all[p.EndpointID]; !ok || r.Subscriber.ID != l.SubscriberID || r.Subscriber.UnsubscribedAt != nil {
		t.Fatalf("phone of user-1 = %+v (present %v), want subscribed under %s", r, ok, l.SubscriberID)
	}
	if _, ok := all[kept.EndpointID]; !ok {
		t.Fatal("sent endpoint is gone from the audience")
	}
	same(t, "counters", counters(t, s, n.ID), store.Counters{Recipients: 4, Processed: 4, Sent: 1, Failed: 1, Pruned: 2})

	// Another send reporting the same endpoint pruned counts it, and the
	// endpoint stays gone.
	n2 := create(t, s, notification(w.Website.ID))
	noErr(t, "RecordResults(second send)", recordResults(s, ctx, n2.ID, []store.PushResult{
		{EndpointID: l.EndpointID, Outcome: store.OutcomePruned},
	}))
	same(t, "second send counters", counters(t, s, n2.ID), store.Counters{Recipients: 1, Processed: 1, Pruned: 1})

	// The browser subscribing again comes back as a new endpoint.
	again := subscribe(t, s, laptop)
	if !again.Created || again.EndpointID == l.EndpointID || again.SubscriberID != l.SubscriberID {
		t.Fatalf("re-subscription after pruning = %+v", again)
	}
}

// testRecordAllResults: several sends' results in one call are each
// stored and counted as RecordResults does (a replay counts nothing, the
// pruned endpoint is deleted); an unknown send is returned and its
// results, a pruned endpoint included, left out; a refused outcome keeps
// nothing of any send.
func testRecordAllResults(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	a := create(t, s, notification(w.Website.ID))
	b := create(t, s, notification(w.Website.ID))
	e := endpoints(t, s, w.Website.ID, 5)
	ghost := uuid.NewString()
	in := map[string][]store.PushResult{
		a.ID:  {{EndpointID: e[0], Outcome: store.OutcomeSent}, {EndpointID: e[1], Outcome: store.OutcomePruned}},
		b.ID:  {{EndpointID: e[2], Outcome: store.OutcomeFailed}, {EndpointID: e[2], Outcome: store.OutcomeSent}},
		ghost: {{EndpointID: e[3], Outcome: store.OutcomePruned}},
	}
	unknown, err := recordAllResults(s, ctx, in)
	noErr(t, "RecordAllResults", err)
	same(t, "unknown sends", unknown, []string{ghost})
	same(t, "a's counters", counters(t, s, a.ID), store.Counters{Recipients: 2, Processed: 2, Sent: 1, Pruned: 1})
	same(t, "b's counters", counters(t, s, b.ID), store.Counters{Recipients: 1, Processed: 1, Failed: 1})
	_, err = s.Endpoint(ctx, w.Website.ID, e[1])
	wantErr(t, "Endpoint(pruned)", err, store.ErrNotFound)
	if _, err := s.Endpoint(ctx, w.Website.ID, e[3]); err != nil {
		t.Fatalf("an unknown send's pruned endpoint was deleted: %v", err)
	}
	// A replay counts nothing.
	unknown, err = recordAllResults(s, ctx, map[string][]store.PushResult{a.ID: in[a.ID], b.ID: in[b.ID]})
	noErr(t, "RecordAllResults(replay)", err)
	same(t, "unknown after replay", len(unknown), 0)
	same(t, "a's counters after replay", counters(t, s, a.ID), store.Counters{Recipients: 2, Processed: 2, Sent: 1, Pruned: 1})
	same(t, "b's counters after replay", counters(t, s, b.ID), store.Counters{Recipients: 1, Processed: 1, Failed: 1})
	// One refused outcome keeps nothing of either send.
	_, err = recordAllResults(s, ctx, map[string][]store.PushResult{
		a.ID: {{EndpointID: e[4], Outcome: store.OutcomeSent}},
		b.ID: {{EndpointID: e[4], Outcome: "exploded"}},
	})
	if err == nil {
		t.Fatal("RecordAllResults with an unknown outcome succeeded")
	}
	same(t, "a's counters after a refused call", counters(t, s, a.ID), store.Counters{Recipients: 2, Processed: 2, Sent: 1, Pruned: 1})
	got, err := s.Undelivered(ctx, a.ID, keyed([]string{e[4]}))
	noErr(t, "Undelivered", err)
	same(t, "undelivered after a refused call", got, []string{e[4]})
}

func testRecordResultsErrors(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	e := endpoints(t, s, w.Website.ID, 1)
	err := recordResults(s, ctx, uuid.NewString(), []store.PushResult{{EndpointID: e[0], Outcome: store.OutcomeSent}})
	wantErr(t, "RecordResults(unknown notification)", err, store.ErrNotFound)

	n := create(t, s, notification(w.Website.ID))
	err = recordResults(s, ctx, n.ID, []store.PushResult{
		{EndpointID: e[0], Outcome: store.OutcomeSent},
		{EndpointID: uuid.NewString(), Outcome: "exploded"},
	})
	if err == nil {
		t.Fatal("RecordResults with an unknown outcome succeeded")
	}
	// Nothing of a refused batch is kept.
	same(t, "counters after refused batch", counters(t, s, n.ID), store.Counters{})
	got, err := s.Undelivered(ctx, n.ID, keyed(e))
	noErr(t, "Undelivered", err)
	same(t, "undelivered after refused batch", got, e)
}

func sending(t *testing.T, s store.Store, websiteID string) store.Notification {
	t.Helper()
	n := create(t, s, notification(websiteID))
	n, err := s.StartSending(context.Background(), n.ID, at(time.Hour))
	noErr(t, "StartSending", err)
	return n
}

func testShardDone(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	n := sending(t, s, w.Website.ID)
	other := sending(t, s, w.Website.ID)

	f := func(id string, shard int, want bool) {
		t.Helper()
		got, err := s.ShardDone(ctx, id, shard, at(2*time.Hour))
		noErr(t, "ShardDone", err)
		if got != want {
			t.Fatalf("ShardDone(shard %d) = %v, want %v", shard, got, want)
		}
	}
	for shard := store.Shards - 1; shard > 0; shard-- {
		f(n.ID, shard, false)
	}
	f(n.ID, 5, false) // a repeated shard does not count twice
	f(other.ID, 0, false)
	if got := getNotification(t, s, n.ID); got.Status != store.StatusSending || got.FinishedAt != nil {
		t.Fatalf("with a shard to go: status %q, finished %v", got.Status, got.FinishedAt)
	}
	f(n.ID, 0, true)
	want := n
	want.Status, want.FinishedAt = store.StatusSent, ptr(at(2*time.Hour))
	same(t, "finished send", getNotification(t, s, n.ID), want)
	f(n.ID, 0, false)
	f(n.ID, 17, false)
	same(t, "finished send after repeats", getNotification(t, s, n.ID), want)
	if got := getNotification(t, s, other.ID).Status; got != store.StatusSending {
		t.Fatalf("other send is %q, want sending", got)
	}

	_, err := s.ShardDone(ctx, uuid.NewString(), 0, t0)
	wantErr(t, "ShardDone(unknown)", err, store.ErrNotFound)
	for _, shard := range []int{-1, store.Shards} {
		if _, err := s.ShardDone(ctx, other.ID, shard, t0); err == nil {
			t.Fatalf("ShardDone(shard %d) succeeded", shard)
		}
	}
}

// testShardsDone: several tasks in one call count once each, a task out
// of range fails the call and counts none of it, and the call that
// completes the send alone reports it; a send in waves takes more tasks
// in one call than a VALUES list of Shards rows holds.
func testShardsDone(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	n := sending(t, s, w.Website.ID)
	f := func(id string, tasks []int, want bool) {
		t.Helper()
		got, err := s.ShardsDone(ctx, id, tasks, at(2*time.Hour))
		noErr(t, "ShardsDone", err)
		if got != want {
			t.Fatalf("ShardsDone(%v) = %v, want %v", tasks, got, want)
		}
	}
	f(n.ID, []int{3, 1, 2, 1, 3}, false)
	f(n.ID, []int{2, 4}, false)
	if _, err := s.ShardsDone(ctx, n.ID, []int{5, store.Shards}, at(2*time.Hour)); err == nil {
		t.Fatalf("ShardsDone with task %d succeeded", store.Shards)
	}
	if got := getNotification(t, s, n.ID); got.Status != store.StatusSending {
		t.Fatalf("status %q, want sending", got.Status)
	}
	var rest []int
	for task := 5; task < store.Shards; task++ {
		rest = append(rest, task)
	}
	f(n.ID, rest[1:], false) // 0 and 5 to go: 5 of the refused call did not count
	f(n.ID, []int{5, 6}, false)
	f(n.ID, []int{0, 1}, true)
	f(n.ID, []int{0}, false)
	if got := getNotification(t, s, n.ID); got.Status != store.StatusSent {
		t.Fatalf("status %q, want sent", got.Status)
	}
	_, err := s.ShardsDone(ctx, uuid.NewString(), []int{0, 1}, t0)
	wantErr(t, "ShardsDone(unknown)", err, store.ErrNotFound)

	if _, err := s.ShardsDone(ctx, n.ID, []int{-1}, t0); err == nil {
		t.Fatal("ShardsDone with task -1 succeeded")
	}

	waves := inWaves(t, s, w.Website.ID, at(time.Hour), at(2*time.Hour), at(3*time.Hour))
	all := make([]int, 3*store.Shards)
	for i := range all {
		all[i] = i
	}
	f(waves.ID, all[1:], false)
	f(waves.ID, all[:2], true)
}

// testShardDoneConcurrent: calls racing on a send's tasks count each task
// once, and exactly one reports the send finished: each shard reported by
// three redelivered batches alone, and overlapping runs of 16 tasks.
func testShardDoneConcurrent(t *testing.T, s store.Store) {
	w := newWebsite(t, s)
	thrice, runs := [][]int{}, [][]int{}
	for shard := range store.Shards {
		thrice = append(thrice, []int{shard}, []int{shard}, []int{shard})
	}
	for start := 0; start < store.Shards; start += 8 {
		var run []int
		for task := start; task < min(start+16, store.Shards); task++ {
			run = append(run, task)
		}
		runs = append(runs, run)
	}
	for name, calls := range map[string][][]int{"each shard thrice": thrice, "overlapping runs": runs} {
		n := sending(t, s, w.Website.ID)
		var (
			wg       sync.WaitGroup
			finished atomic.Int32
			failures atomic.Int32
		)
		for _, tasks := range calls {
			wg.Go(func() {
				done, err := s.ShardsDone(context.Background(), n.ID, tasks, at(2*time.Hour))
				if err != nil {
					failures.Add(1)
				}
				if done {
					finished.Add(1)
				}
			})
		}
		wg.Wait()
		if failures.Load() != 0 || finished.Load() != 1 {
			t.Fatalf("%s: %d calls failed, %d reported finished; want none and exactly 1", name, failures.Load(), finished.Load())
		}
		if got := getNotification(t, s, n.ID).Status; got != store.StatusSent {
			t.Fatalf("%s: status %q, want sent", name, got)
		}
	}
}

// Shards reported before the send is marked sending (or of a send that
// failed meanwhile) don't finish it; once sending, the next report does.
func testShardDoneBeforeSending(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	n := create(t, s, notification(w.Website.ID))
	for shard := range store.Shards {
		done, err := s.ShardDone(ctx, n.ID, shard, at(time.Hour))
		noErr(t, "ShardDone", err)
		if done {
			t.Fatalf("queued send finished at shard %d", shard)
		}
	}
	if got := getNotification(t, s, n.ID).Status; got != store.StatusQueued {
		t.Fatalf("status %q, want queued", got)
	}
	_, err := s.StartSending(ctx, n.ID, at(time.Hour))
	noErr(t, "StartSending", err)
	done, err := s.ShardDone(ctx, n.ID, 3, at(2*time.Hour))
	noErr(t, "ShardDone", err)
	if !done {
		t.Fatal("ShardDone after StartSending with every shard done = false, want true")
	}

	failed := sending(t, s, w.Website.ID)
	noErr(t, "FailNotification", s.FailNotification(ctx, failed.ID, "dispatch_error", at(time.Hour)))
	for shard := range store.Shards {
		done, err := s.ShardDone(ctx, failed.ID, shard, at(time.Hour))
		noErr(t, "ShardDone", err)
		if done {
			t.Fatalf("failed send finished at shard %d", shard)
		}
	}
	if got := getNotification(t, s, failed.ID).Status; got != store.StatusFailed {
		t.Fatalf("status %q, want failed", got)
	}
}

func testRecordInteraction(t *testing.T, s store.Store) {
	ctx := context.Background()
	w, other := newWebsite(t, s), newWebsite(t, s)
	n := sending(t, s, w.Website.ID)
	e := endpoints(t, s, w.Website.ID, 2)

	f := func(websiteID, notificationID, endpointID, kind string, want bool) {
		t.Helper()
		got, err := s.RecordInteraction(ctx, websiteID, notificationID, endpointID, kind, at(3*time.Hour), nil)
		noErr(t, "RecordInteraction", err)
		if got != want {
			t.Fatalf("RecordInteraction(%s, %s) = %v, want %v", endpointID, kind, got, want)
		}
	}
	f(w.Website.ID, n.ID, e[0], store.InteractionDelivered, true)
	f(w.Website.ID, n.ID, e[0], store.InteractionDelivered, false)
	f(w.Website.ID, n.ID, e[0], store.InteractionClicked, true)
	f(w.Website.ID, n.ID, e[0], store.InteractionClicked, false)
	f(w.Website.ID, n.ID, e[1], store.InteractionDelivered, true)
	c := counters(t, s, n.ID)
	if c.Delivered != 2 || c.Clicked != 1 {
		t.Fatalf("delivered %d clicked %d, want 2 1", c.Delivered, c.Clicked)
	}

	// A ping naming another website's notification changes nothing.
	_, err := s.RecordInteraction(ctx, other.Website.ID, n.ID, e[1], store.InteractionClicked, at(3*time.Hour), nil)
	wantErr(t, "RecordInteraction(other website)", err, store.ErrNotFound)
	_, err = s.RecordInteraction(ctx, w.Website.ID, uuid.NewString(), e[1], store.InteractionClicked, at(3*time.Hour), nil)
	wantErr(t, "RecordInteraction(unknown notification)", err, store.ErrNotFound)
	if _, err := s.RecordInteraction(ctx, w.Website.ID, n.ID, e[1], "hovered", at(3*time.Hour), nil); err == nil {
		t.Fatal("RecordInteraction(unknown kind) succeeded")
	}
	same(t, "counters", counters(t, s, n.ID), c)
	// The refused click did not take the endpoint's slot.
	f(w.Website.ID, n.ID, e[1], store.InteractionClicked, true)

	// Concurrent duplicate pings count once.
	var wg sync.WaitGroup
	var news atomic.Int32
	for range 10 {
		wg.Go(func() {
			ok, err := s.RecordInteraction(context.Background(), w.Website.ID, n.ID, "late-endpoint", store.InteractionDelivered, at(4*time.Hour), nil)
			if err == nil && ok {
				news.Add(1)
			}
		})
	}
	wg.Wait()
	if news.Load() != 1 {
		t.Fatalf("%d concurrent duplicate pings reported new, want 1", news.Load())
	}
	c = counters(t, s, n.ID)
	if c.Delivered != 3 || c.Clicked != 2 {
		t.Fatalf("delivered %d clicked %d, want 3 2", c.Delivered, c.Clicked)
	}
}

// RecordInteractions answers each ping of a batch as RecordInteraction
// would, in one transaction: new ones counted on their send's row, the
// webhook events of new clicks of listened websites stored, the rest
// (counted before, a repeat within the batch, another website's send, an
// unknown one) neither.
func testRecordInteractions(t *testing.T, s store.Store) {
	ctx := context.Background()
	w, quiet, other := listenedWebsite(t, s), newWebsite(t, s), newWebsite(t, s)
	n1, n2 := sending(t, s, w.Website.ID), sending(t, s, w.Website.ID)
	nq, foreign := sending(t, s, quiet.Website.ID), sending(t, s, other.Website.ID)
	e := endpoints(t, s, w.Website.ID, 3)
	eq := endpoints(t, s, quiet.Website.ID, 1)
	before, err := s.RecordInteraction(ctx, w.Website.ID, n1.ID, e[2], store.InteractionDelivered, at(time.Hour), nil)
	noErr(t, "RecordInteraction", err)
	if !before {
		t.Fatal("first ping not new")
	}
	mark := lastSeq(t, s)
	ping := func(websiteID, notificationID, endpointID, kind string, event *store.WebhookEvent) store.Ping {
		return store.Ping{WebsiteID: websiteID, NotificationID: notificationID, EndpointID: endpointID, Kind: kind, At: at(2 * time.Hour), Event: event}
	}
	pings := []store.Ping{
		ping(w.Website.ID, n2.ID, e[0], store.InteractionDelivered, nil),                             // new
		ping(w.Website.ID, n1.ID, e[0], store.InteractionClicked, clickedEvent(n1.ID, "a")),          // new, with its event
		ping(w.Website.ID, n1.ID, e[0], store.InteractionDelivered, nil),                             // new
		ping(w.Website.ID, n1.ID, e[2], store.InteractionDelivered, nil),                             // counted before
		ping(w.Website.ID, n1.ID, e[0], store.InteractionClicked, clickedEvent(n1.ID, "b")),          // a repeat of the second
		ping(w.Website.ID, foreign.ID, e[1], store.InteractionClicked, clickedEvent(foreign.ID, "")), // another website's send
		ping(w.Website.ID, uuid.NewString(), e[1], store.InteractionDelivered, nil),                  // unknown send
		ping(quiet.Website.ID, nq.ID, eq[0], store.InteractionClicked, clickedEvent(nq.ID, "")),      // new; no webhook, no event
		ping(w.Website.ID, n1.ID, e[1], store.InteractionClicked, nil),                               // new, without an event
	}
	got, err := s.RecordInteractions(ctx, pings)
	noErr(t, "RecordInteractions", err)
	same(t, "new", got, []bool{true, true, true, false, false, false, false, true, true})
	for _, c := range []struct {
		id                 string
		delivered, clicked int64
	}{{n1.ID, 2, 2}, {n2.ID, 1, 0}, {nq.ID, 0, 1}, {foreign.ID, 0, 0}} {
		if got := counters(t, s, c.id); got.Delivered != c.delivered || got.Clicked != c.clicked {
			t.Fatalf("send %s: delivered %d clicked %d, want %d %d", c.id, got.Delivered, got.Clicked, c.delivered, c.clicked)
		}
	}
	wantNewEvents(t, s, "events of the batch", mark, []store.WebhookEvent{
		{WebsiteID: w.Website.ID, Event: store.EventNotificationClicked, Data: clickedData(n1.ID, "a"), CreatedAt: at(2 * time.Hour)},
	})
	// The same batch again: nothing new, nothing counted.
	got, err = s.RecordInteractions(ctx, pings)
	noErr(t, "RecordInteractions again", err)
	same(t, "new again", got, make([]bool, len(pings)))
	if c := counters(t, s, n1.ID); c.Delivered != 2 || c.Clicked != 2 {
		t.Fatalf("after the repeat: delivered %d clicked %d, want 2 2", c.Delivered, c.Clicked)
	}

	// Another website's ping first, then the send's own website's, with
	// the same send, browser and kind: the second is the new one.
	got, err = s.RecordInteractions(ctx, []store.Ping{
		ping(other.Website.ID, n2.ID, e[1], store.InteractionDelivered, nil),
		ping(w.Website.ID, n2.ID, e[1], store.InteractionDelivered, nil),
	})
	noErr(t, "RecordInteractions (two websites)", err)
	same(t, "new (two websites)", got, []bool{false, true})
	if c := counters(t, s, n2.ID); c.Delivered != 2 {
		t.Fatalf("after the two websites' pings: delivered %d, want 2", c.Delivered)
	}

	// A bad ping fails the batch, and stores none of it.
	bad := clickedEvent(n2.ID, "")
	bad.Data = json.RawMessage(`{"notificationId":`)
	for _, p := range []store.Ping{ping(w.Website.ID, n2.ID, e[1], "hovered", nil), ping(w.Website.ID, n2.ID, e[1], store.InteractionClicked, bad)} {
		if _, err := s.RecordInteractions(ctx, []store.Ping{ping(w.Website.ID, n2.ID, e[2], store.InteractionDelivered, nil), p}); err == nil {
			t.Fatalf("RecordInteractions with %+v succeeded", p)
		}
	}
	if c := counters(t, s, n2.ID); c.Delivered != 2 || c.Clicked != 0 {
		t.Fatalf("after refused batches: delivered %d clicked %d, want 2 0", c.Delivered, c.Clicked)
	}
	if got, err := s.RecordInteractions(ctx, nil); err != nil || len(got) != 0 {
		t.Fatalf("RecordInteractions(nil) = %v, %v", got, err)
	}
}

// Concurrent batches naming the same pings, in different orders, count
// each once: each ping is new in exactly one batch.
func testRecordInteractionsConcurrent(t *testing.T, s store.Store) {
	w := newWebsite(t, s)
	n1, n2 := sending(t, s, w.Website.ID), sending(t, s, w.Website.ID)
	var pings []store.Ping
	for i := range 40 {
		n, kind := n1.ID, store.InteractionDelivered
		if i%2 == 1 {
			n = n2.ID
		}
		if i%5 == 0 {
			kind = store.InteractionClicked
		}
		pings = append(pings, store.Ping{WebsiteID: w.Website.ID, NotificationID: n, EndpointID: fmt.Sprintf("ep-%02d", i/2), Kind: kind, At: at(time.Hour)})
	}
	const batches = 6
	news := make([][]bool, batches)
	errs := make([]error, batches)
	orders := make([][]int, batches)
	var wg sync.WaitGroup
	for b := range batches {
		orders[b] = rand.Perm(len(pings))
		batch := make([]store.Ping, len(pings))
		for i, j := range orders[b] {
			batch[i] = pings[j]
		}
		wg.Go(func() { news[b], errs[b] = s.RecordInteractions(context.Background(), batch) })
	}
	wg.Wait()
	counts := make([]int, len(pings))
	for b := range batches {
		noErr(t, "concurrent RecordInteractions", errs[b])
		for i, isNew := range news[b] {
			if isNew {
				counts[orders[b][i]]++
			}
		}
	}
	for i, c := range counts {
		if c != 1 {
			t.Fatalf("ping %d (%+v) new in %d batches, want 1", i, pings[i], c)
		}
	}
	var delivered, clicked int64
	for _, id := range []string{n1.ID, n2.ID} {
		c := counters(t, s, id)
		delivered, clicked = delivered+c.Delivered, clicked+c.Clicked
	}
	if delivered != 32 || clicked != 8 {
		t.Fatalf("delivered %d clicked %d, want 32 8", delivered, clicked)
	}
}

// Endpoints returns the website's endpoints among the ids, and only those.
func testEndpoints(t *testing.T, s store.Store) {
	ctx := context.Background()
	w, other := newWebsite(t, s), newWebsite(t, s)
	e := endpoints(t, s, w.Website.ID, 3)
	foreign := endpoints(t, s, other.Website.ID, 1)
	got, err := s.Endpoints(ctx, w.Website.ID, []string{e[2], uuid.NewString(), foreign[0], e[0], e[0]})
	noErr(t, "Endpoints", err)
	var ids []string
	for _, ep := range got {
		want, err := s.Endpoint(ctx, w.Website.ID, ep.ID)
		noErr(t, "Endpoint", err)
		same(t, "endpoint "+ep.ID, ep, want)
		ids = append(ids, ep.ID)
	}
	slices.Sort(ids)
	same(t, "ids", ids, slices.Sorted(slices.Values([]string{e[0], e[2]})))
	got, err = s.Endpoints(ctx, w.Website.ID, nil)
	noErr(t, "Endpoints(nil)", err)
	if len(got) != 0 {
		t.Fatalf("Endpoints(nil) = %v", got)
	}
}
