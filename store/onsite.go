package store

import (
	"context"
	"time"
)

// TimerWelcome is the Kind of a timer that sends a new browser's welcome
// notification: its RunID is the endpoint's id, its Item 0.
const TimerWelcome = "welcome"

// Names of a website's settings documents (SiteSettings).
const (
	SettingsPrompt  = "prompt"
	SettingsWelcome = "welcome"
)

// What the browser SDK counts of a prompt or an on-site message.
const (
	OnsiteImpression = "impression"
	OnsiteAccept     = "accept"
	OnsiteDismiss    = "dismiss"
	OnsiteClick      = "click"
)

// OnsiteMessage is a website's on-site message: a banner, modal or
// slide-in the browser SDK shows on the website's pages. Definition is
// the JSON package onsite reads; the store keeps it as written.
type OnsiteMessage struct {
	ID         string
	WebsiteID  string
	Name       string
	Status     string
	Definition []byte
	CreatedAt  time.Time
	UpdatedAt  time.Time
	// Counts are filled by ListOnsiteMessages and OnsiteMessage: by kind
	// (OnsiteImpression, OnsiteClick, OnsiteDismiss).
	Counts map[string]int64
}

// Welcome is what FireWelcome does with a claimed welcome timer.
type Welcome struct {
	// Notification is the welcome send; nil records the endpoint in the
	// ledger without sending (the welcome was turned off meanwhile).
	Notification *Notification
	At           time.Time
}

// Onsite holds what the website shows on its own pages: the prompt and
// welcome settings, on-site messages, what the SDK counted of them, and
// the welcome notifications' ledger.
type Onsite interface {
	// SiteSettings reads one of the website's settings documents
	// (SettingsPrompt, SettingsWelcome); nil when it was never set.
	SiteSettings(ctx context.Context, websiteID, name string) ([]byte, error)
	// PutSiteSettings stores one of the website's settings documents.
	// ErrNotFound for an unknown website.
	PutSiteSettings(ctx context.Context, websiteID, name string, body []byte, at time.Time) error
	// ListOnsiteMessages lists the website's messages, newest first,
	// with their counts.
	ListOnsiteMessages(ctx context.Context, websiteID string) ([]OnsiteMessage, error)
	// OnsiteMessage finds one of the website's messages, with its
	// counts. ErrNotFound for another website's or an unknown id.
	OnsiteMessage(ctx context.Context, websiteID, id string) (OnsiteMessage, error)
	// CreateOnsiteMessage stores a new message. ErrNotFound for an
	// unknown website.
	CreateOnsiteMessage(ctx context.Context, m OnsiteMessage) error
	// UpdateOnsiteMessage replaces a message's name, status, definition
	// and UpdatedAt. ErrNotFound for an unknown id.
	UpdateOnsiteMessage(ctx context.Context, m OnsiteMessage) error
	// DeleteOnsiteMessage removes one of the website's messages with its
	// counts. ErrNotFound for an unknown id.
	DeleteOnsiteMessage(ctx context.Context, websiteID, id string) error
	// CountOnsite adds n to the count of kind of the subject (a message's
	// id, or "prompt:" and a prompt kind) of the website.
	CountOnsite(ctx context.Context, websiteID, subject, kind string, n int64) error
	// OnsiteCounts reads the website's counts of subjects beginning with
	// prefix: subject, then kind.
	OnsiteCounts(ctx context.Context, websiteID, prefix string) (map[string]map[string]int64, error)
	// FireWelcome does a claimed welcome timer exactly once, in one
	// transaction: it removes the timer (none left: fired already, and it
	// returns false and changes nothing), finds its endpoint (gone: it
	// returns false), writes the welcome ledger row of the endpoint's URL
	// (there already: the endpoint had its welcome, and it returns false)
	// and stores w.Notification. sent reports a notification stored.
	FireWelcome(ctx context.Context, t Timer, w Welcome) (sent bool, err error)
	// WelcomeSent reports whether the website's welcome ledger holds the
	// endpoint URL.
	WelcomeSent(ctx context.Context, websiteID, endpointURL string) (bool, error)
}
