package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/store"
)

var onsiteCases = []testCase{
	{"Settings", testSiteSettings},
	{"Messages", testOnsiteMessages},
	{"Counts", testOnsiteCounts},
	{"Welcome", testWelcome},
	{"WelcomeRace", testWelcomeRace},
	{"DefinitionsVersion", testOnsiteDefinitionsVersion},
}

// testOnsiteDefinitionsVersion: the definitions version moves with every
// change to a settings document, an on-site message or a topic, and with a
// website's deletion; not with a count, nor with a refused change.
func testOnsiteDefinitionsVersion(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	moved := definitionsMoved(t, s)
	noErr(t, "PutSiteSettings", s.PutSiteSettings(ctx, w.Website.ID, store.SettingsPrompt, []byte(`{"kind":"soft"}`), at(0)))
	moved("the prompt set", true)
	noErr(t, "PutSiteSettings", s.PutSiteSettings(ctx, w.Website.ID, store.SettingsWelcome, []byte(`{"enabled":true}`), at(0)))
	moved("the welcome set", true)
	noErr(t, "PutSiteSettings", s.PutSiteSettings(ctx, w.Website.ID, store.SettingsWelcome, []byte(`{"enabled":false}`), at(time.Second)))
	moved("the welcome changed", true)
	wantErr(t, "PutSiteSettings of an unknown website",
		s.PutSiteSettings(ctx, uuid.NewString(), store.SettingsPrompt, []byte(`{}`), at(0)), store.ErrNotFound)
	moved("settings of an unknown website refused", false)
	m := newOnsiteMessage(t, s, w.Website.ID, "a", at(0))
	moved("a message created", true)
	noErr(t, "CountOnsite", s.CountOnsite(ctx, w.Website.ID, m.ID, store.OnsiteImpression, 1))
	moved("a message counted", false)
	m.Status = "active"
	noErr(t, "UpdateOnsiteMessage", s.UpdateOnsiteMessage(ctx, m))
	moved("a message updated", true)
	unknown := m
	unknown.ID = uuid.NewString()
	wantErr(t, "UpdateOnsiteMessage(unknown)", s.UpdateOnsiteMessage(ctx, unknown), store.ErrNotFound)
	moved("an unknown message's update refused", false)
	noErr(t, "DeleteOnsiteMessage", s.DeleteOnsiteMessage(ctx, w.Website.ID, m.ID))
	moved("a message deleted", true)
	topic, created, err := s.SaveTopic(ctx, store.Topic{ID: uuid.NewString(), WebsiteID: w.Website.ID, Name: "News", Slug: "news", CreatedAt: at(0)})
	noErr(t, "SaveTopic", err)
	if !created {
		t.Fatal("SaveTopic: not created")
	}
	moved("a topic created", true)
	_, _, err = s.SaveTopic(ctx, store.Topic{ID: uuid.NewString(), WebsiteID: w.Website.ID, Name: "Daily news", Slug: "NEWS", CreatedAt: at(0)})
	noErr(t, "SaveTopic", err)
	moved("a topic saved again", true)
	_, err = s.RenameTopic(ctx, w.Website.ID, topic.ID, "Weekly news")
	noErr(t, "RenameTopic", err)
	moved("a topic renamed", true)
	_, err = s.RenameTopic(ctx, w.Website.ID, uuid.NewString(), "x")
	wantErr(t, "RenameTopic(unknown)", err, store.ErrNotFound)
	moved("an unknown topic's renaming refused", false)
	noErr(t, "DeleteTopic", s.DeleteTopic(ctx, w.Website.ID, topic.ID))
	moved("a topic deleted", true)
	noErr(t, "DeleteWebsite", s.DeleteWebsite(ctx, w.Website.ID))
	moved("the website deleted", true)
}

func testSiteSettings(t *testing.T, s store.Store) {
	ctx := context.Background()
	w, other := newWebsite(t, s), newWebsite(t, s)
	b, err := s.SiteSettings(ctx, w.Website.ID, store.SettingsPrompt)
	noErr(t, "SiteSettings", err)
	if b != nil {
		t.Fatalf("never set: %q", b)
	}
	noErr(t, "PutSiteSettings", s.PutSiteSettings(ctx, w.Website.ID, store.SettingsPrompt, []byte(`{"kind":"soft"}`), at(0)))
	noErr(t, "PutSiteSettings", s.PutSiteSettings(ctx, w.Website.ID, store.SettingsPrompt, []byte(`{"kind":"bell"}`), at(time.Second)))
	noErr(t, "PutSiteSettings", s.PutSiteSettings(ctx, w.Website.ID, store.SettingsWelcome, []byte(`{"enabled":true}`), at(0)))
	for _, c := range []struct{ site, name, want string }{
		{w.Website.ID, store.SettingsPrompt, `{"kind":"bell"}`},
		{w.Website.ID, store.SettingsWelcome, `{"enabled":true}`},
		{other.Website.ID, store.SettingsPrompt, ""},
	} {
		b, err := s.SiteSettings(ctx, c.site, c.name)
		noErr(t, "SiteSettings", err)
		if string(b) != c.want {
			t.Fatalf("%s of %s: %q, want %q", c.name, c.site, b, c.want)
		}
	}
	wantErr(t, "PutSiteSettings of an unknown website",
		s.PutSiteSettings(ctx, uuid.NewString(), store.SettingsPrompt, []byte(`{}`), at(0)), store.ErrNotFound)
}

func newOnsiteMessage(t *testing.T, s store.Store, websiteID, name string, created time.Time) store.OnsiteMessage {
	t.Helper()
	m := store.OnsiteMessage{ID: uuid.NewString(), WebsiteID: websiteID, Name: name, Status: "draft",
		Definition: []byte(`{"name":"` + name + `"}`), CreatedAt: created, UpdatedAt: created}
	noErr(t, "CreateOnsiteMessage", s.CreateOnsiteMessage(context.Background(), m))
	m.Counts = map[string]int64{store.OnsiteImpression: 0, store.OnsiteClick: 0, store.OnsiteDismiss: 0}
	return m
}

func testOnsiteMessages(t *testing.T, s store.Store) {
	ctx := context.Background()
	w, other := newWebsite(t, s), newWebsite(t, s)
	a := newOnsiteMessage(t, s, w.Website.ID, "a", at(time.Minute))
	b := newOnsiteMessage(t, s, w.Website.ID, "b", at(2*time.Minute))
	list, err := s.ListOnsiteMessages(ctx, w.Website.ID)
	noErr(t, "ListOnsiteMessages", err)
	same(t, "ListOnsiteMessages, newest first", list, []store.OnsiteMessage{b, a})
	list, err = s.ListOnsiteMessages(ctx, other.Website.ID)
	noErr(t, "ListOnsiteMessages", err)
	if len(list) != 0 {
		t.Fatalf("the other website's list: %+v", list)
	}
	a.Name, a.Status, a.Definition, a.UpdatedAt = "a2", "active", []byte(`{"name":"a2"}`), at(time.Hour)
	noErr(t, "UpdateOnsiteMessage", s.UpdateOnsiteMessage(ctx, a))
	got, err := s.OnsiteMessage(ctx, w.Website.ID, a.ID)
	noErr(t, "OnsiteMessage", err)
	same(t, "updated message", got, a)

	_, err = s.OnsiteMessage(ctx, other.Website.ID, a.ID)
	wantErr(t, "OnsiteMessage of another website", err, store.ErrNotFound)
	o := a
	o.WebsiteID = other.Website.ID
	wantErr(t, "UpdateOnsiteMessage of another website", s.UpdateOnsiteMessage(ctx, o), store.ErrNotFound)
	wantErr(t, "DeleteOnsiteMessage of another website", s.DeleteOnsiteMessage(ctx, other.Website.ID, a.ID), store.ErrNotFound)
	wantErr(t, "CreateOnsiteMessage of an unknown website", s.CreateOnsiteMessage(ctx, store.OnsiteMessage{ID: uuid.NewString(),
		WebsiteID: uuid.NewString(), Name: "x", Status: "draft", Definition: []byte(`{}`), CreatedAt: at(0), UpdatedAt: at(0)}), store.ErrNotFound)

	noErr(t, "CountOnsite", s.CountOnsite(ctx, w.Website.ID, a.ID, store.OnsiteClick, 3))
	noErr(t, "DeleteOnsiteMessage", s.DeleteOnsiteMessage(ctx, w.Website.ID, a.ID))
	wantErr(t, "DeleteOnsiteMessage again", s.DeleteOnsiteMessage(ctx, w.Website.ID, a.ID), store.ErrNotFound)
	counts, err := s.OnsiteCounts(ctx, w.Website.ID, "")
	noErr(t, "OnsiteCounts", err)
	if len(counts) != 0 {
		t.Fatalf("a deleted message's counts stay: %v", counts)
	}
}

func testOnsiteCounts(t *testing.T, s store.Store) {
	ctx := context.Background()
	w, other := newWebsite(t, s), newWebsite(t, s)
	m := newOnsiteMessage(t, s, w.Website.ID, "m", at(0))
	for _, c := range []struct {
		site, subject, kind string
		n                   int64
	}{
		{w.Website.ID, "prompt:soft", store.OnsiteImpression, 1},
		{w.Website.ID, "prompt:soft", store.OnsiteImpression, 2},
		{w.Website.ID, "prompt:soft", store.OnsiteAccept, 1},
		{w.Website.ID, "prompt:bell", store.OnsiteDismiss, 1},
		{w.Website.ID, m.ID, store.OnsiteImpression, 5},
		{w.Website.ID, m.ID, store.OnsiteClick, 1},
		{other.Website.ID, "prompt:soft", store.OnsiteImpression, 7},
	} {
		noErr(t, "CountOnsite", s.CountOnsite(ctx, c.site, c.subject, c.kind, c.n))
	}
	prompts, err := s.OnsiteCounts(ctx, w.Website.ID, "prompt:")
	noErr(t, "OnsiteCounts", err)
	same(t, "prompt counts", prompts, map[string]map[string]int64{
		"prompt:soft": {store.OnsiteImpression: 3, store.OnsiteAccept: 1},
		"prompt:bell": {store.OnsiteDismiss: 1},
	})
	got, err := s.OnsiteMessage(ctx, w.Website.ID, m.ID)
	noErr(t, "OnsiteMessage", err)
	same(t, "message counts", got.Counts, map[string]int64{store.OnsiteImpression: 5, store.OnsiteClick: 1, store.OnsiteDismiss: 0})
}

// testWelcome: a new endpoint registered with a welcome gets a timer in
// the registration's transaction; FireWelcome stores the send and the
// ledger row once, and an endpoint in the ledger gets no timer again.
func testWelcome(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	delay := 2 * time.Minute
	in := subscription(w.Website.ID)
	in.Welcome = &delay
	res := subscribe(t, s, in)
	again := subscribe(t, s, in) // a known endpoint: no second timer
	if again.Created {
		t.Fatal("the same endpoint created twice")
	}
	timers, err := s.ClaimTimers(ctx, in.At.Add(time.Minute), time.Minute, 10)
	noErr(t, "ClaimTimers", err)
	if len(timers) != 0 {
		t.Fatalf("claimed before due: %+v", timers)
	}
	timers, err = s.ClaimTimers(ctx, in.At.Add(delay), time.Minute, 10)
	noErr(t, "ClaimTimers", err)
	same(t, "welcome timer", timers, []store.Timer{{RunID: res.EndpointID, Item: 0, Kind: store.TimerWelcome,
		WebsiteID: w.Website.ID, SubscriberID: res.SubscriberID, Due: in.At.Add(delay)}})

	n := notification(w.Website.ID)
	n.Welcome, n.Automation, n.SendBody = true, true, nil
	sent, err := s.FireWelcome(ctx, timers[0], store.Welcome{Notification: &n, At: at(time.Hour)})
	noErr(t, "FireWelcome", err)
	if !sent {
		t.Fatal("FireWelcome sent nothing")
	}
	got := getNotification(t, s, n.ID)
	if !got.Welcome || !got.Automation {
		t.Fatalf("stored welcome: %+v", got)
	}
	n2 := notification(w.Website.ID)
	sent, err = s.FireWelcome(ctx, timers[0], store.Welcome{Notification: &n2, At: at(time.Hour)})
	noErr(t, "FireWelcome again", err)
	if sent {
		t.Fatal("a fired timer sent again")
	}
	if _, err := s.Notification(ctx, w.Website.ID, n2.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a second welcome stored: %v", err)
	}
	ok, err := s.WelcomeSent(ctx, w.Website.ID, in.Endpoint)
	noErr(t, "WelcomeSent", err)
	if !ok {
		t.Fatal("the ledger does not hold the endpoint")
	}

	// Removed and registered again: a new endpoint, no timer (the ledger
	// holds its URL).
	_, err = s.DeleteSubscription(ctx, w.Website.ID, in.Endpoint)
	noErr(t, "DeleteSubscription", err)
	if res := subscribe(t, s, in); !res.Created {
		t.Fatal("the endpoint was not created again")
	}
	timers, err = s.ClaimTimers(ctx, in.At.Add(time.Hour), time.Minute, 10)
	noErr(t, "ClaimTimers", err)
	if len(timers) != 0 {
		t.Fatalf("a timer for an endpoint that had its welcome: %+v", timers)
	}

	// An endpoint gone before its timer fired: nothing sent, nothing in
	// the ledger.
	in2 := subscription(w.Website.ID)
	in2.Endpoint, in2.Welcome = "https://fcm.googleapis.com/fcm/send/gone", &delay
	subscribe(t, s, in2)
	_, err = s.DeleteSubscription(ctx, w.Website.ID, in2.Endpoint)
	noErr(t, "DeleteSubscription", err)
	timers, err = s.ClaimTimers(ctx, in.At.Add(time.Hour), time.Minute, 10)
	noErr(t, "ClaimTimers", err)
	for _, tm := range timers {
		n3 := notification(w.Website.ID)
		sent, err := s.FireWelcome(ctx, tm, store.Welcome{Notification: &n3, At: at(time.Hour)})
		noErr(t, "FireWelcome", err)
		if sent {
			t.Fatal("a welcome for a removed endpoint")
		}
	}
	ok, err = s.WelcomeSent(ctx, w.Website.ID, in2.Endpoint)
	noErr(t, "WelcomeSent", err)
	if ok {
		t.Fatal("the ledger holds an endpoint that never had its welcome")
	}
}

// testWelcomeRace: two nodes fire one welcome timer at once (a lease ran
// out): one welcome is stored.
func testWelcomeRace(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	delay := time.Duration(0)
	in := subscription(w.Website.ID)
	in.Welcome = &delay
	subscribe(t, s, in)
	timers, err := s.ClaimTimers(ctx, in.At, time.Minute, 10)
	noErr(t, "ClaimTimers", err)
	if len(timers) != 1 {
		t.Fatalf("timers %+v", timers)
	}
	var wg sync.WaitGroup
	sent := make([]bool, 4)
	errs := make([]error, 4)
	for i := range sent {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := notification(w.Website.ID)
			n.Welcome = true
			sent[i], errs[i] = s.FireWelcome(ctx, timers[0], store.Welcome{Notification: &n, At: at(time.Minute)})
		}()
	}
	wg.Wait()
	count := 0
	for i := range sent {
		noErr(t, "FireWelcome", errs[i])
		if sent[i] {
			count++
		}
	}
	if count != 1 {
		t.Fatalf("%d welcomes stored, want 1", count)
	}
}
