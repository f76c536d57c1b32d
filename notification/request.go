package notification

import (
	"encoding/json"
	"fmt"

	"github.com/relaybell/relaybell/filter"
)

// Error is a validation failure carrying a spec error code (section 7).
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string {
	if e.Message == "" {
		return e.Code
	}
	return e.Code + ": " + e.Message
}

func errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Request is the send request of spec 2.1 as the client sent it. Pointers
// tell a field that was left out from one set to its zero value.
type Request struct {
	Title              *string                `json:"title,omitempty"`
	Body               *string                `json:"body,omitempty"`
	URL                *string                `json:"url,omitempty"`
	Icon               *string                `json:"icon,omitempty"`
	Image              *string                `json:"image,omitempty"`
	Badge              *string                `json:"badge,omitempty"`
	Actions            []Action               `json:"actions,omitempty"`
	RequireInteraction *bool                  `json:"requireInteraction,omitempty"`
	Tag                *string                `json:"tag,omitempty"`
	ExternalID         *string                `json:"externalId,omitempty"`
	ExternalIDs        *[]string              `json:"externalIds,omitempty"`
	Transactional      *bool                  `json:"transactional,omitempty"`
	SegmentID          *string                `json:"segmentId,omitempty"`
	Filters            *filter.Filters        `json:"filters,omitempty"`
	TopicID            *string                `json:"topicId,omitempty"`
	ExcludeSegmentID   *string                `json:"excludeSegmentId,omitempty"`
	ExcludeFilters     *filter.Filters        `json:"excludeFilters,omitempty"`
	SendAt             json.RawMessage        `json:"sendAt,omitempty"`
	PerTimezone        *bool                  `json:"perTimezone,omitempty"`
	LocalTime          *string                `json:"localTime,omitempty"`
	SmartTime          *bool                  `json:"smartTime,omitempty"`
	TTL                *int64                 `json:"ttl,omitempty"`
	Translations       map[string]Translation `json:"translations,omitempty"`
	AB                 *AB                    `json:"ab,omitempty"`
	ABTest             *ABTest                `json:"abTest,omitempty"`
	Draft              *bool                  `json:"draft,omitempty"`
}

// Action is one notification button.
type Action struct {
	Action string `json:"action,omitempty"`
	Title  string `json:"title"`
	URL    string `json:"url,omitempty"`
}

// Translation replaces title and body for one browser language.
type Translation struct {
	Title string `json:"title"`
	Body  string `json:"body"`
}

// AB is the second version of an A/B test.
type AB struct {
	B *Variant `json:"b"`
}

// Variant holds the fields version B overrides.
type Variant struct {
	Title *string `json:"title,omitempty"`
	Body  *string `json:"body,omitempty"`
	URL   *string `json:"url,omitempty"`
	Image *string `json:"image,omitempty"`
}

// ABTest configures the auto-winner.
type ABTest struct {
	AutoWinner  *bool  `json:"autoWinner,omitempty"`
	TestPercent *int64 `json:"testPercent,omitempty"`
	AfterHours  *int64 `json:"afterHours,omitempty"`
}

// IsDraft reports whether the request saves a draft instead of sending.
func (r *Request) IsDraft() bool { return r.Draft != nil && *r.Draft }

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func boolean(p *bool) bool { return p != nil && *p }

// SpecificUsers reports whether the send draws on the hourly budget of
// sends to specific users (spec 8.1): it names users by externalId or
// externalIds, or it is transactional and goes to a segment or filters.
// Every other send is a broadcast.
func (r *Request) SpecificUsers() bool {
	if r.ExternalIDs != nil || str(r.ExternalID) != "" {
		return true
	}
	return boolean(r.Transactional) && (str(r.SegmentID) != "" || (r.Filters != nil && !r.Filters.Empty()))
}
