package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/relaybell/relaybell/store"
)

var reportCases = []testCase{
	{"Settings", testReportSettings},
	{"HTMLMail", testReportMail},
	{"Ledger", testReportLedger},
	{"DeliveryTrouble", testDeliveryTrouble},
}

// testDeliveryTrouble: the failed and pruned pushes of the sends named,
// by the service recorded with them (a pruned browser's too, though its
// endpoint is gone); a replayed result once, whatever service the replay
// names; a result recorded without a service under ""; pushes sent, other
// sends and another website's not at all.
func testDeliveryTrouble(t *testing.T, s store.Store) {
	ctx := context.Background()
	w, other := newWebsite(t, s), newWebsite(t, s)
	var e []string
	for range 6 {
		e = append(e, subscribe(t, s, subscription(w.Website.ID)).EndpointID)
	}
	first, second, third := create(t, s, notification(w.Website.ID)), create(t, s, notification(w.Website.ID)), create(t, s, notification(w.Website.ID))
	foreign := create(t, s, notification(other.Website.ID))
	firsts := []store.PushResult{
		{EndpointID: e[0], Outcome: store.OutcomeSent, Service: "fcm"},
		{EndpointID: e[1], Outcome: store.OutcomeFailed, Service: "fcm"},
		{EndpointID: e[2], Outcome: store.OutcomePruned, Service: "fcm"},
		{EndpointID: e[3], Outcome: store.OutcomeFailed, Service: "mozilla"},
		{EndpointID: e[4], Outcome: store.OutcomePruned, Service: "apple"},
		{EndpointID: e[5], Outcome: store.OutcomeFailed},
	}
	noErr(t, "RecordResults", recordResults(s, ctx, first.ID, firsts))
	noErr(t, "RecordResults(replay)", recordResults(s, ctx, first.ID, []store.PushResult{
		{EndpointID: e[1], Outcome: store.OutcomeFailed, Service: "wns"},
		{EndpointID: e[3], Outcome: store.OutcomeFailed, Service: "mozilla"},
	}))
	unknown, err := recordAllResults(s, ctx, map[string][]store.PushResult{
		second.ID: {
			{EndpointID: e[1], Outcome: store.OutcomeFailed, Service: "fcm"},
			{EndpointID: e[3], Outcome: store.OutcomeSent, Service: "mozilla"},
			{EndpointID: e[0], Outcome: store.OutcomePruned, Service: "fcm"},
		},
		third.ID:   {{EndpointID: e[3], Outcome: store.OutcomeFailed, Service: "mozilla"}},
		foreign.ID: {{EndpointID: "foreign", Outcome: store.OutcomeFailed, Service: "fcm"}},
	})
	noErr(t, "RecordAllResults", err)
	same(t, "unknown sends", unknown, nil)

	trouble := func(ids ...string) []store.ServiceTrouble {
		t.Helper()
		got, err := s.DeliveryTrouble(ctx, w.Website.ID, ids)
		noErr(t, "DeliveryTrouble", err)
		return got
	}
	same(t, "the first send", trouble(first.ID), []store.ServiceTrouble{
		{Service: "", Failed: 1}, {Service: "apple", Pruned: 1}, {Service: "fcm", Failed: 1, Pruned: 1}, {Service: "mozilla", Failed: 1},
	})
	if n := getNotification(t, s, first.ID); n.Failed != 3 || n.Pruned != 2 {
		t.Fatalf("the first send's counters: %d failed, %d pruned", n.Failed, n.Pruned)
	}
	same(t, "three sends and another website's", trouble(first.ID, second.ID, third.ID, foreign.ID), []store.ServiceTrouble{
		{Service: "", Failed: 1}, {Service: "apple", Pruned: 1}, {Service: "fcm", Failed: 2, Pruned: 2}, {Service: "mozilla", Failed: 2},
	})
	same(t, "the second send", trouble(second.ID), []store.ServiceTrouble{{Service: "fcm", Failed: 1, Pruned: 1}})
	same(t, "another website's send", trouble(foreign.ID), nil)
	same(t, "no send", trouble(), nil)
	got, err := s.DeliveryTrouble(ctx, other.Website.ID, []string{foreign.ID})
	noErr(t, "DeliveryTrouble(other)", err)
	same(t, "the other website's send", got, []store.ServiceTrouble{{Service: "fcm", Failed: 1}})
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

// testReportLedger: one claim at a time; a claim whose lease ran out is
// taken over, and the node that lost it sends nothing; a period sent is
// never claimed again.
func testReportLedger(t *testing.T, s store.Store) {
	ctx := context.Background()
	w, other := newWebsite(t, s), newWebsite(t, s)
	const period = "2026-03-02"
	lease := time.Minute
	first, ok, err := s.ClaimReport(ctx, w.Website.ID, period, at(0), lease)
	noErr(t, "ClaimReport", err)
	if !ok {
		t.Fatal("the first claim failed")
	}
	if _, ok, err := s.ClaimReport(ctx, w.Website.ID, period, at(30*time.Second), lease); err != nil || ok {
		t.Fatalf("a second claim within the lease: %v, %v", ok, err)
	}
	if _, ok, err := s.ClaimReport(ctx, other.Website.ID, period, at(30*time.Second), lease); err != nil || !ok {
		t.Fatalf("another website's claim: %v, %v", ok, err)
	}
	second, ok, err := s.ClaimReport(ctx, w.Website.ID, period, at(lease+time.Millisecond), lease)
	if err != nil || !ok {
		t.Fatalf("a claim after the lease: %v, %v", ok, err)
	}
	mail := func(id string) store.Email {
		return store.Email{ID: id, To: "a@example.com", Subject: "Report", Body: "x", ContentType: "multipart/related; boundary=b", CreatedAt: at(2 * lease)}
	}
	wantErr(t, "SendReport with the lost claim", s.SendReport(ctx, w.Website.ID, period, first, []store.Email{mail("33333333-3333-4333-8333-333333333333")}, at(2*lease)), store.ErrConflict)
	if sent, err := s.ReportSent(ctx, w.Website.ID, period); err != nil || sent {
		t.Fatalf("sent %v, %v after the lost claim", sent, err)
	}
	noErr(t, "SendReport", s.SendReport(ctx, w.Website.ID, period, second, []store.Email{mail("44444444-4444-4444-8444-444444444444")}, at(2*lease)))
	if sent, err := s.ReportSent(ctx, w.Website.ID, period); err != nil || !sent {
		t.Fatalf("sent %v, %v", sent, err)
	}
	ms, err := s.Emails(ctx, false, 0)
	noErr(t, "Emails", err)
	if len(ms) != 1 || ms[0].ID != "44444444-4444-4444-8444-444444444444" {
		t.Fatalf("outbox %+v", ms)
	}
	if _, ok, err := s.ClaimReport(ctx, w.Website.ID, period, at(time.Hour), lease); err != nil || ok {
		t.Fatalf("a claim of a period sent: %v, %v", ok, err)
	}
	wantErr(t, "SendReport again", s.SendReport(ctx, w.Website.ID, period, second, nil, at(time.Hour)), store.ErrConflict)

	noErr(t, "PutReportSettings", s.PutReportSettings(ctx, w.Website.ID, store.ReportSettings{Frequency: store.ReportDaily, Hour: 6,
		Recipients: []string{"a@example.com"}, UpdatedAt: at(time.Second)}))
	noErr(t, "PutReportSettings", s.PutReportSettings(ctx, other.Website.ID, store.ReportSettings{Frequency: store.ReportOff, UpdatedAt: at(time.Second)}))
	list, err := s.ReportSchedules(ctx)
	noErr(t, "ReportSchedules", err)
	same(t, "the schedules", list, []store.ReportSchedule{{WebsiteID: w.Website.ID, Settings: store.ReportSettings{Frequency: store.ReportDaily, Hour: 6,
		Recipients: []string{"a@example.com"}, UpdatedAt: at(time.Second)}}})
}
