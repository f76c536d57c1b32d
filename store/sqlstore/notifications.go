package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/relaybell/relaybell/store"
)

// notificationCols are a notification's columns, unqualified: SQLite's
// RETURNING cannot name the table, and every query that reads them reads
// notifications alone.
const notificationCols = `id, website_id, seq, status, title, body, content, target,
	target_summary, send_body, transactional, ab, automation, created_at, scheduled_at,
	started_at, finished_at, published_at, error, recipients, processed, sent, delivered,
	failed, pruned, clicked, conversions, click_conversions, revenue, waves, ab_winner, test,
	coalesce(automation_id, ''), coalesce(journey_id, ''), coalesce(journey_step, ''), coalesce(schedule_id, ''), welcome, coalesce(feed_id, '')`

func notificationDest(n *store.Notification) []any {
	return []any{&n.ID, &n.WebsiteID, &n.Seq, &n.Status, &n.Title, &n.Body, rawJSONDest{&n.Content},
		rawJSONDest{&n.Target}, &n.TargetSummary, rawJSONDest{&n.SendBody}, &n.Transactional, &n.AB,
		&n.Automation, timeDest{&n.CreatedAt}, timePtrDest{&n.ScheduledAt}, timePtrDest{&n.StartedAt},
		timePtrDest{&n.FinishedAt}, timePtrDest{&n.PublishedAt}, &n.Error, &n.Recipients, &n.Processed,
		&n.Sent, &n.Delivered, &n.Failed, &n.Pruned, &n.Clicked, &n.Conversions, &n.ClickConversions, &n.Revenue, &n.Waves,
		&n.ABWinner, &n.Test, &n.AutomationID, &n.JourneyID, &n.JourneyStep, &n.ScheduleID, &n.Welcome, &n.FeedID}
}

// queryNotifications reads every row of a query of notificationCols on c.
func queryNotifications(ctx context.Context, c Conn, query string, args ...any) ([]store.Notification, error) {
	rows, err := c.Query(ctx, query, args...)
	return CollectRows(rows, err, notificationDest)
}

// CreateNotification stores n and sets n.Seq, which is strictly greater than
// that of every notification created before. An empty n.ID gets a new UUID
// and a zero CreatedAt the current time (as stored). A duplicate id is
// store.ErrConflict, an unknown website store.ErrNotFound. The JSON
// documents are kept as the text written.
func (s *Store) CreateNotification(ctx context.Context, n *store.Notification) error {
	if n.ID == "" {
		n.ID = store.NewID()
	}
	if n.CreatedAt.IsZero() {
		n.CreatedAt = s.storedTime(time.Now())
	}
	err := s.db.Tx(ctx, TxOptions{}, func(tx Conn) error { return s.insertNotification(ctx, tx, n) })
	if err != nil {
		return fmt.Errorf("creating notification: %w", s.mapErr(err))
	}
	return nil
}

// insertNotification inserts n, with its id and creation time set, and
// its segment links, and sets n.Seq.
func (s *Store) insertNotification(ctx context.Context, tx Conn, n *store.Notification) error {
	var seq int64
	if err := tx.QueryRow(ctx, notificationInsertOne, s.notificationArgs(n)...).Scan(&seq); err != nil {
		return err
	}
	n.Seq = seq
	return s.addNotificationSegments(ctx, tx, n)
}

// notificationInsertCols are the columns a new notification is stored
// with, in notificationArgs' order.
const notificationInsertCols = `id, website_id, status, title, body, content,
	target, target_summary, send_body, transactional, ab, automation, created_at, scheduled_at, started_at,
	finished_at, published_at, error, recipients, processed, sent, delivered, failed, pruned, clicked,
	conversions, revenue, search, test, automation_id, journey_id, journey_step, schedule_id, welcome, feed_id`

// notificationInsertN is how many columns notificationInsertCols names.
var notificationInsertN = strings.Count(notificationInsertCols, ",") + 1

// notificationInsertOne stores one notification and returns its seq.
var notificationInsertOne = `INSERT INTO notifications (` + notificationInsertCols + `) VALUES ` +
	valuesList(1, notificationInsertN, nil) + ` RETURNING seq`

// notificationArgs are n's values of notificationInsertCols.
func (s *Store) notificationArgs(n *store.Notification) []any {
	return []any{n.ID, n.WebsiteID, n.Status, n.Title, n.Body, nullBytes(n.Content), nullBytes(n.Target),
		n.TargetSummary, nullBytes(n.SendBody), n.Transactional, n.AB, n.Automation, s.time(n.CreatedAt),
		s.timePtr(n.ScheduledAt), s.timePtr(n.StartedAt), s.timePtr(n.FinishedAt), s.timePtr(n.PublishedAt),
		n.Error, n.Recipients, n.Processed, n.Sent, n.Delivered, n.Failed, n.Pruned, n.Clicked, n.Conversions,
		n.Revenue, store.SearchText(n.Title, n.Body), n.Test, nullString(n.AutomationID),
		nullString(n.JourneyID), nullString(n.JourneyStep), nullString(n.ScheduleID), n.Welcome, nullString(n.FeedID)}
}

// insertNotifications stores new notifications in tx with multi-row
// INSERTs (rowsPerInsert a statement), and sets each one's Seq.
func (s *Store) insertNotifications(ctx context.Context, tx Conn, ns []*store.Notification) error {
	for chunk := range slices.Chunk(ns, rowsPerInsert) {
		args := make([]any, 0, len(chunk)*notificationInsertN)
		for _, n := range chunk {
			args = append(args, s.notificationArgs(n)...)
		}
		rows, err := tx.Query(ctx, `INSERT INTO notifications (`+notificationInsertCols+`) VALUES `+
			valuesList(len(chunk), notificationInsertN, nil)+` RETURNING id, seq`, args...)
		type idSeq struct {
			id  string
			seq int64
		}
		got, err := CollectRows(rows, err, func(r *idSeq) []any { return []any{&r.id, &r.seq} })
		if err != nil {
			return err
		}
		seqs := make(map[string]int64, len(got))
		for _, r := range got {
			seqs[r.id] = r.seq
		}
		for _, n := range chunk {
			seq, ok := seqs[n.ID]
			if !ok {
				return fmt.Errorf("notification %s: no seq returned", n.ID)
			}
			n.Seq = seq
			if err := s.addNotificationSegments(ctx, tx, n); err != nil {
				return err
			}
		}
	}
	return nil
}

// rowsPerInsert bounds the rows of one multi-row statement, so that its
// arguments stay far below either engine's limit (SQLite's 32,766).
const rowsPerInsert = 200

// valuesList is the VALUES rows of a multi-row statement: rows rows of
// cols placeholders each, numbered from $1; casts, when not nil, wraps a
// column's placeholder (CAST(… AS INTEGER) for a type PostgreSQL would
// not infer).
func valuesList(rows, cols int, casts map[int]string) string {
	var b strings.Builder
	b.Grow(rows * cols * 6)
	for r := range rows {
		if r > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('(')
		for c := range cols {
			if c > 0 {
				b.WriteString(", ")
			}
			p := "$" + strconv.Itoa(r*cols+c+1)
			if t, ok := casts[c]; ok {
				p = "CAST(" + p + " AS " + t + ")"
			}
			b.WriteString(p)
		}
		b.WriteByte(')')
	}
	return b.String()
}

// addNotificationSegments links n to its saved segments, each once.
func (s *Store) addNotificationSegments(ctx context.Context, tx Conn, n *store.Notification) error {
	if len(n.Segments) == 0 {
		return nil
	}
	// WHERE true: SQLite would read ON CONFLICT as the join's ON.
	_, err := tx.Exec(ctx, `INSERT INTO notification_segments (segment_id, notification_id)
		SELECT DISTINCT value, $2 FROM `+s.d.Elems("$1")+` WHERE true ON CONFLICT DO NOTHING`,
		s.d.List(n.Segments), n.ID)
	return err
}

// CountDrafts counts the website's drafts.
func (s *Store) CountDrafts(ctx context.Context, websiteID string) (int, error) {
	var n int
	if err := s.db.Read().QueryRow(ctx, `SELECT count(*) FROM notifications WHERE website_id = $1 AND status = 'draft'`,
		websiteID).Scan(&n); err != nil {
		return 0, fmt.Errorf("counting drafts: %w", err)
	}
	return n, nil
}

// ReplaceDraft rewrites a draft; a sent one takes the next seq
// (Dialect.NewSeq). The draft's row is locked first, so a concurrent
// DeleteDraft or ReplaceDraft waits (PostgreSQL).
func (s *Store) ReplaceDraft(ctx context.Context, n *store.Notification) error {
	err := s.db.Tx(ctx, TxOptions{}, func(tx Conn) error {
		if err := s.lockDraft(ctx, tx, n.WebsiteID, n.ID); err != nil {
			return err
		}
		seq := ""
		if n.Status != store.StatusDraft {
			seq = "seq = " + s.d.NewSeq("notifications") + ", "
		}
		if err := tx.QueryRow(ctx, `UPDATE notifications SET `+seq+`status = $1, title = $2, body = $3,
			content = $4, target = $5, target_summary = $6, send_body = $7, transactional = $8, ab = $9,
			created_at = $10, scheduled_at = $11, search = $12 WHERE id = $13 RETURNING seq`,
			n.Status, n.Title, n.Body, nullBytes(n.Content), nullBytes(n.Target), n.TargetSummary,
			nullBytes(n.SendBody), n.Transactional, n.AB, s.time(n.CreatedAt), s.timePtr(n.ScheduledAt),
			store.SearchText(n.Title, n.Body), n.ID).Scan(&n.Seq); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM notification_segments WHERE notification_id = $1`, n.ID); err != nil {
			return err
		}
		return s.addNotificationSegments(ctx, tx, n)
	})
	if err != nil {
		return fmt.Errorf("replacing draft: %w", s.mapErr(err))
	}
	return nil
}

// lockDraft locks a draft's row: store.ErrNotFound without one,
// store.ErrConflict unless it is a draft.
func (s *Store) lockDraft(ctx context.Context, tx Conn, websiteID, id string) error {
	var status string
	if err := tx.QueryRow(ctx, `SELECT status FROM notifications WHERE id = $1 AND website_id = $2 `+s.d.ForUpdate(),
		id, websiteID).Scan(&status); err != nil {
		return err
	}
	if status != store.StatusDraft {
		return store.ErrConflict
	}
	return nil
}

// DeleteDraft removes a draft.
func (s *Store) DeleteDraft(ctx context.Context, websiteID, id string) error {
	err := s.db.Tx(ctx, TxOptions{}, func(tx Conn) error {
		if err := s.lockDraft(ctx, tx, websiteID, id); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM notifications WHERE id = $1`, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("deleting draft: %w", s.mapErr(err))
	}
	return nil
}

// CancelNotification cancels a scheduled or held send.
func (s *Store) CancelNotification(ctx context.Context, websiteID, id string, at time.Time) error {
	if err := affected(s.db.Write().Exec(ctx, `UPDATE notifications SET status = 'canceled', finished_at = $1
		WHERE id = $2 AND website_id = $3 AND status IN ('scheduled', 'held_for_review')`,
		s.now(at), id, websiteID)); err != nil {
		return fmt.Errorf("canceling notification: %w", err)
	}
	return nil
}

// Notification returns one of the website's notifications.
func (s *Store) Notification(ctx context.Context, websiteID, id string) (store.Notification, error) {
	return s.notification(ctx, `id = $1 AND website_id = $2`, id, websiteID)
}

// NotificationByID returns a notification of any website (for the roles
// behind the bus, which carry only the id).
func (s *Store) NotificationByID(ctx context.Context, id string) (store.Notification, error) {
	return s.notification(ctx, `id = $1`, id)
}

func (s *Store) notification(ctx context.Context, where string, args ...any) (store.Notification, error) {
	var n store.Notification
	err := s.db.Read().QueryRow(ctx, `SELECT `+notificationCols+` FROM notifications WHERE `+where, args...).
		Scan(notificationDest(&n)...)
	if err != nil {
		return store.Notification{}, fmt.Errorf("loading notification: %w", s.mapErr(err))
	}
	return n, nil
}

// ListNotifications pages a website's notifications newest first. A Limit of
// 0 or less means no limit. Q is looked for in the search column
// (store.SearchText), folded in Go, so neither SQLite's lower() (ASCII
// only) nor PostgreSQL's ctype plays a part: the folded query is a plain
// substring of it (Dialect.Contains).
func (s *Store) ListNotifications(ctx context.Context, q store.ListQuery) ([]store.Notification, error) {
	before := q.BeforeSeq
	if before <= 0 {
		before = math.MaxInt64
	}
	args := []any{q.WebsiteID, before}
	where := `website_id = $1 AND seq < $2`
	// and adds a condition on the next argument, written $? in cond.
	and := func(cond string, arg any) {
		args = append(args, arg)
		where += " AND " + strings.ReplaceAll(cond, "$?", "$"+strconv.Itoa(len(args)))
	}
	if len(q.Statuses) > 0 {
		and(s.d.In("status", "$?"), s.d.List(q.Statuses))
	} else {
		where += ` AND status <> 'draft'`
	}
	if !q.From.IsZero() {
		and(`created_at >= $?`, s.time(q.From))
	}
	if !q.To.IsZero() {
		and(`created_at < $?`, s.time(q.To))
	}
	if folded := store.FoldSearch(q.Q); folded != "" {
		and(s.d.Contains("search", "$?"), folded)
	}
	if q.ScheduleID != "" {
		and(`schedule_id = $?`, q.ScheduleID)
	}
	if q.FeedID != "" {
		and(`feed_id = $?`, q.FeedID)
	}
	args = append(args, limitArg(q.Limit))
	out, err := queryNotifications(ctx, s.db.Read(), `SELECT `+notificationCols+` FROM notifications
		WHERE `+where+` ORDER BY seq DESC LIMIT $`+strconv.Itoa(len(args)), args...)
	if err != nil {
		return nil, fmt.Errorf("listing notifications: %w", err)
	}
	return out, nil
}

// MarkPublished records that the send intent reached the bus.
func (s *Store) MarkPublished(ctx context.Context, id string, at time.Time) error {
	if err := affected(s.db.Write().Exec(ctx, `UPDATE notifications SET published_at = $1 WHERE id = $2`,
		s.now(at), id)); err != nil {
		return fmt.Errorf("marking notification published: %w", err)
	}
	return nil
}

// MarkAllPublished records the intents of many sends published, with one
// UPDATE.
func (s *Store) MarkAllPublished(ctx context.Context, ids []string, at time.Time) error {
	if len(ids) == 0 {
		return nil
	}
	if _, err := s.db.Write().Exec(ctx, `UPDATE notifications SET published_at = $1 WHERE `+s.d.In("id", "$2"),
		s.now(at), s.d.List(ids)); err != nil {
		return fmt.Errorf("marking notifications published: %w", err)
	}
	return nil
}

// Unpublished lists, oldest first, queued sends whose intent never reached
// the bus and that were created before the given time. A limit of 0 or
// less means no limit.
func (s *Store) Unpublished(ctx context.Context, before time.Time, limit int) ([]store.Notification, error) {
	out, err := queryNotifications(ctx, s.db.Read(), `SELECT `+notificationCols+` FROM notifications
		WHERE status = 'queued' AND published_at IS NULL AND created_at < $1
		ORDER BY created_at, seq LIMIT $2`, s.time(before), limitArg(limit))
	if err != nil {
		return nil, fmt.Errorf("listing unpublished notifications: %w", err)
	}
	return out, nil
}

// DueScheduled moves up to limit scheduled sends due at dueAt to queued and
// returns them, earliest first (a limit of 0 or less: all). Concurrent
// callers (several nodes) never get the same send: on PostgreSQL each locks
// the rows it picks and skips those another caller has locked, so they
// also don't wait for each other; SQLite's one writer runs the statement
// alone. The picked rows are a MATERIALIZED CTE: as an IN (subquery) the
// PostgreSQL planner may run the subquery again per row, and a second run,
// no longer seeing the rows this statement already changed, picks more.
func (s *Store) DueScheduled(ctx context.Context, dueAt time.Time, limit int) ([]store.Notification, error) {
	out, err := queryNotifications(ctx, s.db.Write(), `WITH due (due_seq) AS MATERIALIZED (
			SELECT seq FROM notifications
			WHERE status = 'scheduled' AND scheduled_at <= $1
			ORDER BY scheduled_at, seq LIMIT $2
			`+s.d.SkipLocked()+`
		)
		UPDATE notifications SET status = 'queued'
		FROM due WHERE seq = due.due_seq AND status = 'scheduled'
		RETURNING `+notificationCols, s.time(dueAt), limitArg(limit))
	if err != nil {
		return nil, fmt.Errorf("queueing due notifications: %w", err)
	}
	// RETURNING order is unspecified.
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].ScheduledAt, out[j].ScheduledAt
		if !a.Equal(*b) {
			return a.Before(*b)
		}
		return out[i].Seq < out[j].Seq
	})
	return out, nil
}

// StartSending moves a queued send to sending and returns it; a send already
// sending is returned unchanged. Any other status is store.ErrConflict.
// The move is one conditional UPDATE, so of concurrent calls exactly one
// records the waves.
func (s *Store) StartSending(ctx context.Context, id string, at time.Time, waves ...time.Time) (store.Notification, error) {
	var n store.Notification
	err := s.db.Tx(ctx, TxOptions{}, func(tx Conn) error {
		n = store.Notification{}
		err := tx.QueryRow(ctx, `UPDATE notifications SET status = 'sending', started_at = $1, waves = $2
			WHERE id = $3 AND status = 'queued' RETURNING `+notificationCols, s.now(at), len(waves), id).
			Scan(notificationDest(&n)...)
		if errors.Is(err, sql.ErrNoRows) {
			// Not queued (any more): a concurrent call may have started it.
			if err := tx.QueryRow(ctx, `SELECT `+notificationCols+` FROM notifications WHERE id = $1`, id).
				Scan(notificationDest(&n)...); err != nil {
				return err
			}
			if n.Status != store.StatusSending {
				return fmt.Errorf("%w: notification is %s", store.ErrConflict, n.Status)
			}
			return nil
		}
		if err != nil {
			return err
		}
		args := make([][]any, len(waves))
		for i, due := range waves {
			args[i] = []any{id, i, s.time(due)}
		}
		return execEach(ctx, tx, `INSERT INTO notification_waves (notification_id, wave, due_at) VALUES ($1, $2, $3)`, args)
	})
	if err != nil {
		return store.Notification{}, fmt.Errorf("starting send: %w", s.mapErr(err))
	}
	return n, nil
}

// FailNotification turns a scheduled, queued, held or sending notification
// into failed with a reason. A draft or a finished one is store.ErrConflict.
func (s *Store) FailNotification(ctx context.Context, id, reason string, at time.Time) error {
	n, err := s.db.Write().Exec(ctx, `UPDATE notifications SET status = 'failed', error = $1, finished_at = $2
		WHERE id = $3 AND status IN ('scheduled', 'queued', 'held_for_review', 'sending')`, reason, s.now(at), id)
	if err == nil && n == 0 {
		var status string
		err = s.db.Read().QueryRow(ctx, `SELECT status FROM notifications WHERE id = $1`, id).Scan(&status)
		if err == nil {
			err = fmt.Errorf("%w: notification is %s", store.ErrConflict, status)
		}
	}
	if err != nil {
		return fmt.Errorf("failing notification: %w", s.mapErr(err))
	}
	return nil
}
