package sqlite

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/relaybell/relaybell/analytics"
)

func TestReport(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "analytics.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	ev := func(kind, endpoint, device, language, variant, code string) analytics.Event {
		return analytics.Event{Kind: kind, WebsiteID: "w1", NotificationID: "n1", EndpointID: endpoint, SubscriberID: "s-" + endpoint,
			Device: device, Language: language, Variant: variant, Code: code, At: at}
	}
	events := []analytics.Event{
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
	}
	if err := s.Record(ctx, events); err != nil {
		t.Fatal(err)
	}
	got, err := s.Report(ctx, "w1", "n1")
	if err != nil {
		t.Fatal(err)
	}
	want := analytics.Report{
		Devices:  []analytics.DeviceRow{{Device: "android", Sent: 2, Clicked: 1}, {Device: "desktop", Sent: 2, Clicked: 1}},
		Variants: []analytics.VariantRow{{Variant: "a", Sent: 2, Clicked: 2, Ctr: 100}, {Variant: "b", Sent: 2, Clicked: 0, Ctr: 0}},
		Languages: []analytics.LanguageRow{{Language: "en", Sent: 2, Clicked: 1}, {Language: "de", Sent: 1, Clicked: 1},
			{Language: "unknown", Sent: 1, Clicked: 0}},
		Errors:  []analytics.ErrorRow{{Code: "500", Count: 2}, {Code: "413", Count: 1}, {Code: "expired", Count: 1}},
		Expired: 1,
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("report\n got  %+v\n want %+v", got, want)
	}
	empty, err := s.Report(ctx, "w2", "n2")
	if err != nil || !reflect.DeepEqual(empty, analytics.Report{}) {
		t.Fatalf("another website's notification: %+v %v", empty, err)
	}
}
