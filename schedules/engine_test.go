package schedules

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/automations/enginetest"
	"github.com/relaybell/relaybell/notification"
	"github.com/relaybell/relaybell/store"
)

// dispatcher counts dispatches per notification.
type dispatcher struct {
	mu   sync.Mutex
	sent map[string]int
}

func (d *dispatcher) Dispatch(_ context.Context, n store.Notification) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.sent == nil {
		d.sent = map[string]int{}
	}
	d.sent[n.ID]++
	return nil
}

// fakeTemplates holds templates by id, of one website.
type fakeTemplates struct {
	websiteID string
	titles    map[string]string
}

func (f fakeTemplates) Apply(_ context.Context, websiteID, id string, req *notification.Request) error {
	title, ok := f.titles[id]
	if !ok || websiteID != f.websiteID {
		return fmt.Errorf("template %s: %w", id, store.ErrNotFound)
	}
	if req.Title == nil {
		req.Title = &title
	}
	return nil
}

// body is a schedule's POST body from JSON.
func body(t *testing.T, js string) Body {
	t.Helper()
	var b Body
	if err := json.Unmarshal([]byte(js), &b); err != nil {
		t.Fatal(err)
	}
	return b
}

// website makes a website in zone tz.
func website(t *testing.T, st store.Store, tz string) store.Website {
	t.Helper()
	w, err := st.UpdateWebsite(context.Background(), enginetest.Website(t, st).ID, func(w *store.Website) error {
		w.Timezone = tz
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// create stores a schedule of w from a JSON body at now.
func create(t *testing.T, st store.Store, w store.Website, js string, now time.Time) store.Schedule {
	t.Helper()
	sc, err := NewService(st, nil).Create(context.Background(), w, uuid.NewString(), body(t, js), now)
	if err != nil {
		t.Fatalf("Create(%s): %v", js, err)
	}
	return sc
}

// run is an engine on st at clock c, with the given config.
func run(t *testing.T, st store.Store, c *enginetest.Clock, cfg Config, disp Dispatcher) *Engine {
	t.Helper()
	cfg.Now = c.Now
	e, err := NewEngine(cfg, st, nil, disp, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// ledger is the schedule's ledger, earliest first, each row written
// "occurrence outcome" with the occurrence in UTC.
func ledger(t *testing.T, st store.Store, sc store.Schedule) []string {
	t.Helper()
	runs, err := st.ScheduleRuns(context.Background(), sc.WebsiteID, sc.ID, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range slices.Backward(runs) {
		out = append(out, r.Occurrence.UTC().Format("01-02 15:04Z")+" "+r.Outcome)
	}
	return out
}

// sends are the schedule's notifications, oldest first.
func sends(t *testing.T, st store.Store, sc store.Schedule) []store.Notification {
	t.Helper()
	list, err := st.ListNotifications(context.Background(), store.ListQuery{WebsiteID: sc.WebsiteID, ScheduleID: sc.ID, Limit: 10_000})
	if err != nil {
		t.Fatal(err)
	}
	slices.Reverse(list)
	return list
}

// stepThrough moves the clock from its time to until by step, running
// every engine at once at each step.
func stepThrough(t *testing.T, c *enginetest.Clock, until time.Time, step time.Duration, engines ...*Engine) {
	t.Helper()
	for c.Now().Before(until) {
		c.Add(step)
		enginetest.RunAtOnce(t, engines)
	}
}

// The DST cases of the issue, in Europe/Paris and America/New_York: a
// 09:00 daily send at 09:00 local on both sides of each change, a 02:30
// that does not exist that day at 03:00, a 01:30 that happens twice
// once; on both stores, each occurrence sent once by two engines.
func TestEngineDST(t *testing.T) {
	cases := []struct {
		zone, rule, from, to string
		want                 []string
	}{
		{"Europe/Paris", "FREQ=DAILY;BYHOUR=9", "2026-03-28 00:00", "2026-03-31 00:00",
			[]string{"03-28 08:00Z sent", "03-29 07:00Z sent", "03-30 07:00Z sent"}},
		{"Europe/Paris", "FREQ=DAILY;BYHOUR=9", "2026-10-24 00:00", "2026-10-27 00:00",
			[]string{"10-24 07:00Z sent", "10-25 08:00Z sent", "10-26 08:00Z sent"}},
		{"Europe/Paris", "FREQ=DAILY;BYHOUR=2;BYMINUTE=30", "2026-03-28 00:00", "2026-03-30 00:00",
			[]string{"03-28 01:30Z sent", "03-29 01:00Z sent"}},
		{"Europe/Paris", "FREQ=DAILY;BYHOUR=2;BYMINUTE=30", "2026-10-24 22:00", "2026-10-26 00:00",
			[]string{"10-25 00:30Z sent"}},
		{"America/New_York", "FREQ=DAILY;BYHOUR=9", "2026-03-07 00:00", "2026-03-10 00:00",
			[]string{"03-07 14:00Z sent", "03-08 13:00Z sent", "03-09 13:00Z sent"}},
		{"America/New_York", "FREQ=DAILY;BYHOUR=9", "2026-10-31 00:00", "2026-11-03 00:00",
			[]string{"10-31 13:00Z sent", "11-01 14:00Z sent", "11-02 14:00Z sent"}},
		{"America/New_York", "FREQ=DAILY;BYHOUR=2;BYMINUTE=30", "2026-03-08 00:00", "2026-03-09 00:00",
			[]string{"03-08 07:00Z sent"}},
		{"America/New_York", "FREQ=DAILY;BYHOUR=1;BYMINUTE=30", "2026-11-01 02:00", "2026-11-01 12:00",
			[]string{"11-01 05:30Z sent"}},
	}
	for _, s := range enginetest.Stores {
		t.Run(s.Name, func(t *testing.T) {
			st := s.Open(t)
			for _, tc := range cases {
				from, to := utc(t, tc.from), utc(t, tc.to)
				c := enginetest.NewClock(from)
				w := website(t, st, tc.zone)
				sc := create(t, st, w, `{"name": "Digest", "audience": {"everyone": true}, "content": {"title": "Daily digest"},
					"rule": "`+tc.rule+`"}`, from)
				disp := &dispatcher{}
				e1, e2 := run(t, st, c, Config{NoBudget: true}, disp), run(t, st, c, Config{NoBudget: true}, disp)
				stepThrough(t, c, to, 10*time.Minute, e1, e2)
				if got := ledger(t, st, sc); strings.Join(got, ",") != strings.Join(tc.want, ",") {
					t.Fatalf("%s %s: ledger %v, want %v", tc.zone, tc.rule, got, tc.want)
				}
				ns := sends(t, st, sc)
				if len(ns) != len(tc.want) {
					t.Fatalf("%s %s: %d sends, want %d", tc.zone, tc.rule, len(ns), len(tc.want))
				}
				for _, n := range ns {
					if n.ScheduleID != sc.ID || n.Title != "Daily digest" || n.Status != store.StatusQueued || disp.sent[n.ID] != 1 {
						t.Fatalf("send %+v dispatched %d times", n, disp.sent[n.ID])
					}
				}
			}
		})
	}
}

// After an outage: an occurrence missed by less than catchUpMinutes goes
// late, once; older ones are skipped, and the ledger (the schedule's
// history) shows them skipped.
func TestEngineCatchUpAndSkip(t *testing.T) {
	for _, s := range enginetest.Stores {
		t.Run(s.Name, func(t *testing.T) {
			st := s.Open(t)
			start := utc(t, "2026-06-01 00:00")
			c := enginetest.NewClock(start)
			w := website(t, st, "UTC")
			sc := create(t, st, w, `{"name": "Digest", "audience": {"everyone": true}, "content": {"title": "Digest"},
				"rule": "FREQ=DAILY;BYHOUR=9", "catchUpMinutes": 30}`, start)
			e := run(t, st, c, Config{NoBudget: true}, nil)
			// Down from before 09:00 to 09:29: sent late, once.
			c.Set(utc(t, "2026-06-01 09:29"))
			if n, err := e.RunDue(context.Background()); err != nil || n != 1 {
				t.Fatalf("RunDue: %d %v", n, err)
			}
			if n, err := e.RunDue(context.Background()); err != nil || n != 0 {
				t.Fatalf("RunDue again: %d %v", n, err)
			}
			// Down for three days, back at 09:30 on the 4th: the 2nd, the
			// 3rd and the 4th (missed by exactly 30 minutes) are skipped.
			c.Set(utc(t, "2026-06-04 09:30"))
			if n, err := e.RunDue(context.Background()); err != nil || n != 3 {
				t.Fatalf("RunDue after the gap: %d %v", n, err)
			}
			c.Set(utc(t, "2026-06-05 09:00"))
			if n, err := e.RunDue(context.Background()); err != nil || n != 1 {
				t.Fatalf("RunDue on time: %d %v", n, err)
			}
			want := []string{"06-01 09:00Z sent", "06-02 09:00Z skipped", "06-03 09:00Z skipped", "06-04 09:00Z skipped", "06-05 09:00Z sent"}
			if got := ledger(t, st, sc); strings.Join(got, ",") != strings.Join(want, ",") {
				t.Fatalf("ledger %v, want %v", got, want)
			}
			ns := sends(t, st, sc)
			if len(ns) != 2 || !ns[0].CreatedAt.Equal(utc(t, "2026-06-01 09:29")) || !ns[1].CreatedAt.Equal(utc(t, "2026-06-05 09:00")) {
				t.Fatalf("sends %+v", ns)
			}
			got, err := st.Schedule(context.Background(), w.ID, sc.ID)
			if err != nil || got.NextAt == nil || !got.NextAt.Equal(utc(t, "2026-06-06 09:00")) {
				t.Fatalf("schedule %+v %v", got, err)
			}
		})
	}
}

// A budget refusal is recorded on the schedule, and the occurrence is not
// lost: it goes in the next hour with room, however late (catch-up does
// not skip it), and the occurrences that came due meanwhile follow it.
func TestEngineBudgetRefusal(t *testing.T) {
	for _, s := range enginetest.Stores {
		t.Run(s.Name, func(t *testing.T) {
			st := s.Open(t)
			ctx := context.Background()
			start := utc(t, "2026-06-01 08:50")
			c := enginetest.NewClock(start)
			w := website(t, st, "UTC")
			sc := create(t, st, w, `{"name": "Quarter", "audience": {"everyone": true}, "content": {"title": "Every 15 minutes"},
				"rule": "FREQ=DAILY;BYHOUR=9,10;BYMINUTE=0,15,30,45", "catchUpMinutes": 5}`, start)
			// The hour's budget of 2 is used up by 09:00's sends: one
			// API send, then the schedule's 09:00.
			budget := notification.BroadcastBudget(w.ID)
			budget.Max = 2

			if _, ok, err := st.TakeRateLimits(ctx, []store.RateLimit{budget}, 1, utc(t, "2026-06-01 09:00")); err != nil || !ok {
				t.Fatalf("TakeRateLimits: %v %v", ok, err)
			}
			e := run(t, st, c, Config{BroadcastsPerHour: 2}, nil)
			stepThrough(t, c, utc(t, "2026-06-01 09:20"), time.Minute, e)
			got, err := st.Schedule(ctx, w.ID, sc.ID)
			if err != nil {
				t.Fatal(err)
			}
			if !got.BudgetWait || got.Refusal == nil || !got.Refusal.Occurrence.Equal(utc(t, "2026-06-01 09:15")) ||
				!got.Refusal.At.Equal(utc(t, "2026-06-01 09:15")) || !got.Refusal.RetryAt.Equal(utc(t, "2026-06-01 10:00")) ||
				got.Refusal.Reason != "the website's hourly budget of 2 broadcast sends was used up" {
				t.Fatalf("schedule after the refusal: %+v %+v", got, got.Refusal)
			}
			// A change of the schedule keeps the waiting occurrence.
			renamed, err := NewService(st, nil).Update(ctx, w, got, body(t, `{"name": "Quarter hours"}`), c.Now())
			if err != nil {
				t.Fatal(err)
			}
			again, err := st.Schedule(ctx, w.ID, sc.ID)
			if err != nil || renamed.Name != "Quarter hours" || !again.BudgetWait || !again.NextAt.Equal(utc(t, "2026-06-01 09:15")) ||
				!again.Refusal.RetryAt.Equal(utc(t, "2026-06-01 10:00")) {
				t.Fatalf("schedule after a change: %+v %+v %v", again, again.Refusal, err)
			}
			// Nothing goes until 10:00; then two an hour, in order, however
			// late (all but 09:15 by more than catchUpMinutes): 09:15 and
			// 09:30 at 10:00, 09:45 and 10:00 at 11:00, 10:15 and 10:30 at
			// 12:00, when 10:45 waits for 13:00.
			stepThrough(t, c, utc(t, "2026-06-01 12:00"), time.Minute, e)
			want := []string{"06-01 09:00Z sent", "06-01 09:15Z sent", "06-01 09:30Z sent", "06-01 09:45Z sent",
				"06-01 10:00Z sent", "06-01 10:15Z sent", "06-01 10:30Z sent"}
			if got := ledger(t, st, sc); strings.Join(got, ",") != strings.Join(want, ",") {
				t.Fatalf("ledger %v, want %v", got, want)
			}
			var created []string
			for _, n := range sends(t, st, sc) {
				created = append(created, n.CreatedAt.UTC().Format("15:04"))
			}
			if want := "09:00 10:00 10:00 11:00 11:00 12:00 12:00"; strings.Join(created, " ") != want {
				t.Fatalf("sends created at %v, want %s", created, want)
			}
			got, err = st.Schedule(ctx, w.ID, sc.ID)
			if err != nil || !got.BudgetWait || got.Refusal == nil || !got.Refusal.Occurrence.Equal(utc(t, "2026-06-01 10:45")) ||
				!got.Refusal.RetryAt.Equal(utc(t, "2026-06-01 13:00")) {
				t.Fatalf("schedule at 12:00: %+v %+v %v", got, got.Refusal, err)
			}
		})
	}
}

// A node that claimed a schedule and died leaves it leased: another takes
// it once the lease runs out and does the occurrence once. Two engines
// at once never do one twice.
func TestEngineCrashRedo(t *testing.T) {
	for _, s := range enginetest.Stores {
		t.Run(s.Name, func(t *testing.T) {
			st := s.Open(t)
			ctx := context.Background()
			start := utc(t, "2026-06-01 08:00")
			c := enginetest.NewClock(start)
			w := website(t, st, "UTC")
			sc := create(t, st, w, `{"name": "Digest", "audience": {"everyone": true}, "content": {"title": "Digest"},
				"rule": "FREQ=DAILY;BYHOUR=9"}`, start)
			c.Set(utc(t, "2026-06-01 09:00"))
			claimed, err := st.ClaimSchedules(ctx, c.Now(), 5*time.Second, 10)
			if err != nil || len(claimed) != 1 {
				t.Fatalf("ClaimSchedules: %v %v", claimed, err)
			}
			e1, e2 := run(t, st, c, Config{NoBudget: true}, nil), run(t, st, c, Config{NoBudget: true}, nil)
			if n := enginetest.RunAtOnce(t, []*Engine{e1, e2}); n[0]+n[1] != 0 {
				t.Fatalf("fired %v within the lease", n)
			}
			c.Add(5 * time.Second)
			if n := enginetest.RunAtOnce(t, []*Engine{e1, e2}); n[0]+n[1] != 1 {
				t.Fatalf("fired %v after the lease", n)
			}
			// The dead node's claim, done late, does nothing.
			d, _ := Decode(claimed[0])
			acct, err := st.Account(ctx, w.AccountID)
			if err != nil {
				t.Fatal(err)
			}
			n, err := (&Engine{cfg: Config{}.withDefaults(), st: st}).occurrence(ctx, w, acct, claimed[0], d, *claimed[0].NextAt, c.Now())
			if err != nil {
				t.Fatal(err)
			}
			next := utc(t, "2026-06-02 09:00")
			outcome, err := st.FireSchedule(ctx, store.ScheduleFire{WebsiteID: w.ID, ScheduleID: sc.ID, Occurrence: *claimed[0].NextAt,
				Next: &next, Notification: n, At: c.Now()})
			if err != nil || outcome != "" {
				t.Fatalf("the late claim: %q %v", outcome, err)
			}
			if got := ledger(t, st, sc); strings.Join(got, ",") != "06-01 09:00Z sent" {
				t.Fatalf("ledger %v", got)
			}
			if ns := sends(t, st, sc); len(ns) != 1 {
				t.Fatalf("%d sends", len(ns))
			}
		})
	}
}

// With perTimezone each occurrence is a per-time-zone send at the
// occurrence's wall time; a template fills what the content leaves out;
// a template gone pauses the schedule with the reason.
func TestEnginePerTimezoneAndTemplate(t *testing.T) {
	st := enginetest.OpenSQLite(t)
	ctx := context.Background()
	start := utc(t, "2026-06-01 00:00")
	c := enginetest.NewClock(start)
	w := website(t, st, "Europe/Paris")
	tpl := fakeTemplates{websiteID: w.ID, titles: map[string]string{"t1": "From the template"}}
	sc, err := NewService(st, tpl).Create(ctx, w, uuid.NewString(), body(t, `{"name": "Local", "audience": {"everyone": true},
		"templateId": "t1", "content": {"body": "Morning"}, "rule": "FREQ=DAILY;BYHOUR=8;BYMINUTE=30", "perTimezone": true}`), start)
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewEngine(Config{Now: c.Now, NoBudget: true}, st, tpl, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Set(utc(t, "2026-06-01 06:30")) // 08:30 in Paris
	if n, err := e.RunDue(ctx); err != nil || n != 1 {
		t.Fatalf("RunDue: %d %v", n, err)
	}
	ns := sends(t, st, sc)
	if len(ns) != 1 || ns[0].Title != "From the template" || ns[0].Body != "Morning" || ns[0].Waves != 0 {
		t.Fatalf("sends %+v", ns)
	}
	content, err := notification.DecodeContent(ns[0].Content)
	if err != nil || !content.PerTimezone || content.LocalTime != "08:30" {
		t.Fatalf("content %+v %v", content, err)
	}
	// The template goes: the next occurrence pauses the schedule and tells
	// the webhooks.
	delete(tpl.titles, "t1")
	c.Set(utc(t, "2026-06-02 06:30"))
	if err := st.CreateWebhook(ctx, store.Webhook{ID: uuid.NewString(), WebsiteID: w.ID, URL: "https://hooks.example/in",
		Secret: "whsec_test", Enabled: true, CreatedAt: c.Now()}); err != nil {
		t.Fatal(err)
	}
	before, err := st.WebhookEvents(ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.RunDue(ctx); err != nil {
		t.Fatal(err)
	}
	const reason = "Its occurrence at 2026-06-02T06:30:00Z could not be sent: template_not_found: no template t1 on this website."
	got, err := st.Schedule(ctx, w.ID, sc.ID)
	if err != nil || got.Status != store.SchedulePaused || got.NextAt != nil || got.PausedReason != reason {
		t.Fatalf("schedule %+v %v", got, err)
	}
	after, err := st.WebhookEvents(ctx, 0, 0)
	if err != nil || len(after) != len(before)+1 || after[len(after)-1].Event != store.EventSchedulePaused {
		t.Fatalf("events after the pause: %+v %v", after[len(before):], err)
	}
	var data store.SchedulePausedData
	if err := json.Unmarshal(after[len(after)-1].Data, &data); err != nil ||
		data != (store.SchedulePausedData{ScheduleID: sc.ID, Name: sc.Name, Reason: store.SchedulePausedSendFailed, Message: reason}) {
		t.Fatalf("event data %+v %v", data, err)
	}
	// Pausing a paused schedule again changes nothing.
	if ok, err := st.PauseSchedule(ctx, w.ID, sc.ID, store.SchedulePausedSendFailed, "again", c.Now()); ok || err != nil {
		t.Fatalf("PauseSchedule of a paused one = %v, %v", ok, err)
	}
	// Without templates a templateId is refused.
	_, err = NewService(st, nil).Create(ctx, w, uuid.NewString(), body(t, `{"name": "T", "audience": {"everyone": true},
		"templateId": "t1", "rule": "FREQ=DAILY;BYHOUR=8"}`), start)
	var se *Error
	if !errors.As(err, &se) || se.Code != CodeTemplateNotFound {
		t.Fatalf("Create without templates: %v", err)
	}
}

// Nodes of one PostgreSQL, each its own engine, run many schedules at
// once: each occurrence is done by one of them, once.
func TestEngineNodesExactlyOnce(t *testing.T) {
	nodes := enginetest.OpenPostgres(t, 3)
	start := utc(t, "2026-05-31 22:00") // midnight in Paris
	c := enginetest.NewClock(start)
	w := website(t, nodes[0], "Europe/Paris")
	var all []store.Schedule
	for i := range 20 {
		all = append(all, create(t, nodes[0], w, fmt.Sprintf(`{"name": "S%d", "audience": {"everyone": true}, "content": {"title": "S%d"},
			"rule": "FREQ=DAILY;BYHOUR=1,2;BYMINUTE=0,10,20,30,40,50"}`, i, i), start))
	}
	disp := &dispatcher{}
	var engines []*Engine
	for _, st := range nodes {
		engines = append(engines, run(t, st, c, Config{NoBudget: true, Batch: 3}, disp))
	}
	stepThrough(t, c, utc(t, "2026-06-01 01:00"), 5*time.Minute, engines...)
	for _, sc := range all {
		got := ledger(t, nodes[1], sc)
		if len(got) != 12 {
			t.Fatalf("%s: ledger %v", sc.Name, got)
		}
		ns := sends(t, nodes[2], sc)
		if len(ns) != 12 {
			t.Fatalf("%s: %d sends", sc.Name, len(ns))
		}
		for _, n := range ns {
			if disp.sent[n.ID] != 1 {
				t.Fatalf("%s dispatched %d times", n.ID, disp.sent[n.ID])
			}
		}
	}
}

// A new account's first large broadcast waits for review, as a send
// through the API does; the same send of an older account goes.
func TestEngineReview(t *testing.T) {
	st := enginetest.OpenSQLite(t)
	ctx := context.Background()
	start := enginetest.Start // the account's creation
	c := enginetest.NewClock(start)
	w := website(t, st, "UTC")
	for i := range 2 {
		if _, err := st.UpsertSubscription(ctx, store.SubscriptionInput{WebsiteID: w.ID, Endpoint: fmt.Sprintf("https://push.example/%d", i),
			P256dh: "p", Auth: "a", Device: "desktop", At: start}); err != nil {
			t.Fatal(err)
		}
	}
	sc := create(t, st, w, `{"name": "D", "audience": {"everyone": true}, "content": {"title": "D"}, "rule": "FREQ=DAILY;BYHOUR=13"}`, start)
	disp := &dispatcher{}
	e := run(t, st, c, Config{NoBudget: true, ReviewThreshold: 2}, disp)
	c.Set(start.Add(time.Hour))
	if n, err := e.RunDue(ctx); err != nil || n != 1 {
		t.Fatalf("RunDue: %d %v", n, err)
	}
	// Fifteen days on, the account is no longer new (the 14 runs missed
	// meanwhile are skipped).
	c.Set(start.Add(15*24*time.Hour + time.Hour))
	if n, err := e.RunDue(ctx); err != nil || n != 15 {
		t.Fatalf("RunDue: %d %v", n, err)
	}
	ns := sends(t, st, sc)
	if len(ns) != 2 || ns[0].Status != store.StatusHeldForReview || ns[1].Status != store.StatusQueued || disp.sent[ns[0].ID] != 0 || disp.sent[ns[1].ID] != 1 {
		t.Fatalf("sends %+v, dispatched %v", ns, disp.sent)
	}
}

// A schedule that can no longer be read (its time zone gone from the
// system) is paused with the reason, and holds no other website's
// schedule back: it heads every claim, so before it stopped them all.
func TestEngineUnreadableSchedulePauses(t *testing.T) {
	for _, s := range enginetest.Stores {
		t.Run(s.Name, func(t *testing.T) {
			st := s.Open(t)
			ctx := context.Background()
			start := utc(t, "2026-06-01 08:00")
			c := enginetest.NewClock(start)
			broken := create(t, st, website(t, st, "UTC"), `{"name": "Broken", "audience": {"everyone": true},
				"content": {"title": "Never"}, "rule": "FREQ=DAILY;BYHOUR=8;BYMINUTE=30"}`, start)
			other := website(t, st, "UTC")
			good := create(t, st, other, `{"name": "Good", "audience": {"everyone": true},
				"content": {"title": "Morning"}, "rule": "FREQ=DAILY;BYHOUR=9"}`, start)
			broken.Definition = []byte(strings.Replace(string(broken.Definition), `"UTC"`, `"Mars/Olympus_Mons"`, 1))
			if !strings.Contains(string(broken.Definition), "Mars/") {
				t.Fatalf("no time zone to break in %s", broken.Definition)
			}
			if err := st.UpdateSchedule(ctx, broken); err != nil {
				t.Fatal(err)
			}
			e := run(t, st, c, Config{}, nil)
			stepThrough(t, c, utc(t, "2026-06-01 09:05"), time.Minute, e)
			got, err := st.Schedule(ctx, broken.WebsiteID, broken.ID)
			if err != nil || got.Status != store.SchedulePaused || !strings.HasPrefix(got.PausedReason, "Its rule or time zone can no longer be read: ") {
				t.Fatalf("the broken schedule: %+v %v", got, err)
			}
			ns, err := st.ListNotifications(ctx, store.ListQuery{WebsiteID: other.ID, ScheduleID: good.ID, Limit: 10})
			if err != nil || len(ns) != 1 || ns[0].Title != "Morning" {
				t.Fatalf("the other website's 09:00: %+v %v", ns, err)
			}
		})
	}
}

// An occurrence due while the account's e-mail address is not verified is
// held, as a feed's items wait: nothing sent or failed, next_at stays, the
// schedule says why (its refusal) and is looked at again after
// VerifyRetry. Once verified, the occurrence goes within its catch-up.
func TestEngineUnverifiedHolds(t *testing.T) {
	for _, s := range enginetest.Stores {
		t.Run(s.Name, func(t *testing.T) {
			st := s.Open(t)
			ctx := context.Background()
			start := utc(t, "2026-06-01 08:50")
			c := enginetest.NewClock(start)
			id := uuid.NewString()
			a := store.Account{ID: uuid.NewString(), OwnerEmail: id[:8] + "@example.com", CreatedAt: start}
			w := store.Website{ID: id, AccountID: a.ID, ProjectID: "prj_" + id[:12], Name: "Shop", URL: "https://shop.example",
				Timezone: "UTC", VAPIDPublicKey: "pub" + id, VAPIDPrivateKey: "priv" + id, CreatedAt: start}
			if err := st.CreateWebsite(ctx, a, w, store.APIKey{}); err != nil {
				t.Fatal(err)
			}
			sc := create(t, st, w, `{"name": "Morning", "audience": {"everyone": true}, "content": {"title": "Good morning"},
				"rule": "FREQ=DAILY;BYHOUR=9;BYMINUTE=0", "catchUpMinutes": 30}`, start)
			e := run(t, st, c, Config{VerifyRetry: 5 * time.Minute}, nil)
			stepThrough(t, c, utc(t, "2026-06-01 09:12"), time.Minute, e)
			got, err := st.Schedule(ctx, w.ID, sc.ID)
			if err != nil {
				t.Fatal(err)
			}
			nine := utc(t, "2026-06-01 09:00")
			if got.NextAt == nil || !got.NextAt.Equal(nine) || got.BudgetWait || got.Refusal == nil ||
				*got.Refusal != (store.ScheduleRefusal{At: utc(t, "2026-06-01 09:10"), Occurrence: nine,
					RetryAt: utc(t, "2026-06-01 09:15"), Reason: ErrNotVerified.Error()}) {
				t.Fatalf("schedule while unverified: %+v %+v", got, got.Refusal)
			}
			if l := ledger(t, st, sc); len(l) != 0 {
				t.Fatalf("ledger while unverified: %v", l)
			}
			if n := sends(t, st, sc); len(n) != 0 {
				t.Fatalf("sends while unverified: %+v", n)
			}
			if err := st.SetAccountEmailVerified(ctx, a.ID); err != nil {
				t.Fatal(err)
			}
			stepThrough(t, c, utc(t, "2026-06-01 09:20"), time.Minute, e)
			if l := ledger(t, st, sc); strings.Join(l, ",") != "06-01 09:00Z sent" {
				t.Fatalf("ledger once verified: %v", l)
			}
			if n := sends(t, st, sc); len(n) != 1 || !n[0].CreatedAt.Equal(utc(t, "2026-06-01 09:15")) || n[0].Status == store.StatusFailed {
				t.Fatalf("sends once verified: %+v", n)
			}
			got, err = st.Schedule(ctx, w.ID, sc.ID)
			if err != nil || got.NextAt == nil || !got.NextAt.Equal(utc(t, "2026-06-02 09:00")) || !got.Refusal.RetryAt.IsZero() {
				t.Fatalf("schedule once verified: %+v %+v %v", got, got.Refusal, err)
			}
		})
	}
}
