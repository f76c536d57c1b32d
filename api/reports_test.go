package api

import (
	"context"
	"strings"
	"testing"

	"github.com/relaybell/relaybell/reports"
)

func TestReportRoutes(t *testing.T) {
	h := newHarness(t)
	site, err := CreateWebsite(context.Background(), h.st, NewWebsite{Name: "Mail", URL: "https://mail.example", OwnerEmail: "boss@mail.example"}, testStart)
	if err != nil {
		t.Fatal(err)
	}
	key := site.APIKey
	get := func(k, want string) {
		t.Helper()
		r := h.do("GET", "/api/v1/reports", "", auth(k)...)
		if r.status != 200 || string(r.body) != want {
			t.Fatalf("GET /reports: %d %s\nwant %s", r.status, r.body, want)
		}
	}
	get(key, `{"frequency":"off","day":null,"hour":0,"recipients":[],"timezone":"UTC"}`)

	put := func(body string) response { t.Helper(); return h.do("PUT", "/api/v1/reports", body, auth(key)...) }
	f := func(body string, status int, code, message string) {
		t.Helper()
		expectError(t, put(body), status, code, message)
	}
	f(`{}`, 400, CodeInvalidFrequency, `,"message":"`+reports.ErrFrequency.Error()+`"`)
	f(`{"frequency":"hourly"}`, 400, CodeInvalidFrequency, `,"message":"`+reports.ErrFrequency.Error()+`"`)
	f(`{"frequency":"weekly"}`, 400, CodeInvalidDay, `,"message":"`+reports.ErrDay.Error()+`"`)
	f(`{"frequency":"weekly","day":"monday"}`, 400, CodeInvalidDay, `,"message":"`+reports.ErrDay.Error()+`"`)
	f(`{"frequency":"weekly","day":1}`, 400, CodeInvalidDay, `,"message":"`+reports.ErrDay.Error()+`"`)
	f(`{"frequency":"monthly","day":29}`, 400, CodeInvalidDay, `,"message":"`+reports.ErrDay.Error()+`"`)
	f(`{"frequency":"monthly","day":"3"}`, 400, CodeInvalidDay, `,"message":"`+reports.ErrDay.Error()+`"`)
	f(`{"frequency":"daily","day":"mon"}`, 400, CodeInvalidDay, `,"message":"`+reports.ErrDay.Error()+`"`)
	f(`{"frequency":"daily","hour":24}`, 400, CodeInvalidHour, `,"message":"`+reports.ErrHour.Error()+`"`)
	f(`{"frequency":"daily","hour":-1}`, 400, CodeInvalidHour, `,"message":"`+reports.ErrHour.Error()+`"`)
	f(`{"frequency":"daily","recipients":["stranger@mail.example"]}`, 400, CodeInvalidRecipients,
		`,"message":"`+reports.ErrRecipients.Error()+`: stranger@mail.example is not a member of the account"`)
	f(`{"frequency":"daily","recipients":["not an address"]}`, 400, CodeInvalidRecipients,
		`,"message":"`+reports.ErrRecipients.Error()+`: \"not an address\" is not an e-mail address"`)
	f(`{"frequency":"daily","extra":1}`, 400, CodeUnknownField, `,"message":"unknown field \"extra\""`)
	get(key, `{"frequency":"off","day":null,"hour":0,"recipients":[],"timezone":"UTC"}`)

	// A read-only key reads but does not change; another website's key
	// sees its own.
	ro, k, err := NewAPIKey(site.WebsiteID, "read", []string{ScopeSend}, nil, h.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := h.st.CreateAPIKey(context.Background(), k); err != nil {
		t.Fatal(err)
	}
	get(ro, `{"frequency":"off","day":null,"hour":0,"recipients":[],"timezone":"UTC"}`)
	expectCode(t, h.do("PUT", "/api/v1/reports", `{"frequency":"daily"}`, auth(ro)...), 403, CodeInsufficientScope)
	expectCode(t, h.do("POST", "/api/v1/reports/test", ``, auth(ro)...), 403, CodeInsufficientScope)

	// In this order: the test report below reads the last one.
	for _, c := range []struct{ body, want string }{
		{`{"frequency":"weekly","day":"fri","hour":7,"recipients":["Boss@Mail.example","boss@mail.example"]}`, `{"frequency":"weekly","day":"fri","hour":7,"recipients":["boss@mail.example"],"timezone":"UTC"}`},
		{`{"frequency":"monthly","day":28,"recipients":[]}`, `{"frequency":"monthly","day":28,"hour":8,"recipients":[],"timezone":"UTC"}`},
	} {
		if r := put(c.body); r.status != 200 || string(r.body) != c.want {
			t.Fatalf("PUT %s: %d %s\nwant %s", c.body, r.status, r.body, c.want)
		}
		get(key, c.want)
	}
	get(h.site.APIKey, `{"frequency":"off","day":null,"hour":0,"recipients":[],"timezone":"UTC"}`)

	// The test report: to the listed recipients (none now) answers 409;
	// to "me", an API key's calling person is the account's owner.
	expectError(t, h.do("POST", "/api/v1/reports/test", ``, auth(key)...), 409, CodeNoRecipients,
		`,"message":"the report has no recipient who is a member of the account"`)
	expectError(t, h.do("POST", "/api/v1/reports/test", `{"to":"them"}`, auth(key)...), 400, CodeInvalidTarget,
		`,"message":"to must be \"me\" or \"recipients\""`)
	r := h.do("POST", "/api/v1/reports/test", `{"to":"me"}`, auth(key)...)
	if r.status != 200 || string(r.body) != `{"from":"2026-02-01","to":"2026-02-28","recipients":["boss@mail.example"]}` {
		t.Fatalf("POST /reports/test: %d %s", r.status, r.body)
	}
	ms, err := h.st.Emails(context.Background(), false, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 1 || ms[0].To != "boss@mail.example" || !strings.HasPrefix(ms[0].ContentType, "multipart/related;") ||
		ms[0].Subject != "RelayBell report for Mail: 2026-02-01 to 2026-02-28" {
		t.Fatalf("outbox %+v", ms)
	}
	// The site without an owner address has nobody to mail.
	expectError(t, h.do("POST", "/api/v1/reports/test", `{"to":"me"}`, auth(h.site.APIKey)...), 409, CodeNoRecipients,
		`,"message":"the report has no recipient who is a member of the account"`)
}

// A viewer may mail themselves a test report, and be a recipient, but
// neither change the settings nor mail the recipients; a person who left
// the account is mailed no more.
func TestReportSessions(t *testing.T) {
	h := newHarness(t)
	owner, site := h.owner(t, "owner@shop.example", "Shop")
	acct := site
	viewer := h.member(t, "viewer@shop.example", testPassword, acct.AccountID, "viewer")
	vp := &person{h: h, email: viewer.Email, token: h.sessionOf(t, viewer.ID)}
	project := []string{"X-Project-Id", site.ProjectID}

	r := owner.do("PUT", "/api/v1/reports", `{"frequency":"daily","hour":6,"recipients":["viewer@shop.example","owner@shop.example"]}`, project...)
	if want := `{"frequency":"daily","day":null,"hour":6,"recipients":["viewer@shop.example","owner@shop.example"],"timezone":"UTC"}`; r.status != 200 || string(r.body) != want {
		t.Fatalf("PUT as the owner: %d %s", r.status, r.body)
	}
	expectCode(t, vp.do("PUT", "/api/v1/reports", `{"frequency":"off"}`, project...), 403, CodeInsufficientRole)
	expectCode(t, vp.do("POST", "/api/v1/reports/test", `{"to":"recipients"}`, project...), 403, CodeInsufficientRole)
	r = vp.do("POST", "/api/v1/reports/test", ``, project...)
	if r.status != 200 || string(r.body) != `{"from":"2026-02-28","to":"2026-02-28","recipients":["viewer@shop.example"]}` {
		t.Fatalf("a viewer's test report: %d %s", r.status, r.body)
	}
	if err := h.st.RemoveMember(context.Background(), acct.AccountID, viewer.ID); err != nil {
		t.Fatal(err)
	}
	r = owner.do("POST", "/api/v1/reports/test", `{"to":"recipients"}`, project...)
	if r.status != 200 || string(r.body) != `{"from":"2026-02-28","to":"2026-02-28","recipients":["owner@shop.example"]}` {
		t.Fatalf("the recipients' test report after the viewer left: %d %s", r.status, r.body)
	}
	if n := h.mailCount(t, "viewer@shop.example"); n != 1 {
		t.Fatalf("%d messages to the viewer, want 1", n)
	}
}

// A website mails at most testReportsPerHour test reports an hour.
func TestReportTestLimit(t *testing.T) {
	h := newHarness(t)
	site, err := CreateWebsite(context.Background(), h.st, NewWebsite{Name: "Mail", URL: "https://mail.example", OwnerEmail: "boss@mail.example"}, testStart)
	if err != nil {
		t.Fatal(err)
	}
	key := auth(site.APIKey)
	for i := range testReportsPerHour {
		if r := h.do("POST", "/api/v1/reports/test", `{"to":"me"}`, key...); r.status != 200 {
			t.Fatalf("test report %d: %d %s", i+1, r.status, r.body)
		}
	}
	r := h.do("POST", "/api/v1/reports/test", `{"to":"me"}`, key...)
	expectCode(t, r, 429, CodeRateLimited)
	if r.header["Retry-After"] == "" {
		t.Fatal("no Retry-After")
	}
}
