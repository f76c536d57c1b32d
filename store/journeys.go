package store

import (
	"context"
	"fmt"
	"time"
)

// TimerJourney is the Kind of a timer that moves a person's journey
// enrolment on: its RunID is the enrolment's id and its Item the
// enrolment's Tick when the timer was written.
const TimerJourney = "journey"

// Enrolment states: only an active enrolment is live.
const (
	EnrollmentActive      = "active"
	EnrollmentCompleted   = "completed"
	EnrollmentExited      = "exited"
	EnrollmentGoalReached = "goal_reached"
)

// Journey is a website's journey with the definition of its current
// version (the JSON the journeys package reads: entry, reentry, exit
// events, goal, steps). Statuses are the automations' (AutomationDraft,
// AutomationActive, AutomationPaused).
type Journey struct {
	ID         string
	WebsiteID  string
	Name       string
	Status     string
	EntryType  string
	Version    int
	Definition []byte
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// Enrollment is a person's pass through a journey, pinned to the version
// it entered (or was migrated to).
type Enrollment struct {
	ID           string
	WebsiteID    string
	JourneyID    string
	SubscriberID string
	ExternalID   string // the person's, "" when unknown (read only)
	Version      int
	State        string // EnrollmentActive, ...
	// CurrentStep is the step the enrolment is at (its last one once
	// ended); Waiting says it waits there (a wait, wait_until or window
	// with a timer, or the timer's end is what moves it on).
	CurrentStep string
	Waiting     bool
	// Seq is how many history rows it has; Tick counts its moves (every
	// MoveEnrollment, Migrate): a move names the Tick it starts from, so a
	// stale timer or a concurrent move changes nothing.
	Seq       int
	Tick      int
	EnteredAt time.Time
	UpdatedAt time.Time
	EndedAt   *time.Time
}

// JourneyStep is one history row of an enrolment: a step taken, when,
// and why. The rows are the engine's ledger, keyed by (enrolment, Seq)
// and written in the transaction that stores the step's notification.
type JourneyStep struct {
	Seq     int
	StepID  string
	Type    string
	Outcome string
	// Early marks the row that ended the enrolment before its journey's
	// end (an exit event, the API, a goal).
	Early          bool
	NotificationID string
	At             time.Time
	// Notification, when set, is stored with the row (MoveEnrollment):
	// a send step's push.
	Notification *Notification `json:"-"`
}

// Enroll enters a person into a journey.
type Enroll struct {
	WebsiteID    string
	JourneyID    string
	SubscriberID string
	EnrollmentID string // a new UUID
	// Version is the journey's version the caller read (its first step
	// is FirstStep); another version now is ErrConflict, read again.
	Version   int
	FirstStep string
	// ReenterAfter is how long after the person's last entry they may
	// enter again; 0 is never (reentry mode never).
	ReenterAfter time.Duration
	At           time.Time
}

// Enroll refusals (EnrollResult.Refused).
const (
	RefusedAlreadyEnrolled = "already_enrolled" // a live enrolment, or reentry forbids a new one
	RefusedNotActive       = "journey_not_active"
)

// JourneyMove moves an enrolment on, in one transaction (MoveEnrollment).
type JourneyMove struct {
	EnrollmentID string
	// Tick is the enrolment's Tick the move was planned from: when the
	// enrolment is no longer live at it nothing changes.
	Tick int
	// Timer, when set, is the claimed timer that fires the move: it is
	// deleted first, and when it is gone already nothing changes.
	Timer *Timer
	// Steps are the history rows written, numbered on from the
	// enrolment's Seq, each with its notification.
	Steps []JourneyStep
	// Tags are set on the person's labels.
	Tags map[string]string
	// State, CurrentStep and Waiting are the enrolment's now.
	State       string
	CurrentStep string
	Waiting     bool
	// Due is when the enrolment's next timer fires (the enrolment's other
	// timers go); nil for none.
	Due *time.Time
	At  time.Time
}

// EnrollmentQuery selects enrolments: of a journey, of a person, or both.
type EnrollmentQuery struct {
	WebsiteID    string
	JourneyID    string // "" any journey
	SubscriberID string // "" anybody
	LiveOnly     bool
	Version      int // 0 any
	Limit        int
}

// JourneyStepStats are a step's figures: passes through it (Entered),
// enrolments waiting at it, passes done (Completed), enrolments ended
// there early (ExitedEarly), and the counters of the notifications it
// sent.
type JourneyStepStats struct {
	Entered, Waiting, Completed, ExitedEarly int64
	Sent, Delivered, Clicked, Converted      int64
	Revenue                                  float64
}

// Journeys holds journeys, their versions, enrolments and history. The
// timers are the automations' table (kind TimerJourney), claimed by the
// same loop (Automations.ClaimTimers).
type Journeys interface {
	// ListJourneys lists the website's journeys, newest first.
	ListJourneys(ctx context.Context, websiteID string) ([]Journey, error)
	// HasJourneys reports whether the website has a journey, whatever its
	// status: without one nobody has an enrolment.
	HasJourneys(ctx context.Context, websiteID string) (bool, error)
	// Journey finds one of the website's journeys. ErrNotFound otherwise.
	Journey(ctx context.Context, websiteID, id string) (Journey, error)
	// CreateJourney stores a new journey as its version 1.
	CreateJourney(ctx context.Context, j Journey) error
	// UpdateJourney replaces the journey's name, status, entry type and
	// definition. When any enrolment entered its current version, the
	// definition becomes a new version (live enrolments keep theirs);
	// else the current version's is replaced. It returns the journey as
	// stored. ErrNotFound for an unknown id.
	UpdateJourney(ctx context.Context, j Journey) (Journey, error)
	// DeleteJourney removes the journey with its versions, enrolments,
	// history and timers (its notifications stay). ErrNotFound otherwise.
	DeleteJourney(ctx context.Context, websiteID, id string) error
	// ActiveJourneys lists the website's active journeys of the entry
	// types (all when none), oldest first.
	ActiveJourneys(ctx context.Context, websiteID string, entryTypes ...string) ([]Journey, error)
	// JourneyVersion is the definition of one version of a journey.
	JourneyVersion(ctx context.Context, journeyID string, version int) ([]byte, error)
	// JourneyStepStats are the journey's figures per step id (all
	// versions).
	JourneyStepStats(ctx context.Context, websiteID, journeyID string) (map[string]JourneyStepStats, error)
	// Enroll enters the person at e.FirstStep of e.Version with a timer
	// due at e.At, unless they have a live enrolment or entered within
	// e.ReenterAfter (ever, when 0): refused says why ("" when enrolled).
	// At most one enrolment per person and journey is live, whatever runs
	// concurrently. ErrNotFound for a journey or person not of the
	// website; ErrConflict when the journey's version is no longer
	// e.Version.
	Enroll(ctx context.Context, e Enroll) (refused string, err error)
	// Enrollment finds one of the website's enrolments.
	Enrollment(ctx context.Context, websiteID, id string) (Enrollment, error)
	// ListEnrollments lists enrolments, newest first.
	ListEnrollments(ctx context.Context, q EnrollmentQuery) ([]Enrollment, error)
	// EnrollmentHistory lists an enrolment's history rows in order.
	EnrollmentHistory(ctx context.Context, enrollmentID string) ([]JourneyStep, error)
	// MoveEnrollment does m in one transaction: deletes m.Timer (gone:
	// nothing changes), checks the enrolment is live at m.Tick (else
	// nothing more changes), writes the history rows and their
	// notifications, sets the tags, moves the enrolment and replaces its
	// timers by m.Due. It reports whether the enrolment moved.
	MoveEnrollment(ctx context.Context, m JourneyMove) (bool, error)
	// MoveEnrollments does the moves, in their order, as MoveEnrollment
	// does each, all in one transaction (the engine's claimed batch): an
	// error rolls every one back. moved[i] reports whether ms[i] moved.
	MoveEnrollments(ctx context.Context, ms []JourneyMove) (moved []bool, err error)
	// EnrollmentOfSend is the enrolment whose send step stored the
	// notification, and that step's id. ErrNotFound for any other.
	EnrollmentOfSend(ctx context.Context, notificationID string) (Enrollment, string, error)
	// SendInteracted reports whether the notification sent by the
	// enrolment's step stepID (its last pass) was delivered (or clicked,
	// for kind InteractionClicked) to the person.
	SendInteracted(ctx context.Context, enrollmentID, stepID, kind string) (bool, error)
	// MigrateEnrollments moves the live enrolments of version from to
	// version to, each at steps[its current step] afresh (not waiting,
	// due at), and returns how many moved. A live enrolment at a step
	// steps does not name, as the transaction finds them (an enrolment
	// may have moved since the caller last read it), is an
	// *UnmappedStepError and nothing moves.
	MigrateEnrollments(ctx context.Context, websiteID, journeyID string, from, to int, steps map[string]string, at time.Time) (int, error)
}

// UnmappedStepError refuses a migration (Journeys.MigrateEnrollments): a
// live enrolment of the version is at Step, which the mapping does not
// name. Nothing moved.
type UnmappedStepError struct{ Step string }

func (e *UnmappedStepError) Error() string {
	return fmt.Sprintf("a live enrolment is at step %q, which the mapping does not name", e.Step)
}
