package store

import (
	"context"
	"time"
)

// Schedule statuses: only an active schedule sends.
const (
	ScheduleActive = "active"
	SchedulePaused = "paused"
)

// SchedulePausedTopicDeleted is the reason of a schedule.paused event of
// a schedule whose topic was deleted.
const SchedulePausedTopicDeleted = "topic_deleted"

// SchedulePausedSendFailed is the reason of a schedule.paused event of a
// schedule the engine paused because an occurrence's send could not be
// made (its template or segment gone, its content refused).
const SchedulePausedSendFailed = "send_failed"

// SchedulePausedData is the data of a schedule.paused event: the
// schedule, the reason's code and the reason as the schedule shows it
// (pausedReason).
type SchedulePausedData struct {
	ScheduleID string `json:"scheduleId"`
	Name       string `json:"name"`
	Reason     string `json:"reason"`
	Message    string `json:"message"`
}

// Outcomes of a schedule's occurrence. Sent and skipped are the ledger's
// (ScheduleRun); refused is FireSchedule's answer when the website's
// broadcast budget had no room, and is recorded on the schedule alone.
const (
	OccurrenceSent    = "sent"
	OccurrenceSkipped = "skipped"
	OccurrenceRefused = "refused"
)

// Schedule is a website's recurring schedule. Definition is the JSON the
// schedules package reads (audience, content or templateId, rule, time
// zone, perTimezone, catchUpMinutes, startsAt, endsAt); the store keeps it
// as written. TopicID, SegmentID and ExcludeSegmentID repeat the
// audience's, for DeleteTopic and SegmentUses; TemplateID the
// definition's, for what uses a template.
type Schedule struct {
	ID           string
	WebsiteID    string
	Name         string
	Status       string // ScheduleActive, SchedulePaused
	PausedReason string // why the schedule was paused by something else than its owner ("": by its owner, or active)
	Definition   []byte
	TopicID      string
	SegmentID    string
	// ExcludeSegmentID is the segment the audience excludes.
	ExcludeSegmentID string
	TemplateID       string
	// NextAt is the next occurrence not done yet; nil when there is none
	// (the schedule ended, or is paused).
	NextAt *time.Time
	// BudgetWait says the occurrence at NextAt waits for room in the
	// website's broadcast budget: it goes when there is, however late.
	BudgetWait bool
	// Refusal is the last time an occurrence was refused (the budget) or
	// held (HoldSchedule); nil if none ever was.
	Refusal   *ScheduleRefusal
	CreatedAt time.Time
	UpdatedAt time.Time
}

// ScheduleRefusal is an occurrence the broadcast budget refused, or one
// held while the account's e-mail address is not verified, recorded on
// its schedule.
type ScheduleRefusal struct {
	At         time.Time // when it was refused
	Occurrence time.Time
	// RetryAt is when the engine tries it again (the next budget window,
	// or the end of a hold); zero once it went.
	RetryAt time.Time
	Reason  string
}

// ScheduleRun is a ledger row: what became of one occurrence.
type ScheduleRun struct {
	ScheduleID     string
	Occurrence     time.Time
	Outcome        string // OccurrenceSent, OccurrenceSkipped
	NotificationID string // a sent one's
	At             time.Time
}

// ScheduleFire is what FireSchedule does with a claimed schedule's
// occurrence at Occurrence (its NextAt).
type ScheduleFire struct {
	WebsiteID  string
	ScheduleID string
	Occurrence time.Time
	// Next is the occurrence after it (nil: none), which becomes NextAt;
	// NextWaits says it waits for the budget too (BudgetWait).
	Next      *time.Time
	NextWaits bool
	// Notification is the occurrence's send (its ScheduleID set by the
	// caller); nil skips the occurrence.
	Notification *Notification
	// Budget, when set, is counted once for the send in its transaction;
	// no room refuses the occurrence (OccurrenceRefused): nothing is
	// stored, the schedule records the refusal and is due again at the
	// budget's next window.
	Budget *RateLimit
	At     time.Time
}

// Schedules holds recurring schedules and their engine's durable state:
// the next occurrence of each, claimed under leases, and the ledger of
// what each occurrence did.
type Schedules interface {
	// ListSchedules lists the website's schedules, newest first.
	ListSchedules(ctx context.Context, websiteID string) ([]Schedule, error)
	// Schedule finds one of the website's schedules. ErrNotFound for
	// another website's or an unknown id.
	Schedule(ctx context.Context, websiteID, id string) (Schedule, error)
	// CreateSchedule stores a new schedule with its NextAt. ErrNotFound
	// for an unknown website.
	CreateSchedule(ctx context.Context, s Schedule) error
	// UpdateSchedule replaces the name, status, paused reason,
	// definition, audience and template ids, NextAt, BudgetWait and
	// UpdatedAt of one of the website's schedules, and ends a lease. It is
	// due at NextAt, or, for an occurrence still waiting for the budget
	// (BudgetWait, NextAt unchanged), at its retry time. ErrNotFound for
	// an unknown id.
	UpdateSchedule(ctx context.Context, s Schedule) error
	// PauseSchedule pauses one of the website's active schedules with the
	// message as its paused reason, ends its lease and adds a
	// schedule.paused event (reason, message), in one transaction. It
	// says whether it paused it: false for a paused or unknown one.
	PauseSchedule(ctx context.Context, websiteID, id, reason, message string, at time.Time) (bool, error)
	// DeleteSchedule removes one of the website's schedules with its
	// ledger (its notifications stay). ErrNotFound for an unknown id.
	DeleteSchedule(ctx context.Context, websiteID, id string) error
	// ScheduleRuns lists up to limit ledger rows of one of the website's
	// schedules, the latest occurrence first.
	ScheduleRuns(ctx context.Context, websiteID, id string, limit int) ([]ScheduleRun, error)
	// ClaimSchedules leases up to limit active schedules due at now and
	// not leased (a lease that ran out is taken again), until now+lease,
	// earliest due first. No two callers get the same schedule within a
	// lease; on PostgreSQL callers pass over each other's rows (SKIP
	// LOCKED).
	ClaimSchedules(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]Schedule, error)
	// NextScheduleDue is the earliest time an active schedule not leased
	// is due; ok false when none is.
	NextScheduleDue(ctx context.Context) (due time.Time, ok bool, err error)
	// FireSchedule does a claimed occurrence exactly once, in one
	// transaction: it moves the schedule's NextAt from f.Occurrence to
	// f.Next (the claim that counts: when NextAt is no longer
	// f.Occurrence, or the schedule is not active, another node did it or
	// the schedule changed, and FireSchedule returns "" and changes
	// nothing), takes f.Budget, writes the ledger row keyed by (schedule,
	// occurrence) and stores f.Notification. It returns the outcome.
	FireSchedule(ctx context.Context, f ScheduleFire) (outcome string, err error)
	// HoldSchedule keeps a claimed schedule's occurrence for later,
	// for reason (the account's e-mail address is not verified): NextAt
	// and BudgetWait stay, nothing is sent or written to the ledger, the
	// schedule is due again at retry, its lease ends, and the hold is its
	// Refusal (at, occurrence, retry, reason). It changes nothing when
	// NextAt is no longer occurrence or the schedule is not active.
	HoldSchedule(ctx context.Context, websiteID, id string, occurrence, retry time.Time, reason string, at time.Time) error
	// PurgeScheduleRuns forgets the ledger rows written before before
	// (the history shown; a schedule's next_at, which only moves on, keeps
	// an occurrence from being done twice) and returns how many went.
	PurgeScheduleRuns(ctx context.Context, before time.Time) (int64, error)
}
