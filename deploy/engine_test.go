package deploy

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// The engine's fault test (issue 32): people go through three-step
// sequences while the nodes that run the engine (the fan-out role) die
// with SIGKILL again and again. A sequence is a value (sequence): an
// automation of three messages and a journey of three send steps with
// waits between them, both entered by each new browser of one website,
// run in the same cluster under the same kills.

// stepDelays are when each step of the sequence comes due after the
// person entered it (for the journey, after the step before it ran: its
// waits count from there).
var stepDelays = []time.Duration{0, 20 * time.Second, 40 * time.Second}

// sequence is a three-step sequence the engine runs for each person, as
// the test drives and reads it.
type sequence struct {
	name string
	// create stores the sequence, active and entered by every new browser
	// of the website (trigger subscribed), with a push per step due
	// stepDelays after entering, and returns its id.
	create func(c *cluster, w website) string
	// steps reads what the store recorded of each person's steps: one row
	// per step done (a ledger row), with its due time and the
	// notification it stored; pending is how many steps are still
	// waiting.
	steps func(ctx context.Context, db *pgx.Conn, id string) (done []stepDone, pending int, err error)
	// progress counts what steps has, cheaply: the steps done and the
	// timers still waiting.
	progress func(ctx context.Context, db *pgx.Conn, id string) (done, pending int, err error)
}

// stepDone is a step the engine did for a person.
type stepDone struct {
	Person       string
	Step         int
	Outcome      string
	Notification string
	Due          time.Time
	Created      time.Time // the notification's
}

// threeMessages is an automation of three messages.
var threeMessages = sequence{
	name: "automation",
	create: func(c *cluster, w website) string {
		var msgs []map[string]any
		for i, d := range stepDelays {
			msgs = append(msgs, map[string]any{"delaySeconds": int(d.Seconds()), "title": fmt.Sprintf("Step %d", i+1)})
		}
		var a struct {
			ID string `json:"id"`
		}
		// Transactional: the website's frequency cap and quiet hours are
		// not what this test is about.
		body := map[string]any{"name": "Three steps", "status": "active", "trigger": map[string]any{"type": "subscribed"},
			"messages": msgs, "transactional": true}
		if code := call(c.t, "POST", c.apis[0]+"/api/v1/automations", w.APIKey, body, &a); code != 201 {
			c.t.Fatalf("creating the automation: %d", code)
		}
		return a.ID
	},
	steps: func(ctx context.Context, db *pgx.Conn, id string) ([]stepDone, int, error) {
		// A person has one run: trigger subscribed fires once per browser.
		rows, err := db.Query(ctx, `SELECT l.subscriber_id, l.item, l.outcome, coalesce(l.notification_id, ''), r.started_at,
			coalesce(n.created_at, l.at)
			FROM ledger l JOIN automation_runs r ON r.run_id = l.run_id
			LEFT JOIN notifications n ON n.id = l.notification_id WHERE l.automation_id = $1`, id)
		if err != nil {
			return nil, 0, err
		}
		done, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (stepDone, error) {
			var s stepDone
			var started time.Time
			err := r.Scan(&s.Person, &s.Step, &s.Outcome, &s.Notification, &started, &s.Created)
			if err == nil && s.Step < len(stepDelays) {
				s.Due = started.Add(stepDelays[s.Step])
			}
			return s, err
		})
		if err != nil {
			return nil, 0, err
		}
		_, pending, err := automationProgress(ctx, db, id)
		return done, pending, err
	},
	progress: automationProgress,
}

// automationProgress counts an automation's ledger rows and waiting
// timers.
func automationProgress(ctx context.Context, db *pgx.Conn, id string) (done, pending int, err error) {
	err = db.QueryRow(ctx, `SELECT (SELECT count(*) FROM ledger WHERE automation_id = $1),
		(SELECT count(*) FROM timers WHERE automation_id = $1)`, id).Scan(&done, &pending)
	return done, pending, err
}

// journeySends are the send steps of threeSends, in order.
var journeySends = []string{"send-1", "send-2", "send-3"}

// threeSends is a journey of three send steps, a wait of stepDelays'
// difference between each (send, wait 20s, send, wait 20s, send), entered
// by every new browser. Its ledger is the journey's history: one row per
// step an enrolment took, the send's notification with it.
var threeSends = sequence{
	name: "journey",
	create: func(c *cluster, w website) string {
		var steps []map[string]any
		for i, id := range journeySends {
			send := map[string]any{"id": id, "type": "send", "content": map[string]any{"title": fmt.Sprintf("Journey step %d", i+1)},
				// As the automation's: quiet hours and the cap are not
				// what this test is about.
				"transactional": true}
			steps = append(steps, send)
			if i+1 < len(journeySends) {
				wait := fmt.Sprintf("wait-%d", i+1)
				send["next"] = wait
				steps = append(steps, map[string]any{"id": wait, "type": "wait",
					"seconds": int((stepDelays[i+1] - stepDelays[i]).Seconds()), "next": journeySends[i+1]})
			}
		}
		var j struct {
			ID string `json:"id"`
		}
		body := map[string]any{"name": "Three sends", "status": "active", "entry": map[string]any{"type": "subscribed"}, "steps": steps}
		if code := call(c.t, "POST", c.apis[0]+"/api/v1/journeys", w.APIKey, body, &j); code != 201 {
			c.t.Fatalf("creating the journey: %d", code)
		}
		return j.ID
	},
	steps: func(ctx context.Context, db *pgx.Conn, id string) ([]stepDone, int, error) {
		// A person has one enrolment: trigger subscribed enters once per
		// browser. The wait before a send step is due from the move that
		// ran the send before it (whose history rows carry its time).
		rows, err := db.Query(ctx, `SELECT e.id, e.subscriber_id, h.step_id, h.outcome, coalesce(h.notification_id, ''),
			h.at, e.entered_at, coalesce(n.created_at, h.at)
			FROM journey_history h JOIN enrollments e ON e.id = h.enrollment_id
			LEFT JOIN notifications n ON n.id = h.notification_id
			WHERE h.journey_id = $1 AND h.type = 'send' ORDER BY e.id, h.seq`, id)
		if err != nil {
			return nil, 0, err
		}
		type row struct {
			stepDone
			enrollment string
			at         time.Time
			entered    time.Time
		}
		list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
			var x row
			var step string
			err := r.Scan(&x.enrollment, &x.Person, &step, &x.Outcome, &x.Notification, &x.at, &x.entered, &x.Created)
			x.Step = slices.Index(journeySends, step)
			if x.Step < 0 {
				x.Step = len(journeySends) // not a step of threeSends: the check refuses it
			}
			// The history says "sent <notification id>": the ledger's sent.
			if x.Notification != "" && x.Outcome == "sent "+x.Notification {
				x.Outcome = "sent"
			}
			return x, err
		})
		if err != nil {
			return nil, 0, err
		}
		done := make([]stepDone, len(list))
		for i, x := range list {
			done[i] = x.stepDone
			switch {
			case x.Step == 0:
				done[i].Due = x.entered
			case i > 0 && list[i-1].enrollment == x.enrollment && list[i-1].Step == x.Step-1:
				done[i].Due = list[i-1].at.Add(stepDelays[x.Step] - stepDelays[x.Step-1])
			default:
				// No send before it: the check finds the step missing.
				done[i].Due = x.entered.Add(stepDelays[min(x.Step, len(stepDelays)-1)])
			}
		}
		_, pending, err := journeyProgress(ctx, db, id)
		return done, pending, err
	},
	progress: journeyProgress,
}

// journeyProgress counts a journey's send steps done (history rows) and
// its enrolments' waiting timers.
func journeyProgress(ctx context.Context, db *pgx.Conn, id string) (done, pending int, err error) {
	err = db.QueryRow(ctx, `SELECT (SELECT count(*) FROM journey_history WHERE journey_id = $1 AND type = 'send'),
		(SELECT count(*) FROM timers WHERE kind = 'journey' AND run_id IN (SELECT id FROM enrollments WHERE journey_id = $1))`,
		id).Scan(&done, &pending)
	return done, pending, err
}

// engineKills is how many times the test kills engine nodes: each
// fan-out node alone, then both at once, in turn.
const engineKills = 6

// outage is when no engine ran: from the kill of the last one to the
// first back up.
type outage struct{ from, to time.Time }

// TestEngineSurvivesSIGKILL runs threeMessages and threeSends for the
// same people on the local cluster (each new browser enters both) while
// both fan-out nodes (which run the engine) are killed with SIGKILL
// engineKills times and restarted. For each sequence, every person gets
// every step exactly once (one ledger row, one push at their browser),
// and no step's message is stored more than maxLate late, counted from
// its due time or, when it came due while no engine ran, from the first
// engine back; the lateness of the pushes is reported.
//
// RELAYBELL_ENGINE_PEOPLE sets the number of people (default 1,000, so
// that `make test` runs it in a few minutes; the figure is
// 10,000, about ten minutes), RELAYBELL_ENGINE_RATE how many enter a
// second (default 25: with three steps of each sequence, about 150 a
// second come due; on a shared 2-core machine the engines store them on
// time, and fan-out pushes them with a backlog of seconds, up to a minute
// at the end, which is reported; people entering much faster make every
// step's store late by the backlog too, kills or not),
// RELAYBELL_ENGINE_SEQUENCES which sequences run (default
// "automation,journey"; "journey" runs the journey alone, at half the
// load).
func TestEngineSurvivesSIGKILL(t *testing.T) {
	all := []sequence{threeMessages, threeSends}
	var seqs []sequence
	names := os.Getenv("RELAYBELL_ENGINE_SEQUENCES")
	if names == "" {
		names = "automation,journey"
	}
	for _, name := range strings.Split(names, ",") {
		i := slices.IndexFunc(all, func(s sequence) bool { return s.name == name })
		if i < 0 {
			t.Fatalf("RELAYBELL_ENGINE_SEQUENCES=%q: %q is none of automation, journey", names, name)
		}
		seqs = append(seqs, all[i])
	}
	runSequencesUnderKills(t, seqs, envInt(t, "RELAYBELL_ENGINE_PEOPLE", 1000), envInt(t, "RELAYBELL_ENGINE_RATE", 25))
}

func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive number", name, v)
	}
	return n
}

// maxLate bounds how late the engine may store a step's message after it
// came due (or after the outage it came due in): an engine killed holding
// a batch leaves it leased until automations.Config.Lease (5s) runs out,
// and the next poll (1s) takes it. The push follows through fan-out; its
// lateness is reported. The rest is margin for a loaded machine: with
// every other package's tests beside it on two cores, a run that did each
// step exactly once stored its latest step 20s late (10s was the bound).
// The bound catches an engine that stops claiming, not a slow one.
const maxLate = 30 * time.Second

// runSequencesUnderKills creates seqs on one website of a new cluster,
// subscribes people browsers at rate a second (each enters every
// sequence), kills the engines meanwhile, waits until every step of every
// sequence is done and pushed, and checks each sequence in a subtest.
func runSequencesUnderKills(t *testing.T, seqs []sequence, people, rate int) {
	// A fan-out node killed with SIGKILL keeps its Kafka partitions until
	// its session runs out, and devkafka's rebalance waits for it until
	// the rebalance timeout (a minute by default): the messages the
	// engines dispatch meanwhile wait in Kafka. Short ones, as a cluster
	// that must lose no more than a few seconds to a dead node sets them.
	c := startCluster(t, "RELAYBELL_KAFKA_SESSION_TIMEOUT=2s", "RELAYBELL_KAFKA_REBALANCE_TIMEOUT=4s")
	ctx := context.Background()
	var w website
	if code := call(t, "POST", c.apis[0]+"/admin/v1/websites", "test-admin-token", map[string]any{"name": "Engine faults", "url": "https://engine.example"}, &w); code != 201 {
		t.Fatalf("creating website: %d", code)
	}
	ids := make([]string, len(seqs))
	for i, seq := range seqs {
		ids[i] = seq.create(c, w)
	}
	db, err := pgx.Connect(ctx, c.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(ctx)
	base := c.pushes()

	// Kill the engines while people enter and their steps come due.
	stop := make(chan struct{})
	var outages []outage
	var killErr error
	var killer sync.WaitGroup
	killer.Add(1)
	go func() {
		defer killer.Done()
		// The kills spread over the time the steps come due.
		window := time.Duration(people/rate)*time.Second + stepDelays[len(stepDelays)-1]
		outages, killErr = c.killEngines(stop, max(9*time.Second, window/(engineKills+1)))
	}()
	// People enter at rate a second (new browsers: the trigger).
	start := time.Now()
	for n := 0; n < people; n += rate {
		c.subscribe(w, min(rate, people-n), 0)
		time.Sleep(time.Until(start.Add(time.Duration(n/rate+1) * time.Second)))
	}
	entered := time.Now()
	t.Logf("%d people entered in %s", people, entered.Sub(start).Round(time.Millisecond))
	lastDue := entered.Add(stepDelays[len(stepDelays)-1])
	// Kills go on until the last steps are due.
	time.AfterFunc(time.Until(lastDue), func() { close(stop) })
	killer.Wait()
	if killErr != nil {
		t.Fatal(killErr)
	}

	// Every step done, and pushed: the engine keeps up with the steps
	// coming due, the fan-out of a message per person and step may take
	// longer on a busy machine.
	perSeq := people * len(stepDelays)
	want := perSeq * len(seqs)
	drain := 3*time.Minute + time.Duration(want)*20*time.Millisecond
	deadline := time.Now().Add(drain)
	for {
		// Counts only: reading every step while they are fired would load
		// the database the engines use.
		var doneAll, pendingAll, unsent int
		for i, seq := range seqs {
			done, pending, err := seq.progress(ctx, db, ids[i])
			if err != nil {
				t.Fatal(err)
			}
			doneAll += min(done, perSeq)
			pendingAll += pending
		}
		if err := db.QueryRow(ctx, `SELECT count(*) FROM notifications WHERE website_id = $1 AND status <> 'sent'`,
			w.WebsiteID).Scan(&unsent); err != nil {
			t.Fatal(err)
		}
		if pendingAll == 0 && doneAll >= want && unsent == 0 && c.pushes()-base >= want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s after the last step was due: %d of %d steps done, %d waiting, %d sends not sent, %d pushes",
				drain, doneAll, want, pendingAll, unsent, c.pushes()-base)
		}
		time.Sleep(time.Second)
	}
	var all []delivery
	call(t, "GET", c.push+"/deliveries", "", nil, &all)
	for i, seq := range seqs {
		t.Run(seq.name, func(t *testing.T) {
			done, _, err := seq.steps(ctx, db, ids[i])
			if err != nil {
				t.Fatal(err)
			}
			checkEveryStepOnce(t, db, w, people, done, all, outages)
		})
	}
}

// killEngines kills the fan-out nodes with SIGKILL engineKills times (one,
// the other, both, in turn) every, restarting each at once, until stop is
// closed and the kills are done. It returns when no engine ran.
func (c *cluster) killEngines(stop <-chan struct{}, every time.Duration) ([]outage, error) {
	var outages []outage
	patterns := [][]string{{"fanout-0"}, {"fanout-1"}, {"fanout-0", "fanout-1"}}
	for i := range engineKills {
		select {
		case <-stop:
			if i >= engineKills/2 {
				return outages, nil
			}
		case <-time.After(every):
		}
		nodes := patterns[i%len(patterns)]
		at := time.Now()
		for _, n := range nodes {
			if err := c.sigkill(n); err != nil {
				return outages, err
			}
		}
		for j, n := range nodes {
			if err := c.script("node", n); err != nil {
				return outages, fmt.Errorf("restarting %s: %w", n, err)
			}
			if j == 0 && len(nodes) == 2 {
				outages = append(outages, outage{at, time.Now()})
			}
		}
		c.t.Logf("kill %d: %s killed with SIGKILL at %s, back after %s", i+1, strings.Join(nodes, " and "),
			at.Format("15:04:05.000"), time.Since(at).Round(time.Millisecond))
	}
	<-stop
	return outages, nil
}

// delivery is a push the fake push service accepted.
type delivery struct {
	BrowserID string `json:"browserId"`
	Payload   struct {
		NotificationID string `json:"notificationId"`
	} `json:"payload"`
	Time time.Time `json:"time"`
}

// checkEveryStepOnce asserts that every person got every step exactly
// once: one ledger row per (person, step), sent, and one push of its
// notification at the person's browser and nowhere else (all is every push
// the fake push service accepted). It reports the
// lateness of the steps, stored and pushed, and fails when one was stored
// more than maxLate after it came due (or after the outage it came due
// in).
func checkEveryStepOnce(t *testing.T, db *pgx.Conn, w website, people int, done []stepDone, all []delivery, outages []outage) {
	t.Helper()
	ctx := context.Background()
	browserOf := map[string]string{} // person -> fake browser id
	rows, err := db.Query(ctx, `SELECT subscriber_id, url FROM endpoints WHERE website_id = $1`, w.WebsiteID)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var person, url string
		if err := rows.Scan(&person, &url); err != nil {
			t.Fatal(err)
		}
		browserOf[person] = url[strings.LastIndex(url, "/")+1:]
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(browserOf) != people {
		t.Fatalf("%d browsers stored, want %d", len(browserOf), people)
	}

	type key struct {
		person string
		step   int
	}
	ledger := map[key]int{}
	byNotification := map[string]stepDone{}
	for _, s := range done {
		ledger[key{s.Person, s.Step}]++
		if s.Outcome != "sent" {
			t.Errorf("person %s step %d: ledger outcome %q", s.Person, s.Step, s.Outcome)
		}
		byNotification[s.Notification] = s
	}
	for person := range browserOf {
		for step := range stepDelays {
			if n := ledger[key{person, step}]; n != 1 {
				t.Fatalf("person %s step %d: %d ledger rows, want 1", person, step, n)
			}
		}
	}
	if len(ledger) != people*len(stepDelays) {
		t.Fatalf("%d (person, step) ledger keys, want %d", len(ledger), people*len(stepDelays))
	}

	pushed := map[key]int{}
	var late, created []time.Duration
	for _, d := range all {
		s, ok := byNotification[d.Payload.NotificationID]
		if !ok {
			continue // another test's, or a send not of the sequence
		}
		if browserOf[s.Person] != d.BrowserID {
			t.Fatalf("step %d of person %s was pushed to browser %s, not theirs (%s)", s.Step, s.Person, d.BrowserID, browserOf[s.Person])
		}
		pushed[key{s.Person, s.Step}]++
		due := effectiveDue(s.Due, outages)
		late = append(late, d.Time.Sub(due))
		created = append(created, s.Created.Sub(due))
	}
	missing, twice := 0, 0
	for k := range ledger {
		switch pushed[k] {
		case 0:
			missing++
		case 1:
		default:
			twice++
		}
	}
	if missing > 0 || twice > 0 {
		t.Fatalf("of %d steps, %d never pushed and %d pushed more than once", len(ledger), missing, twice)
	}
	slices.Sort(late)
	slices.Sort(created)
	q := func(d []time.Duration, p float64) time.Duration {
		return d[min(len(d)-1, int(p*float64(len(d))))].Round(time.Millisecond)
	}
	t.Logf("%d people x %d steps: each exactly once (ledger and pushes); %d engine outages", people, len(stepDelays), len(outages))
	t.Logf("lateness, stored (notification created - due): p50 %s p99 %s max %s", q(created, .5), q(created, .99), created[len(created)-1].Round(time.Millisecond))
	t.Logf("lateness, pushed (received - due): p50 %s p99 %s max %s", q(late, .5), q(late, .99), late[len(late)-1].Round(time.Millisecond))
	if worst := created[len(created)-1]; worst > maxLate {
		t.Fatalf("a step was stored %s after it came due (or after the engines came back), more than %s", worst.Round(time.Millisecond), maxLate)
	}
}

// effectiveDue is when a step due at due could go out: its due time, or
// the end of the outage (no engine up) it came due in.
func effectiveDue(due time.Time, outages []outage) time.Time {
	for _, o := range outages {
		if !due.Before(o.from) && due.Before(o.to) {
			return o.to
		}
	}
	return due
}
