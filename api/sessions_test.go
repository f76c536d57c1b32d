package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/accounts"
	"github.com/relaybell/relaybell/store"
)

const testPassword = "correct horse battery"

// person is a signed-in browser of the tests: its session token.
type person struct {
	h     *harness
	email string
	token string
}

// hdr is the session's cookie and the CSRF header, plus extra pairs.
func (p *person) hdr(extra ...string) []string {
	return append([]string{"Cookie", sessionCookie + "=" + p.token, csrfHeader, "1"}, extra...)
}

func (p *person) do(method, uri, body string, extra ...string) response {
	p.h.t.Helper()
	return p.h.do(method, uri, body, p.hdr(extra...)...)
}

// cookieToken reads the session token a response set.
func cookieToken(t testing.TB, r response) string {
	t.Helper()
	m := regexp.MustCompile(`^rb_session=([A-Za-z0-9_-]+);`).FindStringSubmatch(r.header["Set-Cookie"])
	if m == nil {
		t.Fatalf("no session cookie in %q", r.header["Set-Cookie"])
	}
	return m[1]
}

// signup signs email up and returns the person, unverified.
func (h *harness) signup(t *testing.T, email string) *person {
	t.Helper()
	r := h.do("POST", "/api/v1/auth/signup", `{"email":"`+email+`","password":"`+testPassword+`","name":"Test"}`, csrfHeader, "1")
	if r.status != 201 {
		t.Fatalf("signup %s: %d %s", email, r.status, r.body)
	}
	return &person{h: h, email: email, token: cookieToken(t, r)}
}

// mailTo returns the newest message to email, failing when there is none.
func (h *harness) mailTo(t *testing.T, email, subject string) store.Email {
	t.Helper()
	ms, err := h.st.Emails(context.Background(), false, 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.To == email && strings.Contains(m.Subject, subject) {
			return m
		}
	}
	t.Fatalf("no mail %q to %s in %d messages", subject, email, len(ms))
	return store.Email{}
}

// mailCount counts the messages to email.
func (h *harness) mailCount(t *testing.T, email string) int {
	t.Helper()
	ms, err := h.st.Emails(context.Background(), false, 100)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range ms {
		if m.To == email {
			n++
		}
	}
	return n
}

// mailedToken is the code of the newest mail to email about subject.
func (h *harness) mailedToken(t *testing.T, email, subject string) string {
	t.Helper()
	m := regexp.MustCompile(`give this code there: (\S+)`).FindStringSubmatch(h.mailTo(t, email, subject).Body)
	if m == nil {
		t.Fatalf("no code in the mail to %s", email)
	}
	return m[1]
}

// verify verifies p's address with the mailed code.
func (p *person) verify(t *testing.T) {
	t.Helper()
	tok := p.h.mailedToken(t, p.email, "Verify")
	if r := p.do("POST", "/api/v1/auth/verify-email", `{"token":"`+tok+`"}`); r.status != 200 {
		t.Fatalf("verify %s: %d %s", p.email, r.status, r.body)
	}
}

// website makes a website through p's session and returns its view.
func (p *person) website(t *testing.T, name string) myWebsiteView {
	t.Helper()
	r := p.do("POST", "/api/v1/websites", `{"name":"`+name+`","url":"https://`+strings.ToLower(name)+`.example"}`)
	if r.status != 201 {
		t.Fatalf("creating website: %d %s", r.status, r.body)
	}
	var out struct{ Website myWebsiteView }
	if err := json.Unmarshal(r.body, &out); err != nil {
		t.Fatal(err)
	}
	return out.Website
}

// owner is a verified person with a website of their own.
func (h *harness) owner(t *testing.T, email, site string) (*person, myWebsiteView) {
	t.Helper()
	p := h.signup(t, email)
	p.verify(t)
	return p, p.website(t, site)
}

// member makes a verified person, with an account of their own, and a
// member of accountID with role.
func (h *harness) member(t testing.TB, email, password, accountID, role string) store.User {
	t.Helper()
	ctx := context.Background()
	u, _, err := h.api.accounts.CreateUser(ctx, email, password, "", h.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := h.st.SetMember(ctx, store.Member{AccountID: accountID, UserID: u.ID, Role: role, CreatedAt: h.clock.Now()}); err != nil {
		t.Fatal(err)
	}
	return u
}

// sessionOf starts a session of userID, as signing in does, and returns
// its token.
func (h *harness) sessionOf(t testing.TB, userID string) string {
	t.Helper()
	token, hash, err := accounts.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	now := h.clock.Now()
	if err := h.st.CreateSession(context.Background(), store.Session{ID: uuid.NewString(), UserID: userID, Hash: hash,
		CreatedAt: now, LastSeenAt: now, ExpiresAt: now.Add(accounts.DefaultMaxAge)}); err != nil {
		t.Fatal(err)
	}
	return token
}

// The whole way in: sign up, verify, sign in, make a website, make a key
// and use it, revoke it; each answer exact.
func TestSessionSignupToKey(t *testing.T) {
	h := newHarness(t)
	r := h.do("POST", "/api/v1/auth/signup", `{"email":" Ann@Example.com ","password":"`+testPassword+`","name":"Ann"}`, csrfHeader, "1")
	if r.status != 201 {
		t.Fatalf("signup: %d %s", r.status, r.body)
	}
	if got := r.header["Set-Cookie"]; !regexp.MustCompile(`^rb_session=[A-Za-z0-9_-]{43}; max-age=2592000; path=/; HttpOnly; SameSite=Lax$`).MatchString(got) {
		t.Fatalf("cookie %q", got)
	}
	u, err := h.st.UserByEmail(context.Background(), "ann@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"user":{"id":"` + u.ID + `","email":"ann@example.com","name":"Ann","emailVerified":false},"accounts":[],"websites":[]}`; string(r.body) != want {
		t.Fatalf("signup body\n %s\nwant\n %s", r.body, want)
	}
	if !strings.HasPrefix(u.PasswordHash, "$argon2id$v=19$m=19456,t=2,p=1$") || strings.Contains(u.PasswordHash, testPassword) {
		t.Fatalf("stored password %q", u.PasswordHash)
	}
	ann := &person{h: h, email: "ann@example.com", token: cookieToken(t, r)}
	// The store keeps the token's hash only.
	if _, _, err := h.st.SessionByHash(context.Background(), ann.token); err == nil {
		t.Fatal("the session token is stored as it is")
	}

	// Unverified: nothing to see, nothing to make.
	expectError(t, ann.do("POST", "/api/v1/websites", `{"name":"Shop","url":"https://shop.example"}`), 403, CodeEmailNotVerified,
		`,"message":"verify your e-mail address first"`)
	ann.verify(t)
	expectError(t, ann.do("POST", "/api/v1/auth/verify-email", `{"token":"`+h.mailedToken(t, ann.email, "Verify")+`"}`),
		400, CodeInvalidToken, `,"message":"this link is unknown, already used or expired: sign in, or ask for a new one with Forgot your password?"`)

	// Sign in again, in another browser.
	r = h.do("POST", "/api/v1/auth/login", `{"email":"ann@example.com","password":"`+testPassword+`"}`, csrfHeader, "1")
	if r.status != 200 {
		t.Fatalf("login: %d %s", r.status, r.body)
	}
	second := &person{h: h, email: ann.email, token: cookieToken(t, r)}
	me := second.do("GET", "/api/v1/auth/me", "").json(t)
	accounts := me["accounts"].([]any)
	if len(accounts) != 1 || accounts[0].(map[string]any)["role"] != "owner" || accounts[0].(map[string]any)["emailVerified"] != true {
		t.Fatalf("accounts %v", accounts)
	}

	site := second.website(t, "Bakery")
	if site.Role != "owner" || site.Name != "Bakery" || site.URL != "https://bakery.example" || site.Timezone != "UTC" ||
		!isUUID(site.ProjectID) || site.VAPIDPublicKey == "" {
		t.Fatalf("website %+v", site)
	}
	if n := len(second.do("GET", "/api/v1/websites", "").json(t)["websites"].([]any)); n != 1 {
		t.Fatalf("%d websites", n)
	}

	// Signing up and making a website made no key (spec 5, rule 2).
	if r := second.do("GET", "/api/v1/keys?projectId="+site.ProjectID, ""); r.status != 200 || !strings.HasPrefix(string(r.body), `{"keys":[],"scopes":["full",`) {
		t.Fatalf("keys of a new website: %d %s", r.status, r.body)
	}
	// A key, made from the session, used, listed, revoked.
	r = second.do("POST", "/api/v1/keys?projectId="+site.ProjectID, `{"name":"server","scopes":["send","full"]}`)
	if r.status != 201 {
		t.Fatalf("POST /keys: %d %s", r.status, r.body)
	}
	var made struct {
		APIKey string  `json:"apiKey"`
		Key    KeyView `json:"key"`
	}
	if err := json.Unmarshal(r.body, &made); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(made.APIKey, KeyPrefix) || made.Key.Name != "server" || strings.Join(made.Key.Scopes, ",") != "full" {
		t.Fatalf("made %+v", made)
	}
	if r := h.do("GET", "/api/v1/notifications", "", auth(made.APIKey)...); r.status != 200 {
		t.Fatalf("using the key: %d %s", r.status, r.body)
	}
	h.api.touches.Wait() // its last use is written
	r = h.do("GET", "/api/v1/keys", "", auth(made.APIKey)...)
	want := `{"keys":[{"id":"` + made.Key.ID + `","prefix":"` + made.APIKey[:12] + `","name":"server","scopes":["full"],"expires_at":null,"created_at":"` +
		made.Key.CreatedAt + `","last_used_at":"` + made.Key.CreatedAt + `","expired":false,"current":true}],"scopes":["full","send","events:write","subscribers:read","subscribers:write","segments:write","settings:write","webhooks:write"]}`
	if r.status != 200 || string(r.body) != want {
		t.Fatalf("GET /keys: %d\n %s\nwant\n %s", r.status, r.body, want)
	}
	r = second.do("GET", "/api/v1/keys", "", projectHeader, site.ProjectID)
	if r.status != 200 || !strings.Contains(string(r.body), `"current":false`) {
		t.Fatalf("GET /keys by session: %d %s", r.status, r.body)
	}
	if r := second.do("DELETE", "/api/v1/keys/"+made.Key.ID+"?projectId="+site.ProjectID, ""); r.status != 200 || string(r.body) != `{"ok":true}` {
		t.Fatalf("revoking: %d %s", r.status, r.body)
	}
	expectCode(t, h.do("GET", "/api/v1/notifications", "", auth(made.APIKey)...), 401, CodeInvalidAPIKey)
	expectCode(t, second.do("DELETE", "/api/v1/keys/"+made.Key.ID+"?projectId="+site.ProjectID, ""), 404, CodeNotFound)

	// Logging out ends the session, not the other one.
	if r := second.do("POST", "/api/v1/auth/logout", ""); r.status != 200 || !strings.Contains(r.header["Set-Cookie"], "rb_session=; expires=") {
		t.Fatalf("logout: %d %s %q", r.status, r.body, r.header["Set-Cookie"])
	}
	expectError(t, second.do("GET", "/api/v1/auth/me", ""), 401, CodeNotAuthenticated, `,"message":"the session ended: sign in again"`)
	if r := ann.do("GET", "/api/v1/auth/me", ""); r.status != 200 {
		t.Fatalf("the first session: %d %s", r.status, r.body)
	}
}

// Signing up with a registered address looks the same as a new sign-up,
// to the one signing up, and changes nothing but a mail to the owner.
func TestSignupDoesNotRevealAddress(t *testing.T) {
	h := newHarness(t)
	h.signup(t, "bo@example.com")
	before, err := h.st.UserByEmail(context.Background(), "bo@example.com")
	if err != nil {
		t.Fatal(err)
	}
	shape := func(r response) string {
		return regexp.MustCompile(`"(id|request_id)":"[0-9a-f-]+"`).ReplaceAllString(string(r.body), `"$1":"…"`)
	}
	fresh := h.do("POST", "/api/v1/auth/signup", `{"email":"new@example.com","password":"another password","name":"Bo"}`, csrfHeader, "1")
	taken := h.do("POST", "/api/v1/auth/signup", `{"email":"bo@example.com","password":"another password","name":"Bo"}`, csrfHeader, "1")
	if fresh.status != 201 || taken.status != 201 {
		t.Fatalf("statuses %d %d", fresh.status, taken.status)
	}
	if shape(taken) != strings.ReplaceAll(shape(fresh), "new@", "bo@") {
		t.Fatalf("taken\n %s\nfresh\n %s", taken.body, fresh.body)
	}
	p := &person{h: h, email: "bo@example.com", token: cookieToken(t, taken)}
	q := &person{h: h, email: "new@example.com", token: cookieToken(t, fresh)}
	for _, call := range []struct{ method, path, body string }{
		{"GET", "/api/v1/auth/me", ""},
		{"GET", "/api/v1/websites", ""},
		{"POST", "/api/v1/websites", `{"name":"X","url":"https://x.example"}`},
		{"POST", "/api/v1/auth/verify-email/resend", ""},
		{"GET", "/api/v1/auth/sessions", ""},
		{"POST", "/api/v1/auth/verify-email", `{"token":"not-the-code"}`},
		{"POST", "/api/v1/auth/password", `{"currentPassword":"another password","password":"x-new-password"}`},
	} {
		a, b := p.do(call.method, call.path, call.body), q.do(call.method, call.path, call.body)
		if a.status != b.status || strings.ReplaceAll(shape(b), "new@", "bo@") != shape(a) {
			t.Fatalf("%s %s: taken %d %s, fresh %d %s", call.method, call.path, a.status, a.body, b.status, b.body)
		}
	}
	after, err := h.st.UserByEmail(context.Background(), "bo@example.com")
	if err != nil || after.PasswordHash != before.PasswordHash || after.Name != before.Name {
		t.Fatalf("the registered person changed: %+v %v", after, err)
	}
	// bo is still unverified: the taken sign-up mailed a new verification
	// link, as did its resend (3 in all); new has its sign-up's and its
	// resend's.
	if got := [2]int{h.mailCount(t, "bo@example.com"), h.mailCount(t, "new@example.com")}; got != [2]int{3, 2} {
		t.Fatalf("mails to bo and new: %v", got)
	}
	// Signing in with the password given answers the same too: only a
	// verified address signs in.
	for _, email := range []string{"bo@example.com", "new@example.com"} {
		expectCode(t, h.do("POST", "/api/v1/auth/login", `{"email":"`+email+`","password":"another password"}`, csrfHeader, "1"), 401, CodeInvalidCredentials)
	}
}

// A login fails the same way for an unknown address and a wrong
// password; failures are throttled per address and per IP address.
func TestLoginFailuresAndThrottle(t *testing.T) {
	h := newHarness(t)
	h.signup(t, "cy@example.com").verify(t)
	login := func(email, pw string, ip string) response {
		return h.do("POST", "/api/v1/auth/login", `{"email":"`+email+`","password":"`+pw+`"}`, csrfHeader, "1", "X-Forwarded-For", ip)
	}
	const bad = `,"message":"wrong e-mail address or password, or the address is not verified yet: open the link in the verification mail, in any browser, or use Forgot your password?"`
	expectError(t, login("nobody@example.com", testPassword, "1.1.1.1"), 401, CodeInvalidCredentials, bad)
	expectError(t, login("cy@example.com", "wrong password", "1.1.1.1"), 401, CodeInvalidCredentials, bad)
	expectError(t, login("not an address", "wrong password", "1.1.1.1"), 401, CodeInvalidCredentials, bad)
	for i := 1; i < loginFailuresPerEmailForTest; i++ {
		expectCode(t, login("cy@example.com", "wrong password", "1.1.1.1"), 401, CodeInvalidCredentials)
	}
	// Ten failures for the address: the right password is refused too.
	r := login("cy@example.com", testPassword, "1.1.1.1")
	expectCode(t, r, 429, CodeRateLimited)
	if r.header["Retry-After"] == "" {
		t.Fatal("no Retry-After")
	}
	h.clock.Add(15 * time.Minute)
	if r := login("cy@example.com", testPassword, "1.1.1.1"); r.status != 200 {
		t.Fatalf("after the window: %d %s", r.status, r.body)
	}
}

// loginFailuresPerEmailForTest is accounts' limit of failed logins per
// address in 15 minutes.
const loginFailuresPerEmailForTest = 10

// Fifty failures from one IP address, over many addresses, stop that
// address's logins, and no other's.
func TestLoginThrottlePerIP(t *testing.T) {
	h := newHarness(t, func(c *testConfig) { c.TrustProxy = true })
	h.signup(t, "di@example.com").verify(t)
	for i := 0; i < 50; i++ {
		expectCode(t, h.do("POST", "/api/v1/auth/login", fmt.Sprintf(`{"email":"u%d@example.com","password":"x"}`, i),
			csrfHeader, "1", "X-Forwarded-For", "9.9.9.9"), 401, CodeInvalidCredentials)
	}
	body := `{"email":"di@example.com","password":"` + testPassword + `"}`
	expectCode(t, h.do("POST", "/api/v1/auth/login", body, csrfHeader, "1", "X-Forwarded-For", "9.9.9.9"), 429, CodeRateLimited)
	if r := h.do("POST", "/api/v1/auth/login", body, csrfHeader, "1", "X-Forwarded-For", "8.8.8.8"); r.status != 200 {
		t.Fatalf("another IP address: %d %s", r.status, r.body)
	}
}

// Every request that changes state under a session, and every /auth
// request, needs the CSRF header and no foreign origin.
func TestSessionCSRF(t *testing.T) {
	h := newHarness(t)
	ann, site := h.owner(t, "ann@example.com", "Shop")
	cookie := []string{"Cookie", sessionCookie + "=" + ann.token}
	send := `{"title":"Hi","draft":true,"projectId":"` + site.ProjectID + `"}`
	const msg = `,"message":"send the X-RelayBell-CSRF: 1 header with every change made under a session"`
	expectError(t, h.do("POST", "/api/v1/notifications", send, cookie...), 403, CodeCSRFFailed, msg)
	expectError(t, h.do("POST", "/api/v1/notifications", send, append(cookie, csrfHeader, "yes")...), 403, CodeCSRFFailed, msg)
	expectError(t, h.do("POST", "/api/v1/notifications", send, append(cookie, csrfHeader, "1", "Origin", "https://evil.example")...),
		403, CodeCSRFFailed, `,"message":"the request came from another origin"`)
	expectError(t, h.do("POST", "/api/v1/notifications", send, append(cookie, csrfHeader, "1", "Sec-Fetch-Site", "cross-site")...),
		403, CodeCSRFFailed, `,"message":"the request came from another site"`)
	expectError(t, h.do("POST", "/api/v1/auth/login", `{"email":"ann@example.com","password":"`+testPassword+`"}`), 403, CodeCSRFFailed, msg)
	if n := h.notificationCount(); n != 0 {
		t.Fatalf("%d notifications made", n)
	}
	// Reading needs no header; the same origin passes.
	if r := h.do("GET", "/api/v1/notifications?projectId="+site.ProjectID, "", cookie...); r.status != 200 {
		t.Fatalf("GET: %d %s", r.status, r.body)
	}
	if r := h.do("POST", "/api/v1/notifications", send, append(cookie, csrfHeader, "1", "Host", "push.example", "Origin", "http://push.example")...); r.status != 201 {
		t.Fatalf("same origin: %d %s", r.status, r.body)
	}
	// A key's call needs no header: no cookie, no CSRF.
	if r := h.do("POST", "/api/v1/notifications", `{"title":"Hi","draft":true}`, auth(h.site.APIKey)...); r.status != 201 {
		t.Fatalf("key: %d %s", r.status, r.body)
	}
}

// The cookie is Secure when the service is reached over https.
func TestSessionCookieSecure(t *testing.T) {
	for _, c := range []struct {
		name    string
		cfg     func(*testConfig)
		headers []string
	}{
		{"public url", func(c *testConfig) { c.PublicURL = "https://push.example.com" }, nil},
		{"trusted proxy", func(c *testConfig) { c.TrustProxy = true }, []string{"X-Forwarded-Proto", "https"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, c.cfg)
			r := h.do("POST", "/api/v1/auth/signup", `{"email":"ann@example.com","password":"`+testPassword+`"}`,
				append([]string{csrfHeader, "1"}, c.headers...)...)
			if !strings.HasSuffix(r.header["Set-Cookie"], "; HttpOnly; secure; SameSite=Lax") {
				t.Fatalf("cookie %q", r.header["Set-Cookie"])
			}
		})
	}
	// An untrusted X-Forwarded-Proto changes nothing.
	h := newHarness(t)
	r := h.do("POST", "/api/v1/auth/signup", `{"email":"ann@example.com","password":"`+testPassword+`"}`, csrfHeader, "1", "X-Forwarded-Proto", "https")
	if strings.Contains(r.header["Set-Cookie"], "secure") {
		t.Fatalf("cookie %q", r.header["Set-Cookie"])
	}
}

// Sessions end when idle, at their maximum age, and when revoked; a
// person lists theirs.
func TestSessionLifetime(t *testing.T) {
	h := newHarness(t, func(c *testConfig) { c.Accounts.IdleTimeout = 24 * time.Hour; c.Accounts.MaxAge = 72 * time.Hour })
	ann := h.signup(t, "ann@example.com")
	me := func(p *person) int { return p.do("GET", "/api/v1/auth/me", "").status }
	// Used every 20 hours, it lives to its maximum age.
	for i := 0; i < 3; i++ {
		h.clock.Add(20 * time.Hour)
		if s := me(ann); s != 200 {
			t.Fatalf("after %dh: %d", 20*(i+1), s)
		}
	}
	h.clock.Add(12 * time.Hour) // 72 h
	if s := me(ann); s != 401 {
		t.Fatalf("past the maximum age: %d", s)
	}
	// Idle for more than a day, it ends.
	p := h.signup(t, "bo@example.com")
	h.clock.Add(24*time.Hour + time.Second)
	if s := me(p); s != 401 {
		t.Fatalf("idle: %d", s)
	}

	// Revoking another session of one's own.
	a := h.signup(t, "cy@example.com")
	a.verify(t)
	h.clock.Add(time.Second)
	r := h.do("POST", "/api/v1/auth/login", `{"email":"cy@example.com","password":"`+testPassword+`"}`, csrfHeader, "1", "User-Agent", "Phone")
	b := &person{h: h, email: a.email, token: cookieToken(t, r)}
	var list struct{ Sessions []sessionView }
	if err := json.Unmarshal(a.do("GET", "/api/v1/auth/sessions", "").body, &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Sessions) != 2 || list.Sessions[0].Current || !list.Sessions[1].Current || list.Sessions[0].UserAgent != "Phone" {
		t.Fatalf("sessions %+v", list.Sessions)
	}
	if r := a.do("DELETE", "/api/v1/auth/sessions/"+list.Sessions[0].ID, ""); r.status != 200 {
		t.Fatalf("revoking: %d %s", r.status, r.body)
	}
	if s := me(b); s != 401 {
		t.Fatalf("the revoked session: %d", s)
	}
	if s := me(a); s != 200 {
		t.Fatalf("the revoking session: %d", s)
	}
	// Another person's session is not found.
	expectCode(t, ann.do("DELETE", "/api/v1/auth/sessions/"+list.Sessions[1].ID, ""), 401, CodeNotAuthenticated)
	other := h.signup(t, "di@example.com")
	expectCode(t, other.do("DELETE", "/api/v1/auth/sessions/"+list.Sessions[1].ID, ""), 404, CodeNotFound)
}

// A reset mails a link only to a registered address, answers the same
// either way, and ends every session; a change ends the others.
func TestPasswordResetAndChange(t *testing.T) {
	h := newHarness(t)
	ann := h.signup(t, "ann@example.com")
	for _, email := range []string{"ann@example.com", "nobody@example.com"} {
		if r := h.do("POST", "/api/v1/auth/password/forgot", `{"email":"`+email+`"}`, csrfHeader, "1"); r.status != 200 || string(r.body) != `{"ok":true}` {
			t.Fatalf("forgot %s: %d %s", email, r.status, r.body)
		}
	}
	if n := h.mailCount(t, "nobody@example.com"); n != 0 {
		t.Fatalf("%d mails to an unknown address", n)
	}
	tok := h.mailedToken(t, "ann@example.com", "Reset")
	expectError(t, h.do("POST", "/api/v1/auth/password/reset", `{"token":"`+tok+`","password":"short"}`, csrfHeader, "1"),
		400, CodeInvalidPassword, `,"message":"the password must have at least 8 characters"`)
	if r := h.do("POST", "/api/v1/auth/password/reset", `{"token":"`+tok+`","password":"a new password"}`, csrfHeader, "1"); r.status != 200 {
		t.Fatalf("reset: %d %s", r.status, r.body)
	}
	expectCode(t, h.do("POST", "/api/v1/auth/password/reset", `{"token":"`+tok+`","password":"a new password"}`, csrfHeader, "1"), 400, CodeInvalidToken)
	expectCode(t, ann.do("GET", "/api/v1/auth/me", ""), 401, CodeNotAuthenticated)
	expectCode(t, h.do("POST", "/api/v1/auth/login", `{"email":"ann@example.com","password":"`+testPassword+`"}`, csrfHeader, "1"), 401, CodeInvalidCredentials)
	r := h.do("POST", "/api/v1/auth/login", `{"email":"ann@example.com","password":"a new password"}`, csrfHeader, "1")
	if r.status != 200 || !strings.Contains(string(r.body), `"emailVerified":true`) {
		t.Fatalf("login after the reset (the mail verified the address): %d %s", r.status, r.body)
	}
	one := &person{h: h, email: ann.email, token: cookieToken(t, r)}
	two := &person{h: h, email: ann.email, token: cookieToken(t, h.do("POST", "/api/v1/auth/login", `{"email":"ann@example.com","password":"a new password"}`, csrfHeader, "1"))}
	expectError(t, one.do("POST", "/api/v1/auth/password", `{"currentPassword":"wrong","password":"third password"}`), 403, CodeWrongPassword,
		`,"message":"the current password is wrong"`)
	if r := one.do("POST", "/api/v1/auth/password", `{"currentPassword":"a new password","password":"third password"}`); r.status != 200 {
		t.Fatalf("change: %d %s", r.status, r.body)
	}
	if s := one.do("GET", "/api/v1/auth/me", "").status; s != 200 {
		t.Fatalf("the changing session: %d", s)
	}
	expectCode(t, two.do("GET", "/api/v1/auth/me", ""), 401, CodeNotAuthenticated)
}

// Session calls name the website by ?projectId=, X-Project-Id or the
// body's projectId; without one they answer project_required.
func TestSessionNamesProject(t *testing.T) {
	h := newHarness(t)
	ann, site := h.owner(t, "ann@example.com", "Shop")
	expectError(t, ann.do("GET", "/api/v1/notifications", ""), 400, CodeProjectRequired,
		`,"message":"name the website: ?projectId=, the X-Project-Id header or the body's projectId"`)
	for _, c := range []struct {
		uri, body string
		extra     []string
	}{
		{"/api/v1/notifications?projectId=" + site.ProjectID, `{"title":"query","draft":true}`, nil},
		{"/api/v1/notifications", `{"title":"header","draft":true}`, []string{projectHeader, strings.ToUpper(site.ProjectID)}},
		{"/api/v1/notifications", `{"projectId":"` + site.ProjectID + `","title":"body first","draft":true}`, nil},
		{"/api/v1/notifications", `{"title":"body last","draft":true, "projectId" : "` + site.ProjectID + `" }`, nil},
		{"/api/v1/notifications", `{"title":"body middle","projectId":"` + site.ProjectID + `","draft":true}`, nil},
	} {
		if r := ann.do("POST", c.uri, c.body, c.extra...); r.status != 201 {
			t.Fatalf("%s %s: %d %s", c.uri, c.body, r.status, r.body)
		}
	}
	if n := h.notificationCount(site.ID); n != 5 {
		t.Fatalf("%d notifications", n)
	}
	// Strict decoding still holds for everything else in the body.
	expectCode(t, ann.do("POST", "/api/v1/notifications", `{"projectId":"`+site.ProjectID+`","title":"x","TITLE":"y"}`), 400, CodeUnknownField)
	expectCode(t, ann.do("POST", "/api/v1/notifications", `{"projectId":"`+site.ProjectID+`","projectId":"`+site.ProjectID+`","title":"x"}`), 400, CodeProjectRequired)
}

// A viewer reads and changes nothing: every route that changes state
// answers 403 insufficient_role, and nothing changes.
func TestSessionViewerChangesNothing(t *testing.T) {
	h := newHarness(t)
	ann, site := h.owner(t, "ann@example.com", "Shop")
	if r := ann.do("POST", "/api/v1/members?projectId="+site.ProjectID, `{"email":"vi@example.com","role":"viewer"}`); r.status != 201 {
		t.Fatalf("invite: %d %s", r.status, r.body)
	}
	vi := h.signup(t, "vi@example.com")
	vi.verify(t)
	me := vi.do("GET", "/api/v1/auth/me", "").json(t)
	if ws := me["websites"].([]any); len(ws) != 1 || ws[0].(map[string]any)["role"] != "viewer" {
		t.Fatalf("viewer's websites %v", ws)
	}
	if r := vi.do("GET", "/api/v1/notifications?projectId="+site.ProjectID, ""); r.status != 200 {
		t.Fatalf("viewer reading: %d %s", r.status, r.body)
	}
	before := h.dump.take(t)
	checked := 0
	for _, rt := range h.api.router.routes {
		if rt.auth != authKey || rt.method == http.MethodGet {
			continue
		}
		if rt.role == store.RoleViewer {
			// The calls a viewer may make change nothing of the website's:
			// POST /reports/test mails the viewer a report
			// (TestReportSessions). No other route is one.
			if rt.method+" "+rt.pattern != "POST /api/v1/reports/test" {
				t.Errorf("%s %s is open to viewers", rt.method, rt.pattern)
			}
			continue
		}
		path := strings.NewReplacer("{id}", "00000000-0000-4000-8000-000000000000", "{externalId}", "x",
			"{userId}", "00000000-0000-4000-8000-000000000000", "{email}", "x@example.com").Replace(rt.pattern)
		r := vi.do(rt.method, path+"?projectId="+site.ProjectID, `{}`)
		need := requiredRole(rt)
		expectError(t, r, 403, CodeInsufficientRole, `,"message":"this needs the `+need+` role in the website's account","required":"`+need+`"`)
		checked++
	}
	for _, c := range []struct{ method, path, body string }{
		{"PUT", "/api/v1/websites/" + site.ID, `{"name":"Mine"}`},
		{"DELETE", "/api/v1/websites/" + site.ID, ""},
	} {
		expectCode(t, vi.do(c.method, c.path, c.body), 403, CodeInsufficientRole)
	}
	if checked < 25 {
		t.Fatalf("only %d routes checked", checked)
	}
	if after := h.dump.take(t); after != before {
		t.Fatal("a viewer's calls changed the store")
	}
}

// A member of account A reaches none of account B's websites, by any
// route or any way of naming the project.
func TestSessionAccountIsolation(t *testing.T) {
	h := newHarness(t)
	_, siteA := h.owner(t, "ann@example.com", "Shop")
	bo, siteB := h.owner(t, "bo@example.com", "Bakery")
	// The harness website (admin-made, no member) is no one's either.
	others := []string{siteA.ProjectID, h.site.ProjectID, strings.ToUpper(siteA.ProjectID), "not-a-project"}
	before := h.dump.take(t)
	checked := 0
	for _, rt := range h.api.router.routes {
		if rt.auth != authKey {
			continue
		}
		path := strings.NewReplacer("{id}", "00000000-0000-4000-8000-000000000000", "{externalId}", "x",
			"{userId}", "00000000-0000-4000-8000-000000000000", "{email}", "x@example.com").Replace(rt.pattern)
		for _, p := range others {
			for _, way := range []struct {
				uri, body string
				extra     []string
			}{
				{path + "?projectId=" + p, `{}`, nil},
				{path, `{}`, []string{projectHeader, p}},
				{path, `{"projectId":"` + p + `"}`, nil},
				// Another way named first wins: B's own project in the body changes nothing.
				{path + "?projectId=" + p, `{"projectId":"` + siteB.ProjectID + `"}`, nil},
			} {
				r := bo.do(rt.method, way.uri, way.body, way.extra...)
				expectError(t, r, 404, CodeNotFound, `,"message":"no such project"`)
				checked++
			}
		}
	}
	for _, c := range []struct{ method, path, body string }{
		{"PUT", "/api/v1/websites/" + siteA.ID, `{"name":"Mine"}`},
		{"DELETE", "/api/v1/websites/" + siteA.ID, ""},
		{"PUT", "/api/v1/websites/" + h.site.WebsiteID, `{"name":"Mine"}`},
		{"POST", "/api/v1/websites", `{"name":"X","url":"https://x.example","accountId":"` + h.site.AccountID + `"}`},
	} {
		expectCode(t, bo.do(c.method, c.path, c.body), 404, CodeNotFound)
	}
	if checked < 300 {
		t.Fatalf("only %d calls checked", checked)
	}
	if after := h.dump.take(t); after != before {
		t.Fatal("calls to another account's websites changed the store")
	}
	// B's own key revocation cannot reach A's keys.
	keys, err := h.st.APIKeys(context.Background(), h.site.WebsiteID)
	if err != nil || len(keys) != 1 {
		t.Fatalf("keys %v %v", keys, err)
	}
	expectCode(t, bo.do("DELETE", "/api/v1/keys/"+keys[0].ID+"?projectId="+siteB.ProjectID, ""), 404, CodeNotFound)
}

// The key rules of spec 4.7 and 5 that sessions touch.
func TestKeyRoutesRules(t *testing.T) {
	h := newHarness(t)
	ann, site := h.owner(t, "ann@example.com", "Shop")
	q := "?projectId=" + site.ProjectID
	full := h.site.APIKey
	expectError(t, h.do("POST", "/api/v1/keys", `{}`, auth(full)...), 403, CodeSessionRequired, `,"message":"only the signed-in dashboard can do this"`)
	sendOnly := h.key([]string{ScopeSend}, nil)
	expectError(t, h.do("GET", "/api/v1/keys", "", auth(sendOnly)...), 403, CodeInsufficientScope, `,"required":"full"`)
	// A key revokes only itself.
	var listed struct{ Keys []KeyView }
	if err := json.Unmarshal(h.do("GET", "/api/v1/keys", "", auth(full)...).body, &listed); err != nil || len(listed.Keys) != 2 {
		t.Fatalf("keys %+v %v", listed, err)
	}
	var fullID, sendID string
	for _, k := range listed.Keys {
		if k.Current {
			fullID = k.ID
		} else {
			sendID = k.ID
		}
	}
	expectError(t, h.do("DELETE", "/api/v1/keys/"+fullID, "", auth(sendOnly)...), 403, CodeSessionRequired,
		`,"message":"a key may revoke only itself; revoke other keys from the dashboard"`)
	if r := h.do("DELETE", "/api/v1/keys/current", "", auth(sendOnly)...); r.status != 200 {
		t.Fatalf("revoking current: %d %s", r.status, r.body)
	}
	expectCode(t, h.do("GET", "/api/v1/notifications", "", auth(sendOnly)...), 401, CodeInvalidAPIKey)
	// It is the send key that went, and only it.
	if err := json.Unmarshal(h.do("GET", "/api/v1/keys", "", auth(full)...).body, &listed); err != nil ||
		len(listed.Keys) != 1 || listed.Keys[0].ID != fullID || fullID == sendID {
		t.Fatalf("keys after revoking %s: %+v %v", sendID, listed, err)
	}

	// From the session: bad scopes, bad expiry, the CMS preset.
	expectError(t, ann.do("POST", "/api/v1/keys"+q, `{"scopes":["send","root"]}`), 400, CodeInvalidScopes, `,"message":"unknown scope \"root\""`)
	expectError(t, ann.do("POST", "/api/v1/keys"+q, `{"expiresAt":"2020-01-01"}`), 400, CodeInvalidExpiry, `,"message":"expiresAt must be in the future"`)
	expectError(t, ann.do("POST", "/api/v1/keys"+q, `{"preset":"cms","scopes":["full"]}`), 400, CodeInvalidScopes, `,"message":"give a preset or scopes, not both"`)
	r := ann.do("POST", "/api/v1/keys"+q, `{"preset":"cms"}`)
	if r.status != 201 {
		t.Fatalf("cms key: %d %s", r.status, r.body)
	}
	k := r.json(t)["key"].(map[string]any)
	if k["name"] != "CMS plugin" || fmt.Sprint(k["scopes"]) != "[send events:write]" {
		t.Fatalf("cms key %v", k)
	}
	// A key with no full scope on a route that a session may call: the
	// session is not asked for scopes, the key is.
	if r := ann.do("GET", "/api/v1/keys"+q, ""); r.status != 200 {
		t.Fatalf("session listing: %d %s", r.status, r.body)
	}
}

// A suspended account's websites refuse its members' sessions as its keys.
func TestSessionSuspendedAccount(t *testing.T) {
	h := newHarness(t)
	ann, site := h.owner(t, "ann@example.com", "Shop")
	if r := h.do("POST", "/admin/v1/accounts/"+site.AccountID+"/suspend", "", auth(testAdminToken)...); r.status != 200 {
		t.Fatalf("suspend: %d %s", r.status, r.body)
	}
	expectError(t, ann.do("GET", "/api/v1/notifications?projectId="+site.ProjectID, ""), 403, CodeAccountSuspended, "")
	expectError(t, ann.do("POST", "/api/v1/websites", `{"name":"More","url":"https://more.example"}`), 403, CodeAccountSuspended, "")
}

// Members: invites become memberships when the address is verified; an
// account keeps an owner.
func TestMembers(t *testing.T) {
	h := newHarness(t)
	ann, site := h.owner(t, "ann@example.com", "Shop")
	q := "?projectId=" + site.ProjectID
	expectError(t, ann.do("POST", "/api/v1/members"+q, `{"email":"x@example.com","role":"god"}`), 400, CodeInvalidRole, `,"message":"role must be owner, admin or viewer"`)
	if r := ann.do("POST", "/api/v1/members"+q, `{"email":"Ed@Example.com","role":"admin"}`); r.status != 201 {
		t.Fatalf("invite: %d %s", r.status, r.body)
	}
	h.mailTo(t, "ed@example.com", "You are invited")
	r := ann.do("GET", "/api/v1/members"+q, "")
	if !strings.Contains(string(r.body), `"invites":[{"email":"ed@example.com","role":"admin"`) {
		t.Fatalf("members %s", r.body)
	}
	ed := h.signup(t, "ed@example.com")
	expectCode(t, ed.do("GET", "/api/v1/notifications"+q, ""), 403, CodeEmailNotVerified) // not a member until verified
	ed.verify(t)
	if r := ed.do("POST", "/api/v1/notifications"+q, `{"title":"by admin","draft":true}`); r.status != 201 {
		t.Fatalf("admin sending: %d %s", r.status, r.body)
	}
	expectCode(t, ed.do("POST", "/api/v1/members"+q, `{"email":"z@example.com","role":"owner"}`), 403, CodeInsufficientRole)
	expectCode(t, ed.do("DELETE", "/api/v1/websites/"+site.ID, ""), 403, CodeInsufficientRole)
	annID := ann.do("GET", "/api/v1/auth/me", "").json(t)["user"].(map[string]any)["id"].(string)
	expectError(t, ann.do("PUT", "/api/v1/members/"+annID+q, `{"role":"admin"}`), 409, CodeLastOwner, `,"message":"an account keeps at least one owner"`)
	expectCode(t, ann.do("DELETE", "/api/v1/members/"+annID+q, ""), 409, CodeLastOwner)
	edID := ed.do("GET", "/api/v1/auth/me", "").json(t)["user"].(map[string]any)["id"].(string)
	if r := ann.do("PUT", "/api/v1/members/"+edID+q, `{"role":"owner"}`); r.status != 200 {
		t.Fatalf("promote: %d %s", r.status, r.body)
	}
	if r := ed.do("DELETE", "/api/v1/members/"+annID+q, ""); r.status != 200 {
		t.Fatalf("remove: %d %s", r.status, r.body)
	}
	expectCode(t, ann.do("GET", "/api/v1/notifications"+q, ""), 404, CodeNotFound)
	// The owner deletes the website, and everything of it.
	if r := ed.do("DELETE", "/api/v1/websites/"+site.ID, ""); r.status != 200 {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	if _, err := h.st.Website(context.Background(), site.ID); err == nil {
		t.Fatal("the website is still there")
	}
}

// FuzzTakeMember: taking projectId out of a body leaves a JSON object
// with every other member as it was, and never panics.
func FuzzTakeMember(f *testing.F) {
	for _, s := range []string{`{"projectId":"p"}`, `{"a":1,"projectId":"p"}`, `{"projectId":"p","a":[1,{"projectId":2}]}`,
		`{ "a" : 1 , "projectId" : "p" , "b" : 2 }`, `{"projectId":1}`, `{"projectId":"p","projectId":"q"}`, `[]`, `{`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		rest, value, ok := takeMember([]byte(body), "projectId")
		if !ok {
			return
		}
		var before, after map[string]json.RawMessage
		if err := json.Unmarshal([]byte(body), &before); err != nil {
			t.Fatalf("took %q out of %q, which is not an object: %v", value, body, err)
		}
		if err := json.Unmarshal(rest, &after); err != nil {
			t.Fatalf("%q left %q: %v", body, rest, err)
		}
		var v string
		if json.Unmarshal(before["projectId"], &v) != nil || v != value {
			t.Fatalf("%q: took %q", body, value)
		}
		delete(before, "projectId")
		if _, still := after["projectId"]; still || len(after) != len(before) {
			t.Fatalf("%q left %q", body, rest)
		}
		for k, b := range before {
			if string(after[k]) != string(b) {
				t.Fatalf("%q: member %s became %s", body, b, after[k])
			}
		}
	})
}

// Only the dashboard turns identity verification off or down (a key may
// only raise it): a key gets 403 session_required, a session of an admin
// or owner does it, and a viewer's session gets insufficient_role.
func TestSessionLowersIdentityVerification(t *testing.T) {
	h := newHarness(t)
	owner := h.member(t, "own@example.com", testPassword, h.site.AccountID, store.RoleOwner)
	viewer := h.member(t, "vi@example.com", testPassword, h.site.AccountID, store.RoleViewer)
	own := &person{h: h, email: owner.Email, token: h.sessionOf(t, owner.ID)}
	vi := &person{h: h, email: viewer.Email, token: h.sessionOf(t, viewer.ID)}
	key := auth(h.site.APIKey)
	if r := h.do("PUT", "/api/v1/identity", `{"addSecret":true,"mode":"enforce"}`, key...); r.status != 200 {
		t.Fatalf("enforcing: %d %s", r.status, r.body)
	}
	for _, mode := range []string{"off", "report"} {
		expectCode(t, h.do("PUT", "/api/v1/identity", `{"mode":"`+mode+`"}`, key...), 403, CodeSessionRequired)
	}
	q := "?projectId=" + h.site.ProjectID
	expectCode(t, vi.do("PUT", "/api/v1/identity"+q, `{"mode":"off"}`), 403, CodeInsufficientRole)
	r := own.do("PUT", "/api/v1/identity"+q, `{"mode":"off"}`)
	if r.status != 200 || r.json(t)["mode"] != "off" {
		t.Fatalf("the owner's session turning it off: %d %s", r.status, r.body)
	}
	if got := h.do("GET", "/api/v1/identity", "", key...).json(t)["mode"]; got != "off" {
		t.Fatalf("mode %v", got)
	}
}

// Dashboard sends count against the account's request rates (spec 8.1),
// shared by its members' sessions, apart from any key's.
func TestSessionSendLimitsPerAccount(t *testing.T) {
	h := newHarness(t)
	a := h.member(t, "a@example.com", testPassword, h.site.AccountID, store.RoleOwner)
	b := h.member(t, "b@example.com", testPassword, h.site.AccountID, store.RoleAdmin)
	pa := &person{h: h, token: h.sessionOf(t, a.ID)}
	pb := &person{h: h, token: h.sessionOf(t, b.ID)}
	q := "?projectId=" + h.site.ProjectID
	body := `{"title":"Hi","externalId":"u1"}`
	for i := 0; i < sendsPerMinute; i++ {
		p := pa
		if i%2 == 1 {
			p = pb
		}
		if r := p.do("POST", "/api/v1/notifications"+q, body); r.status != 202 {
			t.Fatalf("send %d: %d %s", i, r.status, r.body)
		}
	}
	r := pb.do("POST", "/api/v1/notifications"+q, body)
	expectError(t, r, 429, CodeRateLimited, `,"message":"the dashboard (this account) may send 60 times a minute and 600 times an hour"`)
	if r.header["Retry-After"] == "" || r.header["Ratelimit-Limit"] != "60" {
		t.Fatalf("headers %v", r.header)
	}
	// A key of the website has rates of its own.
	if r := h.do("POST", "/api/v1/notifications", body, auth(h.site.APIKey)...); r.status != 202 {
		t.Fatalf("a key's send: %d %s", r.status, r.body)
	}
}

// Spec 5, rule 2 for sessions: the commerce signing secret goes to an
// admin or owner, not to a viewer; and an unverified account's members
// get email_not_verified on sends as its keys do.
func TestSessionSettingsSecretAndUnverifiedAccount(t *testing.T) {
	h := newHarness(t)
	admin := h.member(t, "ad@example.com", testPassword, h.site.AccountID, store.RoleAdmin)
	viewer := h.member(t, "vi@example.com", testPassword, h.site.AccountID, store.RoleViewer)
	q := "?projectId=" + h.site.ProjectID
	ad := &person{h: h, token: h.sessionOf(t, admin.ID)}
	vi := &person{h: h, token: h.sessionOf(t, viewer.ID)}
	if r := ad.do("GET", "/api/v1/settings"+q, ""); !strings.Contains(string(r.body), `"commerceSigningSecret":"rbcs_`) {
		t.Fatalf("admin's settings: %d %s", r.status, r.body)
	}
	if r := vi.do("GET", "/api/v1/settings"+q, ""); r.status != 200 || strings.Contains(string(r.body), "commerceSigningSecret") {
		t.Fatalf("viewer's settings: %d %s", r.status, r.body)
	}

	unverified, err := CreateWebsite(context.Background(), h.st, NewWebsite{Name: "New", URL: "https://new.example", EmailVerified: new(bool)}, testStart)
	if err != nil {
		t.Fatal(err)
	}
	m := h.member(t, "m@example.com", testPassword, unverified.AccountID, store.RoleOwner)
	p := &person{h: h, token: h.sessionOf(t, m.ID)}
	want := `,"message":"verify the account's e-mail address before sending"`
	expectError(t, p.do("POST", "/api/v1/notifications?projectId="+unverified.ProjectID, `{"title":"Hi"}`), 403, CodeEmailNotVerified, want)
	expectError(t, h.do("POST", "/api/v1/notifications", `{"title":"Hi"}`, auth(unverified.APIKey)...), 403, CodeEmailNotVerified, want)
}

// Whoever signs up first with someone else's address cannot have it
// verified by its owner clicking the mail: only the signing-up session
// verifies. The owner takes the address over with a reset, which ends the
// squatter's sessions.
func TestSignupSquatterNotVerifiedByOwner(t *testing.T) {
	h := newHarness(t)
	squatter := h.signup(t, "bob@example.com")
	code := h.mailedToken(t, "bob@example.com", "Verify")
	// Bob clicks the mail in his own browser: not signed in, or signed in
	// as someone else.
	expectCode(t, h.do("POST", "/api/v1/auth/verify-email", `{"token":"`+code+`"}`, csrfHeader, "1"), 401, CodeNotAuthenticated)
	other := h.signup(t, "other@example.com")
	expectCode(t, other.do("POST", "/api/v1/auth/verify-email", `{"token":"`+code+`"}`), 400, CodeInvalidToken)
	u, err := h.st.UserByEmail(context.Background(), "bob@example.com")
	if err != nil || u.EmailVerified {
		t.Fatalf("the squatter's user %+v %v", u, err)
	}
	// Bob resets the password: the address is his, verified, and the
	// squatter's session is over.
	h.do("POST", "/api/v1/auth/password/forgot", `{"email":"bob@example.com"}`, csrfHeader, "1")
	reset := h.mailedToken(t, "bob@example.com", "Reset")
	if r := h.do("POST", "/api/v1/auth/password/reset", `{"token":"`+reset+`","password":"bob's own password"}`, csrfHeader, "1"); r.status != 200 {
		t.Fatalf("reset: %d %s", r.status, r.body)
	}
	expectCode(t, squatter.do("GET", "/api/v1/auth/me", ""), 401, CodeNotAuthenticated)
	expectCode(t, h.do("POST", "/api/v1/auth/login", `{"email":"bob@example.com","password":"`+testPassword+`"}`, csrfHeader, "1"), 401, CodeInvalidCredentials)
	if r := h.do("POST", "/api/v1/auth/login", `{"email":"bob@example.com","password":"bob's own password"}`, csrfHeader, "1"); r.status != 200 {
		t.Fatalf("Bob's login: %d %s", r.status, r.body)
	}
}

// Mailed links never take their host from the request: without a public
// URL the mail gives the code alone; with one, links go there.
func TestMailLinksIgnoreHost(t *testing.T) {
	h := newHarness(t)
	h.signup(t, "ann@example.com").verify(t)
	h.do("POST", "/api/v1/auth/password/forgot", `{"email":"ann@example.com"}`, csrfHeader, "1", "Host", "evil.example")
	if body := h.mailTo(t, "ann@example.com", "Reset").Body; strings.Contains(body, "evil") || strings.Contains(body, "http") {
		t.Fatalf("mail %q", body)
	}
	h = newHarness(t, func(c *testConfig) { c.PublicURL = "https://push.example.com" })
	h.signup(t, "bo@example.com")
	h.do("POST", "/api/v1/auth/password/forgot", `{"email":"bo@example.com"}`, csrfHeader, "1", "Host", "evil.example")
	body := h.mailTo(t, "bo@example.com", "Reset").Body
	if strings.Contains(body, "evil") || !strings.Contains(body, ":\n\nhttps://push.example.com/#/reset-password?token=") {
		t.Fatalf("mail %q", body)
	}
}

// An invite never shows whether the address is registered: a registered
// person is listed as invited too, and joins at their next sign-in.
func TestInviteRegisteredPerson(t *testing.T) {
	h := newHarness(t)
	ann, site := h.owner(t, "ann@example.com", "Shop")
	q := "?projectId=" + site.ProjectID
	bo := h.signup(t, "bo@example.com")
	bo.verify(t)
	for _, email := range []string{"bo@example.com", "nobody@example.com"} {
		if r := ann.do("POST", "/api/v1/members"+q, `{"email":"`+email+`","role":"viewer"}`); r.status != 201 {
			t.Fatalf("invite %s: %d %s", email, r.status, r.body)
		}
	}
	r := ann.do("GET", "/api/v1/members"+q, "")
	var list struct {
		Members []memberView
		Invites []inviteView
	}
	if err := json.Unmarshal(r.body, &list); err != nil || len(list.Members) != 1 || len(list.Invites) != 2 {
		t.Fatalf("members %s", r.body)
	}
	expectCode(t, bo.do("GET", "/api/v1/notifications"+q, ""), 404, CodeNotFound)
	if r := h.do("POST", "/api/v1/auth/login", `{"email":"bo@example.com","password":"`+testPassword+`"}`, csrfHeader, "1"); r.status != 200 ||
		!strings.Contains(string(r.body), `"role":"viewer"`) {
		t.Fatalf("Bo's sign-in: %d %s", r.status, r.body)
	}
}
