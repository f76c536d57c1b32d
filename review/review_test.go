package review

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/relaybell/relaybell/automations/enginetest"
	"github.com/relaybell/relaybell/notification"
	"github.com/relaybell/relaybell/store"
)

func TestVerified(t *testing.T) {
	if err := Verified(store.Account{EmailVerified: true}); err != nil {
		t.Fatalf("a verified account: %v", err)
	}
	if err := Verified(store.Account{}); !errors.Is(err, ErrEmailNotVerified) || err.Error() != "verify the account's e-mail address before sending" {
		t.Fatalf("an unverified account: %v", err)
	}
}

// Held is the rule of spec 3.1 for each kind of send, on a website with
// two browsers and a threshold of two.
func TestHeld(t *testing.T) {
	st := enginetest.OpenSQLite(t)
	ctx := context.Background()
	start := enginetest.Start
	w := enginetest.Website(t, st)
	acct, err := st.Account(ctx, w.AccountID)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if _, err := st.UpsertSubscription(ctx, store.SubscriptionInput{WebsiteID: w.ID, Endpoint: fmt.Sprintf("https://push.example/%d", i),
			P256dh: "p", Auth: "a", Device: "desktop", At: start}); err != nil {
			t.Fatal(err)
		}
	}
	title := "Hello"
	everyone := func() *notification.Request { return &notification.Request{Title: &title} }
	prepare := func(req *notification.Request) *store.Notification {
		n, err := notification.Prepare(ctx, req, w, st, start)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	held := func(what string, threshold int, req *notification.Request, now time.Time, want bool) {
		t.Helper()
		got, err := Held(ctx, st, threshold, acct, req, prepare(req), now)
		if err != nil || got != want {
			t.Fatalf("%s: held %v %v, want %v", what, got, err, want)
		}
	}
	held("a new account's broadcast to the threshold", 2, everyone(), start.Add(time.Hour), true)
	held("below the threshold", 3, everyone(), start.Add(time.Hour), false)
	held("review off", -1, everyone(), start.Add(time.Hour), false)
	held("an account no longer new", 2, everyone(), start.Add(AccountAge), false)
	users := everyone()
	users.ExternalIDs = notification.Of([]string{"u1", "u2"})
	held("a send to specific users", 2, users, start.Add(time.Hour), false)
	test := everyone()
	test.TestDevices = true
	held("a test send", 2, test, start.Add(time.Hour), false)
}
