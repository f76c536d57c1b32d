package notification

import (
	"context"
	"errors"
	"strings"

	"github.com/relaybell/relaybell/filter"
	"github.com/relaybell/relaybell/store"
)

// CodeInvalidAudience is the catalog's invalid_audience.
const CodeInvalidAudience = "invalid_audience"

// Audience is who a feed's items or a schedule's occurrences go to:
// everyone, or exactly one of a topic (id or slug; ResolveTopic keeps its
// id), a segment or filters, as a send's; optionally less a segment or
// filters. It never defaults to everyone.
type Audience struct {
	Everyone         *bool           `json:"everyone,omitempty"`
	TopicID          *string         `json:"topicId,omitempty"`
	SegmentID        *string         `json:"segmentId,omitempty"`
	Filters          *filter.Filters `json:"filters,omitempty"`
	ExcludeSegmentID *string         `json:"excludeSegmentId,omitempty"`
	ExcludeFilters   *filter.Filters `json:"excludeFilters,omitempty"`
}

// ErrAudienceRequired is the refusal of a definition without an audience.
var ErrAudienceRequired = &Error{Code: CodeInvalidAudience,
	Message: `audience is required: {"everyone": true} or exactly one of topicId, segmentId, filters`}

// Check reports what is wrong with the audience's shape, as an *Error
// with code invalid_audience (that its topic, segment and filters exist
// and read is Prepare's to check).
func (a Audience) Check() error {
	n := 0
	if a.Everyone != nil {
		if !*a.Everyone {
			return &Error{Code: CodeInvalidAudience, Message: "everyone is true or left out: an audience never defaults to everyone"}
		}
		n++
	}
	for _, f := range []struct {
		name string
		v    *string
	}{{"topicId", a.TopicID}, {"segmentId", a.SegmentID}, {"excludeSegmentId", a.ExcludeSegmentID}} {
		if f.v != nil && strings.TrimSpace(*f.v) == "" {
			return &Error{Code: CodeInvalidAudience, Message: f.name + " must not be empty"}
		}
	}
	for _, set := range []bool{a.TopicID != nil, a.SegmentID != nil, a.Filters != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return &Error{Code: CodeInvalidAudience, Message: `audience is {"everyone": true} or exactly one of topicId, segmentId, filters`}
	}
	return nil
}

// Apply sets the audience as req's target.
func (a Audience) Apply(req *Request) {
	if a.TopicID != nil {
		req.TopicID = Of(*a.TopicID)
	}
	if a.SegmentID != nil {
		req.SegmentID = Of(*a.SegmentID)
	}
	if a.Filters != nil {
		req.Filters = Of(*a.Filters)
	}
	if a.ExcludeSegmentID != nil {
		req.ExcludeSegmentID = Of(*a.ExcludeSegmentID)
	}
	if a.ExcludeFilters != nil {
		req.ExcludeFilters = Of(*a.ExcludeFilters)
	}
}

// ResolveTopic replaces a topic named by its slug with its id, so that
// the topic's deletion finds what targets it: unknown_topic when the
// website has no such topic.
func (a *Audience) ResolveTopic(ctx context.Context, l Lookup, websiteID string) error {
	if a.TopicID == nil {
		return nil
	}
	t, err := l.Topic(ctx, websiteID, *a.TopicID)
	if errors.Is(err, store.ErrNotFound) {
		return &Error{Code: "unknown_topic", Message: "no topic " + *a.TopicID + " on this website"}
	}
	if err != nil {
		return err
	}
	a.TopicID = &t.ID
	return nil
}

// IDs are the audience's topic, segment and excluded segment ids, "" for
// none: the columns that find what uses a topic or segment.
func (a Audience) IDs() (topicID, segmentID, excludeSegmentID string) {
	deref := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	return deref(a.TopicID), deref(a.SegmentID), deref(a.ExcludeSegmentID)
}
