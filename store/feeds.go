package store

import (
	"context"
	"time"
)

// Feed statuses: only an active feed is polled.
const (
	FeedActive = "active"
	FeedPaused = "paused"
)

// Reasons a feed was paused by the service ("" when a person paused it).
const (
	FeedPausedFailing      = "failing_for_1_day" // every poll failed for a day
	FeedPausedTopicDeleted = "topic_deleted"     // the topic it targets was deleted
)

// Ledger statuses of a feed's item (FeedItem).
const (
	FeedItemSeen    = "seen"    // present when the feed was added: never sent
	FeedItemPending = "pending" // new: to send
	FeedItemSent    = "sent"    // sent: its notification was stored with the row
)

// Feed is a website's RSS, Atom or JSON feed whose new items are sent.
// Audience and Template are the JSON the feeds package reads; TopicID,
// SegmentID and ExcludeSegmentID repeat the audience's, TemplateID the
// template's, for the uses of a topic, segment or saved template.
type Feed struct {
	ID               string
	WebsiteID        string
	Name             string
	URL              string
	Audience         []byte
	Template         []byte
	Status           string // FeedActive, FeedPaused
	PausedReason     string // FeedPaused*; "" when none
	PollMinutes      int
	MaxPerPoll       int
	SendExisting     int
	TopicID          string
	SegmentID        string
	ExcludeSegmentID string
	TemplateID       string
	// ETag and LastModified are the validators of the last full answer,
	// sent back as If-None-Match and If-Modified-Since.
	ETag         string
	LastModified string
	// Seeded is set once a fetch recorded the items present when the feed
	// was added.
	Seeded          bool
	NextPollAt      time.Time
	FailingSince    *time.Time
	LastPoll        *FeedPoll // nil before the first poll
	BudgetRefusedAt *time.Time
	CreatedAt       time.Time
	UpdatedAt       time.Time
	// Pending and Sent count the feed's items waiting to be sent and
	// sent (filled by ListFeeds and Feed).
	Pending int64
	Sent    int64
}

// FeedPoll is the outcome of one poll of a feed.
type FeedPoll struct {
	At         time.Time
	HTTPStatus int // 0 when no answer came
	NewItems   int
	Error      string // "" when the poll succeeded
	// Waiting says the feed was read but its items wait on the account
	// (Error says why: its address not verified): the poll counts as a
	// success toward pausing a failing feed.
	Waiting bool
}

// FeedItem is one item of a feed's ledger.
type FeedItem struct {
	Key string // the item's GUID, else its link
	// Data is what the feeds package keeps of a pending item to send it
	// (JSON); nil for one seen or sent.
	Data   []byte
	Status string // FeedItem*
}

// FeedFetch is what one fetch of a feed found, as RecordFeedItems records
// it: the items, newest first as the feed lists them.
type FeedFetch struct {
	At           time.Time
	ETag         string
	LastModified string
	Items        []FeedItem
}

// FeedUse is a feed that uses a template, a topic or a segment.
type FeedUse struct {
	ID   string
	Name string
}

// Feeds holds feeds, the ledger of their items and the poller's leases.
type Feeds interface {
	// TemplateFeeds lists the website's feeds whose template is the saved
	// template templateID, oldest first (what template_in_use names).
	TemplateFeeds(ctx context.Context, websiteID, templateID string) ([]FeedUse, error)
	// ListFeeds lists the website's feeds, newest first.
	ListFeeds(ctx context.Context, websiteID string) ([]Feed, error)
	// Feed finds one of the website's feeds; ErrNotFound for another
	// website's or an unknown id.
	Feed(ctx context.Context, websiteID, id string) (Feed, error)
	// CreateFeed stores a new feed, due at f.NextPollAt. ErrNotFound for
	// an unknown website.
	CreateFeed(ctx context.Context, f Feed) error
	// UpdateFeed replaces the settings of one of the website's feeds
	// (name, url, audience and its ids, template and its id, status, paused reason,
	// poll minutes, max per poll, next poll, UpdatedAt); a feed that
	// becomes active forgets its failing time. A changed url forgets the
	// validators and Seeded (the new feed's items present are seen). ErrNotFound for an unknown id.
	UpdateFeed(ctx context.Context, f Feed) error
	// DeleteFeed removes one of the website's feeds with its ledger (its
	// notifications stay). ErrNotFound for an unknown id.
	DeleteFeed(ctx context.Context, websiteID, id string) error
	// ClaimFeeds leases up to limit active feeds due at now and not leased
	// (a lease that ran out is taken again), until now+lease, earliest due
	// first. No two callers get the same feed within a lease.
	ClaimFeeds(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]Feed, error)
	// ClaimFeed leases one of the website's feeds now, due or not, when
	// no lease holds it, and makes it due now (a claimer that dies leaves
	// it to ClaimFeeds once the lease runs out): ErrConflict when a lease
	// holds it, ErrNotFound for an unknown id.
	ClaimFeed(ctx context.Context, websiteID, id string, now time.Time, lease time.Duration) (Feed, error)
	// RecordFeedItems records a fetch in one transaction: a ledger row per
	// item not in the ledger (an item already there, whatever its status,
	// is left as it is), the validators, and Seeded. Before the feed is
	// seeded every new item is recorded seen but the first sendExisting
	// ones of the fetch (the newest), recorded pending. It returns how many
	// items it recorded pending.
	RecordFeedItems(ctx context.Context, websiteID, feedID string, f FeedFetch, sendExisting int) (int, error)
	// PendingFeedItems lists up to limit of the feed's pending items,
	// oldest first (the order they were found in, the feed's last first).
	PendingFeedItems(ctx context.Context, feedID string, limit int) ([]FeedItem, error)
	// SendFeedItem sends a pending item exactly once, in one transaction:
	// it marks the item sent with n's id, takes one unit of budget (the
	// website's hourly broadcast budget) when budget is set, and stores n
	// (its FeedID set). When the item is not pending (sent already), it
	// stores and takes nothing and returns false; when the budget has no
	// room, it writes nothing (the item stays pending) and returns
	// ErrNoRoom.
	SendFeedItem(ctx context.Context, feedID, key string, n *Notification, budget *RateLimit, at time.Time) (bool, error)
	// SkipFeedItem records a pending item that cannot be sent (its content
	// is refused) as seen, so that it holds up no other; an item not
	// pending is left as it is.
	SkipFeedItem(ctx context.Context, feedID, key string) error
	// FinishFeedPoll records a poll's outcome and ends the lease: the
	// last poll, the next poll at next, the failing time (set at p.At by a
	// failed poll when unset, cleared by a success), and budgetRefused
	// when not nil. ErrNotFound for an unknown id.
	FinishFeedPoll(ctx context.Context, websiteID, feedID string, p FeedPoll, next time.Time, budgetRefused *time.Time) error
	// PauseFeed pauses an active feed with reason at the given time, and,
	// in the same transaction, queues the mails and adds the webhook
	// event (data encoded as JSON) when the website listens. It reports
	// false, doing nothing, when the feed was not active or is gone.
	PauseFeed(ctx context.Context, websiteID, feedID, reason string, at time.Time, mails []Email, event string, data any) (bool, error)
}

// FeedPausedData is the data of a feed.paused event.
type FeedPausedData struct {
	FeedID string `json:"feedId"`
	Name   string `json:"name"`
	URL    string `json:"url"`
	Reason string `json:"reason"`
	Error  string `json:"error"`
}
