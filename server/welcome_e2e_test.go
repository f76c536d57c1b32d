package server

import (
	"testing"

	"github.com/relaybell/relaybell/store/postgres/pgtest"
)

// The welcome notification on the embedded default, end to end: a new
// browser's welcome timer is fired by the engine's claim loop (the
// automations' timers, under their leases), sent through fan-out to that
// browser, listed as a welcome; the same endpoint subscribing again after
// unsubscribing gets no second one, another new browser gets its own.
func TestWelcomeEndToEnd(t *testing.T) {
	ts := startServer(t)
	w := ts.createWebsite()
	if code := ts.call("PUT", "/api/v1/welcome", w.APIKey, map[string]any{"enabled": true, "delaySeconds": 0,
		"title": "Welcome!", "body": "Thanks for subscribing."}, nil); code != 200 {
		t.Fatalf("PUT /welcome: %d", code)
	}
	ann := ts.push.NewBrowser(w.VAPIDPublicKey)
	ts.subscribe(w, ann, nil)
	type item struct {
		ID      string `json:"id"`
		Title   string `json:"title"`
		Welcome bool   `json:"welcome"`
	}
	var list struct {
		Items []item `json:"items"`
	}
	waitFor(t, "the welcome", func() bool {
		ts.call("GET", "/api/v1/notifications", w.APIKey, nil, &list)
		return len(list.Items) == 1
	})
	first := list.Items[0]
	if first.Title != "Welcome!" || !first.Welcome {
		t.Fatalf("list %+v", list.Items)
	}
	if got := waitReceived(t, ann, first.ID); got.Title != "Welcome!" || got.Body != "Thanks for subscribing." {
		t.Fatalf("ann got %+v", got)
	}

	// Ann turns notifications off and on again: no second welcome. Bob's
	// new browser gets one; its welcome, sent after Ann's return, shows
	// that hers had its chance to come.
	sub := ann.Subscription()
	if code := ts.call("DELETE", "/api/v1/projects/"+w.ProjectID+"/subscriptions", "", map[string]string{"endpoint": sub.Endpoint}, nil); code != 200 {
		t.Fatalf("unsubscribe: %d", code)
	}
	ts.subscribe(w, ann, nil)
	bob := ts.push.NewBrowser(w.VAPIDPublicKey)
	ts.subscribe(w, bob, nil)
	waitFor(t, "Bob's welcome", func() bool {
		ts.call("GET", "/api/v1/notifications", w.APIKey, nil, &list)
		return len(list.Items) >= 2
	})
	second := list.Items[0]
	waitReceived(t, bob, second.ID)
	ts.waitSent(w, second.ID)
	if len(list.Items) != 2 || !second.Welcome {
		t.Fatalf("list %+v", list.Items)
	}
	if got := received(t, ann, second.ID); len(got) != 0 {
		t.Fatalf("ann got Bob's welcome: %+v", got)
	}
	if n := len(ann.Received()); n != 1 {
		t.Fatalf("ann received %d pushes, want her one welcome", n)
	}
}

// TestWelcomeOneBrowser, end to end on both stores (the embedded SQLite
// and PostgreSQL): Ada is known by her externalId; her second browser's
// welcome reaches that browser at the push service and not her first
// one, and the first one subscribing again gets none. Carl's new browser,
// whose welcome comes after, shows that no other had its chance to come.
func TestWelcomeOneBrowser(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { testWelcomeOneBrowser(t, startServer(t)) })
	t.Run("postgres", func(t *testing.T) {
		dsn := pgtest.DSN(t)
		testWelcomeOneBrowser(t, startServer(t, func(c *Config) { c.Postgres = dsn }))
	})
}

func testWelcomeOneBrowser(t *testing.T, ts *testServer) {
	w := ts.createWebsite()
	if code := ts.call("PUT", "/api/v1/welcome", w.APIKey, map[string]any{"enabled": true, "delaySeconds": 0,
		"title": "Welcome!"}, nil); code != 200 {
		t.Fatalf("PUT /welcome: %d", code)
	}
	type item struct {
		ID            string `json:"id"`
		Welcome       bool   `json:"welcome"`
		TargetSummary string `json:"targetSummary"`
	}
	var list struct {
		Items []item `json:"items"`
	}
	// welcome waits for the n-th welcome and its send to finish.
	welcome := func(n int, b subscribed) item {
		t.Helper()
		waitFor(t, "the welcome", func() bool {
			ts.call("GET", "/api/v1/notifications", w.APIKey, nil, &list)
			return len(list.Items) >= n
		})
		it := list.Items[0]
		if len(list.Items) != n || !it.Welcome || it.TargetSummary != "Browser "+b.EndpointID {
			t.Fatalf("list %+v, want %d welcomes, the newest to %s", list.Items, n, b.EndpointID)
		}
		ts.waitSent(w, it.ID)
		return it
	}
	ada := map[string]any{"externalId": "ada"}
	phone := ts.push.NewBrowser(w.VAPIDPublicKey)
	first := ts.subscribe(w, phone, ada)
	waitReceived(t, phone, welcome(1, first).ID)

	laptop := ts.push.NewBrowser(w.VAPIDPublicKey)
	second := ts.subscribe(w, laptop, ada)
	if second.SubscriberID != first.SubscriberID {
		t.Fatalf("the laptop is person %s, not Ada %s", second.SubscriberID, first.SubscriberID)
	}
	laptops := welcome(2, second)
	if got := waitReceived(t, laptop, laptops.ID); got.Title != "Welcome!" {
		t.Fatalf("the laptop got %+v", got)
	}
	if d := ts.waitSent(w, laptops.ID); d.Notification.Recipients != 1 || d.Notification.Sent != 1 {
		t.Fatalf("the laptop's welcome went to %d browsers (%d sent), want 1", d.Notification.Recipients, d.Notification.Sent)
	}

	// The phone turns notifications off and on again.
	if code := ts.call("DELETE", "/api/v1/projects/"+w.ProjectID+"/subscriptions", "", map[string]string{"endpoint": phone.Subscription().Endpoint}, nil); code != 200 {
		t.Fatalf("unsubscribe: %d", code)
	}
	ts.subscribe(w, phone, ada)
	carl := ts.push.NewBrowser(w.VAPIDPublicKey)
	carls := welcome(3, ts.subscribe(w, carl, map[string]any{"externalId": "carl"}))
	waitReceived(t, carl, carls.ID)

	if n := len(phone.Received()); n != 1 {
		t.Fatalf("the phone received %d pushes, want its one welcome: %+v", n, phone.Received())
	}
	if n := len(laptop.Received()); n != 1 {
		t.Fatalf("the laptop received %d pushes, want its one welcome", n)
	}
	if n := len(carl.Received()); n != 1 {
		t.Fatalf("Carl received %d pushes, want his one welcome", n)
	}
}
