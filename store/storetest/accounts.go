package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/store"
)

var accountCases = []testCase{
	{"CreateWebsiteRoundTrip", testCreateWebsiteRoundTrip},
	{"SecondWebsiteOfAccount", testSecondWebsiteOfAccount},
	{"CreateWebsiteDuplicates", testCreateWebsiteDuplicates},
	{"LookupsNotFound", testAccountLookupsNotFound},
	{"KeyOwner", testKeyOwner},
	{"CreateAPIKey", testCreateAPIKey},
	{"TouchAPIKey", testTouchAPIKey},
	{"AccountFlags", testAccountFlags},
	{"AuthVersion", testAuthVersion},
}

func testCreateWebsiteRoundTrip(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	newWebsite(t, s) // another website must not get in the way

	got, err := s.Website(ctx, w.Website.ID)
	noErr(t, "Website", err)
	same(t, "Website", got, w.Website)

	got, err = s.WebsiteByProjectID(ctx, w.Website.ProjectID)
	noErr(t, "WebsiteByProjectID", err)
	same(t, "WebsiteByProjectID", got, w.Website)

	a, err := s.Account(ctx, w.Account.ID)
	noErr(t, "Account", err)
	same(t, "Account", a, w.Account)
}

// A website created for an account that exists already leaves the account
// as it was.
func testSecondWebsiteOfAccount(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	second := w.Website
	second.ID = uuid.NewString()
	second.ProjectID = "prj_" + second.ID[:12]
	changed := w.Account
	changed.OwnerEmail = "someone-else@example.com"
	changed.EmailVerified = false
	noErr(t, "CreateWebsite (second)", s.CreateWebsite(ctx, changed, second, newKey(second.ID, []string{"full"})))

	a, err := s.Account(ctx, w.Account.ID)
	noErr(t, "Account", err)
	same(t, "Account", a, w.Account)
	got, err := s.Website(ctx, second.ID)
	noErr(t, "Website", err)
	same(t, "second Website", got, second)
}

func testCreateWebsiteDuplicates(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	f := func(name string, mutate func(a *store.Account, ws *store.Website, k *store.APIKey)) {
		t.Helper()
		a := store.Account{ID: uuid.NewString(), OwnerEmail: "x@example.com", CreatedAt: t0}
		ws := w.Website
		ws.ID, ws.ProjectID, ws.AccountID = uuid.NewString(), "prj_"+uuid.NewString()[:12], a.ID
		k := newKey(ws.ID, []string{"full"})
		mutate(&a, &ws, &k)
		wantErr(t, name, s.CreateWebsite(ctx, a, ws, k), store.ErrConflict)
		// A failed create leaves nothing behind.
		_, err := s.Account(ctx, a.ID)
		wantErr(t, name+": Account", err, store.ErrNotFound)
		if ws.ID != w.Website.ID {
			_, err := s.Website(ctx, ws.ID)
			wantErr(t, name+": Website", err, store.ErrNotFound)
		}
	}
	f("same website id", func(_ *store.Account, ws *store.Website, k *store.APIKey) {
		ws.ID, k.WebsiteID = w.Website.ID, w.Website.ID
	})
	f("same project id", func(_ *store.Account, ws *store.Website, _ *store.APIKey) { ws.ProjectID = w.Website.ProjectID })
	f("same key hash", func(_ *store.Account, _ *store.Website, k *store.APIKey) { k.Hash = w.Key.Hash })

	got, err := s.Website(ctx, w.Website.ID)
	noErr(t, "Website", err)
	same(t, "Website", got, w.Website)
	owner, err := s.KeyOwner(ctx, w.Key.Hash)
	noErr(t, "KeyOwner", err)
	same(t, "KeyOwner website", owner.Website, w.Website)
}

func testAccountLookupsNotFound(t *testing.T, s store.Store) {
	ctx := context.Background()
	newWebsite(t, s)
	_, err := s.Website(ctx, uuid.NewString())
	wantErr(t, "Website(unknown)", err, store.ErrNotFound)
	_, err = s.WebsiteByProjectID(ctx, "prj_unknown")
	wantErr(t, "WebsiteByProjectID(unknown)", err, store.ErrNotFound)
	_, err = s.Account(ctx, uuid.NewString())
	wantErr(t, "Account(unknown)", err, store.ErrNotFound)
	_, err = s.KeyOwner(ctx, "0000000000000000000000000000000000000000000000000000000000000000")
	wantErr(t, "KeyOwner(unknown)", err, store.ErrNotFound)
	wantErr(t, "SetAccountSuspended(unknown)", s.SetAccountSuspended(ctx, uuid.NewString(), true), store.ErrNotFound)
	wantErr(t, "SetAccountEmailVerified(unknown)", s.SetAccountEmailVerified(ctx, uuid.NewString()), store.ErrNotFound)
	wantErr(t, "TouchAPIKey(unknown)", s.TouchAPIKey(ctx, uuid.NewString(), t0), store.ErrNotFound)
}

func testKeyOwner(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	other := newWebsite(t, s)

	got, err := s.KeyOwner(ctx, w.Key.Hash)
	noErr(t, "KeyOwner", err)
	same(t, "KeyOwner", got, store.KeyOwner{Key: w.Key, Website: w.Website, Account: w.Account})

	got, err = s.KeyOwner(ctx, other.Key.Hash)
	noErr(t, "KeyOwner(other)", err)
	same(t, "KeyOwner(other)", got.Website, other.Website)

	// Expired keys still resolve: the caller checks ExpiresAt.
	expired := newKey(w.Website.ID, []string{"send", "subscribers:read"})
	expired.ExpiresAt = ptr(at(-time.Hour))
	noErr(t, "CreateAPIKey(expired)", s.CreateAPIKey(ctx, expired))
	got, err = s.KeyOwner(ctx, expired.Hash)
	noErr(t, "KeyOwner(expired)", err)
	same(t, "KeyOwner(expired).Key", got.Key, expired)

	revoked := newKey(w.Website.ID, []string{"send"})
	revoked.RevokedAt = ptr(at(time.Minute))
	noErr(t, "CreateAPIKey(revoked)", s.CreateAPIKey(ctx, revoked))
	_, err = s.KeyOwner(ctx, revoked.Hash)
	wantErr(t, "KeyOwner(revoked)", err, store.ErrNotFound)
}

func testCreateAPIKey(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	k := newKey(w.Website.ID, []string{"send", "segments:write"})
	k.ExpiresAt = ptr(at(24 * time.Hour))
	noErr(t, "CreateAPIKey", s.CreateAPIKey(ctx, k))
	got, err := s.KeyOwner(ctx, k.Hash)
	noErr(t, "KeyOwner", err)
	same(t, "KeyOwner.Key", got.Key, k)
	same(t, "KeyOwner.Website", got.Website, w.Website)

	noScopes := newKey(w.Website.ID, nil)
	noErr(t, "CreateAPIKey(no scopes)", s.CreateAPIKey(ctx, noScopes))
	got, err = s.KeyOwner(ctx, noScopes.Hash)
	noErr(t, "KeyOwner(no scopes)", err)
	if len(got.Key.Scopes) != 0 {
		t.Fatalf("KeyOwner(no scopes).Key.Scopes = %q, want none", got.Key.Scopes)
	}

	dup := newKey(w.Website.ID, nil)
	dup.Hash = k.Hash
	wantErr(t, "CreateAPIKey(same hash)", s.CreateAPIKey(ctx, dup), store.ErrConflict)
	dup = newKey(w.Website.ID, nil)
	dup.ID = k.ID
	wantErr(t, "CreateAPIKey(same id)", s.CreateAPIKey(ctx, dup), store.ErrConflict)
	wantErr(t, "CreateAPIKey(unknown website)", s.CreateAPIKey(ctx, newKey(uuid.NewString(), nil)), store.ErrNotFound)
}

func testTouchAPIKey(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	other := newWebsite(t, s)
	noErr(t, "TouchAPIKey", s.TouchAPIKey(ctx, w.Key.ID, at(time.Hour)))
	noErr(t, "TouchAPIKey (later)", s.TouchAPIKey(ctx, w.Key.ID, at(2*time.Hour)))
	got, err := s.KeyOwner(ctx, w.Key.Hash)
	noErr(t, "KeyOwner", err)
	want := w.Key
	want.LastUsedAt = ptr(at(2 * time.Hour))
	same(t, "touched key", got.Key, want)

	got, err = s.KeyOwner(ctx, other.Key.Hash)
	noErr(t, "KeyOwner(other)", err)
	if got.Key.LastUsedAt != nil {
		t.Fatalf("other key LastUsedAt = %v, want nil", got.Key.LastUsedAt)
	}
}

func testAccountFlags(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	other := newWebsite(t, s)
	f := func(step string, id string, wantSuspended, wantVerified bool) {
		t.Helper()
		a, err := s.Account(ctx, id)
		noErr(t, step, err)
		if a.Suspended != wantSuspended || a.EmailVerified != wantVerified {
			t.Fatalf("%s: suspended=%v verified=%v, want %v %v", step, a.Suspended, a.EmailVerified, wantSuspended, wantVerified)
		}
	}
	noErr(t, "suspend", s.SetAccountSuspended(ctx, w.Account.ID, true))
	f("after suspend", w.Account.ID, true, true)
	f("other after suspend", other.Account.ID, false, true)
	owner, err := s.KeyOwner(ctx, w.Key.Hash)
	noErr(t, "KeyOwner", err)
	if !owner.Account.Suspended {
		t.Fatal("KeyOwner.Account.Suspended = false after suspend")
	}
	noErr(t, "unsuspend", s.SetAccountSuspended(ctx, w.Account.ID, false))
	f("after unsuspend", w.Account.ID, false, true)

	unverified := store.Account{ID: uuid.NewString(), OwnerEmail: "new@example.com", CreatedAt: t0}
	ws := w.Website
	ws.ID, ws.ProjectID, ws.AccountID = uuid.NewString(), "prj_"+uuid.NewString()[:12], unverified.ID
	noErr(t, "CreateWebsite(unverified)", s.CreateWebsite(ctx, unverified, ws, newKey(ws.ID, nil)))
	f("unverified", unverified.ID, false, false)
	noErr(t, "verify", s.SetAccountEmailVerified(ctx, unverified.ID))
	f("after verify", unverified.ID, false, true)
	noErr(t, "verify again", s.SetAccountEmailVerified(ctx, unverified.ID))
	f("after verify again", unverified.ID, false, true)
}

// Every change to what KeyOwner answers moves the auth version, visibly to
// the next read; reads, last-use writes and changes that fail do not. A
// key revocation (RevokeAPIKey, with DELETE /keys/{id}) belongs here too:
// the store's triggers move the version for it as they do for the rest.
func testAuthVersion(t *testing.T, s store.Store) {
	ctx := context.Background()
	v, err := s.AuthVersion(ctx)
	noErr(t, "AuthVersion", err)
	moved := func(step string, want bool) {
		t.Helper()
		got, err := s.AuthVersion(ctx)
		noErr(t, step+": AuthVersion", err)
		switch {
		case want && got <= v:
			t.Fatalf("%s: auth version %d, want more than %d", step, got, v)
		case !want && got != v:
			t.Fatalf("%s: auth version moved from %d to %d", step, v, got)
		}
		v = got
	}
	moved("nothing", false)

	w := newWebsite(t, s)
	moved("CreateWebsite", true)
	_, err = s.KeyOwner(ctx, w.Key.Hash)
	noErr(t, "KeyOwner", err)
	moved("KeyOwner", false)
	noErr(t, "TouchAPIKey", s.TouchAPIKey(ctx, w.Key.ID, at(time.Hour)))
	moved("TouchAPIKey", false)

	k := newKey(w.Website.ID, []string{"send"})
	noErr(t, "CreateAPIKey", s.CreateAPIKey(ctx, k))
	moved("CreateAPIKey", true)
	dup := newKey(w.Website.ID, nil)
	dup.Hash = k.Hash
	wantErr(t, "CreateAPIKey(same hash)", s.CreateAPIKey(ctx, dup), store.ErrConflict)
	moved("CreateAPIKey(same hash)", false)
	wantErr(t, "CreateAPIKey(unknown website)", s.CreateAPIKey(ctx, newKey(uuid.NewString(), nil)), store.ErrNotFound)
	moved("CreateAPIKey(unknown website)", false)

	noErr(t, "suspend", s.SetAccountSuspended(ctx, w.Account.ID, true))
	moved("suspend", true)
	noErr(t, "unsuspend", s.SetAccountSuspended(ctx, w.Account.ID, false))
	moved("unsuspend", true)
	wantErr(t, "suspend(unknown)", s.SetAccountSuspended(ctx, uuid.NewString(), true), store.ErrNotFound)
	moved("suspend(unknown)", false)

	unverified := store.Account{ID: uuid.NewString(), OwnerEmail: "new@example.com", CreatedAt: t0}
	ws := w.Website
	ws.ID, ws.ProjectID, ws.AccountID = uuid.NewString(), "prj_"+uuid.NewString()[:12], unverified.ID
	noErr(t, "CreateWebsite(unverified)", s.CreateWebsite(ctx, unverified, ws, newKey(ws.ID, nil)))
	moved("CreateWebsite(unverified)", true)
	noErr(t, "verify", s.SetAccountEmailVerified(ctx, unverified.ID))
	moved("verify", true)

	// The key cache holds the website too.
	_, err = s.UpdateWebsite(ctx, w.Website.ID, func(w *store.Website) error {
		w.Settings.UTMCampaign = "summer"
		return nil
	})
	noErr(t, "UpdateWebsite", err)
	moved("UpdateWebsite", true)
	refused := errors.New("refused")
	_, err = s.UpdateWebsite(ctx, w.Website.ID, func(w *store.Website) error {
		w.Timezone = "UTC"
		return refused
	})
	wantErr(t, "UpdateWebsite(refused)", err, refused)
	moved("UpdateWebsite(refused)", false)
}
