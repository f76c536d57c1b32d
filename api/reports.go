package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/relaybell/relaybell/reports"
	"github.com/relaybell/relaybell/store"
)

// Reports by mail (spec 4.9 names the route group and POST /reports/test;
// the shape is issue 37's). GET /reports reads the website's settings with
// any key; PUT /reports changes them and POST /reports/test mails a report
// now, both with settings:write (spec 5). The figures and the message are
// package reports'.
//
// POST /reports/test {to?: "me" | "recipients"} mails the last period's
// report (of the website's frequency; the last seven days when it is off)
// at once:
//   - "me" (a session's default): to the calling person. For a session it
//     is the signed-in person, whatever their role (a viewer may mail
//     themselves a test report). For an API key, which belongs to the
//     account and to no person, it is the account's owner (the address
//     the account was opened with), the person who answers for its keys.
//   - "recipients" (a key's default): to the settings' recipients who are
//     members of the account now; a session needs the admin role.
const (
	CodeInvalidFrequency  = "invalid_frequency"
	CodeInvalidDay        = "invalid_day"
	CodeInvalidHour       = "invalid_hour"
	CodeInvalidRecipients = "invalid_recipients"
	CodeInvalidTarget     = "invalid_target"
	CodeNoRecipients      = "no_recipients"
)

// testReportsPerHour is how many test reports a website may mail an hour.
const testReportsPerHour = 10

// defaultReportHour is the hour of a report whose PUT named none.
const defaultReportHour = 8

func (a *API) reportRoutes(rt *router) {
	rt.add(&route{method: http.MethodGet, pattern: "/api/v1/reports", auth: authKey, handle: a.handleGetReports})
	rt.add(&route{method: http.MethodPut, pattern: "/api/v1/reports", auth: authKey, scope: ScopeSettingsWrite, handle: a.handlePutReports})
	rt.add(&route{method: http.MethodPost, pattern: "/api/v1/reports/test", auth: authKey, scope: ScopeSettingsWrite,
		role: store.RoleViewer, handle: a.handleTestReport})
}

// reportView is the answer of GET and PUT /reports: day is "mon"…"sun"
// (weekly), 1…28 (monthly) or null.
type reportView struct {
	Frequency  string   `json:"frequency"`
	Day        any      `json:"day"`
	Hour       int      `json:"hour"`
	Recipients []string `json:"recipients"`
	Timezone   string   `json:"timezone"`
}

func viewReport(rs store.ReportSettings, tz string) reportView {
	v := reportView{Frequency: rs.Frequency, Hour: rs.Hour, Recipients: rs.Recipients, Timezone: tz}
	switch rs.Frequency {
	case store.ReportWeekly:
		v.Day = rs.Day
	case store.ReportMonthly:
		n, _ := strconv.Atoi(rs.Day)
		v.Day = n
	}
	if v.Recipients == nil {
		v.Recipients = []string{}
	}
	return v
}

// reportPut is the body of PUT /reports: the whole settings. frequency
// is required; no day is null, no hour 8, no recipients none.
type reportPut struct {
	Frequency  *string         `json:"frequency"`
	Day        json.RawMessage `json:"day"`
	Hour       *int            `json:"hour"`
	Recipients []string        `json:"recipients"`
}

type reportTest struct {
	To string `json:"to"`
}

// handleGetReports serves GET /api/v1/reports.
func (a *API) handleGetReports(r *request) error {
	rs, err := a.st.ReportSettings(r.ctx, r.owner.Website.ID)
	if err != nil {
		return err
	}
	return r.json(http.StatusOK, viewReport(rs, r.owner.Website.Timezone))
}

// handlePutReports serves PUT /api/v1/reports.
func (a *API) handlePutReports(r *request) error {
	var p reportPut
	if err := decodeJSON(r.fc.Request.Body(), &p, strict); err != nil {
		return err
	}
	if p.Frequency == nil {
		return errorf(CodeInvalidFrequency, "%s", reports.ErrFrequency.Error())
	}
	rs := store.ReportSettings{Frequency: *p.Frequency, Hour: defaultReportHour, Recipients: p.Recipients, UpdatedAt: r.now}
	if p.Hour != nil {
		rs.Hour = *p.Hour
	}
	if day := bytes.TrimSpace(p.Day); len(day) > 0 && !bytes.Equal(day, []byte("null")) {
		var s string
		var n int
		switch {
		case json.Unmarshal(day, &s) == nil && rs.Frequency == store.ReportWeekly:
			rs.Day = s
		case json.Unmarshal(day, &n) == nil && rs.Frequency == store.ReportMonthly:
			rs.Day = strconv.Itoa(n)
		default:
			return errorf(CodeInvalidDay, "%s", reports.ErrDay.Error())
		}
	}
	members, err := a.memberAddresses(r)
	if err != nil {
		return err
	}
	rs, err = reports.Validate(rs, members)
	switch {
	case errors.Is(err, reports.ErrFrequency):
		return errorf(CodeInvalidFrequency, "%s", err.Error())
	case errors.Is(err, reports.ErrDay):
		return errorf(CodeInvalidDay, "%s", err.Error())
	case errors.Is(err, reports.ErrHour):
		return errorf(CodeInvalidHour, "%s", err.Error())
	case errors.Is(err, reports.ErrRecipients):
		return errorf(CodeInvalidRecipients, "%s", err.Error())
	case err != nil:
		return err
	}
	if err := a.st.PutReportSettings(r.ctx, r.owner.Website.ID, rs); err != nil {
		return err
	}
	return r.json(http.StatusOK, viewReport(rs, r.owner.Website.Timezone))
}

// memberAddresses are the addresses of the account's people: its
// members, and the owner it was opened with.
func (a *API) memberAddresses(r *request) ([]string, error) {
	ms, err := a.st.Members(r.ctx, r.owner.Account.ID)
	if err != nil {
		return nil, err
	}
	out := []string{r.owner.Account.OwnerEmail}
	for _, m := range ms {
		out = append(out, m.Email)
	}
	return out, nil
}

// handleTestReport serves POST /api/v1/reports/test.
func (a *API) handleTestReport(r *request) error {
	p := reportTest{To: "recipients"}
	if r.bySession() {
		p.To = "me"
	}
	if body := bytes.TrimSpace(r.fc.Request.Body()); len(body) > 0 {
		if err := decodeJSON(body, &p, strict); err != nil {
			return err
		}
	}
	rs, err := a.st.ReportSettings(r.ctx, r.owner.Website.ID)
	if err != nil {
		return err
	}
	var to []string
	switch p.To {
	case "me":
		if r.bySession() {
			to = []string{r.session.User.Email}
		} else {
			to = []string{r.owner.Account.OwnerEmail}
		}
	case "recipients":
		if !r.may(ScopeSettingsWrite) {
			return insufficientRole(store.RoleAdmin)
		}
		members, err := a.memberAddresses(r)
		if err != nil {
			return err
		}
		to = reports.Current(rs.Recipients, members)
	default:
		return errorf(CodeInvalidTarget, `to must be "me" or "recipients"`)
	}
	if len(to) == 0 || to[0] == "" {
		return errorf(CodeNoRecipients, "the report has no recipient who is a member of the account")
	}
	// Each builds a whole report and mails up to 20 people.
	if err := a.takeShared(r, store.RateLimit{Key: "reports:test:website:" + r.owner.Website.ID, Window: time.Hour, Max: testReportsPerHour},
		"a website may mail %d test reports an hour"); err != nil {
		return err
	}
	period := reports.Last(rs.Frequency, r.now, store.Location(r.owner.Website.Timezone))
	rep, err := reports.Build(r.ctx, a.st, r.owner.Website, period, r.now)
	if err != nil {
		return err
	}
	if _, err := reports.Queue(r.ctx, a.st, rep, to, r.now); err != nil {
		return err
	}
	return r.json(http.StatusOK, struct {
		From       string   `json:"from"`
		To         string   `json:"to"`
		Recipients []string `json:"recipients"`
	}{period.From.String(), period.To.String(), to})
}
