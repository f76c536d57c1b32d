package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/store"
)

var goalCases = []testCase{
	{"CRUD", testGoalCRUD},
	{"Reaches", testGoalReaches},
	{"TagMembers", testGoalTagMembers},
	{"PendingTriggers", testPendingTriggers},
}

func newGoal(t *testing.T, s store.Store, g store.Goal) store.Goal {
	t.Helper()
	g.ID = uuid.NewString()
	if g.WindowHours == 0 {
		g.WindowHours = 24
	}
	if g.CreatedAt.IsZero() {
		g.CreatedAt, g.UpdatedAt = at(0), at(0)
	}
	noErr(t, "CreateGoal", s.CreateGoal(context.Background(), g))
	g.Results = []store.GoalResult{}
	return g
}

func testGoalCRUD(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	a := newGoal(t, s, store.Goal{WebsiteID: w.Website.ID, Name: "Bought", Event: "purchase", CreatedAt: at(time.Minute), UpdatedAt: at(time.Minute)})
	b := newGoal(t, s, store.Goal{WebsiteID: w.Website.ID, Name: "VIP", TagName: "plan", TagValue: "", WindowHours: 2160,
		CreatedAt: at(2 * time.Minute), UpdatedAt: at(2 * time.Minute)})
	list, err := s.ListGoals(ctx, w.Website.ID)
	noErr(t, "ListGoals", err)
	same(t, "ListGoals, newest first", list, []store.Goal{b, a})
	got, err := s.Goal(ctx, w.Website.ID, b.ID)
	noErr(t, "Goal", err)
	same(t, "a tag goal with an empty value", got, b)

	a.Name, a.Event, a.TagName, a.TagValue, a.WindowHours, a.UpdatedAt = "Gold", "", "plan", "gold", 1, at(time.Hour)
	noErr(t, "UpdateGoal", s.UpdateGoal(ctx, a))
	got, err = s.Goal(ctx, w.Website.ID, a.ID)
	noErr(t, "Goal", err)
	same(t, "updated goal", got, a)
	if list, _ := s.EventGoals(ctx, w.Website.ID, "purchase"); len(list) != 0 {
		t.Fatalf("EventGoals after the change to a tag: %+v", list)
	}
	tags, err := s.TagGoals(ctx, w.Website.ID)
	noErr(t, "TagGoals", err)
	if len(tags) != 2 || tags[0].ID != a.ID || tags[1].ID != b.ID {
		t.Fatalf("TagGoals = %+v, want oldest first", tags)
	}

	w2 := newWebsite(t, s)
	_, err = s.Goal(ctx, w2.Website.ID, a.ID)
	wantErr(t, "Goal(other website)", err, store.ErrNotFound)
	other := a
	other.WebsiteID = w2.Website.ID
	wantErr(t, "UpdateGoal(other website)", s.UpdateGoal(ctx, other), store.ErrNotFound)
	wantErr(t, "DeleteGoal(other website)", s.DeleteGoal(ctx, w2.Website.ID, a.ID), store.ErrNotFound)
	noErr(t, "DeleteGoal", s.DeleteGoal(ctx, w.Website.ID, a.ID))
	wantErr(t, "DeleteGoal(again)", s.DeleteGoal(ctx, w.Website.ID, a.ID), store.ErrNotFound)
	if list, _ := s.ListGoals(ctx, w.Website.ID); len(list) != 1 {
		t.Fatalf("after delete: %+v", list)
	}
}

func testGoalReaches(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	other := newWebsite(t, s)
	p := subscribe(t, s, subscription(w.Website.ID))
	g := newGoal(t, s, store.Goal{WebsiteID: w.Website.ID, Name: "Bought", Event: "purchase"})
	plain := create(t, s, notification(w.Website.ID))
	auto := newAutomation(t, s, w.Website.ID, at(0))
	byAuto := notification(w.Website.ID)
	byAuto.Automation, byAuto.AutomationID = true, auto.ID
	byAuto = create(t, s, byAuto)
	theirs := create(t, s, notification(other.Website.ID))

	reach := func(key, notificationID string, value float64, want bool) {
		t.Helper()
		got, err := s.ReachGoal(ctx, store.GoalReach{GoalID: g.ID, SubscriberID: p.SubscriberID, Key: key,
			NotificationID: notificationID, Value: value, At: at(time.Hour)})
		noErr(t, "ReachGoal", err)
		if got != want {
			t.Fatalf("ReachGoal(%s) = %v, want %v", key, got, want)
		}
	}
	reach("e1", plain.ID, 10, true)
	reach("e1", plain.ID, 10, false) // once per key
	reach("e2", plain.ID, 2.5, true)
	reach("e3", byAuto.ID, 7, true)
	reach("e4", "", 100, true)        // credited to nothing
	reach("e5", theirs.ID, 100, true) // another website's send credits nothing
	got, err := s.Goal(ctx, w.Website.ID, g.ID)
	noErr(t, "Goal", err)
	same(t, "results", got.Results, []store.GoalResult{
		{Source: store.SourceNotification, ID: plain.ID, Conversions: 2, Revenue: 12.5},
		{Source: store.SourceAutomation, ID: auto.ID, Conversions: 1, Revenue: 7},
	})
	list, err := s.ListGoals(ctx, w.Website.ID)
	noErr(t, "ListGoals", err)
	same(t, "listed results", list[0].Results, got.Results)
	// A goal deleted meanwhile records nothing.
	noErr(t, "DeleteGoal", s.DeleteGoal(ctx, w.Website.ID, g.ID))
	ok, err := s.ReachGoal(ctx, store.GoalReach{GoalID: g.ID, SubscriberID: p.SubscriberID, Key: "e6", At: at(0)})
	noErr(t, "ReachGoal(deleted goal)", err)
	if ok {
		t.Fatal("a deleted goal was reached")
	}
}

func testGoalTagMembers(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	had := subscribe(t, s, subscription(w.Website.ID))
	p := subscribe(t, s, subscription(w.Website.ID))
	_, err := s.TagPeople(ctx, w.Website.ID, []string{had.SubscriberID}, map[string]string{"plan": "vip"}, nil)
	noErr(t, "TagPeople", err)
	g := newGoal(t, s, store.Goal{WebsiteID: w.Website.ID, Name: "VIP", TagName: "plan", TagValue: "vip"})
	f := func(who string, has, want bool) {
		t.Helper()
		got, err := s.ReachTagGoal(ctx, store.GoalReach{GoalID: g.ID, SubscriberID: who, Key: "tag:" + uuid.NewString(), At: at(0)}, has)
		noErr(t, "ReachTagGoal", err)
		if got != want {
			t.Fatalf("ReachTagGoal(%s, %v) = %v, want %v", who, has, got, want)
		}
	}
	f(had.SubscriberID, true, false) // had it when the goal was made
	f(p.SubscriberID, true, true)
	f(p.SubscriberID, true, false) // still has it
	f(p.SubscriberID, false, false)
	f(p.SubscriberID, true, true) // again after losing it
	// Changing the goal records again who has the value now.
	g.TagValue, g.UpdatedAt = "gold", at(time.Hour)
	noErr(t, "UpdateGoal", s.UpdateGoal(ctx, g))
	f(p.SubscriberID, true, true)
	stranger := subscribe(t, s, subscription(newWebsite(t, s).Website.ID))
	f(stranger.SubscriberID, true, false) // another website's person
}

func testPendingTriggers(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	news, _, err := s.SaveTopic(ctx, store.Topic{ID: uuid.NewString(), WebsiteID: w.Website.ID, Name: "News", Slug: "news", CreatedAt: at(0)})
	noErr(t, "SaveTopic", err)
	// Without an active automation of the type, nothing is stored.
	in := subscription(w.Website.ID)
	in.Topics, in.At = []string{"news"}, at(time.Minute)
	if res := subscribe(t, s, in); res.Pending {
		t.Fatal("a registration with no automation: Pending")
	}
	if list, err := s.PendingTriggers(ctx, w.Website.ID, "", 0); err != nil || len(list) != 0 {
		t.Fatalf("PendingTriggers with no automation = %+v, %v", list, err)
	}
	for _, typ := range []string{store.TriggerSubscribed, store.TriggerTopicOptIn} {
		a := store.Automation{ID: uuid.NewString(), WebsiteID: w.Website.ID, Name: typ, Status: store.AutomationActive,
			TriggerType: typ, Definition: []byte(`{}`), CreatedAt: at(0), UpdatedAt: at(0)}
		noErr(t, "CreateAutomation", s.CreateAutomation(ctx, a))
	}
	in = subscription(w.Website.ID)
	in.Topics, in.At = []string{"NEWS"}, at(2*time.Minute)
	p := subscribe(t, s, in)
	// The same browser again: nothing more, the first's still pending.
	if again := subscribe(t, s, in); !p.Pending || !again.Pending {
		t.Fatalf("Pending %v, then %v registering again: want both", p.Pending, again.Pending)
	}
	// Another person's browser, with nothing to trigger (no new browser,
	// no new opt-in), has nothing pending.
	quiet := subscription(w.Website.ID)
	quiet.At = at(2 * time.Minute)
	q := subscribe(t, s, quiet)
	ql, err := s.PendingTriggers(ctx, w.Website.ID, q.SubscriberID, 0)
	noErr(t, "PendingTriggers", err)
	for _, pt := range ql {
		noErr(t, "DoneTrigger", s.DoneTrigger(ctx, pt.ID))
	}
	if q = subscribe(t, s, quiet); q.Pending {
		t.Fatal("a known browser with its triggers done: Pending")
	}
	list, err := s.PendingTriggers(ctx, w.Website.ID, p.SubscriberID, 0)
	noErr(t, "PendingTriggers", err)
	if len(list) != 2 {
		t.Fatalf("PendingTriggers = %+v, want subscribed and the opt-in", list)
	}
	kinds := map[string]store.PendingTrigger{}
	for _, pt := range list {
		kinds[pt.TriggerType] = pt
		if pt.WebsiteID != w.Website.ID || pt.SubscriberID != p.SubscriberID || !pt.At.Equal(at(2*time.Minute)) {
			t.Fatalf("pending trigger %+v", pt)
		}
	}
	if kinds[store.TriggerSubscribed].TopicID != "" || kinds[store.TriggerTopicOptIn].TopicID != news.ID {
		t.Fatalf("pending triggers %+v", kinds)
	}
	// An import's new opt-in is stored too; one it had is not.
	_, err = s.ImportPeople(ctx, w.Website.ID, []store.ImportRow{{ExternalID: "ann", Topics: []string{"news"}}}, at(3*time.Minute))
	noErr(t, "ImportPeople", err)
	_, err = s.ImportPeople(ctx, w.Website.ID, []store.ImportRow{{ExternalID: "ann", Topics: []string{"news"}}}, at(4*time.Minute))
	noErr(t, "ImportPeople", err)
	all, err := s.PendingTriggers(ctx, w.Website.ID, "", 0)
	noErr(t, "PendingTriggers(website)", err)
	if len(all) != 3 || all[2].TriggerType != store.TriggerTopicOptIn || !all[2].At.Equal(at(3*time.Minute)) {
		t.Fatalf("PendingTriggers(website) = %+v, want the import's last", all)
	}
	if l, _ := s.PendingTriggers(ctx, w.Website.ID, "", 1); len(l) != 1 || l[0].ID != all[0].ID {
		t.Fatalf("PendingTriggers limit 1 = %+v", l)
	}
	for _, pt := range all {
		noErr(t, "DoneTrigger", s.DoneTrigger(ctx, pt.ID))
	}
	noErr(t, "DoneTrigger(again)", s.DoneTrigger(ctx, all[0].ID))
	if l, _ := s.PendingTriggers(ctx, w.Website.ID, "", 0); len(l) != 0 {
		t.Fatalf("after DoneTrigger: %+v", l)
	}
}

// testTriggerRedo: a trigger whose run id is the person's run already
// (a pending trigger done again) changes nothing, even with restart and
// once the run's timers fired.
func testTriggerRedo(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	p := subscribe(t, s, subscription(w.Website.ID))
	a := newAutomation(t, s, w.Website.ID, at(0))
	tr := store.AutomationTrigger{WebsiteID: a.WebsiteID, AutomationID: a.ID, SubscriberID: p.SubscriberID,
		RunID: uuid.NewString(), Restart: true, Delays: []time.Duration{time.Minute}, At: at(0)}
	for i, want := range []bool{true, false} {
		ok, err := s.TriggerAutomation(ctx, tr)
		noErr(t, "TriggerAutomation", err)
		if ok != want {
			t.Fatalf("trigger %d started %v, want %v", i, ok, want)
		}
	}
	if st := automationStats(t, s, a); st.Triggered != 1 || st.Pending != 1 {
		t.Fatalf("stats %+v, want one run, one timer", st)
	}
	timers, err := s.ClaimTimers(ctx, at(time.Hour), time.Minute, 10)
	noErr(t, "ClaimTimers", err)
	for _, tm := range timers {
		_, err := s.FireTimer(ctx, tm, store.Fire{At: at(time.Hour)})
		noErr(t, "FireTimer", err)
	}
	ok, err := s.TriggerAutomation(ctx, tr)
	noErr(t, "TriggerAutomation", err)
	if st := automationStats(t, s, a); ok || st.Triggered != 1 || st.Pending != 0 {
		t.Fatalf("a redo after the run ended started %v, stats %+v", ok, st)
	}
}
