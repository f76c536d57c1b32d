package store

import (
	"context"
	"time"
)

// Report frequencies.
const (
	ReportOff     = "off"
	ReportDaily   = "daily"
	ReportWeekly  = "weekly"
	ReportMonthly = "monthly"
)

// ReportSettings is a website's report by mail: how often, when in the
// website's time zone, and to which members of the account.
type ReportSettings struct {
	Frequency string
	// Day is mon…sun for a weekly report, "1"…"28" for a monthly one, ""
	// otherwise.
	Day        string
	Hour       int
	Recipients []string
	UpdatedAt  time.Time
}

// Reports holds the websites' report settings.
type Reports interface {
	// ReportSettings returns the website's settings: Frequency off and no
	// recipients when none were stored.
	ReportSettings(ctx context.Context, websiteID string) (ReportSettings, error)
	// PutReportSettings stores the website's settings, replacing any.
	PutReportSettings(ctx context.Context, websiteID string, rs ReportSettings) error
}
