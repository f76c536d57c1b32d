package store

import (
	"context"
	"time"
)

// Automation statuses: only an active automation triggers.
const (
	AutomationDraft  = "draft"
	AutomationActive = "active"
	AutomationPaused = "paused"
)

// TimerAutomation is the Kind of a timer that sends a message of an
// automation's run.
const TimerAutomation = "automation"

// Trigger types the store records pending (PendingTrigger): the same
// names as the automations package's.
const (
	TriggerSubscribed = "subscribed"
	TriggerTopicOptIn = "topic_opt_in"
)

// Ledger outcomes of a fired timer.
const (
	LedgerSent    = "sent"    // its notification was stored
	LedgerCapped  = "capped"  // the automation's caps held it back
	LedgerSkipped = "skipped" // the automation was not active, or has no such message now
)

// Automation is a website's automation: a trigger and the messages it
// sends a person. Definition is the JSON the automations package reads
// (trigger, stop events, restart, messages, caps, transactional); the
// store keeps it as written, as it keeps a segment's filters.
type Automation struct {
	ID          string
	WebsiteID   string
	Name        string
	Status      string // AutomationDraft, AutomationActive, AutomationPaused
	TriggerType string
	Definition  []byte
	CreatedAt   time.Time
	UpdatedAt   time.Time
	// Stats are filled by ListAutomations and Automation.
	Stats AutomationStats
}

// AutomationStats are an automation's figures: runs started or restarted
// (Triggered) and ended by a stop event (Stopped), messages waiting
// (Pending), and the counters of the notifications it sent.
type AutomationStats struct {
	Triggered int64
	Pending   int64
	Sent      int64
	Delivered int64
	Clicked   int64
	Converted int64
	Revenue   float64
	Stopped   int64
}

// AutomationTrigger starts a person's run of an automation: one timer per
// delay, due at At plus the delay, items 0, 1, ... in order.
type AutomationTrigger struct {
	WebsiteID    string
	AutomationID string
	SubscriberID string
	// RunID names the new run (a UUID).
	RunID string
	// Restart cancels a pending run's timers and starts again; without it
	// a trigger during a pending run does nothing.
	Restart bool
	Delays  []time.Duration
	At      time.Time
}

// PendingTrigger is a trigger stored with what caused it (the browser
// stored, the opt-in made), so that it is not lost when the request dies
// before the runs start: whoever finds it next starts them, with run ids
// derived from its ID, so that a trigger done twice starts its runs once.
type PendingTrigger struct {
	ID           string
	WebsiteID    string
	SubscriberID string
	TriggerType  string // subscribed or topic_opt_in
	TopicID      string // a topic_opt_in's topic
	At           time.Time
}

// Timer is one due item of the engine: item Item of run RunID.
type Timer struct {
	RunID        string
	Item         int
	Kind         string // TimerAutomation
	WebsiteID    string
	AutomationID string
	SubscriberID string
	Due          time.Time
}

// AutomationCaps bound an automation's messages to one person: at most
// PerDay in the last 24 hours and PerWeek in the last 7 days (0: no bound).
type AutomationCaps struct {
	PerDay, PerWeek int
}

// Fire is what FireTimer does with a claimed timer.
type Fire struct {
	// Notification is the message's send, stored when the timer is still
	// there and the caps let it; nil skips the item (LedgerSkipped).
	Notification *Notification
	Caps         AutomationCaps
	At           time.Time
}

// TimerFire is one claimed timer and what to do with it (FireTimers).
type TimerFire struct {
	Timer Timer
	Fire  Fire
}

// Automations holds automations and the engine's durable state: runs,
// timers claimed under leases, and the ledger of what each fired timer did.
type Automations interface {
	// ListAutomations lists the website's automations, newest first, with
	// their stats.
	ListAutomations(ctx context.Context, websiteID string) ([]Automation, error)
	// Automation finds one of the website's automations, with its stats.
	// ErrNotFound for another website's or an unknown id.
	Automation(ctx context.Context, websiteID, id string) (Automation, error)
	// CreateAutomation stores a new automation (its ID set, its stats
	// zero). ErrNotFound for an unknown website.
	CreateAutomation(ctx context.Context, a Automation) error
	// UpdateAutomation replaces the name, status, trigger type,
	// definition and UpdatedAt of one of the website's automations.
	// Pending runs keep their timers. ErrNotFound for an unknown id.
	UpdateAutomation(ctx context.Context, a Automation) error
	// DeleteAutomation removes one of the website's automations with its
	// runs, timers and ledger (its notifications stay). ErrNotFound for an
	// unknown id.
	DeleteAutomation(ctx context.Context, websiteID, id string) error
	// DefinitionsVersion reads the definitions version: a counter that
	// triggers move, in the same transaction, with every change to the
	// automations, journeys and their versions, goals, segments and
	// identity verification (not to their counts, runs or enrolments).
	// Caches of those poll it.
	DefinitionsVersion(ctx context.Context) (int64, error)
	// ActiveAutomations lists the website's active automations with one
	// of the trigger types (all types when none), oldest first, without
	// stats.
	ActiveAutomations(ctx context.Context, websiteID string, triggerTypes ...string) ([]Automation, error)
	// TriggerAutomation starts the person's run of the automation, in one
	// transaction that locks the person's run: when a run is pending (it
	// has timers) and tr.Restart is false, nothing changes and started is
	// false; otherwise the pending run's timers go, tr.RunID becomes the
	// person's run with a timer per delay, and the automation's Triggered
	// count moves. ErrNotFound for an automation or person not of the
	// website. Concurrent triggers for one person run one after the other;
	// triggers of one automation for different people do not wait for
	// each other's commits. A trigger whose RunID is the person's run
	// already is a redo and changes nothing (started false): a trigger
	// retried with the same RunID starts its run once.
	TriggerAutomation(ctx context.Context, tr AutomationTrigger) (started bool, err error)
	// StopAutomations cancels the person's pending timers of the listed
	// automations of the website and counts a stopped run for each
	// automation that had any; it returns how many had. A timer being
	// fired at the same moment is either fired first or never.
	StopAutomations(ctx context.Context, websiteID, subscriberID string, automationIDs []string, at time.Time) (int, error)
	// ClaimTimers leases up to limit timers due at now and not leased (a
	// lease that ran out is taken again), until now+lease, earliest due
	// first. No two callers get the same timer within a lease; on
	// PostgreSQL callers pass over each other's rows (SKIP LOCKED).
	ClaimTimers(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]Timer, error)
	// NextTimerDue is the earliest due time of the timers never leased;
	// ok false when there is none. (A timer whose lease runs out is found
	// by the engines' poll.)
	NextTimerDue(ctx context.Context) (due time.Time, ok bool, err error)
	// FireTimer does a claimed timer's item exactly once, in one
	// transaction: it removes the timer (none left: it was stopped,
	// restarted or fired already, and FireTimer returns "" and changes
	// nothing), writes the ledger row keyed by (run, item), and stores
	// f.Notification when the caps let it (its AutomationID and
	// Automation set by the caller). It returns the ledger outcome. The
	// caps are counted one message of a person at a time: two capped
	// messages of one person fired at once on two nodes count each other.
	FireTimer(ctx context.Context, t Timer, f Fire) (outcome string, err error)
	// FireTimers does claimed timers' items as FireTimer does each, the
	// uncapped ones together in one transaction (a capped one counts the
	// person's ledger under a lock, in a transaction of its own): the
	// timers' deletes, their ledger rows and their notifications commit
	// all or none. It returns each timer's outcome, in order.
	FireTimers(ctx context.Context, fires []TimerFire) (outcomes []string, err error)
	SegmentMembers
	// PendingTriggers lists up to limit triggers that a registration or
	// an import recorded in its own transaction (a new browser, a topic
	// opt-in, while the website had an active automation of that type)
	// and that no Service has done yet, oldest first: the person's, or
	// the website's when subscriberID is "".
	PendingTriggers(ctx context.Context, websiteID, subscriberID string, limit int) ([]PendingTrigger, error)
	// DoneTrigger removes a pending trigger once its runs started; an
	// unknown id is not an error.
	DoneTrigger(ctx context.Context, id string) error
	// PurgeLedger forgets the ledger rows written before before (once no
	// cap can count them; a fired timer is gone, so no redo needs them)
	// and returns how many went.
	PurgeLedger(ctx context.Context, before time.Time) (int64, error)
}

// SegmentMembers records who is in the segment of each of its watchers: a
// segment_entered automation or journey, named by its id (the watcher
// id). Both kinds share the rows and the one evaluation that reads them
// (automations.Segments).
type SegmentMembers interface {
	// SetSegmentMember records whether the person is in the segment the
	// watcher watches now, and reports whether they entered it (in now,
	// not recorded before). Concurrent calls for one person report one
	// entry. A person of another website than the watcher's, or a watcher
	// that is no automation or journey, is never recorded (entered false).
	SetSegmentMember(ctx context.Context, watcherID, subscriberID string, in bool) (entered bool, err error)
	// SeedSegmentMembers replaces the recorded members of the watcher's
	// segment with subscriberIDs (those in it when it starts watching it:
	// they do not enter). The rows go with the watcher when it is deleted.
	SeedSegmentMembers(ctx context.Context, watcherID string, subscriberIDs []string) error
}
