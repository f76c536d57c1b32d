// Package analyticstest is the conformance suite every analytics.Store
// implementation runs, so the notification detail and the behavioral
// events read the same from SQLite (embedded) and ClickHouse (cluster).
package analyticstest

import (
	"context"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/relaybell/relaybell/analytics"
)

// Run runs the suite. open returns a new, empty store for each subtest; the
// suite closes it.
func Run(t *testing.T, open func(t *testing.T) analytics.Store) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, s analytics.Store)
	}{
		{"Report", testReport},
		{"Empty", testEmpty},
		{"Isolation", testIsolation},
		{"RecordAppends", testRecordAppends},
		{"RecordRefusesWhatNoStoreHolds", testRecordRefuses},
		{"ClickWithoutSend", testClickWithoutSend},
		{"DuplicatesCountOnce", testDuplicatesCountOnce},
		{"PersonEventsAndErase", testPersonEventsAndErase},
		{"BehaviorsNewestFirst", testBehaviorsNewestFirst},
		{"BehaviorsInSeqOrder", testBehaviorsInSeqOrder},
		{"BehaviorsOfAPerson", testBehaviorsOfAPerson},
		{"BehaviorsRefused", testBehaviorsRefused},
		{"BehaviorsRecordedTwice", testBehaviorsRecordedTwice},
		{"BehaviorsProperties", testBehaviorsProperties},
		{"BehaviorsErase", testBehaviorsErase},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := open(t)
			t.Cleanup(func() {
				if err := s.Close(); err != nil {
					t.Errorf("closing store: %v", err)
				}
			})
			tt.fn(t, s)
		})
	}
}

var at = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// ev is an event of notification n1 of website w1 at a fixed time.
func ev(kind, endpoint, device, language, variant, code string) analytics.Event {
	return analytics.Event{Kind: kind, WebsiteID: "w1", NotificationID: "n1", EndpointID: endpoint, SubscriberID: "s-" + endpoint,
		Device: device, Language: language, Variant: variant, Code: code, At: at}
}

func record(t *testing.T, s analytics.Store, events []analytics.Event) {
	t.Helper()
	if err := s.Record(context.Background(), events); err != nil {
		t.Fatalf("record: %v", err)
	}
}

func check(t *testing.T, s analytics.Store, websiteID, notificationID string, want analytics.Report) {
	t.Helper()
	got, err := s.Report(context.Background(), websiteID, notificationID)
	if err != nil {
		t.Fatalf("report %s/%s: %v", websiteID, notificationID, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("report %s/%s\n got  %+v\n want %+v", websiteID, notificationID, got, want)
	}
}

func testReport(t *testing.T, s analytics.Store) {
	record(t, s, []analytics.Event{
		ev(analytics.KindSent, "e1", "desktop", "en-US", "a", ""),
		ev(analytics.KindSent, "e2", "desktop", "en", "b", ""),
		ev(analytics.KindSent, "e3", "android", "de-DE", "a", ""),
		ev(analytics.KindSent, "e4", "android", "", "b", ""),
		ev(analytics.KindFailed, "e5", "ios", "en", "a", "413"),
		ev(analytics.KindFailed, "e6", "ios", "en", "b", "500"),
		ev(analytics.KindFailed, "e7", "ios", "en", "b", "500"),
		ev(analytics.KindExpired, "e8", "desktop", "en", "a", "expired"),
		// Clicks carry only what the ping knows; they are attributed to the
		// push that went to the same endpoint.
		ev(analytics.KindClicked, "e1", "desktop", "", "", ""),
		ev(analytics.KindClicked, "e3", "android", "", "", ""),
		ev(analytics.KindDelivered, "e1", "desktop", "", "", ""),
		// Another notification and another website are never counted.
		{Kind: analytics.KindSent, WebsiteID: "w1", NotificationID: "n2", EndpointID: "e1", Device: "desktop", At: at},
		{Kind: analytics.KindSent, WebsiteID: "w2", NotificationID: "n1", EndpointID: "e9", Device: "desktop", At: at},
	})
	check(t, s, "w1", "n1", analytics.Report{
		Devices:  []analytics.DeviceRow{{Device: "android", Sent: 2, Clicked: 1}, {Device: "desktop", Sent: 2, Clicked: 1}},
		Variants: []analytics.VariantRow{{Variant: "a", Sent: 2, Clicked: 2, Ctr: 100}, {Variant: "b", Sent: 2, Clicked: 0, Ctr: 0}},
		Languages: []analytics.LanguageRow{{Language: "en", Sent: 2, Clicked: 1}, {Language: "de", Sent: 1, Clicked: 1},
			{Language: "unknown", Sent: 1, Clicked: 0}},
		Errors:  []analytics.ErrorRow{{Code: "500", Count: 2}, {Code: "413", Count: 1}, {Code: "expired", Count: 1}},
		Expired: 1,
	})
	// Another website's notification of the same id reads only its own events.
	check(t, s, "w2", "n1", analytics.Report{
		Devices:   []analytics.DeviceRow{{Device: "desktop", Sent: 1}},
		Languages: []analytics.LanguageRow{{Language: "unknown", Sent: 1}},
	})
	check(t, s, "w2", "n2", analytics.Report{})
}

// testRecordRefuses: a batch holding an event no store can hold is refused
// whole, with nothing of it written.
func testRecordRefuses(t *testing.T, s analytics.Store) {
	ok := ev(analytics.KindSent, "e1", "desktop", "en", "", "")
	unknown, early, late, zero := ok, ok, ok, ok
	unknown.Kind = "opened"
	early.At = time.Unix(-1, 0)
	late.At = time.Date(2106, 1, 1, 0, 0, 0, 0, time.UTC)
	zero.At = time.Time{}
	for _, bad := range []analytics.Event{unknown, early, late, zero} {
		if err := s.Record(context.Background(), []analytics.Event{ok, bad}); err == nil {
			t.Errorf("recording kind %q at %v: no error", bad.Kind, bad.At)
		}
	}
	check(t, s, "w1", "n1", analytics.Report{})
	record(t, s, []analytics.Event{ok})
	check(t, s, "w1", "n1", analytics.Report{
		Devices:   []analytics.DeviceRow{{Device: "desktop", Sent: 1}},
		Languages: []analytics.LanguageRow{{Language: "en", Sent: 1}},
	})
}

func testEmpty(t *testing.T, s analytics.Store) {
	if err := s.Record(context.Background(), nil); err != nil {
		t.Fatalf("recording no events: %v", err)
	}
	check(t, s, "w1", "n1", analytics.Report{})
}

// testIsolation: errors and clicks recorded under another website, even on
// the same notification and endpoint ids, never show in this website's report.
func testIsolation(t *testing.T, s analytics.Store) {
	other := func(e analytics.Event) analytics.Event { e.WebsiteID = "w2"; return e }
	record(t, s, []analytics.Event{
		ev(analytics.KindSent, "e1", "ios", "fr", "", ""),
		other(ev(analytics.KindFailed, "e2", "ios", "fr", "", "500")),
		other(ev(analytics.KindExpired, "e3", "ios", "fr", "", "expired")),
		other(ev(analytics.KindClicked, "e1", "ios", "", "", "")),
	})
	check(t, s, "w1", "n1", analytics.Report{
		Devices:   []analytics.DeviceRow{{Device: "ios", Sent: 1}},
		Languages: []analytics.LanguageRow{{Language: "fr", Sent: 1}},
	})
	check(t, s, "w2", "n1", analytics.Report{
		Errors:  []analytics.ErrorRow{{Code: "500", Count: 1}, {Code: "expired", Count: 1}},
		Expired: 1,
	})
}

// testRecordAppends: events from separate Record calls (separate pusher
// batches, the click ping later) add up; an empty device is "other"; errors
// with equal counts are ordered by code.
func testRecordAppends(t *testing.T, s analytics.Store) {
	record(t, s, []analytics.Event{
		ev(analytics.KindSent, "e1", "", "pt-BR", "", ""),
		ev(analytics.KindFailed, "e2", "", "pt", "", "timeout"),
	})
	record(t, s, []analytics.Event{
		ev(analytics.KindSent, "e3", "", "pt", "", ""),
		ev(analytics.KindFailed, "e4", "", "pt", "", "410"),
	})
	record(t, s, []analytics.Event{ev(analytics.KindClicked, "e3", "", "", "", "")})
	check(t, s, "w1", "n1", analytics.Report{
		Devices:   []analytics.DeviceRow{{Device: "other", Sent: 2, Clicked: 1}},
		Languages: []analytics.LanguageRow{{Language: "pt", Sent: 2, Clicked: 1}},
		Errors:    []analytics.ErrorRow{{Code: "410", Count: 1}, {Code: "timeout", Count: 1}},
	})
}

// testDuplicatesCountOnce: an event recorded again (a sink's batch written
// twice, a batch pushed again after its pusher died) counts once: the
// breakdowns count browsers, as the funnel does, and a person's events and
// counts hold it once.
func testDuplicatesCountOnce(t *testing.T, s analytics.Store) {
	events := []analytics.Event{
		ev(analytics.KindSent, "e1", "desktop", "en", "a", ""),
		ev(analytics.KindSent, "e2", "desktop", "en", "a", ""),
		ev(analytics.KindFailed, "e3", "desktop", "en", "a", "500"),
		ev(analytics.KindClicked, "e1", "desktop", "", "", ""),
	}
	record(t, s, events)
	record(t, s, events)
	check(t, s, "w1", "n1", analytics.Report{
		Devices:   []analytics.DeviceRow{{Device: "desktop", Sent: 2, Clicked: 1}},
		Variants:  []analytics.VariantRow{{Variant: "a", Sent: 2, Clicked: 1, Ctr: 50}},
		Languages: []analytics.LanguageRow{{Language: "en", Sent: 2, Clicked: 1}},
		Errors:    []analytics.ErrorRow{{Code: "500", Count: 1}},
	})
	ctx := context.Background()
	counts, err := s.PersonCounts(ctx, "w1", []string{"s-e1"})
	if want := map[string]int64{analytics.KindSent: 1, analytics.KindClicked: 1}; err != nil || !reflect.DeepEqual(counts, want) {
		t.Fatalf("PersonCounts = %v, %v; want %v", counts, err, want)
	}
	evs, err := s.PersonEvents(ctx, "w1", []string{"s-e1"}, nil, 10)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range evs {
		if e.NotificationID != "n1" || e.EndpointID != "e1" || e.SubscriberID != "s-e1" || e.Device != "desktop" || !e.At.Equal(at) {
			t.Fatalf("PersonEvents: %+v", e)
		}
		kinds = append(kinds, e.Kind)
	}
	slices.Sort(kinds)
	if want := []string{analytics.KindClicked, analytics.KindSent}; !slices.Equal(kinds, want) {
		t.Fatalf("PersonEvents kinds = %v, want each once: %v", kinds, want)
	}
}

// testClickWithoutSend: a click whose push was not recorded as sent (failed,
// or from another notification) counts nowhere.
func testClickWithoutSend(t *testing.T, s analytics.Store) {
	n2 := ev(analytics.KindSent, "e2", "desktop", "en", "a", "")
	n2.NotificationID = "n2"
	record(t, s, []analytics.Event{
		ev(analytics.KindSent, "e1", "desktop", "en", "a", ""),
		ev(analytics.KindFailed, "e3", "desktop", "en", "a", "413"),
		ev(analytics.KindClicked, "e3", "desktop", "", "", ""),
		n2,
		ev(analytics.KindClicked, "e2", "desktop", "", "", ""),
	})
	check(t, s, "w1", "n1", analytics.Report{
		Devices:   []analytics.DeviceRow{{Device: "desktop", Sent: 1}},
		Variants:  []analytics.VariantRow{{Variant: "a", Sent: 1}},
		Languages: []analytics.LanguageRow{{Language: "en", Sent: 1}},
		Errors:    []analytics.ErrorRow{{Code: "413", Count: 1}},
	})
}

// testPersonEventsAndErase: a person's events come newest first, only the
// website's; erasure removes them all and nothing else.
func testPersonEventsAndErase(t *testing.T, s analytics.Store) {
	ctx := context.Background()
	mk := func(website, subscriber, kind string, d time.Duration) analytics.Event {
		return analytics.Event{Kind: kind, WebsiteID: website, NotificationID: "n1", EndpointID: "e-" + subscriber,
			SubscriberID: subscriber, Device: "desktop", Language: "en", At: at.Add(d)}
	}
	record(t, s, []analytics.Event{
		mk("w1", "s1", analytics.KindSent, 0),
		mk("w1", "s1", analytics.KindDelivered, time.Second),
		mk("w1", "s1", analytics.KindClicked, 2*time.Second),
		mk("w1", "s2", analytics.KindSent, 0),
		mk("w2", "s1", analytics.KindSent, 0),
	})
	kindsOf := func(website string, ids, only []string, limit int) []string {
		t.Helper()
		evs, err := s.PersonEvents(ctx, website, ids, only, limit)
		if err != nil {
			t.Fatalf("PersonEvents: %v", err)
		}
		out := []string{}
		for _, e := range evs {
			out = append(out, e.SubscriberID+":"+e.Kind)
		}
		return out
	}
	kinds := func(website string, ids []string, limit int) []string {
		t.Helper()
		return kindsOf(website, ids, nil, limit)
	}
	same := func(what string, got, want any) {
		t.Helper()
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s = %v, want %v", what, got, want)
		}
	}
	same("events of s1", kinds("w1", []string{"s1"}, 10), []string{"s1:clicked", "s1:delivered", "s1:sent"})
	same("limited", kinds("w1", []string{"s1"}, 1), []string{"s1:clicked"})
	same("of some kinds", kindsOf("w1", []string{"s1"}, []string{analytics.KindSent, analytics.KindClicked}, 10),
		[]string{"s1:clicked", "s1:sent"})
	counts, err := s.PersonCounts(ctx, "w1", []string{"s1"})
	if err != nil {
		t.Fatalf("PersonCounts: %v", err)
	}
	same("counts of s1", counts, map[string]int64{analytics.KindSent: 1, analytics.KindDelivered: 1, analytics.KindClicked: 1})
	if err := s.Erase(ctx, "w1", []string{"s1"}, nil); err != nil {
		t.Fatalf("Erase: %v", err)
	}
	// A store may finish erasing in the background (ClickHouse mutations).
	deadline := time.Now().Add(10 * time.Second)
	for len(kinds("w1", []string{"s1", "s2"}, 10)) != 1 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	same("events left on w1", kinds("w1", []string{"s1", "s2"}, 10), []string{"s2:sent"})
	same("events of the other website", kinds("w2", []string{"s1"}, 10), []string{"s1:sent"})
}
