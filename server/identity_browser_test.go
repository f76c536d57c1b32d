package server

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/relaybell/relaybell/store"
)

// TestBrowserIdentity: with identity verification enforced, the SDK's
// login(externalId, hash) links the browser with the hash the website's
// server computed, and every page view sends it again; logging out and in
// as another person works; a login with a wrong hash rejects with
// invalid_external_id_hash and leaves the browser registered, anonymous,
// and the SDK's state without the refused id.
func TestBrowserIdentity(t *testing.T) {
	d := startDriver(t)
	ts := startServer(t)
	w := ts.createWebsite()
	var identity struct {
		NewSecret struct {
			Secret string `json:"secret"`
		} `json:"newSecret"`
	}
	if code := ts.call("PUT", "/api/v1/identity", w.APIKey, map[string]any{"addSecret": true, "mode": "enforce"}, &identity); code != 200 {
		t.Fatalf("PUT /identity: %d", code)
	}
	sign := func(externalID string) string {
		m := hmac.New(sha256.New, []byte(identity.NewSecret.Secret))
		m.Write([]byte(externalID))
		return hex.EncodeToString(m.Sum(nil))
	}
	rb := startRecorder(t, ts.base)
	site := startSite(t, rb.URL, w.ProjectID)
	sub := ts.push.NewBrowser(w.VAPIDPublicKey).Subscription()
	d.call("launch", map[string]any{
		"executablePath": chromiumPath, "origin": site.URL, "locale": "en-GB", "timezoneId": "Europe/London",
		"subscription": map[string]string{"endpoint": sub.Endpoint, "p256dh": sub.P256dh, "auth": sub.Auth},
	}, nil)

	type ready struct {
		Subscribed   bool   `json:"subscribed"`
		SubscriberID string `json:"subscriberId"`
		EndpointID   string `json:"endpointId"`
		Error        string `json:"error"`
	}
	type ids struct {
		SubscriberID string `json:"subscriberId"`
		EndpointID   string `json:"endpointId"`
	}
	base := "/api/v1/projects/" + w.ProjectID
	// lastRegistration is the tail of the last registration's body, from
	// its external id on ("" for none).
	lastRegistration := func() string {
		t.Helper()
		regs := rb.all("POST", base+"/subscriptions")
		body := string(regs[len(regs)-1].Body)
		if i := strings.Index(body, `,"externalId"`); i >= 0 {
			return body[i:]
		}
		return ""
	}
	linked := func(endpointID string) string {
		t.Helper()
		ctx := context.Background()
		ep, err := ts.srv.store.Endpoint(ctx, w.WebsiteID, endpointID)
		if err != nil {
			t.Fatal(err)
		}
		p, err := ts.srv.store.Person(ctx, w.WebsiteID, ep.SubscriberID)
		if err != nil {
			t.Fatal(err)
		}
		return p.ExternalID
	}
	load := func() ready {
		t.Helper()
		d.call("goto", map[string]string{"url": site.URL + "/"}, nil)
		var r ready
		d.page("RelayBell.ready", &r)
		if !r.Subscribed || r.EndpointID == "" || r.Error != "" {
			t.Fatalf("RelayBell.ready: %+v", r)
		}
		return r
	}
	first := load()
	if got := lastRegistration(); got != "" || linked(first.EndpointID) != "" {
		t.Fatalf("first page view registered %q, linked to %q", got, linked(first.EndpointID))
	}

	// login with the server's hash links; the next page view sends both
	// again and is accepted.
	login := func(externalID, hash string) ids {
		t.Helper()
		var got ids
		d.page(fmt.Sprintf("RelayBell.login(%q, %q)", externalID, hash), &got)
		if want := fmt.Sprintf(`,"externalId":%q,"externalIdHash":%q}`, externalID, hash); lastRegistration() != want {
			t.Fatalf("login(%s) registered %s, want %s", externalID, lastRegistration(), want)
		}
		if got.EndpointID != first.EndpointID || linked(got.EndpointID) != externalID {
			t.Fatalf("login(%s): %+v linked to %q", externalID, got, linked(got.EndpointID))
		}
		return got
	}
	alice := login("alice", sign("alice"))
	if again := load(); again.SubscriberID != alice.SubscriberID ||
		lastRegistration() != fmt.Sprintf(`,"externalId":"alice","externalIdHash":%q}`, sign("alice")) {
		t.Fatalf("page view as alice: %+v registered %s", again, lastRegistration())
	}

	// Logout, then login as another person with their own hash.
	var out ids
	d.page("RelayBell.logout()", &out)
	if lastRegistration() != `,"externalId":null}` || out.EndpointID != first.EndpointID || linked(out.EndpointID) != "" {
		t.Fatalf("logout: %+v registered %s", out, lastRegistration())
	}
	// (A new person takes the anonymous subscriber the browser had.)
	if bob := login("bob", sign("bob")); bob.SubscriberID == alice.SubscriberID {
		t.Errorf("bob has alice's subscriber %s", bob.SubscriberID)
	}

	// A wrong hash (here bob's for carol) is refused; the SDK registers the
	// browser again without it and rejects with the error's code.
	d.page("RelayBell.logout()", &out)
	n := len(rb.all("POST", base+"/subscriptions"))
	var refused struct {
		Code         string `json:"code"`
		Message      string `json:"message"`
		SubscriberID string `json:"subscriberId"`
		EndpointID   string `json:"endpointId"`
	}
	d.page(fmt.Sprintf(`RelayBell.login('carol', %q).then(() => null,
		(e) => ({ code: e.code, message: e.message, subscriberId: e.subscriberId, endpointId: e.endpointId }))`, sign("bob")), &refused)
	if refused.Code != "invalid_external_id_hash" || !strings.Contains(refused.Message, "does not match externalId") ||
		refused.SubscriberID != out.SubscriberID || refused.EndpointID != first.EndpointID {
		t.Fatalf("login with a wrong hash: %+v", refused)
	}
	regs := rb.all("POST", base+"/subscriptions")[n:]
	if len(regs) != 2 || !strings.HasSuffix(string(regs[0].Body), fmt.Sprintf(`,"externalId":"carol","externalIdHash":%q}`, sign("bob"))) ||
		strings.Contains(string(regs[1].Body), "externalId") {
		t.Fatalf("registrations of the refused login: %q", regs)
	}
	if linked(first.EndpointID) != "" {
		t.Errorf("after the refused login linked to %q", linked(first.EndpointID))
	}
	if _, err := ts.srv.store.Person(context.Background(), w.WebsiteID, "carol"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("carol: %v, want not found", err)
	}
	var state map[string]any
	d.page(`caches.open('relaybell').then(async (c) => (await c.match((await c.keys()).find((r) => r.url.includes('/state')))).json())`, &state)
	if !reflect.DeepEqual(state, map[string]any{"subscriberId": out.SubscriberID, "endpointId": first.EndpointID, "endpoint": sub.Endpoint, "auth": sub.Auth}) {
		t.Errorf("SDK state after the refused login %v", state)
	}
	// The next page view registers the anonymous browser without a fuss.
	if r := load(); r.SubscriberID != out.SubscriberID || lastRegistration() != "" {
		t.Errorf("page view after the refused login: %+v registered %s", r, lastRegistration())
	}
}
