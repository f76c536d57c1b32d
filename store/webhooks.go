package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
)

// Webhook is a customer's receiver of events (spec 2.9).
type Webhook struct {
	ID        string
	WebsiteID string
	URL       string
	// Events are the subscribed event names; empty means every event.
	Events []string
	// Secret (whsec_…) keys the signatures. It must be kept in clear to
	// sign; the API shows it only when the webhook is created.
	Secret              string
	Enabled             bool
	LastStatus          *int // HTTP status of the last attempt; 0 when no answer came
	LastFiredAt         *time.Time
	ConsecutiveFailures int        // deliveries failed in a row since the last success
	FailingSince        *time.Time // first failed attempt since the last success
	DisabledReason      string     // "" when none
	DisabledAt          *time.Time
	CreatedAt           time.Time
}

// Webhook delivery statuses of spec 3.2.
const (
	DeliveryPending   = "pending"
	DeliveryRetrying  = "retrying"
	DeliverySucceeded = "succeeded"
	DeliveryFailed    = "failed"
)

// Reasons the service turns a webhook off (spec 2.9). A webhook turned off
// because its receiver answered 410 has no reason ("").
const (
	DisabledFailed50    = "failed_50_in_a_row"
	DisabledFailing3Day = "failing_for_3_days"
)

// WebhookDelivery is one event (or test) for one webhook, with the state of
// its attempts (spec 2.10).
type WebhookDelivery struct {
	Seq       int64  // assigned by the store; orders the log (newest first)
	ID        string // also the X-RelayBell-Delivery header
	WebhookID string
	WebsiteID string
	Event     string
	// EventID is the outbox event it delivers; "" for a test. A webhook
	// gets at most one delivery per event.
	EventID string
	Body    []byte // the exact body every attempt signs and sends
	Status  string // Delivery*
	// Attempts counts every attempt, resends included; Retries counts the
	// failed attempts of the normal schedule (the next retry's index).
	Attempts int
	Retries  int
	// OneShot marks the waiting attempt as a resend or a test: no retries
	// follow it and it never counts toward disabling the webhook.
	OneShot        bool
	LastStatusCode *int
	DurationMS     *int64
	Error          string // why the last attempt failed; "" when none
	RequestHeaders map[string]string
	ResponseBody   string // first 2 KB of the last answer
	CreatedAt      time.Time
	LastAttemptAt  *time.Time
	NextAttemptAt  *time.Time // set while an attempt waits (pending, retrying)
	DeliveredAt    *time.Time
}

// WebhookAttempt is the outcome of one delivery attempt, as the delivery
// engine decided it.
type WebhookAttempt struct {
	DeliveryID string
	At         time.Time
	// StatusCode is the HTTP status of the answer; 0 when none came.
	StatusCode     int
	DurationMS     int64
	Error          string // "" on success
	RequestHeaders map[string]string
	ResponseBody   string
	Succeeded      bool
	// NextAttemptAt schedules a retry (status retrying). Nil on a failure
	// ends the delivery (failed).
	NextAttemptAt *time.Time
}

// Email is a message to a person, kept in an outbox until sent.
type Email struct {
	ID      string
	To      string
	Subject string
	Body    string
	// ContentType is Body's MIME type when it is not plain text (a
	// report: multipart/related with its boundary); "" is text/plain.
	ContentType string
	CreatedAt   time.Time
	SentAt      *time.Time
}

// Webhooks is the part of the Store that holds webhooks, their delivery log
// and the e-mail outbox.
type Webhooks interface {
	// CreateWebhook stores a new webhook.
	CreateWebhook(ctx context.Context, w Webhook) error
	// WebhooksOf lists the website's webhooks, newest first.
	WebhooksOf(ctx context.Context, websiteID string) ([]Webhook, error)
	// Webhook returns one of the website's webhooks; ErrNotFound otherwise.
	Webhook(ctx context.Context, websiteID, id string) (Webhook, error)
	// UpdateWebhook changes a webhook in one transaction: change gets the
	// stored webhook and may edit URL, Events, Enabled, the failure count,
	// FailingSince and the disabled fields; its error aborts the update
	// and is returned as is. When Enabled goes from true to false, every
	// waiting normal (not OneShot) delivery of the webhook fails with
	// error "webhook disabled". ErrNotFound for an unknown id.
	UpdateWebhook(ctx context.Context, websiteID, id string, change func(*Webhook) error) (Webhook, error)
	// DeleteWebhook removes the webhook and its delivery log; ErrNotFound
	// for an unknown id.
	DeleteWebhook(ctx context.Context, websiteID, id string) error

	// WebhookCursor is the seq of the last outbox event turned into
	// deliveries (0 at first).
	WebhookCursor(ctx context.Context) (int64, error)
	// QueueWebhookDeliveries stores the deliveries made from the outbox
	// events after seq from up to seq to, and moves the cursor to to, in
	// one transaction, when the cursor still is at from; otherwise (another
	// node moved it) it stores nothing and reports false. A delivery whose
	// webhook is gone or turned off, or which repeats a (webhook, event)
	// pair, is left out.
	QueueWebhookDeliveries(ctx context.Context, from, to int64, ds []WebhookDelivery) (bool, error)
	// AddWebhookDelivery stores one delivery made outside the outbox (a
	// test), whatever the webhook's state.
	AddWebhookDelivery(ctx context.Context, d WebhookDelivery) error
	// ClaimWebhookDeliveries leases up to limit deliveries whose attempt is
	// due (pending or retrying, NextAttemptAt at or before now) and not
	// leased, until now+lease, oldest due first; a lease that ran out (its
	// node died) is taken again. No two callers get the same delivery
	// within a lease.
	ClaimWebhookDeliveries(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]WebhookDelivery, error)
	// FinishWebhookAttempt records an attempt in one transaction. The
	// delivery counts it, keeps the request headers and answer, ends its
	// lease and becomes succeeded (DeliveredAt = At), retrying
	// (a.NextAttemptAt) or failed; a OneShot attempt never retries and
	// clears OneShot, and a normal one does not retry once the webhook is
	// off (it went off during the attempt). The webhook gets LastStatus
	// and LastFiredAt; a success clears its failure count and
	// FailingSince; a failed normal attempt sets FailingSince when unset
	// and, when it ends the delivery, adds one to the failure count. It
	// returns the webhook as stored.
	// ErrNotFound when the delivery or the webhook is gone.
	FinishWebhookAttempt(ctx context.Context, a WebhookAttempt) (Webhook, error)
	// DisableWebhook turns an enabled webhook off with reason (may be "")
	// at the given time, fails its waiting normal deliveries (as
	// UpdateWebhook does) and queues mail, in one transaction. It reports
	// false, queuing nothing, when the webhook was already off or is gone.
	DisableWebhook(ctx context.Context, websiteID, id, reason string, at time.Time, mail Email) (bool, error)
	// WebhookDeliveries lists a webhook's deliveries newest first, those
	// with Seq below beforeSeq (0: from the newest), at most limit.
	WebhookDeliveries(ctx context.Context, webhookID string, beforeSeq int64, limit int) ([]WebhookDelivery, error)
	// WebhookDelivery returns one delivery of the webhook; ErrNotFound
	// otherwise.
	WebhookDelivery(ctx context.Context, webhookID, id string) (WebhookDelivery, error)
	// ResendWebhookDelivery makes a delivery wait for one OneShot attempt
	// at the given time (status pending). ErrConflict when an attempt is
	// already waiting (pending or retrying); ErrNotFound for an unknown id.
	ResendWebhookDelivery(ctx context.Context, webhookID, id string, at time.Time) (WebhookDelivery, error)
	// PruneWebhookLog deletes deliveries created before the given time and
	// outbox events created before it that the cursor has passed; it
	// returns how many deliveries went.
	PruneWebhookLog(ctx context.Context, before time.Time) (int64, error)

	// AddEmail queues a message in the e-mail outbox.
	AddEmail(ctx context.Context, m Email) error
	// Emails lists the outbox newest first, at most limit; unsent only
	// when asked.
	Emails(ctx context.Context, unsentOnly bool, limit int) ([]Email, error)
	// ClaimEmails leases up to limit unsent messages until now+lease,
	// oldest first, as ClaimWebhookDeliveries does.
	ClaimEmails(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]Email, error)
	// MarkEmailSent records that a message went out.
	MarkEmailSent(ctx context.Context, id string, at time.Time) error
}

// EventsJSON is the stored form of a webhook's event names.
func EventsJSON(events []string) (string, error) {
	if events == nil {
		events = []string{}
	}
	b, err := json.Marshal(events)
	return string(b), err
}

// HeadersJSON is the stored form of request headers: NULL when none.
func HeadersJSON(h map[string]string) (any, error) {
	if h == nil {
		return nil, nil
	}
	b, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	return string(b), nil
}

// AttemptOutcome applies attempt a to a delivery that was OneShot or not
// and had retries failed attempts of its schedule, and to its webhook w:
// it returns the delivery's new status, retries and due time, and updates
// w. A normal attempt does not retry while the webhook is off (spec 3.2),
// whose waiting deliveries turning it off failed.
func AttemptOutcome(a WebhookAttempt, oneShot bool, retries int, w *Webhook) (status string, newRetries int, next *time.Time) {
	status = DeliveryFailed
	switch {
	case a.Succeeded:
		status = DeliverySucceeded
	case oneShot: // one attempt, no retry
	case a.NextAttemptAt != nil && w.Enabled:
		status, next = DeliveryRetrying, a.NextAttemptAt
	}
	w.LastStatus, w.LastFiredAt = &a.StatusCode, &a.At
	switch {
	case a.Succeeded:
		w.ConsecutiveFailures, w.FailingSince = 0, nil
	case !oneShot:
		retries++
		if w.FailingSince == nil {
			w.FailingSince = &a.At
		}
		if status == DeliveryFailed {
			w.ConsecutiveFailures++
		}
	}
	return status, retries, next
}

// WithDefaults fills in what a new delivery may leave out: a new UUID for
// an empty ID, createdAt (the store's reading of CreatedAt, the current
// time when zero) as CreatedAt, status pending, CreatedAt as the due time
// of a waiting attempt, and an empty body.
func (d WebhookDelivery) WithDefaults(createdAt time.Time) WebhookDelivery {
	if d.ID == "" {
		d.ID = uuid.NewString()
	}
	d.CreatedAt = createdAt
	if d.Status == "" {
		d.Status = DeliveryPending
	}
	if d.NextAttemptAt == nil && (d.Status == DeliveryPending || d.Status == DeliveryRetrying) {
		d.NextAttemptAt = &d.CreatedAt
	}
	if d.Body == nil {
		d.Body = []byte{}
	}
	return d
}
