package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/relaybell/relaybell/accounts"
	"github.com/relaybell/relaybell/notification"
	"github.com/relaybell/relaybell/store"
)

// The dashboard's session (spec 4.8): a cookie holding a random token, of
// which the store keeps only the hash (package accounts).
const (
	sessionCookie = "rb_session"
	// csrfHeader must be sent, as "1", with every request that changes
	// state under a session cookie and with every /auth request: a page of
	// another origin cannot send a custom header without a CORS preflight,
	// which these routes never grant.
	csrfHeader = "X-RelayBell-CSRF"
	// projectHeader names the website of a session call (spec 4.8).
	projectHeader = "X-Project-Id"
)

// caller is the signed-in person behind a session call, and their role in
// the account of the website named (spec 4.8).
type caller struct {
	Session store.Session
	User    store.User
	Role    string // owner, admin or viewer; "" on routes that name no website
}

// roleRank orders the roles: each may do what the ones below it may.
var roleRank = map[string]int{store.RoleViewer: 1, store.RoleAdmin: 2, store.RoleOwner: 3}

// roleAllows reports whether role is at least need.
func roleAllows(role, need string) bool { return roleRank[role] >= roleRank[need] }

// requiredRole is the least role a session call of rt needs: the route's
// own, else viewer to read and admin to change anything.
func requiredRole(rt *route) string {
	switch {
	case rt.role != "":
		return rt.role
	case rt.method == http.MethodGet || rt.method == http.MethodHead:
		return store.RoleViewer
	default:
		return store.RoleAdmin
	}
}

// insufficientRole is the 403 of a session call whose role is too low.
func insufficientRole(role string) *Error {
	return &Error{Code: CodeInsufficientRole, Message: "this needs the " + role + " role in the website's account", Required: role}
}

// may reports whether the caller may do what scope allows: a key by its
// scopes, a person by their role (admin or owner for anything a scope
// guards; spec 4.8: scopes do not apply to sessions, roles do).
func (r *request) may(scope string) bool {
	if r.session != nil {
		return scope == "" || roleAllows(r.session.Role, store.RoleAdmin)
	}
	return hasScope(r.owner.Key.Scopes, scope)
}

// sessionToken is the session cookie's token, "" without one.
func sessionToken(r *request) string {
	return string(r.fc.Request.Header.Cookie(sessionCookie))
}

// authenticateSession resolves the session cookie of a call without an
// API key. With project set, the call names a website (query projectId,
// X-Project-Id, or the body's projectId, in that order), of whose account
// the person must be a verified member with a role the route allows; the
// account must not be suspended. A website the person may not see is
// not_found, as one that does not exist.
func (a *API) authenticateSession(r *request, project bool) error {
	token := sessionToken(r)
	if token == "" {
		return errCode(CodeNotAuthenticated)
	}
	if err := a.checkCSRF(r); err != nil {
		return err
	}
	se, u, err := a.accounts.Authenticate(r.ctx, token, r.now)
	if errors.Is(err, accounts.ErrNoSession) {
		a.clearSessionCookie(r)
		return errorf(CodeNotAuthenticated, "the session ended: sign in again")
	}
	if err != nil {
		return err
	}
	r.session = &caller{Session: se, User: u}
	if !project {
		return nil
	}
	if err := verified(r); err != nil {
		return err
	}
	projectID, err := a.projectOf(r)
	if err != nil {
		return err
	}
	w, err := a.st.WebsiteByProjectID(r.ctx, projectID)
	return a.enter(r, w, err, requiredRole(r.route), errorf(CodeNotFound, "no such project"))
}

// verified refuses a person whose address is not verified yet.
func verified(r *request) error {
	if !r.session.User.EmailVerified {
		return errorf(CodeEmailNotVerified, "verify your e-mail address first")
	}
	return nil
}

// enter makes the signed-in person's call one on website w (loaded with
// err): they must be a member of its account with at least role need, and
// the account not suspended. A website they may not see answers notFound,
// as one that does not exist. It sets r.owner and the person's role.
func (a *API) enter(r *request, w store.Website, err error, need string, notFound *Error) error {
	if errors.Is(err, store.ErrNotFound) {
		return notFound
	}
	if err != nil {
		return err
	}
	role, err := a.st.Role(r.ctx, r.session.User.ID, w.AccountID)
	if errors.Is(err, store.ErrNotFound) {
		return notFound
	}
	if err != nil {
		return err
	}
	acc, err := a.st.Account(r.ctx, w.AccountID)
	if err != nil {
		return err
	}
	if acc.Suspended {
		return errCode(CodeAccountSuspended)
	}
	if !roleAllows(role, need) {
		return insufficientRole(need)
	}
	r.session.Role = role
	r.owner = store.KeyOwner{Website: w, Account: acc}
	return nil
}

// projectOf reads the project a session call names, and takes a body's
// projectId out of the body, so the route's own decoding never sees it.
func (a *API) projectOf(r *request) (string, error) {
	id := string(r.fc.QueryArgs().Peek("projectId"))
	if id == "" {
		id = string(r.fc.Request.Header.Peek(projectHeader))
	}
	if body, fromBody, ok := takeMember(r.fc.Request.Body(), "projectId"); ok {
		r.fc.Request.SetBodyRaw(body)
		if id == "" {
			id = fromBody
		}
	}
	id = cleanText(strings.TrimSpace(id))
	if id == "" {
		return "", errorf(CodeProjectRequired, "name the website: ?projectId=, the X-Project-Id header or the body's projectId")
	}
	if isUUID(id) {
		id = strings.ToLower(id)
	}
	return id, nil
}

// takeMember removes the top-level string member name from a JSON object
// body and returns the body without it and the member's value. ok is false
// when the body is not an object holding name once as a string; the body
// is then left for the route to judge.
func takeMember(body []byte, name string) (rest []byte, value string, ok bool) {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' || !bytes.Contains(body, []byte(`"`+name+`"`)) {
		return nil, "", false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, "", false
	}
	start, end := -1, -1
	for dec.More() {
		before := dec.InputOffset()
		key, err := dec.Token()
		if err != nil {
			return nil, "", false
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, "", false
		}
		if key != name {
			continue
		}
		if start >= 0 || json.Unmarshal(raw, &value) != nil {
			return nil, "", false // twice, or not a string: the route's decoding refuses it
		}
		start, end = int(before), int(dec.InputOffset())
	}
	if t, err := dec.Token(); start < 0 || err != nil || t != json.Delim('}') {
		return nil, "", false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, "", false // trailing data: the route's decoding refuses it
	}
	// The span read holds the comma before the member, unless it is the
	// first: then the comma after it goes instead.
	head, tail := body[:start], body[end:]
	if span := bytes.TrimLeft(body[start:end], " \t\r\n"); span[0] != ',' {
		if t := bytes.TrimLeft(tail, " \t\r\n"); len(t) > 0 && t[0] == ',' {
			tail = t[1:]
		}
	}
	rest = append(append(bytes.Clone(head), ' '), tail...)
	return rest, value, true
}

// checkCSRF refuses a request that changes state under a session cookie,
// and any /auth request, unless it carries X-RelayBell-CSRF: 1, comes from
// no other origin (Origin, when sent, is this service's) and is not
// marked cross-site by the browser (Sec-Fetch-Site).
func (a *API) checkCSRF(r *request) error {
	if r.route.method == http.MethodGet || r.route.method == http.MethodHead {
		return nil
	}
	if string(r.fc.Request.Header.Peek(csrfHeader)) != "1" {
		return errorf(CodeCSRFFailed, "send the %s: 1 header with every change made under a session", csrfHeader)
	}
	if site := string(r.fc.Request.Header.Peek("Sec-Fetch-Site")); site == "cross-site" || site == "same-site" {
		return errorf(CodeCSRFFailed, "the request came from another site")
	}
	if origin := string(r.fc.Request.Header.Peek("Origin")); origin != "" && !strings.EqualFold(origin, a.selfOrigin(r)) {
		return errorf(CodeCSRFFailed, "the request came from another origin")
	}
	return nil
}

// isHTTPS reports whether the browser reached the service over https: a
// TLS connection, a trusted proxy's X-Forwarded-Proto, or a public URL
// that says so.
func (a *API) isHTTPS(r *request) bool {
	if r.fc.IsTLS() || strings.HasPrefix(a.cfg.PublicURL, "https://") {
		return true
	}
	return a.cfg.TrustProxy && strings.EqualFold(string(r.fc.Request.Header.Peek("X-Forwarded-Proto")), "https")
}

// selfOrigin is the origin browsers reach the service at: the public
// URL's, else the request's scheme and Host.
func (a *API) selfOrigin(r *request) string {
	if a.cfg.PublicURL != "" {
		if u, err := url.Parse(a.cfg.PublicURL); err == nil {
			return u.Scheme + "://" + u.Host
		}
	}
	scheme := "http"
	if a.isHTTPS(r) {
		scheme = "https"
	}
	return scheme + "://" + string(r.fc.Host())
}

// setSessionCookie hands the browser its session: HttpOnly (no script
// reads it), SameSite=Lax (not sent with other sites' requests that change
// state), Secure over https, for the session's whole life.
func (a *API) setSessionCookie(r *request, token string, expires time.Time) {
	c := fasthttp.AcquireCookie()
	defer fasthttp.ReleaseCookie(c)
	c.SetKey(sessionCookie)
	c.SetValue(token)
	c.SetPath("/")
	c.SetHTTPOnly(true)
	c.SetSameSite(fasthttp.CookieSameSiteLaxMode)
	c.SetSecure(a.isHTTPS(r))
	c.SetMaxAge(max(int(math.Ceil(expires.Sub(r.now).Seconds())), 1))
	r.fc.Response.Header.SetCookie(c)
}

// clearSessionCookie tells the browser to drop its session cookie.
func (a *API) clearSessionCookie(r *request) {
	c := fasthttp.AcquireCookie()
	defer fasthttp.ReleaseCookie(c)
	c.SetKey(sessionCookie)
	c.SetPath("/")
	c.SetHTTPOnly(true)
	c.SetSameSite(fasthttp.CookieSameSiteLaxMode)
	c.SetSecure(a.isHTTPS(r))
	c.SetExpire(fasthttp.CookieExpireDelete)
	r.fc.Response.Header.SetCookie(c)
}

// client describes who asks, for package accounts.
func (a *API) client(r *request) accounts.Client {
	return accounts.Client{IP: a.visitorIP(r).String(), UserAgent: string(r.fc.UserAgent()),
		BaseURL: a.cfg.PublicURL, Now: r.now}
}

// authFail maps package accounts' errors to the catalog.
func authFail(r *request, err error) error {
	var in *accounts.InputError
	var th *accounts.ThrottledError
	switch {
	case errors.As(err, &in):
		code := map[error]string{accounts.ErrInvalidEmail: CodeInvalidEmail, accounts.ErrInvalidPassword: CodeInvalidPassword,
			accounts.ErrInvalidName: CodeInvalidName}[in.Err]
		return errorf(code, "%s", in.Message)
	case errors.As(err, &th):
		retry := max(int(math.Ceil(th.RetryAt.Sub(r.now).Seconds())), 1)
		r.fc.Response.Header.Set("Retry-After", strconv.Itoa(retry))
		return errorf(CodeRateLimited, "too many attempts: try again in %d seconds", retry)
	case errors.Is(err, accounts.ErrInvalidCredentials):
		return errorf(CodeInvalidCredentials, "wrong e-mail address or password, or the address is not verified yet: "+
			"open the link in the verification mail, in any browser, or use Forgot your password?")
	case errors.Is(err, accounts.ErrNotVerified):
		return errorf(CodeEmailNotVerified, "verify your e-mail address first")
	case errors.Is(err, accounts.ErrWrongPassword):
		return errorf(CodeWrongPassword, "the current password is wrong")
	case errors.Is(err, accounts.ErrInvalidToken):
		return errorf(CodeInvalidToken, "this link is unknown, already used or expired: sign in, or ask for a new one with Forgot your password?")
	}
	return err
}

// sessionRoutes are the routes of people who sign in (RelayBell's own,
// not in the spec; in the OpenAPI document).
func (a *API) sessionRoutes(rt *router) {
	open := func(method, path string, h func(*request) error) {
		rt.add(&route{method: method, pattern: path, auth: authPerson, handle: h})
	}
	signedIn := func(method, path string, h func(*request) error) {
		rt.add(&route{method: method, pattern: path, auth: authSession, handle: h})
	}
	open(http.MethodPost, "/api/v1/auth/signup", a.handleSignup)
	open(http.MethodPost, "/api/v1/auth/login", a.handleLogin)
	open(http.MethodPost, "/api/v1/auth/logout", a.handleLogout)
	open(http.MethodPost, "/api/v1/auth/password/forgot", a.handleForgotPassword)
	open(http.MethodPost, "/api/v1/auth/password/reset", a.handleResetPassword)
	signedIn(http.MethodGet, "/api/v1/auth/me", a.handleMe)
	signedIn(http.MethodPost, "/api/v1/auth/verify-email", a.handleVerifyEmail)
	open(http.MethodPost, "/api/v1/auth/verify-email/password", a.handleVerifyEmailWithPassword)
	signedIn(http.MethodPost, "/api/v1/auth/verify-email/resend", a.handleResendVerification)
	signedIn(http.MethodPost, "/api/v1/auth/password", a.handleChangePassword)
	signedIn(http.MethodGet, "/api/v1/auth/sessions", a.handleListSessions)
	signedIn(http.MethodDelete, "/api/v1/auth/sessions/{id}", a.handleRevokeSession)
}

// signupRequest is the body of POST /auth/signup.
type signupRequest struct {
	Email    string `json:"email"`
	Password string `json:"password"`
	Name     string `json:"name"`
}

// handleSignup serves POST /api/v1/auth/signup: 201 with the person (as
// GET /auth/me) and the session cookie.
func (a *API) handleSignup(r *request) error {
	var in signupRequest
	if err := decodeJSON(r.fc.Request.Body(), &in, strict); err != nil {
		return err
	}
	started, err := a.accounts.Signup(r.ctx, in.Email, in.Password, in.Name, a.client(r))
	if err != nil {
		return authFail(r, err)
	}
	return a.started(r, http.StatusCreated, started)
}

// loginRequest is the body of POST /auth/login.
type loginRequest struct {
	Email    string `json:"email"`
	Password string `json:"password"`
}

// handleLogin serves POST /api/v1/auth/login: 200 with the person and the
// session cookie, or 401 invalid_credentials whatever was wrong (an
// unverified address included).
func (a *API) handleLogin(r *request) error {
	var in loginRequest
	if err := decodeJSON(r.fc.Request.Body(), &in, strict); err != nil {
		return err
	}
	started, err := a.accounts.Login(r.ctx, in.Email, in.Password, a.client(r))
	if err != nil {
		return authFail(r, err)
	}
	return a.started(r, http.StatusOK, started)
}

// started sets the cookie of a new session and answers the person.
func (a *API) started(r *request, status int, s accounts.Started) error {
	a.setSessionCookie(r, s.Token, s.Session.ExpiresAt)
	r.session = &caller{Session: s.Session, User: s.User}
	me, err := a.me(r)
	if err != nil {
		return err
	}
	return r.json(status, me)
}

// handleLogout serves POST /api/v1/auth/logout: the session ends and the
// cookie goes; without one, the same answer.
func (a *API) handleLogout(r *request) error {
	if token := sessionToken(r); token != "" {
		se, _, err := a.accounts.Authenticate(r.ctx, token, r.now)
		switch {
		case err == nil:
			if err := a.accounts.Logout(r.ctx, se); err != nil {
				return err
			}
		case !errors.Is(err, accounts.ErrNoSession):
			return err
		}
	}
	a.clearSessionCookie(r)
	return r.json(http.StatusOK, okBody)
}

// meView is the answer of GET /auth/me, sign-up and login.
type meView struct {
	User     userView        `json:"user"`
	Accounts []accountView   `json:"accounts"`
	Websites []myWebsiteView `json:"websites"`
}

type userView struct {
	ID            string `json:"id"`
	Email         string `json:"email"`
	Name          string `json:"name"`
	EmailVerified bool   `json:"emailVerified"`
}

type accountView struct {
	ID            string `json:"id"`
	Role          string `json:"role"`
	OwnerEmail    string `json:"ownerEmail"`
	EmailVerified bool   `json:"emailVerified"`
	Suspended     bool   `json:"suspended"`
}

// myWebsiteView is a website as its members see it.
type myWebsiteView struct {
	ID             string `json:"id"`
	AccountID      string `json:"accountId"`
	ProjectID      string `json:"projectId"`
	Name           string `json:"name"`
	URL            string `json:"url"`
	Timezone       string `json:"timezone"`
	VAPIDPublicKey string `json:"vapidPublicKey"`
	Role           string `json:"role"`
	CreatedAt      string `json:"created_at"`
}

func newMyWebsiteView(w store.Website, role string) myWebsiteView {
	return myWebsiteView{ID: w.ID, AccountID: w.AccountID, ProjectID: w.ProjectID, Name: w.Name, URL: w.URL,
		Timezone: w.Timezone, VAPIDPublicKey: w.VAPIDPublicKey, Role: role,
		CreatedAt: w.CreatedAt.UTC().Format(notification.TimeLayout)}
}

// me is the signed-in person with their accounts and websites. Until the
// address is verified the lists are empty, as they are for a sign-up of a
// taken address, which looks the same.
func (a *API) me(r *request) (meView, error) {
	se, u := r.session.Session, r.session.User
	out := meView{Accounts: []accountView{}, Websites: []myWebsiteView{}}
	if u.ID == "" {
		out.User = userView{ID: pendingUserID(se), Email: se.Email, Name: se.Name}
		return out, nil
	}
	out.User = userView{ID: u.ID, Email: u.Email, Name: u.Name, EmailVerified: u.EmailVerified}
	if !u.EmailVerified {
		return out, nil
	}
	ms, err := a.st.Memberships(r.ctx, u.ID)
	if err != nil {
		return meView{}, err
	}
	roles := map[string]string{}
	for _, m := range ms {
		acc, err := a.st.Account(r.ctx, m.AccountID)
		if err != nil {
			return meView{}, err
		}
		roles[m.AccountID] = m.Role
		out.Accounts = append(out.Accounts, accountView{ID: acc.ID, Role: m.Role, OwnerEmail: acc.OwnerEmail,
			EmailVerified: acc.EmailVerified, Suspended: acc.Suspended})
	}
	ws, err := a.st.WebsitesOf(r.ctx, u.ID)
	if err != nil {
		return meView{}, err
	}
	for _, w := range ws {
		out.Websites = append(out.Websites, newMyWebsiteView(w, roles[w.AccountID]))
	}
	return out, nil
}

// pendingUserID is the user id shown for a session without a user: as
// random to its holder as a new person's, stable, and not the session's
// own id (which the sessions list shows).
func pendingUserID(se store.Session) string {
	return uuid.NewSHA1(uuid.NameSpaceOID, []byte("relaybell:pending-user:"+se.Hash)).String()
}

// handleMe serves GET /api/v1/auth/me.
func (a *API) handleMe(r *request) error {
	me, err := a.me(r)
	if err != nil {
		return err
	}
	return r.json(http.StatusOK, me)
}

// tokenRequest is the body of POST /auth/verify-email.
type tokenRequest struct {
	Token string `json:"token"`
}

// handleVerifyEmail serves POST /api/v1/auth/verify-email: the mailed
// code, from the session of the person who signed up (accounts.VerifyEmail
// says why).
func (a *API) handleVerifyEmail(r *request) error {
	var in tokenRequest
	if err := decodeJSON(r.fc.Request.Body(), &in, strict); err != nil {
		return err
	}
	u, err := a.accounts.VerifyEmail(r.ctx, strings.TrimSpace(in.Token), r.session.User, r.now)
	if err != nil {
		return authFail(r, err)
	}
	a.keys.purge() // the person's accounts are verified: keys resolve anew
	a.log.Info("e-mail verified", "request_id", r.id, "user_id", u.ID)
	return r.json(http.StatusOK, okBody)
}

// handleVerifyEmailWithPassword serves POST
// /api/v1/auth/verify-email/password: the mailed link opened outside the
// session that signed up. The person chooses their password, which
// verifies the address and ends every other session of theirs; 200 with
// the person and the cookie of a new session, as login.
func (a *API) handleVerifyEmailWithPassword(r *request) error {
	var in resetRequest
	if err := decodeJSON(r.fc.Request.Body(), &in, strict); err != nil {
		return err
	}
	started, err := a.accounts.VerifyEmailWithPassword(r.ctx, strings.TrimSpace(in.Token), in.Password, a.client(r))
	if err != nil {
		return authFail(r, err)
	}
	a.keys.purge() // the person's accounts are verified: keys resolve anew
	a.log.Info("e-mail verified with a new password", "request_id", r.id, "user_id", started.User.ID)
	return a.started(r, http.StatusOK, started)
}

// handleResendVerification serves POST /api/v1/auth/verify-email/resend.
func (a *API) handleResendVerification(r *request) error {
	c := r.session
	email := c.User.Email
	if c.User.ID == "" {
		email = c.Session.Email
	}
	if err := a.accounts.ResendVerification(r.ctx, c.User, email, a.client(r)); err != nil {
		return authFail(r, err)
	}
	return r.json(http.StatusOK, okBody)
}

// forgotRequest is the body of POST /auth/password/forgot.
type forgotRequest struct {
	Email string `json:"email"`
}

// handleForgotPassword serves POST /api/v1/auth/password/forgot: the same
// answer whether or not the address is registered.
func (a *API) handleForgotPassword(r *request) error {
	var in forgotRequest
	if err := decodeJSON(r.fc.Request.Body(), &in, strict); err != nil {
		return err
	}
	if err := a.accounts.RequestPasswordReset(r.ctx, in.Email, a.client(r)); err != nil {
		return authFail(r, err)
	}
	return r.json(http.StatusOK, okBody)
}

// resetRequest is the body of POST /auth/password/reset and of POST
// /auth/verify-email/password.
type resetRequest struct {
	Token    string `json:"token"`
	Password string `json:"password"`
}

// handleResetPassword serves POST /api/v1/auth/password/reset: every
// session of the person ends; they sign in with the new password.
func (a *API) handleResetPassword(r *request) error {
	var in resetRequest
	if err := decodeJSON(r.fc.Request.Body(), &in, strict); err != nil {
		return err
	}
	if err := a.accounts.ResetPassword(r.ctx, strings.TrimSpace(in.Token), in.Password, r.now); err != nil {
		return authFail(r, err)
	}
	a.keys.purge()
	return r.json(http.StatusOK, okBody)
}

// changePasswordRequest is the body of POST /auth/password.
type changePasswordRequest struct {
	CurrentPassword string `json:"currentPassword"`
	Password        string `json:"password"`
}

// handleChangePassword serves POST /api/v1/auth/password: the person's
// other sessions end.
func (a *API) handleChangePassword(r *request) error {
	var in changePasswordRequest
	if err := decodeJSON(r.fc.Request.Body(), &in, strict); err != nil {
		return err
	}
	if err := a.accounts.ChangePassword(r.ctx, r.session.Session, r.session.User, in.CurrentPassword, in.Password, a.client(r)); err != nil {
		return authFail(r, err)
	}
	return r.json(http.StatusOK, okBody)
}

// sessionView is a session as its person sees it.
type sessionView struct {
	ID         string `json:"id"`
	UserAgent  string `json:"user_agent"`
	IP         string `json:"ip"`
	CreatedAt  string `json:"created_at"`
	LastSeenAt string `json:"last_seen_at"`
	ExpiresAt  string `json:"expires_at"`
	Current    bool   `json:"current"`
}

// handleListSessions serves GET /api/v1/auth/sessions: the person's
// sessions, newest first, with the one calling marked current.
func (a *API) handleListSessions(r *request) error {
	c := r.session
	var ss []store.Session
	if c.User.ID == "" {
		ss = []store.Session{c.Session}
	} else {
		var err error
		if ss, err = a.st.Sessions(r.ctx, c.User.ID); err != nil {
			return err
		}
	}
	out := make([]sessionView, 0, len(ss))
	for _, s := range ss {
		if a.accounts.Ended(s, r.now) {
			continue // deleted when next presented
		}
		out = append(out, sessionView{ID: s.ID, UserAgent: s.UserAgent, IP: s.IP,
			CreatedAt:  s.CreatedAt.UTC().Format(notification.TimeLayout),
			LastSeenAt: s.LastSeenAt.UTC().Format(notification.TimeLayout),
			ExpiresAt:  s.ExpiresAt.UTC().Format(notification.TimeLayout),
			Current:    s.ID == c.Session.ID})
	}
	return r.json(http.StatusOK, map[string][]sessionView{"sessions": out})
}

// handleRevokeSession serves DELETE /api/v1/auth/sessions/{id}: one of
// the person's sessions ends (the current one too: that is signing out).
func (a *API) handleRevokeSession(r *request) error {
	c := r.session
	id := r.param("id")
	if c.User.ID == "" && id != c.Session.ID {
		return errCode(CodeNotFound) // a session without a user is its person's only one
	}
	err := a.st.DeleteSession(r.ctx, c.Session.UserID, id)
	if errors.Is(err, store.ErrNotFound) {
		return errCode(CodeNotFound)
	}
	if err != nil {
		return fmt.Errorf("revoking session: %w", err)
	}
	if id == c.Session.ID {
		a.clearSessionCookie(r)
	}
	return r.json(http.StatusOK, okBody)
}
