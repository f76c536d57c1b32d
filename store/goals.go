package store

import (
	"context"
	"time"
)

// Sources of a goal's results: what the credited notification was sent
// for.
const (
	SourceAutomation   = "automation"
	SourceJourney      = "journey"
	SourceNotification = "notification"
)

// Goal is a website's goal: an event (any name) or a label reaching a
// value, and the window, in hours, within which a send the person
// received is credited with reaching it. Exactly one of Event and TagName
// is set.
type Goal struct {
	ID          string
	WebsiteID   string
	Name        string
	Event       string
	TagName     string
	TagValue    string
	WindowHours int
	CreatedAt   time.Time
	UpdatedAt   time.Time
	// Results are filled by ListGoals and Goal: the credited reaches,
	// summed by source, most conversions first (then source and id).
	Results []GoalResult
}

// GoalResult is what one source was credited with: how many reaches and
// the sum of their values.
type GoalResult struct {
	Source      string // SourceAutomation, SourceJourney, SourceNotification
	ID          string // the automation's, journey's or notification's id
	Conversions int64
	Revenue     float64
}

// GoalReach is one person reaching a goal. Key makes it once: the event's
// id for an event goal (a retry of the event records nothing more), a new
// id per change for a tag goal (the change is once: ReachTagGoal).
// NotificationID is the send credited ("" none); the store records its
// source.
type GoalReach struct {
	GoalID         string
	SubscriberID   string
	Key            string
	NotificationID string
	Value          float64
	At             time.Time
}

// Goals holds goals and their reaches.
type Goals interface {
	// ListGoals lists the website's goals, newest first, with results.
	ListGoals(ctx context.Context, websiteID string) ([]Goal, error)
	// Goal finds one of the website's goals, with its results.
	// ErrNotFound for another website's or an unknown id.
	Goal(ctx context.Context, websiteID, id string) (Goal, error)
	// CreateGoal stores a new goal. For a tag goal it records, in the
	// same transaction, who has the label's value now: they reached it
	// before the goal existed, and only a change reaches it.
	// ErrNotFound for an unknown website.
	CreateGoal(ctx context.Context, g Goal) error
	// UpdateGoal replaces a goal's name, event or label, window and
	// UpdatedAt, and records again who has the label's value now.
	// Recorded reaches stay. ErrNotFound for an unknown id.
	UpdateGoal(ctx context.Context, g Goal) error
	// DeleteGoal removes one of the website's goals with its reaches.
	// ErrNotFound for an unknown id.
	DeleteGoal(ctx context.Context, websiteID, id string) error
	// EventGoals lists the website's goals of the event name, oldest
	// first, without results.
	EventGoals(ctx context.Context, websiteID, event string) ([]Goal, error)
	// TagGoals lists the website's tag goals, oldest first, without
	// results.
	TagGoals(ctx context.Context, websiteID string) ([]Goal, error)
	// ReachGoal records r once per (goal, key), with the source of the
	// credited notification (none when it is not the goal's website's);
	// reached is false when the key was recorded before. A goal deleted
	// meanwhile records nothing.
	ReachGoal(ctx context.Context, r GoalReach) (reached bool, err error)
	// ReachTagGoal records whether the person has the tag goal's label
	// value now (has), and when they have it and were not recorded with
	// it, records r, in one transaction: reached reports that change.
	// Concurrent calls for one person report one.
	ReachTagGoal(ctx context.Context, r GoalReach, has bool) (reached bool, err error)
}
