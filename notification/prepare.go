package notification

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/filter"
	"github.com/relaybell/relaybell/store"
)

// Limits and defaults of spec 2.1 and 8.2.
const (
	DefaultTTL         = 24 * 60 * 60
	MaxTTL             = 2419200
	MaxActions         = 2
	DefaultTestPercent = 20
	DefaultAfterHours  = 4
)

// Content is what a send shows, resolved against the website's defaults. It
// is stored as JSON with the notification and read back by the pusher.
type Content struct {
	Title              string                 `json:"title"`
	Body               string                 `json:"body,omitempty"`
	URL                string                 `json:"url,omitempty"`
	Icon               string                 `json:"icon,omitempty"`
	Image              string                 `json:"image,omitempty"`
	Badge              string                 `json:"badge,omitempty"`
	Actions            []Action               `json:"actions,omitempty"`
	RequireInteraction bool                   `json:"requireInteraction,omitempty"`
	Tag                string                 `json:"tag,omitempty"`
	TTL                int                    `json:"ttl"`
	Transactional      bool                   `json:"transactional,omitempty"`
	Translations       map[string]Translation `json:"translations,omitempty"`
	B                  *Variant               `json:"b,omitempty"`      // A/B: version B's overrides
	ABTest             *ABSettings            `json:"abTest,omitempty"` // auto-winner settings
	PerTimezone        bool                   `json:"perTimezone,omitempty"`
	LocalTime          string                 `json:"localTime,omitempty"` // HH:MM
	SmartTime          bool                   `json:"smartTime,omitempty"`
}

// ABSettings are the resolved auto-winner settings.
type ABSettings struct {
	AutoWinner  bool `json:"autoWinner"`
	TestPercent int  `json:"testPercent"`
	AfterHours  int  `json:"afterHours"`
}

// Target is how the audience is chosen; the zero Target means everyone.
type Target struct {
	ExternalIDs      []string        `json:"externalIds,omitempty"`
	SegmentID        string          `json:"segmentId,omitempty"`
	Filters          *filter.Filters `json:"filters,omitempty"`
	TopicID          string          `json:"topicId,omitempty"`
	ExcludeSegmentID string          `json:"excludeSegmentId,omitempty"`
	ExcludeFilters   *filter.Filters `json:"excludeFilters,omitempty"`
	// ProductAlert makes the send a product alert: it goes to the audience
	// fixed for it (store.Behavior.CreateProductAlert) and nobody else.
	ProductAlert *ProductAlert `json:"productAlert,omitempty"`
	// TestDevices makes the send a test: it goes to the website's test
	// devices (store.TestDevices) and nobody else.
	TestDevices bool `json:"testDevices,omitempty"`
	// SubscriberID makes the send go to that one person's browsers and
	// nobody else's (an automation's message). No request sets it; a node
	// that does not know it refuses the target (DecodeTarget), so it can
	// never widen a send.
	SubscriberID string `json:"subscriberId,omitempty"`
	// EndpointID makes the send go to that one browser (endpoint) and
	// nobody else, not even its person's other browsers (a new browser's
	// welcome). No request sets it either, and a node that does not know
	// it refuses the target.
	EndpointID string `json:"endpointId,omitempty"`
}

// ProductAlert is the target of a product alert.
type ProductAlert struct {
	// ID is the notification whose fixed audience the alert goes to (its
	// own id).
	ID        string `json:"id"`
	Kind      string `json:"kind"` // price_drop or back_in_stock
	ProductID string `json:"productId"`
}

// Everyone reports whether the target selects every subscriber.
func (t Target) Everyone() bool {
	return len(t.ExternalIDs) == 0 && t.SegmentID == "" && noRules(t.Filters) && t.TopicID == "" &&
		t.ExcludeSegmentID == "" && noRules(t.ExcludeFilters) && t.ProductAlert == nil && !t.TestDevices &&
		t.SubscriberID == "" && t.EndpointID == ""
}

func noRules(f *filter.Filters) bool { return f == nil || f.Empty() }

// Lookup is what validation needs from the store.
type Lookup interface {
	Segment(ctx context.Context, websiteID, id string) (store.Segment, error)
	Topic(ctx context.Context, websiteID, idOrSlug string) (store.Topic, error)
}

var clockTimeRe = regexp.MustCompile(`^([01]?[0-9]|2[0-3]):([0-5][0-9])$`)

// ClockTime reads a wall-clock time written H:MM or HH:MM and returns it
// as HH:MM.
func ClockTime(s string) (string, bool) {
	m := clockTimeRe.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return "", false
	}
	return fmt.Sprintf("%02s:%s", m[1], m[2]), true
}

// errUnresolvedTemplate refuses a request whose templateId was not
// resolved first (package templates): its content would be incomplete.
var errUnresolvedTemplate = errors.New("notification: a templateId is resolved before Prepare (templates.Apply)")

// Prepare validates a request for website w and returns the notification to
// store: a draft, or a send that is queued now or scheduled for later.
// Validation failures are *Error with the spec's code; nothing is stored here.
func Prepare(ctx context.Context, r *Request, w store.Website, lk Lookup, now time.Time) (*store.Notification, error) {
	if r.TemplateID != nil {
		return nil, errUnresolvedTemplate
	}
	now = now.UTC()
	n := &store.Notification{
		ID:        uuid.NewString(),
		WebsiteID: w.ID,
		Status:    store.StatusQueued,
		CreatedAt: now,
	}
	content, err := resolveContent(r, w)
	if err != nil {
		return nil, err
	}
	target := resolveTarget(r)
	n.TargetSummary = target.Summary() // names the topic as the request did
	if !r.IsDraft() {
		if err := validate(ctx, r, w, lk, &target); err != nil {
			return nil, err
		}
		if err := content.checkSize(); err != nil {
			return nil, err
		}
	}
	for _, id := range []string{target.SegmentID, target.ExcludeSegmentID} {
		if id != "" && !slices.Contains(n.Segments, id) {
			n.Segments = append(n.Segments, id)
		}
	}
	if r.IsDraft() {
		n.Status = store.StatusDraft
	} else if t := SendTiming(r, w, now); !t.At.IsZero() {
		n.Status = store.StatusScheduled
		n.ScheduledAt = &t.At
	}
	n.Title = content.Title
	n.Body = content.Body
	n.Transactional = content.Transactional
	n.Test = r.TestDevices
	n.AB = content.B != nil
	if n.Content, err = json.Marshal(content); err != nil {
		return nil, fmt.Errorf("encoding content: %w", err)
	}
	if !target.Everyone() {
		if n.Target, err = json.Marshal(target); err != nil {
			return nil, fmt.Errorf("encoding target: %w", err)
		}
	}
	if r.TestDevices {
		return n, nil // no send body: as a POST /notifications body it would go to everyone
	}
	sendBody := *r
	sendBody.Draft = nil
	if n.SendBody, err = json.Marshal(sendBody); err != nil {
		return nil, fmt.Errorf("encoding send body: %w", err)
	}
	return n, nil
}

// validate checks what a send needs and resolves the target's topic slug
// to the topic's id.
func validate(ctx context.Context, r *Request, w store.Website, lk Lookup, target *Target) error {
	if strings.TrimSpace(str(r.Title)) == "" {
		return &Error{Code: "title_required", Message: "a title is required to send"}
	}
	if err := checkTargeting(r); err != nil {
		return err
	}
	if err := checkLinks(r); err != nil {
		return err
	}
	if _, ok := ClockTime(str(r.LocalTime)); r.LocalTime != nil && boolean(r.PerTimezone) && !ok {
		return &Error{Code: "invalid_json", Message: "localTime must be H:MM or HH:MM"}
	}
	if boolean(r.PerTimezone) && r.LocalTime == nil {
		return &Error{Code: "invalid_json", Message: "perTimezone needs localTime (H:MM or HH:MM)"}
	}
	for _, id := range []string{target.SegmentID, target.ExcludeSegmentID} {
		if id == "" {
			continue
		}
		err := store.ErrNotFound
		if IsUUID(id) {
			_, err = lk.Segment(ctx, w.ID, id)
		}
		if errors.Is(err, store.ErrNotFound) {
			return &Error{Code: "segment_not_found", Message: "no segment " + id + " on this website"}
		}
		if err != nil {
			return fmt.Errorf("looking up segment: %w", err)
		}
	}
	if target.TopicID != "" {
		t, err := lk.Topic(ctx, w.ID, target.TopicID)
		if errors.Is(err, store.ErrNotFound) {
			return &Error{Code: "unknown_topic", Message: "no topic " + target.TopicID + " on this website"}
		}
		if err != nil {
			return fmt.Errorf("looking up topic: %w", err)
		}
		target.TopicID = t.ID
	}
	return nil
}

// checkTargeting refuses a targeting member that is present but names no
// one: sent as null, empty, or filters without a complete rule. Left out, a
// member does not narrow the audience, so such a mistake would otherwise
// send to everyone (or exclude no one), which a send for specific people
// must never do:
//   - externalIds null, empty or only blank ids, or (without externalIds)
//     externalId null or blank: 400 external_ids_empty;
//   - segmentId or excludeSegmentId null or blank: 400 segment_not_found;
//   - topicId null or blank: 400 unknown_topic;
//   - filters or excludeFilters null, or without a complete rule (spec 2.5:
//     a field, with its key for tag:, and a value unless exists or
//     not_exists): 400 invalid_filters.
func checkTargeting(r *Request) error {
	switch {
	case r.ExternalIDs.Set:
		if len(externalIDs(r)) == 0 {
			return &Error{Code: "external_ids_empty", Message: "externalIds names no one; it never sends to everyone (leave it out to send to everyone)"}
		}
	case r.ExternalID.Set:
		if len(externalIDs(r)) == 0 {
			return &Error{Code: "external_ids_empty", Message: "externalId is empty; it never sends to everyone (leave it out to send to everyone)"}
		}
	}
	for _, m := range []struct {
		name string
		v    Nullable[string]
		code string
	}{
		{"segmentId", r.SegmentID, "segment_not_found"},
		{"excludeSegmentId", r.ExcludeSegmentID, "segment_not_found"},
		{"topicId", r.TopicID, "unknown_topic"},
	} {
		if m.v.Set && strings.TrimSpace(m.v.Value) == "" {
			return &Error{Code: m.code, Message: m.name + " is empty; leave it out instead"}
		}
	}
	for _, m := range []struct {
		name string
		v    Nullable[filter.Filters]
	}{{"filters", r.Filters}, {"excludeFilters", r.ExcludeFilters}} {
		if m.v.Set && !m.v.Value.Complete() {
			return &Error{Code: "invalid_filters", Message: m.name + " needs at least one complete rule (a field and a value); leave it out instead"}
		}
	}
	return nil
}

// externalIDs returns the users a request names, without blanks or
// repeats: externalIds when present, else externalId.
func externalIDs(r *Request) []string {
	ids := r.ExternalIDs.Value
	if !r.ExternalIDs.Set {
		ids = []string{r.ExternalID.Value}
	}
	seen := make(map[string]bool, len(ids))
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if strings.TrimSpace(id) != "" && !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// IsUUID reports whether s is a UUID in its 36-character form, the only
// form an id of the API takes.
func IsUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	_, err := uuid.Parse(s)
	return err == nil
}

func resolveContent(r *Request, w store.Website) (Content, error) {
	c := Content{
		Title:              str(r.Title),
		Body:               str(r.Body),
		URL:                str(r.URL),
		Icon:               str(r.Icon),
		Image:              str(r.Image),
		Badge:              str(r.Badge),
		RequireInteraction: boolean(r.RequireInteraction),
		Tag:                str(r.Tag),
		TTL:                DefaultTTL,
		Transactional:      boolean(r.Transactional) || r.TestDevices, // a test goes now: no quiet hours, no cap
		PerTimezone:        boolean(r.PerTimezone),
		SmartTime:          boolean(r.SmartTime) && !boolean(r.PerTimezone),
	}
	if c.URL == "" {
		c.URL = w.Settings.DefaultURL
		if c.URL == "" {
			c.URL = w.URL
		}
	}
	c.URL = AddUTM(c.URL, w.Settings)
	if c.Icon == "" && w.Settings.Logo != nil {
		c.Icon = w.Settings.Logo.URL
	}
	if c.Icon == "" {
		c.Icon = w.Settings.DefaultIcon
	}
	if r.TTL != nil {
		c.TTL = int(min(max(*r.TTL, 1), MaxTTL))
	}
	for _, a := range r.Actions {
		if len(c.Actions) == MaxActions {
			break
		}
		if strings.TrimSpace(a.Title) == "" {
			continue
		}
		if a.Action == "" {
			a.Action = fmt.Sprintf("btn%d", len(c.Actions)+1)
		}
		if !IsHTTPURL(a.URL) {
			a.URL = ""
		}
		c.Actions = append(c.Actions, a)
	}
	if c.PerTimezone && r.LocalTime != nil {
		c.LocalTime, _ = ClockTime(*r.LocalTime)
	}
	for lang, t := range r.Translations {
		if len(lang) != 2 {
			continue
		}
		if c.Translations == nil {
			c.Translations = make(map[string]Translation)
		}
		c.Translations[strings.ToLower(lang)] = t
	}
	if r.AB != nil && r.AB.B != nil && (r.AB.B.Title != nil || r.AB.B.Body != nil || r.AB.B.URL != nil || r.AB.B.Image != nil) {
		b := *r.AB.B
		if b.URL != nil {
			u := AddUTM(*b.URL, w.Settings)
			b.URL = &u
		}
		c.B = &b
		if r.ABTest != nil {
			c.ABTest = &ABSettings{
				AutoWinner:  boolean(r.ABTest.AutoWinner),
				TestPercent: clampDefault(r.ABTest.TestPercent, 1, 90, DefaultTestPercent),
				AfterHours:  clampDefault(r.ABTest.AfterHours, 1, 168, DefaultAfterHours),
			}
		}
	}
	return c, nil
}

// clampDefault gives def when v is unset and v clamped into [lo, hi] otherwise.
func clampDefault(v *int64, lo, hi, def int64) int {
	if v == nil {
		return int(def)
	}
	return int(min(max(*v, lo), hi))
}

// resolveTarget is the request's target as stored. A UUID segment id is
// kept in its canonical lower case, so the id matches in any letter case.
func resolveTarget(r *Request) Target {
	var t Target
	if r.TestDevices {
		return Target{TestDevices: true} // its route refuses targeting members
	}
	if r.ExternalIDs.Set || r.ExternalID.Set {
		t.ExternalIDs = externalIDs(r)
	}
	t.SegmentID = canonicalID(r.SegmentID.Value)
	t.TopicID = r.TopicID.Value
	t.ExcludeSegmentID = canonicalID(r.ExcludeSegmentID.Value)
	if f := r.Filters.Value; !f.Empty() {
		f = f.Normalize()
		t.Filters = &f
	}
	if f := r.ExcludeFilters.Value; !f.Empty() {
		f = f.Normalize()
		t.ExcludeFilters = &f
	}
	return t
}

// canonicalID lower-cases a UUID; anything else is returned as it is.
func canonicalID(s string) string {
	if IsUUID(s) {
		return strings.ToLower(s)
	}
	return s
}

// parseSendAt reads sendAt; anything unreadable means "now".
func parseSendAt(raw json.RawMessage) (time.Time, bool) {
	var s string
	if len(raw) == 0 || json.Unmarshal(raw, &s) != nil {
		return time.Time{}, false
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04:05"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

// AddUTM adds the website's UTM tags to an http(s) link unless the link
// already carries them. It works on the text, so merge tags survive.
func AddUTM(link string, s store.Settings) string {
	if link == "" || !(strings.HasPrefix(link, "http://") || strings.HasPrefix(link, "https://")) {
		return link
	}
	frag := ""
	if i := strings.IndexByte(link, '#'); i >= 0 {
		link, frag = link[:i], link[i:]
	}
	for _, kv := range [][2]string{{"utm_source", s.UTMSource}, {"utm_medium", s.UTMMedium}, {"utm_campaign", s.UTMCampaign}} {
		if kv[1] == "" || strings.Contains(link, kv[0]+"=") {
			continue
		}
		sep := "?"
		if strings.Contains(link, "?") {
			sep = "&"
		}
		link += sep + kv[0] + "=" + url.QueryEscape(kv[1])
	}
	return link + frag
}

// Summary describes the target in words for lists and reports.
func (t Target) Summary() string {
	var parts []string
	switch {
	case t.TestDevices:
		return "Test devices"
	case t.EndpointID != "":
		return "Browser " + t.EndpointID
	case t.SubscriberID != "":
		return "Subscriber " + t.SubscriberID
	case t.ProductAlert != nil && t.ProductAlert.Kind == store.InterestBackInStock:
		parts = append(parts, "People waiting for product "+t.ProductAlert.ProductID+" to be back in stock")
	case t.ProductAlert != nil:
		parts = append(parts, "People interested in product "+t.ProductAlert.ProductID)
	case len(t.ExternalIDs) == 1:
		parts = append(parts, "User "+t.ExternalIDs[0])
	case len(t.ExternalIDs) > 1:
		parts = append(parts, fmt.Sprintf("%d users", len(t.ExternalIDs)))
	case t.SegmentID != "":
		parts = append(parts, "Segment "+t.SegmentID)
	case !noRules(t.Filters):
		parts = append(parts, "Subscribers matching "+plural(len(t.Filters.Rules), "filter"))
	default:
		parts = append(parts, "All subscribers")
	}
	if t.SegmentID != "" && len(t.ExternalIDs) > 0 {
		parts = append(parts, "in segment "+t.SegmentID)
	}
	if t.TopicID != "" {
		parts = append(parts, "in topic "+t.TopicID)
	}
	if t.ExcludeSegmentID != "" {
		parts = append(parts, "excluding segment "+t.ExcludeSegmentID)
	}
	if !noRules(t.ExcludeFilters) {
		parts = append(parts, "excluding "+plural(len(t.ExcludeFilters.Rules), "filter"))
	}
	return strings.Join(parts, ", ")
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
