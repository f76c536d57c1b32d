package api

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/relaybell/relaybell/audience"
	"github.com/relaybell/relaybell/stats"
	"github.com/relaybell/relaybell/store"
)

// audienceSubscriber is the Audience subscriber of spec 2.7.
type audienceSubscriber struct {
	ID             string       `json:"id"`
	ExternalID     *string      `json:"externalId"`
	Country        string       `json:"country"`
	Language       string       `json:"language"`
	Timezone       string       `json:"timezone"`
	Status         string       `json:"status"`
	Device         *string      `json:"device"`
	Devices        []string     `json:"devices"`
	Topics         []topicBrief `json:"topics"`
	Tags           []label      `json:"tags"`
	CreatedAt      time.Time    `json:"createdAt"`
	LastSeenAt     time.Time    `json:"lastSeenAt"`
	UnsubscribedAt *time.Time   `json:"unsubscribedAt"`
}

type topicBrief struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Slug string `json:"slug"`
}

// listValues reads a list parameter given comma-separated, repeated, or both.
func listValues(args interface{ PeekMulti(string) [][]byte }, name string) []string {
	var out []string
	for _, v := range args.PeekMulti(name) {
		for _, s := range strings.Split(string(v), ",") {
			if s = strings.TrimSpace(s); s != "" && !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	return out
}

// parseAudienceQuery reads the query parameters of GET /audience/subscribers.
func (a *API) parseAudienceQuery(r *request) (*audience.Query, *Error, error) {
	args := r.fc.QueryArgs()
	q := &audience.Query{WebsiteID: r.owner.Website.ID}
	q.Q = strings.TrimSpace(string(args.Peek("q")))
	switch status := strings.TrimSpace(string(args.Peek("status"))); status {
	case "", "all":
	case "subscribed", "unsubscribed", "no_device":
		q.Status = status
	default:
		return nil, errorf(CodeInvalidStatus, "status is all, subscribed, unsubscribed or no_device"), nil
	}
	for _, c := range listValues(args, "country") {
		q.Countries = append(q.Countries, strings.ToUpper(c))
	}
	q.Languages = listValues(args, "language")
	for _, d := range listValues(args, "device") {
		if !slices.Contains(devices, d) {
			return nil, errorf(CodeInvalidDevice, "device is one of %s", strings.Join(devices, ", ")), nil
		}
		q.Devices = append(q.Devices, d)
	}
	if topics := listValues(args, "topic"); len(topics) > 0 {
		if len(topics) > maxTopicFilters {
			return nil, errorf(CodeInvalidFilters, "at most %d topics", maxTopicFilters), nil
		}
		for _, idOrSlug := range topics {
			t, err := a.st.Topic(r.ctx, q.WebsiteID, idOrSlug)
			if errors.Is(err, store.ErrNotFound) {
				continue // an unknown topic matches nobody
			}
			if err != nil {
				return nil, nil, err
			}
			q.Topics = append(q.Topics, t.ID)
		}
		q.NoTopic = len(q.Topics) == 0
	}
	tags := listValues(args, "tag")
	if len(tags) > maxTagFilters {
		return nil, errorf(CodeInvalidFilters, "at most %d tag filters", maxTagFilters), nil
	}
	for _, t := range tags {
		if i := strings.IndexAny(t, ":="); i > 0 {
			q.Tags = append(q.Tags, store.TagCondition{Key: t[:i], Value: t[i+1:], HasValue: true})
		} else {
			q.Tags = append(q.Tags, store.TagCondition{Key: t})
		}
	}
	loc, apiErr := tzArg(r, "UTC")
	if apiErr != nil {
		return nil, apiErr, nil
	}
	for _, rg := range []struct {
		from, to   string
		start, end *time.Time
	}{{"joinedFrom", "joinedTo", &q.JoinedFrom, &q.JoinedTo}, {"seenFrom", "seenTo", &q.SeenFrom, &q.SeenTo}} {
		var err *Error
		if *rg.start, *rg.end, err = dayRange(string(args.Peek(rg.from)), string(args.Peek(rg.to)), loc); err != nil {
			return nil, err, nil
		}
	}
	if raw := string(args.Peek("filters")); strings.TrimSpace(raw) != "" {
		f, apiErr := parseRules([]byte(raw), CodeInvalidFilters)
		if apiErr != nil {
			return nil, apiErr, nil
		}
		q.Filters = &f
	}
	// The cursor is bound to every parameter but itself and the page size.
	var fp strings.Builder
	fp.WriteString(q.WebsiteID)
	args.VisitAll(func(k, v []byte) {
		if key := string(k); key != "cursor" && key != "limit" && key != "count" {
			fp.WriteString("&" + key + "=" + string(v))
		}
	})
	q.Fingerprint = fp.String()
	return q, nil, nil
}

// dayRange turns inclusive dates (YYYY-MM-DD, either may be empty) in loc
// into a half-open time range, from the first instant of the first day to
// that of the day after the last (stats.Day.Start: exact where a zone skips
// midnight).
func dayRange(from, to string, loc *time.Location) (start, end time.Time, apiErr *Error) {
	first, last, apiErr := parseDays(from, to)
	if apiErr != nil {
		return time.Time{}, time.Time{}, apiErr
	}
	if !first.IsZero() {
		start = first.Start(loc)
	}
	if !last.IsZero() {
		end = last.AddDays(1).Start(loc)
	}
	return start, end, nil
}

// parseDays reads inclusive dates (YYYY-MM-DD, either may be empty: the
// zero Day). One that is not a date, or a range that ends before it
// starts, is 400 invalid_range. GET /notifications, its export, the
// audience list and GET /stats read their from and to with it.
func parseDays(from, to string) (first, last stats.Day, apiErr *Error) {
	day := func(s string) (stats.Day, bool) {
		if s == "" {
			return stats.Day{}, true
		}
		d, err := stats.ParseDay(s)
		return d, err == nil
	}
	first, ok1 := day(from)
	last, ok2 := day(to)
	if !ok1 || !ok2 || (!first.IsZero() && !last.IsZero() && last.Sub(first) < 0) {
		return stats.Day{}, stats.Day{}, errorf(CodeInvalidRange, "dates are YYYY-MM-DD and the range must not end before it starts")
	}
	return first, last, nil
}

// handleAudience serves GET /api/v1/audience/subscribers.
func (a *API) handleAudience(r *request) error {
	q, apiErr, err := a.parseAudienceQuery(r)
	if err != nil {
		return err
	}
	if apiErr != nil {
		return apiErr
	}
	args := r.fc.QueryArgs()
	cursor, limit := string(args.Peek("cursor")), pageSize(string(args.Peek("limit")))
	var (
		page  audience.Page
		total *int64
	)
	if c := string(args.Peek("count")); c == "1" || c == "true" {
		// The page and its total from one snapshot: a write between the
		// two reads would show in one and not the other.
		err = a.st.PeopleSnapshot(r.ctx, func(st store.PeopleReader) error {
			var err error
			if page, err = audience.List(r.ctx, st, q, cursor, limit); err != nil {
				return err
			}
			n, err := audience.Total(r.ctx, st, q)
			total = &n
			return err
		})
	} else {
		page, err = audience.List(r.ctx, a.st, q, cursor, limit)
	}
	if errors.Is(err, audience.ErrInvalidCursor) {
		return errorf(CodeInvalidCursor, "cursor must be the nextCursor of the previous page, with the same filters")
	}
	if err != nil {
		return err
	}
	topics, err := a.st.ListTopics(r.ctx, q.WebsiteID)
	if err != nil {
		return err
	}
	byID := make(map[string]topicBrief, len(topics))
	for _, t := range topics {
		byID[t.ID] = topicBrief{t.ID, t.Name, t.Slug}
	}
	out := struct {
		Items      []audienceSubscriber `json:"items"`
		NextCursor *string              `json:"nextCursor"`
		Total      *int64               `json:"total,omitempty"`
	}{Items: make([]audienceSubscriber, len(page.Items)), NextCursor: orNull(page.Next), Total: total}
	for i := range page.Items {
		p := &page.Items[i]
		item := audienceSubscriber{ID: p.ID, ExternalID: orNull(p.ExternalID), Country: p.Country, Language: p.Language,
			Timezone: p.Timezone, Status: p.Status(), Device: firstDevice(p), Devices: nonNil(p.Devices),
			Topics: []topicBrief{}, Tags: labels(p.Tags, true), CreatedAt: p.CreatedAt.UTC(),
			LastSeenAt: p.LastSeenAt.UTC(), UnsubscribedAt: utcPtr(p.UnsubscribedAt)}
		for _, id := range p.Topics {
			if t, ok := byID[id]; ok {
				item.Topics = append(item.Topics, t)
			}
		}
		out.Items[i] = item
	}
	return r.json(http.StatusOK, out)
}
