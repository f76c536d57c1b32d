package storetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/store"
)

var testDeviceCases = []testCase{
	{"AddListRemove", testTestDevices},
	{"Audience", testTestDeviceAudience},
	{"Limit", testTestDeviceLimit},
	{"NotInStats", testTestSendsNotInStats},
}

func testTestDevices(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	in := subscription(w.Website.ID)
	in.ExternalID = "ada"
	a := subscribe(t, s, in)
	b := subscribe(t, s, subscription(w.Website.ID))

	d, created, err := s.AddTestDevice(ctx, w.Website.ID, a.EndpointID, "Ada's laptop", at(time.Minute))
	noErr(t, "AddTestDevice", err)
	want := store.TestDevice{EndpointID: a.EndpointID, Name: "Ada's laptop", SubscriberID: a.SubscriberID, ExternalID: "ada",
		Device: in.Device, UserAgent: in.UserAgent, CreatedAt: at(time.Minute), LastSeenAt: in.At}
	if !created {
		t.Fatal("AddTestDevice: created false for a new test device")
	}
	same(t, "added test device", d, want)
	// Again: renamed, not made twice, its time kept.
	d, created, err = s.AddTestDevice(ctx, w.Website.ID, a.EndpointID, "Laptop", at(2*time.Minute))
	noErr(t, "AddTestDevice(again)", err)
	want.Name = "Laptop"
	if created {
		t.Fatal("AddTestDevice(again): created true")
	}
	same(t, "renamed test device", d, want)
	_, _, err = s.AddTestDevice(ctx, w.Website.ID, b.EndpointID, "Phone", at(3*time.Minute))
	noErr(t, "AddTestDevice(second)", err)

	list, err := s.TestDevices(ctx, w.Website.ID)
	noErr(t, "TestDevices", err)
	if len(list) != 2 || list[0].EndpointID != b.EndpointID || list[1] != want {
		t.Fatalf("TestDevices = %+v, want the phone then %+v", list, want)
	}

	// Another website's browser, or no browser at all, is not found; the
	// other website sees none of these.
	w2 := newWebsite(t, s)
	_, _, err = s.AddTestDevice(ctx, w2.Website.ID, a.EndpointID, "x", at(time.Hour))
	wantErr(t, "AddTestDevice(other website's browser)", err, store.ErrNotFound)
	_, _, err = s.AddTestDevice(ctx, w.Website.ID, uuid.NewString(), "x", at(time.Hour))
	wantErr(t, "AddTestDevice(unknown browser)", err, store.ErrNotFound)
	other, err := s.TestDevices(ctx, w2.Website.ID)
	noErr(t, "TestDevices(other website)", err)
	if len(other) != 0 {
		t.Fatalf("the other website's test devices = %+v", other)
	}
	noErr(t, "RemoveTestDevice(other website)", s.RemoveTestDevice(ctx, w2.Website.ID, a.EndpointID))

	// Removed; a browser that unsubscribes goes with its endpoint.
	noErr(t, "RemoveTestDevice", s.RemoveTestDevice(ctx, w.Website.ID, a.EndpointID))
	noErr(t, "RemoveTestDevice(again)", s.RemoveTestDevice(ctx, w.Website.ID, a.EndpointID))
	_, err = s.DeleteSubscription(ctx, w.Website.ID, subscriptionURL(t, s, w.Website.ID, b.EndpointID))
	noErr(t, "DeleteSubscription", err)
	list, err = s.TestDevices(ctx, w.Website.ID)
	noErr(t, "TestDevices(after)", err)
	if len(list) != 0 {
		t.Fatalf("TestDevices after removal and unsubscription = %+v", list)
	}
}

func subscriptionURL(t *testing.T, s store.Store, websiteID, endpointID string) string {
	t.Helper()
	e, err := s.Endpoint(context.Background(), websiteID, endpointID)
	noErr(t, "Endpoint", err)
	return e.URL
}

// A test send's audience is the test devices alone: not their people's
// other browsers, not another website's test devices, not unsubscribed
// people.
func testTestDeviceAudience(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	laptop := subscription(w.Website.ID)
	laptop.ExternalID = "ada"
	phone := laptop
	phone.Endpoint += "-phone"
	l, p := subscribe(t, s, laptop), subscribe(t, s, phone)
	subscribe(t, s, subscription(w.Website.ID)) // someone else
	w2 := newWebsite(t, s)
	o := subscribe(t, s, subscription(w2.Website.ID))
	_, _, err := s.AddTestDevice(ctx, w.Website.ID, l.EndpointID, "Laptop", at(time.Minute))
	noErr(t, "AddTestDevice", err)
	_, _, err = s.AddTestDevice(ctx, w2.Website.ID, o.EndpointID, "Other", at(time.Minute))
	noErr(t, "AddTestDevice(other website)", err)

	reached := func() []string {
		var ids []string
		for shard := range store.Shards {
			page, err := s.Audience(ctx, store.AudienceQuery{WebsiteID: w.Website.ID, Shard: shard, Limit: 100, TestDevices: true})
			noErr(t, "Audience(TestDevices)", err)
			for _, r := range page {
				ids = append(ids, r.Endpoint.ID)
			}
		}
		return ids
	}
	if got := reached(); !slices.Equal(got, []string{l.EndpointID}) {
		t.Fatalf("test audience = %v, want only the laptop %s (not the phone %s)", got, l.EndpointID, p.EndpointID)
	}
	_, err = s.Audience(ctx, store.AudienceQuery{WebsiteID: w.Website.ID, TestDevices: true, ExternalIDs: []string{"ada"}})
	if err == nil {
		t.Fatal("Audience(TestDevices and ExternalIDs): no error")
	}
	var people []string
	noErr(t, "Reachable", s.Reachable(ctx, store.ReachQuery{WebsiteID: w.Website.ID, Shard: store.AllShards, TestDevices: true},
		func(sub *store.Subscriber, _ int) { people = append(people, sub.ExternalID) }))
	if !slices.Equal(people, []string{"ada"}) {
		t.Fatalf("Reachable(TestDevices) = %v, want [ada]", people)
	}
	_, err = s.DeleteSubscription(ctx, w.Website.ID, laptop.Endpoint)
	noErr(t, "DeleteSubscription", err)
	if got := reached(); len(got) != 0 {
		t.Fatalf("test audience after the laptop unsubscribed = %v", got)
	}
}

func testTestDeviceLimit(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	var first string
	for i := range store.MaxTestDevices {
		r := subscribe(t, s, subscription(w.Website.ID))
		if i == 0 {
			first = r.EndpointID
		}
		_, _, err := s.AddTestDevice(ctx, w.Website.ID, r.EndpointID, "d", at(time.Duration(i)*time.Millisecond))
		noErr(t, "AddTestDevice", err)
	}
	r := subscribe(t, s, subscription(w.Website.ID))
	_, _, err := s.AddTestDevice(ctx, w.Website.ID, r.EndpointID, "one too many", at(time.Second))
	wantErr(t, "AddTestDevice(over the limit)", err, store.ErrConflict)
	// Renaming one at the limit is fine.
	_, created, err := s.AddTestDevice(ctx, w.Website.ID, first, "renamed", at(time.Second))
	noErr(t, "AddTestDevice(rename at the limit)", err)
	if created {
		t.Fatal("rename at the limit: created true")
	}
}

// A test send is stored and read back as one, and left out of Activity.
func testTestSendsNotInStats(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	real := notification(w.Website.ID)
	real.Sent, real.Clicked = 10, 2
	create(t, s, real)
	test := notification(w.Website.ID)
	test.Test, test.Sent, test.Clicked = true, 1, 1
	test.Target, test.TargetSummary = []byte(`{"testDevices":true}`), "Test devices"
	create(t, s, test)
	got, err := s.Notification(ctx, w.Website.ID, test.ID)
	noErr(t, "Notification(test)", err)
	if !got.Test {
		t.Fatal("a test send read back without Test")
	}
	act, err := s.Activity(ctx, w.Website.ID, []time.Time{at(0), at(time.Hour)})
	noErr(t, "Activity", err)
	if sp := act.Spans[0]; sp.Notifications != 1 || sp.Sent != 10 || sp.Clicked != 2 {
		t.Fatalf("activity %+v, want the real send alone", sp)
	}
}
