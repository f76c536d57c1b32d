package sqlstore

import (
	"context"
	"fmt"

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
