package notification

import (
	"bytes"
	"encoding/json"
	"reflect"

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

// Request is the send request of spec 2.1 as the client sent it. Pointers
// tell a field that was left out from one set to its zero value. The
// targeting members are Nullable, which also tells an explicit null: left
// out, a member does not narrow the audience, but a null or empty one is a
// mistake that must never widen a send to everyone (Prepare refuses it).
type Request struct {
	Title              *string                  `json:"title,omitempty"`
	Body               *string                  `json:"body,omitempty"`
	URL                *string                  `json:"url,omitempty"`
	Icon               *string                  `json:"icon,omitempty"`
	Image              *string                  `json:"image,omitempty"`
	Badge              *string                  `json:"badge,omitempty"`
	Actions            []Action                 `json:"actions,omitempty"`
	RequireInteraction *bool                    `json:"requireInteraction,omitempty"`
	Tag                *string                  `json:"tag,omitempty"`
	ExternalID         Nullable[string]         `json:"externalId,omitzero"`
	ExternalIDs        Nullable[[]string]       `json:"externalIds,omitzero"`
	Transactional      *bool                    `json:"transactional,omitempty"`
	SegmentID          Nullable[string]         `json:"segmentId,omitzero"`
	Filters            Nullable[filter.Filters] `json:"filters,omitzero"`
	TopicID            Nullable[string]         `json:"topicId,omitzero"`
	ExcludeSegmentID   Nullable[string]         `json:"excludeSegmentId,omitzero"`
	ExcludeFilters     Nullable[filter.Filters] `json:"excludeFilters,omitzero"`
	SendAt             json.RawMessage          `json:"sendAt,omitempty"`
	PerTimezone        *bool                    `json:"perTimezone,omitempty"`
	LocalTime          *string                  `json:"localTime,omitempty"`
	SmartTime          *bool                    `json:"smartTime,omitempty"`
	TTL                *int64                   `json:"ttl,omitempty"`
	Translations       map[string]Translation   `json:"translations,omitempty"`
	AB                 *AB                      `json:"ab,omitempty"`
	ABTest             *ABTest                  `json:"abTest,omitempty"`
	Draft              *bool                    `json:"draft,omitempty"`
	// TemplateID names a template of the website whose content fills
	// every content member the request leaves out (package templates).
	// It is resolved before Prepare, which never sees it set: the stored
	// notification and its send body keep the resolved content.
	TemplateID *string `json:"templateId,omitempty"`

	// TestDevices makes the send a test to the website's test devices and
	// nobody else (POST /test-devices/send sets it; no body can).
	TestDevices bool `json:"-"`
}

// AudienceOrTiming returns the name of the first member of r, present
// even as null, that chooses who gets a send or when, or that makes it a
// draft, an A/B test or transactional; "" when r has none (a send
// request's content alone, as a test send takes it).
func (r *Request) AudienceOrTiming() string {
	for _, m := range []struct {
		name string
		set  bool
	}{
		{"externalId", r.ExternalID.Set}, {"externalIds", r.ExternalIDs.Set}, {"segmentId", r.SegmentID.Set},
		{"filters", r.Filters.Set}, {"topicId", r.TopicID.Set}, {"excludeSegmentId", r.ExcludeSegmentID.Set},
		{"excludeFilters", r.ExcludeFilters.Set}, {"sendAt", r.SendAt != nil}, {"perTimezone", r.PerTimezone != nil},
		{"localTime", r.LocalTime != nil}, {"smartTime", r.SmartTime != nil}, {"ab", r.AB != nil},
		{"abTest", r.ABTest != nil}, {"draft", r.Draft != nil}, {"transactional", r.Transactional != nil},
	} {
		if m.set {
			return m.name
		}
	}
	return ""
}

// Nullable is a member that is left out (the zero Nullable), sent as null,
// or sent with a value. It marshals back as it came: left out, null, or
// the value (with the `omitzero` option).
type Nullable[T any] struct {
	Value T
	Set   bool // the member was in the body, null or not
	Null  bool // it was null
}

// Of returns a Nullable holding v.
func Of[T any](v T) Nullable[T] { return Nullable[T]{Value: v, Set: true} }

// Valued reports whether the member holds a value: present and not null.
func (n Nullable[T]) Valued() bool { return n.Set && !n.Null }

// IsZero reports whether the member was left out (for `omitzero`).
func (n Nullable[T]) IsZero() bool { return !n.Set }

// UnmarshalJSON records that the member was present, and whether it was null.
func (n *Nullable[T]) UnmarshalJSON(b []byte) error {
	*n = Nullable[T]{Set: true}
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		n.Null = true
		return nil
	}
	return json.Unmarshal(b, &n.Value)
}

// MarshalJSON writes null for a null member, else the value.
func (n Nullable[T]) MarshalJSON() ([]byte, error) {
	if n.Null || !n.Set {
		return []byte("null"), nil
	}
	return json.Marshal(n.Value)
}

// JSONShape is the type whose JSON form the member holds, for decoders
// that check member names before decoding (the API's strict decoding).
func (Nullable[T]) JSONShape() reflect.Type { return reflect.TypeFor[T]() }

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
	if r.ExternalIDs.Set || r.ExternalID.Set {
		return true
	}
	return boolean(r.Transactional) && (r.SegmentID.Set || r.Filters.Set)
}
