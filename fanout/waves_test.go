package fanout

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/analytics"
	"github.com/relaybell/relaybell/bus"
	"github.com/relaybell/relaybell/notification"
	"github.com/relaybell/relaybell/store"
)

// subscriberIn adds a browser of a subscriber in time zone tz.
func (r *rig) subscriberIn(tz string) string {
	r.t.Helper()
	res, err := r.st.UpsertSubscription(context.Background(), store.SubscriptionInput{WebsiteID: r.site.ID,
		Endpoint: "https://push.example/" + uuid.NewString(), P256dh: "p", Auth: "a", Timezone: tz, At: time.Now()})
	if err != nil {
		r.t.Fatal(err)
	}
	return res.EndpointID
}

// content creates a queued send with the given stored content.
func (r *rig) content(content string) store.Notification {
	r.t.Helper()
	n := store.Notification{ID: uuid.NewString(), WebsiteID: r.site.ID, Status: store.StatusQueued, Title: "Hi",
		Content: []byte(content), CreatedAt: time.Now()}
	if err := r.st.CreateNotification(context.Background(), &n); err != nil {
		r.t.Fatal(err)
	}
	return n
}

// releaseWaves runs, at the given moment, what the outbox sweep does: it
// publishes the due waves' shard tasks; then every task is handled. It
// returns the endpoints pushed, each with its batch's winner ("-" for
// none).
func (r *rig) releaseWaves(at time.Time) map[string]string {
	r.t.Helper()
	ctx := context.Background()
	waves, err := r.st.DueWaves(ctx, at, time.Minute, 100)
	if err != nil {
		r.t.Fatal(err)
	}
	tasks, batches := len(r.bus.out), len(r.router.batches)
	for _, w := range waves {
		if err := bus.PublishShards(ctx, r.bus, w.NotificationID, &w); err != nil {
			r.t.Fatal(err)
		}
		if err := r.st.MarkWavePublished(ctx, w.NotificationID, w.Wave, at); err != nil {
			r.t.Fatal(err)
		}
	}
	for _, m := range r.bus.out[tasks:] {
		if err := r.f.handleShard(ctx, m); err != nil {
			r.t.Fatal(err)
		}
	}
	pushed := map[string]string{}
	for _, b := range r.router.batches[batches:] {
		for _, rc := range b.Recipients {
			if _, twice := pushed[rc.Endpoint.ID]; twice {
				r.t.Fatalf("endpoint %s pushed twice", rc.Endpoint.ID)
			}
			pushed[rc.Endpoint.ID] = b.Winner
			if b.Winner == "" {
				pushed[rc.Endpoint.ID] = "-"
			}
		}
	}
	return pushed
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func sorted(ids ...string) []string {
	slices.Sort(ids)
	return ids
}

func TestPerTimezoneGoesOutAtEachLocalTime(t *testing.T) {
	r := newRig(t) // the website is in UTC
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	r.f.now = func() time.Time { return start }
	paris := r.subscriberIn("Europe/Paris")        // 09:00 CET = 08:00 UTC tomorrow
	newYork := r.subscriberIn("America/New_York")  // 09:00 EST = 14:00 UTC today
	newYork2 := r.subscriberIn("America/New_York") //
	site := r.subscriberIn("")                     // the website's zone: 09:00 UTC tomorrow
	bogus := r.subscriberIn("Not/AZone")           // unknown zones read as UTC: with site
	kolkata := r.subscriberIn("Asia/Kolkata")      // 09:00 IST = 03:30 UTC tomorrow
	auckland := r.subscriberIn("Pacific/Auckland") // 09:00 NZDT = 20:00 UTC today
	n := r.content(`{"title":"Hi","ttl":60,"perTimezone":true,"localTime":"09:00"}`)
	r.intent(n)

	got := r.get(n.ID)
	if got.Status != store.StatusSending || got.Waves != 5 || len(r.bus.out) != 0 {
		t.Fatalf("after intent: %s, %d waves, %d tasks published; want sending, 5 waves, none published",
			got.Status, got.Waves, len(r.bus.out))
	}
	// A redelivered intent changes nothing.
	r.intent(n)
	if got := r.get(n.ID); got.Waves != 5 || len(r.bus.out) != 0 {
		t.Fatalf("redelivered intent: %d waves, %d tasks", got.Waves, len(r.bus.out))
	}

	steps := []struct {
		at   time.Time
		want []string
	}{
		{start, nil},
		{time.Date(2026, 3, 1, 13, 59, 0, 0, time.UTC), nil},
		{time.Date(2026, 3, 1, 14, 0, 0, 0, time.UTC), sorted(newYork, newYork2)},
		{time.Date(2026, 3, 1, 20, 0, 30, 0, time.UTC), []string{auckland}},
		{time.Date(2026, 3, 2, 3, 30, 0, 0, time.UTC), []string{kolkata}},
		{time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC), []string{paris}},
	}
	for _, s := range steps {
		pushed := r.releaseWaves(s.at)
		if !slices.Equal(keys(pushed), s.want) {
			t.Fatalf("at %s pushed %v, want %v", s.at, keys(pushed), s.want)
		}
		if got := r.get(n.ID).Status; got != store.StatusSending {
			t.Fatalf("at %s the send is %s", s.at, got)
		}
	}
	pushed := r.releaseWaves(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
	if want := sorted(site, bogus); !slices.Equal(keys(pushed), want) {
		t.Fatalf("last wave pushed %v, want %v", keys(pushed), want)
	}
	done := r.get(n.ID)
	if done.Status != store.StatusSent || done.Recipients != 7 || done.Sent != 7 {
		t.Fatalf("after the last wave: %s %+v", done.Status, done.Counters)
	}
}

func TestSmartTimeGoesOutAtEachSubscribersHour(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	start := time.Date(2026, 6, 1, 7, 20, 0, 0, time.UTC)
	r.f.now = func() time.Time { return start }
	unknown := r.subscriberIn("Europe/Berlin") // default 10:00 CEST = 08:00 UTC
	evening := r.subscriberIn("Europe/Berlin")
	now := r.subscriberIn("UTC")
	subOf := func(endpointID string) string {
		e, err := r.st.Endpoint(ctx, r.site.ID, endpointID)
		if err != nil {
			t.Fatal(err)
		}
		return e.SubscriberID
	}
	// Two visits at 19:xx Berlin time and a click at 09:xx: the visits win.
	for _, at := range []time.Time{
		time.Date(2026, 5, 3, 17, 5, 0, 0, time.UTC),
		time.Date(2026, 5, 4, 17, 50, 0, 0, time.UTC),
	} {
		if err := r.st.LearnActivity(ctx, subOf(evening), at, store.VisitWeight); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.st.LearnActivity(ctx, subOf(evening), time.Date(2026, 5, 4, 7, 0, 0, 0, time.UTC), 1); err != nil {
		t.Fatal(err)
	}
	// Most active at 07:00 UTC, the hour the send starts in: at once.
	if err := r.st.LearnActivity(ctx, subOf(now), time.Date(2026, 5, 4, 7, 59, 0, 0, time.UTC), store.ClickWeight); err != nil {
		t.Fatal(err)
	}
	n := r.content(`{"title":"Hi","ttl":60,"smartTime":true}`)
	r.intent(n)
	if got := r.get(n.ID).Waves; got != 3 {
		t.Fatalf("%d waves, want 3", got)
	}
	for _, s := range []struct {
		at   time.Time
		want []string
	}{
		{start, []string{now}},
		{time.Date(2026, 6, 1, 8, 0, 0, 0, time.UTC), []string{unknown}},
		{time.Date(2026, 6, 1, 16, 59, 0, 0, time.UTC), nil},
		{time.Date(2026, 6, 1, 17, 0, 0, 0, time.UTC), []string{evening}},
	} {
		if pushed := r.releaseWaves(s.at); !slices.Equal(keys(pushed), s.want) {
			t.Fatalf("at %s pushed %v, want %v", s.at, keys(pushed), s.want)
		}
	}
	if got := r.get(n.ID); got.Status != store.StatusSent || got.Sent != 3 {
		t.Fatalf("after the last wave: %s %+v", got.Status, got.Counters)
	}
}

func TestAutoWinnerSendsTheBetterVariantToTheRest(t *testing.T) {
	r := newRig(t)
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	r.f.now = func() time.Time { return start }
	all := map[string]bool{}
	for range 200 {
		all[r.subscriber("en", "")] = true
	}
	n := r.content(`{"title":"A","ttl":60,"b":{"title":"B"},"abTest":{"autoWinner":true,"testPercent":30,"afterHours":4}}`)
	r.intent(n)
	if got := r.get(n.ID).Waves; got != 2 {
		t.Fatalf("%d waves, want 2", got)
	}
	test := r.releaseWaves(start)
	for id, winner := range test {
		if winner != "-" || !notification.InTestGroup(n.ID, id, 30) {
			t.Fatalf("test wave pushed %s (winner %s), outside the test group", id, winner)
		}
	}
	inGroup := 0
	for id := range all {
		if notification.InTestGroup(n.ID, id, 30) {
			inGroup++
		}
	}
	// Exactly the test group went out. Its size is random (binomial, about
	// 60 ± 6.5): only a degenerate split fails the wide bounds.
	if len(test) != inGroup || inGroup < 20 || inGroup > 100 {
		t.Fatalf("test wave of %d, test group of %d of 200 (about 60 expected)", len(test), inGroup)
	}
	if pushed := r.releaseWaves(start.Add(4*time.Hour - time.Minute)); len(pushed) != 0 {
		t.Fatalf("%d pushed before afterHours", len(pushed))
	}
	// B: 9 clicks of 30 beats A: 10 of 40.
	r.report.rep = analytics.Report{Variants: []analytics.VariantRow{
		{Variant: "a", Sent: 40, Clicked: 10}, {Variant: "b", Sent: 30, Clicked: 9}}}
	rest := r.releaseWaves(start.Add(4 * time.Hour))
	for id, winner := range rest {
		if winner != "b" || test[id] != "" {
			t.Fatalf("second wave pushed %s with winner %q (in test group: %v)", id, winner, test[id] != "")
		}
	}
	if len(test)+len(rest) != len(all) {
		t.Fatalf("test %d + rest %d, want %d", len(test), len(rest), len(all))
	}
	got := r.get(n.ID)
	if got.Status != store.StatusSent || got.ABWinner != "b" || got.Sent != 200 {
		t.Fatalf("after the second wave: %s winner %q %+v", got.Status, got.ABWinner, got.Counters)
	}
}

func TestWinnerPicksTheBetterClickRate(t *testing.T) {
	f := func(a, b analytics.VariantRow, want string) {
		t.Helper()
		r := newRig(t)
		r.report.rep = analytics.Report{Variants: []analytics.VariantRow{a, b}}
		n := r.content(`{"title":"A","ttl":60,"b":{"title":"B"},"abTest":{"autoWinner":true,"testPercent":20,"afterHours":1}}`)
		got, err := r.f.winner(context.Background(), n)
		if err != nil || got != want {
			t.Fatalf("winner = %q, %v; want %q", got, err, want)
		}
		// Decided once: a later report does not change it.
		r.report.rep = analytics.Report{}
		if got, _ := r.f.winner(context.Background(), r.get(n.ID)); got != want {
			t.Fatalf("second call: %q, want %q", got, want)
		}
	}
	f(analytics.VariantRow{Variant: "a", Sent: 100, Clicked: 5}, analytics.VariantRow{Variant: "b", Sent: 100, Clicked: 6}, "b")
	f(analytics.VariantRow{Variant: "a", Sent: 100, Clicked: 6}, analytics.VariantRow{Variant: "b", Sent: 100, Clicked: 5}, "a")
	f(analytics.VariantRow{Variant: "a", Sent: 100, Clicked: 5}, analytics.VariantRow{Variant: "b", Sent: 50, Clicked: 3}, "b")
	f(analytics.VariantRow{Variant: "a", Sent: 10, Clicked: 1}, analytics.VariantRow{Variant: "b", Sent: 20, Clicked: 2}, "a") // tie
	f(analytics.VariantRow{Variant: "a"}, analytics.VariantRow{Variant: "b"}, "a")                                             // nothing sent
	f(analytics.VariantRow{Variant: "a"}, analytics.VariantRow{Variant: "b", Sent: 5}, "b")                                    // A reached nobody
}
