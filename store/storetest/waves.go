package storetest

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/store"
)

var waveCases = []testCase{
	{"StartSendingWithWaves", testStartSendingWithWaves},
	{"DueWaves", testDueWaves},
	{"DueWavesConcurrent", testDueWavesConcurrent},
	{"ShardDoneInWaves", testShardDoneInWaves},
	{"SoleShardDone", testSoleShardDone},
	{"ExternalIDShards", testExternalIDShards},
	{"SetABWinner", testSetABWinner},
	{"AudienceZones", testAudienceZones},
	{"LearnActivity", testLearnActivity},
}

// inWaves starts a send of the website in waves due at the given moments.
func inWaves(t *testing.T, s store.Store, websiteID string, dues ...time.Time) store.Notification {
	t.Helper()
	n := create(t, s, notification(websiteID))
	n, err := s.StartSending(context.Background(), n.ID, at(time.Hour), dues...)
	noErr(t, "StartSending", err)
	return n
}

func testStartSendingWithWaves(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	n := inWaves(t, s, w.Website.ID, at(time.Hour), at(3*time.Hour))
	if n.Status != store.StatusSending || n.Waves != 2 || n.StartedAt == nil || !n.StartedAt.Equal(at(time.Hour)) {
		t.Fatalf("started: status %s, %d waves, started %v", n.Status, n.Waves, n.StartedAt)
	}
	same(t, "read back", getNotification(t, s, n.ID), n)
	// Starting again keeps the first plan.
	again, err := s.StartSending(ctx, n.ID, at(2*time.Hour), at(5*time.Hour))
	noErr(t, "StartSending again", err)
	same(t, "started again", again, n)
	due, err := s.DueWaves(ctx, at(10*time.Hour), time.Minute, 10)
	noErr(t, "DueWaves", err)
	same(t, "waves", due, []store.Wave{
		{NotificationID: n.ID, Wave: 0, Due: at(time.Hour)},
		{NotificationID: n.ID, Wave: 1, Due: at(3 * time.Hour)},
	})
	// A send without waves has none.
	plain := sending(t, s, w.Website.ID)
	if plain.Waves != 0 || plain.ABWinner != "" {
		t.Fatalf("plain send: %d waves, winner %q", plain.Waves, plain.ABWinner)
	}
}

func testDueWaves(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	a := inWaves(t, s, w.Website.ID, at(time.Hour), at(2*time.Hour))
	b := inWaves(t, s, w.Website.ID, at(90*time.Minute))
	failed := inWaves(t, s, w.Website.ID, at(time.Hour))
	noErr(t, "FailNotification", s.FailNotification(ctx, failed.ID, "segment_missing", at(time.Hour)))

	due := func(now time.Duration, want ...store.Wave) {
		t.Helper()
		got, err := s.DueWaves(ctx, at(now), 10*time.Minute, 10)
		noErr(t, "DueWaves", err)
		if want == nil {
			want = []store.Wave{}
		}
		if got == nil {
			got = []store.Wave{}
		}
		same(t, "due waves", got, want)
	}
	due(59 * time.Minute) // nothing due yet
	due(100*time.Minute,
		store.Wave{NotificationID: a.ID, Wave: 0, Due: at(time.Hour)},
		store.Wave{NotificationID: b.ID, Wave: 0, Due: at(90 * time.Minute)})
	due(101 * time.Minute) // leased
	noErr(t, "MarkWavePublished", s.MarkWavePublished(ctx, a.ID, 0, at(101*time.Minute)))
	// b's lease ran out (its sweeper died): b is due again; a is published.
	due(110*time.Minute, store.Wave{NotificationID: b.ID, Wave: 0, Due: at(90 * time.Minute)})
	noErr(t, "MarkWavePublished", s.MarkWavePublished(ctx, b.ID, 0, at(111*time.Minute)))
	due(2*time.Hour, store.Wave{NotificationID: a.ID, Wave: 1, Due: at(2 * time.Hour)})
	wantErr(t, "MarkWavePublished(unknown)", s.MarkWavePublished(ctx, uuid.NewString(), 0, t0), store.ErrNotFound)
	wantErr(t, "MarkWavePublished(wave 5)", s.MarkWavePublished(ctx, a.ID, 5, t0), store.ErrNotFound)
}

func testDueWavesConcurrent(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	var dues []time.Time
	for i := range 30 {
		dues = append(dues, at(time.Duration(i)*time.Minute))
	}
	n := inWaves(t, s, w.Website.ID, dues...)
	var (
		mu   sync.Mutex
		seen = map[int]int{}
		wg   sync.WaitGroup
	)
	for range 8 {
		wg.Go(func() {
			for range 10 {
				got, err := s.DueWaves(ctx, at(time.Hour), time.Hour, 3)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for _, wv := range got {
					if wv.NotificationID != n.ID {
						t.Errorf("wave of %s", wv.NotificationID)
					}
					seen[wv.Wave]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(seen) != 30 {
		t.Fatalf("leased %d distinct waves, want 30", len(seen))
	}
	for wave, times := range seen {
		if times != 1 {
			t.Fatalf("wave %d leased %d times within its lease", wave, times)
		}
	}
}

func testShardDoneInWaves(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	n := inWaves(t, s, w.Website.ID, at(time.Hour), at(2*time.Hour), at(3*time.Hour))
	tasks := 3 * store.Shards
	for task := tasks - 1; task > 0; task-- {
		finished, err := s.ShardDone(ctx, n.ID, task, at(4*time.Hour))
		noErr(t, "ShardDone", err)
		if finished {
			t.Fatalf("finished at task %d", task)
		}
	}
	if _, err := s.ShardDone(ctx, n.ID, tasks, at(4*time.Hour)); err == nil {
		t.Fatalf("ShardDone(task %d) of %d succeeded", tasks, tasks)
	}
	finished, err := s.ShardDone(ctx, n.ID, 0, at(4*time.Hour))
	noErr(t, "ShardDone(0)", err)
	if !finished || getNotification(t, s, n.ID).Status != store.StatusSent {
		t.Fatal("the last task did not finish the send")
	}
}

// testSoleShardDone: a one-person send is finished by one call, with its
// notification.sent event carrying its counters; a second call, a send
// not sending and a stray ShardDone after it change nothing; a send in
// waves is refused, an unknown one not found.
func testSoleShardDone(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := listenedWebsite(t, s)
	p := subscribe(t, s, subscription(w.Website.ID))
	n := inWaves(t, s, w.Website.ID)
	noErr(t, "RecordResults", recordResults(s, ctx, n.ID, []store.PushResult{{EndpointID: p.EndpointID, Outcome: store.OutcomeSent}}))
	mark := lastSeq(t, s)
	finished, err := s.SoleShardDone(ctx, n.ID, at(2*time.Hour))
	noErr(t, "SoleShardDone", err)
	got := getNotification(t, s, n.ID)
	if !finished || got.Status != store.StatusSent || got.FinishedAt == nil || !got.FinishedAt.Equal(at(2*time.Hour)) {
		t.Fatalf("finished %v, status %s, finished at %v", finished, got.Status, got.FinishedAt)
	}
	wantSentEvent(t, s, "sole shard done", mark, w.Website.ID, sentData(n.ID, 1, 1, 0, 0), at(2*time.Hour))
	mark = lastSeq(t, s)
	if finished, err := s.SoleShardDone(ctx, n.ID, at(3*time.Hour)); err != nil || finished {
		t.Fatalf("again: finished %v, %v", finished, err)
	}
	if finished, err := s.ShardDone(ctx, n.ID, 5, at(3*time.Hour)); err != nil || finished {
		t.Fatalf("a stray ShardDone: finished %v, %v", finished, err)
	}
	same(t, "after a second call and a stray shard", getNotification(t, s, n.ID), got)
	if es := webhookEvents(t, s, mark); len(es) != 0 {
		t.Fatalf("events after the first call: %+v", es)
	}
	queued := create(t, s, notification(w.Website.ID))
	if finished, err := s.SoleShardDone(ctx, queued.ID, at(time.Hour)); err != nil || finished {
		t.Fatalf("a queued send: finished %v, %v", finished, err)
	}
	if got := getNotification(t, s, queued.ID); got.Status != store.StatusQueued {
		t.Fatalf("a queued send became %s", got.Status)
	}
	waves := inWaves(t, s, w.Website.ID, at(time.Hour), at(2*time.Hour))
	if _, err := s.SoleShardDone(ctx, waves.ID, at(time.Hour)); err == nil {
		t.Fatal("SoleShardDone of a send in waves succeeded")
	}
	if _, err := s.SoleShardDone(ctx, uuid.NewString(), at(time.Hour)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown send: %v, want ErrNotFound", err)
	}
}

// testExternalIDShards: the shards of the named people of the website,
// once each in ascending order, a person on two browsers once; an
// unknown id, another website's person and an empty list find none.
func testExternalIDShards(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	other := newWebsite(t, s)
	named := func(websiteID, externalID string) string {
		in := subscription(websiteID)
		in.ExternalID = externalID
		return subscribe(t, s, in).SubscriberID
	}
	a := named(w.Website.ID, "user-a")
	if again := named(w.Website.ID, "user-a"); again != a {
		t.Fatalf("the second browser of user-a is person %s, not %s", again, a)
	}
	b := named(w.Website.ID, "user-b")
	named(w.Website.ID, "user-c")
	elsewhere := named(other.Website.ID, "user-d")
	want := []int{store.ShardOf(a), store.ShardOf(b)}
	if want[0] > want[1] {
		want[0], want[1] = want[1], want[0]
	}
	if want[0] == want[1] {
		want = want[:1]
	}
	got, err := s.ExternalIDShards(ctx, w.Website.ID, []string{"user-b", "user-a", "nobody", "user-d", "user-a"})
	noErr(t, "ExternalIDShards", err)
	if !slices.Equal(got, want) {
		t.Fatalf("ExternalIDShards = %v, want %v", got, want)
	}
	got, err = s.ExternalIDShards(ctx, other.Website.ID, []string{"user-d"})
	noErr(t, "ExternalIDShards", err)
	if want := []int{store.ShardOf(elsewhere)}; !slices.Equal(got, want) {
		t.Fatalf("the other website's ExternalIDShards = %v, want %v", got, want)
	}
	for _, ids := range [][]string{nil, {"User-A"}, {"nobody"}} {
		if got, err := s.ExternalIDShards(ctx, w.Website.ID, ids); err != nil || len(got) != 0 {
			t.Fatalf("ExternalIDShards(%q) = %v, %v; want none", ids, got, err)
		}
	}
}

func testSetABWinner(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	n := inWaves(t, s, w.Website.ID, at(time.Hour), at(5*time.Hour))
	got, err := s.SetABWinner(ctx, n.ID, "b")
	noErr(t, "SetABWinner", err)
	same(t, "winner", got, "b")
	got, err = s.SetABWinner(ctx, n.ID, "a")
	noErr(t, "SetABWinner again", err)
	same(t, "winner after a second call", got, "b")
	same(t, "stored winner", getNotification(t, s, n.ID).ABWinner, "b")
	_, err = s.SetABWinner(ctx, uuid.NewString(), "a")
	wantErr(t, "SetABWinner(unknown)", err, store.ErrNotFound)
}

func testAudienceZones(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	other := newWebsite(t, s)
	reg := func(websiteID, tz string) store.SubscriptionResult {
		in := subscription(websiteID)
		in.Timezone = tz
		return subscribe(t, s, in)
	}
	reg(w.Website.ID, "Europe/Paris")
	reg(w.Website.ID, "Europe/Paris")
	reg(w.Website.ID, "")
	learned := reg(w.Website.ID, "Asia/Tokyo")
	noErr(t, "LearnActivity", s.LearnActivity(ctx, learned.SubscriberID, time.Date(2025, 3, 1, 11, 0, 0, 0, time.UTC), 1))
	reg(w.Website.ID, "Asia/Tokyo")
	gone := subscription(w.Website.ID)
	gone.Timezone = "America/Lima"
	subscribe(t, s, gone)
	_, err := s.DeleteSubscription(ctx, w.Website.ID, gone.Endpoint)
	noErr(t, "DeleteSubscription", err)
	reg(other.Website.ID, "America/Denver")

	zones, err := s.AudienceZones(ctx, w.Website.ID)
	noErr(t, "AudienceZones", err)
	same(t, "zones", zones, []store.Zone{
		{Timezone: ""},
		{Timezone: "Asia/Tokyo"},
		{Timezone: "Asia/Tokyo", SmartHour: ptr(20)},
		{Timezone: "Europe/Paris"},
	})
}

func testLearnActivity(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s) // Europe/Paris
	in := subscription(w.Website.ID)
	in.Timezone = "America/New_York"
	sub := subscribe(t, s, in)
	noZone := subscription(w.Website.ID)
	noZone.Timezone = ""
	site := subscribe(t, s, noZone)

	hour := func(r store.SubscriptionResult) *int {
		t.Helper()
		for shard := range store.Shards {
			rs, err := s.Audience(ctx, store.AudienceQuery{WebsiteID: w.Website.ID, Shard: shard, Limit: 100})
			noErr(t, "Audience", err)
			for _, rc := range rs {
				if rc.Endpoint.ID == r.EndpointID {
					return rc.Subscriber.SmartHour
				}
			}
		}
		t.Fatalf("endpoint %s not in the audience", r.EndpointID)
		return nil
	}
	if h := hour(sub); h != nil {
		t.Fatalf("smart hour %d before any activity", *h)
	}
	learn := func(id string, utc string, weight int) {
		t.Helper()
		when, err := time.Parse(time.DateTime, utc)
		noErr(t, "parse", err)
		noErr(t, "LearnActivity", s.LearnActivity(ctx, id, when, weight))
	}
	// 13:xx UTC is 09:xx in New York (EDT, summer) and 08:xx (EST, winter).
	learn(sub.SubscriberID, "2025-07-01 13:10:00", store.VisitWeight)
	same(t, "after one visit", hour(sub), ptr(9))
	learn(sub.SubscriberID, "2025-07-02 23:30:00", store.ClickWeight) // 19:30 local
	same(t, "after a click", hour(sub), ptr(19))
	learn(sub.SubscriberID, "2025-07-03 13:59:00", store.VisitWeight) // 09:59: a tie, the earlier hour
	same(t, "after a tie", hour(sub), ptr(9))
	// Without its own zone a subscriber's hours are the website's.
	learn(site.SubscriberID, "2025-01-10 06:00:00", store.VisitWeight) // 07:00 in Paris
	same(t, "website zone", hour(site), ptr(7))
	// Unknown subscribers are ignored.
	noErr(t, "LearnActivity(unknown)", s.LearnActivity(ctx, uuid.NewString(), t0, 1))

	// A registration with Visit learns it in its own transaction, the
	// first one included; one without learns nothing.
	visit := func(in store.SubscriptionInput, utc string, weight int) store.SubscriptionResult {
		t.Helper()
		when, err := time.Parse(time.DateTime, utc)
		noErr(t, "parse", err)
		in.At, in.Visit = when, weight
		return subscribe(t, s, in)
	}
	first := subscription(w.Website.ID)
	first.Timezone = "America/New_York"
	v := visit(first, "2025-07-01 13:10:00", store.VisitWeight)
	same(t, "after registering", hour(v), ptr(9))
	visit(first, "2025-07-02 23:30:00", store.VisitWeight)
	visit(first, "2025-07-03 23:10:00", store.VisitWeight)
	same(t, "after two visits at 19:xx", hour(v), ptr(19))
	visit(first, "2025-07-04 13:10:00", 0)
	visit(first, "2025-07-05 13:10:00", 0)
	same(t, "after registrations without a visit", hour(v), ptr(19))
	quiet := visit(subscription(w.Website.ID), "2025-07-01 13:10:00", 0)
	if h := hour(quiet); h != nil {
		t.Fatalf("smart hour %d after a registration without a visit", *h)
	}

	// The caller giving the website's zone learns the same, new
	// subscriber or known, with or without a zone of their own.
	given := subscription(w.Website.ID)
	given.Timezone, given.SiteTimezone = "America/New_York", "Europe/Paris"
	g := visit(given, "2025-07-01 13:10:00", store.VisitWeight)
	same(t, "zone given: after registering", hour(g), ptr(9))
	visit(given, "2025-07-02 23:30:00", store.VisitWeight)
	visit(given, "2025-07-03 23:10:00", store.VisitWeight)
	same(t, "zone given: after two visits at 19:xx", hour(g), ptr(19))
	given.Timezone = "" // keeps New York, as stored
	visit(given, "2025-07-04 23:20:00", store.VisitWeight)
	visit(given, "2025-07-05 13:20:00", store.VisitWeight)
	same(t, "zone given: kept zone", hour(g), ptr(19))
	siteOnly := subscription(w.Website.ID)
	siteOnly.Timezone, siteOnly.SiteTimezone = "", "Europe/Paris"
	same(t, "zone given: the website's", hour(visit(siteOnly, "2025-01-10 06:00:00", store.VisitWeight)), ptr(7))
}
