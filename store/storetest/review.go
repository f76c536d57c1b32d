package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/relaybell/relaybell/store"
)

var reviewCases = []testCase{
	{"ApproveAndReject", testReview},
	{"LargestSend", testLargestSend},
	{"CancelRacesScheduler", testCancelRacesScheduler},
}

func testReview(t *testing.T, s store.Store) {
	ctx := context.Background()
	w, other := newWebsite(t, s), newWebsite(t, s)
	held := func(websiteID string, scheduled *time.Time) store.Notification {
		n := notification(websiteID)
		n.Status, n.ScheduledAt = store.StatusHeldForReview, scheduled
		return create(t, s, n)
	}
	now := held(w.Website.ID, nil)
	later := held(other.Website.ID, ptr(at(24*time.Hour)))
	rejected := held(w.Website.ID, nil)
	queued := create(t, s, notification(w.Website.ID))

	list, err := s.HeldForReview(ctx, 10)
	noErr(t, "HeldForReview", err)
	same(t, "held, oldest first, every website", list, []store.Notification{now, later, rejected})
	list, err = s.HeldForReview(ctx, 2)
	noErr(t, "HeldForReview(2)", err)
	same(t, "held, limit 2", list, []store.Notification{now, later})

	got, err := s.ReviewNotification(ctx, now.ID, true, at(time.Hour))
	noErr(t, "approve", err)
	want := now
	want.Status = store.StatusQueued
	same(t, "approved without a schedule", got, want)
	same(t, "approved, stored", getNotification(t, s, now.ID), want)

	got, err = s.ReviewNotification(ctx, later.ID, true, at(time.Hour))
	noErr(t, "approve scheduled", err)
	want = later
	want.Status = store.StatusScheduled
	same(t, "approved with a schedule", got, want)

	got, err = s.ReviewNotification(ctx, rejected.ID, false, at(2*time.Hour))
	noErr(t, "reject", err)
	want = rejected
	want.Status, want.Error, want.FinishedAt = store.StatusFailed, "review_rejected", ptr(at(2*time.Hour))
	same(t, "rejected", got, want)
	same(t, "rejected, stored", getNotification(t, s, rejected.ID), want)

	for _, id := range []string{now.ID, rejected.ID, queued.ID, "00000000-0000-4000-8000-000000000000"} {
		for _, approve := range []bool{true, false} {
			_, err := s.ReviewNotification(ctx, id, approve, at(time.Hour))
			wantErr(t, "review of a send not held", err, store.ErrNotFound)
		}
	}
	same(t, "queued untouched", getNotification(t, s, queued.ID), queued)
	list, err = s.HeldForReview(ctx, 10)
	noErr(t, "HeldForReview", err)
	same(t, "none held", len(list), 0)
}

func testLargestSend(t *testing.T, s store.Store) {
	ctx := context.Background()
	w, other := newWebsite(t, s), newWebsite(t, s)
	largest := func() int64 {
		t.Helper()
		n, err := s.LargestSend(ctx, w.Website.ID)
		noErr(t, "LargestSend", err)
		return n
	}
	same(t, "no sends", largest(), int64(0))
	for _, c := range []struct {
		website    string
		status     string
		recipients int64
	}{
		{w.Website.ID, store.StatusSent, 40},
		{w.Website.ID, store.StatusSending, 70},
		{w.Website.ID, store.StatusFailed, 900},    // never went out
		{w.Website.ID, store.StatusCanceled, 900},  // never went out
		{other.Website.ID, store.StatusSent, 5000}, // another website's
	} {
		n := notification(c.website)
		n.Status, n.Recipients = c.status, c.recipients
		create(t, s, n)
	}
	same(t, "largest started send", largest(), int64(70))
}

// testCancelRacesScheduler: a cancel racing the scheduler's release of the
// same due send has exactly one winner, and the loser sees it.
func testCancelRacesScheduler(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	for i := range 20 {
		n := notification(w.Website.ID)
		n.Status, n.ScheduledAt = store.StatusScheduled, ptr(at(time.Minute))
		n = create(t, s, n)
		var (
			cancelErr error
			released  []store.Notification
			dueErr    error
			done      = make(chan struct{})
		)
		go func() {
			defer close(done)
			released, dueErr = s.DueScheduled(ctx, at(time.Hour), 10)
		}()
		cancelErr = s.CancelNotification(ctx, w.Website.ID, n.ID, at(time.Hour))
		<-done
		noErr(t, "DueScheduled", dueErr)
		got := getNotification(t, s, n.ID)
		switch {
		case cancelErr == nil && len(released) == 0 && got.Status == store.StatusCanceled:
		case errors.Is(cancelErr, store.ErrNotFound) && len(released) == 1 && released[0].ID == n.ID && got.Status == store.StatusQueued:
		default:
			t.Fatalf("round %d: cancel %v, released %d, status %s: want exactly one winner", i, cancelErr, len(released), got.Status)
		}
		if got.Status == store.StatusQueued {
			noErr(t, "StartSending", func() error { _, err := s.StartSending(ctx, n.ID, at(time.Hour)); return err }())
		}
	}
}
