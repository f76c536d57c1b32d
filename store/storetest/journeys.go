package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/store"
)

var journeyCases = []testCase{
	{"CRUDAndVersions", testJourneyVersions},
	{"EnrollRules", testJourneyEnroll},
	{"EnrollConcurrent", testJourneyEnrollConcurrent},
	{"MoveExactlyOnce", testJourneyMove},
	{"Migrate", testJourneyMigrate},
}

// newJourney stores an active journey of the website.
func newJourney(t *testing.T, s store.Store, websiteID string, created time.Time) store.Journey {
	t.Helper()
	j := store.Journey{ID: uuid.NewString(), WebsiteID: websiteID, Name: "Welcome", Status: store.AutomationActive,
		EntryType: "api", Version: 1, Definition: []byte(`{"steps":[{"id":"a","type":"exit"}]}`), CreatedAt: created, UpdatedAt: created}
	noErr(t, "CreateJourney", s.CreateJourney(context.Background(), j))
	return j
}

func enroll(t *testing.T, s store.Store, j store.Journey, subscriberID string, after time.Duration, when time.Time) (string, string) {
	t.Helper()
	id := uuid.NewString()
	refused, err := s.Enroll(context.Background(), store.Enroll{WebsiteID: j.WebsiteID, JourneyID: j.ID, SubscriberID: subscriberID,
		EnrollmentID: id, Version: j.Version, FirstStep: "a", ReenterAfter: after, At: when})
	noErr(t, "Enroll", err)
	return id, refused
}

func testJourneyVersions(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	if has, err := s.HasJourneys(ctx, w.Website.ID); err != nil || has {
		t.Fatalf("HasJourneys before any = %v, %v", has, err)
	}
	a := newJourney(t, s, w.Website.ID, at(time.Minute))
	elsewhere := newWebsite(t, s)
	if has, err := s.HasJourneys(ctx, w.Website.ID); err != nil || !has {
		t.Fatalf("HasJourneys with one = %v, %v", has, err)
	}
	if has, err := s.HasJourneys(ctx, elsewhere.Website.ID); err != nil || has {
		t.Fatalf("HasJourneys of another website = %v, %v", has, err)
	}
	b := newJourney(t, s, w.Website.ID, at(2*time.Minute))
	list, err := s.ListJourneys(ctx, w.Website.ID)
	noErr(t, "ListJourneys", err)
	if len(list) != 2 || list[0].ID != b.ID || list[1].ID != a.ID {
		t.Fatalf("ListJourneys = %+v, want newest first", list)
	}
	same(t, "listed journey", list[1], a)

	// No enrolment yet: the version is replaced in place.
	a.Name, a.Definition, a.UpdatedAt = "Renamed", []byte(`{"steps":[{"id":"b","type":"exit"}]}`), at(time.Hour)
	got, err := s.UpdateJourney(ctx, a)
	noErr(t, "UpdateJourney", err)
	same(t, "updated journey", got, a)
	// An enrolment on version 1: the next change is version 2, and
	// version 1 keeps its definition.
	p := subscribe(t, s, subscription(w.Website.ID))
	if _, refused := enroll(t, s, a, p.SubscriberID, 0, at(time.Hour)); refused != "" {
		t.Fatalf("refused %q", refused)
	}
	a.Definition, a.UpdatedAt = []byte(`{"steps":[{"id":"c","type":"exit"}]}`), at(2*time.Hour)
	got, err = s.UpdateJourney(ctx, a)
	noErr(t, "UpdateJourney(after an enrolment)", err)
	a.Version = 2
	same(t, "journey version 2", got, a)
	v1, err := s.JourneyVersion(ctx, a.ID, 1)
	noErr(t, "JourneyVersion", err)
	if string(v1) != `{"steps":[{"id":"b","type":"exit"}]}` {
		t.Fatalf("version 1 = %s", v1)
	}
	// An enrolment of the old version read: ErrConflict.
	_, err = s.Enroll(ctx, store.Enroll{WebsiteID: w.Website.ID, JourneyID: b.ID, SubscriberID: p.SubscriberID,
		EnrollmentID: uuid.NewString(), Version: 7, FirstStep: "a", At: at(time.Hour)})
	wantErr(t, "Enroll(stale version)", err, store.ErrConflict)

	w2 := newWebsite(t, s)
	_, err = s.Journey(ctx, w2.Website.ID, a.ID)
	wantErr(t, "Journey(other website)", err, store.ErrNotFound)
	other := a
	other.WebsiteID = w2.Website.ID
	_, err = s.UpdateJourney(ctx, other)
	wantErr(t, "UpdateJourney(other website)", err, store.ErrNotFound)
	wantErr(t, "DeleteJourney(other website)", s.DeleteJourney(ctx, w2.Website.ID, a.ID), store.ErrNotFound)
	noErr(t, "DeleteJourney", s.DeleteJourney(ctx, w.Website.ID, a.ID))
	if timers, _ := s.ClaimTimers(ctx, at(48*time.Hour), time.Minute, 10); len(timers) != 0 {
		t.Fatalf("a deleted journey's timers stayed: %+v", timers)
	}
	if list, _ := s.ListEnrollments(ctx, store.EnrollmentQuery{WebsiteID: w.Website.ID}); len(list) != 0 {
		t.Fatalf("a deleted journey's enrolments stayed: %+v", list)
	}
}

func testJourneyEnroll(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	p := subscribe(t, s, subscription(w.Website.ID))
	j := newJourney(t, s, w.Website.ID, at(0))
	first, refused := enroll(t, s, j, p.SubscriberID, time.Hour, at(0))
	if refused != "" {
		t.Fatalf("refused %q", refused)
	}
	if _, refused := enroll(t, s, j, p.SubscriberID, time.Hour, at(2*time.Hour)); refused != store.RefusedAlreadyEnrolled {
		t.Fatalf("while live: %q", refused)
	}
	e, err := s.Enrollment(ctx, w.Website.ID, first)
	noErr(t, "Enrollment", err)
	same(t, "enrolment", e, store.Enrollment{ID: first, WebsiteID: w.Website.ID, JourneyID: j.ID, SubscriberID: p.SubscriberID,
		Version: 1, State: store.EnrollmentActive, CurrentStep: "a", EnteredAt: at(0), UpdatedAt: at(0)})
	moved, err := s.MoveEnrollment(ctx, store.JourneyMove{EnrollmentID: first, Tick: 0, State: store.EnrollmentCompleted, CurrentStep: "a",
		Steps: []store.JourneyStep{{StepID: "a", Type: "exit", Outcome: "exit step"}}, At: at(time.Minute)})
	noErr(t, "MoveEnrollment", err)
	if !moved {
		t.Fatal("not moved")
	}
	// Reentry after an hour counts from the last entry.
	if _, refused := enroll(t, s, j, p.SubscriberID, time.Hour, at(59*time.Minute)); refused != store.RefusedAlreadyEnrolled {
		t.Fatalf("within the reentry delay: %q", refused)
	}
	if _, refused := enroll(t, s, j, p.SubscriberID, 0, at(2*time.Hour)); refused != store.RefusedAlreadyEnrolled {
		t.Fatalf("reentry never: %q", refused)
	}
	second, refused := enroll(t, s, j, p.SubscriberID, time.Hour, at(time.Hour))
	if refused != "" {
		t.Fatalf("after the reentry delay: %q", refused)
	}
	list, err := s.ListEnrollments(ctx, store.EnrollmentQuery{WebsiteID: w.Website.ID, JourneyID: j.ID, SubscriberID: p.SubscriberID})
	noErr(t, "ListEnrollments", err)
	if len(list) != 2 || list[0].ID != second || list[1].ID != first || list[1].State != store.EnrollmentCompleted ||
		list[1].EndedAt == nil || !list[1].EndedAt.Equal(at(time.Minute)) {
		t.Fatalf("ListEnrollments = %+v", list)
	}
	// Not active: refused so.
	j.Status = store.AutomationPaused
	_, err = s.UpdateJourney(ctx, j)
	noErr(t, "UpdateJourney", err)
	if _, refused := enroll(t, s, j, subscribe(t, s, subscription(w.Website.ID)).SubscriberID, 0, at(0)); refused != store.RefusedNotActive {
		t.Fatalf("paused: %q", refused)
	}
	// A person of another website: ErrNotFound.
	j.Status = store.AutomationActive
	j, err = s.UpdateJourney(ctx, j)
	noErr(t, "UpdateJourney", err)
	other := subscribe(t, s, subscription(newWebsite(t, s).Website.ID))
	_, err = s.Enroll(ctx, store.Enroll{WebsiteID: w.Website.ID, JourneyID: j.ID, SubscriberID: other.SubscriberID,
		EnrollmentID: uuid.NewString(), Version: j.Version, FirstStep: "a", At: at(0)})
	wantErr(t, "Enroll(other website's person)", err, store.ErrNotFound)
}

// testJourneyEnrollConcurrent: enrolments of one person arriving at once
// leave one live enrolment.
func testJourneyEnrollConcurrent(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	p := subscribe(t, s, subscription(w.Website.ID))
	j := newJourney(t, s, w.Website.ID, at(0))
	var wg sync.WaitGroup
	var mu sync.Mutex
	enrolled := 0
	for range 8 {
		wg.Go(func() {
			refused, err := s.Enroll(ctx, store.Enroll{WebsiteID: w.Website.ID, JourneyID: j.ID, SubscriberID: p.SubscriberID,
				EnrollmentID: uuid.NewString(), Version: 1, FirstStep: "a", ReenterAfter: time.Nanosecond, At: at(0)})
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if refused == "" {
				enrolled++
			}
		})
	}
	wg.Wait()
	list, err := s.ListEnrollments(ctx, store.EnrollmentQuery{WebsiteID: w.Website.ID, LiveOnly: true})
	noErr(t, "ListEnrollments", err)
	if enrolled != 1 || len(list) != 1 {
		t.Fatalf("%d enrolled, %d live, want 1", enrolled, len(list))
	}
}

// testJourneyMove: a move fired by its timer happens once: a redo of the
// timer, a move planned from an old tick and a stale timer change
// nothing; its history rows, notification, tags and next timer are
// stored together.
func testJourneyMove(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	p := subscribe(t, s, subscription(w.Website.ID))
	j := newJourney(t, s, w.Website.ID, at(0))
	id, _ := enroll(t, s, j, p.SubscriberID, 0, at(0))
	timers, err := s.ClaimTimers(ctx, at(0), time.Minute, 10)
	noErr(t, "ClaimTimers", err)
	same(t, "entry timer", timers, []store.Timer{{RunID: id, Item: 0, Kind: store.TimerJourney, WebsiteID: w.Website.ID,
		SubscriberID: p.SubscriberID, Due: at(0)}})
	n := notification(w.Website.ID)
	n.Automation, n.JourneyID, n.JourneyStep, n.SendBody = true, j.ID, "a", nil
	due := at(time.Hour)
	m := store.JourneyMove{EnrollmentID: id, Tick: 0, Timer: &timers[0], State: store.EnrollmentActive, CurrentStep: "w", Waiting: true,
		Steps: []store.JourneyStep{{StepID: "a", Type: "send", Outcome: "sent", Notification: &n}, {StepID: "t", Type: "set_tags", Outcome: "tags set"}},
		Tags:  map[string]string{"stage": "welcomed"}, Due: &due, At: at(time.Second)}
	// A failure before the commit leaves everything as it was.
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.MoveEnrollment(cancelled, m); err == nil {
		t.Fatal("a cancelled move succeeded")
	}
	if _, err := s.NotificationByID(ctx, n.ID); err == nil {
		t.Fatal("a failed move stored its notification")
	}
	moved, err := s.MoveEnrollment(ctx, m)
	noErr(t, "MoveEnrollment", err)
	if !moved {
		t.Fatal("not moved")
	}
	if moved, err := s.MoveEnrollment(ctx, m); err != nil || moved {
		t.Fatalf("redo: %v %v", moved, err)
	}
	stored := getNotification(t, s, n.ID)
	if stored.JourneyID != j.ID || stored.JourneyStep != "a" || !stored.Automation {
		t.Fatalf("stored %+v", stored)
	}
	hist, err := s.EnrollmentHistory(ctx, id)
	noErr(t, "EnrollmentHistory", err)
	same(t, "history", hist, []store.JourneyStep{
		{Seq: 1, StepID: "a", Type: "send", Outcome: "sent", NotificationID: n.ID, At: at(time.Second)},
		{Seq: 2, StepID: "t", Type: "set_tags", Outcome: "tags set", At: at(time.Second)}})
	person, err := s.Person(ctx, w.Website.ID, p.SubscriberID)
	noErr(t, "Person", err)
	if person.Tags["stage"] != "welcomed" {
		t.Fatalf("tags %v", person.Tags)
	}
	e, sid, err := s.EnrollmentOfSend(ctx, n.ID)
	noErr(t, "EnrollmentOfSend", err)
	if e.ID != id || sid != "a" || e.Tick != 1 || e.Seq != 2 || !e.Waiting || e.CurrentStep != "w" {
		t.Fatalf("EnrollmentOfSend = %+v %q", e, sid)
	}
	if ok, _ := s.SendInteracted(ctx, id, "a", store.InteractionDelivered); ok {
		t.Fatal("interacted before any ping")
	}
	_, err = s.RecordInteraction(ctx, w.Website.ID, n.ID, p.EndpointID, store.InteractionClicked, at(time.Minute), nil)
	noErr(t, "RecordInteraction", err)
	if ok, _ := s.SendInteracted(ctx, id, "a", store.InteractionDelivered); !ok {
		t.Fatal("a click is not a delivery")
	}
	// The move planned from tick 0 again, without its timer: nothing.
	m.Timer = nil
	if moved, err := s.MoveEnrollment(ctx, m); err != nil || moved {
		t.Fatalf("stale tick: %v %v", moved, err)
	}
	// The wait's timer: one, at tick 1, due in an hour.
	timers, err = s.ClaimTimers(ctx, at(2*time.Hour), time.Minute, 10)
	noErr(t, "ClaimTimers", err)
	if len(timers) != 1 || timers[0].Item != 1 || !timers[0].Due.Equal(due) {
		t.Fatalf("timers %+v", timers)
	}
	// Ended early: stats count it.
	moved, err = s.MoveEnrollment(ctx, store.JourneyMove{EnrollmentID: id, Tick: 1, State: store.EnrollmentExited, CurrentStep: "w",
		Steps: []store.JourneyStep{{StepID: "w", Type: "wait", Outcome: "exit event purchase", Early: true}}, At: at(time.Minute)})
	if err != nil || !moved {
		t.Fatalf("exit: %v %v", moved, err)
	}
	if moved, err := s.MoveEnrollment(ctx, store.JourneyMove{EnrollmentID: id, Tick: 1, Timer: &timers[0], State: store.EnrollmentActive}); err != nil || moved {
		t.Fatalf("the timer of an ended enrolment: %v %v", moved, err)
	}
	if left, _ := s.ClaimTimers(ctx, at(3*time.Hour), time.Minute, 10); len(left) != 0 {
		t.Fatalf("timers left %+v", left)
	}
	noErr(t, "RecordResults", recordResults(s, ctx, n.ID, []store.PushResult{{EndpointID: p.EndpointID, Outcome: store.OutcomeSent}}))
	stats, err := s.JourneyStepStats(ctx, w.Website.ID, j.ID)
	noErr(t, "JourneyStepStats", err)
	same(t, "stats", stats, map[string]store.JourneyStepStats{
		"a": {Entered: 1, Completed: 1, Sent: 1, Clicked: 1},
		"t": {Entered: 1, Completed: 1},
		"w": {Entered: 1, ExitedEarly: 1},
	})
}

func testJourneyMigrate(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	j := newJourney(t, s, w.Website.ID, at(0))
	var ids []string
	for range 2 {
		p := subscribe(t, s, subscription(w.Website.ID))
		id, _ := enroll(t, s, j, p.SubscriberID, 0, at(0))
		ids = append(ids, id)
	}
	j.Definition = []byte(`{"steps":[{"id":"z","type":"exit"}]}`)
	j, err := s.UpdateJourney(ctx, j)
	noErr(t, "UpdateJourney", err)
	n, err := s.MigrateEnrollments(ctx, w.Website.ID, j.ID, 1, 2, map[string]string{"a": "z"}, at(time.Minute))
	noErr(t, "MigrateEnrollments", err)
	if n != 2 {
		t.Fatalf("migrated %d", n)
	}
	for _, id := range ids {
		e, err := s.Enrollment(ctx, w.Website.ID, id)
		noErr(t, "Enrollment", err)
		if e.Version != 2 || e.CurrentStep != "z" || e.Tick != 1 || e.Waiting {
			t.Fatalf("migrated %+v", e)
		}
	}
	timers, err := s.ClaimTimers(ctx, at(time.Minute), time.Minute, 10)
	noErr(t, "ClaimTimers", err)
	if len(timers) != 2 || timers[0].Item != 1 || timers[1].Item != 1 {
		t.Fatalf("timers %+v", timers)
	}
	// A step the mapping leaves out, found inside the transaction:
	// refused, naming it, and nothing moves, not even the mapped ones.
	p := subscribe(t, s, subscription(w.Website.ID))
	third, _ := enroll(t, s, j, p.SubscriberID, 0, at(0)) // at "a" of version 2
	noErr(t, "UpdateJourney", errOf(s.UpdateJourney(ctx, j)))
	var ue *store.UnmappedStepError
	if _, err := s.MigrateEnrollments(ctx, w.Website.ID, j.ID, 2, 3, map[string]string{"z": "z"}, at(2*time.Minute)); !errors.As(err, &ue) ||
		ue.Step != "a" {
		t.Fatalf("an unmapped step: %v, want an UnmappedStepError naming a", err)
	}
	for _, id := range append(ids, third) {
		e, err := s.Enrollment(ctx, w.Website.ID, id)
		noErr(t, "Enrollment", err)
		if e.Version != 2 || e.Tick > 1 {
			t.Fatalf("a refused migration moved %+v", e)
		}
	}
}

func errOf[T any](_ T, err error) error { return err }
