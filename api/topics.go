package api

import (
	"errors"
	"net/http"
	"strings"
	"time"
	"unicode"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/store"
)

// topicJSON is the Topic of spec 2.6.
type topicJSON struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	Slug        string    `json:"slug"`
	CreatedAt   time.Time `json:"created_at"`
	Subscribers int64     `json:"subscribers"`
}

func topicOut(t store.Topic) topicJSON {
	return topicJSON{ID: t.ID, Name: t.Name, Slug: t.Slug, CreatedAt: t.CreatedAt.UTC(), Subscribers: t.Subscribers}
}

// topicBody is the body of POST and PUT /topics.
type topicBody struct {
	Name *string `json:"name"`
	Slug *string `json:"slug"`
}

// slugify makes a slug of letters, digits and dashes: lower case, every run
// of anything else one dash, none at either end.
func slugify(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
			continue
		}
		dash = true
	}
	return strings.TrimRight(cut(b.String(), maxSlugLen), "-")
}

func topicName(name *string) (string, *Error) {
	if name == nil || strings.TrimSpace(*name) == "" {
		return "", errorf(CodeNameRequired, "a name is required")
	}
	return cut(strings.TrimSpace(*name), maxTopicName), nil
}

// handleListTopics serves GET /api/v1/topics, oldest first.
func (a *API) handleListTopics(r *request) error {
	list, err := a.st.ListTopics(r.ctx, r.owner.Website.ID)
	if err != nil {
		return err
	}
	out := make([]topicJSON, len(list))
	for i, t := range list {
		out[i] = topicOut(t)
	}
	return r.json(http.StatusOK, map[string]any{"topics": out})
}

// handleSaveTopic serves POST /api/v1/topics: creates the topic, or renames
// the one that already has the slug.
func (a *API) handleSaveTopic(r *request) error {
	var in topicBody
	if err := decodeJSON(r.fc.Request.Body(), &in, lenient); err != nil {
		return err
	}
	name, apiErr := topicName(in.Name)
	if apiErr != nil {
		return apiErr
	}
	slug := ""
	if in.Slug != nil {
		slug = slugify(*in.Slug)
	}
	if slug == "" {
		slug = slugify(name)
	}
	if slug == "" {
		slug = "topic-" + uuid.NewString()[:8] // a name of symbols only
	}
	t, _, err := a.st.SaveTopic(r.ctx, store.Topic{ID: uuid.NewString(), WebsiteID: r.owner.Website.ID,
		Name: name, Slug: slug, CreatedAt: r.now.UTC().Truncate(time.Millisecond)})
	if err != nil {
		return err
	}
	return r.json(http.StatusCreated, topicOut(t))
}

// handleRenameTopic serves PUT /api/v1/topics/{id}: the name only.
func (a *API) handleRenameTopic(r *request) error {
	id := r.param("id")
	if !isUUID(id) {
		return errCode(CodeNotFound)
	}
	if _, err := a.st.Topic(r.ctx, r.owner.Website.ID, id); errors.Is(err, store.ErrNotFound) {
		return errCode(CodeNotFound)
	} else if err != nil {
		return err
	}
	var in topicBody
	if err := decodeJSON(r.fc.Request.Body(), &in, lenient); err != nil {
		return err
	}
	name, apiErr := topicName(in.Name)
	if apiErr != nil {
		return apiErr
	}
	t, err := a.st.RenameTopic(r.ctx, r.owner.Website.ID, id, name)
	if errors.Is(err, store.ErrNotFound) {
		return errCode(CodeNotFound)
	}
	if err != nil {
		return err
	}
	return r.json(http.StatusOK, topicOut(t))
}

// handleDeleteTopic serves DELETE /api/v1/topics/{id}; an unknown id is fine.
func (a *API) handleDeleteTopic(r *request) error {
	id := r.param("id")
	if !isUUID(id) {
		return errCode(CodeNotFound)
	}
	if err := a.st.DeleteTopic(r.ctx, r.owner.Website.ID, id); err != nil {
		return err
	}
	return r.json(http.StatusOK, okAnswer{OK: true})
}

func (a *API) topicRoutes(rt *router) {
	add := func(method, pattern, scope string, h func(*request) error) {
		rt.add(&route{method: method, pattern: "/api/v1" + pattern, auth: authKey, scope: scope, handle: h})
	}
	add(http.MethodGet, "/topics", "", a.handleListTopics)
	add(http.MethodPost, "/topics", ScopeSettingsWrite, a.handleSaveTopic)
	add(http.MethodPut, "/topics/{id}", ScopeSettingsWrite, a.handleRenameTopic)
	add(http.MethodDelete, "/topics/{id}", ScopeSettingsWrite, a.handleDeleteTopic)
}
