package audience

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/filter"
	"github.com/relaybell/relaybell/store"
)

// ErrInvalidCursor is returned for a cursor that is malformed or was made
// for other filters.
var ErrInvalidCursor = errors.New("invalid cursor")

// Query is the audience list's selection (spec 4.5): the conditions the
// store applies, and saved-segment rules applied here by the filter engine.
type Query struct {
	WebsiteID string
	store.PeopleFilter
	// NoTopic is set when topics were asked for and none exists (nobody
	// matches).
	NoTopic bool
	Filters *filter.Filters // segment rules
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

// rules is q's segment rules compiled; nil when there are none.
func (q *Query) rules() *filter.Matcher {
	if q.Filters == nil || q.Filters.Empty() {
		return nil
	}
	return filter.Compile(*q.Filters)
}

// List returns up to limit people matching q, newest first, continuing
// after cursor (from the newest when "").
func List(ctx context.Context, st store.PeopleReader, q *Query, cursor string, limit int) (Page, error) {
	var after *store.PersonKey
	if cursor != "" {
		k, err := decodeCursor(cursor, q.Fingerprint)
		if err != nil {
			return Page{}, err
		}
		after = &k
	}
	rules := q.rules()
	page := Page{Items: []store.Person{}}
	if q.NoTopic {
		return page, nil
	}
	// Read one more than a page first: enough unless segment rules skip
	// people; then grow the reads.
	size := limit + 1
	for {
		batch, err := st.People(ctx, store.PeopleQuery{WebsiteID: q.WebsiteID, Filter: q.PeopleFilter, After: after, Limit: size})
		if err != nil {
			return Page{}, err
		}
		for i := range batch {
			if rules != nil && !rules.Match(Attributes(&batch[i].Subscriber)) {
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

// Total counts everyone matching q: in the store alone unless there are
// segment rules.
func Total(ctx context.Context, st store.PeopleReader, q *Query) (int64, error) {
	if q.NoTopic {
		return 0, nil
	}
	rules := q.rules()
	if rules == nil {
		return st.CountPeople(ctx, q.WebsiteID, q.PeopleFilter)
	}
	var (
		n     int64
		after *store.PersonKey
	)
	for {
		batch, err := st.People(ctx, store.PeopleQuery{WebsiteID: q.WebsiteID, Filter: q.PeopleFilter, After: after, Limit: 5 * scanPage})
		if err != nil {
			return 0, err
		}
		for i := range batch {
			if rules.Match(Attributes(&batch[i].Subscriber)) {
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
