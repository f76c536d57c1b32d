package api

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/relaybell/relaybell/analytics"
	"github.com/relaybell/relaybell/events"
	"github.com/relaybell/relaybell/store"
	"github.com/relaybell/relaybell/webpush"
)

// Limits of spec 8.2 for subscribers and the audience.
const (
	maxImportRows   = 10_000
	maxExportRows   = 100_000
	maxBulkIDs      = 1_000
	maxBulkLabels   = 20
	maxLabelName    = 64
	maxLabelValue   = 256
	maxShownTags    = 20
	maxTopicFilters = 5
	maxTagFilters   = 10
	maxFacetValues  = 20
	maxDataEvents   = 1_000
	maxProfileItems = 50
	defaultRecent   = 25
)

// devices are the device types of spec 2.7.
var devices = []string{"desktop", "android", "ios", "mobile", "other"}

// label is the Tag (label) of spec 2.7.
type label struct {
	Key   string  `json:"key"`
	Value *string `json:"value"`
}

// labels lists a person's labels sorted by key; shown lists leave out the
// reserved ones and keep at most maxShownTags.
func labels(tags map[string]string, shown bool) []label {
	keys := make([]string, 0, len(tags))
	for k := range tags {
		if shown && strings.HasPrefix(k, store.ReservedLabelPrefix) {
			continue
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if shown && len(keys) > maxShownTags {
		keys = keys[:maxShownTags]
	}
	out := make([]label, len(keys))
	for i, k := range keys {
		out[i] = label{Key: k}
		if v := tags[k]; v != "" {
			out[i].Value = &v
		}
	}
	return out
}

func orNull(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// firstDevice is the most recently seen device type, or null.
func firstDevice(p *store.Person) *string {
	if len(p.Devices) == 0 {
		return nil
	}
	return &p.Devices[0]
}

// personKey loads the {externalId} person (an external id or a subscriber id).
// An external id is matched exactly; a subscriber id in any letter case.
func (a *API) personKey(r *request) (store.Person, error) {
	key := r.param("externalId")
	p, err := a.st.Person(r.ctx, r.owner.Website.ID, key)
	if lower := strings.ToLower(key); errors.Is(err, store.ErrNotFound) && lower != key && isUUID(key) {
		if p, err = a.st.Person(r.ctx, r.owner.Website.ID, lower); err == nil && p.ID != lower {
			err = store.ErrNotFound // an external id equal to the lower-cased text is not this one
		}
	}
	if errors.Is(err, store.ErrNotFound) {
		return store.Person{}, errorf(CodeNotFound, "no subscriber with that external id or id")
	}
	return p, err
}

// recentSubscriber is the Recent subscriber of spec 2.7.
type recentSubscriber struct {
	ID             string     `json:"id"`
	ExternalID     *string    `json:"external_id"`
	Country        string     `json:"country"`
	Language       string     `json:"language"`
	Timezone       string     `json:"timezone"`
	CreatedAt      time.Time  `json:"created_at"`
	UnsubscribedAt *time.Time `json:"unsubscribed_at"`
	Device         *string    `json:"device"`
	LastSeenAt     time.Time  `json:"last_seen_at"`
}

// handleRecent serves GET /api/v1/subscribers/recent.
func (a *API) handleRecent(r *request) error {
	limit := defaultRecent
	if v := string(r.fc.QueryArgs().Peek("limit")); v != "" {
		limit = pageSize(v)
	}
	list, err := a.st.People(r.ctx, store.PeopleQuery{WebsiteID: r.owner.Website.ID, Limit: limit})
	if err != nil {
		return err
	}
	out := make([]recentSubscriber, len(list))
	for i := range list {
		p := &list[i]
		out[i] = recentSubscriber{ID: p.ID, ExternalID: orNull(p.ExternalID), Country: p.Country, Language: p.Language,
			Timezone: p.Timezone, CreatedAt: p.CreatedAt.UTC(), UnsubscribedAt: utcPtr(p.UnsubscribedAt),
			Device: firstDevice(p), LastSeenAt: p.LastSeenAt.UTC()}
	}
	return r.json(http.StatusOK, map[string]any{"subscribers": out})
}

// importBody is the body of POST /subscribers/import.
type importBody struct {
	Subscribers *[]struct {
		ExternalID  *string                    `json:"externalId"`
		ExternalID2 *string                    `json:"external_id"`
		Tags        map[string]json.RawMessage `json:"tags"`
		Topics      []string                   `json:"topics"`
	} `json:"subscribers"`
}

// importTag turns an imported label value (string, number, boolean or
// null) into its text; ok is false for anything else.
func importTag(raw json.RawMessage) (string, bool) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", false
	}
	switch x := v.(type) {
	case nil:
		return "", true
	case string:
		return x, true
	case bool:
		return strconv.FormatBool(x), true
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), true
	}
	return "", false
}

// validLabel checks a label name and value against spec 8.2.
func validLabel(name, value string) bool {
	n := utf8.RuneCountInString(name)
	return n >= 1 && n <= maxLabelName && utf8.ValidString(name) &&
		utf8.RuneCountInString(value) <= maxLabelValue && utf8.ValidString(value)
}

// handleImport serves POST /api/v1/subscribers/import.
func (a *API) handleImport(r *request) error {
	var in importBody
	if err := decodeJSON(r.fc.Request.Body(), &in, lenient); err != nil {
		return err
	}
	if in.Subscribers == nil || len(*in.Subscribers) == 0 {
		return errorf(CodeNoSubscribers, "subscribers must list 1 to %d rows", maxImportRows)
	}
	rows := *in.Subscribers
	var notes []string
	if len(rows) > maxImportRows {
		notes = append(notes, fmt.Sprintf("only the first %d rows were imported", maxImportRows))
		rows = rows[:maxImportRows]
	}
	skipped := 0
	out := make([]store.ImportRow, 0, len(rows))
	for _, row := range rows {
		ext := row.ExternalID
		if ext == nil || *ext == "" {
			ext = row.ExternalID2
		}
		if ext == nil || strings.TrimSpace(*ext) == "" || len(*ext) > maxExternalIDLen || !utf8.ValidString(*ext) {
			continue
		}
		ir := store.ImportRow{ExternalID: *ext, Topics: row.Topics}
		for k, raw := range row.Tags {
			v, ok := importTag(raw)
			if !ok || !validLabel(k, v) || strings.HasPrefix(k, store.ReservedLabelPrefix) {
				skipped++
				continue
			}
			if ir.Tags == nil {
				ir.Tags = map[string]string{}
			}
			ir.Tags[k] = v
		}
		out = append(out, ir)
	}
	if skipped > 0 {
		notes = append(notes, fmt.Sprintf("%d labels were skipped (invalid or reserved)", skipped))
	}
	n, err := a.st.ImportPeople(r.ctx, r.owner.Website.ID, out, r.now)
	if err != nil {
		return err
	}
	imported := make([]string, len(out))
	var tagged []string
	for i, row := range out {
		imported[i] = row.ExternalID
		if len(row.Tags) > 0 {
			tagged = append(tagged, row.ExternalID)
		}
	}
	// The import's opt-ins trigger topic_opt_in as a browser's do (the
	// store recorded them with the import).
	if a.automations != nil {
		if _, err := a.automations.Pending(r.ctx, r.owner.Website.ID, ""); err != nil {
			return fmt.Errorf("starting automations: %w", err)
		}
	}
	if err := a.peopleChanged(r, r.owner.Website.ID, imported); err != nil {
		return err
	}
	if err := a.tagsChanged(r, r.owner.Website.ID, tagged); err != nil {
		return err
	}
	return r.json(http.StatusOK, struct {
		OK        bool   `json:"ok"`
		Processed int    `json:"processed"`
		Note      string `json:"note,omitempty"`
	}{true, n, strings.Join(notes, "; ")})
}

// handleExport serves GET /api/v1/subscribers/export: CSV, newest first,
// streamed page by page.
func (a *API) handleExport(r *request) error {
	websiteID := r.owner.Website.ID
	first, err := a.st.People(r.ctx, store.PeopleQuery{WebsiteID: websiteID, Limit: 1000})
	if err != nil {
		return err
	}
	fc := r.fc
	fc.SetStatusCode(http.StatusOK)
	fc.SetContentType("text/csv; charset=utf-8")
	fc.Response.Header.Set("Content-Disposition", `attachment; filename="relaybell-subscribers.csv"`)
	fc.SetBodyStreamWriter(func(bw *bufio.Writer) {
		ctx, cancel := context.WithTimeout(a.base, 10*time.Minute)
		defer cancel()
		w := csv.NewWriter(bw)
		_ = w.Write([]string{"subscriber_id", "external_id", "country", "language", "timezone", "status",
			"consent_at", "devices", "tags", "created_at"})
		page, rows := first, 0
		for {
			for i := range page {
				if rows == maxExportRows {
					w.Flush()
					return
				}
				p := &page[i]
				_ = w.Write([]string{p.ID, csvSafe(p.ExternalID), csvSafe(p.Country), csvSafe(p.Language), csvSafe(p.Timezone),
					p.Status(), csvTime(p.ConsentAt), csvSafe(strings.Join(p.Devices, "|")), csvTags(p.Tags), csvTime(&p.CreatedAt)})
				rows++
			}
			w.Flush()
			if len(page) < 1000 || w.Error() != nil {
				return
			}
			last := page[len(page)-1]
			var err error
			if page, err = a.st.People(ctx, store.PeopleQuery{WebsiteID: websiteID, Limit: 1000,
				After: &store.PersonKey{CreatedAt: last.CreatedAt, ID: last.ID}}); err != nil {
				a.log.Error("exporting subscribers", "request_id", r.id, "err", err)
				return
			}
		}
	})
	return nil
}

func csvTime(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// csvTags writes a person's tags as key=value;... with each key and value
// through csvSafe: the first key starts the cell, and a spreadsheet told to
// split on ';' starts a cell with each key.
func csvTags(tags map[string]string) string {
	parts := make([]string, 0, len(tags))
	for _, l := range labels(tags, false) {
		v := ""
		if l.Value != nil {
			v = *l.Value
		}
		parts = append(parts, csvSafe(l.Key)+"="+csvSafe(v))
	}
	return strings.Join(parts, ";")
}

// personJSON is the subscriber member of the data and profile answers.
type personJSON struct {
	ID             string     `json:"id"`
	ExternalID     *string    `json:"externalId"`
	Country        string     `json:"country"`
	Language       string     `json:"language"`
	Timezone       string     `json:"timezone"`
	CreatedAt      time.Time  `json:"createdAt"`
	UnsubscribedAt *time.Time `json:"unsubscribedAt"`
	ConsentAt      *time.Time `json:"consentAt"`
}

func personOut(p *store.Person) personJSON {
	return personJSON{ID: p.ID, ExternalID: orNull(p.ExternalID), Country: p.Country, Language: p.Language,
		Timezone: p.Timezone, CreatedAt: p.CreatedAt.UTC(), UnsubscribedAt: utcPtr(p.UnsubscribedAt),
		ConsentAt: utcPtr(p.ConsentAt)}
}

// endpointJSON is one browser of a person.
type endpointJSON struct {
	ID         string    `json:"id"`
	Type       string    `json:"type,omitempty"`
	Device     string    `json:"device"`
	UserAgent  string    `json:"user_agent"`
	CreatedAt  time.Time `json:"created_at"`
	LastSeenAt time.Time `json:"last_seen_at"`
}

func (a *API) endpointsOut(r *request, p *store.Person, withType bool) ([]endpointJSON, error) {
	eps, err := a.st.PersonEndpoints(r.ctx, r.owner.Website.ID, p.ID)
	if err != nil {
		return nil, err
	}
	out := make([]endpointJSON, len(eps))
	for i, e := range eps {
		out[i] = endpointJSON{ID: e.ID, Device: e.Device, UserAgent: e.UserAgent,
			CreatedAt: e.CreatedAt.UTC(), LastSeenAt: e.LastSeenAt.UTC()}
		if withType {
			out[i].Type = webpush.ServiceOf(e.URL)
		}
	}
	return out, nil
}

// deliveryEvent is one push or interaction of a person.
type deliveryEvent struct {
	Type           string    `json:"type"`
	NotificationID string    `json:"notification_id"`
	Device         string    `json:"device"`
	CreatedAt      time.Time `json:"created_at"`
}

// handleData serves GET /api/v1/subscribers/{externalId}/data: everything
// stored about the person (right of access).
func (a *API) handleData(r *request) error {
	p, err := a.personKey(r)
	if err != nil {
		return err
	}
	eps, err := a.endpointsOut(r, &p, true)
	if err != nil {
		return err
	}
	evs, err := a.an.PersonEvents(r.ctx, r.owner.Website.ID, []string{p.ID}, nil, maxDataEvents)
	if err != nil {
		return err
	}
	delivery := make([]deliveryEvent, len(evs))
	for i, e := range evs {
		delivery[i] = deliveryEvent{Type: e.Kind, NotificationID: e.NotificationID, Device: e.Device, CreatedAt: e.At.UTC()}
	}
	behavioral, err := a.personEvents(r, &p, maxDataEvents)
	if err != nil {
		return err
	}
	interests, err := a.st.Interests(r.ctx, r.owner.Website.ID, []string{p.ID}, r.now.Add(-events.InterestLife), maxDataEvents)
	if err != nil {
		return err
	}
	type interest struct {
		ProductID string    `json:"product_id"`
		Kind      string    `json:"kind"`
		CreatedAt time.Time `json:"created_at"`
	}
	products := make([]interest, len(interests))
	for i, in := range interests {
		products[i] = interest{ProductID: in.ProductID, Kind: in.Kind, CreatedAt: in.CreatedAt.UTC()}
	}
	return r.json(http.StatusOK, map[string]any{
		"subscriber":       personOut(&p),
		"tags":             labels(p.Tags, false),
		"endpoints":        eps,
		"deliveryEvents":   delivery,
		"behavioralEvents": behavioral,
		"productInterests": products,
	})
}

// handleProfile serves GET /api/v1/subscribers/{externalId}/profile.
func (a *API) handleProfile(r *request) error {
	p, err := a.personKey(r)
	if err != nil {
		return err
	}
	eps, err := a.endpointsOut(r, &p, false)
	if err != nil {
		return err
	}
	topics, err := a.st.ListTopics(r.ctx, r.owner.Website.ID)
	if err != nil {
		return err
	}
	type topicRef struct {
		Name string `json:"name"`
		Slug string `json:"slug"`
	}
	mine := []topicRef{}
	for _, t := range topics {
		if slices.Contains(p.Topics, t.ID) {
			mine = append(mine, topicRef{t.Name, t.Slug})
		}
	}
	counts, err := a.an.PersonCounts(r.ctx, r.owner.Website.ID, []string{p.ID})
	if err != nil {
		return err
	}
	evs, err := a.an.PersonEvents(r.ctx, r.owner.Website.ID, []string{p.ID}, []string{analytics.KindSent}, maxProfileItems)
	if err != nil {
		return err
	}
	type send struct {
		Type           string    `json:"type"`
		NotificationID string    `json:"notification_id"`
		CreatedAt      time.Time `json:"created_at"`
		Title          string    `json:"title"`
	}
	sends := []send{}
	stats := struct {
		Delivered int64 `json:"delivered"`
		Clicked   int64 `json:"clicked"`
	}{counts[analytics.KindDelivered], counts[analytics.KindClicked]}
	sent := map[string]store.Notification{}
	for _, e := range evs {
		n, ok := sent[e.NotificationID]
		if !ok {
			if n, err = a.st.Notification(r.ctx, r.owner.Website.ID, e.NotificationID); err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
			sent[e.NotificationID] = n
		}
		kind := "broadcast"
		switch {
		case n.Welcome:
			kind = "welcome"
		case n.Automation:
			kind = "automation"
		}
		sends = append(sends, send{Type: kind, NotificationID: e.NotificationID, CreatedAt: e.At.UTC(), Title: n.Title})
	}
	recent, err := a.personEvents(r, &p, maxProfileItems)
	if err != nil {
		return err
	}
	return r.json(http.StatusOK, map[string]any{
		"subscriber": personOut(&p),
		"tags":       labels(p.Tags, false),
		"endpoints":  eps,
		"topics":     mine,
		"sends":      sends,
		"events":     recent,
		"stats":      stats,
	})
}

// erase permanently deletes people and every event recorded about them,
// the behavioral events logged under their external ids (externalIDs)
// included. The events go first (scoped to the website, so other websites'
// ids in a bulk call erase nothing): should that fail, the people are still
// there and the call can be repeated, whereas people erased first would
// leave their events unreachable.
func (a *API) erase(r *request, ids, externalIDs []string) ([]store.Subscriber, error) {
	if err := a.an.Erase(r.ctx, r.owner.Website.ID, ids, externalIDs); err != nil {
		return nil, err
	}
	return a.st.ErasePeople(r.ctx, r.owner.Website.ID, ids)
}

// handleErase serves DELETE /api/v1/subscribers/{externalId}.
func (a *API) handleErase(r *request) error {
	p, err := a.personKey(r)
	if err != nil {
		return err
	}
	var external []string
	if p.ExternalID != "" {
		external = []string{p.ExternalID}
	}
	if _, err := a.erase(r, []string{p.ID}, external); err != nil {
		return err
	}
	return r.json(http.StatusOK, map[string]any{"ok": true, "erased": true, "subscriberId": p.ID})
}

// bulkBody is the body of the bulk-tag and bulk-delete routes.
type bulkBody struct {
	IDs    *[]string                  `json:"ids"`
	Set    map[string]json.RawMessage `json:"set"`
	Remove []string                   `json:"remove"`
}

func bulkIDs(ids *[]string) ([]string, *Error) {
	if ids == nil || len(*ids) == 0 {
		return nil, errorf(CodeIDsRequired, "ids must list 1 to %d subscriber ids", maxBulkIDs)
	}
	if len(*ids) > maxBulkIDs {
		return nil, errorf(CodeTooManyIDs, "at most %d ids", maxBulkIDs)
	}
	out := make([]string, 0, len(*ids))
	for _, id := range *ids {
		if !isUUID(id) {
			return nil, errorf(CodeInvalidID, "%q is not a subscriber id", cut(id, 64))
		}
		id = strings.ToLower(id)
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out, nil
}

// handleBulkTag serves POST /api/v1/audience/subscribers/bulk-tag.
func (a *API) handleBulkTag(r *request) error {
	var in bulkBody
	if err := decodeJSON(r.fc.Request.Body(), &in, lenient); err != nil {
		return err
	}
	ids, apiErr := bulkIDs(in.IDs)
	if apiErr != nil {
		return apiErr
	}
	if len(in.Set) == 0 && len(in.Remove) == 0 {
		return errorf(CodeNothingToChange, "give labels to set or remove")
	}
	if len(in.Set)+len(in.Remove) > maxBulkLabels {
		return errorf(CodeTooManyLabels, "at most %d labels per call", maxBulkLabels)
	}
	set := make(map[string]string, len(in.Set))
	for k, raw := range in.Set {
		var v *string
		if err := json.Unmarshal(raw, &v); err != nil {
			return errorf(CodeInvalidLabel, "the value of %q must be a string or null", cut(k, maxLabelName))
		}
		value := ""
		if v != nil {
			value = *v
		}
		if apiErr := checkLabel(k, value); apiErr != nil {
			return apiErr
		}
		set[k] = value
	}
	for _, k := range in.Remove {
		if apiErr := checkLabel(k, ""); apiErr != nil {
			return apiErr
		}
	}
	n, err := a.st.TagPeople(r.ctx, r.owner.Website.ID, ids, set, in.Remove)
	if err != nil {
		return err
	}
	if err := a.peopleChanged(r, r.owner.Website.ID, ids); err != nil {
		return err
	}
	if err := a.tagsChanged(r, r.owner.Website.ID, ids); err != nil {
		return err
	}
	return r.json(http.StatusOK, map[string]any{"ok": true, "updated": n})
}

func checkLabel(name, value string) *Error {
	if !validLabel(name, value) {
		return errorf(CodeInvalidLabel, "label names are 1-%d characters and values up to %d", maxLabelName, maxLabelValue)
	}
	if strings.HasPrefix(name, store.ReservedLabelPrefix) {
		return errorf(CodeReservedLabel, "labels starting with %q are reserved", store.ReservedLabelPrefix)
	}
	return nil
}

// handleBulkDelete serves POST /api/v1/audience/subscribers/bulk-delete.
func (a *API) handleBulkDelete(r *request) error {
	var in bulkBody
	if err := decodeJSON(r.fc.Request.Body(), &in, lenient); err != nil {
		return err
	}
	ids, apiErr := bulkIDs(in.IDs)
	if apiErr != nil {
		return apiErr
	}
	// Their external ids, for the events logged under them.
	var external []string
	for _, id := range ids {
		p, err := a.st.Person(r.ctx, r.owner.Website.ID, id)
		if err == nil && p.ID == id && p.ExternalID != "" {
			external = append(external, p.ExternalID)
		} else if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
	}
	erased, err := a.erase(r, ids, external)
	if err != nil {
		return err
	}
	return r.json(http.StatusOK, map[string]any{"ok": true, "deleted": len(erased)})
}

// handleFacets serves GET /api/v1/audience/subscribers/facets.
func (a *API) handleFacets(r *request) error {
	f, err := a.st.Facets(r.ctx, r.owner.Website.ID, maxFacetValues)
	if err != nil {
		return err
	}
	return r.json(http.StatusOK, struct {
		Countries []store.FacetValue `json:"countries"`
		Languages []store.FacetValue `json:"languages"`
		Devices   []store.FacetValue `json:"devices"`
		Tags      []store.TagFacet   `json:"tags"`
		Topics    []store.TopicFacet `json:"topics"`
	}{nonNil(f.Countries), nonNil(f.Languages), nonNil(f.Devices), nonNil(f.Tags), nonNil(f.Topics)})
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func (a *API) peopleRoutes(rt *router) {
	add := func(method, pattern, scope string, h func(*request) error) {
		rt.add(&route{method: method, pattern: "/api/v1" + pattern, auth: authKey, scope: scope, handle: h})
	}
	add(http.MethodGet, "/subscribers/export", ScopeSubscribersRead, a.handleExport)
	add(http.MethodGet, "/subscribers/recent", ScopeSubscribersRead, a.handleRecent)
	add(http.MethodPost, "/subscribers/import", ScopeSubscribersWrite, a.handleImport)
	add(http.MethodGet, "/subscribers/{externalId}/data", ScopeSubscribersRead, a.handleData)
	add(http.MethodGet, "/subscribers/{externalId}/profile", ScopeSubscribersRead, a.handleProfile)
	add(http.MethodDelete, "/subscribers/{externalId}", ScopeSubscribersWrite, a.handleErase)
	add(http.MethodGet, "/audience/subscribers", ScopeSubscribersRead, a.handleAudience)
	add(http.MethodGet, "/audience/subscribers/facets", ScopeSubscribersRead, a.handleFacets)
	add(http.MethodPost, "/audience/subscribers/bulk-tag", ScopeSubscribersWrite, a.handleBulkTag)
	add(http.MethodPost, "/audience/subscribers/bulk-delete", ScopeSubscribersWrite, a.handleBulkDelete)
}
