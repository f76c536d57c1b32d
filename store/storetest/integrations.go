package storetest

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/store"
)

var integrationCases = []testCase{
	{"Ledger", testIntegrationLedger},
}

func testIntegrationLedger(t *testing.T, s store.Store) {
	ctx := context.Background()
	w, other := newWebsite(t, s), newWebsite(t, s)
	id := w.Website.ID
	d1 := store.IntegrationDelivery{WebsiteID: id, Platform: "shopify", DeliveryID: "b54557e4", Topic: "orders/paid",
		Event: "purchase", EventID: uuid.NewString(), ReceivedAt: at(0)}
	d2 := store.IntegrationDelivery{WebsiteID: id, Platform: "shopify", DeliveryID: "c1", Topic: "customers/create",
		Error: `ignored topic "customers/create"`, ReceivedAt: at(0).Add(time.Minute)}
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
}
