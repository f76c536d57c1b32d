package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/audience"
	"github.com/relaybell/relaybell/filter"
	"github.com/relaybell/relaybell/store"
)

// Segment limits.
const (
	maxSegmentName  = 120
	maxFilterRules  = 20  // spec 8.2, audience filter rules
	countedSegments = 50  // spec 8.2, segment counts in /audience/segments
	maxTopicName    = 120 // topic names
)

// segmentJSON is the Segment of spec 2.5.
type segmentJSON struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Filters   json.RawMessage `json:"filters"`
	CreatedAt time.Time       `json:"created_at"`
}

func segmentOut(sg store.Segment) segmentJSON {
	return segmentJSON{ID: sg.ID, Name: sg.Name, Filters: sg.Filters, CreatedAt: sg.CreatedAt.UTC()}
}

// segmentBody is the body of POST and PUT /segments.
type segmentBody struct {
	Name    *string          `json:"name"`
	Filters *json.RawMessage `json:"filters"`
}

// parseRules reads Filters for a segment or the audience list: well-formed,
// at most maxFilterRules rules, in canonical form.
func parseRules(raw []byte, code string) (filter.Filters, *Error) {
	f, err := filter.Parse(raw)
	if err != nil {
		return filter.Filters{}, errorf(code, "filters must be {match, rules: [{field, op, value}]}")
	}
	if len(f.Rules) > maxFilterRules {
		return filter.Filters{}, errorf(code, "at most %d rules", maxFilterRules)
	}
	return f.Normalize(), nil
}

// segmentFilters checks a segment's filters (spec 2.5): at least one
// complete rule.
func segmentFilters(raw []byte) ([]byte, *Error) {
	f, apiErr := parseRules(raw, CodeInvalidJSON)
	if apiErr != nil {
		return nil, apiErr
	}
	if f.Empty() || !f.Complete() {
		return nil, errorf(CodeSegmentNeedsARule,
			"a segment needs at least one complete rule: a field (with its key for tag:), and a value unless the op is exists or not_exists")
	}
	b, err := json.Marshal(f)
	if err != nil {
		return nil, errorf(CodeInvalidJSON, "filters: %v", err)
	}
	return b, nil
}

func segmentName(name *string) (string, *Error) {
	if name == nil || strings.TrimSpace(*name) == "" {
		return "", errorf(CodeNameRequired, "a name is required")
	}
	return cut(strings.TrimSpace(*name), maxSegmentName), nil
}

// handleListSegments serves GET /api/v1/segments.
func (a *API) handleListSegments(r *request) error {
	list, err := a.st.ListSegments(r.ctx, r.owner.Website.ID)
	if err != nil {
		return err
	}
	return answerList(r, "segments", list, always(segmentOut))
}

// handleCreateSegment serves POST /api/v1/segments.
func (a *API) handleCreateSegment(r *request) error {
	var in segmentBody
	if err := decodeJSON(r.fc.Request.Body(), &in, lenient); err != nil {
		return err
	}
	name, apiErr := segmentName(in.Name)
	if apiErr != nil {
		return apiErr
	}
	if in.Filters == nil {
		return errorf(CodeSegmentNeedsARule, "filters are required")
	}
	filters, apiErr := segmentFilters(*in.Filters)
	if apiErr != nil {
		return apiErr
	}
	sg := store.Segment{ID: uuid.NewString(), WebsiteID: r.owner.Website.ID, Name: name, Filters: filters,
		CreatedAt: r.now.UTC().Truncate(time.Millisecond)}
	if err := a.st.CreateSegment(r.ctx, sg); err != nil {
		return err
	}
	return r.json(http.StatusCreated, segmentOut(sg))
}

// ownSegment loads the {id} segment of the key's website.
func (a *API) ownSegment(r *request) (store.Segment, error) {
	return loadOwn(r, "id", a.st.Segment)
}

// handleUpdateSegment serves PUT /api/v1/segments/{id}.
func (a *API) handleUpdateSegment(r *request) error {
	sg, err := a.ownSegment(r)
	if err != nil {
		return err
	}
	var in segmentBody
	if err := decodeJSON(r.fc.Request.Body(), &in, lenient); err != nil {
		return err
	}
	if in.Name == nil && in.Filters == nil {
		return errorf(CodeNothingToUpdate, "give a name or filters")
	}
	if in.Name != nil {
		name, apiErr := segmentName(in.Name)
		if apiErr != nil {
			return apiErr
		}
		sg.Name = name
	}
	if in.Filters != nil {
		filters, apiErr := segmentFilters(*in.Filters)
		if apiErr != nil {
			return apiErr
		}
		sg.Filters = filters
	}
	if err := a.st.UpdateSegment(r.ctx, sg); errors.Is(err, store.ErrNotFound) {
		return errCode(CodeNotFound)
	} else if err != nil {
		return err
	}
	return r.json(http.StatusOK, segmentOut(sg))
}

// handleDeleteSegment serves DELETE /api/v1/segments/{id}: refused while
// something still uses the segment; an unknown id is fine.
func (a *API) handleDeleteSegment(r *request) error {
	id := r.param("id")
	if !isUUID(id) {
		return errCode(CodeNotFound)
	}
	uses, err := a.st.SegmentUses(r.ctx, r.owner.Website.ID)
	if err != nil {
		return err
	}
	// Pending sends, active RSS feeds and active recurring schedules hold
	// a segment.
	if u := uses[id]; u.Pending > 0 || u.Feeds > 0 || u.Schedules > 0 {
		return &Error{Code: CodeSegmentInUse, Message: segmentInUse(u),
			Feeds: &u.Feeds, Schedules: &u.Schedules, Pending: &u.Pending}
	}
	if err := a.st.DeleteSegment(r.ctx, r.owner.Website.ID, id); err != nil {
		return err
	}
	return r.json(http.StatusOK, okAnswer{OK: true})
}

// segmentInUse says what holds a segment.
func segmentInUse(u store.SegmentUse) string {
	var by []string
	for _, c := range []struct {
		n    int64
		what string
	}{{u.Feeds, "active feeds"}, {u.Pending, "scheduled or queued sends"}, {u.Schedules, "recurring schedules"}} {
		if c.n > 0 {
			by = append(by, fmt.Sprintf("%d %s", c.n, c.what))
		}
	}
	if len(by) > 1 {
		by = []string{strings.Join(by[:len(by)-1], ", "), by[len(by)-1]}
	}
	return strings.Join(by, " and ") + " use this segment"
}

// segmentUsers counts what uses a segment (segment_in_use, /audience/segments).
type segmentUsers struct {
	Feeds     int64 `json:"feeds"`
	Schedules int64 `json:"schedules"`
	Pending   int64 `json:"pending"`
}

type okAnswer struct {
	OK bool `json:"ok"`
}

// previewBody is the optional body of POST /segments/preview.
type previewBody struct {
	Filters *json.RawMessage `json:"filters"`
	TopicID *string          `json:"topicId"`
}

// handlePreview serves POST /api/v1/segments/preview: how many subscribed
// browsers the filters (and topic) reach, with the engine sends use.
func (a *API) handlePreview(r *request) error {
	var in previewBody
	if body := r.fc.Request.Body(); len(strings.TrimSpace(string(body))) > 0 {
		if err := decodeJSON(body, &in, lenient); err != nil {
			return err
		}
	}
	var f filter.Filters
	if in.Filters != nil {
		var apiErr *Error
		if f, apiErr = parseRules(*in.Filters, CodeInvalidJSON); apiErr != nil {
			return apiErr
		}
	}
	websiteID := r.owner.Website.ID
	topicID := ""
	if in.TopicID != nil && *in.TopicID != "" {
		t, err := a.st.Topic(r.ctx, websiteID, *in.TopicID)
		if errors.Is(err, store.ErrNotFound) {
			return r.json(http.StatusOK, map[string]int64{"count": 0}) // an unknown topic counts nobody
		}
		if err != nil {
			return err
		}
		topicID = t.ID
	}
	sel := audience.ForFilters(websiteID, topicID, &f)
	counts, err := audience.Count(r.ctx, a.st, sel, sel)
	if err != nil {
		return err
	}
	return r.json(http.StatusOK, map[string]int64{"count": counts[0]})
}

// audienceSegment is one row of GET /audience/segments.
type audienceSegment struct {
	segmentJSON
	Count      *int64       `json:"count"`
	LastSentAt *time.Time   `json:"lastSentAt"`
	UsedBy     segmentUsers `json:"usedBy"`
}

// handleAudienceSegments serves GET /api/v1/audience/segments: every
// segment with its current count (the first 50, in one walk of the
// audience), its last send and what still uses it.
func (a *API) handleAudienceSegments(r *request) error {
	websiteID := r.owner.Website.ID
	list, err := a.st.ListSegments(r.ctx, websiteID)
	if err != nil {
		return err
	}
	uses, err := a.st.SegmentUses(r.ctx, websiteID)
	if err != nil {
		return err
	}
	var sels []*audience.Selector
	for _, sg := range list[:min(len(list), countedSegments)] {
		f, err := filter.Parse(sg.Filters)
		if err != nil {
			return fmt.Errorf("segment %s filters: %w", sg.ID, err)
		}
		sels = append(sels, audience.ForFilters(websiteID, "", &f))
	}
	counts, err := audience.Count(r.ctx, a.st, audience.ForFilters(websiteID, "", nil), sels...)
	if err != nil {
		return err
	}
	out := make([]audienceSegment, len(list))
	for i, sg := range list {
		u := uses[sg.ID]
		out[i] = audienceSegment{segmentJSON: segmentOut(sg), LastSentAt: utcPtr(u.LastSentAt),
			UsedBy: segmentUsers{Feeds: u.Feeds, Schedules: u.Schedules, Pending: u.Pending}}
		if i < len(counts) {
			out[i].Count = &counts[i]
		}
	}
	return r.json(http.StatusOK, map[string]any{"segments": out})
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

func (a *API) segmentRoutes(rt *router) {
	add := func(method, pattern, scope string, h func(*request) error) {
		rt.add(&route{method: method, pattern: "/api/v1" + pattern, auth: authKey, scope: scope, handle: h})
	}
	add(http.MethodGet, "/segments", "", a.handleListSegments)
	add(http.MethodPost, "/segments", ScopeSegmentsWrite, a.handleCreateSegment)
	add(http.MethodPut, "/segments/{id}", ScopeSegmentsWrite, a.handleUpdateSegment)
	add(http.MethodDelete, "/segments/{id}", ScopeSegmentsWrite, a.handleDeleteSegment)
	add(http.MethodPost, "/segments/preview", "", a.handlePreview)
	add(http.MethodGet, "/audience/segments", ScopeSubscribersRead, a.handleAudienceSegments)
}
