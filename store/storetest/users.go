package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/store"
)

var userCases = []testCase{
	{"Users", testUsers},
	{"VerifyEmail", testVerifyEmail},
	{"Members", testMembers},
	{"Sessions", testSessions},
	{"Tokens", testTokens},
	{"Keys", testKeys},
	{"EditAndDeleteWebsite", testEditAndDeleteWebsite},
}

// newUser signs a person up with an account of their own.
func newUser(t *testing.T, s store.Store, email string) (store.User, store.Account) {
	t.Helper()
	u := store.User{ID: uuid.NewString(), Email: email, Name: "N " + email, PasswordHash: "$argon2id$x", CreatedAt: at(time.Second)}
	a := store.Account{ID: uuid.NewString(), OwnerEmail: email, CreatedAt: at(time.Second)}
	noErr(t, "CreateUser", s.CreateUser(context.Background(), store.Signup{User: u, Account: a}))
	return u, a
}

func testUsers(t *testing.T, s store.Store) {
	ctx := context.Background()
	u, a := newUser(t, s, "ann@example.com")
	got, err := s.UserByEmail(ctx, "ann@example.com")
	noErr(t, "UserByEmail", err)
	same(t, "UserByEmail", got, u)
	got, err = s.User(ctx, u.ID)
	noErr(t, "User", err)
	same(t, "User", got, u)
	_, err = s.UserByEmail(ctx, "nobody@example.com")
	wantErr(t, "UserByEmail unknown", err, store.ErrNotFound)
	role, err := s.Role(ctx, u.ID, a.ID)
	noErr(t, "Role", err)
	same(t, "signer's role", role, store.RoleOwner)
	acc, err := s.Account(ctx, a.ID)
	noErr(t, "Account", err)
	same(t, "account", acc, a)

	// A taken address creates nothing.
	dup := store.User{ID: uuid.NewString(), Email: "ann@example.com", PasswordHash: "h", CreatedAt: at(0)}
	other := store.Account{ID: uuid.NewString(), CreatedAt: at(0)}
	wantErr(t, "CreateUser taken", s.CreateUser(ctx, store.Signup{User: dup, Account: other}), store.ErrConflict)
	_, err = s.Account(ctx, other.ID)
	wantErr(t, "the taken sign-up's account", err, store.ErrNotFound)

	// A new password ends every session but the one kept.
	reset := store.UserToken{Hash: "r-" + u.ID, UserID: u.ID, Kind: store.TokenResetPassword, Email: u.Email, CreatedAt: at(0), ExpiresAt: at(time.Hour)}
	noErr(t, "CreateToken", s.CreateToken(ctx, reset))
	verify := store.UserToken{Hash: "v-" + u.ID, UserID: u.ID, Kind: store.TokenVerifyEmail, Email: u.Email, CreatedAt: at(0), ExpiresAt: at(time.Hour)}
	noErr(t, "CreateToken", s.CreateToken(ctx, verify))
	keep := newSession(t, s, u.ID, "keep")
	drop := newSession(t, s, u.ID, "drop")
	noErr(t, "SetPassword", s.SetPassword(ctx, u.ID, "$argon2id$new", keep.ID))
	got, err = s.User(ctx, u.ID)
	noErr(t, "User", err)
	same(t, "new hash", got.PasswordHash, "$argon2id$new")
	_, _, err = s.SessionByHash(ctx, drop.Hash)
	wantErr(t, "the dropped session", err, store.ErrNotFound)
	_, _, err = s.SessionByHash(ctx, keep.Hash)
	noErr(t, "the kept session", err)
	_, err = s.UseToken(ctx, reset.Hash, store.TokenResetPassword, at(time.Minute))
	wantErr(t, "a reset token after a new password", err, store.ErrNotFound)
	_, err = s.UseToken(ctx, verify.Hash, store.TokenVerifyEmail, at(time.Minute))
	noErr(t, "a verification token after a new password", err)
	noErr(t, "SetPassword (ends all)", s.SetPassword(ctx, u.ID, "$argon2id$newer", ""))
	_, _, err = s.SessionByHash(ctx, keep.Hash)
	wantErr(t, "every session", err, store.ErrNotFound)
	wantErr(t, "SetPassword unknown", s.SetPassword(ctx, uuid.NewString(), "h", ""), store.ErrNotFound)
}

func testVerifyEmail(t *testing.T, s store.Store) {
	ctx := context.Background()
	owner, acc := newUser(t, s, "own@example.com")
	u, own := newUser(t, s, "bo@example.com")
	// An invite to bo waits for the address to be verified.
	noErr(t, "Invite", s.Invite(ctx, store.Invite{AccountID: acc.ID, Email: "bo@example.com", Role: store.RoleViewer, CreatedAt: at(time.Minute)}))
	noErr(t, "Invite again", s.Invite(ctx, store.Invite{AccountID: acc.ID, Email: "bo@example.com", Role: store.RoleAdmin, CreatedAt: at(2 * time.Minute)}))
	is, err := s.Invites(ctx, acc.ID)
	noErr(t, "Invites", err)
	same(t, "invites", is, []store.Invite{{AccountID: acc.ID, Email: "bo@example.com", Role: store.RoleAdmin, CreatedAt: at(time.Minute)}})
	_, err = s.Role(ctx, u.ID, acc.ID)
	wantErr(t, "Role before verifying", err, store.ErrNotFound)

	noErr(t, "VerifyEmail", s.VerifyEmail(ctx, u.ID, at(time.Hour)))
	got, err := s.User(ctx, u.ID)
	noErr(t, "User", err)
	same(t, "verified", got.EmailVerified, true)
	a, err := s.Account(ctx, own.ID)
	noErr(t, "Account", err)
	same(t, "own account verified", a.EmailVerified, true)
	a, err = s.Account(ctx, acc.ID)
	noErr(t, "Account", err)
	same(t, "the inviting account untouched", a.EmailVerified, false)
	role, err := s.Role(ctx, u.ID, acc.ID)
	noErr(t, "Role after verifying", err)
	same(t, "invited role", role, store.RoleAdmin)
	is, err = s.Invites(ctx, acc.ID)
	noErr(t, "Invites", err)
	same(t, "invites used", len(is), 0)
	wantErr(t, "RemoveInvite gone", s.RemoveInvite(ctx, acc.ID, "bo@example.com"), store.ErrNotFound)
	wantErr(t, "VerifyEmail unknown", s.VerifyEmail(ctx, uuid.NewString(), at(0)), store.ErrNotFound)
	_ = owner
}

func testMembers(t *testing.T, s store.Store) {
	ctx := context.Background()
	ann, acc := newUser(t, s, "ann@example.com")
	bo, _ := newUser(t, s, "bo@example.com")
	noErr(t, "SetMember", s.SetMember(ctx, store.Member{AccountID: acc.ID, UserID: bo.ID, Role: store.RoleViewer, CreatedAt: at(time.Hour)}))
	ms, err := s.Members(ctx, acc.ID)
	noErr(t, "Members", err)
	same(t, "members", ms, []store.Member{
		{AccountID: acc.ID, UserID: ann.ID, Role: store.RoleOwner, Email: ann.Email, Name: ann.Name, CreatedAt: ann.CreatedAt},
		{AccountID: acc.ID, UserID: bo.ID, Role: store.RoleViewer, Email: bo.Email, Name: bo.Name, CreatedAt: at(time.Hour)},
	})
	mine, err := s.Memberships(ctx, bo.ID)
	noErr(t, "Memberships", err)
	same(t, "bo's memberships", len(mine), 2)

	// The last owner stays.
	wantErr(t, "demoting the last owner", s.SetMember(ctx, store.Member{AccountID: acc.ID, UserID: ann.ID, Role: store.RoleAdmin}), store.ErrConflict)
	wantErr(t, "removing the last owner", s.RemoveMember(ctx, acc.ID, ann.ID), store.ErrConflict)
	noErr(t, "promoting", s.SetMember(ctx, store.Member{AccountID: acc.ID, UserID: bo.ID, Role: store.RoleOwner}))
	noErr(t, "removing an owner of two", s.RemoveMember(ctx, acc.ID, ann.ID))
	_, err = s.Role(ctx, ann.ID, acc.ID)
	wantErr(t, "removed", err, store.ErrNotFound)
	wantErr(t, "RemoveMember unknown", s.RemoveMember(ctx, acc.ID, ann.ID), store.ErrNotFound)

	// Websites of the accounts a person is a member of.
	w := newWebsite(t, s)
	noErr(t, "SetMember", s.SetMember(ctx, store.Member{AccountID: w.Account.ID, UserID: ann.ID, Role: store.RoleAdmin, CreatedAt: at(time.Hour)}))
	ws, err := s.WebsitesOf(ctx, ann.ID)
	noErr(t, "WebsitesOf", err)
	same(t, "ann's websites", ws, []store.Website{w.Website})
	ws, err = s.WebsitesOf(ctx, bo.ID)
	noErr(t, "WebsitesOf", err)
	same(t, "bo's websites", len(ws), 0)
}

// newSession stores a session of userID (none when "").
func newSession(t *testing.T, s store.Store, userID, hash string) store.Session {
	t.Helper()
	se := store.Session{ID: uuid.NewString(), UserID: userID, Hash: hash + "-" + uuid.NewString(), UserAgent: "UA", IP: "192.0.2.1",
		CreatedAt: at(time.Minute), LastSeenAt: at(time.Minute), ExpiresAt: at(30 * 24 * time.Hour)}
	if userID == "" {
		se.Email, se.Name = "taken@example.com", "T"
	}
	noErr(t, "CreateSession", s.CreateSession(context.Background(), se))
	return se
}

func testSessions(t *testing.T, s store.Store) {
	ctx := context.Background()
	u, _ := newUser(t, s, "ann@example.com")
	a := newSession(t, s, u.ID, "a")
	b := newSession(t, s, u.ID, "b")
	noErr(t, "TouchSession", s.TouchSession(ctx, b.ID, at(time.Hour)))
	b.LastSeenAt = at(time.Hour)
	gotS, gotU, err := s.SessionByHash(ctx, b.Hash)
	noErr(t, "SessionByHash", err)
	same(t, "session", gotS, b)
	same(t, "its user", gotU, u)
	ss, err := s.Sessions(ctx, u.ID)
	noErr(t, "Sessions", err)
	same(t, "sessions", len(ss), 2)

	// A session without a user: a sign-up of a taken address.
	n := newSession(t, s, "", "none")
	gotS, gotU, err = s.SessionByHash(ctx, n.Hash)
	noErr(t, "SessionByHash (no user)", err)
	same(t, "session without user", gotS, n)
	same(t, "no user", gotU, store.User{CreatedAt: n.CreatedAt})
	wantErr(t, "DeleteSession of another's", s.DeleteSession(ctx, u.ID, n.ID), store.ErrNotFound)
	noErr(t, "DeleteSession (no user)", s.DeleteSession(ctx, "", n.ID))
	_, _, err = s.SessionByHash(ctx, n.Hash)
	wantErr(t, "deleted", err, store.ErrNotFound)

	noErr(t, "DeleteSession", s.DeleteSession(ctx, u.ID, a.ID))
	_, _, err = s.SessionByHash(ctx, a.Hash)
	wantErr(t, "deleted", err, store.ErrNotFound)
	wantErr(t, "DeleteSession again", s.DeleteSession(ctx, u.ID, a.ID), store.ErrNotFound)
	wantErr(t, "CreateSession unknown user", s.CreateSession(ctx, store.Session{ID: uuid.NewString(), UserID: uuid.NewString(),
		Hash: "x", CreatedAt: at(0), LastSeenAt: at(0), ExpiresAt: at(time.Hour)}), store.ErrNotFound)
}

func testTokens(t *testing.T, s store.Store) {
	ctx := context.Background()
	u, _ := newUser(t, s, "ann@example.com")
	tok := store.UserToken{Hash: "h1", UserID: u.ID, Kind: store.TokenVerifyEmail, Email: u.Email, CreatedAt: at(0), ExpiresAt: at(time.Hour)}
	noErr(t, "CreateToken", s.CreateToken(ctx, tok))
	_, err := s.Token(ctx, "h1", store.TokenResetPassword, at(time.Minute))
	wantErr(t, "Token of another kind", err, store.ErrNotFound)
	_, err = s.Token(ctx, "h1", store.TokenVerifyEmail, at(time.Hour))
	wantErr(t, "Token expired", err, store.ErrNotFound)
	read, err := s.Token(ctx, "h1", store.TokenVerifyEmail, at(time.Minute))
	noErr(t, "Token", err)
	same(t, "token read", read, tok)
	_, err = s.UseToken(ctx, "h1", store.TokenResetPassword, at(time.Minute))
	wantErr(t, "UseToken of another kind", err, store.ErrNotFound)
	got, err := s.UseToken(ctx, "h1", store.TokenVerifyEmail, at(time.Minute))
	noErr(t, "UseToken", err)
	same(t, "token", got, tok)
	_, err = s.UseToken(ctx, "h1", store.TokenVerifyEmail, at(time.Minute))
	wantErr(t, "UseToken twice", err, store.ErrNotFound)

	exp := store.UserToken{Hash: "h2", UserID: u.ID, Kind: store.TokenResetPassword, Email: u.Email, CreatedAt: at(0), ExpiresAt: at(time.Hour)}
	noErr(t, "CreateToken", s.CreateToken(ctx, exp))
	_, err = s.UseToken(ctx, "h2", store.TokenResetPassword, at(time.Hour))
	wantErr(t, "UseToken expired", err, store.ErrNotFound)
	_, err = s.UseToken(ctx, "h2", store.TokenResetPassword, at(0))
	wantErr(t, "an expired token is spent by the try", err, store.ErrNotFound)
}

func testKeys(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	other := newWebsite(t, s)
	k2 := store.APIKey{ID: uuid.NewString(), WebsiteID: w.Website.ID, Name: "second", Prefix: "rb_live_2222", Hash: "hash-2-" + w.Website.ID,
		Scopes: []string{"send"}, CreatedAt: at(time.Hour)}
	noErr(t, "CreateAPIKey", s.CreateAPIKey(ctx, k2))
	ks, err := s.APIKeys(ctx, w.Website.ID)
	noErr(t, "APIKeys", err)
	same(t, "keys, newest first", ks, []store.APIKey{k2, w.Key})
	wantErr(t, "RevokeAPIKey of another website", s.RevokeAPIKey(ctx, other.Website.ID, k2.ID, at(2*time.Hour)), store.ErrNotFound)
	noErr(t, "RevokeAPIKey", s.RevokeAPIKey(ctx, w.Website.ID, k2.ID, at(2*time.Hour)))
	wantErr(t, "RevokeAPIKey twice", s.RevokeAPIKey(ctx, w.Website.ID, k2.ID, at(3*time.Hour)), store.ErrNotFound)
	_, err = s.KeyOwner(ctx, k2.Hash)
	wantErr(t, "KeyOwner of a revoked key", err, store.ErrNotFound)
	ks, err = s.APIKeys(ctx, w.Website.ID)
	noErr(t, "APIKeys", err)
	same(t, "keys after revoking", ks, []store.APIKey{w.Key})
}

func testEditAndDeleteWebsite(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	other := newWebsite(t, s)
	got, err := s.EditWebsite(ctx, w.Website.ID, "New name", "https://new.example", "Europe/Paris")
	noErr(t, "EditWebsite", err)
	want := w.Website
	want.Name, want.URL, want.Timezone = "New name", "https://new.example", "Europe/Paris"
	same(t, "edited", got, want)
	stored, err := s.Website(ctx, w.Website.ID)
	noErr(t, "Website", err)
	same(t, "stored", stored, want)
	_, err = s.EditWebsite(ctx, uuid.NewString(), "x", "https://x.example", "UTC")
	wantErr(t, "EditWebsite unknown", err, store.ErrNotFound)

	noErr(t, "DeleteWebsite", s.DeleteWebsite(ctx, w.Website.ID))
	_, err = s.Website(ctx, w.Website.ID)
	wantErr(t, "deleted", err, store.ErrNotFound)
	_, err = s.KeyOwner(ctx, w.Key.Hash)
	wantErr(t, "its key", err, store.ErrNotFound)
	wantErr(t, "DeleteWebsite again", s.DeleteWebsite(ctx, w.Website.ID), store.ErrNotFound)
	kept, err := s.Website(ctx, other.Website.ID)
	noErr(t, "the other website", err)
	same(t, "the other website", kept, other.Website)
}
