package api

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/relaybell/relaybell/store"
)

// The error of a token that verifies nothing (unknown, used, expired, or
// of an address verified since).
const tokenRefused = `,"message":"this link is unknown, already used or expired: sign in, or ask for a new one with Forgot your password?"`

// verifyElsewhere posts the mailed code and a password from a browser
// without a session, as the dashboard does with the mail's link.
func (h *harness) verifyElsewhere(token, password string) response {
	h.t.Helper()
	return h.do("POST", "/api/v1/auth/verify-email/password", `{"token":"`+token+`","password":"`+password+`"}`, csrfHeader, "1")
}

// login signs email in with password and returns the answer.
func (h *harness) login(email, password string) response {
	h.t.Helper()
	return h.do("POST", "/api/v1/auth/login", `{"email":"`+email+`","password":"`+password+`"}`, csrfHeader, "1")
}

// userOf loads the person with the address.
func (h *harness) userOf(t *testing.T, email string) store.User {
	t.Helper()
	u, err := h.st.UserByEmail(context.Background(), email)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// The mail's link opened in another browser: the person chooses their
// password there, which verifies the address, signs them in, and ends the
// signing-up session and the password it gave. Refusals change nothing.
func TestVerifyEmailElsewhere(t *testing.T) {
	h := newHarness(t)
	ann := h.signup(t, "ann@example.com")
	code := h.mailedToken(t, "ann@example.com", "Verify")
	before := h.userOf(t, "ann@example.com")

	// Refusals, each exact; none spends the code nor changes the person.
	expectError(t, h.verifyElsewhere(code, "short"), 400, CodeInvalidPassword,
		`,"message":"the password must have at least 8 characters"`)
	expectError(t, h.verifyElsewhere("not-the-code", "ann's own password"), 400, CodeInvalidToken, tokenRefused)
	expectError(t, h.do("POST", "/api/v1/auth/verify-email/password", `{"token":"`+code+`","password":"ann's own password"}`), 403, CodeCSRFFailed,
		`,"message":"send the X-RelayBell-CSRF: 1 header with every change made under a session"`)
	expectError(t, h.do("POST", "/api/v1/auth/verify-email/password", `{"token":"`+code+`","password":"ann's own password","x":1}`, csrfHeader, "1"),
		400, CodeUnknownField, `,"message":"unknown field \"x\""`)
	if after := h.userOf(t, "ann@example.com"); after != before {
		t.Fatalf("a refusal changed the person: %+v, was %+v", after, before)
	}
	if r := ann.do("GET", "/api/v1/auth/me", ""); r.status != 200 {
		t.Fatalf("a refusal ended the sign-up's session: %d %s", r.status, r.body)
	}

	// The code and a good password: 200 with the person, verified, owner
	// of their account, and the cookie of a new session.
	r := h.verifyElsewhere(code, "ann's own password")
	if r.status != 200 {
		t.Fatalf("verify elsewhere: %d %s", r.status, r.body)
	}
	ms, err := h.st.Memberships(context.Background(), before.ID)
	if err != nil || len(ms) != 1 {
		t.Fatalf("memberships %+v %v", ms, err)
	}
	want := `{"user":{"id":"` + before.ID + `","email":"ann@example.com","name":"Test","emailVerified":true},` +
		`"accounts":[{"id":"` + ms[0].AccountID + `","role":"owner","ownerEmail":"ann@example.com","emailVerified":true,"suspended":false}],"websites":[]}`
	if string(r.body) != want {
		t.Fatalf("body\n %s\nwant\n %s", r.body, want)
	}
	if got := r.header["Set-Cookie"]; !regexp.MustCompile(`^rb_session=[A-Za-z0-9_-]{43}; max-age=2592000; path=/; HttpOnly; SameSite=Lax$`).MatchString(got) {
		t.Fatalf("cookie %q", got)
	}
	phone := &person{h: h, email: ann.email, token: cookieToken(t, r)}
	if r := phone.do("GET", "/api/v1/auth/me", ""); r.status != 200 || string(r.body) != want {
		t.Fatalf("the new session: %d %s", r.status, r.body)
	}
	phone.website(t, "Shop") // a verified person makes websites

	// The sign-up's session and its password are over; the new one works.
	expectError(t, ann.do("GET", "/api/v1/auth/me", ""), 401, CodeNotAuthenticated, `,"message":"the session ended: sign in again"`)
	expectCode(t, h.login("ann@example.com", testPassword), 401, CodeInvalidCredentials)
	if r := h.login("ann@example.com", "ann's own password"); r.status != 200 {
		t.Fatalf("login with the chosen password: %d %s", r.status, r.body)
	}

	// The code is spent: again, from here or from any session, it is refused.
	expectError(t, h.verifyElsewhere(code, "a third password"), 400, CodeInvalidToken, tokenRefused)
	expectError(t, phone.do("POST", "/api/v1/auth/verify-email", `{"token":"`+code+`"}`), 400, CodeInvalidToken, tokenRefused)
	if r := h.login("ann@example.com", "ann's own password"); r.status != 200 {
		t.Fatalf("the refused reuse changed the password: %d %s", r.status, r.body)
	}
}

// Whoever signs up first with someone else's address is locked out when
// its owner opens the mail: the owner chooses the password, the squatter's
// session ends and their password no longer works. The squatter's session
// cannot spend the code of the owner's sign-up again either.
func TestVerifyEmailElsewhereLocksSquatterOut(t *testing.T) {
	h := newHarness(t)
	squatter := h.signup(t, "bob@example.com")
	first := h.mailedToken(t, "bob@example.com", "Verify")
	// Bob, not knowing, signs up too: his session has no user, and the
	// address (still unverified) is mailed a new link.
	bob := h.signup(t, "bob@example.com")
	again := h.mailedToken(t, "bob@example.com", "Verify")
	if again == first {
		t.Fatal("signing up again mailed no new link")
	}
	// In Bob's session, or a third person's, the link does not verify the
	// squatter's sign-up, and stays unspent.
	other := h.signup(t, "other@example.com")
	other.verify(t)
	for _, p := range []*person{bob, other} {
		expectError(t, p.do("POST", "/api/v1/auth/verify-email", `{"token":"`+again+`"}`), 400, CodeInvalidToken, tokenRefused)
	}
	if u := h.userOf(t, "bob@example.com"); u.EmailVerified {
		t.Fatal("the squatter's sign-up is verified")
	}

	// Bob chooses his password with the link: his, verified.
	r := h.verifyElsewhere(again, "bob's own password")
	if r.status != 200 {
		t.Fatalf("Bob's verification: %d %s", r.status, r.body)
	}
	expectError(t, squatter.do("GET", "/api/v1/auth/me", ""), 401, CodeNotAuthenticated, `,"message":"the session ended: sign in again"`)
	expectCode(t, h.login("bob@example.com", testPassword), 401, CodeInvalidCredentials)
	// The first link, still in the mailbox, sets no password now.
	expectError(t, h.verifyElsewhere(first, "the squatter's try"), 400, CodeInvalidToken, tokenRefused)
	if r := h.login("bob@example.com", "bob's own password"); r.status != 200 {
		t.Fatalf("Bob's login: %d %s", r.status, r.body)
	}
	// The other person's session is untouched.
	if r := other.do("GET", "/api/v1/auth/me", ""); r.status != 200 {
		t.Fatalf("the other person's session: %d %s", r.status, r.body)
	}
}

// A code past its 7 days verifies nothing and changes nothing.
func TestVerifyEmailElsewhereExpired(t *testing.T) {
	h := newHarness(t)
	ann := h.signup(t, "ann@example.com")
	code := h.mailedToken(t, "ann@example.com", "Verify")
	before := h.userOf(t, "ann@example.com")
	h.clock.Add(6 * 24 * time.Hour)
	if r := ann.do("GET", "/api/v1/auth/me", ""); r.status != 200 { // the session stays in use
		t.Fatalf("the sign-up's session: %d %s", r.status, r.body)
	}
	h.clock.Add(24 * time.Hour)
	expectError(t, h.verifyElsewhere(code, "ann's own password"), 400, CodeInvalidToken, tokenRefused)
	if after := h.userOf(t, "ann@example.com"); after != before {
		t.Fatalf("the person changed: %+v, was %+v", after, before)
	}
	if r := ann.do("GET", "/api/v1/auth/me", ""); r.status != 200 {
		t.Fatalf("the sign-up's session: %d %s", r.status, r.body)
	}
}

// The same browser's session verifies at once with the link, and a second
// link mailed before then sets no password afterwards.
func TestVerifyEmailElsewhereAfterVerified(t *testing.T) {
	h := newHarness(t)
	ann := h.signup(t, "ann@example.com")
	first := h.mailedToken(t, "ann@example.com", "Verify")
	if r := ann.do("POST", "/api/v1/auth/verify-email/resend", ""); r.status != 200 {
		t.Fatalf("resend: %d %s", r.status, r.body)
	}
	second := h.mailedToken(t, "ann@example.com", "Verify")
	if r := ann.do("POST", "/api/v1/auth/verify-email", `{"token":"`+first+`"}`); r.status != 200 || string(r.body) != `{"ok":true}` {
		t.Fatalf("verify in the signing-up session: %d %s", r.status, r.body)
	}
	expectError(t, h.verifyElsewhere(second, "someone's new password"), 400, CodeInvalidToken, tokenRefused)
	if r := h.login("ann@example.com", testPassword); r.status != 200 {
		t.Fatalf("the password changed: %d %s", r.status, r.body)
	}
	if r := ann.do("GET", "/api/v1/auth/me", ""); r.status != 200 {
		t.Fatalf("the session ended: %d %s", r.status, r.body)
	}
}

// The verification mail carries the link to the public URL's dashboard
// and the same code, and says the link works in any browser.
func TestVerifyMailLink(t *testing.T) {
	h := newHarness(t, func(c *testConfig) { c.PublicURL = "https://push.example.com" })
	h.signup(t, "ann@example.com")
	body := h.mailTo(t, "ann@example.com", "Verify").Body
	code := h.mailedToken(t, "ann@example.com", "Verify")
	want := "Welcome to RelayBell.\n\nVerify your address:\n\nhttps://push.example.com/#/verify-email?token=" + code + "\n\n" +
		"The link works in any browser. In the one you signed up with, it verifies the address at once. " +
		"In another, it asks you to choose your password: that verifies the address, signs you in, " +
		"and signs out every other session of the account.\n\n" +
		"Or give this code there: " + code + "\n\nIt works for 7 days. If you did not sign up, there is nothing to do.\n"
	if body != want {
		t.Fatalf("mail\n%s\nwant\n%s", body, want)
	}
}

// A sign-up of a verified address mails its owner a notice, no link.
func TestSignupVerifiedAddressNotice(t *testing.T) {
	h := newHarness(t)
	h.signup(t, "ann@example.com").verify(t)
	h.signup(t, "ann@example.com")
	m := h.mailTo(t, "ann@example.com", "Someone tried to sign up with your address")
	want := "Someone, maybe you, tried to sign up for RelayBell with this address, which already has an account.\n\n" +
		"Sign in, or reset your password if you forgot it.\nIf it was not you, there is nothing to do.\n"
	if m.Body != want {
		t.Fatalf("mail %q", m.Body)
	}
	if n := h.mailCount(t, "ann@example.com"); n != 2 {
		t.Fatalf("%d mails to ann, want the verification and the notice", n)
	}
}
