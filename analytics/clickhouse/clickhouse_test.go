package clickhouse

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/relaybell/relaybell/analytics"
)

func TestConfigValidate(t *testing.T) {
	f := func(cfg Config, wantErr string) {
		t.Helper()
		err := cfg.Validate()
		if wantErr == "" {
			if err != nil {
				t.Fatalf("%+v: unexpected error %v", cfg, err)
			}
			return
		}
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("%+v: error %v, want one containing %q", cfg, err, wantErr)
		}
	}
	f(Config{Addr: "127.0.0.1:9000"}, "")
	f(Config{Addr: "ch1:9000, ch2:9000", Database: "analytics_2", Username: "rb", Password: "x"}, "")
	f(Config{}, "addr is required")
	f(Config{Addr: " , "}, "addr is required")
	f(Config{Addr: "127.0.0.1"}, "not host:port")
	f(Config{Addr: "127.0.0.1:9000", Database: "rb; DROP"}, "database")
	f(Config{Addr: "127.0.0.1:9000", Database: "1db"}, "database")

	if got := (Config{}).withDefaults(); got.Database != "relaybell" || got.Username != "default" || got.Password != "" {
		t.Fatalf("defaults: %+v", got)
	}
}

func TestOpenTwice(t *testing.T) {
	s := openStore(t)
	defer s.Close()
	ctx := context.Background()
	e := analytics.Event{Kind: analytics.KindSent, WebsiteID: "w1", NotificationID: "n1", EndpointID: "e1", Device: "desktop",
		At: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
	if err := s.Record(ctx, []analytics.Event{e}); err != nil {
		t.Fatal(err)
	}
	// A second Open on the same database keeps what is there.
	again, err := Open(ctx, Config{Addr: serverAddr, Database: s.database}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	r, err := again.Report(ctx, "w1", "n1")
	if err != nil || len(r.Devices) != 1 || r.Devices[0].Sent != 1 {
		t.Fatalf("report after reopening: %+v %v", r, err)
	}
}

func TestDropBefore(t *testing.T) {
	s := openStore(t)
	defer s.Close()
	ctx := context.Background()
	day := func(d, h int) time.Time { return time.Date(2026, 11, d, h, 0, 0, 0, time.UTC) }
	sent := func(n string, at time.Time) analytics.Event {
		return analytics.Event{Kind: analytics.KindSent, WebsiteID: "w1", NotificationID: n, EndpointID: "e1", Device: "desktop", At: at}
	}
	if err := s.Record(ctx, []analytics.Event{
		sent("n20", day(20, 0)), sent("n20", day(20, 23)),
		sent("n21", day(21, 23)),
		sent("n22", day(22, 0)),
		sent("n23", day(23, 12)),
	}); err != nil {
		t.Fatal(err)
	}
	// Behaviors are kept by the same days; the 19th holds only behaviors.
	behavior := func(id string, at time.Time) analytics.Behavior {
		return analytics.Behavior{ID: id, WebsiteID: "w1", Name: "purchase", At: at}
	}
	if err := s.RecordBehaviors(ctx, []analytics.Behavior{
		behavior("b19", day(19, 12)), behavior("b20", day(20, 23)), behavior("b22", day(22, 0)), behavior("b23", day(23, 1)),
	}); err != nil {
		t.Fatal(err)
	}
	// The cut is the UTC date of the time given, whatever its zone and hour.
	cut := time.Date(2026, 11, 22, 1, 30, 0, 0, time.FixedZone("CET", 3600)) // 2026-11-22 00:30 UTC
	dropped, err := s.DropBefore(ctx, cut)
	if err != nil {
		t.Fatal(err)
	}
	if want := []uint32{20261119, 20261120, 20261121}; !reflect.DeepEqual(dropped, want) {
		t.Fatalf("dropped %v, want %v", dropped, want)
	}
	for n, want := range map[string]int64{"n20": 0, "n21": 0, "n22": 1, "n23": 1} {
		r, err := s.Report(ctx, "w1", n)
		if err != nil {
			t.Fatal(err)
		}
		var got int64
		for _, d := range r.Devices {
			got += d.Sent
		}
		if got != want {
			t.Errorf("%s: %d sent left, want %d", n, got, want)
		}
	}
	bs, err := s.Behaviors(ctx, analytics.BehaviorQuery{WebsiteID: "w1", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, b := range bs {
		left = append(left, b.ID)
	}
	if want := []string{"b23", "b22"}; !reflect.DeepEqual(left, want) {
		t.Errorf("behaviors left %v, want %v", left, want)
	}
	// Nothing older is left: a second call drops nothing.
	if dropped, err := s.DropBefore(ctx, cut); err != nil || len(dropped) != 0 {
		t.Fatalf("second DropBefore: %v %v", dropped, err)
	}
}
