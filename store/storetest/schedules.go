package storetest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/store"
)

var scheduleCases = []testCase{
	{"CRUD", testScheduleCRUD},
	{"FireOnce", testScheduleFireOnce},
	{"BudgetRefusal", testScheduleBudgetRefusal},
	{"Hold", testScheduleHold},
	{"ClaimLeases", testScheduleClaimLeases},
	{"TopicDeletedPauses", testScheduleTopicDeleted},
	{"SegmentUses", testScheduleSegmentUses},
}

// newSchedule stores an active schedule of the website due at next.
func newSchedule(t *testing.T, s store.Store, websiteID string, next time.Time, change func(*store.Schedule)) store.Schedule {
	t.Helper()
	sc := store.Schedule{ID: uuid.NewString(), WebsiteID: websiteID, Name: "Digest", Status: store.ScheduleActive,
		Definition: []byte(`{"rule":"FREQ=DAILY;BYHOUR=9"}`), NextAt: &next, CreatedAt: at(time.Second), UpdatedAt: at(time.Second)}
	if change != nil {
		change(&sc)
	}
	noErr(t, "CreateSchedule", s.CreateSchedule(context.Background(), sc))
	return sc
}

func testScheduleCRUD(t *testing.T, s store.Store) {
	ctx := context.Background()
	w, other := newWebsite(t, s), newWebsite(t, s)
	a := newSchedule(t, s, w.Website.ID, at(time.Hour), nil)
	b := newSchedule(t, s, w.Website.ID, at(2*time.Hour), func(sc *store.Schedule) {
		sc.CreatedAt, sc.TopicID, sc.SegmentID, sc.TemplateID = at(2*time.Second), "t1", "s1", "tpl1"
	})
	list, err := s.ListSchedules(ctx, w.Website.ID)
	noErr(t, "ListSchedules", err)
	same(t, "ListSchedules (newest first)", list, []store.Schedule{b, a})
	got, err := s.Schedule(ctx, w.Website.ID, a.ID)
	noErr(t, "Schedule", err)
	same(t, "Schedule", got, a)
	_, err = s.Schedule(ctx, other.Website.ID, a.ID)
	wantErr(t, "another website's Schedule", err, store.ErrNotFound)
	wantErr(t, "CreateSchedule of an unknown website", s.CreateSchedule(ctx, store.Schedule{ID: uuid.NewString(), WebsiteID: uuid.NewString(),
		Name: "x", Status: store.ScheduleActive, Definition: []byte(`{}`)}), store.ErrNotFound)

	a.Name, a.Status, a.NextAt, a.Definition, a.UpdatedAt = "Renamed", store.SchedulePaused, nil, []byte(`{"rule":"FREQ=DAILY;BYHOUR=10"}`), at(time.Minute)
	a.TemplateID, a.ExcludeSegmentID = "tpl2", "s2"
	noErr(t, "UpdateSchedule", s.UpdateSchedule(ctx, a))
	got, err = s.Schedule(ctx, w.Website.ID, a.ID)
	noErr(t, "Schedule", err)
	same(t, "updated Schedule", got, a)
	a.WebsiteID = other.Website.ID
	wantErr(t, "UpdateSchedule of another website's", s.UpdateSchedule(ctx, a), store.ErrNotFound)
	wantErr(t, "DeleteSchedule of another website's", s.DeleteSchedule(ctx, other.Website.ID, b.ID), store.ErrNotFound)
	noErr(t, "DeleteSchedule", s.DeleteSchedule(ctx, w.Website.ID, b.ID))
	_, err = s.Schedule(ctx, w.Website.ID, b.ID)
	wantErr(t, "deleted Schedule", err, store.ErrNotFound)
}

// FireSchedule does an occurrence once: the send, its ledger row and the
// move of next_at together; a second fire of it changes nothing; a skip
// writes its row without a send; the list filters by schedule.
func testScheduleFireOnce(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	occ, next, after := at(time.Hour), at(25*time.Hour), at(49*time.Hour)
	sc := newSchedule(t, s, w.Website.ID, occ, nil)
	n := notification(w.Website.ID)
	n.ScheduleID = sc.ID
	f := store.ScheduleFire{WebsiteID: w.Website.ID, ScheduleID: sc.ID, Occurrence: occ, Next: &next, Notification: &n, At: at(time.Hour + time.Second)}
	outcome, err := s.FireSchedule(ctx, f)
	if err != nil || outcome != store.OccurrenceSent {
		t.Fatalf("FireSchedule: %q %v", outcome, err)
	}
	again := notification(w.Website.ID)
	again.ScheduleID = sc.ID
	f.Notification = &again
	if outcome, err := s.FireSchedule(ctx, f); err != nil || outcome != "" {
		t.Fatalf("FireSchedule again: %q %v", outcome, err)
	}
	// A change that read the schedule before the occurrence and wrote it
	// after puts next_at back on the done occurrence: firing it again
	// sends nothing and takes no budget, and moves next_at on.
	back := sc
	back.NextAt = &occ
	noErr(t, "UpdateSchedule", s.UpdateSchedule(ctx, back))
	budget := store.RateLimit{Key: "send:website:" + w.Website.ID + ":broadcast", Window: time.Hour, Max: 1}
	f.Budget = &budget
	if outcome, err := s.FireSchedule(ctx, f); err != nil || outcome != "" {
		t.Fatalf("FireSchedule of a done occurrence written back: %q %v", outcome, err)
	}
	if got, err := s.Schedule(ctx, w.Website.ID, sc.ID); err != nil || got.NextAt == nil || !got.NextAt.Equal(next) {
		t.Fatalf("after the done occurrence: %+v %v, want NextAt %v", got.NextAt, err, next)
	}
	if _, ok, err := s.TakeRateLimits(ctx, []store.RateLimit{budget}, 1, f.At); err != nil || !ok {
		t.Fatalf("the budget was taken by an occurrence done already: %v %v", ok, err)
	}
	skip := store.ScheduleFire{WebsiteID: w.Website.ID, ScheduleID: sc.ID, Occurrence: next, Next: &after, At: at(30 * time.Hour)}
	if outcome, err := s.FireSchedule(ctx, skip); err != nil || outcome != store.OccurrenceSkipped {
		t.Fatalf("FireSchedule skip: %q %v", outcome, err)
	}
	runs, err := s.ScheduleRuns(ctx, w.Website.ID, sc.ID, 10)
	noErr(t, "ScheduleRuns", err)
	same(t, "ScheduleRuns", runs, []store.ScheduleRun{
		{ScheduleID: sc.ID, Occurrence: next, Outcome: store.OccurrenceSkipped, At: at(30 * time.Hour)},
		{ScheduleID: sc.ID, Occurrence: occ, Outcome: store.OccurrenceSent, NotificationID: n.ID, At: at(time.Hour + time.Second)},
	})
	other := newWebsite(t, s)
	runs, err = s.ScheduleRuns(ctx, other.Website.ID, sc.ID, 10)
	noErr(t, "another website's ScheduleRuns", err)
	if len(runs) != 0 {
		t.Fatalf("another website reads %d runs", len(runs))
	}
	got, err := s.Schedule(ctx, w.Website.ID, sc.ID)
	noErr(t, "Schedule", err)
	if got.NextAt == nil || !got.NextAt.Equal(after) {
		t.Fatalf("NextAt %v, want %v", got.NextAt, after)
	}
	create(t, s, notification(w.Website.ID)) // another send, not the schedule's
	list, err := s.ListNotifications(ctx, store.ListQuery{WebsiteID: w.Website.ID, ScheduleID: sc.ID, Limit: 10})
	noErr(t, "ListNotifications", err)
	if len(list) != 1 || list[0].ID != n.ID || list[0].ScheduleID != sc.ID {
		t.Fatalf("the schedule's sends: %+v", list)
	}
	if got := getNotification(t, s, n.ID); got.ScheduleID != sc.ID {
		t.Fatalf("ScheduleID %q", got.ScheduleID)
	}
	// The history is purged by age: the row written before the cut goes.
	if n, err := s.PurgeScheduleRuns(ctx, at(2*time.Hour)); err != nil || n != 1 {
		t.Fatalf("PurgeScheduleRuns: %d %v", n, err)
	}
	runs, err = s.ScheduleRuns(ctx, w.Website.ID, sc.ID, 10)
	noErr(t, "ScheduleRuns", err)
	if len(runs) != 1 || runs[0].Outcome != store.OccurrenceSkipped {
		t.Fatalf("after the purge: %+v", runs)
	}
	// A paused schedule fires nothing.
	got.Status = store.SchedulePaused
	noErr(t, "UpdateSchedule", s.UpdateSchedule(ctx, got))
	if outcome, err := s.FireSchedule(ctx, store.ScheduleFire{WebsiteID: w.Website.ID, ScheduleID: sc.ID, Occurrence: after, At: after}); err != nil || outcome != "" {
		t.Fatalf("FireSchedule of a paused schedule: %q %v", outcome, err)
	}
}

// A send the budget has no room for is refused: nothing stored, the
// refusal recorded, the schedule due at the next window and waiting.
func testScheduleBudgetRefusal(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	hour := t0.Truncate(time.Hour).Add(24 * time.Hour)
	occ, next := hour.Add(10*time.Minute), hour.Add(20*time.Minute)
	sc := newSchedule(t, s, w.Website.ID, occ, nil)
	budget := store.RateLimit{Key: "send:website:" + w.Website.ID + ":broadcast", Window: time.Hour, Max: 1}
	if _, ok, err := s.TakeRateLimits(ctx, []store.RateLimit{budget}, 1, hour); err != nil || !ok {
		t.Fatalf("TakeRateLimits: %v %v", ok, err)
	}
	n := notification(w.Website.ID)
	n.ScheduleID = sc.ID
	f := store.ScheduleFire{WebsiteID: w.Website.ID, ScheduleID: sc.ID, Occurrence: occ, Next: &next, Notification: &n, Budget: &budget, At: occ}
	if outcome, err := s.FireSchedule(ctx, f); err != nil || outcome != store.OccurrenceRefused {
		t.Fatalf("FireSchedule: %q %v", outcome, err)
	}
	if _, err := s.NotificationByID(ctx, n.ID); err == nil {
		t.Fatal("a refused send was stored")
	}
	got, err := s.Schedule(ctx, w.Website.ID, sc.ID)
	noErr(t, "Schedule", err)
	want := sc
	want.BudgetWait = true
	want.Refusal = &store.ScheduleRefusal{At: occ, Occurrence: occ, RetryAt: hour.Add(time.Hour),
		Reason: "the website's hourly budget of 1 broadcast sends was used up"}
	same(t, "refused Schedule", got, want)
	if claimed, err := s.ClaimSchedules(ctx, next, time.Minute, 10); err != nil || len(claimed) != 0 {
		t.Fatalf("claimed before the next window: %v %v", claimed, err)
	}
	// The next window has room.
	f.At = hour.Add(time.Hour)
	if outcome, err := s.FireSchedule(ctx, f); err != nil || outcome != store.OccurrenceSent {
		t.Fatalf("FireSchedule in the next hour: %q %v", outcome, err)
	}
	used, _, err := s.TakeRateLimits(ctx, []store.RateLimit{budget}, 0, f.At)
	noErr(t, "TakeRateLimits", err)
	if used[0] != 1 {
		t.Fatalf("the next window counts %d sends", used[0])
	}
}

// A held occurrence stays NextAt, not waiting for the budget, with the
// hold as the refusal; the schedule is claimed again at retry, not
// before; a hold of an occurrence no longer next changes nothing.
func testScheduleHold(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	occ := at(10 * time.Minute)
	retry := occ.Add(5 * time.Minute)
	sc := newSchedule(t, s, w.Website.ID, occ, nil)
	noErr(t, "HoldSchedule(other occurrence)", s.HoldSchedule(ctx, w.Website.ID, sc.ID, occ.Add(time.Hour), retry, "why", occ))
	got, err := s.Schedule(ctx, w.Website.ID, sc.ID)
	noErr(t, "Schedule", err)
	same(t, "Schedule after a stale hold", got, sc)
	noErr(t, "HoldSchedule", s.HoldSchedule(ctx, w.Website.ID, sc.ID, occ, retry, "not verified", occ))
	got, err = s.Schedule(ctx, w.Website.ID, sc.ID)
	noErr(t, "Schedule", err)
	want := sc
	want.Refusal = &store.ScheduleRefusal{At: occ, Occurrence: occ, RetryAt: retry, Reason: "not verified"}
	same(t, "held Schedule", got, want)
	if claimed, err := s.ClaimSchedules(ctx, retry.Add(-time.Second), time.Minute, 10); err != nil || len(claimed) != 0 {
		t.Fatalf("claimed before retry: %v %v", claimed, err)
	}
	if claimed, err := s.ClaimSchedules(ctx, retry, time.Minute, 10); err != nil || len(claimed) != 1 {
		t.Fatalf("claimed at retry: %v %v", claimed, err)
	}
}

// Claims lease: a leased schedule is not claimed again until its lease
// runs out; a paused or not yet due one never is.
func testScheduleClaimLeases(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	due := newSchedule(t, s, w.Website.ID, at(time.Minute), nil)
	newSchedule(t, s, w.Website.ID, at(time.Hour), nil)
	newSchedule(t, s, w.Website.ID, at(time.Minute), func(sc *store.Schedule) { sc.Status = store.SchedulePaused })
	claimed, err := s.ClaimSchedules(ctx, at(2*time.Minute), 5*time.Second, 10)
	noErr(t, "ClaimSchedules", err)
	if len(claimed) != 1 || claimed[0].ID != due.ID {
		t.Fatalf("claimed %+v", claimed)
	}
	if claimed, _ := s.ClaimSchedules(ctx, at(2*time.Minute+4*time.Second), 5*time.Second, 10); len(claimed) != 0 {
		t.Fatalf("claimed within the lease: %+v", claimed)
	}
	if claimed, _ := s.ClaimSchedules(ctx, at(2*time.Minute+5*time.Second), 5*time.Second, 10); len(claimed) != 1 {
		t.Fatalf("claimed after the lease: %+v", claimed)
	}
	next, ok, err := s.NextScheduleDue(ctx)
	noErr(t, "NextScheduleDue", err)
	if !ok || !next.Equal(at(time.Hour)) {
		t.Fatalf("NextScheduleDue %v %v", next, ok)
	}
}

// A topic's deletion pauses the active schedules that send to it, with
// the reason; others stay.
func testScheduleTopicDeleted(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	tp, _, err := s.SaveTopic(ctx, store.Topic{ID: uuid.NewString(), WebsiteID: w.Website.ID, Name: "Breaking news", Slug: "news", CreatedAt: at(0)})
	noErr(t, "SaveTopic", err)
	on := newSchedule(t, s, w.Website.ID, at(time.Hour), func(sc *store.Schedule) { sc.TopicID = tp.ID })
	off := newSchedule(t, s, w.Website.ID, at(time.Hour), nil)
	noErr(t, "CreateWebhook", s.CreateWebhook(ctx, store.Webhook{ID: uuid.NewString(), WebsiteID: w.Website.ID,
		URL: "https://hooks.example.com/x", Secret: "whsec_x", Enabled: true, CreatedAt: at(0)}))
	before, err := s.WebhookEvents(ctx, 0, 0)
	noErr(t, "WebhookEvents", err)
	noErr(t, "DeleteTopic", s.DeleteTopic(ctx, w.Website.ID, tp.ID))
	got, err := s.Schedule(ctx, w.Website.ID, on.ID)
	noErr(t, "Schedule", err)
	if got.Status != store.SchedulePaused || got.PausedReason != `Its topic "Breaking news" was deleted.` || got.NextAt != nil {
		t.Fatalf("the topic's schedule: %+v", got)
	}
	got, err = s.Schedule(ctx, w.Website.ID, off.ID)
	noErr(t, "Schedule", err)
	same(t, "another schedule", got, off)
	// One schedule.paused event, in the deletion's transaction.
	after, err := s.WebhookEvents(ctx, 0, 0)
	noErr(t, "WebhookEvents", err)
	if len(after) != len(before)+1 || after[len(after)-1].Event != store.EventSchedulePaused || after[len(after)-1].WebsiteID != w.Website.ID {
		t.Fatalf("events after the topic's deletion: %+v", after[len(before):])
	}
	var data store.SchedulePausedData
	noErr(t, "event data", json.Unmarshal(after[len(after)-1].Data, &data))
	same(t, "event data", data, store.SchedulePausedData{ScheduleID: on.ID, Name: on.Name, Reason: store.SchedulePausedTopicDeleted,
		Message: `Its topic "Breaking news" was deleted.`})
	// Deleting it again changes nothing and adds no event.
	noErr(t, "DeleteTopic(again)", s.DeleteTopic(ctx, w.Website.ID, tp.ID))
	again, err := s.WebhookEvents(ctx, 0, 0)
	noErr(t, "WebhookEvents", err)
	if len(again) != len(after) {
		t.Fatalf("a second deletion added events: %+v", again[len(after):])
	}
}

// SegmentUses counts the active schedules that include or exclude each
// segment.
func testScheduleSegmentUses(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	s1, s2 := uuid.NewString(), uuid.NewString()
	newSchedule(t, s, w.Website.ID, at(time.Hour), func(sc *store.Schedule) { sc.SegmentID = s1 })
	newSchedule(t, s, w.Website.ID, at(time.Hour), func(sc *store.Schedule) { sc.SegmentID, sc.ExcludeSegmentID = s1, s2 })
	newSchedule(t, s, w.Website.ID, at(time.Hour), func(sc *store.Schedule) { sc.ExcludeSegmentID = s2 })
	newSchedule(t, s, w.Website.ID, at(time.Hour), func(sc *store.Schedule) { sc.SegmentID, sc.Status = s1, store.SchedulePaused })
	uses, err := s.SegmentUses(ctx, w.Website.ID)
	noErr(t, "SegmentUses", err)
	same(t, "SegmentUses", uses, map[string]store.SegmentUse{s1: {Schedules: 2}, s2: {Schedules: 2}})
}
