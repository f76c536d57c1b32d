package store

import (
	"context"
	"time"
)

// Product interest kinds: what a person wants to hear about a product.
const (
	InterestPriceDrop   = "price_drop"
	InterestBackInStock = "back_in_stock"
)

// PersonRef is who a key names: the person's subscriber id and external id
// ("" for none).
type PersonRef struct {
	ID         string
	ExternalID string
}

// ProductInterest is a person's interest in a product's price drops or its
// return to stock.
type ProductInterest struct {
	WebsiteID    string
	SubscriberID string
	ProductID    string
	Kind         string // InterestPriceDrop or InterestBackInStock
	CreatedAt    time.Time
}

// ProductAlert is what CreateProductAlert sends: the people interested in
// ProductID for Kind since Since (older interests have expired), at most
// Max of them, newest interests first.
type ProductAlert struct {
	ProductID string
	Kind      string
	Since     time.Time
	Max       int
	// DedupeSince, when set, makes the alert a no-op (Deduped) if an alert
	// of the same product and kind was asked for after it; either
	// way the alert counts as asked for at the notification's CreatedAt.
	DedupeSince time.Time
}

// AlertResult is what CreateProductAlert did.
type AlertResult struct {
	Deduped bool
	// Audience is the people the notification goes to (after the cut),
	// Truncated whether more were interested than ProductAlert.Max.
	Audience  int
	Truncated bool
	// Created says the notification was stored: false when deduped or
	// when nobody is interested.
	Created bool
}

// Attribution is an Attribute query: conversion event EventID, worth
// Value at At, credited to the website's notification the subscriber
// last clicked, or last had delivered, at or after Since.
type Attribution struct {
	EventID, SubscriberID string
	Since, At             time.Time
	Value                 float64
}

// Interaction is an Attribute answer: the notification credited, and
// whether for a click (else a delivery). NotificationID "" is none.
type Interaction struct {
	NotificationID string
	Clicked        bool
}

// EventWrites is what concurrent events write together (WriteEvents):
// their conversions to credit, by website id, and their product
// interests.
type EventWrites struct {
	Credits   map[string][]Attribution
	Interests []ProductInterest
}

// Behavior holds what behavioral events leave in the metadata: the
// conversions credited to notifications, people's product interests and
// the product alerts made of them, and the answers of idempotent posts.
// The events themselves live in the analytics event log.
type Behavior interface {
	// LastInteraction is the website's notification the subscriber (on
	// any of their browsers) last clicked at or after since (clicked
	// true) or, failing that, last had delivered at or after since.
	// ErrNotFound when none.
	LastInteraction(ctx context.Context, websiteID, subscriberID string, since time.Time) (notificationID string, clicked bool, err error)
	// Attribute credits each conversion to the notification
	// LastInteraction finds for its subscriber and Since, for a click or
	// a delivery, and answers the notifications credited in the queries'
	// order: a zero Interaction for a conversion with none to credit. An
	// event credited before (by its first query of the list, or by an
	// earlier call) is not credited again: when a notification to credit
	// is found, the answer is the one it was credited to then (a retry
	// finds at least what its first call found, unless the interactions
	// were purged or erased since). One statement per few hundred queries:
	// finding what to credit and crediting it are one. It takes no lock on
	// the notification: a credit reaches the notification's Conversions
	// and Revenue when FoldConversions next runs, in any process.
	Attribute(ctx context.Context, websiteID string, queries []Attribution) ([]Interaction, error)
	// FoldConversions adds up to max recorded credits not folded yet to
	// their notifications' counters (Conversions, ClickConversions,
	// Revenue) and marks them folded, in one transaction, and returns how
	// many it folded. Concurrent calls never fold a credit twice.
	FoldConversions(ctx context.Context, max int) (int, error)

	// AddInterest records the interest, or renews its CreatedAt when the
	// subscriber already had it. ErrNotFound for a subscriber not of the
	// website.
	AddInterest(ctx context.Context, in ProductInterest) error
	// AddInterests records each interest as AddInterest does, in one
	// statement per few hundred; those of a subscriber not of their
	// website are left out. Of interests with the same website, product,
	// kind and subscriber, the latest CreatedAt is kept.
	AddInterests(ctx context.Context, list []ProductInterest) error
	// WriteEvents records the interests as AddInterests does and credits
	// each website's conversions as Attribute does, in one transaction,
	// and answers the credits by website and event id (a conversion with
	// none to credit is not there).
	WriteEvents(ctx context.Context, w EventWrites) (map[string]map[string]Interaction, error)
	// PersonRefs resolves keys, each a subscriber id or an external id, to
	// the people of the website they name, as Person does (a subscriber
	// id first), reading only their ids. A key naming nobody is not in
	// the map.
	PersonRefs(ctx context.Context, websiteID string, keys []string) (map[string]PersonRef, error)
	// PeopleVersion reads the people version: a counter that moves, in
	// the same transaction, with every change to what PersonRefs answers
	// for a key that named somebody (a subscriber's external id set,
	// changed or cleared; a subscriber deleted). A new subscriber does not
	// move it.
	PeopleVersion(ctx context.Context) (int64, error)
	// Interests lists the subscribers' interests created at or after
	// since, newest first, at most limit.
	Interests(ctx context.Context, websiteID string, subscriberIDs []string, since time.Time, limit int) ([]ProductInterest, error)
	// CreateProductAlert stores n, a send to the subscribed people
	// interested in a.ProductID for a.Kind (its audience fixed now:
	// AudienceQuery.AlertID reads it), unless nobody is or the alert is
	// deduped; n.Target must name n.ID as its alert. A back-in-stock
	// alert uses up the interests of the people it goes to, and the
	// product's expired interests are removed. All in one transaction.
	CreateProductAlert(ctx context.Context, n *Notification, a ProductAlert) (AlertResult, error)

	// ClaimIdempotency claims key (of the website, within scope) for a
	// request about to run, which request (a hash of it) names: claimed
	// true when the key is new, or when an earlier claim that left no
	// answer was made before staleBefore (its request died). Otherwise it
	// returns the earlier request's answer, nil while that request is
	// still running; ErrConflict when the key was claimed for another
	// request.
	ClaimIdempotency(ctx context.Context, websiteID, scope, key, request string, now, staleBefore time.Time) (answer []byte, claimed bool, err error)
	// SettleIdempotency stores the answer of a claimed key; a nil answer
	// releases the claim (the request failed and may be tried again).
	SettleIdempotency(ctx context.Context, websiteID, scope, key string, answer []byte) error
	// PurgeBehavior forgets what is no longer needed: idempotency keys
	// claimed before p.Keys, folded credits of conversions before
	// p.Credits, interests created before p.Interests, and the fixed
	// audiences of product alerts that finished (sent, failed or
	// canceled) and were created before p.Alerts. A zero time purges
	// nothing of its kind. It returns how many rows went.
	PurgeBehavior(ctx context.Context, p BehaviorPurge) (int64, error)
}

// BehaviorPurge is what PurgeBehavior forgets: what is older than each.
type BehaviorPurge struct {
	Keys, Credits, Interests, Alerts time.Time
	// Deliveries: the commerce platforms' deliveries received before it
	// (their ledger; a redelivery after it stores nothing twice all the
	// same: an event's id is derived from what it is about).
	Deliveries time.Time
}
