package deploy

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// The recurring schedules' fault test (issue 35): a schedule that sends
// every minute runs on the local cluster while the nodes that run the
// schedules' engine (the fan-out role) die with SIGKILL during an
// occurrence: after claiming it and before its transaction (failpoint
// kill-in-schedule-occurrence), after committing its send and before its
// intent is produced (kill-after-schedule-send), and at moments no one
// picks (both nodes killed and restarted while occurrences come due).
// Every occurrence is sent exactly once: one ledger row, one
// notification, one push at each browser.

// scheduleBrowsers is how many browsers each occurrence goes to.
const scheduleBrowsers = 20

// everyMinute is a rule of an occurrence a minute.
func everyMinute() string {
	hours, minutes := make([]string, 24), make([]string, 60)
	for i := range hours {
		hours[i] = strconv.Itoa(i)
	}
	for i := range minutes {
		minutes[i] = strconv.Itoa(i)
	}
	return "FREQ=DAILY;BYHOUR=" + strings.Join(hours, ",") + ";BYMINUTE=" + strings.Join(minutes, ",")
}

// waitDead waits until the node's process is gone (a failpoint killed
// it), at most within.
func (c *cluster) waitDead(name string, within time.Duration) {
	c.t.Helper()
	b, err := os.ReadFile(filepath.Join(c.dir, "pids", name+".pid"))
	if err != nil {
		c.t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	deadline := time.Now().Add(within)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			c.t.Fatalf("%s (pid %d) still runs after %s: its failpoint did not fire", name, pid, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startArmed starts node name with failpoint armed. The node can die of it
// before it answers /readyz (what it dies in may be due at its start: a
// schedule's occurrence every minute), and cluster.sh then fails; that is
// taken for a start when the node's log has the failpoint armed and the
// node is gone. The caller waits for its death (waitDead) either way.
func (c *cluster) startArmed(failpoint, name string) {
	c.t.Helper()
	err := c.scriptEnv([]string{"RELAYBELL_FAILPOINT=" + failpoint}, "node", name)
	if err == nil {
		return
	}
	log, _ := os.ReadFile(filepath.Join(c.dir, "logs", name+".log"))
	pid, _ := os.ReadFile(filepath.Join(c.dir, "pids", name+".pid"))
	n, _ := strconv.Atoi(strings.TrimSpace(string(pid)))
	if n > 0 && syscall.Kill(n, 0) != nil && bytes.Contains(log, []byte("failpoint armed")) &&
		bytes.Contains(log, []byte("failpoint="+failpoint)) {
		c.t.Logf("%s died of %s before it answered /readyz", name, failpoint)
		return
	}
	c.t.Fatal(err)
}

// scheduleRun is a ledger row of the schedule.
type scheduleRun struct {
	occurrence   time.Time
	outcome      string
	notification string
}

func scheduleRuns(t *testing.T, db *pgx.Conn, id string) []scheduleRun {
	t.Helper()
	rows, err := db.Query(context.Background(), `SELECT occurrence, outcome, coalesce(notification_id, '')
		FROM schedule_runs WHERE schedule_id = $1 ORDER BY occurrence`, id)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (scheduleRun, error) {
		var s scheduleRun
		return s, r.Scan(&s.occurrence, &s.outcome, &s.notification)
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// waitRuns waits until the schedule's ledger holds n rows.
func waitRuns(t *testing.T, db *pgx.Conn, id string, n int, within time.Duration) []scheduleRun {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		runs := scheduleRuns(t, db, id)
		if len(runs) >= n {
			return runs
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d occurrences done after %s, want %d", len(runs), within, n)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestScheduleSurvivesSIGKILL(t *testing.T) {
	c := startCluster(t, "RELAYBELL_KAFKA_SESSION_TIMEOUT=2s", "RELAYBELL_KAFKA_REBALANCE_TIMEOUT=4s")
	ctx := context.Background()
	var w website
	if code := call(t, "POST", c.apis[0]+"/admin/v1/websites", "test-admin-token", map[string]any{"name": "Schedule faults", "url": "https://schedules.example"}, &w); code != 201 {
		t.Fatalf("creating website: %d", code)
	}
	c.subscribe(w, scheduleBrowsers, 0)
	db, err := pgx.Connect(ctx, c.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(ctx)

	// The engines stop: no occurrence is done until the failpoint's node
	// claims one.
	c.kill9("fanout-0")
	c.kill9("fanout-1")
	var sc struct {
		ID      string `json:"id"`
		NextRun string `json:"nextRun"`
	}
	if code := call(t, "POST", c.apis[0]+"/api/v1/schedules", w.APIKey, map[string]any{"name": "Every minute",
		"audience": map[string]any{"everyone": true}, "content": map[string]any{"title": "Minute digest"}, "rule": everyMinute()}, &sc); code != 201 {
		t.Fatalf("creating the schedule: %d", code)
	}
	start := time.Now()
	t.Logf("schedule %s, first run %s", sc.ID, sc.NextRun)

	// 1. The node dies after claiming the occurrence, before storing its
	// send: the lease runs out and another node does it, once.
	c.startArmed("kill-in-schedule-occurrence", "fanout-0")
	c.waitDead("fanout-0", 90*time.Second)
	if runs := scheduleRuns(t, db, sc.ID); len(runs) != 0 {
		t.Fatalf("the killed node stored %v", runs)
	}
	t.Logf("fanout-0 died in an occurrence at %s", time.Now().Format("15:04:05.000"))
	if err := c.script("node", "fanout-1"); err != nil {
		t.Fatal(err)
	}
	runs := waitRuns(t, db, sc.ID, 1, 30*time.Second)
	c.kill9("fanout-1")

	// 2. The node dies after committing an occurrence's send, before its
	// intent is produced: the outbox sweep of the next node publishes it.
	done := len(scheduleRuns(t, db, sc.ID))
	c.startArmed("kill-after-schedule-send", "fanout-1")
	c.waitDead("fanout-1", 90*time.Second)
	if runs := scheduleRuns(t, db, sc.ID); len(runs) <= done {
		t.Fatalf("the killed node committed nothing: %v", runs)
	}
	t.Logf("fanout-1 died after an occurrence's commit at %s", time.Now().Format("15:04:05.000"))
	for _, n := range []string{"fanout-0", "fanout-1"} {
		if err := c.script("node", n); err != nil {
			t.Fatal(err)
		}
	}

	// 3. Both nodes killed at moments no one picks, while occurrences come
	// due, and restarted.
	for i, nodes := range [][]string{{"fanout-0"}, {"fanout-1"}, {"fanout-0", "fanout-1"}} {
		time.Sleep(time.Duration(17+i*13) * time.Second)
		for _, n := range nodes {
			c.kill9(n)
		}
		for _, n := range nodes {
			if err := c.script("node", n); err != nil {
				t.Fatal(err)
			}
		}
		t.Logf("kill %d: %s at %s", i+1, strings.Join(nodes, " and "), time.Now().Format("15:04:05.000"))
	}

	// Stop the schedule once the minute after the last kill is done.
	last := time.Now().Truncate(time.Minute).Add(time.Minute)
	for time.Now().Before(last.Add(15 * time.Second)) {
		time.Sleep(time.Second)
	}
	if code := call(t, "PUT", c.apis[1]+"/api/v1/schedules/"+sc.ID, w.APIKey, map[string]any{"status": "paused"}, nil); code != 200 {
		t.Fatalf("pausing: %d", code)
	}
	runs = scheduleRuns(t, db, sc.ID)

	// Every minute from the first run to the last is in the ledger once,
	// sent (the outages were far shorter than catchUpMinutes).
	first, err := time.Parse(time.RFC3339, sc.NextRun)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) < 4 {
		t.Fatalf("only %d occurrences in %s", len(runs), time.Since(start))
	}
	for i, r := range runs {
		if want := first.Add(time.Duration(i) * time.Minute); !r.occurrence.Equal(want) || r.outcome != "sent" || r.notification == "" {
			t.Fatalf("occurrence %d: %+v, want %s sent", i, r, want)
		}
	}
	var notifications int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM notifications WHERE schedule_id = $1`, sc.ID).Scan(&notifications); err != nil {
		t.Fatal(err)
	}
	if notifications != len(runs) {
		t.Fatalf("%d notifications for %d occurrences", notifications, len(runs))
	}
	// Each occurrence's send reaches every browser once.
	for _, r := range runs {
		d := c.waitSent(c.apis[0], w, r.notification, 3*time.Minute)
		s := c.stats(r.notification)
		if d.Notification.Sent != scheduleBrowsers || s.Browsers != scheduleBrowsers || s.Duplicates != 0 {
			t.Fatalf("occurrence %s: sent %d, %d browsers got it, %d more than once", r.occurrence.Format(time.RFC3339), d.Notification.Sent, s.Browsers, s.Duplicates)
		}
	}
	t.Logf("%d occurrences from %s to %s, each sent once to %d browsers", len(runs), runs[0].occurrence.Format("15:04"),
		runs[len(runs)-1].occurrence.Format("15:04"), scheduleBrowsers)
	_ = fmt.Sprint
}
