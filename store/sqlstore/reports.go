package sqlstore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/relaybell/relaybell/store"
)

// ReportSettings returns the website's report settings, off when none
// were stored.
func (s *Store) ReportSettings(ctx context.Context, websiteID string) (store.ReportSettings, error) {
	var rs store.ReportSettings
	err := s.db.Read().QueryRow(ctx, `SELECT frequency, day, hour, recipients, updated_at
		FROM report_settings WHERE website_id = $1`, websiteID).
		Scan(&rs.Frequency, &rs.Day, &rs.Hour, jsonDest{&rs.Recipients}, timeDest{&rs.UpdatedAt})
	if err = s.mapErr(err); err == store.ErrNotFound {
		return store.ReportSettings{Frequency: store.ReportOff, Recipients: []string{}}, nil
	}
	if err != nil {
		return store.ReportSettings{}, fmt.Errorf("reading report settings: %w", err)
	}
	if rs.Recipients == nil {
		rs.Recipients = []string{}
	}
	return rs, nil
}

// PutReportSettings stores the website's report settings, replacing any.
func (s *Store) PutReportSettings(ctx context.Context, websiteID string, rs store.ReportSettings) error {
	if rs.Recipients == nil {
		rs.Recipients = []string{}
	}
	recipients, err := jsonText(rs.Recipients)
	if err != nil {
		return err
	}
	if _, err := s.db.Write().Exec(ctx, `INSERT INTO report_settings (website_id, frequency, day, hour, recipients, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (website_id) DO UPDATE SET frequency = excluded.frequency, day = excluded.day,
			hour = excluded.hour, recipients = excluded.recipients, updated_at = excluded.updated_at`,
		websiteID, rs.Frequency, rs.Day, rs.Hour, recipients, s.now(rs.UpdatedAt)); err != nil {
		return fmt.Errorf("storing report settings: %w", s.mapErr(err))
	}
	return nil
}

// ReportSchedules lists the websites whose report is not off.
func (s *Store) ReportSchedules(ctx context.Context) ([]store.ReportSchedule, error) {
	rows, err := s.db.Read().Query(ctx, `SELECT website_id, frequency, day, hour, recipients, updated_at
		FROM report_settings WHERE frequency <> 'off' ORDER BY website_id`)
	out, err := CollectRows(rows, err, func(r *store.ReportSchedule) []any {
		return []any{&r.WebsiteID, &r.Settings.Frequency, &r.Settings.Day, &r.Settings.Hour,
			jsonDest{&r.Settings.Recipients}, timeDest{&r.Settings.UpdatedAt}}
	})
	if err != nil {
		return nil, fmt.Errorf("listing report schedules: %w", err)
	}
	return out, nil
}

// ClaimReport leases the website's report of period. The lease's end is
// kept to the millisecond, which both engines store exactly, so that it
// can name the claim.
func (s *Store) ClaimReport(ctx context.Context, websiteID, period string, now time.Time, lease time.Duration) (time.Time, bool, error) {
	until := now.Add(lease).Truncate(time.Millisecond)
	n, err := s.db.Write().Exec(ctx, `INSERT INTO report_ledger (website_id, period, leased_until) VALUES ($1, $2, $3)
		ON CONFLICT (website_id, period) DO UPDATE SET leased_until = excluded.leased_until
		WHERE report_ledger.sent_at IS NULL AND (report_ledger.leased_until IS NULL OR report_ledger.leased_until <= $4)`,
		websiteID, period, s.time(until), s.time(now))
	if err != nil {
		return time.Time{}, false, fmt.Errorf("claiming a report: %w", s.mapErr(err))
	}
	return until, n == 1, nil
}

// SendReport queues mails and records the period sent in one
// transaction, if the claim named by leasedUntil still holds.
func (s *Store) SendReport(ctx context.Context, websiteID, period string, leasedUntil time.Time, mails []store.Email, now time.Time) error {
	err := s.db.Tx(ctx, TxOptions{}, func(tx Conn) error {
		n, err := tx.Exec(ctx, `UPDATE report_ledger SET sent_at = $1, recipients = $2, leased_until = NULL
			WHERE website_id = $3 AND period = $4 AND sent_at IS NULL AND leased_until = $5`,
			s.time(now), len(mails), websiteID, period, s.time(leasedUntil.Truncate(time.Millisecond)))
		if err != nil {
			return err
		}
		if n != 1 {
			return store.ErrConflict
		}
		for _, m := range mails {
			if err := s.insertEmail(ctx, tx, m); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sending a report: %w", err)
	}
	return nil
}

// ReportSent reports whether the website's report of period was sent.
func (s *Store) ReportSent(ctx context.Context, websiteID, period string) (bool, error) {
	var n int64
	if err := s.db.Read().QueryRow(ctx, `SELECT count(*) FROM report_ledger
		WHERE website_id = $1 AND period = $2 AND sent_at IS NOT NULL`, websiteID, period).Scan(&n); err != nil {
		return false, fmt.Errorf("reading the report ledger: %w", err)
	}
	return n > 0, nil
}

// DeliveryTroubleQuery is DeliveryTrouble's query on d, for the engines'
// plan tests: it reads push_ledger_trouble (migration 39), the failed and
// pruned runs of each send named, not its runs sent.
func DeliveryTroubleQuery(d Dialect) string {
	return `SELECT COALESCE(c.push_service, ''), c.outcome, sum(c.pushes)
		FROM notifications n JOIN push_ledger c ON c.notification_seq = n.seq AND c.outcome <> 'sent'
		WHERE n.website_id = $1 AND ` + d.In("n.id", "$2") + `
		GROUP BY 1, 2`
}

// DeliveryTrouble counts the failed and pruned pushes of the website's
// sends named by push service (store.Reports; DeliveryTroubleQuery).
func (s *Store) DeliveryTrouble(ctx context.Context, websiteID string, notificationIDs []string) ([]store.ServiceTrouble, error) {
	if len(notificationIDs) == 0 {
		return nil, nil
	}
	rows, err := s.db.Read().Query(ctx, DeliveryTroubleQuery(s.d), websiteID, s.d.List(notificationIDs))
	type count struct {
		service, outcome string
		n                int64
	}
	counts, err := CollectRows(rows, err, func(c *count) []any { return []any{&c.service, &c.outcome, &c.n} })
	if err != nil {
		return nil, fmt.Errorf("counting the sends' failed pushes: %w", err)
	}
	var out []store.ServiceTrouble
	for _, c := range counts {
		i := slices.IndexFunc(out, func(t store.ServiceTrouble) bool { return t.Service == c.service })
		if i < 0 {
			i, out = len(out), append(out, store.ServiceTrouble{Service: c.service})
		}
		switch c.outcome {
		case store.OutcomeFailed:
			out[i].Failed += c.n
		case store.OutcomePruned:
			out[i].Pruned += c.n
		}
	}
	slices.SortFunc(out, func(a, b store.ServiceTrouble) int { return strings.Compare(a.Service, b.Service) })
	return out, nil
}
