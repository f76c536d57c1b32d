package bench

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/relaybell/relaybell/store/postgres"
	"github.com/relaybell/relaybell/store/sqlite"
	"github.com/relaybell/relaybell/store/sqlstore"
)

// The timers bench (issue 32): the automations engine with a million runs
// waiting. Each mode is measured twice in one run: the baseline, where
// only the slice of Due runs whose message comes due waits, and loaded,
// where Waiting more runs wait too (due in a year). The waiting runs are
// loaded straight into the store (a bulk insert: triggering a million runs
// through the API would take the run's hour); the due ones fire through
// the real engine, dispatch and push like any automation message. With
// Journeys, the runs are journey enrolments and their timers (kind
// journey), fired by the journeys' engine through the same claim loop.

// Defaults of TimersConfig.
const (
	DefaultTimersWaiting = 1_000_000
	DefaultTimersDue     = 10_000
	DefaultTimersSpread  = 10 * time.Second
)

// TimersConfig describes a timers run: Config's Modes, Relaybell,
// FakePush, ClusterScript, Postgres, WorkDir, Log and PushHTTP1 apply.
type TimersConfig struct {
	Config
	// Waiting is how many runs wait, due in a year, in the loaded phase
	// (default 1,000,000). They are spread over Waiting/Due automations of
	// the Due people: one run per person and automation.
	Waiting int
	// Due is how many people's message comes due in each phase (default
	// 10,000), one a Spread/Due apart.
	Due int
	// Spread is the time the due messages are spread over (default 10s).
	Spread time.Duration
	// Journeys loads journey enrolments instead of automation runs: the
	// waiting ones at a wait of a year, the due ones at a send step.
	Journeys bool
}

// TimersPhase is what one phase measured.
type TimersPhase struct {
	Waiting int // runs waiting when the phase's messages came due (their own included)
	Fired   int
	// RSSMiB is each engine process's peak resident memory during the
	// phase, IdleRSSMiB before its first message came due; AnonMiB the
	// peak of its anonymous pages alone (the heap and stacks, not the
	// files it maps, such as SQLite's pages).
	RSSMiB, IdleRSSMiB, AnonMiB map[string]float64
	// Stored is the lateness of each message's ledger row (the engine's
	// claim) after its due time; Pushed of its push at the fake push
	// service. Each is p50, p99 and max.
	Stored, Pushed [3]time.Duration
	// StoreCPU is the store's processor time per fired message, in
	// seconds: the PostgreSQL backends of the cluster's connections, or
	// the embedded process (whose store runs in it). EngineCPU is the
	// engine processes' (fan-out nodes; the embedded process again).
	StoreCPU, EngineCPU float64
	// PusherCPU is the pusher nodes' processor time per fired message
	// (cluster; 0 on the embedded default, whose pusher is the engine's
	// process).
	PusherCPU float64
	// PushedPerSec is the messages pushed a second: the phase's pushes
	// over the time from the first due time to the last push (the spread
	// included, so a phase that keeps up shows Due/Spread).
	PushedPerSec float64
}

// TimersResult is a mode's two phases.
type TimersResult struct {
	Mode             string
	Kind             string // automation or journey: what waits and fires
	Baseline, Loaded TimersPhase
	Load             time.Duration // loading the waiting runs, settling included
}

// RunTimers measures each mode.
func RunTimers(ctx context.Context, cfg TimersConfig) ([]TimersResult, error) {
	if cfg.Waiting <= 0 {
		cfg.Waiting = DefaultTimersWaiting
	}
	if cfg.Due <= 0 {
		cfg.Due = DefaultTimersDue
	}
	if cfg.Spread <= 0 {
		cfg.Spread = DefaultTimersSpread
	}
	cleanup, err := cfg.fill()
	if err != nil {
		return nil, err
	}
	defer cleanup()
	var out []TimersResult
	for _, mode := range cfg.Modes {
		r, err := runTimers(ctx, cfg, mode)
		if err != nil {
			return out, fmt.Errorf("timers, %s: %w", mode, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// timersStore is the bench's own connection to the deployment's store,
// for the bulk load and for reading the ledger.
type timersStore struct {
	db    sqlstore.DB
	time  func(time.Time) any // a time as the engine stores it
	close func()
}

func openTimersStore(ctx context.Context, mode string, d *deployment) (*timersStore, error) {
	switch mode {
	case Embedded:
		st, err := sqlite.Open(ctx, d.store, nil)
		if err != nil {
			return nil, err
		}
		return &timersStore{db: st.DB(), time: func(t time.Time) any { return t.UnixMilli() }, close: func() { st.Close() }}, nil
	default:
		// Named apart from the deployment's: the bench's own queries are
		// not the store's CPU.
		dsn, err := withApplicationName(d.store, d.appName+"_bench")
		if err != nil {
			return nil, err
		}
		st, err := postgres.Open(ctx, dsn, nil)
		if err != nil {
			return nil, err
		}
		return &timersStore{db: st.DB(), time: func(t time.Time) any { return t }, close: func() { st.Close() }}, nil
	}
}

func runTimers(ctx context.Context, cfg TimersConfig, mode string) (TimersResult, error) {
	res := TimersResult{Mode: mode}
	s, err := startStage(ctx, cfg.Config, mode, "timers-"+mode, nil, 1)
	if err != nil {
		return res, err
	}
	defer s.stop()
	logf := func(format string, args ...any) {
		fmt.Fprintf(cfg.Log, "timers %s: "+format+"\n", append([]any{mode}, args...)...)
	}

	subs, err := browsers(s.push, s.site.VAPIDPublicKey, cfg.Due)
	if err != nil {
		return res, err
	}
	if err := subscribe(ctx, s.d.apis, s.site.ProjectID, subs); err != nil {
		return res, err
	}
	logf("%d people subscribed", cfg.Due)
	src := timerSource(automationTimers{})
	if cfg.Journeys {
		src = journeyTimers{}
	}
	res.Kind = src.kind()
	// One sequence whose step comes due, and the ones that wait.
	dueID, err := src.create(s, "due", false)
	if err != nil {
		return res, err
	}
	var waitIDs []string
	for i := range max(1, cfg.Waiting/cfg.Due) {
		id, err := src.create(s, "waiting-"+strconv.Itoa(i), true)
		if err != nil {
			return res, err
		}
		waitIDs = append(waitIDs, id)
	}

	st, err := openTimersStore(ctx, mode, s.d)
	if err != nil {
		return res, err
	}
	defer st.close()
	engines, pushers := map[string]int{}, map[string]int{}
	for name, pid := range s.d.procs {
		switch {
		case mode == Embedded || strings.HasPrefix(name, "fanout"):
			engines[name] = pid
		case strings.HasPrefix(name, "pusher"):
			pushers[name] = pid
		}
	}

	if res.Baseline, err = timersPhase(ctx, cfg, s, st, src, engines, pushers, dueID, "baseline", 0); err != nil {
		return res, err
	}
	logf("baseline: %s", res.Baseline.row())

	start := time.Now()
	if err := src.loadWaiting(ctx, st, s.site.WebsiteID, waitIDs); err != nil {
		return res, fmt.Errorf("loading the waiting runs: %w", err)
	}
	if s.d.settle != nil {
		if err := s.d.settle(ctx); err != nil {
			return res, err
		}
	}
	res.Load = time.Since(start)
	logf("%d %ss loaded in %s", len(waitIDs)*cfg.Due, src.kind(), res.Load.Round(time.Millisecond))
	if res.Loaded, err = timersPhase(ctx, cfg, s, st, src, engines, pushers, dueID, "loaded", len(waitIDs)*cfg.Due); err != nil {
		return res, err
	}
	logf("loaded: %s", res.Loaded.row())
	return res, nil
}

// timerSource is what a timers run makes wait and fire: automation runs
// (automationTimers) or journey enrolments (journeyTimers).
type timerSource interface {
	kind() string
	// create makes an active sequence through the API: one whose single
	// step comes due at once, or (waiting) in a year.
	create(s *stage, name string, waiting bool) (string, error)
	// loadWaiting puts every person of the website in each of the
	// waiting sequences, straight into the store.
	loadWaiting(ctx context.Context, st *timersStore, websiteID string, ids []string) error
	// startDue puts each person in the due sequence under a run id of the
	// phase, its step due at from, from+step, ... (person i at i steps),
	// and returns each run's due time.
	startDue(ctx context.Context, st *timersStore, websiteID, id, phase string, from time.Time, step time.Duration) (map[string]time.Time, error)
	// fired counts the phase's steps done; done lists them: each run's
	// id, notification and when the engine did it (its claim).
	fired(ctx context.Context, st *timersStore, phase string) (int, error)
	done(ctx context.Context, st *timersStore, phase string) (sqlstore.Rows, error)
}

// automationTimers are automations of one message.
type automationTimers struct{}

func (automationTimers) kind() string { return "automation" }

func (automationTimers) create(s *stage, name string, waiting bool) (string, error) {
	delay := 0
	if waiting {
		delay = 31_536_000
	}
	var a struct {
		ID string `json:"id"`
	}
	err := s.api.do("POST", "/api/v1/automations", s.site.APIKey, map[string]any{"name": name, "status": "active",
		"trigger": map[string]any{"type": "event", "event": "bench." + name}, "transactional": true,
		"messages": []map[string]any{{"delaySeconds": delay, "title": name}}}, 201, &a)
	return a.ID, err
}

// loadWaiting starts a run of each automation for every person of the
// website, its one message due in a year: the runs and their timers, as
// TriggerAutomation stores them, in one statement each per automation.
func (automationTimers) loadWaiting(ctx context.Context, st *timersStore, websiteID string, automationIDs []string) error {
	now := time.Now()
	for _, id := range automationIDs {
		err := st.db.Tx(ctx, sqlstore.TxOptions{}, func(tx sqlstore.Conn) error {
			if _, err := tx.Exec(ctx, `INSERT INTO automation_runs (automation_id, subscriber_id, run_id, started_at)
				SELECT $1, id, 'wait-' || $1 || '-' || id, $3 FROM subscribers WHERE website_id = $2`,
				id, websiteID, st.time(now)); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO timers (run_id, item, kind, website_id, automation_id, subscriber_id, due_at)
				SELECT 'wait-' || $1 || '-' || id, 0, 'automation', website_id, $1, id, $3 FROM subscribers WHERE website_id = $2`,
				id, websiteID, st.time(now.Add(365*24*time.Hour)))
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// people lists the website's people.
func (st *timersStore) people(ctx context.Context, websiteID string) ([]string, error) {
	rows, err := st.db.Read().Query(ctx, `SELECT id FROM subscribers WHERE website_id = $1 ORDER BY id`, websiteID)
	return sqlstore.CollectRows(rows, err, column[string])
}

// column scans a one-column row into v.
func column[T any](v *T) []any { return []any{v} }

// startDue starts a run of the due automation for each person, its
// message due at from, from+Spread/Due, ... (person i at i steps), and
// returns each run's due time.
func (automationTimers) startDue(ctx context.Context, st *timersStore, websiteID, automationID, phase string, from time.Time, step time.Duration) (map[string]time.Time, error) {
	people, err := st.people(ctx, websiteID)
	if err != nil {
		return nil, err
	}
	due := map[string]time.Time{}
	for i, p := range people {
		due[phase+"-"+p] = from.Add(time.Duration(i) * step).Truncate(time.Millisecond) // as SQLite keeps it
	}
	// A restart of each person's earlier run, as TriggerAutomation does
	// it, a few hundred people a statement: one statement a row took the
	// cluster longer than the spread, so the whole slice came due at its
	// commit.
	err = st.db.Tx(ctx, sqlstore.TxOptions{}, func(tx sqlstore.Conn) error {
		for chunk := range slices.Chunk(people, dueChunk) {
			args := []any{automationID}
			for _, p := range chunk {
				args = append(args, p)
			}
			if _, err := tx.Exec(ctx, `DELETE FROM automation_runs WHERE automation_id = $1 AND subscriber_id IN (`+
				placeholders(2, len(chunk))+`)`, args...); err != nil {
				return err
			}
			runs, timers := []any{}, []any{}
			for _, p := range chunk {
				run := phase + "-" + p
				at := st.time(due[run])
				runs = append(runs, automationID, p, run, at)
				timers = append(timers, run, websiteID, automationID, p, at)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO automation_runs (automation_id, subscriber_id, run_id, started_at)
				VALUES `+rowsOf(len(chunk), 4), runs...); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `INSERT INTO timers (run_id, item, kind, website_id, automation_id, subscriber_id, due_at)
				VALUES `+rowsOf(len(chunk), 5, 1, "0", 1, "'automation'"), timers...); err != nil {
				return err
			}
		}
		return nil
	})
	return due, err
}

// dueChunk is how many due runs one statement of startDue stores.
const dueChunk = 500

// placeholders is n placeholders from $first, comma-separated.
func placeholders(first, n int) string {
	ps := make([]string, n)
	for i := range ps {
		ps[i] = "$" + strconv.Itoa(first+i)
	}
	return strings.Join(ps, ", ")
}

// rowsOf is the VALUES rows of a multi-row INSERT: rows rows of cols
// placeholders each, numbered from $1, with consts (SQL literals) put in
// at their positions of each row: rowsOf(2, 2, 1, "0") is
// ($1, 0, $2), ($3, 0, $4).
func rowsOf(rows, cols int, consts ...any) string {
	var b strings.Builder
	n := 1
	for r := range rows {
		if r > 0 {
			b.WriteString(", ")
		}
		var vals []string
		for c := range cols {
			for i := 0; i+1 < len(consts); i += 2 {
				if consts[i].(int) == c {
					vals = append(vals, consts[i+1].(string))
				}
			}
			vals = append(vals, "$"+strconv.Itoa(n))
			n++
		}
		b.WriteString("(" + strings.Join(vals, ", ") + ")")
	}
	return b.String()
}

func (automationTimers) fired(ctx context.Context, st *timersStore, phase string) (int, error) {
	var n int
	err := st.db.Read().QueryRow(ctx, `SELECT count(*) FROM ledger WHERE run_id LIKE $1`, phase+"-%").Scan(&n)
	return n, err
}

func (automationTimers) done(ctx context.Context, st *timersStore, phase string) (sqlstore.Rows, error) {
	return st.db.Read().Query(ctx, `SELECT run_id, coalesce(notification_id, ''), at FROM ledger WHERE run_id LIKE $1`, phase+"-%")
}

// journeyTimers are journeys entered by the API: the due one a single
// send step, a waiting one a wait of a year before it.
type journeyTimers struct{}

func (journeyTimers) kind() string { return "journey" }

func (journeyTimers) create(s *stage, name string, waiting bool) (string, error) {
	steps := []map[string]any{{"id": "send", "type": "send", "content": map[string]any{"title": name}, "transactional": true}}
	if waiting {
		steps = append([]map[string]any{{"id": "wait", "type": "wait", "seconds": 31_536_000, "next": "send"}}, steps...)
	}
	var j struct {
		ID string `json:"id"`
	}
	err := s.api.do("POST", "/api/v1/journeys", s.site.APIKey, map[string]any{"name": name, "status": "active",
		"entry": map[string]any{"type": "api"}, "steps": steps}, 201, &j)
	return j.ID, err
}

// loadWaiting enrols every person of the website in each journey, waiting
// at its wait (tick 0, the timer due in a year), as a move into the wait
// leaves them: the enrolments and their timers, one statement each per
// journey.
func (journeyTimers) loadWaiting(ctx context.Context, st *timersStore, websiteID string, journeyIDs []string) error {
	now := time.Now()
	for _, id := range journeyIDs {
		err := st.db.Tx(ctx, sqlstore.TxOptions{}, func(tx sqlstore.Conn) error {
			if _, err := tx.Exec(ctx, `INSERT INTO enrollments (id, website_id, journey_id, subscriber_id, version, state,
				current_step, waiting, entered_at, updated_at)
				SELECT 'wait-' || $1 || '-' || id, website_id, $1, id, 1, 'active', 'wait', TRUE, $3, $3
				FROM subscribers WHERE website_id = $2`, id, websiteID, st.time(now)); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO timers (run_id, item, kind, website_id, subscriber_id, due_at)
				SELECT 'wait-' || $1 || '-' || id, 0, 'journey', website_id, id, $3 FROM subscribers WHERE website_id = $2`,
				id, websiteID, st.time(now.Add(365*24*time.Hour)))
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// startDue enrols each person in the due journey, at its send step with
// its timer due at from, from+step, ..., as Enroll stores them.
func (journeyTimers) startDue(ctx context.Context, st *timersStore, websiteID, journeyID, phase string, from time.Time, step time.Duration) (map[string]time.Time, error) {
	people, err := st.people(ctx, websiteID)
	if err != nil {
		return nil, err
	}
	due := map[string]time.Time{}
	for i, p := range people {
		due[phase+"-"+p] = from.Add(time.Duration(i) * step).Truncate(time.Millisecond) // as SQLite keeps it
	}
	err = st.db.Tx(ctx, sqlstore.TxOptions{}, func(tx sqlstore.Conn) error {
		for chunk := range slices.Chunk(people, dueChunk) {
			enrolments, timers := []any{}, []any{}
			for _, p := range chunk {
				id := phase + "-" + p
				at := st.time(due[id])
				enrolments = append(enrolments, id, websiteID, journeyID, p, at, at)
				timers = append(timers, id, websiteID, p, at)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO enrollments (id, website_id, journey_id, subscriber_id, version, state,
				current_step, entered_at, updated_at) VALUES `+rowsOf(len(chunk), 6, 4, "1", 4, "'active'", 4, "'send'"),
				enrolments...); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `INSERT INTO timers (run_id, item, kind, website_id, subscriber_id, due_at)
				VALUES `+rowsOf(len(chunk), 4, 1, "0", 1, "'journey'"), timers...); err != nil {
				return err
			}
		}
		return nil
	})
	return due, err
}

func (journeyTimers) fired(ctx context.Context, st *timersStore, phase string) (int, error) {
	var n int
	err := st.db.Read().QueryRow(ctx, `SELECT count(*) FROM journey_history WHERE enrollment_id LIKE $1 AND type = 'send'`,
		phase+"-%").Scan(&n)
	return n, err
}

func (journeyTimers) done(ctx context.Context, st *timersStore, phase string) (sqlstore.Rows, error) {
	return st.db.Read().Query(ctx, `SELECT enrollment_id, coalesce(notification_id, ''), at FROM journey_history
		WHERE enrollment_id LIKE $1 AND type = 'send'`, phase+"-%")
}

// timersPhase lets a slice of Due messages come due and measures how the
// engine fires them.
func timersPhase(ctx context.Context, cfg TimersConfig, s *stage, st *timersStore, src timerSource, engines, pushers map[string]int, dueID, phase string, waiting int) (TimersPhase, error) {
	p := TimersPhase{Waiting: waiting + cfg.Due}
	if err := quiet(ctx, cfg.Log); err != nil {
		return p, err
	}
	idle := sampleMemory(engines)
	time.Sleep(time.Second)
	p.IdleRSSMiB, _ = idle()

	step := cfg.Spread / time.Duration(cfg.Due)
	from := time.Now().Add(3 * time.Second)
	started := time.Now()
	due, err := src.startDue(ctx, st, s.site.WebsiteID, dueID, phase, from, step)
	if err != nil {
		return p, fmt.Errorf("starting the due runs: %w", err)
	}
	// A timer committed after its due time is late from its commit: the
	// engine could not see it before.
	committed := time.Now()
	early := 0
	for run, at := range due {
		if at.Before(committed) {
			due[run] = committed
			early++
		}
	}
	if cfg.Log != nil {
		fmt.Fprintf(cfg.Log, "timers: %s: the due slice stored in %s; %d of %d due before its commit\n",
			phase, committed.Sub(started).Round(time.Millisecond), early, len(due))
	}
	mem := sampleMemory(engines)
	cpu := startCPU(engines, pushers)
	storeCPU := s.d.startStoreCPU(ctx)
	pushes0, err := count(s.push)
	if err != nil {
		return p, err
	}
	// Every message fired (a ledger row) and pushed.
	deadline := from.Add(cfg.Spread + 5*time.Minute)
	for {
		fired, err := src.fired(ctx, st, phase)
		if err != nil {
			return p, err
		}
		pushed, err := count(s.push)
		if err != nil {
			return p, err
		}
		if fired >= cfg.Due && pushed-pushes0 >= cfg.Due {
			p.Fired = fired
			break
		}
		if time.Now().After(deadline) {
			return p, fmt.Errorf("%s: %d of %d messages fired, %d pushed, 5 minutes after the last was due", phase, fired, cfg.Due, pushed-pushes0)
		}
		time.Sleep(250 * time.Millisecond)
	}
	used, _ := cpu()
	p.RSSMiB, p.AnonMiB = mem()
	// Only the processes named: used["postgres"] is every PostgreSQL
	// process of the machine (other work's too), which the engine's figure
	// took in until this was found; the store's is the cluster's own
	// backends, below.
	for name, sec := range used {
		if _, ok := engines[name]; ok {
			p.EngineCPU += sec
		}
		if _, ok := pushers[name]; ok {
			p.PusherCPU += sec
		}
	}
	p.EngineCPU /= float64(p.Fired)
	p.PusherCPU /= float64(p.Fired)
	if storeCPU == nil { // SQLite runs in the embedded process
		p.StoreCPU = p.EngineCPU
	} else {
		p.StoreCPU = storeCPU() / float64(p.Fired)
	}

	// Lateness: of the ledger row (the engine's claim) and of the push.
	rows, err := src.done(ctx, st, phase)
	if err != nil {
		return p, err
	}
	byNotification := map[string]time.Time{}
	var stored []time.Duration
	for rows.Next() {
		var run, n string
		var at time.Time
		if err := rows.Scan(&run, &n, scannedTime{&at}); err != nil {
			rows.Close()
			return p, err
		}
		stored = append(stored, at.Sub(due[run]))
		byNotification[n] = due[run]
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return p, err
	}
	var deliveries []struct {
		Payload struct {
			NotificationID string `json:"notificationId"`
		} `json:"payload"`
		Time time.Time `json:"time"`
	}
	if err := s.push.do("GET", "/deliveries", "", nil, 200, &deliveries); err != nil {
		return p, err
	}
	var pushed []time.Duration
	var last time.Time
	for _, d := range deliveries {
		if at, ok := byNotification[d.Payload.NotificationID]; ok {
			pushed = append(pushed, d.Time.Sub(at))
			if d.Time.After(last) {
				last = d.Time
			}
		}
	}
	if span := last.Sub(from); span > 0 {
		p.PushedPerSec = float64(len(pushed)) / span.Seconds()
	}
	if len(pushed) != cfg.Due {
		return p, fmt.Errorf("%s: %d pushes of the %d messages", phase, len(pushed), cfg.Due)
	}
	p.Stored, p.Pushed = quantiles(stored), quantiles(pushed)
	return p, nil
}

// usedSince is the processor time used from before to after; a process
// started since counts whole.
func usedSince(before, after map[int]float64) float64 {
	total := 0.0
	for pid, sec := range after {
		total += sec - before[pid]
	}
	return total
}

// quantiles are d's p50, p99 and max (d is sorted in place). percentile
// takes percents: given 0.50 and 0.99, as it was until this was found, it
// returned the p0.5 and the p0.99, close to the minimum, which made the
// whole spread of lateness look like a tail of under 1% behind a p99 of
// tens of milliseconds.
func quantiles(d []time.Duration) [3]time.Duration {
	if len(d) == 0 {
		return [3]time.Duration{}
	}
	slices.Sort(d)
	return [3]time.Duration{percentile(d, 50), percentile(d, 99), d[len(d)-1]}
}

func (p TimersPhase) row() string {
	q := func(d [3]time.Duration) string {
		return fmt.Sprintf("%s/%s/%s", d[0].Round(time.Millisecond), d[1].Round(time.Millisecond), d[2].Round(time.Millisecond))
	}
	var mem []string
	for _, name := range slices.Sorted(maps.Keys(p.RSSMiB)) {
		mem = append(mem, fmt.Sprintf("%s %.0f (anon %.0f, idle %.0f)", name, p.RSSMiB[name], p.AnonMiB[name], p.IdleRSSMiB[name]))
	}
	return fmt.Sprintf("%9d %7d  %-24s %-24s %9.0fµs %9.0fµs %9.0fµs %8.0f  %s", p.Waiting, p.Fired, q(p.Stored), q(p.Pushed),
		p.StoreCPU*1e6, p.EngineCPU*1e6, p.PusherCPU*1e6, p.PushedPerSec, strings.Join(mem, ", "))
}

// TimersReport is the table of a timers run.
func TimersReport(results []TimersResult) string {
	var b strings.Builder
	for _, r := range results {
		if r.Kind == "journey" {
			b.WriteString("journeys: the waiting and due runs are journey enrolments, fired by the journeys' engine\n")
			break
		}
	}
	fmt.Fprintf(&b, "%-9s %-8s %9s %7s  %-24s %-24s %11s %11s %11s %8s  %s\n", "mode", "phase", "waiting", "fired",
		"ledger late p50/p99/max", "pushed late p50/p99/max", "store CPU", "engine CPU", "pusher CPU", "pushed/s", "engine peak RSS MiB")
	for _, r := range results {
		fmt.Fprintf(&b, "%-9s %-8s %s\n", r.Mode, "baseline", r.Baseline.row())
		fmt.Fprintf(&b, "%-9s %-8s %s\n", r.Mode, "loaded", r.Loaded.row())
	}
	b.WriteString("CPU is per fired message: store = PostgreSQL backends of the cluster's connections, or the embedded process;\n" +
		"engine = the fan-out nodes, or the embedded process; pusher = the pusher nodes (cluster). Lateness is after each message's due time;\n" +
		"pushed/s is the messages pushed over the time from the first due to the last push.\n" +
		"Memory: peak resident (anon: its anonymous pages alone, without mapped files; idle: before the phase).\n")
	return b.String()
}

// scannedTime is a time column as either engine returns it: unix
// milliseconds (SQLite) or a time (PostgreSQL).
type scannedTime struct{ t *time.Time }

func (s scannedTime) Scan(v any) error {
	switch v := v.(type) {
	case int64:
		*s.t = time.UnixMilli(v)
	case time.Time:
		*s.t = v
	default:
		return fmt.Errorf("a time stored as %T", v)
	}
	return nil
}
