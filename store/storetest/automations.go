package storetest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/store"
)

var automationCases = []testCase{
	{"CRUD", testAutomationCRUD},
	{"TriggerRestart", testAutomationTrigger},
	{"ClaimAndFire", testAutomationClaimFire},
	{"FireTimers", testAutomationFireTimers},
	{"Stop", testAutomationStop},
	{"Caps", testAutomationCaps},
	{"CapsConcurrent", testAutomationCapsConcurrent},
	{"CountsExact", testAutomationCountsConcurrent},
	{"PersonAudience", testPersonAudience},
	{"OptedIn", testSubscriptionOptedIn},
	{"SegmentMembers", testSegmentMembers},
	{"TriggerRedo", testTriggerRedo},
	{"DefinitionsVersion", testDefinitionsVersion},
}

// definitionsMoved returns a check that the definitions version moved (or
// not, as want says) since the last check, or since now.
func definitionsMoved(t *testing.T, s store.Store) func(what string, want bool) {
	ctx := context.Background()
	last, err := s.DefinitionsVersion(ctx)
	noErr(t, "DefinitionsVersion", err)
	return func(what string, want bool) {
		t.Helper()
		v, err := s.DefinitionsVersion(ctx)
		noErr(t, "DefinitionsVersion", err)
		if got := v != last; got != want {
			t.Fatalf("%s: version %d -> %d, moved %v, want %v", what, last, v, got, want)
		}
		last = v
	}
}

// testDefinitionsVersion: the definitions version moves with every change
// to an automation, a goal, a segment or identity verification, and not
// with a run started or a person registering.
func testDefinitionsVersion(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	moved := definitionsMoved(t, s)
	a := newAutomation(t, s, w.Website.ID, at(0))
	moved("an automation created", true)
	a.Status = store.AutomationPaused
	noErr(t, "UpdateAutomation", s.UpdateAutomation(ctx, a))
	moved("an automation paused", true)
	p := subscribe(t, s, subscription(w.Website.ID))
	moved("a registration", false)
	a.Status = store.AutomationActive
	noErr(t, "UpdateAutomation", s.UpdateAutomation(ctx, a))
	moved("an automation active again", true)
	_, err := s.TriggerAutomation(ctx, store.AutomationTrigger{WebsiteID: w.Website.ID, AutomationID: a.ID, SubscriberID: p.SubscriberID,
		RunID: uuid.NewString(), Delays: []time.Duration{time.Hour}, At: at(time.Minute)})
	noErr(t, "TriggerAutomation", err)
	moved("a run started", false)
	noErr(t, "DeleteAutomation", s.DeleteAutomation(ctx, w.Website.ID, a.ID))
	moved("an automation deleted", true)
	noErr(t, "CreateGoal", s.CreateGoal(ctx, store.Goal{ID: uuid.NewString(), WebsiteID: w.Website.ID, Name: "Sale", Event: "purchase",
		WindowHours: 24, CreatedAt: at(0), UpdatedAt: at(0)}))
	moved("a goal created", true)
	noErr(t, "CreateSegment", s.CreateSegment(ctx, store.Segment{ID: uuid.NewString(), WebsiteID: w.Website.ID, Name: "All",
		Filters: []byte(`{}`), CreatedAt: at(0)}))
	moved("a segment created", true)
	_, err = s.UpdateIdentityVerification(ctx, w.Website.ID, func(iv *store.IdentityVerification) error {
		iv.Mode = store.IdentityEnforce
		iv.Secrets = []store.IdentitySecret{{Secret: "rbid_one", CreatedAt: at(time.Second)}}
		return nil
	})
	noErr(t, "UpdateIdentityVerification", err)
	moved("identity verification enforced", true)
}

// newAutomation stores an active automation of the website.
func newAutomation(t *testing.T, s store.Store, websiteID string, created time.Time) store.Automation {
	t.Helper()
	a := store.Automation{ID: uuid.NewString(), WebsiteID: websiteID, Name: "Cart", Status: store.AutomationActive,
		TriggerType: "event", Definition: []byte(`{"trigger":{"type":"event","event":"cart.updated"}}`),
		CreatedAt: created, UpdatedAt: created}
	noErr(t, "CreateAutomation", s.CreateAutomation(context.Background(), a))
	return a
}

func testAutomationCRUD(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	a := newAutomation(t, s, w.Website.ID, at(time.Minute))
	b := newAutomation(t, s, w.Website.ID, at(2*time.Minute))
	list, err := s.ListAutomations(ctx, w.Website.ID)
	noErr(t, "ListAutomations", err)
	if len(list) != 2 || list[0].ID != b.ID || list[1].ID != a.ID {
		t.Fatalf("ListAutomations = %+v, want newest first", list)
	}
	same(t, "listed automation", list[1], a)
	got, err := s.Automation(ctx, w.Website.ID, a.ID)
	noErr(t, "Automation", err)
	same(t, "automation", got, a)

	a.Name, a.Status, a.TriggerType, a.Definition, a.UpdatedAt = "Welcome", store.AutomationPaused, "subscribed",
		[]byte(`{"trigger":{"type":"subscribed"}}`), at(time.Hour)
	noErr(t, "UpdateAutomation", s.UpdateAutomation(ctx, a))
	got, err = s.Automation(ctx, w.Website.ID, a.ID)
	noErr(t, "Automation", err)
	same(t, "updated automation", got, a)
	active, err := s.ActiveAutomations(ctx, w.Website.ID)
	noErr(t, "ActiveAutomations", err)
	if len(active) != 1 || active[0].ID != b.ID {
		t.Fatalf("ActiveAutomations = %+v, want b alone", active)
	}
	if active, _ := s.ActiveAutomations(ctx, w.Website.ID, "subscribed"); len(active) != 0 {
		t.Fatalf("ActiveAutomations(subscribed) = %+v", active)
	}

	w2 := newWebsite(t, s)
	_, err = s.Automation(ctx, w2.Website.ID, a.ID)
	wantErr(t, "Automation(other website)", err, store.ErrNotFound)
	other := a
	other.WebsiteID = w2.Website.ID
	wantErr(t, "UpdateAutomation(other website)", s.UpdateAutomation(ctx, other), store.ErrNotFound)
	wantErr(t, "DeleteAutomation(other website)", s.DeleteAutomation(ctx, w2.Website.ID, a.ID), store.ErrNotFound)
	noErr(t, "DeleteAutomation", s.DeleteAutomation(ctx, w.Website.ID, a.ID))
	wantErr(t, "DeleteAutomation(again)", s.DeleteAutomation(ctx, w.Website.ID, a.ID), store.ErrNotFound)
	if list, _ := s.ListAutomations(ctx, w.Website.ID); len(list) != 1 {
		t.Fatalf("after delete: %+v", list)
	}
}

// trigger starts a run of two messages, a minute and an hour after at.
func trigger(t *testing.T, s store.Store, a store.Automation, subscriberID string, restart bool, when time.Time) (string, bool) {
	t.Helper()
	run := uuid.NewString()
	ok, err := s.TriggerAutomation(context.Background(), store.AutomationTrigger{WebsiteID: a.WebsiteID, AutomationID: a.ID,
		SubscriberID: subscriberID, RunID: run, Restart: restart, Delays: []time.Duration{time.Minute, time.Hour}, At: when})
	noErr(t, "TriggerAutomation", err)
	return run, ok
}

func automationStats(t *testing.T, s store.Store, a store.Automation) store.AutomationStats {
	t.Helper()
	got, err := s.Automation(context.Background(), a.WebsiteID, a.ID)
	noErr(t, "Automation", err)
	return got.Stats
}

func testAutomationTrigger(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	p := subscribe(t, s, subscription(w.Website.ID))
	a := newAutomation(t, s, w.Website.ID, at(0))
	first, ok := trigger(t, s, a, p.SubscriberID, false, at(time.Minute))
	if !ok {
		t.Fatal("first trigger did not start")
	}
	if _, ok := trigger(t, s, a, p.SubscriberID, false, at(2*time.Minute)); ok {
		t.Fatal("a trigger without restart started during a pending run")
	}
	second, ok := trigger(t, s, a, p.SubscriberID, true, at(3*time.Minute))
	if !ok {
		t.Fatal("a trigger with restart did not start")
	}
	if st := automationStats(t, s, a); st != (store.AutomationStats{Triggered: 2, Pending: 2}) {
		t.Fatalf("stats %+v", st)
	}
	timers, err := s.ClaimTimers(ctx, at(24*time.Hour), time.Minute, 10)
	noErr(t, "ClaimTimers", err)
	slices.SortFunc(timers, func(x, y store.Timer) int { return x.Due.Compare(y.Due) })
	want := []store.Timer{
		{RunID: second, Item: 0, Kind: store.TimerAutomation, WebsiteID: w.Website.ID, AutomationID: a.ID, SubscriberID: p.SubscriberID, Due: at(4 * time.Minute)},
		{RunID: second, Item: 1, Kind: store.TimerAutomation, WebsiteID: w.Website.ID, AutomationID: a.ID, SubscriberID: p.SubscriberID, Due: at(3*time.Minute + time.Hour)},
	}
	same(t, "timers after a restart", timers, want)
	_ = first

	// Another website's person or automation: ErrNotFound, nothing stored.
	w2 := newWebsite(t, s)
	_, err = s.TriggerAutomation(ctx, store.AutomationTrigger{WebsiteID: w2.Website.ID, AutomationID: a.ID, SubscriberID: p.SubscriberID,
		RunID: uuid.NewString(), Delays: []time.Duration{0}, At: at(0)})
	wantErr(t, "TriggerAutomation(other website)", err, store.ErrNotFound)
}

func testAutomationClaimFire(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	p := subscribe(t, s, subscription(w.Website.ID))
	a := newAutomation(t, s, w.Website.ID, at(0))
	trigger(t, s, a, p.SubscriberID, true, at(0))
	due, ok, err := s.NextTimerDue(ctx)
	noErr(t, "NextTimerDue", err)
	if !ok || !due.Equal(at(time.Minute)) {
		t.Fatalf("NextTimerDue = %v %v, want %v", due, ok, at(time.Minute))
	}
	if got, _ := s.ClaimTimers(ctx, at(59*time.Second), time.Minute, 10); len(got) != 0 {
		t.Fatalf("claimed %+v before it was due", got)
	}
	got, err := s.ClaimTimers(ctx, at(time.Minute), time.Minute, 10)
	noErr(t, "ClaimTimers", err)
	if len(got) != 1 || got[0].Item != 0 {
		t.Fatalf("ClaimTimers = %+v, want item 0", got)
	}
	// Leased: NextTimerDue passes over it, and nobody else gets it until
	// the lease runs out.
	if due, ok, err := s.NextTimerDue(ctx); err != nil || !ok || !due.Equal(at(time.Hour)) {
		t.Fatalf("NextTimerDue = %v %v %v, want item 1's %v", due, ok, err, at(time.Hour))
	}
	if again, _ := s.ClaimTimers(ctx, at(time.Minute+59*time.Second), time.Minute, 10); len(again) != 0 {
		t.Fatalf("claimed a leased timer: %+v", again)
	}
	again, err := s.ClaimTimers(ctx, at(2*time.Minute), time.Minute, 10)
	noErr(t, "ClaimTimers(lease ran out)", err)
	if len(again) != 1 || again[0] != got[0] {
		t.Fatalf("ClaimTimers after the lease = %+v, want %+v", again, got[0])
	}

	n := notification(w.Website.ID)
	n.Automation, n.AutomationID, n.SendBody = true, a.ID, nil
	n.Target = []byte(`{"subscriberId":"` + p.SubscriberID + `"}`)
	// A failure before the commit leaves the timer and stores nothing.
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.FireTimer(cancelled, got[0], store.Fire{Notification: &n, At: at(2 * time.Minute)}); err == nil {
		t.Fatal("FireTimer with a cancelled context succeeded")
	}
	if _, err := s.NotificationByID(ctx, n.ID); err == nil {
		t.Fatal("a failed FireTimer stored its notification")
	}
	outcome, err := s.FireTimer(ctx, got[0], store.Fire{Notification: &n, At: at(2 * time.Minute)})
	noErr(t, "FireTimer", err)
	if outcome != store.LedgerSent {
		t.Fatalf("outcome %q", outcome)
	}
	stored := getNotification(t, s, n.ID)
	if stored.AutomationID != a.ID || !stored.Automation || stored.SendBody != nil {
		t.Fatalf("stored %+v", stored)
	}
	// Again (a node whose lease ran out): nothing more.
	n2 := notification(w.Website.ID)
	outcome, err = s.FireTimer(ctx, got[0], store.Fire{Notification: &n2, At: at(3 * time.Minute)})
	noErr(t, "FireTimer(again)", err)
	if outcome != "" {
		t.Fatalf("outcome of a redo %q", outcome)
	}
	if _, err := s.NotificationByID(ctx, n2.ID); err == nil {
		t.Fatal("a redo stored a notification")
	}
	noErr(t, "RecordResults", recordResults(s, ctx, n.ID, []store.PushResult{{EndpointID: p.EndpointID, Outcome: store.OutcomeSent}}))
	if st := automationStats(t, s, a); st != (store.AutomationStats{Triggered: 1, Pending: 1, Sent: 1}) {
		t.Fatalf("stats %+v", st)
	}
	// Without a notification the item is skipped, and done.
	rest, err := s.ClaimTimers(ctx, at(2*time.Hour), time.Minute, 10)
	noErr(t, "ClaimTimers", err)
	outcome, err = s.FireTimer(ctx, rest[0], store.Fire{At: at(2 * time.Hour)})
	noErr(t, "FireTimer(skip)", err)
	if outcome != store.LedgerSkipped {
		t.Fatalf("outcome %q", outcome)
	}
	if _, ok, _ := s.NextTimerDue(ctx); ok {
		t.Fatal("a timer is left")
	}
}

// testAutomationFireTimers: a batch fires each timer as FireTimer would,
// in one transaction: sent (notification stored, with its seq), skipped,
// capped (through FireTimer), a timer gone meanwhile and one named twice
// doing nothing; a failed batch stores nothing; a redo of the batch
// nothing more.
func testAutomationFireTimers(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	a := newAutomation(t, s, w.Website.ID, at(0))
	var people []string
	for range 4 {
		p := subscribe(t, s, subscription(w.Website.ID))
		trigger(t, s, a, p.SubscriberID, true, at(0))
		people = append(people, p.SubscriberID)
	}
	timers, err := s.ClaimTimers(ctx, at(time.Minute), time.Minute, 10)
	noErr(t, "ClaimTimers", err)
	if len(timers) != 4 {
		t.Fatalf("claimed %d timers, want 4", len(timers))
	}
	// The fourth person's run was stopped after the claim.
	stop := slices.IndexFunc(timers, func(tm store.Timer) bool { return tm.SubscriberID == people[3] })
	if _, err := s.StopAutomations(ctx, w.Website.ID, people[3], []string{a.ID}, at(time.Minute)); err != nil {
		t.Fatal(err)
	}
	fires := make([]store.TimerFire, 0, 5)
	var ns []*store.Notification
	for i, tm := range timers {
		f := store.Fire{At: at(2 * time.Minute)}
		if i != 1 { // the second is skipped
			n := notification(w.Website.ID)
			n.Automation, n.AutomationID, n.SendBody = true, a.ID, nil
			n.Target = []byte(`{"subscriberId":"` + tm.SubscriberID + `"}`)
			f.Notification = &n
			ns = append(ns, &n)
		}
		if i == 2 {
			f.Caps = store.AutomationCaps{PerDay: 5}
		}
		fires = append(fires, store.TimerFire{Timer: tm, Fire: f})
	}
	fires = append(fires, fires[0]) // named twice
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.FireTimers(cancelled, fires); err == nil {
		t.Fatal("FireTimers with a cancelled context succeeded")
	}
	for _, n := range ns {
		if _, err := s.NotificationByID(ctx, n.ID); err == nil {
			t.Fatal("a failed FireTimers stored a notification")
		}
	}
	outcomes, err := s.FireTimers(ctx, fires)
	noErr(t, "FireTimers", err)
	want := []string{store.LedgerSent, store.LedgerSkipped, store.LedgerSent, store.LedgerSent, ""}
	want[stop] = ""
	if !slices.Equal(outcomes, want) {
		t.Fatalf("outcomes %q, want %q", outcomes, want)
	}
	for i, f := range fires[:4] {
		if f.Fire.Notification == nil {
			continue
		}
		got, err := s.NotificationByID(ctx, f.Fire.Notification.ID)
		if i == stop {
			if err == nil {
				t.Fatal("a stopped timer's notification was stored")
			}
			continue
		}
		noErr(t, "NotificationByID", err)
		if got.Seq == 0 || got.Seq != f.Fire.Notification.Seq || got.AutomationID != a.ID || !got.Automation {
			t.Fatalf("stored %+v, seq set %d", got, f.Fire.Notification.Seq)
		}
	}
	again, err := s.FireTimers(ctx, fires[:4])
	noErr(t, "FireTimers(again)", err)
	if !slices.Equal(again, []string{"", "", "", ""}) {
		t.Fatalf("a redo's outcomes %q", again)
	}
}

func testAutomationStop(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	p := subscribe(t, s, subscription(w.Website.ID))
	q := subscribe(t, s, subscription(w.Website.ID))
	a := newAutomation(t, s, w.Website.ID, at(0))
	b := newAutomation(t, s, w.Website.ID, at(0))
	trigger(t, s, a, p.SubscriberID, true, at(0))
	trigger(t, s, a, q.SubscriberID, true, at(0))
	trigger(t, s, b, p.SubscriberID, true, at(0))
	n, err := s.StopAutomations(ctx, w.Website.ID, p.SubscriberID, []string{a.ID}, at(time.Second))
	noErr(t, "StopAutomations", err)
	if n != 1 {
		t.Fatalf("stopped %d, want 1", n)
	}
	if n, _ := s.StopAutomations(ctx, w.Website.ID, p.SubscriberID, []string{a.ID}, at(time.Second)); n != 0 {
		t.Fatalf("stopped %d again", n)
	}
	if st := automationStats(t, s, a); st != (store.AutomationStats{Triggered: 2, Pending: 2, Stopped: 1}) {
		t.Fatalf("a stats %+v", st)
	}
	if st := automationStats(t, s, b); st != (store.AutomationStats{Triggered: 1, Pending: 2}) {
		t.Fatalf("b stats %+v", st)
	}
	// Another website stops nothing.
	w2 := newWebsite(t, s)
	if n, _ := s.StopAutomations(ctx, w2.Website.ID, q.SubscriberID, []string{a.ID}, at(time.Second)); n != 0 {
		t.Fatalf("another website stopped %d", n)
	}
	// A stopped run's claimed timer fires nothing.
	timers, err := s.ClaimTimers(ctx, at(time.Hour), time.Minute, 10)
	noErr(t, "ClaimTimers", err)
	if len(timers) != 4 {
		t.Fatalf("claimed %d, want 4 (q's of a, p's of b)", len(timers))
	}
	noErr(t, "StopAutomations", func() error {
		_, err := s.StopAutomations(ctx, w.Website.ID, q.SubscriberID, []string{a.ID}, at(time.Hour))
		return err
	}())
	for _, tm := range timers {
		n := notification(w.Website.ID)
		outcome, err := s.FireTimer(ctx, tm, store.Fire{Notification: &n, At: at(time.Hour)})
		noErr(t, "FireTimer", err)
		if want := map[bool]string{true: "", false: store.LedgerSent}[tm.AutomationID == a.ID]; outcome != want {
			t.Fatalf("timer %+v: outcome %q, want %q", tm, outcome, want)
		}
	}
}

func testAutomationCaps(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	p := subscribe(t, s, subscription(w.Website.ID))
	a := newAutomation(t, s, w.Website.ID, at(0))
	caps := store.AutomationCaps{PerDay: 1, PerWeek: 2}
	var outcomes []string
	for day := range 4 {
		start := at(time.Duration(day) * 24 * time.Hour)
		trigger(t, s, a, p.SubscriberID, true, start)
		timers, err := s.ClaimTimers(ctx, start.Add(2*time.Hour), time.Minute, 10)
		noErr(t, "ClaimTimers", err)
		slices.SortFunc(timers, func(x, y store.Timer) int { return x.Item - y.Item })
		for _, tm := range timers {
			n := notification(w.Website.ID)
			outcome, err := s.FireTimer(ctx, tm, store.Fire{Notification: &n, Caps: caps, At: tm.Due})
			noErr(t, "FireTimer", err)
			outcomes = append(outcomes, outcome)
		}
	}
	want := []string{"sent", "capped", "sent", "capped", "capped", "capped", "capped", "capped"}
	if !slices.Equal(outcomes, want) {
		t.Fatalf("outcomes %v, want %v", outcomes, want)
	}
	// Purged, the ledger counts nothing: the next message goes.
	n, err := s.PurgeLedger(ctx, at(5*24*time.Hour))
	noErr(t, "PurgeLedger", err)
	if n != 8 {
		t.Fatalf("purged %d ledger rows, want 8", n)
	}
	start := at(5 * 24 * time.Hour)
	trigger(t, s, a, p.SubscriberID, true, start)
	timers, err := s.ClaimTimers(ctx, start.Add(time.Minute), time.Minute, 10)
	noErr(t, "ClaimTimers", err)
	nt := notification(w.Website.ID)
	if outcome, err := s.FireTimer(ctx, timers[0], store.Fire{Notification: &nt, Caps: caps, At: timers[0].Due}); err != nil || outcome != store.LedgerSent {
		t.Fatalf("after the purge: %q %v", outcome, err)
	}
}

func testPersonAudience(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	in := subscription(w.Website.ID)
	in.ExternalID = "ada"
	p := subscribe(t, s, in)
	in2 := subscription(w.Website.ID)
	in2.ExternalID = "ada"
	p2 := subscribe(t, s, in2) // Ada's second browser
	subscribe(t, s, subscription(w.Website.ID))
	var got []string
	for shard := range store.Shards {
		page, err := s.Audience(ctx, store.AudienceQuery{WebsiteID: w.Website.ID, Shard: shard, SubscriberID: p.SubscriberID})
		noErr(t, "Audience", err)
		for _, r := range page {
			got = append(got, r.Endpoint.ID)
		}
	}
	slices.Sort(got)
	want := []string{p.EndpointID, p2.EndpointID}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("audience %v, want Ada's browsers %v", got, want)
	}
	people := 0
	noErr(t, "Reachable", s.Reachable(ctx, store.ReachQuery{WebsiteID: w.Website.ID, Shard: store.AllShards, SubscriberID: p.SubscriberID},
		func(sub *store.Subscriber, browsers int) {
			if sub.ID != p.SubscriberID || browsers != 2 {
				t.Errorf("reached %s with %d browsers", sub.ID, browsers)
			}
			people++
		}))
	if people != 1 {
		t.Fatalf("reached %d people", people)
	}
	// Another website's person: nobody.
	w2 := newWebsite(t, s)
	for shard := range store.Shards {
		if page, _ := s.Audience(ctx, store.AudienceQuery{WebsiteID: w2.Website.ID, Shard: shard, SubscriberID: p.SubscriberID}); len(page) != 0 {
			t.Fatalf("another website reached %+v", page)
		}
	}
}

func testSubscriptionOptedIn(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	news, _, err := s.SaveTopic(ctx, store.Topic{ID: uuid.NewString(), WebsiteID: w.Website.ID, Name: "News", Slug: "news", CreatedAt: at(0)})
	noErr(t, "SaveTopic", err)
	sale, _, err := s.SaveTopic(ctx, store.Topic{ID: uuid.NewString(), WebsiteID: w.Website.ID, Name: "Sale", Slug: "sale", CreatedAt: at(0)})
	noErr(t, "SaveTopic", err)
	in := subscription(w.Website.ID)
	in.Topics = []string{"news"}
	if res := subscribe(t, s, in); !slices.Equal(res.OptedIn, []string{news.ID}) {
		t.Fatalf("OptedIn %v, want news", res.OptedIn)
	}
	in.Topics = []string{"news", "sale"}
	if res := subscribe(t, s, in); !slices.Equal(res.OptedIn, []string{sale.ID}) {
		t.Fatalf("OptedIn %v, want sale alone", res.OptedIn)
	}
	if res := subscribe(t, s, in); len(res.OptedIn) != 0 {
		t.Fatalf("OptedIn %v, want none", res.OptedIn)
	}
}

func testSegmentMembers(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	p := subscribe(t, s, subscription(w.Website.ID))
	q := subscribe(t, s, subscription(w.Website.ID))
	a := newAutomation(t, s, w.Website.ID, at(0))
	w2 := newWebsite(t, s)
	stranger := subscribe(t, s, subscription(w2.Website.ID))
	noErr(t, "SeedSegmentMembers", s.SeedSegmentMembers(ctx, a.ID, []string{p.SubscriberID, stranger.SubscriberID}))
	f := func(who string, in, want bool) {
		t.Helper()
		got, err := s.SetSegmentMember(ctx, a.ID, who, in)
		noErr(t, "SetSegmentMember", err)
		if got != want {
			t.Fatalf("SetSegmentMember(%s, %v) = %v, want %v", who, in, got, want)
		}
	}
	f(p.SubscriberID, true, false) // seeded: in already
	f(q.SubscriberID, true, true)  // enters
	f(q.SubscriberID, true, false) // still in
	f(q.SubscriberID, false, false)
	f(q.SubscriberID, true, true)         // back
	f(stranger.SubscriberID, true, false) // another website's person is never a member
	noErr(t, "SeedSegmentMembers", s.SeedSegmentMembers(ctx, a.ID, nil))
	f(p.SubscriberID, true, true) // the seed replaced the members

	// A journey watches with the same rows, keyed by its own id: an
	// automation's membership is not the journey's.
	j := newJourney(t, s, w.Website.ID, at(0))
	g := func(watcher, who string, in, want bool) {
		t.Helper()
		got, err := s.SetSegmentMember(ctx, watcher, who, in)
		noErr(t, "SetSegmentMember", err)
		if got != want {
			t.Fatalf("SetSegmentMember(%s, %s, %v) = %v, want %v", watcher, who, in, got, want)
		}
	}
	noErr(t, "SeedSegmentMembers", s.SeedSegmentMembers(ctx, j.ID, []string{q.SubscriberID, stranger.SubscriberID}))
	g(j.ID, q.SubscriberID, true, false) // seeded
	g(j.ID, p.SubscriberID, true, true)  // in the automation's rows already, not the journey's
	g(j.ID, stranger.SubscriberID, true, false)
	g(uuid.NewString(), p.SubscriberID, true, false) // no such watcher
	// A watcher with members deletes (its rows go with it), and the
	// other watcher's rows stay.
	noErr(t, "DeleteAutomation", s.DeleteAutomation(ctx, w.Website.ID, a.ID))
	g(j.ID, p.SubscriberID, true, false)
	noErr(t, "DeleteJourney", s.DeleteJourney(ctx, w.Website.ID, j.ID))
	g(j.ID, p.SubscriberID, true, false) // gone: never recorded again
}

// testAutomationCapsConcurrent fires two messages of one run, due at the
// same instant, at the same time from two goroutines (two nodes, each
// holding one of the timers): with a cap of one a day, exactly one is sent
// and the other capped, every time. Without a per-person lock both counted
// an empty ledger and both were sent.
func testAutomationCapsConcurrent(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	a := newAutomation(t, s, w.Website.ID, at(0))
	caps := store.AutomationCaps{PerDay: 1, PerWeek: 5}
	const people = 30
	for i := range people {
		p := subscribe(t, s, subscription(w.Website.ID))
		start := at(time.Duration(i) * time.Second)
		_, err := s.TriggerAutomation(ctx, store.AutomationTrigger{WebsiteID: a.WebsiteID, AutomationID: a.ID,
			SubscriberID: p.SubscriberID, RunID: uuid.NewString(), Restart: true, Delays: []time.Duration{0, 0}, At: start})
		noErr(t, "TriggerAutomation", err)
		timers, err := s.ClaimTimers(ctx, start, time.Minute, 10)
		noErr(t, "ClaimTimers", err)
		if len(timers) != 2 {
			t.Fatalf("person %d: claimed %d timers, want 2", i, len(timers))
		}
		outcomes := make([]string, 2)
		errs := make([]error, 2)
		var ready, wg sync.WaitGroup
		ready.Add(2)
		release := make(chan struct{})
		for j, tm := range timers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				n := notification(w.Website.ID)
				ready.Done()
				<-release
				outcomes[j], errs[j] = s.FireTimer(ctx, tm, store.Fire{Notification: &n, Caps: caps, At: start})
			}()
		}
		ready.Wait()
		close(release)
		wg.Wait()
		for _, err := range errs {
			noErr(t, "FireTimer", err)
		}
		slices.Sort(outcomes)
		if want := []string{store.LedgerCapped, store.LedgerSent}; !slices.Equal(outcomes, want) {
			t.Fatalf("person %d: outcomes %v, want %v (one sent a day)", i, outcomes, want)
		}
	}
	if st := automationStats(t, s, a); st.Sent != 0 || st.Triggered != people || st.Pending != 0 {
		// Sent counts pushes recorded (none here); the runs are all counted.
		t.Fatalf("stats %+v", st)
	}
}

// testAutomationCountsConcurrent triggers and stops one automation for
// many people at once: triggered and stopped count each exactly.
func testAutomationCountsConcurrent(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	a := newAutomation(t, s, w.Website.ID, at(0))
	b := newAutomation(t, s, w.Website.ID, at(time.Second))
	const people, workers = 40, 8
	ids := make([]string, people)
	for i := range ids {
		ids[i] = subscribe(t, s, subscription(w.Website.ID)).SubscriberID
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4*people)
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < people; i += workers {
				for _, au := range []store.Automation{a, b} {
					// Twice each: the second restarts the run, and counts.
					for range 2 {
						if _, err := s.TriggerAutomation(ctx, store.AutomationTrigger{WebsiteID: au.WebsiteID, AutomationID: au.ID,
							SubscriberID: ids[i], RunID: uuid.NewString(), Restart: true, Delays: []time.Duration{time.Hour}, At: at(0)}); err != nil {
							errs <- err
						}
					}
				}
				if i%2 == 0 {
					if n, err := s.StopAutomations(ctx, w.Website.ID, ids[i], []string{b.ID, a.ID}, at(time.Minute)); err != nil || n != 2 {
						errs <- fmt.Errorf("StopAutomations = %d, %v", n, err)
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, au := range []store.Automation{a, b} {
		want := store.AutomationStats{Triggered: 2 * people, Stopped: people / 2, Pending: people / 2}
		if st := automationStats(t, s, au); st != want {
			t.Fatalf("stats %+v, want %+v", st, want)
		}
	}
}
