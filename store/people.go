package store

import (
	"context"
	"time"
)

// Segment is a saved audience: a name and filters (the JSON of
// filter.Filters, which the store keeps without reading).
type Segment struct {
	ID        string
	WebsiteID string
	Name      string
	Filters   []byte
	CreatedAt time.Time
}

// SegmentUse is what depends on a saved segment.
type SegmentUse struct {
	// Pending counts scheduled or queued sends that include or exclude it.
	Pending int64
	// Schedules counts active recurring schedules that include or exclude
	// it.
	Schedules int64
	// Feeds counts active feeds that include or exclude it.
	Feeds int64
	// LastSentAt is when the newest send to it started; nil if none did.
	LastSentAt *time.Time
}

// Topic is something subscribers opt into by slug.
type Topic struct {
	ID          string
	WebsiteID   string
	Name        string
	Slug        string // letters, digits and dashes; unique per website in any case
	CreatedAt   time.Time
	Subscribers int64 // opted-in subscribers (filled by ListTopics and Topic)
}

// Person is a subscriber with what the audience views show of it.
type Person struct {
	Subscriber
	ConsentAt *time.Time // when a browser first subscribed; nil for an imported person with none yet
	Devices   []string   // the device type of each endpoint, most recently seen first
	Topics    []string   // ids of the topics opted into
}

// Status is the spec 3.4 subscriber status.
func (p *Person) Status() string {
	switch {
	case p.UnsubscribedAt != nil:
		return "unsubscribed"
	case len(p.Devices) == 0:
		return "no_device"
	}
	return "subscribed"
}

// PersonKey is a position in the newest-first order of a website's people.
type PersonKey struct {
	CreatedAt time.Time
	ID        string
}

// PeopleQuery pages a website's people newest first (created_at, then id,
// descending).
type PeopleQuery struct {
	WebsiteID string
	Filter    PeopleFilter
	After     *PersonKey // continue after this one; nil from the newest
	Limit     int        // 0 or less: 1000
}

// AllShards is the ReachQuery.Shard of a read of the whole website.
const AllShards = -1

// ReachQuery selects the subscribed people of one shard of a website, or of
// all of them, for Reachable.
type ReachQuery struct {
	WebsiteID   string
	Shard       int      // AllShards for the whole website
	ExternalIDs []string // when non-empty, only people with these external ids
	AlertID     string   // when set, only the people of this product alert's audience
	// SubscriberID, when set, selects that one person.
	SubscriberID string
	// EndpointID, when set, selects the person of that one browser,
	// counted with that one browser.
	EndpointID string
	// TestDevices, when set, selects only the people with a test device
	// (each counted with all their browsers).
	TestDevices bool
	// Narrow is what every person must pass as well; counting uses its
	// Countries, Topics and Tags for what a send's filters and topic imply.
	Narrow PeopleFilter
	// Tags asks for the people's labels; without it Subscriber.Tags is nil.
	Tags bool
}

// PeopleFilter selects people by the audience list's conditions (spec 4.5).
// They combine with AND; within one list (countries, languages, devices,
// topics) any element may match, while every tag condition must hold. The
// zero filter selects everyone.
type PeopleFilter struct {
	Q         string   // a subscriber id (exact) or part of an external id (any case)
	Status    string   // "" for all, or subscribed, unsubscribed, no_device
	Countries []string // 2-letter codes
	Languages []string // "en" matches en, en-* and en_*; "en-US" only en-US (any case)
	Devices   []string // people with an endpoint of one of these types
	Topics    []string // topic ids
	Tags      []TagCondition
	// Date ranges, half-open [From, To); zero means unbounded.
	JoinedFrom, JoinedTo time.Time
	SeenFrom, SeenTo     time.Time
}

// TagCondition holds when the person has the label Key, with Value when
// HasValue.
type TagCondition struct {
	Key      string
	Value    string
	HasValue bool
}

// ImportRow creates or enriches the person with ExternalID.
type ImportRow struct {
	ExternalID string
	Tags       map[string]string // set; a null value is ""
	Topics     []string          // slugs; unknown ones are skipped
}

// Facets count a website's people by attribute, the most frequent first.
type Facets struct {
	Countries []FacetValue
	Languages []FacetValue
	Devices   []FacetValue // people with at least one endpoint of the type
	Tags      []TagFacet   // reserved labels left out
	Topics    []TopicFacet
}

// FacetValue is one value and how many people have it.
type FacetValue struct {
	Value string `json:"value"`
	Count int64  `json:"count"`
}

// TagFacet is one label key, how many people carry it, and its most
// frequent values.
type TagFacet struct {
	Key    string   `json:"key"`
	Count  int64    `json:"count"`
	Values []string `json:"values"`
}

// TopicFacet is one topic and how many people opted into it.
type TopicFacet struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	Slug  string `json:"slug"`
	Count int64  `json:"count"`
}

// ReservedLabelPrefix starts the labels the service keeps for itself; they
// are never shown in lists or facets.
const ReservedLabelPrefix = "rb_"

// PeopleReader pages and counts a website's subscribers (People's People
// and CountPeople), as PeopleSnapshot hands it out.
type PeopleReader interface {
	People(ctx context.Context, q PeopleQuery) ([]Person, error)
	CountPeople(ctx context.Context, websiteID string, f PeopleFilter) (int64, error)
}

// People is the audience management half of the Store.
type People interface {
	// Segments, newest first.
	ListSegments(ctx context.Context, websiteID string) ([]Segment, error)
	Segment(ctx context.Context, websiteID, id string) (Segment, error)
	CreateSegment(ctx context.Context, s Segment) error
	// UpdateSegment replaces the name and filters; ErrNotFound if unknown.
	UpdateSegment(ctx context.Context, s Segment) error
	// DeleteSegment removes it; an unknown id is not an error.
	DeleteSegment(ctx context.Context, websiteID, id string) error
	// SegmentUses reports, for each of the website's segments that has any,
	// its pending sends and last send.
	SegmentUses(ctx context.Context, websiteID string) (map[string]SegmentUse, error)

	// Topics, oldest first, with their opted-in counts.
	ListTopics(ctx context.Context, websiteID string) ([]Topic, error)
	// Topic finds a topic by id or by slug in any case.
	Topic(ctx context.Context, websiteID, idOrSlug string) (Topic, error)
	// SaveTopic creates the topic, or renames the one that has its slug (any
	// case); it reports whether it created one.
	SaveTopic(ctx context.Context, t Topic) (Topic, bool, error)
	RenameTopic(ctx context.Context, websiteID, id, name string) (Topic, error)
	// DeleteTopic removes it and its opt-ins, and pauses the active
	// recurring schedules that send to it, with the reason, in the same
	// transaction; an unknown id is not an error.
	DeleteTopic(ctx context.Context, websiteID, id string) error

	// People pages the website's subscribers that pass q.Filter, newest
	// first.
	People(ctx context.Context, q PeopleQuery) ([]Person, error)
	// CountPeople counts the website's subscribers that pass f.
	CountPeople(ctx context.Context, websiteID string, f PeopleFilter) (int64, error)
	// PeopleSnapshot calls fn with a reader of people that sees the store
	// as it was at the reader's first read, whatever commits meanwhile: a
	// page and its total read through it agree. fn must read through it
	// alone.
	PeopleSnapshot(ctx context.Context, fn func(PeopleReader) error) error
	// Reachable calls fn, in no set order, for each subscribed person of
	// q's shard (or website) who passes q and has at least one browser,
	// with the number of their browsers: what counting an audience reads,
	// without the endpoints themselves. fn must not call the store.
	Reachable(ctx context.Context, q ReachQuery, fn func(sub *Subscriber, browsers int)) error
	// Person finds one by subscriber id or external id.
	Person(ctx context.Context, websiteID, idOrExternalID string) (Person, error)
	// PersonEndpoints lists a subscriber's endpoints, most recently seen first.
	PersonEndpoints(ctx context.Context, websiteID, subscriberID string) ([]Endpoint, error)
	// ImportPeople creates or enriches people by external id; rows without
	// one are skipped. It returns how many rows it applied.
	ImportPeople(ctx context.Context, websiteID string, rows []ImportRow, at time.Time) (int, error)
	// TagPeople sets and removes labels of the listed subscribers of the
	// website (other ids are skipped) and returns how many it changed.
	TagPeople(ctx context.Context, websiteID string, ids []string, set map[string]string, remove []string) (int, error)
	// ErasePeople permanently deletes the listed subscribers of the website
	// with their endpoints, labels, opt-ins, push results and interactions
	// (other ids are skipped); it returns the erased ones. Their endpoints'
	// removals are recorded (Stats: the website and two times alone).
	ErasePeople(ctx context.Context, websiteID string, ids []string) ([]Subscriber, error)
	// Facets counts the website's people by attribute, up to limit values each.
	Facets(ctx context.Context, websiteID string, limit int) (Facets, error)
}
