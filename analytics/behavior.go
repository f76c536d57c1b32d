package analytics

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// Behavior is one behavioral event a website posted (spec 2.8).
type Behavior struct {
	ID           string // uuid, assigned by the caller
	WebsiteID    string
	Name         string // at most MaxBehaviorName characters (the caller cuts)
	ExternalID   string // "" when none named
	SubscriberID string // "" when none
	// Properties is a JSON object, kept byte for byte; nil or empty means
	// {}, and reads back as {}.
	Properties json.RawMessage
	Source     string // "server" or "browser"
	// NotificationID is the notification the event was credited to as a
	// conversion ("" none), Value the value credited.
	NotificationID string
	Value          float64
	Conversion     bool
	At             time.Time // kept to the millisecond
	// Seq orders behaviors of the same millisecond as they were accepted:
	// a NextSeq stamp, taken when the API took the event. Reads list the
	// newest first by (At, Seq, ID); behaviors from before it have 0.
	Seq int64
}

// lastSeq is the last stamp NextSeq gave.
var lastSeq atomic.Int64

// NextSeq is a stamp for Behavior.Seq: the time in Unix nanoseconds, or
// one more than the last stamp this process gave when the clock has not
// moved past it (or went back), so that the stamps of one process are
// strictly increasing in the order they were taken, and those of the
// processes of one machine follow one clock.
func NextSeq() int64 {
	for {
		last, now := lastSeq.Load(), time.Now().UnixNano()
		if now <= last {
			now = last + 1
		}
		if lastSeq.CompareAndSwap(last, now) {
			return now
		}
	}
}

// BehaviorQuery selects behavioral events of one website, newest first.
type BehaviorQuery struct {
	WebsiteID string
	// SubscriberIDs and ExternalID select the events of these subscribers
	// OR logged under that external id; with neither, the website's latest.
	// Empty ids select nothing.
	SubscriberIDs []string
	ExternalID    string
	Limit         int // 1..MaxBehaviorLimit
}

// Behavior limits.
const (
	// MaxBehaviorName bounds a name, in characters (spec: cut to 120).
	MaxBehaviorName = 120
	// MaxBehaviorBytes bounds the text of a behavior, its properties and
	// its other strings together. In the cluster a behavior travels alone
	// in a Kafka record at worst, and the producer refuses records over
	// 1,000,012 bytes (its default batch limit), so a request body of 1 MB
	// (the API's limit) can carry properties too large to be recorded:
	// Check refuses them with ErrBehaviorTooLarge in every mode, so that
	// the embedded and the cluster modes agree.
	MaxBehaviorBytes = 990_000
	// MaxBehaviorLimit bounds BehaviorQuery.Limit.
	MaxBehaviorLimit = 1000
)

// ErrBehaviorTooLarge is the error CheckBehaviors wraps for a behavior over
// MaxBehaviorBytes (the API's 413).
var ErrBehaviorTooLarge = errors.New("behavior too large")

// CheckBehaviors returns an error for the first of behaviors that no store
// can hold: an empty id or website, a name over MaxBehaviorName characters,
// properties that are not a JSON object in UTF-8, a value that is NaN or
// infinite, a time before 1970 or after 2105, or more than MaxBehaviorBytes
// of text. Every RecordBehaviors refuses such a batch whole, as Record does
// with Check.
func CheckBehaviors(behaviors []Behavior) error {
	for i := range behaviors {
		if err := behaviors[i].check(); err != nil {
			return fmt.Errorf("behavior %d: %w", i, err)
		}
	}
	return nil
}

func (b *Behavior) check() error {
	switch {
	case b.ID == "" || b.WebsiteID == "":
		return fmt.Errorf("behavior %q of website %q: an id and a website are required", b.ID, b.WebsiteID)
	case utf8.RuneCountInString(b.Name) > MaxBehaviorName:
		return fmt.Errorf("behavior %s: name longer than %d characters", b.ID, MaxBehaviorName)
	case b.At.Before(minAt) || b.At.After(maxAt):
		return fmt.Errorf("behavior %s at %s cannot be stored", b.ID, b.At.Format(time.RFC3339Nano))
	case b.Seq < 0:
		return fmt.Errorf("behavior %s: seq %d cannot be stored", b.ID, b.Seq)
	case math.IsNaN(b.Value) || math.IsInf(b.Value, 0):
		return fmt.Errorf("behavior %s: value %v cannot be stored", b.ID, b.Value)
	case b.textBytes() > MaxBehaviorBytes:
		return fmt.Errorf("behavior %s: %d bytes, at most %d: %w", b.ID, b.textBytes(), MaxBehaviorBytes, ErrBehaviorTooLarge)
	case !isObject(b.Properties):
		return fmt.Errorf("behavior %s: properties are not a JSON object", b.ID)
	}
	return nil
}

// textBytes is what MaxBehaviorBytes bounds.
func (b *Behavior) textBytes() int {
	return len(b.ID) + len(b.WebsiteID) + len(b.Name) + len(b.ExternalID) + len(b.SubscriberID) +
		len(b.Properties) + len(b.Source) + len(b.NotificationID)
}

// isObject reports whether p is empty (read as {}) or a JSON object in
// UTF-8 (RFC 8259 requires it; json.Valid does not check it).
func isObject(p json.RawMessage) bool {
	if len(p) == 0 {
		return true
	}
	for _, c := range p {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		case '{':
			return utf8.Valid(p) && json.Valid(p)
		}
		return false
	}
	return false
}

// PropertiesText is the text a store keeps for b's properties: {} when it
// has none.
func (b *Behavior) PropertiesText() string {
	if len(b.Properties) == 0 {
		return "{}"
	}
	return string(b.Properties)
}

// Check returns an error when no store can answer q: a Limit out of
// 1..MaxBehaviorLimit.
func (q *BehaviorQuery) Check() error {
	if q.Limit < 1 || q.Limit > MaxBehaviorLimit {
		return fmt.Errorf("behavior query: limit %d out of 1..%d", q.Limit, MaxBehaviorLimit)
	}
	return nil
}

// Subscribers is q.SubscriberIDs without empty ids, and whether q selects
// by person at all (false: the website's latest). A query naming only
// empty ids selects by person and finds nobody.
func (q *BehaviorQuery) Subscribers() (ids []string, byPerson bool) {
	return NonEmpty(q.SubscriberIDs), len(q.SubscriberIDs) > 0 || q.ExternalID != ""
}

// NonEmpty is ids without the empty ones: an erasure or a query naming ""
// must never reach the rows that name nobody.
func NonEmpty(ids []string) []string {
	var out []string
	for _, id := range ids {
		if id != "" {
			out = append(out, id)
		}
	}
	return out
}
