package fanout

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/relaybell/relaybell/analytics"
	"github.com/relaybell/relaybell/bus"
	"github.com/relaybell/relaybell/pusher"
	"github.com/relaybell/relaybell/store"
	storesqlite "github.com/relaybell/relaybell/store/sqlite"
)

// recorder is a Router that records batches and their results as a pusher
// would, so shards can finish: every push is sent but to the endpoints in
// fail.
type recorder struct {
	st      store.Store
	mu      sync.Mutex
	batches []pusher.Batch
	fail    map[string]bool
}

func (r *recorder) Push(ctx context.Context, _ string, b pusher.Batch) error {
	r.mu.Lock()
	r.batches = append(r.batches, b)
	r.mu.Unlock()
	results := make([]store.PushResult, len(b.Recipients))
	for i, rc := range b.Recipients {
		results[i] = store.PushResult{EndpointID: rc.Endpoint.ID, Outcome: store.OutcomeSent, Shard: store.ShardOf(rc.Subscriber.ID)}
		if r.fail[rc.Endpoint.ID] {
			results[i].Outcome = store.OutcomeFailed
		}
	}
	return r.st.RecordResults(ctx, b.NotificationID, results)
}

// countingStore counts the store calls whose number fan-out keeps down.
type countingStore struct {
	*storesqlite.Store
	websites  atomic.Int64
	capChecks atomic.Int64
	// shardsDone counts ShardsDone calls, shardTasks the tasks they mark.
	shardsDone, shardTasks atomic.Int64
	// Audience pages read lean (store.AudienceQuery's Lean) and not.
	leanPages, fullPages atomic.Int64
}

func (s *countingStore) Audience(ctx context.Context, q store.AudienceQuery) ([]store.Recipient, error) {
	if q.Lean {
		s.leanPages.Add(1)
	} else {
		s.fullPages.Add(1)
	}
	return s.Store.Audience(ctx, q)
}

func (s *countingStore) Website(ctx context.Context, id string) (store.Website, error) {
	s.websites.Add(1)
	return s.Store.Website(ctx, id)
}

func (s *countingStore) CappedEndpoints(ctx context.Context, websiteID, notificationID string, endpoints []store.ShardEndpoint, since time.Time, max int) ([]string, error) {
	s.capChecks.Add(1)
	return s.Store.CappedEndpoints(ctx, websiteID, notificationID, endpoints, since, max)
}

func (s *countingStore) ShardsDone(ctx context.Context, notificationID string, shards []int, at time.Time) (bool, error) {
	s.shardsDone.Add(1)
	s.shardTasks.Add(int64(len(shards)))
	return s.Store.ShardsDone(ctx, notificationID, shards, at)
}

// fixedReport is a Reports answering with one report for every send.
type fixedReport struct{ rep analytics.Report }

func (f *fixedReport) Report(context.Context, string, string) (analytics.Report, error) {
	return f.rep, nil
}

// memBus captures published messages instead of delivering them.
type memBus struct {
	mu  sync.Mutex
	out []bus.Message
}

func (m *memBus) Publish(_ context.Context, topic, key string, value []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.out = append(m.out, bus.Message{Topic: topic, Key: key, Value: value})
	return nil
}
func (m *memBus) Consume(context.Context, string, string, int, bus.Handler) error { return nil }
func (m *memBus) Close() error                                                    { return nil }

type rig struct {
	t      testing.TB
	st     *storesqlite.Store
	calls  *countingStore // st as fan-out sees it
	bus    *memBus
	router *recorder
	reg    *prometheus.Registry
	report *fixedReport
	f      *Fanout
	acct   store.Account
	site   store.Website
}

func newRig(t testing.TB) *rig {
	t.Helper()
	ctx := context.Background()
	st, err := storesqlite.Open(ctx, filepath.Join(t.TempDir(), "store.db"), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	r := &rig{t: t, st: st, calls: &countingStore{Store: st}, bus: &memBus{}, router: &recorder{st: st},
		reg: prometheus.NewRegistry(), report: &fixedReport{}}
	r.f, err = New(Config{PageSize: 4, BatchSize: 3}, r.calls, r.bus, r.router, r.report, slog.New(slog.DiscardHandler), r.reg)
	if err != nil {
		t.Fatal(err)
	}
	r.acct = store.Account{ID: uuid.NewString(), EmailVerified: true, CreatedAt: time.Now()}
	r.site = store.Website{ID: uuid.NewString(), AccountID: r.acct.ID, ProjectID: uuid.NewString(), Name: "Shop",
		URL: "https://shop.example", Timezone: "UTC", CreatedAt: time.Now()}
	key := store.APIKey{ID: uuid.NewString(), WebsiteID: r.site.ID, Name: "k", Prefix: "rb_live_abcd", Hash: uuid.NewString(), Scopes: []string{"full"}, CreatedAt: time.Now()}
	if err := st.CreateWebsite(ctx, r.acct, r.site, key); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *rig) subscriber(language, externalID string) string {
	r.t.Helper()
	res, err := r.st.UpsertSubscription(context.Background(), store.SubscriptionInput{WebsiteID: r.site.ID,
		Endpoint: "https://push.example/" + uuid.NewString(), P256dh: "p", Auth: "a", Language: language, ExternalID: externalID, At: time.Now()})
	if err != nil {
		r.t.Fatal(err)
	}
	return res.EndpointID
}

func (r *rig) notification(target string) store.Notification {
	r.t.Helper()
	n := store.Notification{ID: uuid.NewString(), WebsiteID: r.site.ID, Status: store.StatusQueued, Title: "Hi",
		Content: []byte(`{"title":"Hi","ttl":60}`), CreatedAt: time.Now()}
	if target != "" {
		n.Target = []byte(target)
	}
	if err := r.st.CreateNotification(context.Background(), &n); err != nil {
		r.t.Fatal(err)
	}
	return n
}

func (r *rig) intent(n store.Notification) {
	r.t.Helper()
	data, _ := json.Marshal(bus.Intent{WebsiteID: n.WebsiteID, NotificationID: n.ID})
	if err := r.f.handleIntent(context.Background(), bus.Message{Topic: bus.Intents, Key: n.WebsiteID, Value: data}); err != nil {
		r.t.Fatal(err)
	}
}

// send runs a notification through its intent and every shard task, and
// returns how many times each endpoint was in its batches.
func (r *rig) send(n store.Notification) map[string]int {
	r.t.Helper()
	tasks, batches := len(r.bus.out), len(r.router.batches)
	r.intent(n)
	for _, m := range r.bus.out[tasks:] {
		if err := r.f.handleShard(context.Background(), m); err != nil {
			r.t.Fatal(err)
		}
	}
	pushed := map[string]int{}
	for _, b := range r.router.batches[batches:] {
		for _, rc := range b.Recipients {
			pushed[rc.Endpoint.ID]++
		}
	}
	return pushed
}

// counter reads a counter of the rig's registry.
func (r *rig) counter(name string) float64 {
	r.t.Helper()
	mfs, err := r.reg.Gather()
	if err != nil {
		r.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	r.t.Fatalf("no metric %s", name)
	return 0
}

func (r *rig) get(id string) store.Notification {
	r.t.Helper()
	n, err := r.st.NotificationByID(context.Background(), id)
	if err != nil {
		r.t.Fatal(err)
	}
	return n
}

func TestDispatchChecksFailTheSend(t *testing.T) {
	f := func(prepare func(r *rig) store.Notification, reason string) {
		t.Helper()
		r := newRig(t)
		r.subscriber("en", "")
		n := prepare(r)
		r.intent(n)
		got := r.get(n.ID)
		if got.Status != store.StatusFailed || got.Error != reason || got.FinishedAt == nil {
			t.Fatalf("status %s error %q, want failed %q", got.Status, got.Error, reason)
		}
		if len(r.bus.out) != 0 {
			t.Fatalf("a failed send published %d shard tasks", len(r.bus.out))
		}
	}
	f(func(r *rig) store.Notification {
		n := r.notification("")
		r.st.SetAccountSuspended(context.Background(), r.acct.ID, true)
		return n
	}, "suspended")
	f(func(r *rig) store.Notification {
		r2 := r.acct
		r2.ID = uuid.NewString()
		r2.EmailVerified = false
		site := r.site
		site.ID, site.ProjectID, site.AccountID = uuid.NewString(), uuid.NewString(), r2.ID
		key := store.APIKey{ID: uuid.NewString(), WebsiteID: site.ID, Name: "k", Prefix: "rb_live_efgh", Hash: uuid.NewString(), CreatedAt: time.Now()}
		if err := r.st.CreateWebsite(context.Background(), r2, site, key); err != nil {
			t.Fatal(err)
		}
		r.site = site
		return r.notification("")
	}, "email_not_verified")
	f(func(r *rig) store.Notification {
		return r.notification(`{"segmentId":"` + uuid.NewString() + `"}`)
	}, "segment_missing")
}

// TestShardCompletionsShared: the completions of shard tasks that end
// together are marked in one store call, and the send finishes once.
// (More tasks run at once here than a node's ShardWorkers, for a test of
// the sharing alone.)
func TestShardCompletionsShared(t *testing.T) {
	r := newRig(t)
	for range 10 {
		r.subscriber("en", "")
	}
	n := r.notification("")
	tasks := len(r.bus.out)
	r.intent(n)
	shards := r.bus.out[tasks:]
	if len(shards) != store.Shards {
		t.Fatalf("%d shard tasks, want %d", len(shards), store.Shards)
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(shards))
	for _, m := range shards {
		wg.Go(func() { errs <- r.f.handleShard(context.Background(), m) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := r.get(n.ID); got.Status != store.StatusSent || got.Counters.Sent != 10 {
		t.Fatalf("status %q, %d sent; want sent, 10", got.Status, got.Counters.Sent)
	}
	calls, marked := r.calls.shardsDone.Load(), r.calls.shardTasks.Load()
	// How many share a call depends on how the tasks' ends fall; one
	// call each is what sharing nothing would take.
	if marked != store.Shards || calls >= store.Shards {
		t.Fatalf("%d shard tasks marked in %d calls; want %d in fewer calls", marked, calls, store.Shards)
	}
	if got := r.counter("relaybell_fanout_sends_finished_total"); got != 1 {
		t.Fatalf("sends finished %v, want 1", got)
	}
}

func TestShardsExpandTheFilteredAudienceOnce(t *testing.T) {
	r := newRig(t)
	// 640 browsers are about 10 a shard: several pages of 4 and full
	// batches of 3 in every shard.
	want := map[string]bool{}
	for i := range 640 {
		lang := "en"
		if i%4 == 0 {
			lang = "de-DE"
		}
		id := r.subscriber(lang, "")
		if lang == "en" {
			want[id] = true
		}
	}
	n := r.notification(`{"filters":{"match":"all","rules":[{"field":"language","op":"eq","value":"en"}]}}`)
	r.intent(n)
	if got := r.get(n.ID).Status; got != store.StatusSending {
		t.Fatalf("status %s after intent", got)
	}
	if len(r.bus.out) != store.Shards {
		t.Fatalf("published %d shard tasks, want %d", len(r.bus.out), store.Shards)
	}
	// Every shard task is handled twice in a row while the send is still
	// going out, as the bus does when a worker dies before acknowledging:
	// the redone shard must not count a browser twice or finish the send
	// early.
	for i, m := range r.bus.out {
		for round := range 2 {
			if err := r.f.handleShard(context.Background(), m); err != nil {
				t.Fatalf("shard task %d, round %d: %v", i, round, err)
			}
		}
		if got := r.get(n.ID).Status; i < len(r.bus.out)-1 && got != store.StatusSending {
			t.Fatalf("status %s after %d of %d shards", got, i+1, len(r.bus.out))
		}
	}
	got := map[string]int{}
	full := 0
	for _, b := range r.router.batches {
		if len(b.Recipients) > 3 {
			t.Fatalf("batch of %d, want at most 3", len(b.Recipients))
		}
		if len(b.Recipients) == 3 {
			full++
		}
		for _, rc := range b.Recipients {
			got[rc.Endpoint.ID]++
		}
	}
	for id := range want {
		if got[id] == 0 {
			t.Fatalf("endpoint %s never pushed", id)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("pushed %d endpoints, want %d", len(got), len(want))
	}
	if full < len(want)/6 {
		t.Fatalf("only %d full batches for %d recipients", full, len(want))
	}
	if n := r.calls.capChecks.Load(); n != 0 {
		t.Fatalf("%d frequency-cap checks for a website without a cap", n)
	}
	done := r.get(n.ID)
	if done.Status != store.StatusSent || done.Recipients != 480 || done.Sent != 480 {
		t.Fatalf("send after shards: %s %+v", done.Status, done.Counters)
	}
}

func TestFrequencyCapSkipsBrowsersAlreadyReached(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	if _, err := r.st.UpdateWebsite(ctx, r.site.ID, func(w *store.Website) error {
		w.Settings.FrequencyCap = &store.FrequencyCap{Max: 1, Hours: 24}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// 60 browsers, 20 of them English; the first send goes to those and
	// fails for 5, which it therefore did not reach.
	var all, reached []string
	failed := map[string]bool{}
	for i := range 60 {
		lang := "de"
		if i%3 == 0 {
			lang = "en"
		}
		id := r.subscriber(lang, "")
		all = append(all, id)
		switch {
		case lang == "en" && len(failed) < 5:
			failed[id] = true
		case lang == "en":
			reached = append(reached, id)
		}
	}
	newSend := func(target string, transactional bool) store.Notification {
		t.Helper()
		n := store.Notification{ID: uuid.NewString(), WebsiteID: r.site.ID, Status: store.StatusQueued, Title: "Hi",
			Content: []byte(`{"title":"Hi","ttl":60}`), Transactional: transactional, CreatedAt: time.Now()}
		if transactional {
			n.Content = []byte(`{"title":"Hi","ttl":60,"transactional":true}`)
		}
		if target != "" {
			n.Target = []byte(target)
		}
		if err := r.st.CreateNotification(ctx, &n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// check runs a send and checks it pushed exactly want once each, its
	// counters hold and it finished, and how many browsers the cap skipped.
	check := func(name string, n store.Notification, want []string, skipped int) {
		t.Helper()
		before := r.counter("relaybell_fanout_capped_total")
		pushed := r.send(n)
		for _, id := range want {
			if pushed[id] != 1 {
				t.Fatalf("%s: endpoint %s pushed %d times, want once", name, id, pushed[id])
			}
		}
		if len(pushed) != len(want) {
			t.Fatalf("%s: pushed %d endpoints, want %d", name, len(pushed), len(want))
		}
		got := r.get(n.ID)
		if got.Status != store.StatusSent || got.Recipients != int64(len(want)) ||
			got.Recipients != got.Sent+got.Failed+got.Pruned || got.Processed != got.Recipients {
			t.Fatalf("%s: %s %+v, want sent to %d recipients", name, got.Status, got.Counters, len(want))
		}
		if c := r.counter("relaybell_fanout_capped_total") - before; c != float64(skipped) {
			t.Fatalf("%s: capped counter rose by %v, want %d", name, c, skipped)
		}
	}
	without := func(ids []string, drop []string) []string {
		var out []string
		for _, id := range ids {
			if !slices.Contains(drop, id) {
				out = append(out, id)
			}
		}
		return out
	}

	r.router.fail = failed
	var english []string
	for id := range failed {
		english = append(english, id)
	}
	english = append(english, reached...)
	check("first send", newSend(`{"filters":{"match":"all","rules":[{"field":"language","op":"eq","value":"en"}]}}`, false), english, 0)
	r.router.fail = nil

	// The second send skips exactly the browsers the first one reached;
	// the website is read once for it, not per shard or batch: the
	// dispatch check's read gives the cap too.
	websites := r.calls.websites.Load()
	check("second send", newSend("", false), without(all, reached), len(reached))
	if n := r.calls.websites.Load() - websites; n != 1 {
		t.Fatalf("second send read the website %d times, want 1 (the dispatch check's, which gives the cap)", n)
	}

	// A transactional send ignores the cap, without a single check.
	checks := r.calls.capChecks.Load()
	check("transactional send", newSend("", true), all, 0)
	if n := r.calls.capChecks.Load() - checks; n != 0 {
		t.Fatalf("transactional send made %d cap checks", n)
	}

	// Every browser has had its one push in 24 hours now: a send reaches
	// nobody, and still finishes.
	check("capped send", newSend("", false), nil, len(all))

	// A day later the earlier sends are out of the window.
	r.f.now = func() time.Time { return time.Now().Add(25 * time.Hour) }
	check("send a day later", newSend("", false), all, 0)
}

// holding is a Router that counts the recipients inside Push at once.
type holding struct {
	inner    Router
	cur, max atomic.Int64
}

func (h *holding) Push(ctx context.Context, key string, b pusher.Batch) error {
	n := h.cur.Add(int64(len(b.Recipients)))
	for m := h.max.Load(); n > m && !h.max.CompareAndSwap(m, n); m = h.max.Load() {
	}
	defer h.cur.Add(-int64(len(b.Recipients)))
	time.Sleep(2 * time.Millisecond) // let the other tasks pile up
	return h.inner.Push(ctx, key, b)
}

func TestShardTasksHoldAtMostTheBudget(t *testing.T) {
	if err := (Config{PageSize: 10, Held: 9}).Validate(); err == nil {
		t.Fatal("a budget smaller than a page passed validation")
	}
	if err := (Config{Held: 1999}).Validate(); err == nil {
		t.Fatal("a budget smaller than the default page passed validation")
	}
	r := newRig(t)
	h := &holding{inner: r.router}
	var err error
	r.f, err = New(Config{PageSize: 4, BatchSize: 3, Held: 5}, r.calls, r.bus, h, r.report, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 640 {
		r.subscriber("en", "")
	}
	n := r.notification("")
	r.intent(n)
	// Every shard task at once, as a node's workers and the other nodes'
	// would: without the budget they would hold 64 pages and batches.
	var wg sync.WaitGroup
	for _, m := range r.bus.out {
		wg.Go(func() {
			if err := r.f.handleShard(context.Background(), m); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if m := h.max.Load(); m > 5 || m == 0 {
		t.Fatalf("%d recipients pushing at once, want 1 to 5", m)
	}
	done := r.get(n.ID)
	if done.Status != store.StatusSent || done.Recipients != 640 || done.Sent != 640 {
		t.Fatalf("send after shards: %s %+v", done.Status, done.Counters)
	}
}

// A send to one person (an automation's message) is expanded in its
// intent's handler, the person's shard alone, and publishes no shard task:
// the person's browsers get it once, nobody else's, and it is sent.
func TestOnePersonSendIsExpandedInItsIntent(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	r.subscriber("en", "")
	res, err := r.st.UpsertSubscription(ctx, store.SubscriptionInput{WebsiteID: r.site.ID, ExternalID: "user-1",
		Endpoint: "https://push.example/" + uuid.NewString(), P256dh: "p", Auth: "a", At: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	second, err := r.st.UpsertSubscription(ctx, store.SubscriptionInput{WebsiteID: r.site.ID, ExternalID: "user-1",
		Endpoint: "https://push.example/" + uuid.NewString(), P256dh: "p", Auth: "a", At: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if second.SubscriberID != res.SubscriberID {
		t.Fatalf("the second browser is person %s, not %s", second.SubscriberID, res.SubscriberID)
	}
	n := r.notification(`{"subscriberId":"` + res.SubscriberID + `"}`)
	tasks := len(r.bus.out)
	pushed := r.send(n)
	var got []bus.ShardTask
	for _, m := range r.bus.out[tasks:] {
		var task bus.ShardTask
		if err := json.Unmarshal(m.Value, &task); err != nil {
			t.Fatal(err)
		}
		got = append(got, task)
	}
	if len(got) != 0 {
		t.Fatalf("shard tasks %+v published, want none", got)
	}
	if want := map[string]int{res.EndpointID: 1, second.EndpointID: 1}; !maps.Equal(pushed, want) {
		t.Fatalf("pushed %v, want %v", pushed, want)
	}
	if got := r.get(n.ID); got.Status != store.StatusSent || got.Sent != 2 {
		t.Fatalf("status %s, sent %d; want sent, 2", got.Status, got.Sent)
	}
}

// A send to one browser (a welcome) is expanded in its intent's handler,
// in the shard the endpoint is in: that browser gets it once, not its
// person's other browser nor anybody else, and it is sent without a
// shard task. An endpoint gone by then reaches nobody; a target naming
// somebody else as well fails the send instead of reading wider.
func TestOneBrowserSendIsExpandedInItsIntent(t *testing.T) {
	r := newRig(t)
	r.subscriber("en", "")
	first := r.subscriber("en", "user-1")
	second := r.subscriber("en", "user-1") // the same person's new browser
	n := r.notification(`{"endpointId":"` + second + `"}`)
	tasks := len(r.bus.out)
	pushed := r.send(n)
	if got := r.shardTasks(tasks); len(got) != 0 {
		t.Fatalf("shard tasks %+v published, want none", got)
	}
	if want := map[string]int{second: 1}; !maps.Equal(pushed, want) {
		t.Fatalf("pushed %v, want %v (not the first browser %s)", pushed, want, first)
	}
	if got := r.get(n.ID); got.Status != store.StatusSent || got.Recipients != 1 || got.Sent != 1 {
		t.Fatalf("status %s, recipients %d, sent %d; want sent, 1, 1", got.Status, got.Recipients, got.Sent)
	}
	// The intent again (a redelivery): nothing more.
	batches := len(r.router.batches)
	r.intent(n)
	if len(r.router.batches) != batches {
		t.Fatalf("a second handling pushed %d more batches", len(r.router.batches)-batches)
	}

	// Gone before its send started: sent to nobody, without a shard task.
	n = r.notification(`{"endpointId":"` + uuid.NewString() + `"}`)
	tasks = len(r.bus.out)
	if pushed := r.send(n); len(pushed) != 0 || len(r.shardTasks(tasks)) != 0 {
		t.Fatalf("pushed %v with %d shard tasks, want none", pushed, len(r.shardTasks(tasks)))
	}
	if got := r.get(n.ID); got.Status != store.StatusSent || got.Recipients != 0 {
		t.Fatalf("status %s, recipients %d; want sent, 0", got.Status, got.Recipients)
	}

	// Named with the person: never the person's browsers.
	res, err := r.st.Endpoint(context.Background(), r.site.ID, first)
	if err != nil {
		t.Fatal(err)
	}
	n = r.notification(`{"endpointId":"` + second + `","subscriberId":"` + res.SubscriberID + `"}`)
	if pushed := r.send(n); len(pushed) != 0 {
		t.Fatalf("pushed %v, want nobody", pushed)
	}
	if got := r.get(n.ID); got.Status != store.StatusFailed || got.Error != "dispatch_error" {
		t.Fatalf("status %s, error %q; want failed, dispatch_error", got.Status, got.Error)
	}
}

// flakyRouter fails its first push, as a node lost mid-send would, then
// hands every batch to the recorder.
type flakyRouter struct {
	*recorder
	failed atomic.Bool
}

func (f *flakyRouter) Push(ctx context.Context, key string, b pusher.Batch) error {
	if f.failed.CompareAndSwap(false, true) {
		return context.DeadlineExceeded
	}
	return f.recorder.Push(ctx, key, b)
}

// shardTasks returns the shard tasks published since the rig's first
// messages.
func (r *rig) shardTasks(from int) []bus.ShardTask {
	r.t.Helper()
	var got []bus.ShardTask
	for _, m := range r.bus.out[from:] {
		if m.Topic != bus.Shards {
			continue
		}
		var task bus.ShardTask
		if err := json.Unmarshal(m.Value, &task); err != nil {
			r.t.Fatal(err)
		}
		got = append(got, task)
	}
	return got
}

// A send to a few named people is expanded in its intent's handler, in
// their shards alone, with the rest of its target applied (the filter
// leaves out a named person, nobody unnamed is pushed), and finished at
// once; a person on two browsers gets both, an unknown id nothing.
func TestNamedPeopleSendIsExpandedInItsIntent(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	r.subscriber("en", "")                   // not named
	r.subscriber("en", "user-3")             // not named
	excluded := r.subscriber("de", "user-2") // named, left out by the filter
	first, err := r.st.UpsertSubscription(ctx, store.SubscriptionInput{WebsiteID: r.site.ID, ExternalID: "user-1",
		Language: "en", Endpoint: "https://push.example/" + uuid.NewString(), P256dh: "p", Auth: "a", At: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	second, err := r.st.UpsertSubscription(ctx, store.SubscriptionInput{WebsiteID: r.site.ID, ExternalID: "user-1",
		Language: "en", Endpoint: "https://push.example/" + uuid.NewString(), P256dh: "p", Auth: "a", At: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if second.SubscriberID != first.SubscriberID {
		t.Fatalf("the second browser is person %s, not %s", second.SubscriberID, first.SubscriberID)
	}
	other := r.subscriber("en", "user-4")
	n := r.notification(`{"externalIds":["user-1","user-2","user-4","nobody"],` +
		`"filters":{"match":"all","rules":[{"field":"language","op":"eq","value":"en"}]}}`)
	tasks := len(r.bus.out)
	pushed := r.send(n)
	if got := r.shardTasks(tasks); len(got) != 0 {
		t.Fatalf("shard tasks %+v published, want none", got)
	}
	if want := map[string]int{first.EndpointID: 1, second.EndpointID: 1, other: 1}; !maps.Equal(pushed, want) {
		t.Fatalf("pushed %v, want %v (not %s, left out by the filter)", pushed, want, excluded)
	}
	if got := r.get(n.ID); got.Status != store.StatusSent || got.Sent != 3 {
		t.Fatalf("status %s, sent %d; want sent, 3", got.Status, got.Sent)
	}
	// The intent again (a redelivery): the send is sent, nothing more.
	batches := len(r.router.batches)
	r.intent(n)
	if len(r.router.batches) != batches {
		t.Fatalf("a second handling pushed %d more batches", len(r.router.batches)-batches)
	}

	// Nobody named known: sent to nobody, still without a shard task.
	n = r.notification(`{"externalIds":["nobody"]}`)
	tasks = len(r.bus.out)
	if pushed := r.send(n); len(pushed) != 0 || len(r.shardTasks(tasks)) != 0 {
		t.Fatalf("pushed %v with %d shard tasks, want none", pushed, len(r.shardTasks(tasks)))
	}
	if got := r.get(n.ID); got.Status != store.StatusSent || got.Recipients != 0 {
		t.Fatalf("status %s, recipients %d; want sent, 0", got.Status, got.Recipients)
	}
}

// A send naming more than inlineNames people goes out as a broadcast's
// shard tasks, to the same people.
func TestManyNamedPeopleSendHasShardTasks(t *testing.T) {
	r := newRig(t)
	r.subscriber("en", "")
	ids := make([]string, inlineNames+1)
	want := map[string]int{}
	for i := range ids {
		ids[i] = fmt.Sprintf("user-%d", i)
		if i%8 == 0 {
			want[r.subscriber("en", ids[i])] = 1
		}
	}
	target, _ := json.Marshal(map[string]any{"externalIds": ids})
	n := r.notification(string(target))
	tasks := len(r.bus.out)
	pushed := r.send(n)
	if got := r.shardTasks(tasks); len(got) != store.Shards {
		t.Fatalf("%d shard tasks published, want %d", len(got), store.Shards)
	}
	if !maps.Equal(pushed, want) {
		t.Fatalf("pushed %v, want %v", pushed, want)
	}
	if got := r.get(n.ID); got.Status != store.StatusSent || got.Sent != int64(len(want)) {
		t.Fatalf("status %s, sent %d; want sent, %d", got.Status, got.Sent, len(want))
	}
}

// A send to named people whose intent fails mid-expansion (a push
// refused) is expanded again when the intent is handled again, and
// finishes with each browser recorded once and nobody else handed.
func TestNamedPeopleSendRedoneAfterAFailure(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	flaky := &flakyRouter{recorder: r.router}
	var err error
	r.f, err = New(Config{PageSize: 4, BatchSize: 1}, r.calls, r.bus, flaky, r.report, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, id := range []string{"user-1", "user-1", "user-2"} {
		want[r.subscriber("en", id)] = true
	}
	n := r.notification(`{"externalIds":["user-1","user-2"]}`)
	data, _ := json.Marshal(bus.Intent{WebsiteID: n.WebsiteID, NotificationID: n.ID})
	m := bus.Message{Topic: bus.Intents, Key: n.WebsiteID, Value: data}
	if err := r.f.handleIntent(ctx, m); err == nil {
		t.Fatal("the intent whose push failed was handled without an error")
	}
	if got := r.get(n.ID); got.Status != store.StatusSending {
		t.Fatalf("status %s after the failure, want sending", got.Status)
	}
	if err := r.f.handleIntent(ctx, m); err != nil {
		t.Fatal(err)
	}
	if got := r.get(n.ID); got.Status != store.StatusSent || got.Sent != int64(len(want)) || got.Recipients != int64(len(want)) {
		t.Fatalf("status %s, sent %d, recipients %d; want sent, %d, %d", got.Status, got.Sent, got.Recipients, len(want), len(want))
	}
	// Handed to the pushers: every named browser and no other. A browser
	// handed on the failed try may be handed again on the redo; the
	// pusher skips one whose result is recorded (store.Undelivered, tested
	// in package pusher), so it is pushed once.
	handed := map[string]int{}
	r.router.mu.Lock()
	for _, b := range r.router.batches {
		for _, rc := range b.Recipients {
			handed[rc.Endpoint.ID]++
		}
	}
	r.router.mu.Unlock()
	for id := range want {
		if handed[id] == 0 {
			t.Errorf("browser %s never handed to a pusher (%v)", id, handed)
		}
	}
	if len(handed) != len(want) {
		t.Errorf("handed %v, want the browsers of %v only", handed, want)
	}
}

// A send whose target has no filter, whose content has no merge tag and
// that goes out at once walks its audience lean (store.AudienceQuery's
// Lean): its batches hold each browser with its language and its
// subscriber's id, and nothing else of the subscriber. A filter, a
// segment, a merge tag or waves read the whole subscriber, and every
// send reaches the same browsers either way.
func TestLeanWalkOnlyWhenNothingReadsTheSubscriber(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	topic, _, err := r.st.SaveTopic(ctx, store.Topic{ID: uuid.NewString(), WebsiteID: r.site.ID, Name: "News", Slug: "news", CreatedAt: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	all := map[string]string{} // endpoint id: language
	for i := range 40 {
		in := store.SubscriptionInput{WebsiteID: r.site.ID, Endpoint: "https://push.example/" + uuid.NewString(),
			P256dh: "p", Auth: "a", Language: []string{"en", "de"}[i%2], ExternalID: fmt.Sprintf("u%d", i), At: time.Now()}
		if i%4 < 3 {
			in.Topics = []string{"news"} // 30 of them
		}
		res, err := r.st.UpsertSubscription(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		all[res.EndpointID] = in.Language
	}
	send := func(content, target string) (lean bool, batches []pusher.Batch) {
		t.Helper()
		n := store.Notification{ID: uuid.NewString(), WebsiteID: r.site.ID, Status: store.StatusQueued, Title: "Hi",
			Content: []byte(content), CreatedAt: time.Now()}
		if target != "" {
			n.Target = []byte(target)
		}
		if err := r.st.CreateNotification(ctx, &n); err != nil {
			t.Fatal(err)
		}
		leanBefore, fullBefore, from := r.calls.leanPages.Load(), r.calls.fullPages.Load(), len(r.router.batches)
		r.send(n)
		leanPages, fullPages := r.calls.leanPages.Load()-leanBefore, r.calls.fullPages.Load()-fullBefore
		if leanPages > 0 && fullPages > 0 || leanPages+fullPages < store.Shards {
			t.Fatalf("%s to %s: %d lean and %d full pages", content, target, leanPages, fullPages)
		}
		return leanPages > 0, r.router.batches[from:]
	}
	for _, c := range []struct {
		name, content, target string
		lean                  bool
		reached               int
	}{
		{"everyone", `{"title":"Hi","ttl":60}`, "", true, 40},
		{"a topic", `{"title":"Hi","ttl":60}`, `{"topicId":"` + topic.ID + `"}`, true, 30},
		{"a translation", `{"title":"Hi","ttl":60,"translations":{"de":{"title":"Hallo","body":""}}}`, "", true, 40},
		{"a merge tag", `{"title":"Hi {externalId|there}","ttl":60}`, "", false, 40},
		{"version B's merge tag", `{"title":"Hi","ttl":60,"b":{"body":"{country}"}}`, "", false, 40},
		{"a filter", `{"title":"Hi","ttl":60}`, `{"filters":{"match":"all","rules":[{"field":"language","op":"eq","value":"en"}]}}`, false, 20},
	} {
		lean, batches := send(c.content, c.target)
		if lean != c.lean {
			t.Fatalf("%s: walked lean %v, want %v", c.name, lean, c.lean)
		}
		reached := 0
		for _, b := range batches {
			for _, rc := range b.Recipients {
				reached++
				if lang, ok := all[rc.Endpoint.ID]; !ok || rc.Subscriber.ID == "" ||
					rc.Subscriber.ID != rc.Endpoint.SubscriberID || rc.Endpoint.Language != lang {
					t.Fatalf("%s: recipient %+v", c.name, rc)
				}
				if got := rc.Subscriber.ExternalID != ""; got == lean {
					t.Fatalf("%s (lean %v): recipient with external id %q", c.name, lean, rc.Subscriber.ExternalID)
				}
			}
		}
		if reached != c.reached {
			t.Fatalf("%s: reached %d browsers, want %d", c.name, reached, c.reached)
		}
	}
}
