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

// The engine's fault test (issue 32): people go through a three-step
// sequence while the nodes that run the engine (the fan-out role) die
// with SIGKILL again and again. The sequence is a value (sequence), so
// that a journey of three send steps is one more: its create and its
// steps query.

// stepDelays are when each step of the sequence comes due after the
// person entered it.
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
		var pending int
		err = db.QueryRow(ctx, `SELECT count(*) FROM timers WHERE automation_id = $1`, id).Scan(&pending)
		return done, pending, err
	},
}

// engineKills is how many times the test kills engine nodes: each
// fan-out node alone, then both at once, in turn.
const engineKills = 6

// outage is when no engine ran: from the kill of the last one to the
// first back up.
type outage struct{ from, to time.Time }

// TestEngineSurvivesSIGKILL runs threeMessages for people on
// the local cluster while both fan-out nodes (which run the engine) are
// killed with SIGKILL engineKills times and restarted. Every person gets
// every step exactly once (one ledger row, one push at their browser), and
// no step's message is stored more than maxLate late, counted from its due
// time or, when it came due while no engine ran, from the first engine
// back; the lateness of the pushes is reported.
//
// RELAYBELL_ENGINE_PEOPLE sets the number of people (default 1,000, so
// that `make test` runs it in a few minutes; the figure is
// 10,000, about ten minutes), RELAYBELL_ENGINE_RATE how many enter a
// second (default 25: three messages each, about 75 a second come due,
// what the cluster stores and pushes on a shared 2-core machine; people
// entering faster than that make every step late by the backlog, kills
// or not).
func TestEngineSurvivesSIGKILL(t *testing.T) {
	runSequenceUnderKills(t, threeMessages, envInt(t, "RELAYBELL_ENGINE_PEOPLE", 1000), envInt(t, "RELAYBELL_ENGINE_RATE", 25))
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
// lateness is reported.
const maxLate = 10 * time.Second

func runSequenceUnderKills(t *testing.T, seq sequence, people, rate int) {
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
	id := seq.create(c, w)
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
	want := people * len(stepDelays)
	drain := 3*time.Minute + time.Duration(want)*20*time.Millisecond
	deadline := time.Now().Add(drain)
	for {
		// Counts only: reading every step while they are fired would load
		// the database the engines use.
		var ledger, pending, unsent int
		if err := db.QueryRow(ctx, `SELECT (SELECT count(*) FROM ledger), (SELECT count(*) FROM timers),
			(SELECT count(*) FROM notifications WHERE website_id = $1 AND status <> 'sent')`, w.WebsiteID).Scan(&ledger, &pending, &unsent); err != nil {
			t.Fatal(err)
		}
		if pending == 0 && ledger >= want && unsent == 0 && c.pushes()-base >= want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s after the last step was due: %d of %d steps done, %d waiting, %d sends not sent, %d pushes",
				drain, ledger, want, pending, unsent, c.pushes()-base)
		}
		time.Sleep(time.Second)
	}
	done, _, err := seq.steps(ctx, db, id)
	if err != nil {
		t.Fatal(err)
	}
	checkEveryStepOnce(t, c, db, w, people, done, outages)
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
// notification at the person's browser and nowhere else. It reports the
// lateness of the steps, stored and pushed, and fails when one was stored
// more than maxLate after it came due (or after the outage it came due
// in).
func checkEveryStepOnce(t *testing.T, c *cluster, db *pgx.Conn, w website, people int, done []stepDone, outages []outage) {
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

	var all []delivery
	call(t, "GET", c.push+"/deliveries", "", nil, &all)
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
