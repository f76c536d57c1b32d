package storetest

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/store"
)

var integrationCases = []testCase{
	{"Ledger", testIntegrationLedger},
	{"Stock", testCommerceStock},
}

func testIntegrationLedger(t *testing.T, s store.Store) {
	ctx := context.Background()
	w, other := newWebsite(t, s), newWebsite(t, s)
	id := w.Website.ID
	d1 := store.IntegrationDelivery{WebsiteID: id, Platform: "shopify", DeliveryID: "b54557e4", Topic: "orders/paid",
		Event: "purchase", EventID: uuid.NewString(), ReceivedAt: at(0)}
	d2 := store.IntegrationDelivery{WebsiteID: id, Platform: "shopify", DeliveryID: "c1", Topic: "customers/create",
		ReceivedAt: at(0).Add(time.Minute)}
	d3 := store.IntegrationDelivery{WebsiteID: id, Platform: "woocommerce", DeliveryID: "b54557e4", Topic: "order.created", ReceivedAt: at(0).Add(2 * time.Minute)}
	for _, d := range []store.IntegrationDelivery{d1, d2, d3} {
		noErr(t, "RecordIntegrationDelivery", s.RecordIntegrationDelivery(ctx, d))
	}
	// A retry of a delivery changes nothing.
	again := d1
	again.Event, again.ReceivedAt = "", at(0).Add(time.Hour)
	wantErr(t, "RecordIntegrationDelivery again", s.RecordIntegrationDelivery(ctx, again), store.ErrConflict)
	bad := d1
	bad.WebsiteID = uuid.NewString()
	wantErr(t, "RecordIntegrationDelivery of an unknown website", s.RecordIntegrationDelivery(ctx, bad), store.ErrNotFound)

	for _, c := range []struct {
		website, platform, delivery string
		want                        bool
	}{
		{id, "shopify", "b54557e4", true}, {id, "woocommerce", "b54557e4", true}, {id, "shopify", "nope", false},
		{other.Website.ID, "shopify", "b54557e4", false},
	} {
		got, err := s.IntegrationDelivered(ctx, c.website, c.platform, c.delivery)
		noErr(t, "IntegrationDelivered", err)
		if got != c.want {
			t.Fatalf("IntegrationDelivered %v = %v", c, got)
		}
	}
	list, err := s.IntegrationDeliveries(ctx, id, "shopify", 10)
	noErr(t, "IntegrationDeliveries", err)
	want := []store.IntegrationDelivery{d2, d1}
	for i := range list {
		list[i].ReceivedAt = list[i].ReceivedAt.UTC()
	}
	if !reflect.DeepEqual(list, want) {
		t.Fatalf("IntegrationDeliveries\n %+v\nwant\n %+v", list, want)
	}
	if list, err := s.IntegrationDeliveries(ctx, id, "shopify", 1); err != nil || len(list) != 1 || list[0].DeliveryID != "c1" {
		t.Fatalf("limit 1: %+v %v", list, err)
	}
	if list, err := s.IntegrationDeliveries(ctx, other.Website.ID, "shopify", 10); err != nil || len(list) != 0 {
		t.Fatalf("another website's: %+v %v", list, err)
	}
	// The purge forgets deliveries received before its cutoff, and only
	// them.
	n, err := s.PurgeBehavior(ctx, store.BehaviorPurge{Deliveries: at(0).Add(90 * time.Second)})
	noErr(t, "PurgeBehavior", err)
	if n != 2 {
		t.Fatalf("purged %d rows, want the 2 deliveries received before the cutoff", n)
	}
	for _, c := range []struct {
		platform string
		want     bool
	}{{"shopify", false}, {"woocommerce", true}} {
		if got, err := s.IntegrationDelivered(ctx, id, c.platform, "b54557e4"); err != nil || got != c.want {
			t.Fatalf("%s delivery after the purge: %v %v, want %v", c.platform, got, err, c.want)
		}
	}
	// The last error is the latest delivery that failed, however many
	// came after it; none failed: ErrNotFound.
	_, err = s.LastIntegrationError(ctx, id, "shopify")
	wantErr(t, "LastIntegrationError of none failed", err, store.ErrNotFound)
	failed := store.IntegrationDelivery{WebsiteID: id, Platform: "shopify", DeliveryID: "e1", Topic: "products/update",
		Error: "products/update without a product id", ReceivedAt: at(0).Add(3 * time.Minute)}
	older := failed
	older.DeliveryID, older.ReceivedAt = "e0", at(0).Add(150*time.Second)
	later := store.IntegrationDelivery{WebsiteID: id, Platform: "shopify", DeliveryID: "e2", Topic: "customers/create",
		ReceivedAt: at(0).Add(4 * time.Minute)}
	for _, d := range []store.IntegrationDelivery{older, failed, later} {
		noErr(t, "RecordIntegrationDelivery", s.RecordIntegrationDelivery(ctx, d))
	}
	last, err := s.LastIntegrationError(ctx, id, "shopify")
	noErr(t, "LastIntegrationError", err)
	last.ReceivedAt = last.ReceivedAt.UTC()
	same(t, "LastIntegrationError", last, failed)
	for _, c := range []struct{ website, platform string }{{id, "woocommerce"}, {other.Website.ID, "shopify"}} {
		_, err := s.LastIntegrationError(ctx, c.website, c.platform)
		wantErr(t, "LastIntegrationError of "+c.platform, err, store.ErrNotFound)
	}
}

// An item's return to stock is reported once: not at its first sight, not
// while it stays in stock, once of two deliveries telling the same return
// (at once or one after the other), again for the retry of the delivery
// that reported it; per website and platform.
func testCommerceStock(t *testing.T, s store.Store) {
	ctx := context.Background()
	w, other := newWebsite(t, s), newWebsite(t, s)
	id := w.Website.ID
	step := 0
	observe := func(website, platform, item string, in bool, delivery string, want bool) {
		t.Helper()
		step++
		got, err := s.ObserveCommerceStock(ctx, website, platform, item, in, delivery, at(time.Duration(step)*time.Second))
		noErr(t, "ObserveCommerceStock", err)
		if got != want {
			t.Fatalf("step %d: %s %s in stock %v by %s: back %v, want %v", step, platform, item, in, delivery, got, want)
		}
	}
	observe(id, "woocommerce", "799", true, "d1", false)  // first sight, in stock
	observe(id, "woocommerce", "799", true, "d1", false)  // its retry
	observe(id, "woocommerce", "799", true, "d2", false)  // in → in
	observe(id, "woocommerce", "799", false, "d3", false) // out
	observe(id, "woocommerce", "799", false, "d4", false) // out → out
	observe(id, "woocommerce", "799", true, "d5", true)   // out → in
	observe(id, "woocommerce", "799", true, "d6", false)  // the same return under another delivery id
	observe(id, "woocommerce", "799", true, "d5", true)   // the retry of d5 tells it again (the same event)
	observe(id, "woocommerce", "800", false, "d7", false) // first sight, out of stock
	observe(id, "woocommerce", "800", true, "d7", true)   // back (the same delivery may tell both)
	// Per website and platform.
	observe(other.Website.ID, "woocommerce", "799", false, "d8", false)
	observe(id, "shopify", "799", false, "d8", false)
	observe(id, "woocommerce", "799", true, "d9", false)
	observe(other.Website.ID, "woocommerce", "799", true, "d9", true)

	// Deliveries are taken in the order of their times, not of their
	// arrival: an older one changes nothing and reports nothing. In order,
	// in (t1), out (t2), in (t3), in (t4) report the return at t3 once.
	for _, c := range []struct {
		item, delivery string
		in             bool
		t              time.Duration
		want           bool
	}{
		{"900", "o1", true, 1, false}, {"900", "o2", false, 2, false}, {"900", "o3", true, 3, true}, {"900", "o4", true, 4, false},
		// d3 arriving before d2: no return is seen (the stored state
		// stays in stock as of t3), and the late d2 does not make d4 one.
		{"901", "o1", true, 1, false}, {"901", "o3", true, 3, false}, {"901", "o2", false, 2, false}, {"901", "o4", true, 4, false},
		// A late in-stock delivery older than the out-of-stock one is no
		// return; the next newer one is.
		{"902", "o1", true, 1, false}, {"902", "o3", false, 3, false}, {"902", "o2", true, 2, false}, {"902", "o4", true, 4, true},
		{"902", "o4", true, 4, true}, // its retry tells it again
		// An out-of-stock delivery older than a return does not undo it.
		{"903", "o1", false, 1, false}, {"903", "o3", true, 3, true}, {"903", "o2", false, 2, false}, {"903", "o4", true, 4, false},
	} {
		got, err := s.ObserveCommerceStock(ctx, id, "woocommerce", c.item, c.in, c.delivery, at(time.Hour+c.t*time.Second))
		noErr(t, "ObserveCommerceStock", err)
		if got != c.want {
			t.Fatalf("item %s in stock %v by %s at t%d: back %v, want %v", c.item, c.in, c.delivery, c.t, got, c.want)
		}
	}

	// A return taken back (its event not stored): the next delivery in
	// stock, or the retry, reports it; another delivery's undo, or one
	// after a newer return, does nothing.
	undo := func(item, delivery string) {
		t.Helper()
		noErr(t, "UndoCommerceRestock", s.UndoCommerceRestock(ctx, id, "woocommerce", item, delivery))
	}
	for _, c := range []struct {
		item, delivery string
		in             bool
		t              time.Duration
		want           bool
		undo           string // the delivery whose return is taken back after this one
	}{
		{"910", "u1", false, 1, false, ""}, {"910", "u2", true, 2, true, "u1"}, {"910", "u3", true, 3, false, "u2"},
		{"910", "u4", true, 4, true, ""},
		{"911", "u1", false, 1, false, ""}, {"911", "u2", true, 2, true, "u2"}, {"911", "u2", true, 2, true, ""},
		{"912", "u1", false, 1, false, ""}, {"912", "u2", true, 2, true, ""}, {"912", "u3", false, 3, false, ""},
		{"912", "u4", true, 4, true, "u2"}, {"912", "u5", true, 5, false, ""},
	} {
		got, err := s.ObserveCommerceStock(ctx, id, "woocommerce", c.item, c.in, c.delivery, at(2*time.Hour+c.t*time.Second))
		noErr(t, "ObserveCommerceStock", err)
		if got != c.want {
			t.Fatalf("item %s in stock %v by %s at t%d: back %v, want %v", c.item, c.in, c.delivery, c.t, got, c.want)
		}
		if c.undo != "" {
			undo(c.item, c.undo)
		}
	}

	// Deliveries of the same return at once: one reports it.
	observe(id, "woocommerce", "799", false, "d10", false)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		back int
		errs []error
	)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := s.ObserveCommerceStock(ctx, id, "woocommerce", "799", true, fmt.Sprintf("race-%d", i), at(time.Minute))
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
			}
			if got {
				back++
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 || back != 1 {
		t.Fatalf("concurrent returns: %d reported, errors %v", back, errs)
	}

	_, err := s.ObserveCommerceStock(ctx, uuid.NewString(), "woocommerce", "799", true, "d", at(0))
	wantErr(t, "ObserveCommerceStock of an unknown website", err, store.ErrNotFound)
	// The website's deletion takes its stock state with it.
	noErr(t, "DeleteWebsite", s.DeleteWebsite(ctx, id))
	_, err = s.ObserveCommerceStock(ctx, id, "woocommerce", "799", false, "d", at(0))
	wantErr(t, "ObserveCommerceStock of a deleted website", err, store.ErrNotFound)
}
