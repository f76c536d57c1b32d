package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/relaybell/relaybell/store"
)

// scheduleCols are a schedule's columns, unqualified (SQLite's RETURNING
// cannot name the table).
const scheduleCols = `id, website_id, name, status, paused_reason, definition, coalesce(topic_id, ''),
	coalesce(segment_id, ''), coalesce(exclude_segment_id, ''), coalesce(template_id, ''), next_at, budget_wait, refused_at,
	refused_occurrence, due_at, refusal, created_at, updated_at`

// scheduleRow scans scheduleCols; the refusal's times are read apart and
// set by its schedule method.
type scheduleRow struct {
	store.Schedule
	refusedAt, refusedOccurrence, dueAt *time.Time
	refusal                             string
}

func scheduleDest(r *scheduleRow) []any {
	s := &r.Schedule
	return []any{&s.ID, &s.WebsiteID, &s.Name, &s.Status, &s.PausedReason, rawJSONDest{&s.Definition}, &s.TopicID,
		&s.SegmentID, &s.ExcludeSegmentID, &s.TemplateID, timePtrDest{&s.NextAt}, &s.BudgetWait, timePtrDest{&r.refusedAt},
		timePtrDest{&r.refusedOccurrence}, timePtrDest{&r.dueAt}, &r.refusal, timeDest{&s.CreatedAt}, timeDest{&s.UpdatedAt}}
}

// schedule is the row's schedule with its refusal.
func (r scheduleRow) schedule() store.Schedule {
	s := r.Schedule
	if r.refusedAt != nil && r.refusedOccurrence != nil {
		s.Refusal = &store.ScheduleRefusal{At: *r.refusedAt, Occurrence: *r.refusedOccurrence, Reason: r.refusal}
		// Still waiting: for the budget, or held (due after NextAt).
		if r.dueAt != nil && (s.BudgetWait || s.NextAt != nil && r.dueAt.After(*s.NextAt)) {
			s.Refusal.RetryAt = *r.dueAt
		}
	}
	return s
}

func schedules(rows []scheduleRow) []store.Schedule {
	out := make([]store.Schedule, len(rows))
	for i, r := range rows {
		out[i] = r.schedule()
	}
	return out
}

// ListSchedules lists the website's schedules, newest first.
func (s *Store) ListSchedules(ctx context.Context, websiteID string) ([]store.Schedule, error) {
	rows, err := s.db.Read().Query(ctx, `SELECT `+scheduleCols+` FROM schedules WHERE website_id = $1
		ORDER BY created_at DESC, id DESC`, websiteID)
	out, err := CollectRows(rows, err, scheduleDest)
	if err != nil {
		return nil, fmt.Errorf("listing schedules: %w", err)
	}
	return schedules(out), nil
}

// Schedule finds one of the website's schedules.
func (s *Store) Schedule(ctx context.Context, websiteID, id string) (store.Schedule, error) {
	var r scheduleRow
	err := s.db.Read().QueryRow(ctx, `SELECT `+scheduleCols+` FROM schedules WHERE website_id = $1 AND id = $2`,
		websiteID, id).Scan(scheduleDest(&r)...)
	if err != nil {
		return store.Schedule{}, fmt.Errorf("loading schedule: %w", s.mapErr(err))
	}
	return r.schedule(), nil
}

// CreateSchedule stores a new schedule, due at its NextAt.
func (s *Store) CreateSchedule(ctx context.Context, sc store.Schedule) error {
	_, err := s.db.Write().Exec(ctx, `INSERT INTO schedules (id, website_id, name, status, paused_reason, definition,
		topic_id, segment_id, exclude_segment_id, template_id, next_at, due_at, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $11, $12, $13)`,
		sc.ID, sc.WebsiteID, sc.Name, sc.Status, sc.PausedReason, string(sc.Definition), nullString(sc.TopicID),
		nullString(sc.SegmentID), nullString(sc.ExcludeSegmentID), nullString(sc.TemplateID), s.timePtr(sc.NextAt),
		s.now(sc.CreatedAt), s.now(sc.UpdatedAt))
	if err != nil {
		return fmt.Errorf("creating schedule: %w", s.mapErr(err))
	}
	return nil
}

// UpdateSchedule replaces a schedule's settings and its next occurrence,
// and ends a lease. An occurrence kept waiting for the budget (BudgetWait
// and the same NextAt) keeps its retry time.
func (s *Store) UpdateSchedule(ctx context.Context, sc store.Schedule) error {
	err := affected(s.db.Write().Exec(ctx, `UPDATE schedules SET name = $3, status = $4, paused_reason = $5,
		definition = $6, topic_id = $7, segment_id = $8, exclude_segment_id = $9, template_id = $10, next_at = $11,
		due_at = CASE WHEN $12 AND budget_wait AND next_at = $11 THEN due_at ELSE $11 END, budget_wait = $12,
		leased_until = NULL, updated_at = $13 WHERE website_id = $1 AND id = $2`,
		sc.WebsiteID, sc.ID, sc.Name, sc.Status, sc.PausedReason, string(sc.Definition), nullString(sc.TopicID),
		nullString(sc.SegmentID), nullString(sc.ExcludeSegmentID), nullString(sc.TemplateID), s.timePtr(sc.NextAt), sc.BudgetWait,
		s.now(sc.UpdatedAt)))
	if err != nil {
		return fmt.Errorf("updating schedule: %w", s.mapErr(err))
	}
	return nil
}

// DeleteSchedule removes a schedule; its ledger goes with it (ON DELETE
// CASCADE).
func (s *Store) DeleteSchedule(ctx context.Context, websiteID, id string) error {
	if err := affected(s.db.Write().Exec(ctx, `DELETE FROM schedules WHERE website_id = $1 AND id = $2`, websiteID, id)); err != nil {
		return fmt.Errorf("deleting schedule: %w", s.mapErr(err))
	}
	return nil
}

// ScheduleRuns lists a schedule's ledger, the latest occurrence first.
func (s *Store) ScheduleRuns(ctx context.Context, websiteID, id string, limit int) ([]store.ScheduleRun, error) {
	rows, err := s.db.Read().Query(ctx, `SELECT r.schedule_id, r.occurrence, r.outcome, coalesce(r.notification_id, ''), r.at
		FROM schedule_runs r JOIN schedules sc ON sc.id = r.schedule_id
		WHERE sc.website_id = $1 AND r.schedule_id = $2 ORDER BY r.occurrence DESC LIMIT $3`, websiteID, id, limitArg(limit))
	out, err := CollectRows(rows, err, func(r *store.ScheduleRun) []any {
		return []any{&r.ScheduleID, timeDest{&r.Occurrence}, &r.Outcome, &r.NotificationID, timeDest{&r.At}}
	})
	if err != nil {
		return nil, fmt.Errorf("listing schedule runs: %w", err)
	}
	return out, nil
}

// ClaimSchedules leases due schedules, as ClaimTimers leases timers.
func (s *Store) ClaimSchedules(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]store.Schedule, error) {
	rows, err := s.db.Write().Query(ctx, `UPDATE schedules SET leased_until = $2
		FROM (SELECT id AS due_id FROM schedules
			WHERE status = 'active' AND due_at IS NOT NULL AND due_at <= $1 AND (leased_until IS NULL OR leased_until <= $1)
			ORDER BY due_at, id LIMIT $3 `+s.d.SkipLocked()+`) due
		WHERE id = due.due_id AND (leased_until IS NULL OR leased_until <= $1)
		RETURNING `+scheduleCols, s.time(now), s.time(now.Add(lease)), limitArg(limit))
	out, err := CollectRows(rows, err, scheduleDest)
	if err != nil {
		return nil, fmt.Errorf("claiming schedules: %w", err)
	}
	return schedules(out), nil
}

// NextScheduleDue is the earliest due time of the active schedules not
// leased.
func (s *Store) NextScheduleDue(ctx context.Context) (time.Time, bool, error) {
	var due time.Time
	err := s.db.Read().QueryRow(ctx, `SELECT due_at FROM schedules WHERE status = 'active' AND due_at IS NOT NULL
		AND leased_until IS NULL ORDER BY due_at LIMIT 1`).Scan(timeDest{&due})
	switch err = s.mapErr(err); {
	case errors.Is(err, store.ErrNotFound):
		return time.Time{}, false, nil
	case err != nil:
		return time.Time{}, false, fmt.Errorf("finding next schedule: %w", err)
	}
	return due, true, nil
}

// FireSchedule does an occurrence once. The UPDATE that moves next_at on
// from the occurrence is the claim that counts: of two nodes firing it (a
// lease ran out), the second waits on the first's row lock and then
// updates nothing. The ledger's key (schedule, occurrence) makes a redo
// of a committed occurrence a no-op even so: next_at still moves on (a
// schedule whose next_at a racing change wrote back would otherwise come
// due at its done occurrence for ever), nothing else happens. The budget is taken in the
// same transaction, so a send is counted exactly when it is stored.
func (s *Store) FireSchedule(ctx context.Context, f store.ScheduleFire) (string, error) {
	outcome := ""
	err := s.db.Tx(ctx, TxOptions{RetryUnique: true}, func(tx Conn) error {
		outcome = ""
		n, err := tx.Exec(ctx, `UPDATE schedules SET next_at = $4, due_at = $4, budget_wait = $5, leased_until = NULL
			WHERE website_id = $1 AND id = $2 AND next_at = $3 AND status = 'active'`,
			f.WebsiteID, f.ScheduleID, s.time(f.Occurrence), s.timePtr(f.Next), f.NextWaits)
		if err != nil || n == 0 {
			return err
		}
		o, notificationID := store.OccurrenceSkipped, any(nil)
		if f.Notification != nil {
			o, notificationID = store.OccurrenceSent, f.Notification.ID
		}
		rows, err := tx.Query(ctx, `INSERT INTO schedule_runs (schedule_id, occurrence, outcome, notification_id, at)
			VALUES ($1, $2, $3, $4, $5) ON CONFLICT (schedule_id, occurrence) DO NOTHING RETURNING schedule_id`,
			f.ScheduleID, s.time(f.Occurrence), o, notificationID, s.time(f.At))
		written, err := CollectRows(rows, err, func(id *string) []any { return []any{id} })
		if err != nil {
			return err
		}
		if len(written) == 0 {
			// Done already (a schedule written back by a change that
			// raced this occurrence): next_at moves on, nothing else.
			return nil
		}
		if f.Notification != nil && f.Budget != nil {
			if _, err := s.takeRateLimit(ctx, tx, *f.Budget, 1, f.At); err != nil {
				return err
			}
		}
		if f.Notification != nil {
			if err := s.insertNotification(ctx, tx, f.Notification); err != nil {
				return err
			}
		}
		outcome = o
		return nil
	})
	switch {
	case errors.Is(err, errNoRoom):
		return store.OccurrenceRefused, s.refuseOccurrence(ctx, f)
	case err != nil:
		return "", fmt.Errorf("firing schedule %s at %s: %w", f.ScheduleID, f.Occurrence.UTC().Format(time.RFC3339), s.mapErr(err))
	}
	return outcome, nil
}

// PurgeScheduleRuns forgets old ledger rows.
func (s *Store) PurgeScheduleRuns(ctx context.Context, before time.Time) (int64, error) {
	n, err := s.db.Write().Exec(ctx, `DELETE FROM schedule_runs WHERE at < $1`, s.time(before))
	if err != nil {
		return 0, fmt.Errorf("purging schedule runs: %w", err)
	}
	return n, nil
}

// refuseOccurrence records on the schedule that the budget refused the
// occurrence, which is due again when the budget's next window starts
// and waits for the budget (catch-up never skips it).
func (s *Store) refuseOccurrence(ctx context.Context, f store.ScheduleFire) error {
	retry := f.Budget.WindowEnd(f.At)
	reason := fmt.Sprintf("the website's hourly budget of %d broadcast sends was used up", f.Budget.Max)
	if err := s.holdOccurrence(ctx, f.WebsiteID, f.ScheduleID, f.Occurrence, retry, true, reason, f.At); err != nil {
		return fmt.Errorf("recording a budget refusal of schedule %s: %w", f.ScheduleID, err)
	}
	return nil
}

// HoldSchedule keeps a claimed occurrence for later, recorded as the
// schedule's refusal.
func (s *Store) HoldSchedule(ctx context.Context, websiteID, id string, occurrence, retry time.Time, reason string, at time.Time) error {
	if err := s.holdOccurrence(ctx, websiteID, id, occurrence, retry, false, reason, at); err != nil {
		return fmt.Errorf("holding schedule %s: %w", id, err)
	}
	return nil
}

// holdOccurrence makes the active schedule's occurrence (its next_at) due
// again at retry, waiting for the budget when budgetWait, records why as
// its refusal and ends its lease.
func (s *Store) holdOccurrence(ctx context.Context, websiteID, id string, occurrence, retry time.Time, budgetWait bool, reason string, at time.Time) error {
	_, err := s.db.Write().Exec(ctx, `UPDATE schedules SET due_at = $4, budget_wait = budget_wait OR $5, leased_until = NULL,
		refused_at = $6, refused_occurrence = $3, refusal = $7
		WHERE website_id = $1 AND id = $2 AND next_at = $3 AND status = 'active'`,
		websiteID, id, s.time(occurrence), s.time(retry), budgetWait, s.time(at), reason)
	return err
}

// PauseSchedule pauses an active schedule and adds its schedule.paused
// event, in one transaction.
func (s *Store) PauseSchedule(ctx context.Context, websiteID, id, reason, message string, at time.Time) (bool, error) {
	var paused bool
	err := s.db.Tx(ctx, TxOptions{}, func(tx Conn) error {
		var name string
		err := tx.QueryRow(ctx, `UPDATE schedules SET status = 'paused', paused_reason = $3, next_at = NULL, due_at = NULL,
			budget_wait = $4, leased_until = NULL, updated_at = $5
			WHERE website_id = $1 AND id = $2 AND status = 'active' RETURNING name`,
			websiteID, id, message, false, s.time(at)).Scan(&name)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		} else if err != nil {
			return err
		}
		paused = true
		data := store.SchedulePausedData{ScheduleID: id, Name: name, Reason: reason, Message: message}
		return s.addEvent(ctx, tx, websiteID, store.EventSchedulePaused, data, at)
	})
	if err != nil {
		return false, fmt.Errorf("pausing schedule: %w", s.mapErr(err))
	}
	return paused, nil
}

// pauseTopicSchedules pauses the active schedules of the website that
// send to the topic (named name), with the reason, and adds a
// schedule.paused event for each, in tx (the topic's deletion).
func (s *Store) pauseTopicSchedules(ctx context.Context, tx Conn, websiteID, topicID, name string, at time.Time) error {
	type paused struct{ id, name string }
	rows, err := tx.Query(ctx, `SELECT id, name FROM schedules WHERE website_id = $1 AND topic_id = $2 AND status = 'active' ORDER BY id`,
		websiteID, topicID)
	list, err := CollectRows(rows, err, func(p *paused) []any { return []any{&p.id, &p.name} })
	if err != nil || len(list) == 0 {
		return err
	}
	reason := fmt.Sprintf("Its topic %q was deleted.", name)
	if _, err = tx.Exec(ctx, `UPDATE schedules SET status = 'paused', paused_reason = $3, next_at = NULL, due_at = NULL,
		budget_wait = $4, leased_until = NULL, updated_at = $5
		WHERE website_id = $1 AND topic_id = $2 AND status = 'active'`,
		websiteID, topicID, reason, false, s.time(at)); err != nil {
		return err
	}
	for _, p := range list {
		data := store.SchedulePausedData{ScheduleID: p.id, Name: p.name, Reason: store.SchedulePausedTopicDeleted, Message: reason}
		if err := s.addEvent(ctx, tx, websiteID, store.EventSchedulePaused, data, at); err != nil {
			return err
		}
	}
	return nil
}

// scheduleSegmentUses counts the website's active schedules per segment
// they include or exclude.
func (s *Store) scheduleSegmentUses(ctx context.Context, websiteID string) (map[string]int64, error) {
	type use struct {
		id string
		n  int64
	}
	rows, err := s.db.Read().Query(ctx, `SELECT seg, count(*) FROM (
			SELECT segment_id AS seg FROM schedules WHERE website_id = $1 AND status = 'active' AND segment_id IS NOT NULL
			UNION ALL
			SELECT exclude_segment_id FROM schedules WHERE website_id = $1 AND status = 'active' AND exclude_segment_id IS NOT NULL
				AND (segment_id IS NULL OR exclude_segment_id <> segment_id)
		) u GROUP BY seg`, websiteID)
	list, err := CollectRows(rows, err, func(u *use) []any { return []any{&u.id, &u.n} })
	if err != nil {
		return nil, fmt.Errorf("counting schedules per segment: %w", err)
	}
	out := make(map[string]int64, len(list))
	for _, u := range list {
		out[u.id] = u.n
	}
	return out, nil
}
