package audience

import (
	"context"
	"errors"
	"fmt"

	"github.com/relaybell/relaybell/filter"
	"github.com/relaybell/relaybell/notification"
	"github.com/relaybell/relaybell/store"
)

// ErrSegmentMissing is returned when a target names a saved segment that no
// longer exists.
var ErrSegmentMissing = errors.New("segment missing")

// Segments loads saved segments.
type Segments interface {
	Segment(ctx context.Context, websiteID, id string) (store.Segment, error)
}

// Selector is a target compiled for evaluation: who of the website's
// subscribed browsers it reaches.
type Selector struct {
	WebsiteID   string
	ExternalIDs []string // when set, only these people
	TopicID     string   // when set, only people opted into this topic
	AlertID     string   // when set, only the people of this product alert's audience
	TestDevices bool     // when set, only the website's test devices
	// SubscriberID, when set, is the one person selected (an
	// automation's message).
	SubscriberID string
	// EndpointID, when set, is the one browser selected (a new
	// browser's welcome), not its person's others.
	EndpointID string
	include    []*filter.Matcher
	exclude    []*filter.Matcher
}

// ErrUnreadableTarget is returned by CompileStored when a stored target does
// not decode, or names a member this node does not know (fail closed).
var ErrUnreadableTarget = errors.New("unreadable target")

// CompileStored is the one way from a notification's stored target (its
// JSON, nil or null for everyone) to a Selector: every producer and reader of
// sends (review, fan-out, and every later one) goes through it.
func CompileStored(ctx context.Context, segs Segments, websiteID string, target []byte) (*Selector, error) {
	t, err := notification.DecodeTarget(target)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnreadableTarget, err)
	}
	return Compile(ctx, segs, websiteID, t)
}

// Compile resolves a target's saved segments and compiles its filters. A
// segment that does not exist is ErrSegmentMissing.
func Compile(ctx context.Context, segs Segments, websiteID string, t notification.Target) (*Selector, error) {
	s := &Selector{WebsiteID: websiteID, ExternalIDs: t.ExternalIDs, TopicID: t.TopicID, TestDevices: t.TestDevices,
		SubscriberID: t.SubscriberID, EndpointID: t.EndpointID}
	if t.EndpointID != "" && (len(t.ExternalIDs) > 0 || t.ProductAlert != nil || t.TestDevices || t.SubscriberID != "") {
		// Never read wider, nor retried forever: the send fails.
		return nil, fmt.Errorf("%w: a send to one browser names nobody else", ErrUnreadableTarget)
	}
	if t.ProductAlert != nil {
		if t.ProductAlert.ID == "" {
			return nil, errors.New("a product alert's target names no alert")
		}
		s.AlertID = t.ProductAlert.ID
	}
	s.add(&s.include, t.Filters)
	s.add(&s.exclude, t.ExcludeFilters)
	for _, ref := range []struct {
		id   string
		into *[]*filter.Matcher
	}{{t.SegmentID, &s.include}, {t.ExcludeSegmentID, &s.exclude}} {
		if ref.id == "" {
			continue
		}
		seg, err := segs.Segment(ctx, websiteID, ref.id)
		if errors.Is(err, store.ErrNotFound) {
			return nil, fmt.Errorf("%w: %s", ErrSegmentMissing, ref.id)
		}
		if err != nil {
			return nil, fmt.Errorf("loading segment %s: %w", ref.id, err)
		}
		f, err := filter.Parse(seg.Filters)
		if err != nil {
			return nil, fmt.Errorf("segment %s filters: %w", ref.id, err)
		}
		s.add(ref.into, &f)
	}
	return s, nil
}

// ForFilters is the selector of filters alone (a segment preview).
func ForFilters(websiteID, topicID string, f *filter.Filters) *Selector {
	s := &Selector{WebsiteID: websiteID, TopicID: topicID}
	s.add(&s.include, f)
	return s
}

func (s *Selector) add(into *[]*filter.Matcher, f *filter.Filters) {
	if f != nil && !f.Empty() {
		*into = append(*into, filter.Compile(*f))
	}
}

// Selects reports whether the subscriber passes the filters: every included
// filter set matches and no excluded one does. (External ids and topic are
// part of the store query.)
func (s *Selector) Selects(sub *store.Subscriber) bool {
	if len(s.include) == 0 && len(s.exclude) == 0 {
		return true
	}
	a := Attributes(sub)
	for _, m := range s.include {
		if !m.Match(a) {
			return false
		}
	}
	for _, m := range s.exclude {
		if m.Match(a) {
			return false
		}
	}
	return true
}

// ReadsSubscribers reports whether Selects reads a subscriber's fields:
// whether the target has filters or segments. Without, it selects every
// recipient the store query (Query) returns.
func (s *Selector) ReadsSubscribers() bool {
	return len(s.include) > 0 || len(s.exclude) > 0
}

// Attributes is what the filter engine sees of a subscriber.
func Attributes(sub *store.Subscriber) filter.Attributes {
	return filter.Attributes{
		Country:    sub.Country,
		Language:   sub.Language,
		URL:        sub.URL,
		ExternalID: sub.ExternalID,
		Tags:       sub.Tags,
	}
}

// Query is the store query for one page of one shard of the selector.
func (s *Selector) Query(shard int, afterID string, limit int) store.AudienceQuery {
	return store.AudienceQuery{
		WebsiteID: s.WebsiteID, Shard: shard, AfterID: afterID, Limit: limit,
		ExternalIDs: s.ExternalIDs, TopicID: s.TopicID, AlertID: s.AlertID, TestDevices: s.TestDevices,
		SubscriberID: s.SubscriberID, EndpointID: s.EndpointID,
	}
}

// Reader reads who an audience reaches (store.Store is one).
type Reader interface {
	Reachable(ctx context.Context, q store.ReachQuery, fn func(sub *store.Subscriber, browsers int)) error
}

// reach is the store read of one shard of the people s selects: its
// website, external ids and topic, narrowed by what its included filters
// require (Selects still decides), with the tags when tags is set.
func (s *Selector) reach(shard int, tags bool) store.ReachQuery {
	q := store.ReachQuery{WebsiteID: s.WebsiteID, Shard: shard, ExternalIDs: s.ExternalIDs, AlertID: s.AlertID,
		TestDevices: s.TestDevices, SubscriberID: s.SubscriberID, EndpointID: s.EndpointID, Tags: tags}
	if s.TopicID != "" {
		q.Narrow.Topics = []string{s.TopicID}
	}
	for _, m := range s.include {
		for _, r := range m.Requirements() {
			switch {
			case r.Tag == "":
				if q.Narrow.Countries == nil { // one list; Selects checks the others
					q.Narrow.Countries = r.Values
				}
			case len(r.Values) == 1:
				q.Narrow.Tags = append(q.Narrow.Tags, store.TagCondition{Key: r.Tag, Value: r.Values[0], HasValue: true})
			default:
				q.Narrow.Tags = append(q.Narrow.Tags, store.TagCondition{Key: r.Tag})
			}
		}
	}
	return q
}

// usesTags reports whether any of the selectors' filters read tags.
func usesTags(sels []*Selector) bool {
	for _, s := range sels {
		for _, ms := range [][]*filter.Matcher{s.include, s.exclude} {
			for _, m := range ms {
				if m.UsesTags() {
					return true
				}
			}
		}
	}
	return false
}

// Count walks the audience base selects (its website, external ids, topic
// and filters) once and returns, for each selector, how many subscribed
// browsers of it the selector's filters select; a person on two devices
// counts twice. The selectors' own website, external ids and topic are
// ignored. It is one read of the website's people with their number of
// browsers (no endpoint), in which the store skips whom base's topic and
// filters cannot select: one sequential read beats shards read in parallel
// here, as each shard is spread over the whole table.
func Count(ctx context.Context, r Reader, base *Selector, sels ...*Selector) ([]int64, error) {
	counts := make([]int64, len(sels))
	q := base.reach(store.AllShards, usesTags(append([]*Selector{base}, sels...)))
	if err := countRead(ctx, r, base, q, sels, counts); err != nil {
		return nil, err
	}
	return counts, nil
}

// Reaches reports whether sel selects at least n subscribed browsers. It
// reads the shards one by one and stops at the first shard that brings the
// count to n, so a large audience costs about n browsers read, not all.
func Reaches(ctx context.Context, r Reader, sel *Selector, n int64) (bool, error) {
	counts := []int64{0}
	sels := []*Selector{sel}
	tags := usesTags(sels)
	for shard := range store.Shards {
		if err := countRead(ctx, r, sel, sel.reach(shard, tags), sels, counts); err != nil {
			return false, err
		}
		if counts[0] >= n {
			return true, nil
		}
	}
	return false, nil
}

func countRead(ctx context.Context, r Reader, base *Selector, q store.ReachQuery, sels []*Selector, counts []int64) error {
	err := r.Reachable(ctx, q, func(sub *store.Subscriber, browsers int) {
		if !base.Selects(sub) {
			return
		}
		for j, s := range sels {
			if s == base || s.Selects(sub) {
				counts[j] += int64(browsers)
			}
		}
	})
	if err != nil {
		return fmt.Errorf("counting audience: %w", err)
	}
	return nil
}
