package storetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/store"
)

var notificationCases = []testCase{
	{"CreateRoundTrip", testNotificationRoundTrip},
	{"SeqIncreases", testNotificationSeq},
	{"WebsiteIsolation", testNotificationIsolation},
	{"CreateConflicts", testNotificationConflicts},
	{"List", testListNotifications},
	{"Search", testSearchNotifications},
	{"Outbox", testOutbox},
	{"DueScheduled", testDueScheduled},
	{"DueScheduledConcurrent", testDueScheduledConcurrent},
	{"StartSending", testStartSending},
	{"FailNotification", testFailNotification},
	{"Drafts", testDrafts},
	{"Cancel", testCancel},
}

func testNotificationRoundTrip(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	full := store.Notification{
		ID:            uuid.NewString(),
		WebsiteID:     w.Website.ID,
		Status:        store.StatusScheduled,
		Title:         "Flash sale",
		Body:          "Ends tonight, {{first_name}}",
		Content:       []byte(`{"title":"Flash sale","actions":[{"action":"buy","title":"Buy"}]}`),
		Target:        []byte(`{"filters":{"match":"all","rules":[{"field":"country","op":"is","value":"FR"}]}}`),
		TargetSummary: "Filters: country is FR",
		SendBody:      []byte(`{"title":"Flash sale","scheduledAt":"2025-03-15T09:00:00Z"}`),
		Transactional: true,
		AB:            true,
		Automation:    true,
		CreatedAt:     at(time.Minute),
		ScheduledAt:   ptr(at(24 * time.Hour)),
		StartedAt:     ptr(at(25 * time.Hour)),
		FinishedAt:    ptr(at(26 * time.Hour)),
		PublishedAt:   ptr(at(2 * time.Minute)),
		Error:         "none yet",
		Counters: store.Counters{
			Recipients: 10, Processed: 9, Sent: 7, Delivered: 6, Failed: 1, Pruned: 1, Clicked: 3,
			Conversions: 2, Revenue: 42.5,
		},
	}
	created := create(t, s, full)
	if created.Seq <= 0 {
		t.Fatalf("Seq = %d, want > 0", created.Seq)
	}
	full.Seq = created.Seq
	got, err := s.Notification(ctx, w.Website.ID, full.ID)
	noErr(t, "Notification", err)
	same(t, "Notification", got, full)
	same(t, "NotificationByID", getNotification(t, s, full.ID), full)

	// The minimal send: nil documents stay empty, pointers nil.
	minimal := store.Notification{ID: uuid.NewString(), WebsiteID: w.Website.ID, Status: store.StatusQueued, Title: "t", CreatedAt: t0}
	minimal = create(t, s, minimal)
	got = getNotification(t, s, minimal.ID)
	same(t, "minimal notification", got, minimal)
	if len(got.Target) != 0 && string(got.Target) != "null" {
		t.Fatalf("Target = %q, want empty (everyone)", got.Target)
	}
}

func testNotificationSeq(t *testing.T, s store.Store) {
	w1, w2 := newWebsite(t, s), newWebsite(t, s)
	var last int64
	for i := range 10 {
		n := notification([]string{w1.Website.ID, w2.Website.ID}[i%2])
		n = create(t, s, n)
		if n.Seq <= last {
			t.Fatalf("notification %d: Seq %d not above %d", i, n.Seq, last)
		}
		last = n.Seq
		if got := getNotification(t, s, n.ID).Seq; got != n.Seq {
			t.Fatalf("stored Seq %d, returned %d", got, n.Seq)
		}
	}

	// Concurrent creates get distinct sequence numbers.
	var wg sync.WaitGroup
	seqs := make([]int64, 40)
	errs := make([]error, len(seqs))
	for i := range seqs {
		wg.Go(func() {
			n := notification(w1.Website.ID)
			errs[i] = s.CreateNotification(context.Background(), &n)
			seqs[i] = n.Seq
		})
	}
	wg.Wait()
	seen := map[int64]bool{}
	for i, seq := range seqs {
		noErr(t, "concurrent CreateNotification", errs[i])
		if seq <= last || seen[seq] {
			t.Fatalf("concurrent Seq %d repeated or not above %d", seq, last)
		}
		seen[seq] = true
	}
}

func testNotificationIsolation(t *testing.T, s store.Store) {
	ctx := context.Background()
	w1, w2 := newWebsite(t, s), newWebsite(t, s)
	n1 := create(t, s, notification(w1.Website.ID))
	n2 := create(t, s, notification(w2.Website.ID))
	_, err := s.Notification(ctx, w2.Website.ID, n1.ID)
	wantErr(t, "Notification(other website)", err, store.ErrNotFound)
	_, err = s.Notification(ctx, w1.Website.ID, uuid.NewString())
	wantErr(t, "Notification(unknown)", err, store.ErrNotFound)
	_, err = s.NotificationByID(ctx, uuid.NewString())
	wantErr(t, "NotificationByID(unknown)", err, store.ErrNotFound)

	list, err := s.ListNotifications(ctx, store.ListQuery{WebsiteID: w1.Website.ID, Limit: 100})
	noErr(t, "ListNotifications", err)
	same(t, "website 1 list", ids(list), []string{n1.ID})
	list, err = s.ListNotifications(ctx, store.ListQuery{WebsiteID: w2.Website.ID, Limit: 100})
	noErr(t, "ListNotifications", err)
	same(t, "website 2 list", ids(list), []string{n2.ID})
}

func testNotificationConflicts(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	n := create(t, s, notification(w.Website.ID))
	dup := notification(w.Website.ID)
	dup.ID = n.ID
	wantErr(t, "CreateNotification(same id)", s.CreateNotification(ctx, &dup), store.ErrConflict)
	unknown := notification(uuid.NewString())
	wantErr(t, "CreateNotification(unknown website)", s.CreateNotification(ctx, &unknown), store.ErrNotFound)
}

func ids(ns []store.Notification) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = n.ID
	}
	return out
}

func testListNotifications(t *testing.T, s store.Store) {
	ctx := context.Background()
	w, other := newWebsite(t, s), newWebsite(t, s)
	statuses := []string{
		store.StatusSent, store.StatusDraft, store.StatusQueued, store.StatusScheduled, store.StatusDraft,
		store.StatusFailed, store.StatusSending, store.StatusCanceled, store.StatusHeldForReview, store.StatusSent,
	}
	var all []store.Notification // oldest first
	for i, st := range statuses {
		n := notification(w.Website.ID)
		n.Status = st
		all = append(all, create(t, s, n))
		if i%3 == 0 {
			create(t, s, notification(other.Website.ID))
		}
	}
	newest := func(keep func(store.Notification) bool) []string {
		var out []string
		for i := len(all) - 1; i >= 0; i-- {
			if keep(all[i]) {
				out = append(out, all[i].ID)
			}
		}
		return out
	}
	notDraft := func(n store.Notification) bool { return n.Status != store.StatusDraft }

	f := func(q store.ListQuery, want []string) {
		t.Helper()
		q.WebsiteID = w.Website.ID
		got, err := s.ListNotifications(ctx, q)
		noErr(t, "ListNotifications", err)
		same(t, "ListNotifications", ids(got), want)
	}
	f(store.ListQuery{Limit: 100}, newest(notDraft))
	f(store.ListQuery{Limit: 3}, newest(notDraft)[:3])
	f(store.ListQuery{Limit: 100, Statuses: []string{store.StatusDraft}}, newest(func(n store.Notification) bool {
		return n.Status == store.StatusDraft
	}))
	f(store.ListQuery{Limit: 100, Statuses: []string{store.StatusSent, store.StatusQueued}}, newest(func(n store.Notification) bool {
		return n.Status == store.StatusSent || n.Status == store.StatusQueued
	}))
	f(store.ListQuery{Limit: 100, BeforeSeq: all[5].Seq}, newest(func(n store.Notification) bool {
		return notDraft(n) && n.Seq < all[5].Seq
	}))
	f(store.ListQuery{Limit: 100, BeforeSeq: all[0].Seq}, nil)
	f(store.ListQuery{Limit: 100, Statuses: []string{"no-such-status"}}, nil)

	// Paging through with BeforeSeq visits each once, newest first.
	var paged []string
	q := store.ListQuery{WebsiteID: w.Website.ID, Limit: 2}
	for range 100 {
		page, err := s.ListNotifications(ctx, q)
		noErr(t, "ListNotifications", err)
		paged = append(paged, ids(page)...)
		if len(page) < q.Limit {
			break
		}
		q.BeforeSeq = page[len(page)-1].Seq
	}
	same(t, "paged list", paged, newest(notDraft))

	// The listed rows are complete.
	got, err := s.ListNotifications(ctx, store.ListQuery{WebsiteID: w.Website.ID, Limit: 1})
	noErr(t, "ListNotifications", err)
	same(t, "listed notification", got, all[len(all)-1:])
	// Creation times and text: all[i] was made at the time notification()
	// gives; make two stand out.
	dated := notification(w.Website.ID)
	dated.CreatedAt, dated.Title, dated.Body = at(48*time.Hour), "Flash DEAL", "Shoes"
	dated = create(t, s, dated)
	worded := notification(w.Website.ID)
	worded.CreatedAt, worded.Title, worded.Body = at(72*time.Hour), "News", "the spring deal is on"
	worded = create(t, s, worded)
	f(store.ListQuery{Limit: 100, From: at(47 * time.Hour)}, []string{worded.ID, dated.ID})
	f(store.ListQuery{Limit: 100, From: at(47 * time.Hour), To: at(72 * time.Hour)}, []string{dated.ID})
	f(store.ListQuery{Limit: 100, To: at(48 * time.Hour)}, newest(notDraft))
	f(store.ListQuery{Limit: 100, Q: "deal"}, []string{worded.ID, dated.ID})
	f(store.ListQuery{Limit: 100, Q: "SHOES"}, []string{dated.ID})
	f(store.ListQuery{Limit: 100, Q: "deal", From: at(60 * time.Hour)}, []string{worded.ID})
}

func testOutbox(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	mk := func(status string, created time.Duration) store.Notification {
		n := notification(w.Website.ID)
		n.Status, n.CreatedAt = status, at(created)
		return create(t, s, n)
	}
	a := mk(store.StatusQueued, time.Second)
	b := mk(store.StatusQueued, 2*time.Second)
	c := mk(store.StatusQueued, 3*time.Second)
	mk(store.StatusQueued, time.Hour) // too recent
	mk(store.StatusScheduled, time.Second)
	mk(store.StatusDraft, time.Second)
	mk(store.StatusSending, time.Second)
	published := notification(w.Website.ID)
	published.CreatedAt, published.PublishedAt = at(time.Second), ptr(at(time.Second))
	create(t, s, published)

	f := func(limit int, want ...string) {
		t.Helper()
		got, err := s.Unpublished(ctx, at(time.Minute), limit)
		noErr(t, "Unpublished", err)
		if len(got) != len(want) {
			t.Fatalf("Unpublished = %v, want %v", ids(got), want)
		}
		for _, n := range got {
			if n.Status != store.StatusQueued || n.PublishedAt != nil {
				t.Fatalf("Unpublished returned %+v", n)
			}
		}
		gotIDs := map[string]bool{}
		for _, id := range ids(got) {
			gotIDs[id] = true
		}
		for _, id := range want {
			if !gotIDs[id] {
				t.Fatalf("Unpublished = %v, want %v", ids(got), want)
			}
		}
	}
	f(100, a.ID, b.ID, c.ID)
	got, err := s.Unpublished(ctx, at(time.Minute), 2)
	noErr(t, "Unpublished", err)
	if len(got) != 2 {
		t.Fatalf("Unpublished(limit 2) = %d rows", len(got))
	}

	noErr(t, "MarkPublished", s.MarkPublished(ctx, b.ID, at(2*time.Minute)))
	f(100, a.ID, c.ID)
	if p := getNotification(t, s, b.ID).PublishedAt; p == nil || !p.Equal(at(2*time.Minute)) {
		t.Fatalf("PublishedAt = %v, want %v", p, at(2*time.Minute))
	}
	// MarkAllPublished: several at once, an unknown id passed over.
	noErr(t, "MarkAllPublished", s.MarkAllPublished(ctx, []string{a.ID, uuid.NewString(), c.ID}, at(3*time.Minute)))
	f(100)
	for _, id := range []string{a.ID, c.ID} {
		if p := getNotification(t, s, id).PublishedAt; p == nil || !p.Equal(at(3*time.Minute)) {
			t.Fatalf("PublishedAt = %v, want %v", p, at(3*time.Minute))
		}
	}
	noErr(t, "MarkAllPublished(none)", s.MarkAllPublished(ctx, nil, at(3*time.Minute)))
	wantErr(t, "MarkPublished(unknown)", s.MarkPublished(ctx, uuid.NewString(), t0), store.ErrNotFound)
}

func testDueScheduled(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	mk := func(status string, when time.Duration) store.Notification {
		n := notification(w.Website.ID)
		n.Status, n.ScheduledAt = status, ptr(at(when))
		return create(t, s, n)
	}
	late := mk(store.StatusScheduled, 30*time.Minute)
	early := mk(store.StatusScheduled, 10*time.Minute)
	exact := mk(store.StatusScheduled, time.Hour)
	future := mk(store.StatusScheduled, time.Hour+time.Millisecond)
	draft := mk(store.StatusDraft, time.Minute)
	canceled := mk(store.StatusCanceled, time.Minute)

	got, err := s.DueScheduled(ctx, at(time.Hour), 2)
	noErr(t, "DueScheduled", err)
	same(t, "first due batch (earliest first)", ids(got), []string{early.ID, late.ID})
	for _, n := range got {
		if n.Status != store.StatusQueued {
			t.Fatalf("DueScheduled returned status %q, want queued", n.Status)
		}
	}
	got, err = s.DueScheduled(ctx, at(time.Hour), 10)
	noErr(t, "DueScheduled", err)
	want := exact
	want.Status = store.StatusQueued
	same(t, "second due batch", got, []store.Notification{want})
	got, err = s.DueScheduled(ctx, at(time.Hour), 10)
	noErr(t, "DueScheduled", err)
	if len(got) != 0 {
		t.Fatalf("third due batch = %v, want none", ids(got))
	}

	for id, status := range map[string]string{
		early.ID: store.StatusQueued, late.ID: store.StatusQueued, exact.ID: store.StatusQueued,
		future.ID: store.StatusScheduled, draft.ID: store.StatusDraft, canceled.ID: store.StatusCanceled,
	} {
		if got := getNotification(t, s, id).Status; got != status {
			t.Fatalf("notification %s is %q, want %q", id, got, status)
		}
	}
}

func testDueScheduledConcurrent(t *testing.T, s store.Store) {
	w1, w2 := newWebsite(t, s), newWebsite(t, s)
	want := map[string]bool{}
	for i := range 60 {
		n := notification([]string{w1.Website.ID, w2.Website.ID}[i%2])
		n.Status, n.ScheduledAt = store.StatusScheduled, ptr(at(time.Duration(i)*time.Second))
		want[create(t, s, n).ID] = true
	}
	var (
		mu  sync.Mutex
		got = map[string]int{}
		wg  sync.WaitGroup
	)
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			for {
				batch, err := s.DueScheduled(context.Background(), at(time.Hour), 3)
				if err != nil {
					errs <- err
					return
				}
				if len(batch) == 0 {
					return
				}
				mu.Lock()
				for _, n := range batch {
					got[n.ID]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		noErr(t, "concurrent DueScheduled", err)
	}
	if len(got) != len(want) {
		t.Fatalf("concurrent DueScheduled returned %d sends, want %d", len(got), len(want))
	}
	for id, n := range got {
		if n != 1 || !want[id] {
			t.Fatalf("send %s returned %d times (expected: %v)", id, n, want[id])
		}
	}
}

func testStartSending(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	q := create(t, s, notification(w.Website.ID))

	got, err := s.StartSending(ctx, q.ID, at(time.Hour))
	noErr(t, "StartSending", err)
	want := q
	want.Status, want.StartedAt = store.StatusSending, ptr(at(time.Hour))
	same(t, "StartSending", got, want)
	same(t, "stored after StartSending", getNotification(t, s, q.ID), want)

	got, err = s.StartSending(ctx, q.ID, at(2*time.Hour))
	noErr(t, "StartSending(again)", err)
	same(t, "StartSending(again) keeps the first start", got, want)

	for _, st := range []string{store.StatusDraft, store.StatusScheduled, store.StatusHeldForReview,
		store.StatusSent, store.StatusFailed, store.StatusCanceled} {
		n := notification(w.Website.ID)
		n.Status = st
		n = create(t, s, n)
		_, err := s.StartSending(ctx, n.ID, at(time.Hour))
		wantErr(t, "StartSending("+st+")", err, store.ErrConflict)
		if got := getNotification(t, s, n.ID); got.Status != st || got.StartedAt != nil {
			t.Fatalf("%s notification changed by a refused StartSending: %+v", st, got)
		}
	}
	_, err = s.StartSending(ctx, uuid.NewString(), at(time.Hour))
	wantErr(t, "StartSending(unknown)", err, store.ErrNotFound)
}

func testFailNotification(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	for _, st := range []string{store.StatusScheduled, store.StatusQueued, store.StatusHeldForReview, store.StatusSending} {
		n := notification(w.Website.ID)
		n.Status = st
		n = create(t, s, n)
		noErr(t, "FailNotification("+st+")", s.FailNotification(ctx, n.ID, "email_not_verified", at(time.Hour)))
		want := n
		want.Status, want.Error, want.FinishedAt = store.StatusFailed, "email_not_verified", ptr(at(time.Hour))
		same(t, "failed "+st, getNotification(t, s, n.ID), want)
	}
	for _, st := range []string{store.StatusDraft, store.StatusSent, store.StatusFailed, store.StatusCanceled} {
		n := notification(w.Website.ID)
		n.Status = st
		n = create(t, s, n)
		wantErr(t, "FailNotification("+st+")", s.FailNotification(ctx, n.ID, "dispatch_error", at(time.Hour)), store.ErrConflict)
		same(t, "refused "+st, getNotification(t, s, n.ID), n)
	}
	wantErr(t, "FailNotification(unknown)", s.FailNotification(ctx, uuid.NewString(), "x", t0), store.ErrNotFound)
}

func testDrafts(t *testing.T, s store.Store) {
	ctx := context.Background()
	w, other := newWebsite(t, s), newWebsite(t, s)
	draft := notification(w.Website.ID)
	draft.Status, draft.Segments = store.StatusDraft, []string{"s1"}
	draft = create(t, s, draft)
	create(t, s, notification(w.Website.ID)) // a queued send, newer than the draft
	n, err := s.CountDrafts(ctx, w.Website.ID)
	noErr(t, "CountDrafts", err)
	same(t, "drafts", n, 1)

	edited := draft
	edited.Title, edited.Body, edited.SendBody, edited.Segments = "Edited", "", []byte(`{"title":"Edited"}`), nil
	noErr(t, "ReplaceDraft(edit)", s.ReplaceDraft(ctx, &edited))
	same(t, "an edited draft keeps its place", edited.Seq, draft.Seq)
	same(t, "edited draft", getNotification(t, s, draft.ID), edited)
	uses, err := s.SegmentUses(ctx, w.Website.ID)
	noErr(t, "SegmentUses", err)
	same(t, "segments of the edited draft", len(uses), 0)

	foreign := edited
	foreign.WebsiteID = other.Website.ID
	wantErr(t, "ReplaceDraft(another website's)", s.ReplaceDraft(ctx, &foreign), store.ErrNotFound)

	sent := edited
	sent.Status, sent.CreatedAt, sent.ScheduledAt, sent.Segments = store.StatusScheduled, at(time.Hour), ptr(at(2*time.Hour)), []string{"s2"}
	noErr(t, "ReplaceDraft(send)", s.ReplaceDraft(ctx, &sent))
	if sent.Seq <= draft.Seq+1 {
		t.Fatalf("a sent draft has seq %d, want one above the newest (%d)", sent.Seq, draft.Seq+1)
	}
	stored := sent
	stored.Segments = nil // not read back; SegmentUses shows them
	same(t, "sent draft", getNotification(t, s, draft.ID), stored)
	uses, err = s.SegmentUses(ctx, w.Website.ID)
	noErr(t, "SegmentUses", err)
	same(t, "segments of the sent draft", uses["s2"].Pending, int64(1))
	next := create(t, s, notification(w.Website.ID))
	if next.Seq <= sent.Seq {
		t.Fatalf("a send made after the draft went out has seq %d, not above %d", next.Seq, sent.Seq)
	}
	wantErr(t, "ReplaceDraft(no longer a draft)", s.ReplaceDraft(ctx, &edited), store.ErrConflict)
	wantErr(t, "DeleteDraft(not a draft)", s.DeleteDraft(ctx, w.Website.ID, draft.ID), store.ErrConflict)
	same(t, "a refused delete", getNotification(t, s, draft.ID), stored)

	gone := notification(w.Website.ID)
	gone.Status = store.StatusDraft
	gone = create(t, s, gone)
	wantErr(t, "DeleteDraft(another website's)", s.DeleteDraft(ctx, other.Website.ID, gone.ID), store.ErrNotFound)
	noErr(t, "DeleteDraft", s.DeleteDraft(ctx, w.Website.ID, gone.ID))
	_, err = s.Notification(ctx, w.Website.ID, gone.ID)
	wantErr(t, "Notification(deleted draft)", err, store.ErrNotFound)
	wantErr(t, "DeleteDraft(again)", s.DeleteDraft(ctx, w.Website.ID, gone.ID), store.ErrNotFound)
	n, err = s.CountDrafts(ctx, w.Website.ID)
	noErr(t, "CountDrafts", err)
	same(t, "drafts left", n, 0)
}

func testCancel(t *testing.T, s store.Store) {
	ctx := context.Background()
	w, other := newWebsite(t, s), newWebsite(t, s)
	for _, st := range []string{store.StatusScheduled, store.StatusHeldForReview} {
		n := notification(w.Website.ID)
		n.Status = st
		n = create(t, s, n)
		wantErr(t, "CancelNotification(another website's)", s.CancelNotification(ctx, other.Website.ID, n.ID, at(time.Hour)), store.ErrNotFound)
		noErr(t, "CancelNotification("+st+")", s.CancelNotification(ctx, w.Website.ID, n.ID, at(time.Hour)))
		want := n
		want.Status, want.FinishedAt = store.StatusCanceled, ptr(at(time.Hour))
		same(t, "canceled "+st, getNotification(t, s, n.ID), want)
		wantErr(t, "CancelNotification(again)", s.CancelNotification(ctx, w.Website.ID, n.ID, at(time.Hour)), store.ErrNotFound)
	}
	for _, st := range []string{store.StatusDraft, store.StatusQueued, store.StatusSending, store.StatusSent, store.StatusFailed} {
		n := notification(w.Website.ID)
		n.Status = st
		n = create(t, s, n)
		wantErr(t, "CancelNotification("+st+")", s.CancelNotification(ctx, w.Website.ID, n.ID, at(time.Hour)), store.ErrNotFound)
		same(t, "refused "+st, getNotification(t, s, n.ID), n)
	}
}
