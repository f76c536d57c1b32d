package analyticstest

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/relaybell/relaybell/analytics"
)

// bh is a behavior of website w1 at d after at, with empty properties.
func bh(id string, d time.Duration) analytics.Behavior {
	return analytics.Behavior{ID: id, WebsiteID: "w1", Name: "page.viewed", Source: "browser", At: at.Add(d)}
}

func recordBehaviors(t *testing.T, s analytics.Store, behaviors ...analytics.Behavior) {
	t.Helper()
	if err := s.RecordBehaviors(context.Background(), behaviors); err != nil {
		t.Fatalf("record behaviors: %v", err)
	}
}

// ids lists the ids of the behaviors q selects, in their order.
func ids(t *testing.T, s analytics.Store, q analytics.BehaviorQuery) []string {
	t.Helper()
	if q.Limit == 0 {
		q.Limit = analytics.MaxBehaviorLimit
	}
	bs, err := s.Behaviors(context.Background(), q)
	if err != nil {
		t.Fatalf("behaviors %+v: %v", q, err)
	}
	out := []string{}
	for _, b := range bs {
		if b.WebsiteID != q.WebsiteID {
			t.Fatalf("behaviors %+v: %s of website %s", q, b.ID, b.WebsiteID)
		}
		out = append(out, b.ID)
	}
	return out
}

func sameIDs(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if want == nil {
		want = []string{}
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: %q, want %q", what, got, want)
	}
}

// testBehaviorsNewestFirst: a website's behaviors come newest first to the
// millisecond, ties by id descending, at most the limit, every field as
// recorded.
func testBehaviorsNewestFirst(t *testing.T, s analytics.Store) {
	full := analytics.Behavior{ID: "full", WebsiteID: "w1", Name: "purchase", ExternalID: "user-1", SubscriberID: "s1",
		Properties: json.RawMessage(`{"value":12.5,"currency":"EUR"}`), Source: "server",
		NotificationID: "n1", Value: 12.5, Conversion: true, At: at.Add(3*time.Second + 7*time.Millisecond)}
	recordBehaviors(t, s, bh("a", 0), bh("c", time.Second), full)
	recordBehaviors(t, s, bh("b", time.Second), bh("d", time.Second+time.Millisecond), bh("e", 3*time.Second+6*time.Millisecond))
	sameIDs(t, "the website's latest", ids(t, s, analytics.BehaviorQuery{WebsiteID: "w1"}), "full", "e", "d", "c", "b", "a")
	sameIDs(t, "limited", ids(t, s, analytics.BehaviorQuery{WebsiteID: "w1", Limit: 3}), "full", "e", "d")
	sameIDs(t, "limited to one", ids(t, s, analytics.BehaviorQuery{WebsiteID: "w1", Limit: 1}), "full")
	sameIDs(t, "another website", ids(t, s, analytics.BehaviorQuery{WebsiteID: "w2"}))

	got, err := s.Behaviors(context.Background(), analytics.BehaviorQuery{WebsiteID: "w1", Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	want := []analytics.Behavior{full, bh("e", 3*time.Second+6*time.Millisecond)}
	want[1].Properties = json.RawMessage(`{}`) // none recorded
	if len(got) != 2 || !reflect.DeepEqual(got, want) {
		t.Fatalf("behaviors\n got  %+v\n want %+v", got, want)
	}
	if got[0].At.Location() != time.UTC {
		t.Fatalf("at in %v, want UTC", got[0].At.Location())
	}
	for _, limit := range []int{-1, 0, analytics.MaxBehaviorLimit + 1} {
		if _, err := s.Behaviors(context.Background(), analytics.BehaviorQuery{WebsiteID: "w1", Limit: limit}); err == nil {
			t.Errorf("limit %d: no error", limit)
		}
	}
}

// testBehaviorsInSeqOrder: behaviors of one millisecond come in the order
// they were accepted (Seq, newest first), not by id, whichever batch
// brought them; a person's too.
func testBehaviorsInSeqOrder(t *testing.T, s analytics.Store) {
	const n = 105
	var all []analytics.Behavior
	for i := range n {
		// ids in the reverse of the accepted order, so that a tie broken
		// by id would list them oldest first.
		b := bh(fmt.Sprintf("z-%03d", n-i), 5*time.Millisecond)
		b.SubscriberID, b.Seq = "s1", analytics.NextSeq()
		all = append(all, b)
	}
	recordBehaviors(t, s, all[:50]...)
	recordBehaviors(t, s, all[50:]...)
	want := make([]string, 0, 100)
	for i := n - 1; i >= n-100; i-- {
		want = append(want, all[i].ID)
	}
	sameIDs(t, "the website's latest 100", ids(t, s, analytics.BehaviorQuery{WebsiteID: "w1", Limit: 100}), want...)
	sameIDs(t, "the person's latest 100", ids(t, s, analytics.BehaviorQuery{WebsiteID: "w1", SubscriberIDs: []string{"s1"}, Limit: 100}), want...)
}

// testBehaviorsOfAPerson: a person's behaviors are those of any of their
// subscribers or logged under their external id, of their website only.
func testBehaviorsOfAPerson(t *testing.T, s analytics.Store) {
	mk := func(id, website, subscriber, external string, d time.Duration) analytics.Behavior {
		b := bh(id, d)
		b.WebsiteID, b.SubscriberID, b.ExternalID = website, subscriber, external
		return b
	}
	recordBehaviors(t, s,
		mk("s1-only", "w1", "s1", "", 1*time.Second),
		mk("s2-only", "w1", "s2", "", 2*time.Second),
		mk("u-only", "w1", "", "u", 3*time.Second),
		mk("s1-and-u", "w1", "s1", "u", 4*time.Second),
		mk("s3-and-u", "w1", "s3", "u", 5*time.Second), // u's, from a browser not (yet) theirs
		mk("nobody", "w1", "", "", 6*time.Second),
		mk("s9-v", "w1", "s9", "v", 7*time.Second),
		// The same ids on another website are another person.
		mk("w2-s1", "w2", "s1", "", 8*time.Second),
		mk("w2-u", "w2", "", "u", 9*time.Second),
	)
	q := func(subs []string, external string, limit int) analytics.BehaviorQuery {
		return analytics.BehaviorQuery{WebsiteID: "w1", SubscriberIDs: subs, ExternalID: external, Limit: limit}
	}
	sameIDs(t, "s1 or u", ids(t, s, q([]string{"s1"}, "u", 0)), "s3-and-u", "s1-and-u", "u-only", "s1-only")
	sameIDs(t, "s1 or u, limited", ids(t, s, q([]string{"s1"}, "u", 2)), "s3-and-u", "s1-and-u")
	sameIDs(t, "s1, s2 or u", ids(t, s, q([]string{"s1", "s2"}, "u", 0)), "s3-and-u", "s1-and-u", "u-only", "s2-only", "s1-only")
	sameIDs(t, "s1 and s2", ids(t, s, q([]string{"s2", "s1"}, "", 0)), "s1-and-u", "s2-only", "s1-only")
	sameIDs(t, "s1 and s2, limited", ids(t, s, q([]string{"s2", "s1"}, "", 1)), "s1-and-u")
	sameIDs(t, "u", ids(t, s, q(nil, "u", 0)), "s3-and-u", "s1-and-u", "u-only")
	sameIDs(t, "nobody's id", ids(t, s, q([]string{"s404"}, "u404", 0)))
	// Empty ids name nobody: they never select the behaviors naming nobody.
	sameIDs(t, "empty ids", ids(t, s, q([]string{""}, "", 0)))
	sameIDs(t, "an empty id beside one", ids(t, s, q([]string{"", "s2"}, "", 0)), "s2-only")
	sameIDs(t, "w2's s1 or u", ids(t, s, analytics.BehaviorQuery{WebsiteID: "w2", SubscriberIDs: []string{"s1"}, ExternalID: "u", Limit: 10}),
		"w2-u", "w2-s1")
	sameIDs(t, "w1's latest", ids(t, s, q(nil, "", 3)), "s9-v", "nobody", "s3-and-u")
}

// testBehaviorsRefused: a batch holding a behavior no store can hold is
// refused whole, with nothing of it written.
func testBehaviorsRefused(t *testing.T, s analytics.Store) {
	ok := bh("ok", 0)
	f := func(what string, edit func(b *analytics.Behavior)) {
		t.Helper()
		bad := bh("bad", time.Second)
		edit(&bad)
		if err := s.RecordBehaviors(context.Background(), []analytics.Behavior{ok, bad}); err == nil {
			t.Errorf("recording a behavior with %s: no error", what)
		}
	}
	f("no id", func(b *analytics.Behavior) { b.ID = "" })
	f("no website", func(b *analytics.Behavior) { b.WebsiteID = "" })
	f("a name of 121 characters", func(b *analytics.Behavior) { b.Name = strings.Repeat("ñ", analytics.MaxBehaviorName+1) })
	f("properties that are a list", func(b *analytics.Behavior) { b.Properties = json.RawMessage(`[{"a":1}]`) })
	f("properties that are no JSON", func(b *analytics.Behavior) { b.Properties = json.RawMessage(`{"a":}`) })
	f("a time before 1970", func(b *analytics.Behavior) { b.At = time.Unix(-1, 0) })
	f("no time", func(b *analytics.Behavior) { b.At = time.Time{} })
	f("a time after 2105", func(b *analytics.Behavior) { b.At = time.Date(2106, 1, 1, 0, 0, 0, 0, time.UTC) })
	f("a value of NaN", func(b *analytics.Behavior) { b.Value = math.NaN() })
	f("too much text", func(b *analytics.Behavior) {
		b.Properties = json.RawMessage(`{"p":"` + strings.Repeat("x", analytics.MaxBehaviorBytes) + `"}`)
	})
	sameIDs(t, "after the refusals", ids(t, s, analytics.BehaviorQuery{WebsiteID: "w1"}))
	if err := s.RecordBehaviors(context.Background(), nil); err != nil {
		t.Fatalf("recording no behaviors: %v", err)
	}
	edge := bh("edge", time.Second)
	edge.Name = strings.Repeat("ñ", analytics.MaxBehaviorName)
	recordBehaviors(t, s, ok, edge)
	sameIDs(t, "after a good batch", ids(t, s, analytics.BehaviorQuery{WebsiteID: "w1"}), "edge", "ok")
}

// testBehaviorsRecordedTwice: a behavior recorded again (a sink's batch
// written twice) is listed once and takes one place of the limit.
func testBehaviorsRecordedTwice(t *testing.T, s analytics.Store) {
	twice := []analytics.Behavior{bh("a", 0), bh("b", time.Second), bh("c", 2*time.Second)}
	recordBehaviors(t, s, twice...)
	recordBehaviors(t, s, twice...)
	recordBehaviors(t, s, twice[2])
	sameIDs(t, "latest", ids(t, s, analytics.BehaviorQuery{WebsiteID: "w1"}), "c", "b", "a")
	sameIDs(t, "latest two", ids(t, s, analytics.BehaviorQuery{WebsiteID: "w1", Limit: 2}), "c", "b")
}

// testBehaviorsProperties: properties come back byte for byte, whatever
// their spacing, escapes, numbers and size.
func testBehaviorsProperties(t *testing.T, s analytics.Store) {
	props := []string{
		`{}`,
		` { "b" : 1 ,"a":2 } `,
		`{"value":1.50,"big":12345678901234567890,"exp":1E+2,"neg":-0}`,
		`{"s":"caf\u00e9 é 😀 \"q\" \\ \/ \n \t","nested":{"list":[1,"2",null,true,{"x":[]}]}}`,
		`{"a":1,"a":2}`,
		`{"?":"?","'":"'; DROP TABLE behaviors; --"}`,
		"{\n\t\"html\": \"<script>alert(1)</script>\"\n}",
		`{"large":"` + strings.Repeat("0123456789", 50_000) + `"}`,
	}
	var in []analytics.Behavior
	for i, p := range props {
		b := bh(fmt.Sprintf("p%d", i), time.Duration(i)*time.Millisecond)
		b.Properties = json.RawMessage(p)
		in = append(in, b)
	}
	recordBehaviors(t, s, in...)
	got, err := s.Behaviors(context.Background(), analytics.BehaviorQuery{WebsiteID: "w1", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(props) {
		t.Fatalf("%d behaviors, want %d", len(got), len(props))
	}
	for i, b := range got {
		want := props[len(props)-1-i]
		if string(b.Properties) != want {
			t.Errorf("%s: properties %.200q, want %.200q", b.ID, b.Properties, want)
		}
	}
}

// testBehaviorsErase: erasing a person deletes the behaviors of their
// subscribers and those logged under their external ids, their push
// events with them, and nothing of anyone else's.
func testBehaviorsErase(t *testing.T, s analytics.Store) {
	ctx := context.Background()
	mk := func(id, website, subscriber, external string) analytics.Behavior {
		b := bh(id, time.Duration(len(id))*time.Second)
		b.WebsiteID, b.SubscriberID, b.ExternalID = website, subscriber, external
		return b
	}
	recordBehaviors(t, s,
		mk("s1", "w1", "s1", ""),
		mk("s1-x", "w1", "s1", "x"),
		mk("u", "w1", "", "u"),
		mk("s2-u", "w1", "s2", "u"),
		mk("s2", "w1", "s2", ""),
		mk("s3-v", "w1", "s3", "v"),
		mk("nobody", "w1", "", ""),
		mk("w2-s1-u", "w2", "s1", "u"),
	)
	record(t, s, []analytics.Event{
		{Kind: analytics.KindSent, WebsiteID: "w1", NotificationID: "n1", EndpointID: "e1", SubscriberID: "s1", At: at},
		{Kind: analytics.KindSent, WebsiteID: "w1", NotificationID: "n1", EndpointID: "e3", SubscriberID: "s3", At: at},
	})
	latest := func(website string) []string {
		return ids(t, s, analytics.BehaviorQuery{WebsiteID: website})
	}
	// A store may finish erasing in the background (ClickHouse mutations).
	settle := func(website string, n int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for len(latest(website)) != n && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
	}
	// Empty ids erase nothing, and no behavior naming nobody.
	if err := s.Erase(ctx, "w1", []string{""}, []string{""}); err != nil {
		t.Fatalf("Erase: %v", err)
	}
	if err := s.Erase(ctx, "w1", nil, nil); err != nil {
		t.Fatalf("Erase: %v", err)
	}
	// By subscriber: s1's behaviors, whatever external id they carry, and
	// its push events.
	if err := s.Erase(ctx, "w1", []string{"s1"}, nil); err != nil {
		t.Fatalf("Erase: %v", err)
	}
	settle("w1", 5)
	sameIDs(t, "after erasing s1", latest("w1"), "nobody", "s3-v", "s2-u", "s2", "u")
	// By external id alone: u's, whichever subscriber they carry.
	if err := s.Erase(ctx, "w1", nil, []string{"u"}); err != nil {
		t.Fatalf("Erase: %v", err)
	}
	settle("w1", 3)
	sameIDs(t, "after erasing u", latest("w1"), "nobody", "s3-v", "s2")
	// Both at once.
	if err := s.Erase(ctx, "w1", []string{"s2"}, []string{"v"}); err != nil {
		t.Fatalf("Erase: %v", err)
	}
	settle("w1", 1)
	sameIDs(t, "after erasing s2 and v", latest("w1"), "nobody")
	sameIDs(t, "the other website", latest("w2"), "w2-s1-u")
	evs, err := s.PersonEvents(ctx, "w1", []string{"s1", "s3"}, nil, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || evs[0].SubscriberID != "s3" {
		t.Fatalf("push events left: %+v, want s3's only", evs)
	}
}
