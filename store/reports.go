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
	// DeliveryTrouble counts the failed and pruned pushes of the
	// website's sends named (notification ids; another website's are not
	// counted) by the push service of their endpoints, one line per
	// service with any, in order of service. Results recorded without a
	// service (PushResult.Service "") count under "".
	DeliveryTrouble(ctx context.Context, websiteID string, notificationIDs []string) ([]ServiceTrouble, error)
	ReportsLedger
}

// ServiceTrouble is the failed and pruned pushes to one push service.
type ServiceTrouble struct {
	Service        string
	Failed, Pruned int64
}

// ReportSchedule is a website whose report is on, with its settings.
type ReportSchedule struct {
	WebsiteID string
	Settings  ReportSettings
}

// ReportsLedger keeps the reports sent, one per website and period.
type ReportsLedger interface {
	// ReportSchedules lists the websites whose report is not off.
	ReportSchedules(ctx context.Context) ([]ReportSchedule, error)
	// ClaimReport leases the website's report of period (its first day,
	// YYYY-MM-DD) until now+lease: false when it was sent, or another
	// claim holds it. The lease's end is the claim's token.
	ClaimReport(ctx context.Context, websiteID, period string, now time.Time, lease time.Duration) (time.Time, bool, error)
	// SendReport queues mails in the outbox and records the period sent,
	// in one transaction, if the claim whose token is leasedUntil still
	// holds it: ErrConflict (and nothing queued) otherwise.
	SendReport(ctx context.Context, websiteID, period string, leasedUntil time.Time, mails []Email, now time.Time) error
	// ReportSent reports whether the website's report of period was sent.
	ReportSent(ctx context.Context, websiteID, period string) (bool, error)
}
