package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"time"

	"github.com/relaybell/relaybell/store"
)

// automationCols are an automation's columns with its stats: the runs'
// counts (the sums of its automation_counts shards), its pending timers
// and its notifications' counters.
const automationCols = `a.id, a.website_id, a.name, a.status, a.trigger_type, a.definition, a.created_at, a.updated_at,
	(SELECT coalesce(sum(c.triggered), 0) FROM automation_counts c WHERE c.automation_id = a.id),
	(SELECT coalesce(sum(c.stopped), 0) FROM automation_counts c WHERE c.automation_id = a.id),
	(SELECT count(*) FROM timers t WHERE t.automation_id = a.id),
	coalesce(n.sent, 0), coalesce(n.delivered, 0), coalesce(n.clicked, 0), coalesce(n.conversions, 0), coalesce(n.revenue, 0)`

// automationFrom joins each automation with the sums of its notifications.
const automationFrom = `automations a
	LEFT JOIN (SELECT automation_id, sum(sent) AS sent, sum(delivered) AS delivered, sum(clicked) AS clicked,
		sum(conversions) AS conversions, sum(revenue) AS revenue
		FROM notifications WHERE automation_id IS NOT NULL AND website_id = $1 GROUP BY automation_id) n
	ON n.automation_id = a.id`

func automationDest(a *store.Automation) []any {
	return []any{&a.ID, &a.WebsiteID, &a.Name, &a.Status, &a.TriggerType, rawJSONDest{&a.Definition},
		timeDest{&a.CreatedAt}, timeDest{&a.UpdatedAt}, &a.Stats.Triggered, &a.Stats.Stopped, &a.Stats.Pending,
		&a.Stats.Sent, &a.Stats.Delivered, &a.Stats.Clicked, &a.Stats.Converted, &a.Stats.Revenue}
}

// ListAutomations lists the website's automations, newest first.
func (s *Store) ListAutomations(ctx context.Context, websiteID string) ([]store.Automation, error) {
	rows, err := s.db.Read().Query(ctx, `SELECT `+automationCols+` FROM `+automationFrom+`
		WHERE a.website_id = $1 ORDER BY a.created_at DESC, a.id DESC`, websiteID)
	out, err := CollectRows(rows, err, automationDest)
	if err != nil {
		return nil, fmt.Errorf("listing automations: %w", err)
	}
	return out, nil
}

// Automation finds one of the website's automations.
func (s *Store) Automation(ctx context.Context, websiteID, id string) (store.Automation, error) {
	var a store.Automation
	err := s.db.Read().QueryRow(ctx, `SELECT `+automationCols+` FROM `+automationFrom+`
		WHERE a.website_id = $1 AND a.id = $2`, websiteID, id).Scan(automationDest(&a)...)
	if err != nil {
		return store.Automation{}, fmt.Errorf("loading automation: %w", s.mapErr(err))
	}
	return a, nil
}

// CreateAutomation stores a new automation.
func (s *Store) CreateAutomation(ctx context.Context, a store.Automation) error {
	_, err := s.db.Write().Exec(ctx, `INSERT INTO automations (id, website_id, name, status, trigger_type, definition,
		created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		a.ID, a.WebsiteID, a.Name, a.Status, a.TriggerType, string(a.Definition), s.now(a.CreatedAt), s.now(a.UpdatedAt))
	if err != nil {
		return fmt.Errorf("creating automation: %w", s.mapErr(err))
	}
	return nil
}

// UpdateAutomation replaces an automation's settings.
func (s *Store) UpdateAutomation(ctx context.Context, a store.Automation) error {
	err := affected(s.db.Write().Exec(ctx, `UPDATE automations SET name = $3, status = $4, trigger_type = $5,
		definition = $6, updated_at = $7 WHERE website_id = $1 AND id = $2`,
		a.WebsiteID, a.ID, a.Name, a.Status, a.TriggerType, string(a.Definition), s.now(a.UpdatedAt)))
	if err != nil {
		return fmt.Errorf("updating automation: %w", s.mapErr(err))
	}
	return nil
}

// DeleteAutomation removes an automation; its runs, timers and ledger go
// with it (ON DELETE CASCADE).
func (s *Store) DeleteAutomation(ctx context.Context, websiteID, id string) error {
	if err := affected(s.db.Write().Exec(ctx, `DELETE FROM automations WHERE website_id = $1 AND id = $2`, websiteID, id)); err != nil {
		return fmt.Errorf("deleting automation: %w", s.mapErr(err))
	}
	return nil
}

// ActiveAutomations lists the website's active automations of the trigger
// types, oldest first.
func (s *Store) ActiveAutomations(ctx context.Context, websiteID string, triggerTypes ...string) ([]store.Automation, error) {
	query := `SELECT id, website_id, name, status, trigger_type, definition, created_at, updated_at
		FROM automations WHERE website_id = $1 AND status = 'active'`
	args := []any{websiteID}
	if len(triggerTypes) > 0 {
		query += ` AND ` + s.d.In("trigger_type", "$2")
		args = append(args, s.d.List(triggerTypes))
	}
	rows, err := s.db.Read().Query(ctx, query+` ORDER BY created_at, id`, args...)
	out, err := CollectRows(rows, err, func(a *store.Automation) []any {
		return []any{&a.ID, &a.WebsiteID, &a.Name, &a.Status, &a.TriggerType, rawJSONDest{&a.Definition},
			timeDest{&a.CreatedAt}, timeDest{&a.UpdatedAt}}
	})
	if err != nil {
		return nil, fmt.Errorf("listing active automations: %w", err)
	}
	return out, nil
}

// TriggerAutomation starts a person's run. The person's run row is locked
// first (inserted when missing: a concurrent insert of the same row is a
// unique violation, and the transaction runs again to find and lock it),
// so two triggers for one person never both find no pending run.
func (s *Store) TriggerAutomation(ctx context.Context, tr store.AutomationTrigger) (bool, error) {
	var started bool
	err := s.db.Tx(ctx, TxOptions{RetryUnique: true}, func(tx Conn) error {
		started = false
		var ok bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM automations a JOIN subscribers p ON p.website_id = a.website_id
			WHERE a.id = $1 AND a.website_id = $2 AND p.id = $3)`, tr.AutomationID, tr.WebsiteID, tr.SubscriberID).Scan(&ok); err != nil {
			return err
		}
		if !ok {
			return store.ErrNotFound
		}
		var run string
		err := tx.QueryRow(ctx, `SELECT run_id FROM automation_runs WHERE automation_id = $1 AND subscriber_id = $2 `+s.d.ForUpdate(),
			tr.AutomationID, tr.SubscriberID).Scan(&run)
		switch err = s.mapErr(err); {
		case errors.Is(err, store.ErrNotFound):
			if _, err := tx.Exec(ctx, `INSERT INTO automation_runs (automation_id, subscriber_id, run_id, started_at)
				VALUES ($1, $2, $3, $4)`, tr.AutomationID, tr.SubscriberID, tr.RunID, s.time(tr.At)); err != nil {
				return err
			}
		case err != nil:
			return err
		case run == tr.RunID: // a redo: this run started already
			return nil
		default:
			var pending bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM timers WHERE run_id = $1)`, run).Scan(&pending); err != nil {
				return err
			}
			if pending && !tr.Restart {
				return nil
			}
			if _, err := tx.Exec(ctx, `DELETE FROM timers WHERE run_id = $1`, run); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `UPDATE automation_runs SET run_id = $3, started_at = $4
				WHERE automation_id = $1 AND subscriber_id = $2`, tr.AutomationID, tr.SubscriberID, tr.RunID, s.time(tr.At)); err != nil {
				return err
			}
		}
		for i, d := range tr.Delays {
			if _, err := tx.Exec(ctx, `INSERT INTO timers (run_id, item, kind, website_id, automation_id, subscriber_id, due_at)
				VALUES ($1, $2, $3, $4, $5, $6, $7)`, tr.RunID, i, store.TimerAutomation, tr.WebsiteID, tr.AutomationID,
				tr.SubscriberID, s.time(tr.At.Add(d))); err != nil {
				return err
			}
		}
		if err := s.countRuns(ctx, tx, tr.AutomationID, tr.SubscriberID, "triggered"); err != nil {
			return err
		}
		started = true
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("triggering automation: %w", s.mapErr(err))
	}
	return started, nil
}

// countRuns adds one to an automation's count column (triggered or
// stopped) in the person's shard of its automation_counts rows: the
// triggers of one automation for different people mostly lock different
// rows, where they all waited for the automation's row.
func (s *Store) countRuns(ctx context.Context, tx Conn, automationID, subscriberID, column string) error {
	shard := 0
	if n := s.d.CounterShards; n > 1 {
		h := fnv.New32a()
		h.Write([]byte(subscriberID))
		shard = int(h.Sum32() % uint32(n))
	}
	_, err := tx.Exec(ctx, `INSERT INTO automation_counts (automation_id, shard, `+column+`) VALUES ($1, $2, 1)
		ON CONFLICT (automation_id, shard) DO UPDATE SET `+column+` = automation_counts.`+column+` + 1`, automationID, shard)
	return err
}

// StopAutomations cancels a person's pending timers of the automations.
// Deleting a timer waits for a FireTimer that holds it (PostgreSQL's row
// lock), so the timer is fired before or not at all.
func (s *Store) StopAutomations(ctx context.Context, websiteID, subscriberID string, automationIDs []string, at time.Time) (int, error) {
	if len(automationIDs) == 0 {
		return 0, nil
	}
	var stopped int
	err := s.db.Tx(ctx, TxOptions{}, func(tx Conn) error {
		stopped = 0
		rows, err := tx.Query(ctx, `DELETE FROM timers WHERE website_id = $1 AND subscriber_id = $2
			AND `+s.d.In("automation_id", "$3")+` RETURNING automation_id`, websiteID, subscriberID, s.d.List(automationIDs))
		ids, err := CollectRows(rows, err, func(id *string) []any { return []any{id} })
		if err != nil {
			return err
		}
		// In id order, so that two stops never wait for each other crosswise.
		slices.Sort(ids)
		for _, id := range slices.Compact(ids) {
			stopped++
			if err := s.countRuns(ctx, tx, id, subscriberID, "stopped"); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("stopping automations: %w", s.mapErr(err))
	}
	return stopped, nil
}

// ClaimTimers leases due timers, as DueWaves leases waves.
func (s *Store) ClaimTimers(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]store.Timer, error) {
	rows, err := s.db.Write().Query(ctx, `UPDATE timers SET leased_until = $2
		FROM (SELECT run_id AS due_run, item AS due_item FROM timers
			WHERE due_at <= $1 AND (leased_until IS NULL OR leased_until <= $1)
			ORDER BY due_at, run_id, item LIMIT $3 `+s.d.SkipLocked()+`) due
		WHERE run_id = due.due_run AND item = due.due_item AND (leased_until IS NULL OR leased_until <= $1)
		RETURNING run_id, item, kind, website_id, coalesce(automation_id, ''), subscriber_id, due_at`,
		s.time(now), s.time(now.Add(lease)), limitArg(limit))
	out, err := CollectRows(rows, err, func(t *store.Timer) []any {
		return []any{&t.RunID, &t.Item, &t.Kind, &t.WebsiteID, &t.AutomationID, &t.SubscriberID, timeDest{&t.Due}}
	})
	if err != nil {
		return nil, fmt.Errorf("claiming timers: %w", err)
	}
	return out, nil
}

// NextTimerDue is the earliest due time of the timers not leased, read
// in timers_due's order past the few leased ones.
func (s *Store) NextTimerDue(ctx context.Context) (time.Time, bool, error) {
	var due time.Time
	err := s.db.Read().QueryRow(ctx, `SELECT due_at FROM timers WHERE leased_until IS NULL ORDER BY due_at LIMIT 1`).Scan(timeDest{&due})
	switch err = s.mapErr(err); {
	case errors.Is(err, store.ErrNotFound):
		return time.Time{}, false, nil
	case err != nil:
		return time.Time{}, false, fmt.Errorf("finding next timer: %w", err)
	}
	return due, true, nil
}

// FireTimer does a timer's item once. The DELETE of the timer is the
// claim that counts: of two nodes firing it (a lease ran out), the second
// waits on the first's row lock and then deletes nothing. The ledger's key
// (run, item) makes a redo of a committed item a no-op even so.
//
// A capped message first locks the person's run row (lockCappedPerson),
// so two messages of one person never count the ledger at once.
func (s *Store) FireTimer(ctx context.Context, t store.Timer, f store.Fire) (string, error) {
	var outcome string
	err := s.db.Tx(ctx, TxOptions{}, func(tx Conn) error {
		outcome = ""
		if err := s.lockCappedPerson(ctx, tx, t, f); err != nil {
			return err
		}
		n, err := tx.Exec(ctx, `DELETE FROM timers WHERE run_id = $1 AND item = $2`, t.RunID, t.Item)
		if err != nil || n == 0 {
			return err
		}
		outcome = store.LedgerSkipped
		if f.Notification != nil {
			outcome = store.LedgerSent
			for _, c := range []struct {
				max   int
				since time.Time
			}{{f.Caps.PerDay, f.At.Add(-24 * time.Hour)}, {f.Caps.PerWeek, f.At.Add(-7 * 24 * time.Hour)}} {
				if c.max <= 0 {
					continue
				}
				var sent int
				if err := tx.QueryRow(ctx, `SELECT count(*) FROM ledger WHERE automation_id = $1 AND subscriber_id = $2
					AND outcome = 'sent' AND at > $3`, t.AutomationID, t.SubscriberID, s.time(c.since)).Scan(&sent); err != nil {
					return err
				}
				if sent >= c.max {
					outcome = store.LedgerCapped
				}
			}
		}
		var notificationID any
		if outcome == store.LedgerSent {
			notificationID = f.Notification.ID
		}
		n, err = tx.Exec(ctx, `INSERT INTO ledger (run_id, item, automation_id, subscriber_id, notification_id, outcome, at)
			VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (run_id, item) DO NOTHING`,
			t.RunID, t.Item, nullString(t.AutomationID), t.SubscriberID, notificationID, outcome, s.time(f.At))
		if err != nil || n == 0 {
			outcome = ""
			return err
		}
		if outcome == store.LedgerSent {
			return s.insertNotification(ctx, tx, f.Notification)
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("firing timer: %w", s.mapErr(err))
	}
	return outcome, nil
}

// FireTimers does claimed timers' items as FireTimer does each. The
// uncapped ones go together in one transaction, a statement each for
// what FireTimer writes one row at a time: one DELETE of the timers,
// returning those still there (the claims that count, as FireTimer's
// DELETE), one INSERT of their ledger rows ON CONFLICT DO NOTHING,
// returning those written, and one INSERT of the notifications of those
// sent (rowsPerInsert rows a statement). A capped one goes through
// FireTimer, in its own transaction: it locks the person's run row before
// the timer. A timer named twice is done once; its second entry's outcome
// is "".
//
// Each statement locks its timers or ledger keys in whatever order the
// engine reads them, so a concurrent delete of several of them (a stop,
// a restart) may deadlock with it on PostgreSQL: the engine then fires
// the batch one timer at a time.
func (s *Store) FireTimers(ctx context.Context, fires []store.TimerFire) ([]string, error) {
	outcomes := make([]string, len(fires))
	type key struct {
		run  string
		item int
	}
	var batch []int // fires' indexes, each key once
	seen := make(map[key]bool, len(fires))
	for i, f := range fires {
		k := key{f.Timer.RunID, f.Timer.Item}
		if seen[k] {
			continue
		}
		seen[k] = true
		if f.Fire.Notification != nil && (f.Fire.Caps.PerDay > 0 || f.Fire.Caps.PerWeek > 0) {
			o, err := s.FireTimer(ctx, f.Timer, f.Fire)
			if err != nil {
				return outcomes, err
			}
			outcomes[i] = o
			continue
		}
		batch = append(batch, i)
	}
	if len(batch) == 0 {
		return outcomes, nil
	}
	batchOutcomes := make([]string, len(batch))
	err := s.db.Tx(ctx, TxOptions{}, func(tx Conn) error {
		clear(batchOutcomes)
		deleted := make(map[key]bool, len(batch))
		for chunk := range slices.Chunk(batch, rowsPerInsert) {
			args := make([]any, 0, 2*len(chunk))
			for _, i := range chunk {
				args = append(args, fires[i].Timer.RunID, fires[i].Timer.Item)
			}
			rows, err := tx.Query(ctx, `DELETE FROM timers WHERE (run_id, item) IN (VALUES `+
				valuesList(len(chunk), 2, map[int]string{1: "INTEGER"})+`) RETURNING run_id, item`, args...)
			keys, err := CollectRows(rows, err, func(k *key) []any { return []any{&k.run, &k.item} })
			if err != nil {
				return err
			}
			for _, k := range keys {
				deleted[k] = true
			}
		}
		var todo []int // batch's indexes of the timers deleted
		for j, i := range batch {
			if deleted[key{fires[i].Timer.RunID, fires[i].Timer.Item}] {
				todo = append(todo, j)
			}
		}
		written := make(map[key]bool, len(todo))
		for chunk := range slices.Chunk(todo, rowsPerInsert) {
			args := make([]any, 0, 7*len(chunk))
			for _, j := range chunk {
				t, f := fires[batch[j]].Timer, fires[batch[j]].Fire
				outcome, notificationID := store.LedgerSkipped, any(nil)
				if f.Notification != nil {
					outcome, notificationID = store.LedgerSent, f.Notification.ID
				}
				args = append(args, t.RunID, t.Item, nullString(t.AutomationID), t.SubscriberID, notificationID, outcome, s.time(f.At))
			}
			rows, err := tx.Query(ctx, `INSERT INTO ledger (run_id, item, automation_id, subscriber_id, notification_id, outcome, at)
				VALUES `+valuesList(len(chunk), 7, nil)+` ON CONFLICT (run_id, item) DO NOTHING RETURNING run_id, item`, args...)
			keys, err := CollectRows(rows, err, func(k *key) []any { return []any{&k.run, &k.item} })
			if err != nil {
				return err
			}
			for _, k := range keys {
				written[k] = true
			}
		}
		var ns []*store.Notification
		for _, j := range todo {
			tf := fires[batch[j]]
			if !written[key{tf.Timer.RunID, tf.Timer.Item}] {
				continue
			}
			batchOutcomes[j] = store.LedgerSkipped
			if tf.Fire.Notification != nil {
				batchOutcomes[j] = store.LedgerSent
				ns = append(ns, tf.Fire.Notification)
			}
		}
		return s.insertNotifications(ctx, tx, ns)
	})
	if err != nil {
		return outcomes, fmt.Errorf("firing timers: %w", s.mapErr(err))
	}
	for j, i := range batch {
		outcomes[i] = batchOutcomes[j]
	}
	return outcomes, nil
}

// lockCappedPerson serializes the capped messages of one person and
// automation: it locks their automation_runs row, which TriggerAutomation
// locks too, before the timer (the documented lock order: a run's row,
// then its timers). Without it two messages due at the same instant,
// fired on two nodes, both counted the ledger before either wrote it, and
// both passed a cap of one (TestConformance/Automations/CapsConcurrent).
// An uncapped message counts nothing and takes no lock; SQLite's one
// writer runs the transaction alone already.
func (s *Store) lockCappedPerson(ctx context.Context, tx Conn, t store.Timer, f store.Fire) error {
	if f.Notification == nil || (f.Caps.PerDay <= 0 && f.Caps.PerWeek <= 0) || t.AutomationID == "" {
		return nil
	}
	lock := s.d.ForUpdate()
	if lock == "" {
		return nil
	}
	rows, err := tx.Query(ctx, `SELECT 1 FROM automation_runs WHERE automation_id = $1 AND subscriber_id = $2 `+lock,
		t.AutomationID, t.SubscriberID)
	if err != nil {
		return err
	}
	rows.Close()
	return rows.Err()
}

// PurgeLedger forgets old ledger rows.
func (s *Store) PurgeLedger(ctx context.Context, before time.Time) (int64, error) {
	n, err := s.db.Write().Exec(ctx, `DELETE FROM ledger WHERE at < $1`, s.time(before))
	if err != nil {
		return 0, fmt.Errorf("purging the ledger: %w", err)
	}
	return n, nil
}

// queueTriggers records the person's pending triggers of one type (with
// no topics: one subscribed trigger; with topics: a topic_opt_in trigger
// per topic), in the caller's transaction, and only while the website
// has an active automation of that type: a website without one pays one
// indexed read.
func (s *Store) queueTriggers(ctx context.Context, tx Conn, websiteID, subscriberID, triggerType string, topicIDs []string, at time.Time) error {
	_, err := s.queueTriggersN(ctx, tx, websiteID, subscriberID, triggerType, topicIDs, at)
	return err
}

// queueTriggersN is queueTriggers, and reports whether it recorded one.
func (s *Store) queueTriggersN(ctx context.Context, tx Conn, websiteID, subscriberID, triggerType string, topicIDs []string, at time.Time) (bool, error) {
	rows := []triggerRow{{websiteID, subscriberID, triggerType, nil, at}}
	if triggerType == store.TriggerTopicOptIn {
		rows = rows[:0]
		for _, id := range topicIDs {
			rows = append(rows, triggerRow{websiteID, subscriberID, triggerType, id, at})
		}
	}
	queued, err := s.queueTriggerRows(ctx, tx, rows)
	return len(queued) > 0, err
}

// triggerRow is a pending trigger to record: a person's, of a type, for
// a topic id or none (nil).
type triggerRow struct {
	website, subscriber, kind string
	topic                     any
	at                        time.Time
}

// queueTriggerRows records each trigger whose website has an active
// automation of its type, a statement for up to rowsPerInsert of them,
// and returns the subscribers of those recorded.
func (s *Store) queueTriggerRows(ctx context.Context, tx Conn, triggers []triggerRow) ([]string, error) {
	var out []string
	if err := Pipeline(ctx, tx, s.triggerQueries(triggers, &out)); err != nil {
		return nil, err
	}
	return out, nil
}

// triggerQueries are queueTriggerRows' statements, for a pipeline of the
// caller's: each appends the subscribers of the triggers it queued to
// *queued.
func (s *Store) triggerQueries(triggers []triggerRow, queued *[]string) []Piped {
	var out []Piped
	for chunk := range slices.Chunk(triggers, rowsPerInsert) {
		args := make([]any, 0, 6*len(chunk))
		for _, t := range chunk {
			args = append(args, store.NewID(), t.website, t.subscriber, t.kind, t.topic, s.time(t.at))
		}
		out = append(out, Piped{SQL: `INSERT INTO automation_triggers (id, website_id, subscriber_id, trigger_type, topic_id, at)
			SELECT v.column1, v.column2, v.column3, v.column4, v.column5, v.column6
			FROM (VALUES ` + valuesList(len(chunk), 6, map[int]string{3: "TEXT", 4: "TEXT", 5: s.d.DDL.Time}) + `) AS v
			WHERE EXISTS (SELECT 1 FROM automations a
				WHERE a.website_id = v.column2 AND a.status = 'active' AND a.trigger_type = v.column4)
			RETURNING subscriber_id`, Args: args, Read: func(rows Rows) error {
			ids, err := CollectRows(rows, nil, func(id *string) []any { return []any{id} })
			*queued = append(*queued, ids...)
			return err
		}})
	}
	return out
}

// PendingTriggers lists pending triggers, oldest first.
func (s *Store) PendingTriggers(ctx context.Context, websiteID, subscriberID string, limit int) ([]store.PendingTrigger, error) {
	query, args := `website_id = $1`, []any{websiteID, limitArg(limit)}
	if subscriberID != "" {
		query, args = `subscriber_id = $3 AND website_id = $1`, append(args, subscriberID)
	}
	rows, err := s.db.Read().Query(ctx, `SELECT id, website_id, subscriber_id, trigger_type, coalesce(topic_id, ''), at
		FROM automation_triggers WHERE `+query+` ORDER BY at, id LIMIT $2`, args...)
	out, err := CollectRows(rows, err, func(p *store.PendingTrigger) []any {
		return []any{&p.ID, &p.WebsiteID, &p.SubscriberID, &p.TriggerType, &p.TopicID, timeDest{&p.At}}
	})
	if err != nil {
		return nil, fmt.Errorf("listing pending triggers: %w", err)
	}
	return out, nil
}

// DoneTrigger removes a pending trigger.
func (s *Store) DoneTrigger(ctx context.Context, id string) error {
	if _, err := s.db.Write().Exec(ctx, `DELETE FROM automation_triggers WHERE id = $1`, id); err != nil {
		return fmt.Errorf("removing pending trigger: %w", err)
	}
	return nil
}

// DefinitionsVersion reads the definitions version, which the triggers of
// the definitions_version migration move with every change to the
// automations, journeys, journey versions, goals and segments, and
// bumpDefinitions with every change to the site settings, on-site
// messages and topics.
func (s *Store) DefinitionsVersion(ctx context.Context) (int64, error) {
	var v int64
	if err := s.db.Read().QueryRow(ctx, `SELECT version FROM definitions_version`).Scan(&v); err != nil {
		return 0, fmt.Errorf("reading definitions version: %w", err)
	}
	return v, nil
}

// bumpDefinitions moves the definitions version in tx: the writers of the
// definitions no trigger watches (a website's settings documents, on-site
// messages and topics, and the website itself, whose deletion takes them)
// call it in the transaction of their change.
func bumpDefinitions(ctx context.Context, tx Conn) error {
	if _, err := tx.Exec(ctx, `UPDATE definitions_version SET version = version + 1`); err != nil {
		return fmt.Errorf("moving the definitions version: %w", err)
	}
	return nil
}
