package audience

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/filter"
	"github.com/relaybell/relaybell/store"
)

// ErrInvalidCursor is returned for a cursor that is malformed or was made
// for other filters.
var ErrInvalidCursor = errors.New("invalid cursor")

// People pages a website's people newest first.
type People interface {
	People(ctx context.Context, q store.PeopleQuery) ([]store.Person, error)
}

// Tag is one label condition: the person has the label, with Value when
// HasValue.
type Tag struct {
	Key      string
	Value    string
	HasValue bool
}

// Query is the audience list's selection (spec 4.5). Conditions combine with
// AND; within one list (countries, languages, devices, topics) any element
// may match, while every tag condition must hold.
type Query struct {
	WebsiteID string
	Q         string   // a subscriber id (exact) or part of an external id (any case)
	Status    string   // "" for all, or subscribed, unsubscribed, no_device
	Countries []string // 2-letter codes
	Languages []string // "en" matches en and en-*; "en-US" only en-US (any case)
	Devices   []string
	// Topics lists topic ids; NoTopic is set when topics were asked for and
	// none exists (nobody matches).
	Topics  []string
	NoTopic bool
	Tags    []Tag
	// Date ranges, half-open [From, To); zero means unbounded.
	JoinedFrom, JoinedTo time.Time
	SeenFrom, SeenTo     time.Time
	Filters              *filter.Filters // segment rules
	// Fingerprint identifies the filters for the cursor (the api passes the
	// canonical query string without cursor and limit).
	Fingerprint string
}

// Page is one page of the audience list.
type Page struct {
	Items []store.Person
	Next  string // cursor of the next page; "" on the last
}

// scanPage is how many people a list reads from the store at a time.
const scanPage = 500

// matcher is a Query ready to evaluate.
type matcher struct {
	q       *Query
	filters *filter.Matcher
}

func newMatcher(q *Query) *matcher {
	m := &matcher{q: q}
	if q.Filters != nil && !q.Filters.Empty() {
		m.filters = filter.Compile(*q.Filters)
	}
	return m
}

func (m *matcher) matches(p *store.Person) bool {
	q := m.q
	if q.NoTopic {
		return false
	}
	if q.Q != "" && p.ID != q.Q && !containsFold(p.ExternalID, q.Q) {
		return false
	}
	if q.Status != "" && p.Status() != q.Status {
		return false
	}
	if len(q.Countries) > 0 && !slices.Contains(q.Countries, p.Country) {
		return false
	}
	if len(q.Languages) > 0 && !slices.ContainsFunc(q.Languages, func(l string) bool { return languageMatches(l, p.Language) }) {
		return false
	}
	if len(q.Devices) > 0 && !slices.ContainsFunc(p.Devices, func(d string) bool { return slices.Contains(q.Devices, d) }) {
		return false
	}
	if len(q.Topics) > 0 && !slices.ContainsFunc(p.Topics, func(t string) bool { return slices.Contains(q.Topics, t) }) {
		return false
	}
	for _, t := range q.Tags {
		v, ok := p.Tags[t.Key]
		if !ok || (t.HasValue && v != t.Value) {
			return false
		}
	}
	if !inRange(p.CreatedAt, q.JoinedFrom, q.JoinedTo) || !inRange(p.LastSeenAt, q.SeenFrom, q.SeenTo) {
		return false
	}
	return m.filters == nil || m.filters.Match(Attributes(&p.Subscriber))
}

func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}

// languageMatches: "en" matches en, en-US, en_GB...; "en-US" only en-US.
func languageMatches(want, lang string) bool {
	if strings.EqualFold(want, lang) {
		return true
	}
	if strings.ContainsAny(want, "-_") || len(lang) <= len(want) {
		return false
	}
	return strings.EqualFold(lang[:len(want)], want) && (lang[len(want)] == '-' || lang[len(want)] == '_')
}

func inRange(t, from, to time.Time) bool {
	return (from.IsZero() || !t.Before(from)) && (to.IsZero() || t.Before(to))
}

// List returns up to limit people matching q, newest first, continuing
// after cursor (from the newest when "").
func List(ctx context.Context, st People, q *Query, cursor string, limit int) (Page, error) {
	var after *store.PersonKey
	if cursor != "" {
		k, err := decodeCursor(cursor, q.Fingerprint)
		if err != nil {
			return Page{}, err
		}
		after = &k
	}
	m := newMatcher(q)
	page := Page{Items: []store.Person{}}
	if q.NoTopic {
		return page, nil
	}
	// Read one more than a page first: enough when most people match (the
	// unfiltered list); grow the reads when the filters skip many.
	size := limit + 1
	for {
		batch, err := st.People(ctx, store.PeopleQuery{WebsiteID: q.WebsiteID, After: after, Limit: size})
		if err != nil {
			return Page{}, err
		}
		for i := range batch {
			if !m.matches(&batch[i]) {
				continue
			}
			if len(page.Items) == limit {
				last := page.Items[limit-1]
				page.Next = encodeCursor(store.PersonKey{CreatedAt: last.CreatedAt, ID: last.ID}, q.Fingerprint)
				return page, nil
			}
			page.Items = append(page.Items, batch[i])
		}
		if len(batch) < size {
			return page, nil
		}
		last := batch[len(batch)-1]
		after = &store.PersonKey{CreatedAt: last.CreatedAt, ID: last.ID}
		size = min(size*4, scanPage)
	}
}

// Total counts everyone matching q.
func Total(ctx context.Context, st People, q *Query) (int64, error) {
	if q.NoTopic {
		return 0, nil
	}
	m := newMatcher(q)
	var (
		n     int64
		after *store.PersonKey
	)
	for {
		batch, err := st.People(ctx, store.PeopleQuery{WebsiteID: q.WebsiteID, After: after, Limit: 5 * scanPage})
		if err != nil {
			return 0, err
		}
		for i := range batch {
			if m.matches(&batch[i]) {
				n++
			}
		}
		if len(batch) < 5*scanPage {
			return n, nil
		}
		last := batch[len(batch)-1]
		after = &store.PersonKey{CreatedAt: last.CreatedAt, ID: last.ID}
	}
}

// A cursor is the position (creation time in µs, subscriber id) and the
// first 8 bytes of a hash of the filters it was made for.
func encodeCursor(k store.PersonKey, fingerprint string) string {
	b := binary.BigEndian.AppendUint64(nil, uint64(k.CreatedAt.UnixMicro()))
	sum := sha256.Sum256([]byte(fingerprint))
	b = append(b, sum[:8]...)
	b = append(b, k.ID...)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s, fingerprint string) (store.PersonKey, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) < 17 {
		return store.PersonKey{}, ErrInvalidCursor
	}
	sum := sha256.Sum256([]byte(fingerprint))
	if string(b[8:16]) != string(sum[:8]) {
		return store.PersonKey{}, fmt.Errorf("%w: made for other filters", ErrInvalidCursor)
	}
	us := int64(binary.BigEndian.Uint64(b[:8]))
	id := string(b[16:])
	if _, err := uuid.Parse(id); err != nil || len(id) != 36 {
		return store.PersonKey{}, ErrInvalidCursor // subscriber ids are canonical UUIDs
	}
	return store.PersonKey{CreatedAt: time.UnixMicro(us).UTC(), ID: id}, nil
}
