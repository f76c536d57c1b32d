package server

import (
	"testing"
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
