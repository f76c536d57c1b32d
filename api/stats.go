package api

import (
	"errors"
	"net/http"

	"github.com/relaybell/relaybell/stats"
)

func (a *API) statsRoutes(rt *router) {
	rt.add(&route{method: http.MethodGet, pattern: "/api/v1/stats", auth: authKey, handle: a.handleStats})
}

// handleStats serves GET /api/v1/stats: the website's subscribers, sends,
// clicks and CTR per day from `from` to `to` (the last 30 days by
// default) in `tz` (the website's by default), read as GET /notifications
// reads them; the report is package stats'.
func (a *API) handleStats(r *request) error {
	loc, apiErr := tzArg(r, r.owner.Website.Timezone)
	if apiErr != nil {
		return apiErr
	}
	args := r.fc.QueryArgs()
	from, to, apiErr := parseDays(string(args.Peek("from")), string(args.Peek("to")))
	if apiErr != nil {
		return apiErr
	}
	rep, err := stats.Read(r.ctx, a.st, stats.Query{WebsiteID: r.owner.Website.ID, From: from, To: to, Loc: loc, Now: r.now})
	if errors.Is(err, stats.ErrRange) {
		return &Error{Code: CodeInvalidRange, Message: stats.ErrRange.Error()}
	}
	if err != nil {
		return err
	}
	prompts, err := a.promptStats(r, r.owner.Website.ID)
	if err != nil {
		return err
	}
	// The prompt's impressions, accepts and dismissals by kind, and its
	// subscription rate (issue 36): counted since it was first shown.
	return r.json(http.StatusOK, struct {
		stats.Report
		Prompts []promptStats `json:"prompts"`
	}{rep, prompts})
}
