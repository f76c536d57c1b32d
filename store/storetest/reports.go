package storetest

import (
	"context"
	"testing"

	"github.com/relaybell/relaybell/store"
)

var reportCases = []testCase{
	{"Settings", testReportSettings},
	{"HTMLMail", testReportMail},
}

func testReportSettings(t *testing.T, s store.Store) {
	ctx := context.Background()
	w, other := newWebsite(t, s), newWebsite(t, s)
	got, err := s.ReportSettings(ctx, w.Website.ID)
	noErr(t, "ReportSettings", err)
	same(t, "a new website's report", got, store.ReportSettings{Frequency: store.ReportOff, Recipients: []string{}})

	weekly := store.ReportSettings{Frequency: store.ReportWeekly, Day: "mon", Hour: 9,
		Recipients: []string{"a@example.com", "b@example.com"}, UpdatedAt: at(5 * 1e6)}
	noErr(t, "PutReportSettings", s.PutReportSettings(ctx, w.Website.ID, weekly))
	got, err = s.ReportSettings(ctx, w.Website.ID)
	noErr(t, "ReportSettings", err)
	same(t, "the stored report", got, weekly)

	monthly := store.ReportSettings{Frequency: store.ReportMonthly, Day: "28", Hour: 23, Recipients: nil, UpdatedAt: at(6 * 1e6)}
	noErr(t, "PutReportSettings again", s.PutReportSettings(ctx, w.Website.ID, monthly))
	got, err = s.ReportSettings(ctx, w.Website.ID)
	noErr(t, "ReportSettings", err)
	monthly.Recipients = []string{}
	same(t, "the replaced report", got, monthly)

	got, err = s.ReportSettings(ctx, other.Website.ID)
	noErr(t, "ReportSettings of another website", err)
	same(t, "another website's report", got, store.ReportSettings{Frequency: store.ReportOff, Recipients: []string{}})
}

// testReportMail: a message of another MIME type keeps it in the outbox.
func testReportMail(t *testing.T, s store.Store) {
	ctx := context.Background()
	m := store.Email{ID: "11111111-1111-4111-8111-111111111111", To: "a@example.com", Subject: "Report",
		Body: "--b\r\n\r\nx\r\n--b--\r\n", ContentType: "multipart/related; boundary=b", CreatedAt: at(1e6)}
	plain := store.Email{ID: "22222222-2222-4222-8222-222222222222", To: "a@example.com", Subject: "Plain", Body: "hi\n", CreatedAt: at(2e6)}
	noErr(t, "AddEmail", s.AddEmail(ctx, m))
	noErr(t, "AddEmail", s.AddEmail(ctx, plain))
	got, err := s.Emails(ctx, false, 0)
	noErr(t, "Emails", err)
	same(t, "the outbox", got, []store.Email{plain, m})
	claimed, err := s.ClaimEmails(ctx, at(3e6), 60e9, 10)
	noErr(t, "ClaimEmails", err)
	same(t, "the claimed", claimed, []store.Email{m, plain})
}
