package api

import (
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/relaybell/relaybell/suggestions"
)

// Codes of POST /ai/suggest that section 7 leaves to the service.
const (
	// CodeInvalidTone: tone is not friendly, urgent or formal.
	CodeInvalidTone = "invalid_tone"
	// CodeTextTooLong: a member over its length.
	CodeTextTooLong = "text_too_long"
)

// Spec 8.1: POST /ai/suggest takes 30 requests an hour per IP address.
const suggestionsPerHour = 30

// Bounds of the suggest body, in characters.
const (
	maxSuggestTitle    = 200
	maxSuggestMessage  = 1000
	maxSuggestURL      = 2048
	maxSuggestLanguage = 35
)

// handleSuggest serves POST /api/v1/ai/suggest: the configured suggester
// (suggestions.Rules unless an AI endpoint is set, which falls back to
// them) proposes titles and messages, each with why.
func (a *API) handleSuggest(r *request) error {
	if err := a.takeShared(r, a.ipLimit(r, "suggest", time.Hour, suggestionsPerHour),
		"this address may ask for suggestions %d times an hour"); err != nil {
		return err
	}
	var in suggestions.Input
	if err := decodeJSON(r.fc.Request.Body(), &in, strict); err != nil {
		return err
	}
	if strings.TrimSpace(in.Title) == "" {
		return errorf(CodeTitleRequired, "title is required")
	}
	for _, m := range []struct {
		name string
		v    string
		max  int
	}{{"title", in.Title, maxSuggestTitle}, {"message", in.Message, maxSuggestMessage}, {"url", in.URL, maxSuggestURL},
		{"language", in.Language, maxSuggestLanguage}} {
		if utf8.RuneCountInString(m.v) > m.max {
			return errorf(CodeTextTooLong, "%s is over %d characters", m.name, m.max)
		}
	}
	switch in.Tone {
	case "", suggestions.ToneFriendly, suggestions.ToneUrgent, suggestions.ToneFormal:
	default:
		return errorf(CodeInvalidTone, "tone must be friendly, urgent or formal")
	}
	out, err := a.suggest.Suggest(r.ctx, in)
	if err != nil {
		return err
	}
	return r.json(http.StatusOK, map[string][]suggestions.Suggestion{"suggestions": out})
}

func (a *API) suggestRoutes(rt *router) {
	rt.add(&route{method: http.MethodPost, pattern: "/api/v1/ai/suggest", auth: authKey, handle: a.handleSuggest})
}
