package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/relaybell/relaybell/store"
)

// journeyCols are a journey's columns with its current version's
// definition.
const journeyCols = `j.id, j.website_id, j.name, j.status, j.entry_type, j.version, v.definition, j.created_at, j.updated_at`

const journeyFrom = `journeys j JOIN journey_versions v ON v.journey_id = j.id AND v.version = j.version`

func journeyDest(j *store.Journey) []any {
	return []any{&j.ID, &j.WebsiteID, &j.Name, &j.Status, &j.EntryType, &j.Version, rawJSONDest{&j.Definition},
		timeDest{&j.CreatedAt}, timeDest{&j.UpdatedAt}}
}

// ListJourneys lists the website's journeys, newest first.
func (s *Store) ListJourneys(ctx context.Context, websiteID string) ([]store.Journey, error) {
	rows, err := s.db.Read().Query(ctx, `SELECT `+journeyCols+` FROM `+journeyFrom+`
		WHERE j.website_id = $1 ORDER BY j.created_at DESC, j.id DESC`, websiteID)
	out, err := CollectRows(rows, err, journeyDest)
	if err != nil {
		return nil, fmt.Errorf("listing journeys: %w", err)
	}
	return out, nil
}

// HasJourneys reports whether the website has a journey.
func (s *Store) HasJourneys(ctx context.Context, websiteID string) (bool, error) {
	var has bool
	if err := s.db.Read().QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM journeys WHERE website_id = $1)`, websiteID).Scan(&has); err != nil {
		return false, fmt.Errorf("checking for journeys: %w", err)
	}
	return has, nil
}

// Journey finds one of the website's journeys.
func (s *Store) Journey(ctx context.Context, websiteID, id string) (store.Journey, error) {
	var j store.Journey
	err := s.db.Read().QueryRow(ctx, `SELECT `+journeyCols+` FROM `+journeyFrom+`
		WHERE j.website_id = $1 AND j.id = $2`, websiteID, id).Scan(journeyDest(&j)...)
	if err != nil {
		return store.Journey{}, fmt.Errorf("loading journey: %w", s.mapErr(err))
	}
	return j, nil
}

// CreateJourney stores a new journey as its version 1.
func (s *Store) CreateJourney(ctx context.Context, j store.Journey) error {
	err := s.db.Tx(ctx, TxOptions{}, func(tx Conn) error {
		if _, err := tx.Exec(ctx, `INSERT INTO journeys (id, website_id, name, status, entry_type, version, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, 1, $6, $7)`, j.ID, j.WebsiteID, j.Name, j.Status, j.EntryType,
			s.now(j.CreatedAt), s.now(j.UpdatedAt)); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO journey_versions (journey_id, version, definition, created_at) VALUES ($1, 1, $2, $3)`,
			j.ID, string(j.Definition), s.now(j.CreatedAt))
		return err
	})
	if err != nil {
		return fmt.Errorf("creating journey: %w", s.mapErr(err))
	}
	return nil
}

// UpdateJourney replaces a journey's settings. The journey's row is
// updated first: an Enroll that reads its version (FOR SHARE) waits for
// it, so no enrolment enters a version this transaction replaces.
func (s *Store) UpdateJourney(ctx context.Context, j store.Journey) (store.Journey, error) {
	err := s.db.Tx(ctx, TxOptions{}, func(tx Conn) error {
		var version int
		err := tx.QueryRow(ctx, `UPDATE journeys SET name = $3, status = $4, entry_type = $5, updated_at = $6
			WHERE website_id = $1 AND id = $2 RETURNING version`,
			j.WebsiteID, j.ID, j.Name, j.Status, j.EntryType, s.now(j.UpdatedAt)).Scan(&version)
		if err != nil {
			return err
		}
		var entered bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM enrollments WHERE journey_id = $1 AND version = $2)`,
			j.ID, version).Scan(&entered); err != nil {
			return err
		}
		if !entered {
			_, err := tx.Exec(ctx, `UPDATE journey_versions SET definition = $3 WHERE journey_id = $1 AND version = $2`,
				j.ID, version, string(j.Definition))
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO journey_versions (journey_id, version, definition, created_at) VALUES ($1, $2, $3, $4)`,
			j.ID, version+1, string(j.Definition), s.now(j.UpdatedAt)); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE journeys SET version = $2 WHERE id = $1`, j.ID, version+1)
		return err
	})
	if err != nil {
		return store.Journey{}, fmt.Errorf("updating journey: %w", s.mapErr(err))
	}
	return s.Journey(ctx, j.WebsiteID, j.ID)
}

// DeleteJourney removes a journey; its versions, enrolments and history
// go with it (ON DELETE CASCADE), its timers here.
func (s *Store) DeleteJourney(ctx context.Context, websiteID, id string) error {
	err := s.db.Tx(ctx, TxOptions{}, func(tx Conn) error {
		if _, err := tx.Exec(ctx, `DELETE FROM timers WHERE kind = $2 AND run_id IN (SELECT id FROM enrollments WHERE journey_id = $1)`,
			id, store.TimerJourney); err != nil {
			return err
		}
		return affected(tx.Exec(ctx, `DELETE FROM journeys WHERE website_id = $1 AND id = $2`, websiteID, id))
	})
	if err != nil {
		return fmt.Errorf("deleting journey: %w", s.mapErr(err))
	}
	return nil
}

// ActiveJourneys lists the website's active journeys of the entry types.
func (s *Store) ActiveJourneys(ctx context.Context, websiteID string, entryTypes ...string) ([]store.Journey, error) {
	query := `SELECT ` + journeyCols + ` FROM ` + journeyFrom + ` WHERE j.website_id = $1 AND j.status = 'active'`
	args := []any{websiteID}
	if len(entryTypes) > 0 {
		query += ` AND ` + s.d.In("j.entry_type", "$2")
		args = append(args, s.d.List(entryTypes))
	}
	rows, err := s.db.Read().Query(ctx, query+` ORDER BY j.created_at, j.id`, args...)
	out, err := CollectRows(rows, err, journeyDest)
	if err != nil {
		return nil, fmt.Errorf("listing active journeys: %w", err)
	}
	return out, nil
}

// JourneyVersion is one version's definition.
func (s *Store) JourneyVersion(ctx context.Context, journeyID string, version int) ([]byte, error) {
	var def []byte
	err := s.db.Read().QueryRow(ctx, `SELECT definition FROM journey_versions WHERE journey_id = $1 AND version = $2`,
		journeyID, version).Scan(rawJSONDest{&def})
	if err != nil {
		return nil, fmt.Errorf("loading journey version: %w", s.mapErr(err))
	}
	return def, nil
}

// JourneyStepStats adds up a journey's history rows, live enrolments and
// notifications per step id.
func (s *Store) JourneyStepStats(ctx context.Context, websiteID, journeyID string) (map[string]store.JourneyStepStats, error) {
	out := map[string]store.JourneyStepStats{}
	type row struct {
		step       string
		a, b, c, d int64
		revenue    float64
	}
	rows, err := s.db.Read().Query(ctx, `SELECT h.step_id, count(*), sum(CASE WHEN h.early THEN 1 ELSE 0 END)
		FROM journey_history h JOIN journeys j ON j.id = h.journey_id
		WHERE j.website_id = $1 AND h.journey_id = $2 GROUP BY h.step_id`, websiteID, journeyID)
	hist, err := CollectRows(rows, err, func(r *row) []any { return []any{&r.step, &r.a, &r.b} })
	if err != nil {
		return nil, fmt.Errorf("reading journey history figures: %w", err)
	}
	for _, r := range hist {
		st := out[r.step]
		st.Entered += r.a
		st.Completed += r.a - r.b
		st.ExitedEarly += r.b
		out[r.step] = st
	}
	rows, err = s.db.Read().Query(ctx, `SELECT current_step, count(*) FROM enrollments
		WHERE website_id = $1 AND journey_id = $2 AND state = 'active' GROUP BY current_step`, websiteID, journeyID)
	live, err := CollectRows(rows, err, func(r *row) []any { return []any{&r.step, &r.a} })
	if err != nil {
		return nil, fmt.Errorf("reading journey waiting figures: %w", err)
	}
	for _, r := range live {
		st := out[r.step]
		st.Entered += r.a
		st.Waiting += r.a
		out[r.step] = st
	}
	rows, err = s.db.Read().Query(ctx, `SELECT journey_step, coalesce(sum(sent), 0), coalesce(sum(delivered), 0),
		coalesce(sum(clicked), 0), coalesce(sum(conversions), 0), coalesce(sum(revenue), 0)
		FROM notifications WHERE website_id = $1 AND journey_id = $2 GROUP BY journey_step`, websiteID, journeyID)
	sends, err := CollectRows(rows, err, func(r *row) []any { return []any{&r.step, &r.a, &r.b, &r.c, &r.d, &r.revenue} })
	if err != nil {
		return nil, fmt.Errorf("reading journey send figures: %w", err)
	}
	for _, r := range sends {
		st := out[r.step]
		st.Sent, st.Delivered, st.Clicked, st.Converted, st.Revenue = r.a, r.b, r.c, r.d, r.revenue
		out[r.step] = st
	}
	return out, nil
}

// Enroll enters a person into a journey. The journey's row is read FOR
// SHARE (an UpdateJourney waits, and is waited for); the partial unique
// index enrollments_live refuses a second live enrolment of a concurrent
// Enroll, whose transaction runs again and finds the first.
func (s *Store) Enroll(ctx context.Context, e store.Enroll) (string, error) {
	var refused string
	err := s.db.Tx(ctx, TxOptions{RetryUnique: true}, func(tx Conn) error {
		refused = ""
		var version int
		var status string
		if err := tx.QueryRow(ctx, `SELECT version, status FROM journeys WHERE id = $1 AND website_id = $2 `+s.d.LockRows("SHARE"),
			e.JourneyID, e.WebsiteID).Scan(&version, &status); err != nil {
			return err
		}
		if status != store.AutomationActive {
			refused = store.RefusedNotActive
			return nil
		}
		if version != e.Version {
			return store.ErrConflict
		}
		var ok bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM subscribers WHERE id = $1 AND website_id = $2)`,
			e.SubscriberID, e.WebsiteID).Scan(&ok); err != nil {
			return err
		}
		if !ok {
			return store.ErrNotFound
		}
		var state string
		var last time.Time
		err := tx.QueryRow(ctx, `SELECT state, entered_at FROM enrollments WHERE journey_id = $1 AND subscriber_id = $2
			ORDER BY entered_at DESC, id DESC LIMIT 1`, e.JourneyID, e.SubscriberID).Scan(&state, timeDest{&last})
		switch err = s.mapErr(err); {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return err
		case state == store.EnrollmentActive, e.ReenterAfter <= 0, e.At.Before(last.Add(e.ReenterAfter)):
			refused = store.RefusedAlreadyEnrolled
			return nil
		}
		if _, err := tx.Exec(ctx, `INSERT INTO enrollments (id, website_id, journey_id, subscriber_id, version, state,
			current_step, entered_at, updated_at) VALUES ($1, $2, $3, $4, $5, 'active', $6, $7, $7)`,
			e.EnrollmentID, e.WebsiteID, e.JourneyID, e.SubscriberID, e.Version, e.FirstStep, s.time(e.At)); err != nil {
			return err
		}
		return s.insertJourneyTimer(ctx, tx, e.EnrollmentID, 0, e.WebsiteID, e.SubscriberID, e.At)
	})
	if err != nil {
		return "", fmt.Errorf("enrolling: %w", s.mapErr(err))
	}
	return refused, nil
}

func (s *Store) insertJourneyTimer(ctx context.Context, tx Conn, enrollmentID string, tick int, websiteID, subscriberID string, due time.Time) error {
	_, err := tx.Exec(ctx, `INSERT INTO timers (run_id, item, kind, website_id, subscriber_id, due_at)
		VALUES ($1, $2, $3, $4, $5, $6)`, enrollmentID, tick, store.TimerJourney, websiteID, subscriberID, s.time(due))
	return err
}

const enrollmentCols = `e.id, e.website_id, e.journey_id, e.subscriber_id, coalesce(p.external_id, ''), e.version, e.state,
	e.current_step, e.waiting, e.seq, e.tick, e.entered_at, e.updated_at, e.ended_at`

const enrollmentFrom = `enrollments e JOIN subscribers p ON p.id = e.subscriber_id`

func enrollmentDest(e *store.Enrollment) []any {
	return []any{&e.ID, &e.WebsiteID, &e.JourneyID, &e.SubscriberID, &e.ExternalID, &e.Version, &e.State,
		&e.CurrentStep, &e.Waiting, &e.Seq, &e.Tick, timeDest{&e.EnteredAt}, timeDest{&e.UpdatedAt}, timePtrDest{&e.EndedAt}}
}

// Enrollment finds one of the website's enrolments.
func (s *Store) Enrollment(ctx context.Context, websiteID, id string) (store.Enrollment, error) {
	var e store.Enrollment
	err := s.db.Read().QueryRow(ctx, `SELECT `+enrollmentCols+` FROM `+enrollmentFrom+`
		WHERE e.website_id = $1 AND e.id = $2`, websiteID, id).Scan(enrollmentDest(&e)...)
	if err != nil {
		return store.Enrollment{}, fmt.Errorf("loading enrolment: %w", s.mapErr(err))
	}
	return e, nil
}

// ListEnrollments lists enrolments, newest first.
func (s *Store) ListEnrollments(ctx context.Context, q store.EnrollmentQuery) ([]store.Enrollment, error) {
	rows, err := s.db.Read().Query(ctx, `SELECT `+enrollmentCols+` FROM `+enrollmentFrom+`
		WHERE e.website_id = $1 AND ($2 = '' OR e.journey_id = $2) AND ($3 = '' OR e.subscriber_id = $3)
		AND (NOT $4 OR e.state = 'active') AND ($5 = 0 OR e.version = $5)
		ORDER BY e.entered_at DESC, e.id DESC LIMIT $6`,
		q.WebsiteID, q.JourneyID, q.SubscriberID, q.LiveOnly, q.Version, limitArg(q.Limit))
	out, err := CollectRows(rows, err, enrollmentDest)
	if err != nil {
		return nil, fmt.Errorf("listing enrolments: %w", err)
	}
	return out, nil
}

// EnrollmentHistory lists an enrolment's history rows in order.
func (s *Store) EnrollmentHistory(ctx context.Context, enrollmentID string) ([]store.JourneyStep, error) {
	rows, err := s.db.Read().Query(ctx, `SELECT seq, step_id, type, outcome, early, coalesce(notification_id, ''), at
		FROM journey_history WHERE enrollment_id = $1 ORDER BY seq`, enrollmentID)
	out, err := CollectRows(rows, err, func(h *store.JourneyStep) []any {
		return []any{&h.Seq, &h.StepID, &h.Type, &h.Outcome, &h.Early, &h.NotificationID, timeDest{&h.At}}
	})
	if err != nil {
		return nil, fmt.Errorf("reading enrolment history: %w", err)
	}
	return out, nil
}

// MoveEnrollment moves an enrolment on. The claimed timer's DELETE is
// the claim that counts (of two nodes firing it, the second deletes
// nothing); the enrolment's row lock then orders the move after any
// other, whose tick it would have changed.
func (s *Store) MoveEnrollment(ctx context.Context, m store.JourneyMove) (bool, error) {
	var moved bool
	err := s.db.Tx(ctx, TxOptions{}, func(tx Conn) error {
		var err error
		moved, err = s.moveEnrollment(ctx, tx, m)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("moving enrolment: %w", s.mapErr(err))
	}
	return moved, nil
}

// MoveEnrollments does the moves, in their order, as MoveEnrollment does
// each, all in one transaction: the engine's claimed batch of journey
// timers commits once, where a commit per step made most of the store's
// time per step on SQLite. Any error rolls all of them back. Each move
// takes its locks in MoveEnrollment's order (its timer, its enrolment,
// its person, its timers), one move after the other, so a batch holds
// the locks of the moves before while it takes the next one's: a
// concurrent transaction holding one of those (another move of a person
// of the batch: events, pings, goals) may deadlock with it on
// PostgreSQL, which fails the batch, and the engine then moves its
// enrolments one at a time.
func (s *Store) MoveEnrollments(ctx context.Context, ms []store.JourneyMove) ([]bool, error) {
	moved := make([]bool, len(ms))
	err := s.db.Tx(ctx, TxOptions{}, func(tx Conn) error {
		clear(moved)
		for i, m := range ms {
			var err error
			if moved[i], err = s.moveEnrollment(ctx, tx, m); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		clear(moved)
		return moved, fmt.Errorf("moving enrolments: %w", s.mapErr(err))
	}
	return moved, nil
}

// moveEnrollment is a move in tx; it reports whether the enrolment moved.
func (s *Store) moveEnrollment(ctx context.Context, tx Conn, m store.JourneyMove) (bool, error) {
	moved := false
	err := func() error {
		if m.Timer != nil {
			n, err := tx.Exec(ctx, `DELETE FROM timers WHERE run_id = $1 AND item = $2`, m.Timer.RunID, m.Timer.Item)
			if err != nil || n == 0 {
				return err
			}
		}
		var e store.Enrollment
		err := tx.QueryRow(ctx, `SELECT id, website_id, journey_id, subscriber_id, state, seq, tick FROM enrollments
			WHERE id = $1 `+s.d.ForUpdate(), m.EnrollmentID).Scan(&e.ID, &e.WebsiteID, &e.JourneyID, &e.SubscriberID, &e.State, &e.Seq, &e.Tick)
		if errors.Is(s.mapErr(err), store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if e.State != store.EnrollmentActive || e.Tick != m.Tick {
			return nil // a stale timer, or another move first: the timer's delete stands
		}
		for i, h := range m.Steps {
			var notificationID any
			if h.Notification != nil {
				notificationID = h.Notification.ID
			}
			if _, err := tx.Exec(ctx, `INSERT INTO journey_history (enrollment_id, seq, journey_id, step_id, type, outcome,
				early, notification_id, at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
				e.ID, e.Seq+i+1, e.JourneyID, h.StepID, h.Type, h.Outcome, h.Early, notificationID, s.time(m.At)); err != nil {
				return err
			}
			if h.Notification != nil {
				if err := s.insertNotification(ctx, tx, h.Notification); err != nil {
					return err
				}
			}
		}
		if len(m.Tags) > 0 {
			var tags []byte
			if err := tx.QueryRow(ctx, `SELECT tags FROM subscribers WHERE id = $1 `+s.d.ForUpdate(), e.SubscriberID).Scan(rawJSONDest{&tags}); err != nil {
				return err
			}
			edited, err := store.EditTags(tags, m.Tags, nil)
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `UPDATE subscribers SET tags = $2 WHERE id = $1`, e.SubscriberID, string(edited)); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `DELETE FROM timers WHERE run_id = $1`, e.ID); err != nil {
			return err
		}
		var ended any
		if m.State != store.EnrollmentActive {
			ended = s.time(m.At)
		}
		if _, err := tx.Exec(ctx, `UPDATE enrollments SET state = $2, current_step = $3, waiting = $4, seq = $5, tick = $6,
			updated_at = $7, ended_at = $8 WHERE id = $1`, e.ID, m.State, m.CurrentStep, m.Waiting, e.Seq+len(m.Steps), e.Tick+1,
			s.time(m.At), ended); err != nil {
			return err
		}
		if m.Due != nil && m.State == store.EnrollmentActive {
			if err := s.insertJourneyTimer(ctx, tx, e.ID, e.Tick+1, e.WebsiteID, e.SubscriberID, *m.Due); err != nil {
				return err
			}
		}
		moved = true
		return nil
	}()
	return moved, err
}

// EnrollmentOfSend finds the enrolment a journey notification was sent
// for.
func (s *Store) EnrollmentOfSend(ctx context.Context, notificationID string) (store.Enrollment, string, error) {
	var e store.Enrollment
	var step string
	err := s.db.Read().QueryRow(ctx, `SELECT `+enrollmentCols+`, h.step_id FROM `+enrollmentFrom+`
		JOIN journey_history h ON h.enrollment_id = e.id WHERE h.notification_id = $1`, notificationID).
		Scan(append(enrollmentDest(&e), &step)...)
	if err != nil {
		return store.Enrollment{}, "", fmt.Errorf("finding the enrolment of a send: %w", s.mapErr(err))
	}
	return e, step, nil
}

// SendInteracted reports whether the last send of an enrolment's step
// was delivered (or clicked).
func (s *Store) SendInteracted(ctx context.Context, enrollmentID, stepID, kind string) (bool, error) {
	kinds := []string{store.InteractionClicked}
	if kind == store.InteractionDelivered {
		kinds = append(kinds, store.InteractionDelivered) // a click is delivered too
	}
	var ok bool
	err := s.db.Read().QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM interactions i WHERE `+s.d.In("i.kind", "$3")+`
		AND i.notification_id = (SELECT notification_id FROM journey_history WHERE enrollment_id = $1 AND step_id = $2
			AND notification_id IS NOT NULL ORDER BY seq DESC LIMIT 1))`, enrollmentID, stepID, s.d.List(kinds)).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("reading a journey send's interactions: %w", err)
	}
	return ok, nil
}

// MigrateEnrollments moves live enrolments to another version, each in
// its own move (locked, its tick moved on, its timers replaced).
func (s *Store) MigrateEnrollments(ctx context.Context, websiteID, journeyID string, from, to int, steps map[string]string, at time.Time) (int, error) {
	moved := 0
	err := s.db.Tx(ctx, TxOptions{}, func(tx Conn) error {
		moved = 0
		rows, err := tx.Query(ctx, `SELECT id, subscriber_id, current_step, tick FROM enrollments
			WHERE website_id = $1 AND journey_id = $2 AND version = $3 AND state = 'active' ORDER BY id `+s.d.ForUpdate(),
			websiteID, journeyID, from)
		list, err := CollectRows(rows, err, func(e *store.Enrollment) []any {
			return []any{&e.ID, &e.SubscriberID, &e.CurrentStep, &e.Tick}
		})
		if err != nil {
			return err
		}
		for _, e := range list {
			step := steps[e.CurrentStep]
			if step == "" {
				return &store.UnmappedStepError{Step: e.CurrentStep}
			}
			if _, err := tx.Exec(ctx, `DELETE FROM timers WHERE run_id = $1`, e.ID); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `UPDATE enrollments SET version = $2, current_step = $3, waiting = $4, tick = tick + 1,
				updated_at = $5 WHERE id = $1`, e.ID, to, step, false, s.time(at)); err != nil {
				return err
			}
			if err := s.insertJourneyTimer(ctx, tx, e.ID, e.Tick+1, websiteID, e.SubscriberID, at); err != nil {
				return err
			}
			moved++
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("migrating enrolments: %w", s.mapErr(err))
	}
	return moved, nil
}
