package clickhouse

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/relaybell/relaybell/analytics"
)

// Store is the ClickHouse analytics store.
type Store struct {
	conn      driver.Conn
	database  string
	table     string // `database`.events, where events are kept
	behaviors string // `database`.behaviors, where behaviors are kept
	logger    *slog.Logger
}

var _ analytics.Store = (*Store)(nil)

// The table is ordered for the per-notification reads and partitioned by
// UTC day for retention. Low-cardinality columns use LowCardinality(String);
// servers before 19.x need allow_experimental_low_cardinality_type=1 to
// create it, which Open sets only for them.
const createTable = `CREATE TABLE IF NOT EXISTS %s (
	website_id String,
	notification_id String,
	endpoint_id String,
	subscriber_id String,
	kind LowCardinality(String),
	device LowCardinality(String),
	language LowCardinality(String),
	variant LowCardinality(String),
	code LowCardinality(String),
	at DateTime('UTC')
) ENGINE = MergeTree()
PARTITION BY toYYYYMMDD(at)
ORDER BY (website_id, notification_id, kind, endpoint_id)`

// Events used to be written through a Buffer table, events_buffer, which
// held up to 2 s of them in the server's memory; Open drops it, which moves
// what it holds into events. Writers now reach events through
// analytics.Journal's sinks: about one insert a second from each.
const dropBuffer = `DROP TABLE IF EXISTS %s`

const insertColumns = `(website_id, notification_id, endpoint_id, subscriber_id, kind, device, language, variant, code, at)`

// Open connects to ClickHouse and creates the database and the events and
// behaviors tables when they are missing.
func Open(ctx context.Context, cfg Config, logger *slog.Logger) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	conn, err := clickhouse.Open(&clickhouse.Options{
		Addr: cfg.addrs(),
		// No database here: it may not exist yet, so every query names it.
		Auth:        clickhouse.Auth{Username: cfg.Username, Password: cfg.Password},
		DialTimeout: 5 * time.Second,
		Logger:      logger,
	})
	if err != nil {
		return nil, fmt.Errorf("opening clickhouse: %w", err)
	}
	s := &Store{conn: conn, database: cfg.Database, table: "`" + cfg.Database + "`.events",
		behaviors: "`" + cfg.Database + "`.behaviors", logger: logger}
	if err := s.migrate(ctx, cfg.Database); err != nil {
		conn.Close()
		return nil, err
	}
	return s, nil
}

func (s *Store) migrate(ctx context.Context, database string) error {
	if err := s.conn.Ping(ctx); err != nil {
		return fmt.Errorf("connecting to clickhouse: %w", err)
	}
	if err := s.conn.Exec(ctx, "CREATE DATABASE IF NOT EXISTS `"+database+"`"); err != nil {
		return fmt.Errorf("creating analytics database: %w", err)
	}
	v, err := s.conn.ServerVersion()
	if err != nil {
		return fmt.Errorf("reading clickhouse version: %w", err)
	}
	if v.Version.Major < 19 {
		ctx = clickhouse.Context(ctx, clickhouse.WithSettings(clickhouse.Settings{
			"allow_experimental_low_cardinality_type": 1,
		}))
	}
	if err := s.conn.Exec(ctx, fmt.Sprintf(createTable, s.table)); err != nil {
		return fmt.Errorf("creating analytics table: %w", err)
	}
	if err := s.conn.Exec(ctx, fmt.Sprintf(createBehaviors, s.behaviors)); err != nil {
		return fmt.Errorf("creating behaviors table: %w", err)
	}
	if err := s.addSeq(ctx, database); err != nil {
		return fmt.Errorf("adding the behaviors' seq: %w", err)
	}
	if err := s.conn.Exec(ctx, fmt.Sprintf(dropBuffer, "`"+database+"`.events_buffer")); err != nil {
		return fmt.Errorf("dropping the old analytics buffer: %w", err)
	}
	return nil
}

// addSeq adds the behaviors' seq column to a table from before it (18.16
// has no ADD COLUMN IF NOT EXISTS).
func (s *Store) addSeq(ctx context.Context, database string) error {
	var n uint64
	if err := s.conn.QueryRow(ctx, `SELECT count() FROM system.columns WHERE database = ? AND table = 'behaviors' AND name = 'seq'`,
		database).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	return s.conn.Exec(ctx, `ALTER TABLE `+s.behaviors+` ADD COLUMN seq Int64 DEFAULT 0`)
}

// Record appends events in one batch.
func (s *Store) Record(ctx context.Context, events []analytics.Event) error {
	if len(events) == 0 {
		return nil
	}
	if err := analytics.Check(events); err != nil {
		return fmt.Errorf("recording events: %w", err)
	}
	batch, err := s.conn.PrepareBatch(ctx, "INSERT INTO "+s.table+" "+insertColumns)
	if err != nil {
		return fmt.Errorf("recording events: %w", err)
	}
	defer batch.Abort()
	for _, e := range events {
		if err := batch.Append(e.WebsiteID, e.NotificationID, e.EndpointID, e.SubscriberID, e.Kind,
			e.Device, e.Language, e.Variant, e.Code, e.At.UTC()); err != nil {
			return fmt.Errorf("recording events: %w", err)
		}
	}
	if err := batch.Send(); err != nil {
		return fmt.Errorf("recording events: %w", err)
	}
	return nil
}

// Report reads one notification's breakdowns. Clicks are attributed to the
// device, language and variant of the push that was sent to that endpoint.
// Browsers are counted, not events: the sinks are at-least-once, and a
// pusher that dies after journaling its events but before recording its
// results has its batch pushed again, so an event may be there twice.
func (s *Store) Report(ctx context.Context, websiteID, notificationID string) (analytics.Report, error) {
	var r analytics.Report
	rows, err := s.conn.Query(ctx, `
		SELECT device, language, variant, uniqExact(endpoint_id),
			uniqExactIf(endpoint_id, endpoint_id IN (SELECT endpoint_id FROM `+s.table+`
				WHERE website_id = ? AND notification_id = ? AND kind = 'clicked'))
		FROM `+s.table+`
		WHERE website_id = ? AND notification_id = ? AND kind = 'sent'
		GROUP BY device, language, variant`, websiteID, notificationID, websiteID, notificationID)
	if err != nil {
		return r, fmt.Errorf("reading report: %w", err)
	}
	var b analytics.Breakdown
	for rows.Next() {
		var device, language, variant string
		var sent, clicked uint64
		if err := rows.Scan(&device, &language, &variant, &sent, &clicked); err != nil {
			rows.Close()
			return r, fmt.Errorf("reading report: %w", err)
		}
		b.Add(device, language, variant, int64(sent), int64(clicked))
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return r, fmt.Errorf("reading report: %w", err)
	}
	b.Fill(&r)

	erows, err := s.conn.Query(ctx, `SELECT code, uniqExact(endpoint_id) AS n FROM `+s.table+`
		WHERE website_id = ? AND notification_id = ? AND kind IN ('failed', 'expired')
		GROUP BY code ORDER BY n DESC, code`, websiteID, notificationID)
	if err != nil {
		return r, fmt.Errorf("reading errors: %w", err)
	}
	defer erows.Close()
	for erows.Next() {
		var code string
		var n uint64
		if err := erows.Scan(&code, &n); err != nil {
			return r, fmt.Errorf("reading errors: %w", err)
		}
		if code == "expired" {
			r.Expired += int64(n)
		}
		r.Errors = append(r.Errors, analytics.ErrorRow{Code: code, Count: int64(n)})
	}
	if err := erows.Err(); err != nil {
		return r, fmt.Errorf("reading errors: %w", err)
	}
	return r, nil
}

// Close closes the connections.
func (s *Store) Close() error { return s.conn.Close() }

// PersonEvents lists the events of the website's subscribers, newest first,
// each once.
func (s *Store) PersonEvents(ctx context.Context, websiteID string, subscriberIDs, kinds []string, limit int) ([]analytics.Event, error) {
	where, args := "", []any{websiteID, subscriberIDs}
	if len(kinds) > 0 {
		where, args = " AND has(?, kind)", append(args, kinds)
	}
	// An event written twice (the sinks are at-least-once) is listed once.
	rows, err := s.conn.Query(ctx, `SELECT website_id, notification_id, endpoint_id, any(subscriber_id), kind,
			any(device), any(language), any(variant), any(code), min(at) AS first
		FROM `+s.table+` WHERE website_id = ? AND has(?, subscriber_id)`+where+`
		GROUP BY website_id, notification_id, endpoint_id, kind
		ORDER BY first DESC LIMIT ?`, append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("reading person events: %w", err)
	}
	defer rows.Close()
	out := []analytics.Event{}
	for rows.Next() {
		var e analytics.Event
		if err := rows.Scan(&e.WebsiteID, &e.NotificationID, &e.EndpointID, &e.SubscriberID, &e.Kind,
			&e.Device, &e.Language, &e.Variant, &e.Code, &e.At); err != nil {
			return nil, fmt.Errorf("reading person events: %w", err)
		}
		e.At = e.At.UTC()
		out = append(out, e)
	}
	return out, rows.Err()
}

// PersonCounts counts the events of the website's subscribers by kind, an
// event written twice once.
func (s *Store) PersonCounts(ctx context.Context, websiteID string, subscriberIDs []string) (map[string]int64, error) {
	rows, err := s.conn.Query(ctx, `SELECT kind, uniqExact(notification_id, endpoint_id) FROM `+s.table+`
		WHERE website_id = ? AND has(?, subscriber_id) GROUP BY kind`, websiteID, subscriberIDs)
	if err != nil {
		return nil, fmt.Errorf("counting person events: %w", err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var (
			kind string
			n    uint64
		)
		if err := rows.Scan(&kind, &n); err != nil {
			return nil, fmt.Errorf("counting person events: %w", err)
		}
		out[kind] = int64(n)
	}
	return out, rows.Err()
}

// Erase deletes every event of the website's subscribers, and their
// behaviors and those logged under the external ids. ClickHouse runs each
// deletion as a mutation in the background: the rows are gone from reads
// once it finishes, usually within a second.
func (s *Store) Erase(ctx context.Context, websiteID string, subscriberIDs, externalIDs []string) error {
	subs, exts := analytics.NonEmpty(subscriberIDs), analytics.NonEmpty(externalIDs)
	if len(subs) > 0 {
		if err := s.conn.Exec(ctx, `ALTER TABLE `+s.table+` DELETE WHERE website_id = ? AND has(?, subscriber_id)`,
			websiteID, subs); err != nil {
			return fmt.Errorf("erasing events: %w", err)
		}
	}
	var terms []string
	args := []any{websiteID}
	if len(subs) > 0 {
		terms, args = append(terms, "has(?, subscriber_id)"), append(args, subs)
	}
	if len(exts) > 0 {
		terms, args = append(terms, "has(?, external_id)"), append(args, exts)
	}
	if len(terms) == 0 {
		return nil
	}
	if err := s.conn.Exec(ctx, `ALTER TABLE `+s.behaviors+` DELETE WHERE website_id = ? AND (`+strings.Join(terms, " OR ")+`)`,
		args...); err != nil {
		return fmt.Errorf("erasing behaviors: %w", err)
	}
	return nil
}
