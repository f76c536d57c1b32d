package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/store"
)

var feedCases = []testCase{
	{"CRUD", testFeedCRUD},
	{"Claim", testFeedClaim},
	{"Ledger", testFeedLedger},
	{"Pause", testFeedPause},
	{"Uses", testFeedUses},
	{"TemplateFeeds", testTemplateFeeds},
}

func newFeed(t *testing.T, s store.Store, f store.Feed) store.Feed {
	t.Helper()
	f.ID = uuid.NewString()
	if f.Name == "" {
		f.Name = "Blog"
	}
	if f.URL == "" {
		f.URL = "https://blog.example.com/feed.xml"
	}
	if f.Audience == nil {
		f.Audience = []byte(`{"everyone":true}`)
	}
	if f.Template == nil {
		f.Template = []byte(`{}`)
	}
	if f.Status == "" {
		f.Status = store.FeedActive
	}
	f.PollMinutes, f.MaxPerPoll = 15, 5
	if f.CreatedAt.IsZero() {
		f.CreatedAt, f.UpdatedAt = at(0), at(0)
	}
	if f.NextPollAt.IsZero() {
		f.NextPollAt = f.CreatedAt
	}
	noErr(t, "CreateFeed", s.CreateFeed(context.Background(), f))
	return f
}

func testFeedCRUD(t *testing.T, s store.Store) {
	ctx := context.Background()
	w, w2 := newWebsite(t, s), newWebsite(t, s)
	a := newFeed(t, s, store.Feed{WebsiteID: w.Website.ID, Name: "A", CreatedAt: at(time.Minute), UpdatedAt: at(time.Minute)})
	b := newFeed(t, s, store.Feed{WebsiteID: w.Website.ID, Name: "B", SendExisting: 2, CreatedAt: at(2 * time.Minute), UpdatedAt: at(2 * time.Minute)})
	list, err := s.ListFeeds(ctx, w.Website.ID)
	noErr(t, "ListFeeds", err)
	same(t, "ListFeeds, newest first", list, []store.Feed{b, a})
	_, err = s.Feed(ctx, w2.Website.ID, a.ID)
	wantErr(t, "Feed(other website)", err, store.ErrNotFound)

	// A fetch's validators stay while the url does, and go when it changes.
	noErr(t, "ClaimFeed", func() error { _, err := s.ClaimFeed(ctx, w.Website.ID, a.ID, at(time.Hour), time.Minute); return err }())
	_, err = s.RecordFeedItems(ctx, w.Website.ID, a.ID, store.FeedFetch{At: at(time.Hour), ETag: `"v1"`, LastModified: "Mon, 02 Jan 2006 15:04:05 GMT"}, 0)
	noErr(t, "RecordFeedItems", err)
	a.Name, a.PollMinutes, a.UpdatedAt, a.NextPollAt = "A2", 30, at(2*time.Hour), at(3*time.Hour)
	noErr(t, "UpdateFeed", s.UpdateFeed(ctx, a))
	got, err := s.Feed(ctx, w.Website.ID, a.ID)
	noErr(t, "Feed", err)
	a.ETag, a.LastModified, a.Seeded = `"v1"`, "Mon, 02 Jan 2006 15:04:05 GMT", true
	same(t, "updated feed, validators kept", got, a)
	a.URL, a.SendExisting = "https://blog.example.com/atom.xml", a.SendExisting+2 // the new url seeded with it
	noErr(t, "UpdateFeed(url)", s.UpdateFeed(ctx, a))
	got, _ = s.Feed(ctx, w.Website.ID, a.ID)
	a.ETag, a.LastModified, a.Seeded = "", "", false
	same(t, "new url, validators and seeding gone", got, a)

	other := a
	other.WebsiteID = w2.Website.ID
	wantErr(t, "UpdateFeed(other website)", s.UpdateFeed(ctx, other), store.ErrNotFound)
	wantErr(t, "DeleteFeed(other website)", s.DeleteFeed(ctx, w2.Website.ID, a.ID), store.ErrNotFound)
	noErr(t, "DeleteFeed", s.DeleteFeed(ctx, w.Website.ID, a.ID))
	wantErr(t, "DeleteFeed(again)", s.DeleteFeed(ctx, w.Website.ID, a.ID), store.ErrNotFound)
}

func testFeedClaim(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	due := newFeed(t, s, store.Feed{WebsiteID: w.Website.ID, NextPollAt: at(time.Minute)})
	newFeed(t, s, store.Feed{WebsiteID: w.Website.ID, NextPollAt: at(time.Hour)})
	newFeed(t, s, store.Feed{WebsiteID: w.Website.ID, NextPollAt: at(time.Minute), Status: store.FeedPaused})
	got, err := s.ClaimFeeds(ctx, at(2*time.Minute), time.Minute, 10)
	noErr(t, "ClaimFeeds", err)
	if len(got) != 1 || got[0].ID != due.ID {
		t.Fatalf("ClaimFeeds = %+v, want the one due active feed", got)
	}
	if got, _ := s.ClaimFeeds(ctx, at(2*time.Minute+time.Second), time.Minute, 10); len(got) != 0 {
		t.Fatalf("ClaimFeeds within the lease = %+v, want none", got)
	}
	_, err = s.ClaimFeed(ctx, w.Website.ID, due.ID, at(2*time.Minute+time.Second), time.Minute)
	wantErr(t, "ClaimFeed within the lease", err, store.ErrConflict)
	if got, _ := s.ClaimFeeds(ctx, at(3*time.Minute), time.Minute, 10); len(got) != 1 {
		t.Fatalf("ClaimFeeds after the lease ran out = %+v, want it again", got)
	}
	poll := store.FeedPoll{At: at(3 * time.Minute), HTTPStatus: 500, Error: "the feed answered 500"}
	noErr(t, "FinishFeedPoll", s.FinishFeedPoll(ctx, w.Website.ID, due.ID, poll, at(18*time.Minute), nil))
	got1, _ := s.Feed(ctx, w.Website.ID, due.ID)
	if got1.LastPoll == nil || *got1.LastPoll != poll || got1.FailingSince == nil || !got1.FailingSince.Equal(at(3*time.Minute)) ||
		!got1.NextPollAt.Equal(at(18*time.Minute)) {
		t.Fatalf("after a failed poll: %+v", got1)
	}
	_, err = s.ClaimFeed(ctx, w.Website.ID, due.ID, at(4*time.Minute), time.Minute)
	noErr(t, "ClaimFeed after the poll ended its lease", err)
	// The claimer of a poll now dies: the feed is due once the lease runs out.
	if got, _ := s.ClaimFeeds(ctx, at(4*time.Minute+time.Second), time.Minute, 10); len(got) != 0 {
		t.Fatalf("ClaimFeeds within a poll now's lease = %+v", got)
	}
	if got, _ := s.ClaimFeeds(ctx, at(5*time.Minute), time.Minute, 10); len(got) != 1 {
		t.Fatalf("ClaimFeeds after a poll now's lease ran out = %+v, want the feed", got)
	}
	refused := at(4 * time.Minute)
	ok := store.FeedPoll{At: at(4 * time.Minute), HTTPStatus: 200, NewItems: 2}
	noErr(t, "FinishFeedPoll", s.FinishFeedPoll(ctx, w.Website.ID, due.ID, ok, at(19*time.Minute), &refused))
	got1, _ = s.Feed(ctx, w.Website.ID, due.ID)
	if got1.FailingSince != nil || *got1.LastPoll != ok || got1.BudgetRefusedAt == nil || !got1.BudgetRefusedAt.Equal(refused) {
		t.Fatalf("after a good poll: %+v", got1)
	}
	_, err = s.ClaimFeed(ctx, w.Website.ID, uuid.NewString(), at(5*time.Minute), time.Minute)
	wantErr(t, "ClaimFeed(unknown)", err, store.ErrNotFound)
}

func feedItems(keys ...string) []store.FeedItem {
	var out []store.FeedItem
	for _, k := range keys {
		out = append(out, store.FeedItem{Key: k, Data: []byte(`{"title":"` + k + `"}`)})
	}
	return out
}

func pendingKeys(t *testing.T, s store.Store, feedID string) []string {
	t.Helper()
	items, err := s.PendingFeedItems(context.Background(), feedID, 0)
	noErr(t, "PendingFeedItems", err)
	keys := []string{}
	for _, it := range items {
		keys = append(keys, it.Key)
	}
	return keys
}

func testFeedLedger(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	f := newFeed(t, s, store.Feed{WebsiteID: w.Website.ID, SendExisting: 1})
	// The first fetch: the newest item is sent (sendExisting 1), the rest seen.
	n, err := s.RecordFeedItems(ctx, w.Website.ID, f.ID, store.FeedFetch{At: at(time.Minute), Items: feedItems("c", "b", "a")}, 1)
	noErr(t, "RecordFeedItems", err)
	if n != 1 {
		t.Fatalf("first fetch recorded %d pending, want 1", n)
	}
	same(t, "pending after the first fetch", pendingKeys(t, s, f.ID), []string{"c"})
	// Later fetches: new items pending, oldest first; old ones, reordered
	// or re-added, never again.
	n, err = s.RecordFeedItems(ctx, w.Website.ID, f.ID, store.FeedFetch{At: at(2 * time.Minute), Items: feedItems("e", "a", "d", "b")}, 1)
	noErr(t, "RecordFeedItems", err)
	if n != 2 {
		t.Fatalf("second fetch recorded %d pending, want 2", n)
	}
	same(t, "pending, oldest first", pendingKeys(t, s, f.ID), []string{"c", "d", "e"})
	items, _ := s.PendingFeedItems(ctx, f.ID, 1)
	same(t, "a pending item's request", items, []store.FeedItem{{Key: "c", Data: []byte(`{"title":"c"}`), Status: store.FeedItemPending}})

	// The send takes its unit of the budget in its transaction: of a
	// budget of one, the first send takes it, a send of an item not
	// pending takes none, and a send with no room left writes nothing.
	budget := store.RateLimit{Key: "send:website:" + w.Website.ID + ":broadcast", Window: time.Hour, Max: 1}
	used := func(want int64) {
		t.Helper()
		got, _, err := s.TakeRateLimits(ctx, []store.RateLimit{budget}, 0, at(3*time.Minute))
		noErr(t, "TakeRateLimits", err)
		if got[0] != want {
			t.Fatalf("budget used %d, want %d", got[0], want)
		}
	}
	nt := notification(w.Website.ID)
	nt.Target = nil
	sent, err := s.SendFeedItem(ctx, f.ID, "c", &nt, &budget, at(3*time.Minute))
	noErr(t, "SendFeedItem", err)
	if !sent {
		t.Fatal("SendFeedItem did not send a pending item")
	}
	used(1)
	again := notification(w.Website.ID)
	sent, err = s.SendFeedItem(ctx, f.ID, "c", &again, &budget, at(3*time.Minute))
	noErr(t, "SendFeedItem(again)", err)
	if sent {
		t.Fatal("SendFeedItem sent an item twice")
	}
	if _, err := s.NotificationByID(ctx, again.ID); err == nil {
		t.Fatal("the second send's notification was stored")
	}
	budget.Max = 2
	used(1)
	budget.Max = 1
	refused := notification(w.Website.ID)
	sent, err = s.SendFeedItem(ctx, f.ID, "d", &refused, &budget, at(3*time.Minute))
	if !errors.Is(err, store.ErrNoRoom) || sent {
		t.Fatalf("SendFeedItem without room = %v, %v; want false, ErrNoRoom", sent, err)
	}
	if _, err := s.NotificationByID(ctx, refused.ID); err == nil {
		t.Fatal("a send refused by the budget stored its notification")
	}
	same(t, "pending after a refused send", pendingKeys(t, s, f.ID), []string{"d", "e"})
	stored := getNotification(t, s, nt.ID)
	if stored.FeedID != f.ID {
		t.Fatalf("notification's FeedID = %q, want %q", stored.FeedID, f.ID)
	}
	sentNope, err := s.SendFeedItem(ctx, f.ID, "a", ptr(notification(w.Website.ID)), nil, at(3*time.Minute))
	noErr(t, "SendFeedItem(seen)", err)
	if sentNope {
		t.Fatal("SendFeedItem sent an item recorded seen")
	}
	// The list filter.
	create(t, s, notification(w.Website.ID))
	list, err := s.ListNotifications(ctx, store.ListQuery{WebsiteID: w.Website.ID, FeedID: f.ID, Limit: 10})
	noErr(t, "ListNotifications(feed)", err)
	if len(list) != 1 || list[0].ID != nt.ID || list[0].FeedID != f.ID {
		t.Fatalf("ListNotifications(feedId) = %+v", list)
	}
	got, _ := s.Feed(ctx, w.Website.ID, f.ID)
	if got.Pending != 2 || got.Sent != 1 {
		t.Fatalf("counts: pending %d sent %d, want 2 1", got.Pending, got.Sent)
	}
	noErr(t, "SkipFeedItem", s.SkipFeedItem(ctx, f.ID, "d"))
	same(t, "pending after a skip", pendingKeys(t, s, f.ID), []string{"e"})
	// A new feed with sendExisting 0 sends nothing of what it holds.
	g := newFeed(t, s, store.Feed{WebsiteID: w.Website.ID})
	n, err = s.RecordFeedItems(ctx, w.Website.ID, g.ID, store.FeedFetch{At: at(time.Minute), Items: feedItems("x", "y")}, 0)
	noErr(t, "RecordFeedItems", err)
	if n != 0 || len(pendingKeys(t, s, g.ID)) != 0 {
		t.Fatalf("a new feed recorded %d pending", n)
	}
}

func testFeedPause(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	noErr(t, "CreateWebhook", s.CreateWebhook(ctx, store.Webhook{ID: uuid.NewString(), WebsiteID: w.Website.ID,
		URL: "https://hooks.example.com/x", Secret: "whsec_x", Enabled: true, CreatedAt: at(0)}))
	f := newFeed(t, s, store.Feed{WebsiteID: w.Website.ID})
	before, err := s.WebhookEvents(ctx, 0, 0)
	noErr(t, "WebhookEvents", err)
	data := store.FeedPausedData{FeedID: f.ID, Name: f.Name, URL: f.URL, Reason: store.FeedPausedFailing, Error: "the feed answered 500"}
	mail := store.Email{ID: uuid.NewString(), To: w.Account.OwnerEmail, Subject: "paused", Body: "b"}
	done, err := s.PauseFeed(ctx, w.Website.ID, f.ID, store.FeedPausedFailing, at(time.Hour), []store.Email{mail}, store.EventFeedPaused, data)
	noErr(t, "PauseFeed", err)
	if !done {
		t.Fatal("PauseFeed did not pause an active feed")
	}
	done, err = s.PauseFeed(ctx, w.Website.ID, f.ID, store.FeedPausedFailing, at(time.Hour), []store.Email{{To: "x@example.com"}}, store.EventFeedPaused, data)
	noErr(t, "PauseFeed(again)", err)
	if done {
		t.Fatal("PauseFeed paused a paused feed")
	}
	got, _ := s.Feed(ctx, w.Website.ID, f.ID)
	if got.Status != store.FeedPaused || got.PausedReason != store.FeedPausedFailing {
		t.Fatalf("paused feed: %+v", got)
	}
	after, _ := s.WebhookEvents(ctx, 0, 0)
	if len(after) != len(before)+1 || after[len(after)-1].Event != store.EventFeedPaused {
		t.Fatalf("events: %+v", after)
	}
	var gotData store.FeedPausedData
	noErr(t, "event data", json.Unmarshal(after[len(after)-1].Data, &gotData))
	same(t, "event data", gotData, data)
	mails, _ := s.Emails(ctx, true, 10)
	n := 0
	for _, m := range mails {
		if m.To == w.Account.OwnerEmail && m.Subject == "paused" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("owner mails queued: %d, want 1", n)
	}
	// Turned on again, it forgets its failing time.
	got.Status, got.PausedReason = store.FeedActive, ""
	noErr(t, "UpdateFeed", s.UpdateFeed(ctx, got))
}

func testFeedUses(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	sg := segment(w.Website.ID, "FR", at(0))
	noErr(t, "CreateSegment", s.CreateSegment(ctx, sg))
	newFeed(t, s, store.Feed{WebsiteID: w.Website.ID, SegmentID: sg.ID})
	newFeed(t, s, store.Feed{WebsiteID: w.Website.ID, ExcludeSegmentID: sg.ID})
	newFeed(t, s, store.Feed{WebsiteID: w.Website.ID, SegmentID: sg.ID, Status: store.FeedPaused})
	uses, err := s.SegmentUses(ctx, w.Website.ID)
	noErr(t, "SegmentUses", err)
	if uses[sg.ID].Feeds != 2 {
		t.Fatalf("SegmentUses feeds = %d, want 2 (active ones, include or exclude)", uses[sg.ID].Feeds)
	}
	news, _, err := s.SaveTopic(ctx, store.Topic{ID: uuid.NewString(), WebsiteID: w.Website.ID, Name: "News", Slug: "news", CreatedAt: at(0)})
	noErr(t, "SaveTopic", err)
	f := newFeed(t, s, store.Feed{WebsiteID: w.Website.ID, TopicID: news.ID})
	newFeed(t, s, store.Feed{WebsiteID: w.Website.ID, TopicID: news.ID, Status: store.FeedPaused})
	noErr(t, "CreateWebhook", s.CreateWebhook(ctx, store.Webhook{ID: uuid.NewString(), WebsiteID: w.Website.ID,
		URL: "https://hooks.example.com/x", Secret: "whsec_x", Enabled: true, CreatedAt: at(0)}))
	before, err := s.WebhookEvents(ctx, 0, 0)
	noErr(t, "WebhookEvents", err)
	noErr(t, "DeleteTopic", s.DeleteTopic(ctx, w.Website.ID, news.ID))
	got, _ := s.Feed(ctx, w.Website.ID, f.ID)
	if got.Status != store.FeedPaused || got.PausedReason != store.FeedPausedTopicDeleted {
		t.Fatalf("feed of a deleted topic: status %q reason %q", got.Status, got.PausedReason)
	}
	// One feed.paused event, in the deletion's transaction, for the feed
	// it paused (none for the feed already paused).
	after, err := s.WebhookEvents(ctx, 0, 0)
	noErr(t, "WebhookEvents", err)
	if len(after) != len(before)+1 || after[len(after)-1].Event != store.EventFeedPaused || after[len(after)-1].WebsiteID != w.Website.ID {
		t.Fatalf("events after the topic's deletion: %+v", after[len(before):])
	}
	var data store.FeedPausedData
	noErr(t, "event data", json.Unmarshal(after[len(after)-1].Data, &data))
	same(t, "event data", data, store.FeedPausedData{FeedID: f.ID, Name: f.Name, URL: f.URL, Reason: store.FeedPausedTopicDeleted,
		Error: `its topic "News" was deleted`})
}

func testTemplateFeeds(t *testing.T, s store.Store) {
	ctx := context.Background()
	w, other := newWebsite(t, s), newWebsite(t, s)
	tpl := uuid.NewString()
	a := newFeed(t, s, store.Feed{WebsiteID: w.Website.ID, Name: "A", TemplateID: tpl, Template: []byte(`{"templateId":"` + tpl + `"}`)})
	b := newFeed(t, s, store.Feed{WebsiteID: w.Website.ID, Name: "B", CreatedAt: at(time.Minute), UpdatedAt: at(time.Minute)})
	newFeed(t, s, store.Feed{WebsiteID: other.Website.ID, TemplateID: tpl})
	uses, err := s.TemplateFeeds(ctx, w.Website.ID, tpl)
	noErr(t, "TemplateFeeds", err)
	same(t, "the template's feeds", uses, []store.FeedUse{{ID: a.ID, Name: "A"}})
	b.TemplateID, b.Template = tpl, []byte(`{"templateId":"`+tpl+`"}`)
	noErr(t, "UpdateFeed", s.UpdateFeed(ctx, b))
	uses, _ = s.TemplateFeeds(ctx, w.Website.ID, tpl)
	same(t, "after an update", uses, []store.FeedUse{{ID: a.ID, Name: "A"}, {ID: b.ID, Name: "B"}})
	got, _ := s.Feed(ctx, w.Website.ID, b.ID)
	if got.TemplateID != tpl {
		t.Fatalf("TemplateID %q", got.TemplateID)
	}
	// template_in_use names them.
	named, err := s.TemplateUses(ctx, w.Website.ID, tpl)
	noErr(t, "TemplateUses", err)
	same(t, "TemplateUses", named, []store.TemplateUse{{Kind: store.TemplateUseFeed, ID: a.ID, Name: "A"}, {Kind: store.TemplateUseFeed, ID: b.ID, Name: "B"}})
}
