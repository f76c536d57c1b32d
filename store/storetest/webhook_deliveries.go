package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/store"
)

var webhookDeliveryCases = []testCase{
	{"Webhooks", testWebhooks},
	{"UpdateWebhook", testUpdateWebhook},
	{"UpdateWebhookTurnsOff", testUpdateWebhookTurnsOff},
	{"DeleteWebhook", testDeleteWebhook},
	{"QueueDeliveries", testQueueDeliveries},
	{"QueueDeliveriesConcurrent", testQueueDeliveriesConcurrent},
	{"AddDelivery", testAddDelivery},
	{"ClaimDeliveries", testClaimDeliveries},
	{"ClaimDeliveriesConcurrent", testClaimDeliveriesConcurrent},
	{"FinishSuccess", testFinishSuccess},
	{"FinishFailure", testFinishFailure},
	{"FinishOneShot", testFinishOneShot},
	{"FinishAfterTurnedOff", testFinishAfterTurnedOff},
	{"DisableWebhook", testDisableWebhook},
	{"DisableWebhookConcurrent", testDisableWebhookConcurrent},
	{"DeliveryLog", testDeliveryLog},
	{"Resend", testResend},
	{"PruneWebhookLog", testPruneWebhookLog},
	{"Emails", testEmails},
	{"ClaimEmailsConcurrent", testClaimEmailsConcurrent},
}

// newWebhook creates an enabled webhook of the website, made at created.
func newWebhook(t *testing.T, s store.Store, websiteID string, created time.Time) store.Webhook {
	t.Helper()
	id := uuid.NewString()
	w := store.Webhook{
		ID:        id,
		WebsiteID: websiteID,
		URL:       "https://hooks.example.com/" + id[:8],
		Events:    []string{"notification.sent", "subscriber.created"},
		Secret:    "whsec_" + id[:8] + id[9:13],
		Enabled:   true,
		CreatedAt: created,
	}
	noErr(t, "CreateWebhook", s.CreateWebhook(context.Background(), w))
	return w
}

func getWebhook(t *testing.T, s store.Store, websiteID, id string) store.Webhook {
	t.Helper()
	w, err := s.Webhook(context.Background(), websiteID, id)
	noErr(t, "Webhook", err)
	return w
}

// eventDelivery returns a new delivery of an outbox event to the webhook,
// due when made.
func eventDelivery(w store.Webhook, created time.Time) store.WebhookDelivery {
	id, eventID := uuid.NewString(), uuid.NewString()
	return store.WebhookDelivery{
		ID:            id,
		WebhookID:     w.ID,
		WebsiteID:     w.WebsiteID,
		Event:         "notification.sent",
		EventID:       eventID,
		Body:          []byte(fmt.Sprintf(`{"event":"notification.sent","data":{"notificationId":%q}}`, eventID)),
		Status:        store.DeliveryPending,
		CreatedAt:     created,
		NextAttemptAt: ptr(created),
	}
}

// retrying makes d a delivery whose first attempt failed and whose retry
// is due at next.
func retrying(d store.WebhookDelivery, next time.Time) store.WebhookDelivery {
	d.Status = store.DeliveryRetrying
	d.Attempts, d.Retries = 1, 1
	d.LastStatusCode, d.DurationMS, d.Error = ptr(500), ptr(int64(120)), "HTTP 500"
	d.RequestHeaders = map[string]string{"X-RelayBell-Delivery": d.ID}
	d.ResponseBody = "oops"
	d.LastAttemptAt, d.NextAttemptAt = ptr(d.CreatedAt.Add(time.Second)), &next
	return d
}

// finished makes d a delivery that ended with status after one attempt.
func finished(d store.WebhookDelivery, status string) store.WebhookDelivery {
	d.Status, d.Attempts, d.NextAttemptAt = status, 1, nil
	d.LastAttemptAt, d.DurationMS = ptr(d.CreatedAt.Add(time.Second)), ptr(int64(80))
	if status == store.DeliverySucceeded {
		d.LastStatusCode, d.DeliveredAt = ptr(200), d.LastAttemptAt
	} else {
		d.Retries, d.Error = 1, "connection refused"
	}
	return d
}

// testDelivery returns a new test delivery (no outbox event, OneShot).
func testDelivery(w store.Webhook, created time.Time) store.WebhookDelivery {
	d := eventDelivery(w, created)
	d.Event, d.EventID, d.OneShot = "webhook.test", "", true
	d.Body = []byte(fmt.Sprintf(`{"event":"webhook.test","data":{"webhookId":%q}}`, w.ID))
	return d
}

// addDelivery stores d with AddWebhookDelivery and returns it as stored,
// checking that it reads back whole.
func addDelivery(t *testing.T, s store.Store, d store.WebhookDelivery) store.WebhookDelivery {
	t.Helper()
	noErr(t, "AddWebhookDelivery", s.AddWebhookDelivery(context.Background(), d))
	got := getDelivery(t, s, d.WebhookID, d.ID)
	if got.Seq <= 0 {
		t.Fatalf("delivery %s has seq %d, want a positive one", d.ID, got.Seq)
	}
	d.Seq = got.Seq
	same(t, "delivery as stored", got, d)
	return got
}

func getDelivery(t *testing.T, s store.Store, webhookID, id string) store.WebhookDelivery {
	t.Helper()
	d, err := s.WebhookDelivery(context.Background(), webhookID, id)
	noErr(t, "WebhookDelivery", err)
	return d
}

// deliveryIDs are the ids of ds, in order.
func deliveryIDs(ds []store.WebhookDelivery) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.ID
	}
	return out
}

// claim claims at now with a lease of 5 minutes and fails unless it gets
// want, in order, as stored.
func claim(t *testing.T, s store.Store, now time.Time, limit int, want ...store.WebhookDelivery) {
	t.Helper()
	got, err := s.ClaimWebhookDeliveries(context.Background(), now, 5*time.Minute, limit)
	noErr(t, "ClaimWebhookDeliveries", err)
	same(t, fmt.Sprintf("ClaimWebhookDeliveries(%v, limit %d)", now.Sub(t0), limit), got, want)
}

func testWebhooks(t *testing.T, s store.Store) {
	ctx := context.Background()
	w, other := newWebsite(t, s), newWebsite(t, s)
	full := store.Webhook{
		ID: uuid.NewString(), WebsiteID: w.Website.ID, URL: "http://hooks.example.com/full",
		Events: []string{"subscriber.created"}, Secret: "whsec_full", Enabled: true,
		LastStatus: ptr(500), LastFiredAt: ptr(at(40 * time.Second)), ConsecutiveFailures: 3,
		FailingSince: ptr(at(10 * time.Second)), CreatedAt: at(time.Minute),
	}
	noErr(t, "CreateWebhook", s.CreateWebhook(ctx, full))
	off := store.Webhook{
		ID: uuid.NewString(), WebsiteID: w.Website.ID, URL: "https://hooks.example.com/off",
		Secret: "whsec_off", LastStatus: ptr(0), ConsecutiveFailures: 50,
		DisabledReason: store.DisabledFailed50, DisabledAt: ptr(at(90 * time.Second)), CreatedAt: at(2 * time.Minute),
	}
	noErr(t, "CreateWebhook", s.CreateWebhook(ctx, off))
	every := store.Webhook{ // no events: every event
		ID: uuid.NewString(), WebsiteID: w.Website.ID, URL: "https://hooks.example.com/every",
		Secret: "whsec_every", Enabled: true, CreatedAt: at(3 * time.Minute),
	}
	noErr(t, "CreateWebhook", s.CreateWebhook(ctx, every))
	theirs := newWebhook(t, s, other.Website.ID, at(5*time.Minute))

	list, err := s.WebhooksOf(ctx, w.Website.ID)
	noErr(t, "WebhooksOf", err)
	same(t, "WebhooksOf, newest first", list, []store.Webhook{every, off, full})
	list, err = s.WebhooksOf(ctx, other.Website.ID)
	noErr(t, "WebhooksOf(other)", err)
	same(t, "WebhooksOf(other)", list, []store.Webhook{theirs})
	list, err = s.WebhooksOf(ctx, uuid.NewString())
	noErr(t, "WebhooksOf(unknown)", err)
	same(t, "WebhooksOf(unknown)", list, nil)

	same(t, "Webhook", getWebhook(t, s, w.Website.ID, full.ID), full)
	same(t, "Webhook(off)", getWebhook(t, s, w.Website.ID, off.ID), off)
	_, err = s.Webhook(ctx, w.Website.ID, theirs.ID)
	wantErr(t, "Webhook(another website's)", err, store.ErrNotFound)
	_, err = s.Webhook(ctx, other.Website.ID, full.ID)
	wantErr(t, "Webhook(under another website)", err, store.ErrNotFound)
	_, err = s.Webhook(ctx, w.Website.ID, uuid.NewString())
	wantErr(t, "Webhook(unknown)", err, store.ErrNotFound)

	if err := s.CreateWebhook(ctx, full); err == nil {
		t.Fatal("CreateWebhook(same id) succeeded")
	}
	unknown := full
	unknown.ID, unknown.WebsiteID = uuid.NewString(), uuid.NewString()
	if err := s.CreateWebhook(ctx, unknown); err == nil {
		t.Fatal("CreateWebhook(unknown website) succeeded")
	}
}

func testUpdateWebhook(t *testing.T, s store.Store) {
	ctx := context.Background()
	w, other := newWebsite(t, s), newWebsite(t, s)
	h := newWebhook(t, s, w.Website.ID, at(time.Minute))

	want := h
	want.URL, want.Events = "http://other.example.com/hook", []string{"notification.clicked"}
	want.ConsecutiveFailures, want.FailingSince = 12, ptr(at(time.Hour))
	want.DisabledReason, want.DisabledAt = store.DisabledFailing3Day, ptr(at(2*time.Hour))
	got, err := s.UpdateWebhook(ctx, w.Website.ID, h.ID, func(c *store.Webhook) error {
		same(t, "webhook given to change", *c, h)
		c.URL, c.Events = want.URL, want.Events
		c.ConsecutiveFailures, c.FailingSince = want.ConsecutiveFailures, want.FailingSince
		c.DisabledReason, c.DisabledAt = want.DisabledReason, want.DisabledAt
		// Not for change to edit: kept as stored.
		c.Secret, c.CreatedAt, c.LastStatus, c.LastFiredAt = "whsec_changed", at(time.Hour), ptr(201), ptr(at(time.Hour))
		return nil
	})
	noErr(t, "UpdateWebhook", err)
	same(t, "UpdateWebhook result", got, want)
	same(t, "webhook after UpdateWebhook", getWebhook(t, s, w.Website.ID, h.ID), want)

	// The change's error aborts the update and comes back as is.
	errNo := errors.New("no change")
	_, err = s.UpdateWebhook(ctx, w.Website.ID, h.ID, func(c *store.Webhook) error {
		c.URL, c.Enabled = "https://aborted.example.com", false
		return errNo
	})
	if err != errNo {
		t.Fatalf("UpdateWebhook with a failing change: got error %v, want the change's own", err)
	}
	same(t, "webhook after an aborted update", getWebhook(t, s, w.Website.ID, h.ID), want)

	called := false
	change := func(*store.Webhook) error { called = true; return nil }
	_, err = s.UpdateWebhook(ctx, w.Website.ID, uuid.NewString(), change)
	wantErr(t, "UpdateWebhook(unknown)", err, store.ErrNotFound)
	_, err = s.UpdateWebhook(ctx, other.Website.ID, h.ID, change)
	wantErr(t, "UpdateWebhook(under another website)", err, store.ErrNotFound)
	if called {
		t.Fatal("UpdateWebhook called change for a webhook it did not find")
	}
}

// Turning a webhook off through UpdateWebhook fails its waiting normal
// deliveries, not its OneShot ones nor other webhooks'.
func testUpdateWebhookTurnsOff(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	h, h2 := newWebhook(t, s, w.Website.ID, at(time.Minute)), newWebhook(t, s, w.Website.ID, at(time.Minute))
	pending := addDelivery(t, s, eventDelivery(h, at(2*time.Minute)))
	retry := addDelivery(t, s, retrying(eventDelivery(h, at(3*time.Minute)), at(time.Hour)))
	oneShot := addDelivery(t, s, testDelivery(h, at(4*time.Minute)))
	succeeded := addDelivery(t, s, finished(eventDelivery(h, at(5*time.Minute)), store.DeliverySucceeded))
	failed := addDelivery(t, s, finished(eventDelivery(h, at(6*time.Minute)), store.DeliveryFailed))
	others := addDelivery(t, s, eventDelivery(h2, at(7*time.Minute)))
	// One waiting attempt is being made (claimed) as the webhook goes off.
	claim(t, s, at(2*time.Minute), 1, pending)

	// An update that keeps the webhook on fails nothing.
	_, err := s.UpdateWebhook(ctx, w.Website.ID, h.ID, func(c *store.Webhook) error { c.URL += "/v2"; return nil })
	noErr(t, "UpdateWebhook", err)
	same(t, "pending delivery after an update", getDelivery(t, s, h.ID, pending.ID), pending)

	got, err := s.UpdateWebhook(ctx, w.Website.ID, h.ID, func(c *store.Webhook) error { c.Enabled = false; return nil })
	noErr(t, "UpdateWebhook(off)", err)
	if got.Enabled {
		t.Fatal("UpdateWebhook(off) returned an enabled webhook")
	}
	for _, d := range []store.WebhookDelivery{pending, retry} {
		d.Status, d.Error, d.NextAttemptAt = store.DeliveryFailed, "webhook disabled", nil
		same(t, "waiting delivery of a webhook turned off", getDelivery(t, s, h.ID, d.ID), d)
	}
	for _, d := range []store.WebhookDelivery{oneShot, succeeded, failed} {
		same(t, "delivery not failed when the webhook went off", getDelivery(t, s, h.ID, d.ID), d)
	}
	same(t, "other webhook's delivery", getDelivery(t, s, h2.ID, others.ID), others)
	// Nothing of the webhook's normal deliveries is left to claim.
	claim(t, s, at(time.Hour), 10, oneShot, others)

	// Updating a webhook that is off, or turning it back on, fails nothing
	// more.
	later := addDelivery(t, s, eventDelivery(h, at(8*time.Minute)))
	_, err = s.UpdateWebhook(ctx, w.Website.ID, h.ID, func(c *store.Webhook) error { c.URL += "/v3"; return nil })
	noErr(t, "UpdateWebhook(while off)", err)
	got, err = s.UpdateWebhook(ctx, w.Website.ID, h.ID, func(c *store.Webhook) error { c.Enabled = true; return nil })
	noErr(t, "UpdateWebhook(on)", err)
	if !got.Enabled {
		t.Fatal("UpdateWebhook(on) returned a disabled webhook")
	}
	same(t, "delivery added while off", getDelivery(t, s, h.ID, later.ID), later)
}

func testDeleteWebhook(t *testing.T, s store.Store) {
	ctx := context.Background()
	w, other := newWebsite(t, s), newWebsite(t, s)
	h, kept := newWebhook(t, s, w.Website.ID, at(time.Minute)), newWebhook(t, s, w.Website.ID, at(time.Minute))
	theirs := newWebhook(t, s, other.Website.ID, at(time.Minute))
	gone := []store.WebhookDelivery{
		addDelivery(t, s, eventDelivery(h, at(2*time.Minute))),
		addDelivery(t, s, finished(eventDelivery(h, at(3*time.Minute)), store.DeliverySucceeded)),
	}
	keptDelivery := addDelivery(t, s, eventDelivery(kept, at(2*time.Minute)))

	noErr(t, "DeleteWebhook", s.DeleteWebhook(ctx, w.Website.ID, h.ID))
	_, err := s.Webhook(ctx, w.Website.ID, h.ID)
	wantErr(t, "Webhook(deleted)", err, store.ErrNotFound)
	for _, d := range gone {
		_, err := s.WebhookDelivery(ctx, h.ID, d.ID)
		wantErr(t, "WebhookDelivery(of a deleted webhook)", err, store.ErrNotFound)
	}
	ds, err := s.WebhookDeliveries(ctx, h.ID, 0, 0)
	noErr(t, "WebhookDeliveries(deleted webhook)", err)
	same(t, "deliveries of a deleted webhook", ds, nil)
	same(t, "other webhook's delivery", getDelivery(t, s, kept.ID, keptDelivery.ID), keptDelivery)
	claim(t, s, at(time.Hour), 10, keptDelivery)

	wantErr(t, "DeleteWebhook(again)", s.DeleteWebhook(ctx, w.Website.ID, h.ID), store.ErrNotFound)
	wantErr(t, "DeleteWebhook(another website's)", s.DeleteWebhook(ctx, w.Website.ID, theirs.ID), store.ErrNotFound)
	same(t, "another website's webhook", getWebhook(t, s, other.Website.ID, theirs.ID), theirs)
}

func testQueueDeliveries(t *testing.T, s store.Store) {
	ctx := context.Background()
	w, other := newWebsite(t, s), newWebsite(t, s)
	h1, h2 := newWebhook(t, s, w.Website.ID, at(time.Minute)), newWebhook(t, s, other.Website.ID, at(time.Minute))
	off := newWebhook(t, s, w.Website.ID, at(time.Minute))
	_, err := s.UpdateWebhook(ctx, w.Website.ID, off.ID, func(c *store.Webhook) error { c.Enabled = false; return nil })
	noErr(t, "UpdateWebhook(off)", err)
	gone := newWebhook(t, s, w.Website.ID, at(time.Minute))
	noErr(t, "DeleteWebhook", s.DeleteWebhook(ctx, w.Website.ID, gone.ID))

	cursor := func(want int64) {
		t.Helper()
		got, err := s.WebhookCursor(ctx)
		noErr(t, "WebhookCursor", err)
		if got != want {
			t.Fatalf("WebhookCursor = %d, want %d", got, want)
		}
	}
	queue := func(from, to int64, ds []store.WebhookDelivery, want bool) {
		t.Helper()
		moved, err := s.QueueWebhookDeliveries(ctx, from, to, ds)
		noErr(t, "QueueWebhookDeliveries", err)
		if moved != want {
			t.Fatalf("QueueWebhookDeliveries(%d, %d) = %v, want %v", from, to, moved, want)
		}
	}
	log := func(h store.Webhook, want ...store.WebhookDelivery) {
		t.Helper()
		ds, err := s.WebhookDeliveries(ctx, h.ID, 0, 0)
		noErr(t, "WebhookDeliveries", err)
		for i := range want {
			if i < len(ds) {
				want[i].Seq = ds[i].Seq
			}
		}
		same(t, "deliveries of webhook "+h.URL, ds, want)
	}
	cursor(0)

	// One event for every webhook, a repeat of it, and a second event.
	ev1, ev1h2, ev1Off, ev1Gone := eventDelivery(h1, at(2*time.Minute)), eventDelivery(h2, at(2*time.Minute)),
		eventDelivery(off, at(2*time.Minute)), eventDelivery(gone, at(2*time.Minute))
	ev1h2.EventID, ev1Off.EventID, ev1Gone.EventID = ev1.EventID, ev1.EventID, ev1.EventID
	repeat := eventDelivery(h1, at(2*time.Minute))
	repeat.EventID = ev1.EventID
	ev2 := eventDelivery(h1, at(3*time.Minute))
	queue(0, 10, []store.WebhookDelivery{ev1, ev1h2, ev1Off, ev1Gone, repeat, ev2}, true)
	cursor(10)
	log(h1, ev2, ev1)
	log(h2, ev1h2)
	log(off)
	for _, id := range []string{ev1Off.ID, repeat.ID} {
		_, err := s.WebhookDelivery(ctx, h1.ID, id)
		wantErr(t, "WebhookDelivery(left out)", err, store.ErrNotFound)
	}

	// A node that read the cursor before it moved stores nothing.
	queue(0, 12, []store.WebhookDelivery{eventDelivery(h1, at(4*time.Minute))}, false)
	queue(5, 12, []store.WebhookDelivery{eventDelivery(h2, at(4*time.Minute))}, false)
	cursor(10)
	log(h1, ev2, ev1)
	log(h2, ev1h2)

	// A repeat of a pair stored before is left out too.
	again := eventDelivery(h1, at(5*time.Minute))
	again.EventID = ev2.EventID
	ev3 := eventDelivery(h2, at(5*time.Minute))
	queue(10, 20, []store.WebhookDelivery{again, ev3}, true)
	cursor(20)
	log(h1, ev2, ev1)
	log(h2, ev3, ev1h2)

	queue(20, 25, nil, true)
	cursor(25)
	// Queued deliveries are due.
	list, err := s.WebhookDeliveries(ctx, h1.ID, 0, 0)
	noErr(t, "WebhookDeliveries", err)
	ev1.Seq, ev2.Seq = list[1].Seq, list[0].Seq
	list, err = s.WebhookDeliveries(ctx, h2.ID, 0, 0)
	noErr(t, "WebhookDeliveries", err)
	ev1h2.Seq, ev3.Seq = list[1].Seq, list[0].Seq
	claim(t, s, at(time.Hour), 10, ev1, ev1h2, ev2, ev3)
}

// Of nodes queuing from the same cursor at once, one stores its
// deliveries and moves the cursor; the others store nothing.
func testQueueDeliveriesConcurrent(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	h := newWebhook(t, s, w.Website.ID, at(time.Minute))
	const nodes = 12
	var wg sync.WaitGroup
	moved := make([]bool, nodes)
	errs := make([]error, nodes)
	start := make(chan struct{})
	for i := range nodes {
		wg.Go(func() {
			ds := []store.WebhookDelivery{eventDelivery(h, at(time.Minute)), eventDelivery(h, at(time.Minute))}
			<-start
			moved[i], errs[i] = s.QueueWebhookDeliveries(ctx, 0, 10, ds)
		})
	}
	close(start)
	wg.Wait()
	exactlyOne(t, "concurrent QueueWebhookDeliveries", moved, errs)
	ds, err := s.WebhookDeliveries(ctx, h.ID, 0, 0)
	noErr(t, "WebhookDeliveries", err)
	if len(ds) != 2 {
		t.Fatalf("%d deliveries stored, want the 2 of one call", len(ds))
	}
	if c, err := s.WebhookCursor(ctx); err != nil || c != 10 {
		t.Fatalf("WebhookCursor = %d, %v; want 10", c, err)
	}
}

// A delivery made outside the outbox (a test) is stored whatever its
// webhook's state.
func testAddDelivery(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	off := newWebhook(t, s, w.Website.ID, at(time.Minute))
	ok, err := s.DisableWebhook(ctx, w.Website.ID, off.ID, "", at(time.Minute), store.Email{To: "owner@example.com", Subject: "off", Body: "off"})
	noErr(t, "DisableWebhook", err)
	if !ok {
		t.Fatal("DisableWebhook = false")
	}
	// Two tests: no event, so no repeated pair.
	first := addDelivery(t, s, testDelivery(off, at(2*time.Minute)))
	second := addDelivery(t, s, testDelivery(off, at(3*time.Minute)))
	claim(t, s, at(time.Hour), 10, first, second)

	// Every field reads back.
	h := newWebhook(t, s, w.Website.ID, at(time.Minute))
	full := retrying(eventDelivery(h, at(4*time.Minute)), at(2*time.Hour))
	full.RequestHeaders = map[string]string{
		"Content-Type":                  "application/json",
		"X-RelayBell-Signature":         "sha256=00ff",
		"X-RelayBell-Webhook-Signature": "t=1741944413,v1=00ff",
	}
	full.Body = []byte("not json \x00\xff")
	addDelivery(t, s, full)

	missing := testDelivery(store.Webhook{ID: uuid.NewString(), WebsiteID: w.Website.ID}, at(5*time.Minute))
	if err := s.AddWebhookDelivery(ctx, missing); err == nil {
		t.Fatal("AddWebhookDelivery(unknown webhook) succeeded")
	}
}

func testClaimDeliveries(t *testing.T, s store.Store) {
	w := newWebsite(t, s)
	h, h2 := newWebhook(t, s, w.Website.ID, at(time.Minute)), newWebhook(t, s, w.Website.ID, at(time.Minute))
	a := addDelivery(t, s, eventDelivery(h, at(time.Minute)))
	b := addDelivery(t, s, retrying(eventDelivery(h2, at(10*time.Second)), at(30*time.Second)))
	later := addDelivery(t, s, eventDelivery(h, at(2*time.Hour)))
	addDelivery(t, s, finished(eventDelivery(h, at(20*time.Second)), store.DeliverySucceeded))
	addDelivery(t, s, finished(eventDelivery(h2, at(20*time.Second)), store.DeliveryFailed))
	oneShot := addDelivery(t, s, testDelivery(h, at(time.Minute))) // due with a, stored after it

	// Due ones, oldest due first; not the one due later, never the ended.
	claim(t, s, at(time.Hour), 10, b, a, oneShot)
	// Leased: not again, by anyone, until the lease runs out.
	claim(t, s, at(time.Hour), 10)
	claim(t, s, at(time.Hour+5*time.Minute-time.Millisecond), 10)
	claim(t, s, at(time.Hour+5*time.Minute), 10, b, a, oneShot)

	// At most limit, oldest due first.
	claim(t, s, at(2*time.Hour+10*time.Minute), 1, b)
	claim(t, s, at(2*time.Hour+10*time.Minute), 2, a, oneShot)
	claim(t, s, at(2*time.Hour+10*time.Minute), 10, later)
	claim(t, s, at(2*time.Hour+10*time.Minute), 10)
	claim(t, s, at(48*time.Hour), 10, b, a, oneShot, later)
}

// Claims racing from many goroutines never hand out a delivery twice.
func testClaimDeliveriesConcurrent(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	hooks := []store.Webhook{
		newWebhook(t, s, w.Website.ID, at(time.Minute)),
		newWebhook(t, s, w.Website.ID, at(time.Minute)),
		newWebhook(t, s, w.Website.ID, at(time.Minute)),
	}
	const n = 90
	for i := range n {
		d := eventDelivery(hooks[i%len(hooks)], at(time.Duration(i)*time.Millisecond))
		noErr(t, "AddWebhookDelivery", s.AddWebhookDelivery(ctx, d))
	}
	const claimers = 16
	var wg sync.WaitGroup
	got := make([][]string, claimers)
	errs := make([]error, claimers)
	for i := range claimers {
		wg.Go(func() {
			for range n { // bounded: a claim that hands out leased ones never runs dry
				ds, err := s.ClaimWebhookDeliveries(ctx, at(time.Hour), time.Minute, 4)
				if err != nil {
					errs[i] = err
					return
				}
				if len(ds) == 0 {
					return
				}
				got[i] = append(got[i], deliveryIDs(ds)...)
			}
		})
	}
	wg.Wait()
	seen := map[string]int{}
	for i := range claimers {
		noErr(t, "concurrent ClaimWebhookDeliveries", errs[i])
		for _, id := range got[i] {
			seen[id]++
			if seen[id] > 1 {
				t.Fatalf("delivery %s claimed twice", id)
			}
		}
	}
	if len(seen) != n {
		t.Fatalf("%d deliveries claimed, want %d", len(seen), n)
	}
}

func testFinishSuccess(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	h := store.Webhook{
		ID: uuid.NewString(), WebsiteID: w.Website.ID, URL: "https://hooks.example.com/s", Secret: "whsec_s",
		Enabled: true, LastStatus: ptr(500), LastFiredAt: ptr(at(30 * time.Minute)), ConsecutiveFailures: 4,
		FailingSince: ptr(at(10 * time.Minute)), CreatedAt: at(time.Minute),
	}
	noErr(t, "CreateWebhook", s.CreateWebhook(ctx, h))
	d := retrying(eventDelivery(h, at(5*time.Minute)), at(time.Hour))
	d.Attempts, d.Retries = 2, 2
	d = addDelivery(t, s, d)
	claim(t, s, at(time.Hour), 10, d)

	a := store.WebhookAttempt{
		DeliveryID: d.ID, At: at(time.Hour + 250*time.Millisecond), StatusCode: 204, DurationMS: 250,
		RequestHeaders: map[string]string{"X-RelayBell-Delivery": d.ID, "X-RelayBell-Event": d.Event},
		ResponseBody:   "thanks", Succeeded: true,
	}
	got, err := s.FinishWebhookAttempt(ctx, a)
	noErr(t, "FinishWebhookAttempt", err)
	wantHook := h
	wantHook.LastStatus, wantHook.LastFiredAt = ptr(204), ptr(a.At)
	wantHook.ConsecutiveFailures, wantHook.FailingSince = 0, nil
	same(t, "FinishWebhookAttempt result", got, wantHook)
	same(t, "webhook after a success", getWebhook(t, s, w.Website.ID, h.ID), wantHook)

	want := d
	want.Status, want.Attempts = store.DeliverySucceeded, 3
	want.LastStatusCode, want.DurationMS, want.Error = ptr(204), ptr(int64(250)), ""
	want.RequestHeaders, want.ResponseBody = a.RequestHeaders, a.ResponseBody
	want.LastAttemptAt, want.NextAttemptAt, want.DeliveredAt = ptr(a.At), nil, ptr(a.At)
	same(t, "delivery after a success", getDelivery(t, s, h.ID, d.ID), want)
	claim(t, s, at(48*time.Hour), 10)

	_, err = s.FinishWebhookAttempt(ctx, store.WebhookAttempt{DeliveryID: uuid.NewString(), At: at(time.Hour), Succeeded: true})
	wantErr(t, "FinishWebhookAttempt(unknown delivery)", err, store.ErrNotFound)
	noErr(t, "DeleteWebhook", s.DeleteWebhook(ctx, w.Website.ID, h.ID))
	_, err = s.FinishWebhookAttempt(ctx, a)
	wantErr(t, "FinishWebhookAttempt(deleted webhook)", err, store.ErrNotFound)
}

// Failed normal attempts retry while NextAttemptAt is given, set
// FailingSince once and count one failure when the delivery ends.
func testFinishFailure(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	h := newWebhook(t, s, w.Website.ID, at(time.Minute))
	d := addDelivery(t, s, eventDelivery(h, at(time.Minute)))
	wantHook, want := h, d
	step := func(what string, a store.WebhookAttempt) {
		t.Helper()
		got, err := s.FinishWebhookAttempt(ctx, a)
		noErr(t, "FinishWebhookAttempt", err)
		same(t, what+": webhook returned", got, wantHook)
		same(t, what+": webhook", getWebhook(t, s, w.Website.ID, h.ID), wantHook)
		same(t, what+": delivery", getDelivery(t, s, h.ID, d.ID), want)
	}

	claim(t, s, at(time.Minute), 10, d) // leased until 6 minutes
	a := store.WebhookAttempt{
		DeliveryID: d.ID, At: at(time.Minute + 300*time.Millisecond), StatusCode: 500, DurationMS: 300,
		Error: "HTTP 500", RequestHeaders: map[string]string{"X-RelayBell-Delivery": d.ID},
		ResponseBody: "internal error", NextAttemptAt: ptr(at(2 * time.Minute)),
	}
	wantHook.LastStatus, wantHook.LastFiredAt, wantHook.FailingSince = ptr(500), ptr(a.At), ptr(a.At)
	want.Status, want.Attempts, want.Retries = store.DeliveryRetrying, 1, 1
	want.LastStatusCode, want.DurationMS, want.Error = ptr(500), ptr(int64(300)), "HTTP 500"
	want.RequestHeaders, want.ResponseBody = a.RequestHeaders, a.ResponseBody
	want.LastAttemptAt, want.NextAttemptAt = ptr(a.At), a.NextAttemptAt
	step("first failure", a)
	// The attempt ended the lease: the retry is claimed when due.
	claim(t, s, at(2*time.Minute), 10, want)

	// No answer: no status code on the delivery, 0 on the webhook;
	// FailingSince stays the first failure's.
	a = store.WebhookAttempt{
		DeliveryID: d.ID, At: at(2*time.Minute + 10*time.Second), DurationMS: 10000, Error: "timeout",
		RequestHeaders: map[string]string{"X-RelayBell-Delivery": d.ID, "X-Try": "2"},
		NextAttemptAt:  ptr(at(10 * time.Minute)),
	}
	wantHook.LastStatus, wantHook.LastFiredAt = ptr(0), ptr(a.At)
	want.Attempts, want.Retries = 2, 2
	want.LastStatusCode, want.DurationMS, want.Error = nil, ptr(int64(10000)), "timeout"
	want.RequestHeaders, want.ResponseBody = a.RequestHeaders, ""
	want.LastAttemptAt, want.NextAttemptAt = ptr(a.At), a.NextAttemptAt
	step("second failure", a)
	claim(t, s, at(10*time.Minute), 10, want)

	// The last failure ends the delivery and counts one.
	a = store.WebhookAttempt{DeliveryID: d.ID, At: at(10*time.Minute + time.Second), StatusCode: 503, DurationMS: 1000, Error: "HTTP 503"}
	wantHook.LastStatus, wantHook.LastFiredAt, wantHook.ConsecutiveFailures = ptr(503), ptr(a.At), 1
	want.Status, want.Attempts, want.Retries = store.DeliveryFailed, 3, 3
	want.LastStatusCode, want.DurationMS, want.Error = ptr(503), ptr(int64(1000)), "HTTP 503"
	want.RequestHeaders, want.LastAttemptAt, want.NextAttemptAt = nil, ptr(a.At), nil
	step("last failure", a)
	claim(t, s, at(48*time.Hour), 10)

	// Another delivery failing at once adds one more; a success clears
	// the count.
	d2 := addDelivery(t, s, eventDelivery(h, at(20*time.Minute)))
	got, err := s.FinishWebhookAttempt(ctx, store.WebhookAttempt{DeliveryID: d2.ID, At: at(20 * time.Minute), StatusCode: 404, Error: "HTTP 404"})
	noErr(t, "FinishWebhookAttempt", err)
	if got.ConsecutiveFailures != 2 || !got.FailingSince.Equal(*wantHook.FailingSince) {
		t.Fatalf("after a second failed delivery: count %d, failing since %v; want 2, %v", got.ConsecutiveFailures, got.FailingSince, wantHook.FailingSince)
	}
	d3 := addDelivery(t, s, eventDelivery(h, at(30*time.Minute)))
	got, err = s.FinishWebhookAttempt(ctx, store.WebhookAttempt{DeliveryID: d3.ID, At: at(30 * time.Minute), StatusCode: 200, Succeeded: true})
	noErr(t, "FinishWebhookAttempt", err)
	if got.ConsecutiveFailures != 0 || got.FailingSince != nil {
		t.Fatalf("after a success: count %d, failing since %v; want 0, nil", got.ConsecutiveFailures, got.FailingSince)
	}
}

// A OneShot attempt (resend, test) never retries and never counts toward
// turning the webhook off, but its success clears the count.
func testFinishOneShot(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	h := store.Webhook{
		ID: uuid.NewString(), WebsiteID: w.Website.ID, URL: "https://hooks.example.com/o", Secret: "whsec_o",
		Enabled: true, ConsecutiveFailures: 3, FailingSince: ptr(at(5 * time.Minute)), CreatedAt: at(time.Minute),
	}
	noErr(t, "CreateWebhook", s.CreateWebhook(ctx, h))
	d := finished(eventDelivery(h, at(2*time.Minute)), store.DeliveryFailed)
	d.Attempts, d.Retries = 6, 6
	d = addDelivery(t, s, d)

	resent, err := s.ResendWebhookDelivery(ctx, h.ID, d.ID, at(time.Hour))
	noErr(t, "ResendWebhookDelivery", err)
	claim(t, s, at(time.Hour), 10, resent)
	a := store.WebhookAttempt{
		DeliveryID: d.ID, At: at(time.Hour + time.Second), StatusCode: 410, DurationMS: 40, Error: "HTTP 410",
		NextAttemptAt: ptr(at(2 * time.Hour)), // a OneShot attempt does not retry even so
	}
	got, err := s.FinishWebhookAttempt(ctx, a)
	noErr(t, "FinishWebhookAttempt(resend failed)", err)
	wantHook := h
	wantHook.LastStatus, wantHook.LastFiredAt = ptr(410), ptr(a.At)
	same(t, "webhook after a failed resend", got, wantHook)
	want := d
	want.Status, want.OneShot, want.Attempts, want.Retries = store.DeliveryFailed, false, 7, 6
	want.LastStatusCode, want.DurationMS, want.Error = ptr(410), ptr(int64(40)), "HTTP 410"
	want.RequestHeaders, want.ResponseBody, want.LastAttemptAt, want.NextAttemptAt = nil, "", ptr(a.At), nil
	same(t, "delivery after a failed resend", getDelivery(t, s, h.ID, d.ID), want)
	claim(t, s, at(3*time.Hour), 10)

	// A failed test on a webhook without failures leaves FailingSince unset.
	clean := newWebhook(t, s, w.Website.ID, at(time.Minute))
	test := addDelivery(t, s, testDelivery(clean, at(time.Hour)))
	got, err = s.FinishWebhookAttempt(ctx, store.WebhookAttempt{DeliveryID: test.ID, At: at(time.Hour), Error: "connection refused", NextAttemptAt: ptr(at(2 * time.Hour))})
	noErr(t, "FinishWebhookAttempt(test failed)", err)
	if got.ConsecutiveFailures != 0 || got.FailingSince != nil || got.LastStatus == nil || *got.LastStatus != 0 {
		t.Fatalf("after a failed test: count %d, failing since %v, last status %v; want 0, nil, 0", got.ConsecutiveFailures, got.FailingSince, got.LastStatus)
	}
	if test = getDelivery(t, s, clean.ID, test.ID); test.Status != store.DeliveryFailed || test.OneShot || test.Retries != 0 || test.NextAttemptAt != nil {
		t.Fatalf("failed test: status %s, one shot %v, retries %d, next %v; want failed, false, 0, nil", test.Status, test.OneShot, test.Retries, test.NextAttemptAt)
	}

	// A resend's success clears the count.
	_, err = s.ResendWebhookDelivery(ctx, h.ID, d.ID, at(4*time.Hour))
	noErr(t, "ResendWebhookDelivery", err)
	a = store.WebhookAttempt{DeliveryID: d.ID, At: at(4*time.Hour + time.Second), StatusCode: 200, DurationMS: 20, ResponseBody: "ok", Succeeded: true}
	got, err = s.FinishWebhookAttempt(ctx, a)
	noErr(t, "FinishWebhookAttempt(resend succeeded)", err)
	wantHook.LastStatus, wantHook.LastFiredAt, wantHook.ConsecutiveFailures, wantHook.FailingSince = ptr(200), ptr(a.At), 0, nil
	same(t, "webhook after a resend's success", got, wantHook)
	want.Status, want.Attempts, want.Retries = store.DeliverySucceeded, 8, 6
	want.LastStatusCode, want.DurationMS, want.Error, want.ResponseBody = ptr(200), ptr(int64(20)), "", "ok"
	want.LastAttemptAt, want.DeliveredAt = ptr(a.At), ptr(a.At)
	same(t, "delivery after a resend's success", getDelivery(t, s, h.ID, d.ID), want)
}

// An attempt under way when its webhook goes off is recorded, but a
// normal one does not retry: waiting retries stop while it is off.
func testFinishAfterTurnedOff(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	h := newWebhook(t, s, w.Website.ID, at(time.Minute))
	fails := addDelivery(t, s, eventDelivery(h, at(time.Minute)))
	succeeds := addDelivery(t, s, eventDelivery(h, at(time.Minute)))
	claim(t, s, at(time.Minute), 10, fails, succeeds)
	ok, err := s.DisableWebhook(ctx, w.Website.ID, h.ID, "", at(time.Minute+time.Second), store.Email{To: "owner@example.com", Subject: "s", Body: "b"})
	noErr(t, "DisableWebhook", err)
	if !ok {
		t.Fatal("DisableWebhook = false")
	}

	_, err = s.FinishWebhookAttempt(ctx, store.WebhookAttempt{
		DeliveryID: fails.ID, At: at(time.Minute + 2*time.Second), StatusCode: 502, Error: "HTTP 502",
		NextAttemptAt: ptr(at(2 * time.Minute)),
	})
	noErr(t, "FinishWebhookAttempt(failed)", err)
	if d := getDelivery(t, s, h.ID, fails.ID); d.Status != store.DeliveryFailed || d.NextAttemptAt != nil || d.Attempts != 1 || d.Error != "HTTP 502" {
		t.Fatalf("failed attempt on a webhook turned off: status %s, next %v, attempts %d, error %q; want failed, nil, 1, HTTP 502",
			d.Status, d.NextAttemptAt, d.Attempts, d.Error)
	}
	_, err = s.FinishWebhookAttempt(ctx, store.WebhookAttempt{
		DeliveryID: succeeds.ID, At: at(time.Minute + 2*time.Second), StatusCode: 200, Succeeded: true,
	})
	noErr(t, "FinishWebhookAttempt(succeeded)", err)
	if d := getDelivery(t, s, h.ID, succeeds.ID); d.Status != store.DeliverySucceeded || d.DeliveredAt == nil {
		t.Fatalf("successful attempt on a webhook turned off: status %s, delivered %v; want succeeded", d.Status, d.DeliveredAt)
	}
	claim(t, s, at(48*time.Hour), 10)
}

func testDisableWebhook(t *testing.T, s store.Store) {
	ctx := context.Background()
	w, other := newWebsite(t, s), newWebsite(t, s)
	h, h2 := newWebhook(t, s, w.Website.ID, at(time.Minute)), newWebhook(t, s, w.Website.ID, at(time.Minute))
	theirs := newWebhook(t, s, other.Website.ID, at(time.Minute))
	pending := addDelivery(t, s, eventDelivery(h, at(2*time.Minute)))
	retry := addDelivery(t, s, retrying(eventDelivery(h, at(3*time.Minute)), at(time.Hour)))
	oneShot := addDelivery(t, s, testDelivery(h, at(4*time.Minute)))
	succeeded := addDelivery(t, s, finished(eventDelivery(h, at(5*time.Minute)), store.DeliverySucceeded))
	others := addDelivery(t, s, eventDelivery(h2, at(6*time.Minute)))
	emails := func(want ...store.Email) {
		t.Helper()
		got, err := s.Emails(ctx, false, 0)
		noErr(t, "Emails", err)
		same(t, "e-mail outbox", got, want)
	}

	mail := store.Email{
		ID: uuid.NewString(), To: w.Account.OwnerEmail, Subject: "Your webhook was turned off",
		Body: "It failed 50 times in a row.", CreatedAt: at(time.Hour),
	}
	ok, err := s.DisableWebhook(ctx, w.Website.ID, h.ID, store.DisabledFailed50, at(time.Hour), mail)
	noErr(t, "DisableWebhook", err)
	if !ok {
		t.Fatal("DisableWebhook = false, want true")
	}
	want := h
	want.Enabled, want.DisabledReason, want.DisabledAt = false, store.DisabledFailed50, ptr(at(time.Hour))
	same(t, "webhook turned off", getWebhook(t, s, w.Website.ID, h.ID), want)
	for _, d := range []store.WebhookDelivery{pending, retry} {
		d.Status, d.Error, d.NextAttemptAt = store.DeliveryFailed, "webhook disabled", nil
		same(t, "waiting delivery of a webhook turned off", getDelivery(t, s, h.ID, d.ID), d)
	}
	same(t, "OneShot delivery", getDelivery(t, s, h.ID, oneShot.ID), oneShot)
	same(t, "succeeded delivery", getDelivery(t, s, h.ID, succeeded.ID), succeeded)
	same(t, "other webhook's delivery", getDelivery(t, s, h2.ID, others.ID), others)
	emails(mail)

	// Once only: a webhook already off, gone or another website's is left
	// as it is, and no mail is queued.
	second := store.Email{ID: uuid.NewString(), To: "x@example.com", Subject: "again", Body: "again", CreatedAt: at(2 * time.Hour)}
	for _, c := range []struct{ what, websiteID, id string }{
		{"already off", w.Website.ID, h.ID},
		{"unknown", w.Website.ID, uuid.NewString()},
		{"another website's", w.Website.ID, theirs.ID},
	} {
		ok, err := s.DisableWebhook(ctx, c.websiteID, c.id, store.DisabledFailing3Day, at(2*time.Hour), second)
		noErr(t, "DisableWebhook("+c.what+")", err)
		if ok {
			t.Fatalf("DisableWebhook(%s) = true, want false", c.what)
		}
	}
	same(t, "webhook turned off twice", getWebhook(t, s, w.Website.ID, h.ID), want)
	same(t, "another website's webhook", getWebhook(t, s, other.Website.ID, theirs.ID), theirs)
	emails(mail)

	// No reason (a 410).
	third := store.Email{ID: uuid.NewString(), To: w.Account.OwnerEmail, Subject: "gone", Body: "410", CreatedAt: at(3 * time.Hour)}
	ok, err = s.DisableWebhook(ctx, w.Website.ID, h2.ID, "", at(3*time.Hour), third)
	noErr(t, "DisableWebhook(no reason)", err)
	if !ok {
		t.Fatal("DisableWebhook(no reason) = false, want true")
	}
	want2 := h2
	want2.Enabled, want2.DisabledAt = false, ptr(at(3*time.Hour))
	same(t, "webhook turned off without a reason", getWebhook(t, s, w.Website.ID, h2.ID), want2)
	emails(third, mail)
}

// Of many callers turning a webhook off at once, one does, and one mail
// is queued.
func testDisableWebhookConcurrent(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	h := newWebhook(t, s, w.Website.ID, at(time.Minute))
	for i := range 10 {
		addDelivery(t, s, eventDelivery(h, at(time.Duration(i)*time.Second)))
	}
	const callers = 12
	var wg sync.WaitGroup
	oks := make([]bool, callers)
	errs := make([]error, callers)
	for i := range callers {
		wg.Go(func() {
			oks[i], errs[i] = s.DisableWebhook(ctx, w.Website.ID, h.ID, store.DisabledFailing3Day, at(time.Hour),
				store.Email{To: w.Account.OwnerEmail, Subject: fmt.Sprint("caller ", i), Body: "off", CreatedAt: at(time.Hour)})
		})
	}
	wg.Wait()
	exactlyOne(t, "concurrent DisableWebhook", oks, errs)
	mails, err := s.Emails(ctx, false, 0)
	noErr(t, "Emails", err)
	if len(mails) != 1 {
		t.Fatalf("%d e-mails queued, want 1", len(mails))
	}
	claim(t, s, at(2*time.Hour), 100)
}

func testDeliveryLog(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	h, h2 := newWebhook(t, s, w.Website.ID, at(time.Minute)), newWebhook(t, s, w.Website.ID, at(time.Minute))
	var all []store.WebhookDelivery // newest first
	for i := range 10 {
		if i%3 == 2 {
			addDelivery(t, s, eventDelivery(h2, at(time.Duration(i)*time.Minute)))
			continue
		}
		d := eventDelivery(h, at(time.Duration(i)*time.Minute))
		if i%2 == 1 {
			d = finished(d, store.DeliverySucceeded)
			d.RequestHeaders, d.ResponseBody = map[string]string{"X-RelayBell-Delivery": d.ID}, "ok"
		}
		all = append([]store.WebhookDelivery{addDelivery(t, s, d)}, all...)
	}
	for i := 1; i < len(all); i++ {
		if all[i].Seq >= all[i-1].Seq {
			t.Fatalf("seqs not increasing with insertion: %d then %d", all[i].Seq, all[i-1].Seq)
		}
	}
	f := func(beforeSeq int64, limit int, want []store.WebhookDelivery) {
		t.Helper()
		got, err := s.WebhookDeliveries(ctx, h.ID, beforeSeq, limit)
		noErr(t, "WebhookDeliveries", err)
		same(t, fmt.Sprintf("WebhookDeliveries(%d, %d)", beforeSeq, limit), got, want)
	}
	f(0, 100, all)
	f(0, 3, all[:3])
	f(all[2].Seq, 3, all[3:6])
	f(all[5].Seq, 3, all[6:])
	f(all[6].Seq, 3, nil)
	f(all[0].Seq+1000, 2, all[:2])
	f(all[3].Seq, 100, all[4:])

	_, err := s.WebhookDelivery(ctx, h2.ID, all[0].ID)
	wantErr(t, "WebhookDelivery(another webhook's)", err, store.ErrNotFound)
	_, err = s.WebhookDelivery(ctx, h.ID, uuid.NewString())
	wantErr(t, "WebhookDelivery(unknown)", err, store.ErrNotFound)
}

func testResend(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	h, h2 := newWebhook(t, s, w.Website.ID, at(time.Minute)), newWebhook(t, s, w.Website.ID, at(time.Minute))
	pending := addDelivery(t, s, eventDelivery(h, at(2*time.Minute)))
	retry := addDelivery(t, s, retrying(eventDelivery(h, at(3*time.Minute)), at(time.Hour)))
	succeeded := addDelivery(t, s, finished(eventDelivery(h, at(4*time.Minute)), store.DeliverySucceeded))
	failed := addDelivery(t, s, finished(eventDelivery(h, at(5*time.Minute)), store.DeliveryFailed))

	for _, d := range []store.WebhookDelivery{pending, retry} {
		_, err := s.ResendWebhookDelivery(ctx, h.ID, d.ID, at(time.Hour))
		wantErr(t, "ResendWebhookDelivery("+d.Status+")", err, store.ErrConflict)
		same(t, "delivery after a refused resend", getDelivery(t, s, h.ID, d.ID), d)
	}
	_, err := s.ResendWebhookDelivery(ctx, h.ID, uuid.NewString(), at(time.Hour))
	wantErr(t, "ResendWebhookDelivery(unknown)", err, store.ErrNotFound)
	_, err = s.ResendWebhookDelivery(ctx, h2.ID, succeeded.ID, at(time.Hour))
	wantErr(t, "ResendWebhookDelivery(another webhook's)", err, store.ErrNotFound)

	for _, d := range []store.WebhookDelivery{succeeded, failed} {
		got, err := s.ResendWebhookDelivery(ctx, h.ID, d.ID, at(2*time.Hour))
		noErr(t, "ResendWebhookDelivery("+d.Status+")", err)
		want := d
		want.Status, want.OneShot, want.NextAttemptAt = store.DeliveryPending, true, ptr(at(2*time.Hour))
		same(t, "ResendWebhookDelivery result", got, want)
		same(t, "resent delivery", getDelivery(t, s, h.ID, d.ID), want)
		_, err = s.ResendWebhookDelivery(ctx, h.ID, d.ID, at(2*time.Hour))
		wantErr(t, "ResendWebhookDelivery(resent, waiting)", err, store.ErrConflict)
	}
	// A resend under way (claimed) is still waiting.
	resent, err := s.ClaimWebhookDeliveries(ctx, at(2*time.Hour), time.Minute, 10)
	noErr(t, "ClaimWebhookDeliveries", err)
	if len(resent) != 4 {
		t.Fatalf("claimed %d deliveries, want 4", len(resent))
	}
	_, err = s.ResendWebhookDelivery(ctx, h.ID, succeeded.ID, at(2*time.Hour))
	wantErr(t, "ResendWebhookDelivery(claimed)", err, store.ErrConflict)
}

func testPruneWebhookLog(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	h := newWebhook(t, s, w.Website.ID, at(time.Minute))
	addDelivery(t, s, finished(eventDelivery(h, at(time.Minute)), store.DeliverySucceeded))
	addDelivery(t, s, eventDelivery(h, at(2*time.Minute)))
	kept := []store.WebhookDelivery{
		addDelivery(t, s, eventDelivery(h, at(time.Hour))), // not before: kept
		addDelivery(t, s, eventDelivery(h, at(2*time.Hour))),
	}

	var events []store.WebhookEvent
	for _, d := range []time.Duration{time.Minute, 2 * time.Minute, 3 * time.Minute, 2 * time.Hour} {
		noErr(t, "AddWebhookEvent", s.AddWebhookEvent(ctx, store.WebhookEvent{
			ID: uuid.NewString(), WebsiteID: w.Website.ID, Event: "test.event", Data: []byte(`{}`), CreatedAt: at(d),
		}))
	}
	events = webhookEvents(t, s, 0)
	// The cursor has passed the first two events only.
	moved, err := s.QueueWebhookDeliveries(ctx, 0, events[1].Seq, nil)
	noErr(t, "QueueWebhookDeliveries", err)
	if !moved {
		t.Fatal("QueueWebhookDeliveries = false")
	}

	n, err := s.PruneWebhookLog(ctx, at(time.Hour))
	noErr(t, "PruneWebhookLog", err)
	if n != 2 {
		t.Fatalf("PruneWebhookLog = %d, want 2", n)
	}
	ds, err := s.WebhookDeliveries(ctx, h.ID, 0, 0)
	noErr(t, "WebhookDeliveries", err)
	same(t, "deliveries after pruning", ds, []store.WebhookDelivery{kept[1], kept[0]})
	wantEvents(t, "events after pruning", webhookEvents(t, s, 0), events[2:])

	n, err = s.PruneWebhookLog(ctx, at(time.Hour))
	noErr(t, "PruneWebhookLog(again)", err)
	if n != 0 {
		t.Fatalf("PruneWebhookLog(again) = %d, want 0", n)
	}
}

func testEmails(t *testing.T, s store.Store) {
	ctx := context.Background()
	mail := func(d time.Duration) store.Email {
		return store.Email{
			ID: uuid.NewString(), To: "owner@example.com", Subject: fmt.Sprint("mail at ", d),
			Body: "Hello,\nyour webhook…", CreatedAt: at(d),
		}
	}
	m1, m2, m3 := mail(time.Minute), mail(2*time.Minute), mail(3*time.Minute)
	for _, m := range []store.Email{m2, m1, m3} { // oldest is by time, not insertion
		noErr(t, "AddEmail", s.AddEmail(ctx, m))
	}
	list := func(unsentOnly bool, limit int, want ...store.Email) {
		t.Helper()
		got, err := s.Emails(ctx, unsentOnly, limit)
		noErr(t, "Emails", err)
		same(t, fmt.Sprintf("Emails(%v, %d)", unsentOnly, limit), got, want)
	}
	claimMail := func(now time.Time, limit int, want ...store.Email) {
		t.Helper()
		got, err := s.ClaimEmails(ctx, now, 5*time.Minute, limit)
		noErr(t, "ClaimEmails", err)
		same(t, fmt.Sprintf("ClaimEmails(%v, %d)", now.Sub(t0), limit), got, want)
	}
	list(false, 0, m3, m2, m1)
	list(false, 2, m3, m2)
	list(true, 10, m3, m2, m1)

	claimMail(at(time.Hour), 2, m1, m2)
	claimMail(at(time.Hour), 10, m3)
	claimMail(at(time.Hour+time.Minute), 10)

	noErr(t, "MarkEmailSent", s.MarkEmailSent(ctx, m1.ID, at(time.Hour+time.Second)))
	sent := m1
	sent.SentAt = ptr(at(time.Hour + time.Second))
	list(false, 0, m3, m2, sent)
	list(true, 0, m3, m2)
	// The leases run out; the sent message is never claimed again.
	claimMail(at(time.Hour+5*time.Minute), 10, m2, m3)
	noErr(t, "MarkEmailSent", s.MarkEmailSent(ctx, m2.ID, at(time.Hour+6*time.Minute)))
	noErr(t, "MarkEmailSent", s.MarkEmailSent(ctx, m3.ID, at(time.Hour+6*time.Minute)))
	claimMail(at(48*time.Hour), 10)
	list(true, 0)

	if err := s.MarkEmailSent(ctx, uuid.NewString(), at(time.Hour)); err == nil {
		t.Fatal("MarkEmailSent(unknown) succeeded")
	}
}

// Claims of e-mails racing never hand out a message twice.
func testClaimEmailsConcurrent(t *testing.T, s store.Store) {
	ctx := context.Background()
	const n = 40
	for i := range n {
		noErr(t, "AddEmail", s.AddEmail(ctx, store.Email{
			ID: uuid.NewString(), To: "a@example.com", Subject: "s", Body: "b", CreatedAt: at(time.Duration(i) * time.Millisecond),
		}))
	}
	const claimers = 8
	var wg sync.WaitGroup
	got := make([][]string, claimers)
	errs := make([]error, claimers)
	for i := range claimers {
		wg.Go(func() {
			for range n { // bounded, as in testClaimDeliveriesConcurrent
				ms, err := s.ClaimEmails(ctx, at(time.Hour), time.Minute, 3)
				if err != nil {
					errs[i] = err
					return
				}
				if len(ms) == 0 {
					return
				}
				for _, m := range ms {
					got[i] = append(got[i], m.ID)
				}
			}
		})
	}
	wg.Wait()
	seen := map[string]bool{}
	for i := range claimers {
		noErr(t, "concurrent ClaimEmails", errs[i])
		for _, id := range got[i] {
			if seen[id] {
				t.Fatalf("e-mail %s claimed twice", id)
			}
			seen[id] = true
		}
	}
	if len(seen) != n {
		t.Fatalf("%d e-mails claimed, want %d", len(seen), n)
	}
}

// exactlyOne fails unless every concurrent call succeeded and exactly one
// reported true.
func exactlyOne(t *testing.T, what string, oks []bool, errs []error) {
	t.Helper()
	n := 0
	for i := range oks {
		noErr(t, what, errs[i])
		if oks[i] {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%s: %d calls reported true, want 1", what, n)
	}
}
