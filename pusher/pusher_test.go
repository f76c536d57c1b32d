package pusher

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	analyticssqlite "github.com/relaybell/relaybell/analytics/sqlite"
	"github.com/relaybell/relaybell/netpolicy"
	"github.com/relaybell/relaybell/notification"
	"github.com/relaybell/relaybell/store"
	storesqlite "github.com/relaybell/relaybell/store/sqlite"
	"github.com/relaybell/relaybell/webpush"
	"github.com/relaybell/relaybell/webpush/webpushtest"
)

// rig is a pusher over a real SQLite store and a fake push service, with
// retry sleeps recorded instead of slept.
type rig struct {
	t      *testing.T
	st     *storesqlite.Store
	push   *webpushtest.Server
	p      *Pusher
	site   store.Website
	n      store.Notification
	mu     sync.Mutex
	sleeps []time.Duration
}

func newRig(t *testing.T, cfg Config) *rig {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	st, err := storesqlite.Open(ctx, filepath.Join(dir, "store.db"), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	an, err := analyticssqlite.Open(ctx, filepath.Join(dir, "analytics.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { an.Close() })
	push := webpushtest.NewServer()
	t.Cleanup(push.Close)
	u, _ := url.Parse(push.URL)
	cfg.Allow, _ = netpolicy.ParseAllowList(u.Host)
	cfg.TLSConfig = push.TLSConfig()
	p, err := New(cfg, st, an, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	r := &rig{t: t, st: st, push: push, p: p}
	p.sleep = func(_ context.Context, d time.Duration) error {
		r.mu.Lock()
		r.sleeps = append(r.sleeps, d)
		r.mu.Unlock()
		return nil
	}

	key, err := webpush.GenerateVAPIDKey()
	if err != nil {
		t.Fatal(err)
	}
	r.site = store.Website{ID: uuid.NewString(), AccountID: uuid.NewString(),
		ProjectID: uuid.NewString(), Name: "Shop", URL: "https://shop.example", Timezone: "UTC",
		VAPIDPublicKey: key.PublicKey(), VAPIDPrivateKey: key.PrivateKey(), CreatedAt: time.Now()}
	acct := store.Account{ID: r.site.AccountID, EmailVerified: true, CreatedAt: time.Now()}
	apiKey := store.APIKey{ID: uuid.NewString(), WebsiteID: r.site.ID, Name: "k", Prefix: "rb_live_xxxx", Hash: "h", Scopes: []string{"full"}, CreatedAt: time.Now()}
	if err := st.CreateWebsite(ctx, acct, r.site, apiKey); err != nil {
		t.Fatal(err)
	}
	content, _ := json.Marshal(notification.Content{Title: "Hi", Body: "There, {device} user", URL: "https://shop.example", TTL: 600, Transactional: true})
	r.n = store.Notification{ID: uuid.NewString(), WebsiteID: r.site.ID, Status: store.StatusSending,
		Title: "Hi", Content: content, CreatedAt: time.Now()}
	if err := st.CreateNotification(ctx, &r.n); err != nil {
		t.Fatal(err)
	}
	return r
}

// browser subscribes a fake browser and returns it with its recipient row.
func (r *rig) browser(b webpushtest.Behavior) (*webpushtest.Browser, store.Recipient) {
	r.t.Helper()
	br := r.push.NewBrowser(r.site.VAPIDPublicKey)
	br.SetBehavior(b)
	sub := br.Subscription()
	res, err := r.st.UpsertSubscription(context.Background(), store.SubscriptionInput{
		WebsiteID: r.site.ID, Endpoint: sub.Endpoint, P256dh: sub.P256dh, Auth: sub.Auth, Device: "desktop", Language: "en", At: time.Now(),
	})
	if err != nil {
		r.t.Fatal(err)
	}
	return br, store.Recipient{
		Endpoint:   store.Endpoint{ID: res.EndpointID, SubscriberID: res.SubscriberID, WebsiteID: r.site.ID, URL: sub.Endpoint, P256dh: sub.P256dh, Auth: sub.Auth, Device: "desktop"},
		Subscriber: store.Subscriber{ID: res.SubscriberID, WebsiteID: r.site.ID, Language: "en"},
	}
}

func (r *rig) counters() store.Counters {
	r.t.Helper()
	n, err := r.st.NotificationByID(context.Background(), r.n.ID)
	if err != nil {
		r.t.Fatal(err)
	}
	return n.Counters
}

func TestPushOutcomesAndRetries(t *testing.T) {
	r := newRig(t, Config{MaxAttempts: 3, BaseBackoff: 100 * time.Millisecond, MaxBackoff: 10 * time.Second})
	ok, okRecipient := r.browser(webpushtest.Behavior{})
	throttled, throttledRecipient := r.browser(webpushtest.Behavior{Status: 429, RetryAfter: "7", Times: 1})
	down, downRecipient := r.browser(webpushtest.Behavior{Status: 503})
	_, goneRecipient := r.browser(webpushtest.Behavior{Status: 404})
	_, bigRecipient := r.browser(webpushtest.Behavior{Status: 413})

	batch := Batch{NotificationID: r.n.ID, WebsiteID: r.site.ID,
		Recipients: []store.Recipient{okRecipient, throttledRecipient, downRecipient, goneRecipient, bigRecipient}}
	if err := r.p.Push(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
	if got, want := r.counters(), (store.Counters{Recipients: 5, Processed: 5, Sent: 2, Failed: 2, Pruned: 1}); got != want {
		t.Fatalf("counters %+v, want %+v", got, want)
	}
	// The failed and pruned pushes keep their push service, as the
	// metrics name it (the fake service's is other).
	trouble, err := r.st.DeliveryTrouble(context.Background(), r.site.ID, []string{r.n.ID})
	if want := []store.ServiceTrouble{{Service: webpush.ServiceOf(r.push.URL), Failed: 2, Pruned: 1}}; err != nil || !slices.Equal(trouble, want) {
		t.Fatalf("by push service %+v (%v), want %+v", trouble, err, want)
	}
	if len(ok.Received()) != 1 || len(throttled.Received()) != 1 || len(down.Received()) != 0 {
		t.Fatalf("received ok %d throttled %d down %d", len(ok.Received()), len(throttled.Received()), len(down.Received()))
	}
	// The push service's series (the fake one is "other"): 8 requests, of
	// which 429 once, 503 three times and 413 once failed; 404 is an answer.
	for reason, want := range map[string]float64{"throttled": 1, "server": 3, "rejected": 1, "connection": 0, "timeout": 0} {
		if got := testutil.ToFloat64(r.p.serviceErrors.WithLabelValues("other", reason)); got != want {
			t.Errorf("push service errors other/%s = %v, want %v", reason, got, want)
		}
	}
	var h dto.Metric
	if err := r.p.serviceSeconds.WithLabelValues("other").(prometheus.Histogram).Write(&h); err != nil || h.GetHistogram().GetSampleCount() != 8 {
		t.Errorf("push service requests timed: %d (%v), want 8", h.GetHistogram().GetSampleCount(), err)
	}
	d := ok.Received()[0]
	if d.TTL != 600 || d.Urgency != "high" {
		t.Fatalf("headers: ttl %d urgency %q (transactional sends are high urgency)", d.TTL, d.Urgency)
	}
	var p notification.Payload
	if err := json.Unmarshal(d.Payload, &p); err != nil || p.NotificationID != r.n.ID || p.EndpointID != okRecipient.Endpoint.ID || p.Title != "Hi" || p.Body != "There, desktop user" {
		t.Fatalf("payload %s (%v)", d.Payload, err)
	}
	// 429 once with Retry-After 7 s: one wait of at least 7 s. 503 every
	// time: MaxAttempts-1 waits, then failed.
	r.mu.Lock()
	sleeps := append([]time.Duration(nil), r.sleeps...)
	r.mu.Unlock()
	if len(sleeps) != 3 {
		t.Fatalf("sleeps %v, want 3 (one for 429, two for 503)", sleeps)
	}
	sawRetryAfter := false
	for _, s := range sleeps {
		if s >= 7*time.Second {
			sawRetryAfter = true
		}
		if s > 10*time.Second {
			t.Fatalf("sleep %v above MaxBackoff", s)
		}
	}
	if !sawRetryAfter {
		t.Fatalf("sleeps %v: Retry-After 7 s not honoured", sleeps)
	}

	// The pruned endpoint is gone from the store.
	if _, err := r.st.Endpoint(context.Background(), r.site.ID, goneRecipient.Endpoint.ID); err == nil {
		t.Fatal("404 endpoint not pruned")
	}

	// Pushing the same batch again sends nothing twice and counts nothing.
	if err := r.p.Push(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
	if len(ok.Received()) != 1 || r.counters().Recipients != 5 {
		t.Fatalf("redone batch delivered again: %d, counters %+v", len(ok.Received()), r.counters())
	}
}

func TestBackoff(t *testing.T) {
	p := &Pusher{cfg: Config{BaseBackoff: time.Second, MaxBackoff: 30 * time.Second}}
	f := func(attempt int, retryAfter, lo, hi time.Duration) {
		t.Helper()
		for range 50 {
			if d := p.backoff(attempt, retryAfter); d < lo || d > hi {
				t.Fatalf("backoff(%d, %v) = %v, want in [%v, %v]", attempt, retryAfter, d, lo, hi)
			}
		}
	}
	f(1, 0, 500*time.Millisecond, time.Second)
	f(2, 0, time.Second, 2*time.Second)
	f(3, 0, 2*time.Second, 4*time.Second)
	f(1, 20*time.Second, 20*time.Second, 20*time.Second)
	f(1, time.Hour, 30*time.Second, 30*time.Second)
	f(40, 0, 30*time.Second, 30*time.Second)
}

// A batch redone while its first try is still going out (the fan-out node
// that sent it died and another one took over) pushes nothing twice: the
// second try waits for the endpoints the first is pushing.
func TestConcurrentRedoPushesOnce(t *testing.T) {
	r := newRig(t, Config{RecordEvery: 3})
	var recipients []store.Recipient
	var browsers []*webpushtest.Browser
	for range 10 {
		b, rc := r.browser(webpushtest.Behavior{Delay: 100 * time.Millisecond})
		browsers = append(browsers, b)
		recipients = append(recipients, rc)
	}
	first := Batch{NotificationID: r.n.ID, WebsiteID: r.site.ID, Recipients: recipients}
	// The redo holds seven of the first try's endpoints, in another order.
	redo := Batch{NotificationID: r.n.ID, WebsiteID: r.site.ID, Recipients: append([]store.Recipient{recipients[9], recipients[8]}, recipients[:5]...)}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, b := range []Batch{first, redo} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i == 1 {
				time.Sleep(20 * time.Millisecond) // the first has claimed its endpoints
			}
			errs[i] = r.p.Push(context.Background(), b)
		}()
	}
	wg.Wait()
	if errs[0] != nil || errs[1] != nil {
		t.Fatalf("errors %v", errs)
	}
	for i, b := range browsers {
		if got := len(b.Received()); got != 1 {
			t.Errorf("browser %d received %d pushes, want 1", i, got)
		}
	}
	if got, want := r.counters(), (store.Counters{Recipients: 10, Processed: 10, Sent: 10}); got != want {
		t.Fatalf("counters %+v, want %+v", got, want)
	}
	r.p.mu.Lock()
	left := len(r.p.inflight)
	r.p.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d endpoints still marked in flight", left)
	}
}

// An outcome is recorded RecordAfter after it came in, while its batch is
// still going out: a crash then sends it again only if it was that recent.
func TestOutcomeRecordedWhileBatchGoesOut(t *testing.T) {
	r := newRig(t, Config{RecordAfter: 10 * time.Millisecond})
	_, fast := r.browser(webpushtest.Behavior{})
	_, slow := r.browser(webpushtest.Behavior{Delay: 3 * time.Second})
	pushed := make(chan error, 1)
	go func() {
		pushed <- r.p.Push(context.Background(), Batch{NotificationID: r.n.ID, WebsiteID: r.site.ID, Recipients: []store.Recipient{fast, slow}})
	}()
	deadline := time.Now().Add(2500 * time.Millisecond)
	for {
		left, err := r.st.Undelivered(context.Background(), r.n.ID, []store.ShardEndpoint{{ID: fast.Endpoint.ID, Shard: store.ShardOf(fast.Subscriber.ID)}})
		if err != nil {
			t.Fatal(err)
		}
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the fast browser's outcome was not recorded while the slow one was still being pushed")
		}
		time.Sleep(5 * time.Millisecond)
	}
	select {
	case err := <-pushed:
		t.Fatalf("Push returned (%v) before the slow browser answered", err)
	default:
	}
	if err := <-pushed; err != nil {
		t.Fatal(err)
	}
	if got, want := r.counters(), (store.Counters{Recipients: 2, Processed: 2, Sent: 2}); got != want {
		t.Fatalf("counters %+v, want %+v", got, want)
	}
}

// countingStore counts the writes of push results.
type countingStore struct {
	Store
	mu     sync.Mutex
	writes int
}

func (c *countingStore) RecordResults(ctx context.Context, id string, results []store.PushResult) error {
	c.mu.Lock()
	c.writes++
	c.mu.Unlock()
	return c.Store.RecordResults(ctx, id, results)
}

// Batches going out together share their writes: the outcomes of ten
// batches of twenty browsers are recorded in one write once RecordEvery
// (200) of them are in, not in one or more per batch.
func TestBatchesShareWrites(t *testing.T) {
	r := newRig(t, Config{RecordEvery: 200, RecordAfter: time.Hour})
	cs := &countingStore{Store: r.st}
	r.p.store = cs
	var batches []Batch
	for range 10 {
		b := Batch{NotificationID: r.n.ID, WebsiteID: r.site.ID}
		for range 20 {
			_, rc := r.browser(webpushtest.Behavior{})
			b.Recipients = append(b.Recipients, rc)
		}
		batches = append(batches, b)
	}
	var wg sync.WaitGroup
	for _, b := range batches {
		wg.Go(func() {
			if err := r.p.Push(context.Background(), b); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if got, want := r.counters(), (store.Counters{Recipients: 200, Processed: 200, Sent: 200}); got != want {
		t.Fatalf("counters %+v, want %+v", got, want)
	}
	if cs.writes != 1 {
		t.Fatalf("%d writes for 10 batches going out together, want 1", cs.writes)
	}
}

// allCountingStore counts the writes of push results, of one send or of
// several (RecordAllResults).
type allCountingStore struct {
	*storesqlite.Store
	mu            sync.Mutex
	writes, sends int
}

func (c *allCountingStore) RecordResults(ctx context.Context, id string, results []store.PushResult) error {
	c.mu.Lock()
	c.writes++
	c.sends++
	c.mu.Unlock()
	return c.Store.RecordResults(ctx, id, results)
}

func (c *allCountingStore) RecordAllResults(ctx context.Context, bySend map[string][]store.PushResult) ([]string, error) {
	c.mu.Lock()
	c.writes++
	c.sends += len(bySend)
	c.mu.Unlock()
	return c.Store.RecordAllResults(ctx, bySend)
}

// The outcomes of many one-person sends going out together are recorded
// in one write for all of them (RecordAllResults), each send counted.
func TestSendsShareWrites(t *testing.T) {
	r := newRig(t, Config{RecordEvery: 10, RecordAfter: time.Hour})
	cs := &allCountingStore{Store: r.st}
	r.p.store = cs
	var batches []Batch
	for range 10 {
		n := store.Notification{ID: uuid.NewString(), WebsiteID: r.site.ID, Status: store.StatusSending,
			Title: "Hi", Content: r.n.Content, CreatedAt: time.Now()}
		if err := r.st.CreateNotification(context.Background(), &n); err != nil {
			t.Fatal(err)
		}
		_, rc := r.browser(webpushtest.Behavior{})
		batches = append(batches, Batch{NotificationID: n.ID, WebsiteID: r.site.ID, Recipients: []store.Recipient{rc}})
	}
	var wg sync.WaitGroup
	for _, b := range batches {
		wg.Go(func() {
			if err := r.p.Push(context.Background(), b); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for _, b := range batches {
		n, err := r.st.NotificationByID(context.Background(), b.NotificationID)
		if err != nil {
			t.Fatal(err)
		}
		if want := (store.Counters{Recipients: 1, Processed: 1, Sent: 1}); n.Counters != want {
			t.Fatalf("%s: counters %+v, want %+v", n.ID, n.Counters, want)
		}
	}
	if cs.writes != 1 || cs.sends != 10 {
		t.Fatalf("%d writes for 10 sends' batches going out together (%d sends), want 1", cs.writes, cs.sends)
	}
}

// Close fails the batches whose outcomes it did not record, so that they
// are pushed again, and does not hang.
func TestCloseFailsUnrecordedBatches(t *testing.T) {
	r := newRig(t, Config{RecordAfter: time.Hour})
	_, rc := r.browser(webpushtest.Behavior{})
	pushed := make(chan error, 1)
	go func() {
		pushed <- r.p.Push(context.Background(), Batch{NotificationID: r.n.ID, WebsiteID: r.site.ID, Recipients: []store.Recipient{rc}})
	}()
	time.Sleep(200 * time.Millisecond) // pushed, waiting for the hour to pass
	r.p.Close()
	select {
	case err := <-pushed:
		if !errors.Is(err, errClosed) {
			t.Fatalf("Push = %v, want errClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Push still waiting after Close")
	}
	if got := r.counters(); got.Sent != 0 {
		t.Fatalf("counters %+v: recorded after Close", got)
	}
}

// gatedStore holds the first write of push results until release is
// closed, and tracks how many writes go on at once.
type gatedStore struct {
	Store
	entered, release chan struct{}

	mu             sync.Mutex
	sizes          []int
	active, atOnce int
}

func (g *gatedStore) RecordResults(ctx context.Context, id string, results []store.PushResult) error {
	g.mu.Lock()
	g.sizes = append(g.sizes, len(results))
	first := len(g.sizes) == 1
	g.active++
	g.atOnce = max(g.atOnce, g.active)
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.active--
		g.mu.Unlock()
	}()
	if first {
		close(g.entered)
		<-g.release
	}
	return g.Store.RecordResults(ctx, id, results)
}

// One write goes on at a time, and the outcomes that come in during it go
// together in the next one as soon as it ends, without waiting RecordAfter
// again: a slow store makes writes larger, not more numerous or concurrent.
func TestOutcomesGatherDuringAWrite(t *testing.T) {
	r := newRig(t, Config{RecordEvery: 3, RecordAfter: time.Hour})
	gs := &gatedStore{Store: r.st, entered: make(chan struct{}), release: make(chan struct{})}
	r.p.store = gs
	push := func(wg *sync.WaitGroup, n int) {
		b := Batch{NotificationID: r.n.ID, WebsiteID: r.site.ID}
		for range n {
			_, rc := r.browser(webpushtest.Behavior{})
			b.Recipients = append(b.Recipients, rc)
		}
		wg.Go(func() {
			if err := r.p.Push(context.Background(), b); err != nil {
				t.Error(err)
			}
		})
	}
	var wg sync.WaitGroup
	push(&wg, 3) // RecordEvery outcomes: written at once, and held
	<-gs.entered
	push(&wg, 1)
	push(&wg, 1)
	sent := r.p.pushes.WithLabelValues(store.OutcomeSent)
	for deadline := time.Now().Add(10 * time.Second); testutil.ToFloat64(sent) < 5; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%v of 5 pushes sent", testutil.ToFloat64(sent))
		}
	}
	time.Sleep(200 * time.Millisecond) // each outcome goes to the recorder right after its push is counted
	close(gs.release)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the outcomes gathered during the first write were not written after it")
	}
	if got, want := r.counters(), (store.Counters{Recipients: 5, Processed: 5, Sent: 5}); got != want {
		t.Fatalf("counters %+v, want %+v", got, want)
	}
	if !slices.Equal(gs.sizes, []int{3, 2}) || gs.atOnce != 1 {
		t.Fatalf("writes of %v outcomes, %d at once; want [3 2], 1 at once", gs.sizes, gs.atOnce)
	}
}

// A batch's slots each push to its next endpoint until none is left: with
// one slot, or with part of the batch recorded already, every endpoint
// still to do is pushed exactly once and the recorded ones not again.
func TestPushAllTakesEachEndpointOnce(t *testing.T) {
	for _, concurrency := range []int{1, 3, 512} {
		t.Run(fmt.Sprint(concurrency), func(t *testing.T) {
			r := newRig(t, Config{Concurrency: concurrency})
			var browsers []*webpushtest.Browser
			batch := Batch{NotificationID: r.n.ID, WebsiteID: r.site.ID}
			for range 12 {
				br, rc := r.browser(webpushtest.Behavior{})
				browsers = append(browsers, br)
				batch.Recipients = append(batch.Recipients, rc)
			}
			var done []store.PushResult // every third, recorded by an earlier try
			for i := 0; i < len(batch.Recipients); i += 3 {
				rc := batch.Recipients[i]
				done = append(done, store.PushResult{EndpointID: rc.Endpoint.ID, Outcome: store.OutcomeSent, Shard: store.ShardOf(rc.Subscriber.ID)})
			}
			if err := r.st.RecordResults(context.Background(), r.n.ID, done); err != nil {
				t.Fatal(err)
			}
			if err := r.p.Push(context.Background(), batch); err != nil {
				t.Fatal(err)
			}
			for i, br := range browsers {
				want := 1
				if i%3 == 0 {
					want = 0
				}
				if got := len(br.Received()); got != want {
					t.Errorf("browser %d received %d pushes, want %d", i, got, want)
				}
			}
			if got, want := r.counters(), (store.Counters{Recipients: 12, Processed: 12, Sent: 12}); got != want {
				t.Fatalf("counters %+v, want %+v", got, want)
			}
			if n := len(r.p.slots); n != 0 {
				t.Fatalf("%d slots still taken after the batch", n)
			}
		})
	}
}

// A batch whose context ends while it goes out returns the context's error
// at once and gives every slot back.
func TestPushAllCanceled(t *testing.T) {
	r := newRig(t, Config{Concurrency: 2})
	batch := Batch{NotificationID: r.n.ID, WebsiteID: r.site.ID}
	for range 6 {
		_, rc := r.browser(webpushtest.Behavior{Delay: time.Minute})
		batch.Recipients = append(batch.Recipients, rc)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := r.p.Push(ctx, batch); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Push = %v, want the context's deadline", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("Push returned %s after its context ended", d)
	}
	if n := len(r.p.slots); n != 0 {
		t.Fatalf("%d slots still taken after the batch", n)
	}
	if got := r.counters(); got.Processed != 0 {
		t.Fatalf("counters %+v: canceled pushes recorded", got)
	}
}
