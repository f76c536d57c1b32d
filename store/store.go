package store

import (
	"context"
	"encoding/json"
	"errors"
	"hash/fnv"
	"time"

	"github.com/google/uuid"
)

// ErrNotFound is returned when a looked-up record does not exist (or belongs to
// another website, which callers must not be able to tell apart).
var ErrNotFound = errors.New("not found")

// ErrConflict is returned when a conditional state change found the record in
// another state than the one the caller expected.
var ErrConflict = errors.New("conflict")

// ErrNoRoom is returned by a write that takes a unit of a rate limit (a
// budget) in its transaction when the limit has no room: nothing is
// written.
var ErrNoRoom = errors.New("no room")

// Shards is the fixed number of audience shards. Every subscriber belongs to
// exactly one (ShardOf its id); fan-out expands the audience shard by shard.
const Shards = 64

// Account owns websites. E-mail verification and suspension gate sends.
type Account struct {
	ID            string
	OwnerEmail    string
	EmailVerified bool
	Suspended     bool
	CreatedAt     time.Time
}

// Website is one customer site with its own VAPID key pair and public
// project id used by the browser SDK routes.
type Website struct {
	ID              string
	AccountID       string
	ProjectID       string
	Name            string
	URL             string
	Timezone        string
	VAPIDPublicKey  string // base64url, uncompressed P-256 point
	VAPIDPrivateKey string // base64url, 32-byte scalar
	Settings        Settings
	CreatedAt       time.Time
}

// Logo is a website's logo: one of its uploads (UploadID, URL its icon's
// address) or an https URL of its own (UploadID "").
type Logo struct {
	UploadID string `json:"uploadId,omitempty"`
	URL      string `json:"url"`
}

// Settings are the website settings that sends, reports and conversions
// depend on. The zero value of each field means the service's default.
type Settings struct {
	DefaultURL  string `json:"defaultUrl,omitempty"`  // falls back to Website.URL
	DefaultIcon string `json:"defaultIcon,omitempty"` // default notification logo
	// Logo is the website's logo (PUT /logo): the default icon of its
	// notifications, before DefaultIcon, and of its prompt; nil: none.
	Logo        *Logo  `json:"logo,omitempty"`
	UTMSource   string `json:"utmSource,omitempty"`
	UTMMedium   string `json:"utmMedium,omitempty"`
	UTMCampaign string `json:"utmCampaign,omitempty"`
	// QuietHours hold non-transactional sends until they end; nil: none.
	QuietHours *QuietHours `json:"quietHours,omitempty"`
	// FrequencyCap skips browsers that already got Max non-transactional
	// pushes in the last Hours; nil: no cap.
	FrequencyCap *FrequencyCap `json:"frequencyCap,omitempty"`
	// Currency is the revenue currency (ISO 4217, upper case); "" is none.
	Currency string `json:"currency,omitempty"`
	// ConversionEvents replace the built-in conversion event names; nil
	// keeps them.
	ConversionEvents []string `json:"conversionEvents,omitempty"`
	// AttributionHours is how long after delivery a conversion is credited
	// to a notification; 0 is the default.
	AttributionHours int `json:"attributionHours,omitempty"`
	// AlertTexts are the website's own texts of its product alerts; nil
	// keeps the defaults (package events).
	AlertTexts *AlertTexts `json:"alertTexts,omitempty"`
	// CommerceSecret signs the inbound commerce-platform integrations.
	CommerceSecret string `json:"commerceSecret,omitempty"`
	// PreviousCommerceSecret is the commerce secret before the last
	// rotation, still accepted until 24 hours after CommerceSecretRotatedAt
	// (package integrations).
	PreviousCommerceSecret  string     `json:"previousCommerceSecret,omitempty"`
	CommerceSecretRotatedAt *time.Time `json:"commerceSecretRotatedAt,omitempty"`
	// CommerceExternalID is what of a commerce platform's customer becomes
	// the event's externalId: "customerId" (the default, "") or "email".
	CommerceExternalID string `json:"commerceExternalId,omitempty"`
}

// AlertTexts are a website's texts of its product alerts, one per kind.
type AlertTexts struct {
	BackInStock AlertText `json:"backInStock"`
	PriceDrop   AlertText `json:"priceDrop"`
}

// AlertText is the title and body of a product alert, with the
// placeholders {product.title}, {product.price} and {product.oldPrice}
// filled from the event; an empty field keeps the default.
type AlertText struct {
	Title string `json:"title,omitempty"`
	Body  string `json:"body,omitempty"`
}

// QuietHours is a daily span of local wall-clock time, "HH:MM" to "HH:MM"
// in the website's time zone; a span may cross midnight.
type QuietHours struct {
	Start string `json:"start"`
	End   string `json:"end"`
}

// FrequencyCap is at most Max pushes per browser within Hours.
type FrequencyCap struct {
	Max   int `json:"max"`
	Hours int `json:"hours"`
}

// RateLimit is one fixed-window budget a request draws on.
type RateLimit struct {
	Key string // what is counted, e.g. "send:key:<id>:1m"
	// Window is the window's length; windows start at whole multiples of it
	// since the Unix epoch (whole minutes, UTC clock hours).
	Window time.Duration
	Max    int64
}

// WindowEnd is when the window holding at ends.
func (l RateLimit) WindowEnd(at time.Time) time.Time {
	w := int64(l.Window / time.Second)
	start := at.Unix() - at.Unix()%w
	return time.Unix(start+w, 0).UTC()
}

// APIKey is a server key. Only the SHA-256 hash of the secret is stored.
type APIKey struct {
	ID         string
	WebsiteID  string
	Name       string
	Prefix     string // first 12 characters of the key
	Hash       string // hex SHA-256 of the whole key
	Scopes     []string
	ExpiresAt  *time.Time
	CreatedAt  time.Time
	LastUsedAt *time.Time
	RevokedAt  *time.Time
}

// KeyOwner is what an API key resolves to.
type KeyOwner struct {
	Key     APIKey
	Website Website
	Account Account
}

// Subscriber is a person on a website: one or more browser endpoints linked by
// the customer's external id.
type Subscriber struct {
	ID         string
	WebsiteID  string
	ExternalID string // "" when unknown
	Country    string
	Language   string
	Timezone   string
	URL        string // last page seen
	Tags       map[string]string
	// SmartHour is the local hour (0-23) the subscriber is most active in,
	// learned from visits and clicks (LearnActivity); nil until known.
	SmartHour      *int
	Shard          int
	CreatedAt      time.Time
	LastSeenAt     time.Time
	UnsubscribedAt *time.Time
}

// Endpoint is one browser push subscription of a subscriber.
type Endpoint struct {
	ID           string
	SubscriberID string
	WebsiteID    string
	URL          string
	P256dh       string
	Auth         string
	Device       string // desktop, android, ios, mobile, other
	UserAgent    string
	// Language is the browser's, as it last registered with one (a new
	// browser without one takes its person's): the translation its pushes
	// take. The subscriber's Language is the person's, the last any of its
	// browsers registered with, which filters read.
	Language   string
	CreatedAt  time.Time
	LastSeenAt time.Time
}

// SubscriptionInput is what the browser SDK registers.
type SubscriptionInput struct {
	WebsiteID string
	Endpoint  string
	// Replaces is the URL of the endpoint this subscription replaces (the
	// push service renewed it): when the website has that endpoint, its
	// auth secret is ReplacesAuth (proof that the caller is its browser)
	// and Endpoint is not registered yet, the endpoint takes the new URL
	// and keys in place and keeps its ids.
	Replaces     string
	ReplacesAuth string // unpadded base64url, as Auth
	P256dh       string
	Auth         string
	// ExternalID links the browser to the website's user; "" keeps the
	// link as it is.
	ExternalID string
	// Logout unlinks the browser from its person (ExternalID is ""): an
	// endpoint whose subscriber has an external id moves to a new anonymous
	// subscriber, and the person keeps their other endpoints, tags and
	// topics. It changes nothing for an anonymous one.
	Logout    bool
	Language  string
	Timezone  string
	Country   string
	UserAgent string
	Device    string
	URL       string
	Topics    []string // slugs
	// SetTopics makes Topics the subscriber's whole set of opt-ins: opt-ins
	// to other topics are removed. Without it Topics are only added.
	SetTopics bool
	// Visit, when positive, is the weight of the visit this registration
	// counts as (VisitWeight), learned into the subscriber's activity as
	// LearnActivity does, in the registration's transaction: the two are
	// stored, or fail, together.
	Visit int
	// SiteTimezone, when set, is the website's time zone as the caller
	// knows it, which spares the store reading it to learn the visit.
	SiteTimezone string
	// Welcome, when not nil, is the delay of the website's welcome
	// notification: a new endpoint whose URL the welcome ledger does not
	// hold gets a welcome timer (TimerWelcome) due that long after At, in
	// the registration's transaction.
	Welcome *time.Duration
	At      time.Time
}

// SubscriptionResult tells which records the registration touched.
type SubscriptionResult struct {
	SubscriberID string
	EndpointID   string
	Created      bool // a new endpoint was stored
	// OptedIn are the ids of the topics the subscriber opted into with
	// this registration (not before), in no set order.
	OptedIn []string
	// Pending says the subscriber has triggers pending after this
	// registration (Automations.PendingTriggers): recorded by it, or
	// left by an earlier one whose request failed before starting them.
	// Without, the registration has no automation to start.
	Pending bool
}

// Recipient is one endpoint together with the subscriber attributes that
// targeting, merge tags and analytics need. Fan-out streams these.
type Recipient struct {
	Endpoint   Endpoint
	Subscriber Subscriber
}

// AudienceQuery selects one page of one shard of a website's endpoints.
type AudienceQuery struct {
	WebsiteID   string
	Shard       int
	AfterID     string   // endpoint id to continue after ("" from the start)
	Limit       int      // page size
	ExternalIDs []string // when non-empty, only subscribers with these external ids
	// SubscriberID, when set, is the one person whose browsers the send
	// reaches (an automation's message); nothing else may be set with it
	// but TopicID.
	SubscriberID string
	// EndpointID, when set, is the one browser the send reaches (a new
	// browser's welcome), in the shard it is in now, if its subscriber is
	// subscribed; nothing else may be set with it but TopicID.
	EndpointID string
	TopicID    string // when set, only subscribers opted into this topic
	// AlertID, when set, is a product alert's notification id: only the
	// people its audience holds (Behavior.CreateProductAlert).
	AlertID string
	// TestDevices, when set, selects only the website's test devices
	// (store.TestDevices), not their people's other browsers.
	TestDevices bool
	// Lean, for a walk of a shard (with a topic or not, and nothing else
	// set but the page), says the caller reads no subscriber field but
	// the ID: the store may leave the others zero. It reads the endpoints
	// alone then. The walk selects the same endpoints either way; other
	// queries ignore it.
	Lean bool
}

// Notification statuses of spec 3.1.
const (
	StatusDraft         = "draft"
	StatusScheduled     = "scheduled"
	StatusQueued        = "queued"
	StatusHeldForReview = "held_for_review"
	StatusSending       = "sending"
	StatusSent          = "sent"
	StatusFailed        = "failed"
	StatusCanceled      = "canceled"
)

// Notification is a send (or draft) and its counters. Content and targeting
// are kept as the validated JSON the API produced, so the store never needs to
// understand them.
type Notification struct {
	ID            string
	WebsiteID     string
	Seq           int64 // assigned by the store; orders the list (newest first)
	Status        string
	Title         string
	Body          string
	Content       []byte // JSON of the resolved content (send.Content)
	Target        []byte // JSON of the targeting (send.Target); null means everyone
	TargetSummary string
	SendBody      []byte // JSON body that repeats this send; nil for automation sends
	Transactional bool
	AB            bool
	Automation    bool
	// AutomationID is the automation that sent it; "" for any other.
	AutomationID string
	// JourneyID and JourneyStep are the journey and step that sent it;
	// "" for any other.
	JourneyID   string
	JourneyStep string
	// ScheduleID is the recurring schedule that sent it; "" for any
	// other.
	ScheduleID string
	// FeedID is the feed whose item it sends (json feedId); "" for any
	// other.
	FeedID string `json:"feedId,omitempty"`
	// Test marks a test send to the website's test devices: listed like
	// any send, left out of Stats.
	Test bool
	// Welcome marks the welcome notification of a new browser (package
	// onsite): its own kind of send in the reports.
	Welcome     bool
	Segments    []string // ids of the saved segments the send includes or excludes
	CreatedAt   time.Time
	ScheduledAt *time.Time
	StartedAt   *time.Time
	FinishedAt  *time.Time
	PublishedAt *time.Time // when the send intent reached the bus
	Error       string
	// Waves is how many waves the send goes out in (see Wave); 0 for a
	// send that goes out at once, in one.
	Waves int
	// ABWinner is the variant an A/B auto-winner send gives the rest of
	// its audience, once decided ("" before).
	ABWinner string
	Counters
}

// Counters are a notification's running totals.
type Counters struct {
	Recipients  int64
	Processed   int64
	Sent        int64
	Delivered   int64
	Failed      int64
	Pruned      int64
	Clicked     int64
	Conversions int64
	// ClickConversions are the Conversions credited for a click (the rest
	// were credited for a delivery alone: influenced).
	ClickConversions int64
	Revenue          float64
}

// ListQuery pages the notification list newest first.
type ListQuery struct {
	WebsiteID string
	BeforeSeq int64 // 0: from the newest
	Limit     int
	Statuses  []string // empty: every status but draft
	// From and To bound the creation time, half-open [From, To); zero is
	// unbounded.
	From, To time.Time
	// Q is part of the title or of the body, in any case: both sides are
	// compared folded (FoldSearch), the same way on every engine.
	Q string
	// ScheduleID, when set, lists only the sends of that schedule.
	ScheduleID string
	// FeedID keeps the sends of one feed ("": every send).
	FeedID string
}

// Outcome of one push attempt, as fan-out and pusher record it.
const (
	OutcomeSent   = "sent"
	OutcomeFailed = "failed"
	OutcomePruned = "pruned"
)

// PushResult is the recorded outcome of one (notification, endpoint) push.
type PushResult struct {
	EndpointID string
	Outcome    string // OutcomeSent, OutcomeFailed, OutcomePruned
	// Service is the endpoint's push service (webpush.ServiceOf), kept
	// with a failed or pruned result (DeliveryTrouble); "" is unknown.
	Service string
	// Shard is the endpoint's audience shard (its subscriber's, ShardOf):
	// a sent result is kept in the push ledger under it (ShardEndpoint).
	Shard int
}

// ShardEndpoint is an endpoint of a send's audience and its shard (its
// subscriber's, ShardOf). The push ledger keeps a send's sent pushes
// shard by shard, as runs of endpoint ids in the order a shard's
// audience is read, so a batch's check of what is done reads only the
// runs that meet its own ids of the same shard.
type ShardEndpoint struct {
	ID    string
	Shard int
}

// Interaction kinds reported by the service worker.
const (
	InteractionDelivered = "delivered"
	InteractionClicked   = "clicked"
)

// Store holds RelayBell's metadata. Implementations: one, store/sqlstore,
// over SQLite (embedded default) and PostgreSQL (cluster). Every method is
// safe for concurrent use. It is the sum of the small interfaces below, one
// per feature: a caller takes the ones it uses.
type Store interface {
	Accounts
	Users
	Limits
	Subscriptions
	Audiences
	People
	Notifications
	Review
	Waves
	Delivery
	Outbox
	Webhooks
	Identity
	Behavior
	Stats
	TestDevices
	Automations
	Goals
	Journeys
	Feeds
	Templates
	Uploads
	Schedules
	Onsite
	Integrations
	Reports
	Close() error
}

// Accounts holds accounts, their websites and API keys, and what the
// key caches of every API node watch.
type Accounts interface {
	// CreateWebsite stores a website, its account unless it exists, and
	// its first API key unless k.ID is "".
	CreateWebsite(ctx context.Context, a Account, w Website, k APIKey) error
	// EditWebsite sets a website's name, URL and time zone and returns it
	// as stored. ErrNotFound for an unknown id.
	EditWebsite(ctx context.Context, id, name, url, timezone string) (Website, error)
	// DeleteWebsite deletes a website and everything of it (its keys,
	// subscribers, notifications, webhooks…). ErrNotFound for none.
	DeleteWebsite(ctx context.Context, id string) error
	CreateAPIKey(ctx context.Context, k APIKey) error
	// APIKeys lists a website's unrevoked keys, newest first.
	APIKeys(ctx context.Context, websiteID string) ([]APIKey, error)
	// RevokeAPIKey revokes a website's key at at; ErrNotFound for no
	// such unrevoked key of that website.
	RevokeAPIKey(ctx context.Context, websiteID, id string, at time.Time) error
	KeyOwner(ctx context.Context, hash string) (KeyOwner, error)
	TouchAPIKey(ctx context.Context, id string, at time.Time) error
	Website(ctx context.Context, id string) (Website, error)
	WebsiteByProjectID(ctx context.Context, projectID string) (Website, error)
	Account(ctx context.Context, id string) (Account, error)
	SetAccountSuspended(ctx context.Context, id string, suspended bool) error
	SetAccountEmailVerified(ctx context.Context, id string) error
	// AuthVersion is the auth version: a counter that moves, in the same
	// transaction, with every change to what KeyOwner answers (accounts,
	// websites and api_keys rows: a suspension, an e-mail verification, a
	// website's settings, a key created, changed, revoked or deleted,
	// a cascade included), and never for last_used_at alone. API nodes
	// poll it to drop their key caches, so a change made through one node
	// holds on every node: after a read that saw the version move, KeyOwner
	// sees the change. The engines move it by triggers (their migrations
	// 0012 and 0013 auth_version), so a store method has nothing to do for
	// it: a key revocation (RevokeAPIKey, setting api_keys.revoked_at or
	// deleting the row) moves it as it is. Only a new column or table that
	// KeyOwner reads must be added to those triggers. Reading it is one
	// primary-key row.
	AuthVersion(ctx context.Context) (int64, error)
	// UpdateWebsite changes a website's time zone and settings in one
	// transaction: change gets the stored website and may edit Timezone and
	// Settings; its error aborts the update and is returned as is. It
	// returns the website as stored. ErrNotFound for an unknown id.
	UpdateWebsite(ctx context.Context, id string, change func(*Website) error) (Website, error)
}

// Limits counts uses against rate limits and send budgets, across every
// process sharing the store.
type Limits interface {
	// TakeRateLimits counts n uses against every limit when each has room
	// for them in its current window, and none otherwise (taken false). It
	// returns each window's uses after the call. n = 0 reads the counts. It
	// is atomic across every process sharing the store.
	TakeRateLimits(ctx context.Context, limits []RateLimit, n int64, now time.Time) (used []int64, taken bool, err error)
	// AddRateCounts adds each count's N to the counter of its limit's
	// window that begins at Start, without a bound (N = 0 only reads it),
	// and returns the totals, in one transaction; it drops the earlier
	// windows of those keys. The public routes' limiter (package
	// ratelimit) shares its counts through it.
	AddRateCounts(ctx context.Context, counts []RateCount, now time.Time) ([]int64, error)
}

// RateCount is uses to add to a rate limit's window.
type RateCount struct {
	Limit RateLimit
	Start time.Time // the window's start
	N     int64
}

// Subscriptions holds browsers as they register, turn notifications
// off and report what they showed and clicked.
type Subscriptions interface {
	// UpsertSubscription registers a browser; a new endpoint (Created) adds
	// the subscriber.created event in the same transaction. Replaces,
	// Logout, SetTopics and Visit are described at SubscriptionInput; an endpoint
	// moved by Replaces or Logout is not Created.
	UpsertSubscription(ctx context.Context, in SubscriptionInput) (SubscriptionResult, error)
	// UpsertSubscriptions registers each browser as UpsertSubscription
	// does, in the order given, in one transaction (group commit), and
	// answers each in its order; the events of the new endpoints come last.
	// Any failure stores nothing and fails them all.
	UpsertSubscriptions(ctx context.Context, list []SubscriptionInput) ([]SubscriptionResult, error)
	// DeleteSubscription is a visitor turning notifications off through
	// the site: it removes the endpoint, records its removal (Stats), marks
	// a subscriber left with no endpoint unsubscribed and adds the
	// subscriber.unsubscribed event, in one transaction. Returns ErrNotFound for an unknown one. Endpoints
	// that go otherwise (pruned by RecordResults, erased with their person)
	// add no event.
	DeleteSubscription(ctx context.Context, websiteID, endpointURL string) (Endpoint, error)
	Endpoint(ctx context.Context, websiteID, id string) (Endpoint, error)
	// Endpoints returns the website's endpoints among ids, in no order:
	// unknown ids, and other websites', are left out.
	Endpoints(ctx context.Context, websiteID string, ids []string) ([]Endpoint, error)
	// RecordInteraction counts a delivered or clicked ping once per
	// (notification, endpoint, kind); it reports whether it was new. When
	// it is new and event is not nil, the event is added to the outbox in
	// the same transaction, with websiteID as its website; an empty ID
	// gets a new UUID, a zero CreatedAt at.
	RecordInteraction(ctx context.Context, websiteID, notificationID, endpointID, kind string, at time.Time, event *WebhookEvent) (bool, error)
	// RecordInteractions records the pings as RecordInteraction does each,
	// in one transaction (group commit), and reports for each whether it
	// was new: false for one counted before, one of no notification of its
	// website, and a repeat of an earlier ping of the list. Any failure
	// stores nothing and fails them all.
	RecordInteractions(ctx context.Context, pings []Ping) ([]bool, error)
	// LearnActivity counts a visit or a click (weight) of a subscriber in
	// the local hour of at (the subscriber's time zone, else the
	// website's), and keeps the subscriber's SmartHour the hour with the
	// most weight (the earliest of equals). An unknown subscriber is a
	// no-op.
	LearnActivity(ctx context.Context, subscriberID string, at time.Time, weight int) error
}

// Audiences walks the browsers a send reaches, shard by shard.
type Audiences interface {
	Audience(ctx context.Context, q AudienceQuery) ([]Recipient, error)
	// AudienceZones lists the distinct (time zone, smart hour) pairs of
	// the website's subscribed subscribers: the moments a per-time-zone or
	// smart-time send has to go out at.
	AudienceZones(ctx context.Context, websiteID string) ([]Zone, error)
}

// Notifications holds sends and drafts through their states.
type Notifications interface {
	CreateNotification(ctx context.Context, n *Notification) error
	Notification(ctx context.Context, websiteID, id string) (Notification, error)
	NotificationByID(ctx context.Context, id string) (Notification, error)
	ListNotifications(ctx context.Context, q ListQuery) ([]Notification, error)
	// CountDrafts counts the website's drafts.
	CountDrafts(ctx context.Context, websiteID string) (int, error)
	// ReplaceDraft rewrites one of the website's drafts with n's status,
	// content, targeting, segments, creation and schedule times: a draft
	// edited, or sent (then it takes a new, newest Seq). ErrNotFound for an
	// unknown id; ErrConflict when it is no longer a draft.
	ReplaceDraft(ctx context.Context, n *Notification) error
	// DeleteDraft removes one of the website's drafts. ErrNotFound for an
	// unknown id; ErrConflict when it is not a draft.
	DeleteDraft(ctx context.Context, websiteID, id string) error
	// CancelNotification turns one of the website's scheduled or held sends
	// into canceled; ErrNotFound for any other.
	CancelNotification(ctx context.Context, websiteID, id string, at time.Time) error
	// LargestSend is the most recipients a sending or sent notification of
	// the website reached (0 when none).
	LargestSend(ctx context.Context, websiteID string) (int64, error)
	// MarkPublished records that the send intent reached the bus.
	MarkPublished(ctx context.Context, id string, at time.Time) error
	// MarkAllPublished is MarkPublished of many sends in one statement
	// (the automations' messages, published by the engine's pool); an
	// unknown id is passed over.
	MarkAllPublished(ctx context.Context, ids []string, at time.Time) error
	// Unpublished lists queued sends whose intent never reached the bus and
	// were created before the given time (the outbox sweep re-drives them).
	Unpublished(ctx context.Context, before time.Time, limit int) ([]Notification, error)
	// DueScheduled moves scheduled sends due at now to queued and returns them.
	DueScheduled(ctx context.Context, now time.Time, limit int) ([]Notification, error)
	// StartSending moves queued to sending (idempotent for sending). It
	// returns ErrConflict when the send is in another state. waves, when
	// given, are the due moments of the send's waves 0, 1, ...: they are
	// recorded (and Waves set) with the move, once; a call that finds the
	// send already sending ignores them.
	StartSending(ctx context.Context, id string, at time.Time, waves ...time.Time) (Notification, error)
	// FailNotification turns a send that has not finished into failed with a reason.
	FailNotification(ctx context.Context, id, reason string, at time.Time) error
	// SetABWinner records the winning variant of an auto-winner send once
	// and returns the one stored: the first call decides.
	SetABWinner(ctx context.Context, id, variant string) (string, error)
}

// Review holds the sends held for the operator's review.
type Review interface {
	// ReviewNotification decides a send held for review. Approved, it is
	// scheduled when it has a schedule time (a past one is released by the
	// next sweep) and queued otherwise; rejected, it fails with
	// review_rejected. ErrNotFound unless it is held.
	ReviewNotification(ctx context.Context, id string, approve bool, at time.Time) (Notification, error)
	// HeldForReview lists the sends of every website held for review,
	// oldest first.
	HeldForReview(ctx context.Context, limit int) ([]Notification, error)
}

// Waves releases the parts of a send that go out at their own moments.
type Waves interface {
	// DueWaves leases up to limit unpublished waves of sending
	// notifications that are due at now and not leased, until now+lease,
	// earliest due first; a lease that ran out (its node died) is taken
	// again. No two callers get the same wave within a lease.
	DueWaves(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]Wave, error)
	// MarkWavePublished records that a wave's shard tasks reached the bus.
	MarkWavePublished(ctx context.Context, notificationID string, wave int, at time.Time) error
}

// Delivery records what each push did, once per (notification,
// endpoint), and what the frequency cap reads of it.
type Delivery interface {
	// Undelivered returns, in input order, the ids of the endpoints that
	// have no recorded result for the notification yet (the dedupe per
	// (notification, endpoint)). An endpoint whose shard is not the one
	// its sent result was recorded under is not found done.
	Undelivered(ctx context.Context, notificationID string, endpoints []ShardEndpoint) ([]string, error)
	// RecordResults stores a batch of push results once per (notification,
	// endpoint), updates the counters with the ones that were new (each new
	// result adds one recipient, so a redone batch never counts a browser
	// twice and recipients = sent + failed + pruned once the send is done), and
	// removes pruned endpoints, recording their removals (Stats), all in one
	// transaction.
	RecordResults(ctx context.Context, notificationID string, results []PushResult) error
	// RecordAllResults is RecordResults of several sends' batches in one
	// transaction (a pusher's recorder gathers the outcomes of many
	// one-person sends at once): each send's results are stored and
	// counted as RecordResults does, all or none. It returns the ids of
	// the sends that are not known (RecordResults' ErrNotFound), whose
	// results are left out.
	RecordAllResults(ctx context.Context, bySend map[string][]PushResult) (unknown []string, err error)
	// ShardDone marks one shard task of a send expanded and delivered; when
	// every task is done the send becomes sent. A send in waves has
	// Waves*Shards tasks, task w*Shards+s being shard s of wave w; any
	// other send Shards. It reports whether the send finished.
	ShardDone(ctx context.Context, notificationID string, shard int, at time.Time) (finished bool, err error)
	// ShardsDone is ShardDone of several shard tasks of one send in one
	// transaction (a fan-out node's concurrent tasks share it): each task
	// counts once however often it is given, a task out of range fails
	// the whole call, and it reports whether this call finished the send.
	ShardsDone(ctx context.Context, notificationID string, shards []int, at time.Time) (finished bool, err error)
	// SoleShardDone marks every shard task of a sending send without
	// waves done at once and finishes it, as the last ShardDone does (its
	// notification.sent event included), in one transaction: a send to
	// one person's browsers, or to a few named people's, whose shards
	// fan-out expanded in the intent's handler, where each of the 64
	// tasks would take a ShardDone of its own. It reports whether this
	// call finished it: false for a send finished already or not sending;
	// a send in waves is an error, an unknown one ErrNotFound.
	SoleShardDone(ctx context.Context, notificationID string, at time.Time) (finished bool, err error)
	// EndpointShard returns the audience shard the website's endpoint is
	// in now (its subscriber's, ShardOf): the one shard a send to that
	// browser alone can find it in. ErrNotFound when the website has no
	// such endpoint. It is a snapshot: an endpoint that moves to another
	// person afterwards (a login) may be in another shard.
	EndpointShard(ctx context.Context, websiteID, endpointID string) (int, error)
	// ExternalIDShards returns, in ascending order and without repeats,
	// the audience shards (ShardOf) of the website's subscribers whose
	// external id is one of externalIDs, subscribed or not: the shards a
	// send to those named people can find anyone in, read in one query
	// through the (website_id, external_id) index. It is a snapshot: a
	// person given one of the ids afterwards is in no shard it returned.
	ExternalIDShards(ctx context.Context, websiteID string, externalIDs []string) ([]int, error)
	// CappedEndpoints returns, in input order, the ids of those endpoints that
	// already have at least max results with outcome sent of the website's
	// other non-transactional notifications started (started_at) at or
	// after since: the browsers the website's frequency cap keeps a
	// non-transactional send from. Failed and pruned results, transactional
	// sends, other websites' sends and notificationID itself never count,
	// so a redone batch of a send is not capped by its own pushes. max
	// below 1 caps every endpoint.
	CappedEndpoints(ctx context.Context, websiteID, notificationID string, endpoints []ShardEndpoint, since time.Time, max int) ([]string, error)
}

// Outbox holds the webhook events of spec 6.2. The events are added by
// the changes they report, in the same transaction: notification.sent by
// ShardsDone, subscriber.created by UpsertSubscription,
// subscriber.unsubscribed by DeleteSubscription, notification.clicked by
// RecordInteraction (the caller builds it). They are stored only when the
// website has an enabled webhook, since nothing could deliver them
// otherwise (and in PostgreSQL the outbox lock that orders them is then not
// taken).
type Outbox interface {
	// Webhook outbox. The events of spec 6.2 are added by the changes they
	// report, in the same transaction: notification.sent by ShardsDone,
	// subscriber.created by UpsertSubscription, subscriber.unsubscribed by
	// DeleteSubscription, notification.clicked by RecordInteraction (the
	// caller builds it). They are stored only when the website has an
	// enabled webhook, since nothing could deliver them otherwise (and in
	// PostgreSQL the outbox lock that orders them is then not taken).
	//
	// AddWebhookEvent stores one event and assigns its Seq; an empty ID gets
	// a new UUID, a zero CreatedAt the current time. ErrNotFound for an
	// unknown website, ErrConflict for an ID already stored.
	AddWebhookEvent(ctx context.Context, e WebhookEvent) error
	// WebhookEvents returns up to limit events of every website with a Seq
	// greater than afterSeq, oldest first (0 or less: no limit). Seqs are
	// committed in increasing order, so a reader that remembers the last Seq
	// it handled misses none.
	WebhookEvents(ctx context.Context, afterSeq int64, limit int) ([]WebhookEvent, error)
}

// Wave is one part of a send that goes out at its own moment: the
// browsers whose local time comes at Due (per time zone, smart time), or
// an A/B auto-winner's test group (wave 0) and the rest (wave 1).
type Wave struct {
	NotificationID string
	Wave           int
	Due            time.Time
}

// Zone is a time zone ("" when the browser gave none) with a smart hour
// (nil when unknown) that subscribers have.
type Zone struct {
	Timezone  string
	SmartHour *int
}

// Weights of the activity LearnActivity counts.
const (
	VisitWeight = 1
	ClickWeight = 2
)

// Webhook event names (spec 6.2).
const (
	// EventSubscriberCreated: a new browser subscribed; the data is
	// SubscriberCreated.
	EventSubscriberCreated = "subscriber.created"
	// EventSubscriberUnsubscribed: a visitor turned notifications off
	// through the site; the data is SubscriberUnsubscribed.
	EventSubscriberUnsubscribed = "subscriber.unsubscribed"
	// EventNotificationSent: a send finished going out; the data is
	// NotificationSent.
	EventNotificationSent = "notification.sent"
	// EventNotificationClicked: someone clicked a notification; the data
	// is NotificationClicked.
	EventNotificationClicked = "notification.clicked"
	// EventFeedPaused: the service paused a feed (every poll failed for a
	// day); the data is FeedPausedData.
	EventFeedPaused = "feed.paused"
	// EventSchedulePaused: the service paused a recurring schedule (the
	// topic it sends to was deleted, or an occurrence's send could not be
	// made); the data is SchedulePausedData.
	EventSchedulePaused = "schedule.paused"
	// EventWebhookTest: a test asked for one webhook, never in the outbox;
	// the data is WebhookTest.
	EventWebhookTest = "webhook.test"
)

// Ping is a delivered or clicked ping of RecordInteractions: the
// arguments of a RecordInteraction.
type Ping struct {
	WebsiteID, NotificationID, EndpointID, Kind string
	At                                          time.Time
	Event                                       *WebhookEvent
}

// WebhookEvent is one event of the webhook outbox, to be delivered to the
// website's webhook endpoints.
type WebhookEvent struct {
	Seq       int64 // assigned by the store; the read order
	ID        string
	WebsiteID string
	Event     string          // an Event* name
	Data      json.RawMessage // the event's data, kept byte for byte
	CreatedAt time.Time
}

// NotificationSent is the data of a notification.sent event: the send's
// counters when its last shard finished.
type NotificationSent struct {
	NotificationID string `json:"notificationId"`
	Recipients     int64  `json:"recipients"`
	Sent           int64  `json:"sent"`
	Failed         int64  `json:"failed"`
	Pruned         int64  `json:"pruned"`
}

// SubscriberCreated is the data of a subscriber.created event: the new
// endpoint and its subscriber as stored.
type SubscriberCreated struct {
	SubscriberID string  `json:"subscriberId"`
	EndpointID   string  `json:"endpointId"`
	ExternalID   *string `json:"externalId"` // nil when unknown
	Device       string  `json:"device"`
	Country      string  `json:"country"` // "" when unknown
}

// SubscriberUnsubscribed is the data of a subscriber.unsubscribed event:
// the subscriber and the URL of the endpoint it removed.
type SubscriberUnsubscribed struct {
	SubscriberID string `json:"subscriberId"`
	Endpoint     string `json:"endpoint"`
}

// NotificationClicked is the data of a notification.clicked event.
type NotificationClicked struct {
	NotificationID string `json:"notificationId"`
	// Variant is the version ("a" or "b") the browser got of an A/B send;
	// nil for any other send.
	Variant *string `json:"variant"`
}

// WebhookTest is the data of a webhook.test event.
type WebhookTest struct {
	WebhookID string `json:"webhookId"`
	Message   string `json:"message"`
}

// NewID is a new row's id: a UUID of version 7, whose first bits are the
// time, so that the ids a process makes sort in the order it made them
// and a new row goes in at the end of each index keyed by its id rather
// than on a random page of it: one page fewer to write and checkpoint a
// key (docs/scale-out.md, "Event ids in time order (stop 49)" and "Ids in
// time order (stop 55)"). Its last 62 bits are random, which keeps it as
// unguessable as any id needs to be, and its shard (ShardOf) as evenly
// spread; the 12 before them order the ids of one millisecond.
func NewID() string { return uuid.Must(uuid.NewV7()).String() }

// NewEndpointID is a new endpoint's id: a random UUID (version 4), not
// NewID's, since the push ledger buckets endpoints by their id's first
// character (sqlstore's ledgerBucket), the same for every time-ordered id
// of a decade.
func NewEndpointID() string { return uuid.NewString() }

// ShardOf returns the audience shard of a subscriber id.
func ShardOf(subscriberID string) int {
	h := fnv.New32a()
	h.Write([]byte(subscriberID))
	return int(h.Sum32() % Shards)
}

// Defaults of the conversion settings.
const DefaultAttributionHours = 24

// DefaultConversionEvents are the event names that count as conversions
// unless the website configured its own (spec 4.2, rule 4).
var DefaultConversionEvents = []string{"purchase", "order.completed", "checkout.completed"}

// ConversionNames are the website's conversion event names.
func (s Settings) ConversionNames() []string {
	if len(s.ConversionEvents) > 0 {
		return s.ConversionEvents
	}
	return DefaultConversionEvents
}

// Attribution is how long after delivery a conversion is credited.
func (s Settings) Attribution() time.Duration {
	if s.AttributionHours > 0 {
		return time.Duration(s.AttributionHours) * time.Hour
	}
	return DefaultAttributionHours * time.Hour
}
