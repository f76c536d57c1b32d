// Package accounts is the people who sign in to RelayBell's dashboard:
// sign-up, login and sessions, e-mail verification, password reset and
// change, and their throttles. The API's /auth routes are a thin HTTP layer
// over it.
//
// Rules it keeps:
//   - Passwords are stored as argon2id hashes; session and mailed tokens
//     as SHA-256 hashes. The secrets exist only in the cookie and the mail.
//   - A session ends after IdleTimeout without use and at MaxAge after it
//     began, whichever comes first; a password change, a reset or a
//     verification made outside the signing-up session ends the user's
//     other sessions.
//   - A mailed verification link verifies at once only in the session of
//     the person who signed up; anywhere else its holder chooses the
//     password, so that whoever signed up first with someone else's
//     address is locked out rather than handed a verified account.
//   - Sign-up, login and reset never tell whether an address is
//     registered: a sign-up for a taken address gets a session that looks
//     like a new, unverified person's (and can do nothing), the address
//     gets a mail about it (a new verification link while it is still
//     unverified); a login fails the same way for an unknown address and a
//     wrong password, after as long; a reset request answers the same
//     either way.
//   - Login attempts are throttled per address and per IP address, counted
//     before any work; sign-ups and mails per IP address and per address.
//     At most a few password hashes (19 MiB each) run at once.
package accounts

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/mail"
	"runtime"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/store"
)

// Store is what accounts reads and writes.
type Store interface {
	store.Users
	AddEmail(ctx context.Context, m store.Email) error
	TakeRateLimits(ctx context.Context, limits []store.RateLimit, n int64, now time.Time) ([]int64, bool, error)
}

// Defaults of Config.
const (
	DefaultIdleTimeout = 7 * 24 * time.Hour
	DefaultMaxAge      = 30 * 24 * time.Hour
	// touchEvery is how often a session's last use is written at most.
	touchEvery = time.Minute
	// Lifetimes of the mailed tokens.
	verifyTokenTTL = 7 * 24 * time.Hour
	resetTokenTTL  = time.Hour
)

// Limits of the throttles: login attempts (and current-password checks)
// per address and per IP address in 15 minutes; sign-ups per IP address, and mails asked for per address
// and per IP address, in an hour.
const (
	loginsPerEmail = 10
	loginsPerIP    = 50
	signupsPerIP   = 20
	mailsPerEmail  = 5
	mailsPerIP     = 30
	maxNameChars   = 100
	maxEmailBytes  = 254
)

// Config configures the service.
type Config struct {
	// IdleTimeout ends a session not used for that long. Default 7 days.
	IdleTimeout time.Duration
	// MaxAge ends every session that long after it began. Default 30 days.
	MaxAge time.Duration
}

// Errors the service answers; the API maps each to its status and code.
var (
	ErrInvalidEmail       = errors.New("invalid e-mail address")
	ErrInvalidPassword    = errors.New("invalid password")
	ErrInvalidName        = errors.New("invalid name")
	ErrInvalidCredentials = errors.New("wrong e-mail address or password, or the address is not verified yet")
	ErrNotVerified        = errors.New("the address is not verified yet")
	ErrWrongPassword      = errors.New("the current password is wrong")
	ErrInvalidToken       = errors.New("the link is invalid, used or expired")
	ErrNoSession          = errors.New("not signed in")
)

// ThrottledError is a request refused by a throttle until RetryAt.
type ThrottledError struct {
	RetryAt time.Time
}

func (e *ThrottledError) Error() string { return "too many attempts" }

// InputError is a refused input, with the sentinel it wraps and a message
// for the person.
type InputError struct {
	Err     error
	Message string
}

func (e *InputError) Error() string { return e.Message }
func (e *InputError) Unwrap() error { return e.Err }

// Service runs sign-up, login and sessions over a store.
type Service struct {
	st  Store
	cfg Config
	log *slog.Logger
	// slots bounds the password hashes running at once: each takes 19 MiB
	// and a core for 25 ms, and a burst of logins must not exhaust memory.
	slots chan struct{}
}

// New returns the service.
func New(st Store, cfg Config, logger *slog.Logger) *Service {
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.MaxAge <= 0 {
		cfg.MaxAge = DefaultMaxAge
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Service{st: st, cfg: cfg, log: logger, slots: make(chan struct{}, max(2, runtime.GOMAXPROCS(0)))}
}

// Client is who asks: their IP address and browser, kept with a session;
// and the service's public URL, for the links of the mail ("" for none:
// the mail then gives the code alone).
type Client struct {
	IP        string
	UserAgent string
	BaseURL   string // e.g. https://push.example.com
	Now       time.Time
}

// Started is a new session: the token for the cookie (shown only here),
// the session and its user (the zero User for a sign-up of a taken
// address).
type Started struct {
	Token   string
	Session store.Session
	User    store.User
}

// NormalizeEmail trims and lower-cases an address and checks it is one
// plain address (no display name), at most 254 bytes.
func NormalizeEmail(email string) (string, error) {
	e := strings.ToLower(strings.TrimSpace(email))
	if e == "" || len(e) > maxEmailBytes || !utf8.ValidString(e) {
		return "", &InputError{ErrInvalidEmail, "give a valid e-mail address"}
	}
	a, err := mail.ParseAddress(e)
	if err != nil || a.Address != e || a.Name != "" || !strings.Contains(e[strings.LastIndexByte(e, '@')+1:], ".") {
		return "", &InputError{ErrInvalidEmail, "give a valid e-mail address"}
	}
	return e, nil
}

// cleanName trims a display name and checks its length.
func cleanName(name string) (string, error) {
	n := strings.TrimSpace(name)
	if utf8.RuneCountInString(n) > maxNameChars || strings.ContainsAny(n, "\x00\r\n") {
		return "", &InputError{ErrInvalidName, fmt.Sprintf("the name must be one line of at most %d characters", maxNameChars)}
	}
	return n, nil
}

// Signup creates a person and their account, unverified, mails them the
// verification link and starts a session. For an address already taken
// it creates nothing but a session that looks the same and can do
// nothing, and mails the address's owner instead.
func (s *Service) Signup(ctx context.Context, email, password, name string, c Client) (Started, error) {
	email, err := NormalizeEmail(email)
	if err != nil {
		return Started{}, err
	}
	if err := CheckPasswordRules(password); err != nil {
		return Started{}, &InputError{ErrInvalidPassword, err.Error()}
	}
	if name, err = cleanName(name); err != nil {
		return Started{}, err
	}
	if err := s.take(ctx, c.Now, 1, limit("signup:ip:"+c.IP, time.Hour, signupsPerIP)); err != nil {
		return Started{}, err
	}
	hash, err := s.hash(ctx, password)
	if err != nil {
		return Started{}, err
	}
	u := store.User{ID: uuid.NewString(), Email: email, Name: name, PasswordHash: hash, CreatedAt: c.Now}
	a := store.Account{ID: uuid.NewString(), OwnerEmail: email, CreatedAt: c.Now}
	err = s.st.CreateUser(ctx, store.Signup{User: u, Account: a})
	switch {
	case errors.Is(err, store.ErrConflict):
		if err := s.signedUpAgain(ctx, email, c); err != nil {
			return Started{}, err
		}
		return s.start(ctx, store.User{}, email, name, c)
	case err != nil:
		return Started{}, err
	}
	if err := s.sendVerification(ctx, u, c); err != nil {
		return Started{}, err
	}
	return s.start(ctx, u, email, name, c)
}

// signedUpAgain answers a sign-up of a taken address, by mail to the
// address: a verified one's owner is told to sign in; a pending one gets a
// new verification link, since the person signing up again is most likely
// the one who signed up first and lost the way back (the link works in
// any browser).
func (s *Service) signedUpAgain(ctx context.Context, email string, c Client) error {
	u, err := s.st.UserByEmail(ctx, email)
	if err != nil {
		return err
	}
	if !u.EmailVerified {
		return s.sendVerification(ctx, u, c)
	}
	return s.mail(ctx, email, "Someone tried to sign up with your address",
		"Someone, maybe you, tried to sign up for RelayBell with this address, which already has an account.\n\n"+
			"Sign in"+at(c.BaseURL, "")+", or reset your password if you forgot it.\n"+
			"If it was not you, there is nothing to do.\n", c.Now)
}

// sendVerification mails u a link that verifies their address: in the
// session that signed up as u at once (VerifyEmail), in any other browser
// once the person chooses a password (VerifyEmailWithPassword).
func (s *Service) sendVerification(ctx context.Context, u store.User, c Client) error {
	token, err := s.token(ctx, u, store.TokenVerifyEmail, verifyTokenTTL, c.Now)
	if err != nil {
		return err
	}
	return s.mail(ctx, u.Email, "Verify your e-mail address",
		"Welcome to RelayBell.\n\nVerify your address"+linkLine(c.BaseURL, "verify-email?token="+token)+
			"The link works in any browser. In the one you signed up with, it verifies the address at once. "+
			"In another, it asks you to choose your password: that verifies the address, signs you in, "+
			"and signs out every other session of the account.\n\n"+
			"Or give this code there: "+token+"\n\nIt works for 7 days. If you did not sign up, there is nothing to do.\n", c.Now)
}

// ResendVerification mails a signed-in, unverified person a new link. A
// session without a user (a sign-up of a taken address) gets the same
// answer; the address's person gets a new link if still unverified (as
// at that sign-up), else nothing.
func (s *Service) ResendVerification(ctx context.Context, u store.User, email string, c Client) error {
	if err := s.take(ctx, c.Now, 1, limit("mail:email:"+email, time.Hour, mailsPerEmail),
		limit("mail:ip:"+c.IP, time.Hour, mailsPerIP)); err != nil {
		return err
	}
	if u.ID == "" {
		var err error
		u, err = s.st.UserByEmail(ctx, email)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
	}
	if u.EmailVerified {
		return nil
	}
	return s.sendVerification(ctx, u, c)
}

// VerifyEmail spends a verification token of the signed-in person u: the
// address it was sent to is verified, and with it the accounts the person
// owns and their invites. Only the session of the person who signed up
// verifies this way: whoever signs up first with someone else's address
// holds that person's password and session, and must not have them
// verified by the address's owner clicking the mail. Anywhere else the
// link's holder chooses a password (VerifyEmailWithPassword), which locks
// such a squatter out. Another person's token, or a sign-up of a taken
// address (no user), gets ErrInvalidToken and leaves the token unspent,
// for that.
func (s *Service) VerifyEmail(ctx context.Context, token string, u store.User, now time.Time) (store.User, error) {
	t, err := s.st.Token(ctx, HashToken(token), store.TokenVerifyEmail, now)
	if errors.Is(err, store.ErrNotFound) || (err == nil && (u.ID == "" || t.UserID != u.ID)) {
		return store.User{}, ErrInvalidToken
	}
	if err != nil {
		return store.User{}, err
	}
	if u, err = s.spendToken(ctx, token, store.TokenVerifyEmail, now); err != nil {
		return store.User{}, err
	}
	if err := s.st.VerifyEmail(ctx, u.ID, now); err != nil {
		return store.User{}, err
	}
	u.EmailVerified = true
	return u, nil
}

// VerifyEmailWithPassword spends a verification token opened outside the
// session that signed up: the holder of the mail chooses the password, so
// the address is verified for them alone. Every session of the person
// ends (a squatter's with them; their password no longer works), and a new
// one starts. A token of an address verified since verifies nothing more:
// ErrInvalidToken, as a used one.
func (s *Service) VerifyEmailWithPassword(ctx context.Context, token, password string, c Client) (Started, error) {
	if err := CheckPasswordRules(password); err != nil {
		return Started{}, &InputError{ErrInvalidPassword, err.Error()}
	}
	u, err := s.spendToken(ctx, token, store.TokenVerifyEmail, c.Now)
	if err != nil {
		return Started{}, err
	}
	if u.EmailVerified {
		return Started{}, ErrInvalidToken
	}
	if u, err = s.replacePassword(ctx, u, password, c.Now); err != nil {
		return Started{}, err
	}
	return s.start(ctx, u, u.Email, u.Name, c)
}

// Login checks an address and password and starts a session. Only a
// verified address signs in: a sign-up of a taken address could otherwise
// be told from a new one by signing in with the password it gave (a new
// person keeps the session sign-up gave them). Every attempt counts, before
// any work, per address and per IP address; past either limit every attempt
// is refused until the window ends, right password or not. Exactly one
// password check runs, against the person's hash or a dummy, so an unknown
// address takes as long as a known one. Invites to the address become
// memberships.
func (s *Service) Login(ctx context.Context, email, password string, c Client) (Started, error) {
	email, err := NormalizeEmail(email)
	if err != nil {
		return Started{}, ErrInvalidCredentials
	}
	if err := s.take(ctx, c.Now, 1, limit("login:email:"+email, 15*time.Minute, loginsPerEmail),
		limit("login:ip:"+c.IP, 15*time.Minute, loginsPerIP)); err != nil {
		return Started{}, err
	}
	u, err := s.st.UserByEmail(ctx, email)
	hash := dummyHash
	switch {
	case err == nil:
		hash = u.PasswordHash
	case !errors.Is(err, store.ErrNotFound):
		return Started{}, err
	}
	ok, err := s.check(ctx, hash, password)
	if err != nil {
		return Started{}, err
	}
	if !ok || u.ID == "" || !u.EmailVerified || len(password) > MaxPasswordBytes {
		return Started{}, ErrInvalidCredentials
	}
	if err := s.st.AcceptInvites(ctx, u.ID, c.Now); err != nil {
		return Started{}, err
	}
	return s.start(ctx, u, u.Email, u.Name, c)
}

// start makes a session for u (or, with the zero u, one without a user).
func (s *Service) start(ctx context.Context, u store.User, email, name string, c Client) (Started, error) {
	token, hash, err := NewToken()
	if err != nil {
		return Started{}, err
	}
	se := store.Session{ID: uuid.NewString(), UserID: u.ID, Hash: hash, Email: email, Name: name,
		UserAgent: cut(c.UserAgent, 256), IP: c.IP, CreatedAt: c.Now, LastSeenAt: c.Now, ExpiresAt: c.Now.Add(s.cfg.MaxAge)}
	if err := s.st.CreateSession(ctx, se); err != nil {
		return Started{}, err
	}
	return Started{Token: token, Session: se, User: u}, nil
}

// Authenticate resolves a session token: ErrNoSession for an unknown,
// ended, idle or expired one (an ended one is deleted). Its last use is
// written at most once a minute.
func (s *Service) Authenticate(ctx context.Context, token string, now time.Time) (store.Session, store.User, error) {
	if token == "" || len(token) > 128 {
		return store.Session{}, store.User{}, ErrNoSession
	}
	se, u, err := s.st.SessionByHash(ctx, HashToken(token))
	if errors.Is(err, store.ErrNotFound) {
		return store.Session{}, store.User{}, ErrNoSession
	}
	if err != nil {
		return store.Session{}, store.User{}, err
	}
	if s.Ended(se, now) {
		if err := s.st.DeleteSession(ctx, se.UserID, se.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
			s.log.Warn("deleting an ended session", "err", err)
		}
		return store.Session{}, store.User{}, ErrNoSession
	}
	if now.Sub(se.LastSeenAt) >= touchEvery {
		if err := s.st.TouchSession(ctx, se.ID, now); err != nil && !errors.Is(err, store.ErrNotFound) {
			return store.Session{}, store.User{}, err
		}
		se.LastSeenAt = now
	}
	return se, u, nil
}

// Ended reports whether a session is over at now: past its maximum age,
// or idle for too long.
func (s *Service) Ended(se store.Session, now time.Time) bool {
	return !now.Before(se.ExpiresAt) || !now.Before(se.LastSeenAt.Add(s.cfg.IdleTimeout))
}

// Logout ends a session.
func (s *Service) Logout(ctx context.Context, se store.Session) error {
	err := s.st.DeleteSession(ctx, se.UserID, se.ID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	return err
}

// RequestPasswordReset mails a reset link when a person has the address,
// and answers the same whether or not one does.
func (s *Service) RequestPasswordReset(ctx context.Context, email string, c Client) error {
	email, err := NormalizeEmail(email)
	if err != nil {
		return err
	}
	if err := s.take(ctx, c.Now, 1, limit("mail:email:"+email, time.Hour, mailsPerEmail),
		limit("mail:ip:"+c.IP, time.Hour, mailsPerIP)); err != nil {
		return err
	}
	u, err := s.st.UserByEmail(ctx, email)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	token, err := s.token(ctx, u, store.TokenResetPassword, resetTokenTTL, c.Now)
	if err != nil {
		return err
	}
	return s.mail(ctx, u.Email, "Reset your RelayBell password",
		"Someone, maybe you, asked to reset the password of this address.\n\n"+
			"Choose a new password"+linkLine(c.BaseURL, "reset-password?token="+token)+
			"Or give this code there: "+token+"\n\nIt works for an hour. If it was not you, there is nothing to do.\n", c.Now)
}

// ResetPassword spends a reset token: the password is replaced and every
// session of the person ends. The mail reached them, so their address is
// verified too.
func (s *Service) ResetPassword(ctx context.Context, token, password string, now time.Time) error {
	if err := CheckPasswordRules(password); err != nil {
		return &InputError{ErrInvalidPassword, err.Error()}
	}
	u, err := s.spendToken(ctx, token, store.TokenResetPassword, now)
	if err != nil {
		return err
	}
	_, err = s.replacePassword(ctx, u, password, now)
	return err
}

// spendToken spends a mailed token of kind and returns the person it was
// sent to, who must still have the address it was sent to:
// ErrInvalidToken otherwise, and for an unknown, used or expired token.
func (s *Service) spendToken(ctx context.Context, token, kind string, now time.Time) (store.User, error) {
	t, err := s.st.UseToken(ctx, HashToken(token), kind, now)
	if errors.Is(err, store.ErrNotFound) {
		return store.User{}, ErrInvalidToken
	}
	if err != nil {
		return store.User{}, err
	}
	u, err := s.st.User(ctx, t.UserID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && u.Email != t.Email) {
		return store.User{}, ErrInvalidToken
	}
	return u, err
}

// replacePassword sets u's password from a mailed token, which proves the
// address: every session of theirs ends, and the address is verified.
func (s *Service) replacePassword(ctx context.Context, u store.User, password string, now time.Time) (store.User, error) {
	hash, err := s.hash(ctx, password)
	if err != nil {
		return store.User{}, err
	}
	if err := s.st.SetPassword(ctx, u.ID, hash, ""); err != nil {
		return store.User{}, err
	}
	if !u.EmailVerified {
		if err := s.st.VerifyEmail(ctx, u.ID, now); err != nil {
			return store.User{}, err
		}
	}
	u.PasswordHash, u.EmailVerified = hash, true
	return u, nil
}

// ChangePassword replaces a signed-in, verified person's password, given
// the current one, and ends their other sessions.
func (s *Service) ChangePassword(ctx context.Context, se store.Session, u store.User, current, password string, c Client) error {
	if !u.EmailVerified {
		return ErrNotVerified // as for a sign-up of a taken address, which has no user
	}
	// Guessing the current password counts as logging in.
	if err := s.take(ctx, c.Now, 1, limit("login:email:"+u.Email, 15*time.Minute, loginsPerEmail),
		limit("login:ip:"+c.IP, 15*time.Minute, loginsPerIP)); err != nil {
		return err
	}
	ok, err := s.check(ctx, u.PasswordHash, current)
	if err != nil {
		return err
	}
	if !ok || len(current) > MaxPasswordBytes {
		return ErrWrongPassword
	}
	if err := CheckPasswordRules(password); err != nil {
		return &InputError{ErrInvalidPassword, err.Error()}
	}
	hash, err := s.hash(ctx, password)
	if err != nil {
		return err
	}
	return s.st.SetPassword(ctx, u.ID, hash, se.ID)
}

// invitesPerAccount bounds an account's invites (and their mail) an hour.
const invitesPerAccount = 50

// Invite invites an address to an account with a role, and mails it. The
// invite becomes a membership when the person verifies the address, or
// signs in with it verified: whether the address is registered shows
// nowhere, and nobody joins an account without signing in.
func (s *Service) Invite(ctx context.Context, inv store.Invite, inviter, website string, c Client) error {
	if err := s.take(ctx, c.Now, 1, limit("invite:account:"+inv.AccountID, time.Hour, invitesPerAccount)); err != nil {
		return err
	}
	if err := s.st.Invite(ctx, inv); err != nil {
		return err
	}
	return s.mail(ctx, inv.Email, "You are invited to "+website+" on RelayBell",
		inviter+" invited you, as "+inv.Role+", to the RelayBell account of "+website+".\n\n"+
			"Sign in"+at(c.BaseURL, "")+", or sign up with this address and verify it: the account is then yours to see.\n", c.Now)
}

// CreateUser makes a verified person with their own account, as the
// operator does from the shell (relaybell admin user create).
func (s *Service) CreateUser(ctx context.Context, email, password, name string, now time.Time) (store.User, store.Account, error) {
	email, err := NormalizeEmail(email)
	if err != nil {
		return store.User{}, store.Account{}, err
	}
	if err := CheckPasswordRules(password); err != nil {
		return store.User{}, store.Account{}, &InputError{ErrInvalidPassword, err.Error()}
	}
	if name, err = cleanName(name); err != nil {
		return store.User{}, store.Account{}, err
	}
	hash, err := s.hash(ctx, password)
	if err != nil {
		return store.User{}, store.Account{}, err
	}
	u := store.User{ID: uuid.NewString(), Email: email, Name: name, PasswordHash: hash, EmailVerified: true, CreatedAt: now}
	a := store.Account{ID: uuid.NewString(), OwnerEmail: email, EmailVerified: true, CreatedAt: now}
	if err := s.st.CreateUser(ctx, store.Signup{User: u, Account: a}); err != nil {
		return store.User{}, store.Account{}, err
	}
	return u, a, nil
}

// hash is HashPassword in a slot.
func (s *Service) hash(ctx context.Context, pw string) (string, error) {
	if err := s.acquire(ctx); err != nil {
		return "", err
	}
	defer func() { <-s.slots }()
	return HashPassword(pw)
}

// check is CheckPassword in a slot.
func (s *Service) check(ctx context.Context, hash, pw string) (bool, error) {
	if err := s.acquire(ctx); err != nil {
		return false, err
	}
	defer func() { <-s.slots }()
	return CheckPassword(hash, pw), nil
}

func (s *Service) acquire(ctx context.Context) error {
	select {
	case s.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// token stores a new mailed token of kind for u and returns its secret.
func (s *Service) token(ctx context.Context, u store.User, kind string, ttl time.Duration, now time.Time) (string, error) {
	token, hash, err := NewToken()
	if err != nil {
		return "", err
	}
	if err := s.st.CreateToken(ctx, store.UserToken{Hash: hash, UserID: u.ID, Kind: kind, Email: u.Email,
		CreatedAt: now, ExpiresAt: now.Add(ttl)}); err != nil {
		return "", err
	}
	return token, nil
}

// mail queues a message in the outbox (sent by SMTP when configured).
func (s *Service) mail(ctx context.Context, to, subject, body string, now time.Time) error {
	return s.st.AddEmail(ctx, store.Email{ID: uuid.NewString(), To: to, Subject: subject, Body: body, CreatedAt: now})
}

// take counts n uses against limits, or answers ThrottledError.
func (s *Service) take(ctx context.Context, now time.Time, n int64, limits ...store.RateLimit) error {
	_, ok, err := s.st.TakeRateLimits(ctx, limits, n, now)
	if err != nil {
		return err
	}
	if !ok {
		var retry time.Time
		for _, l := range limits {
			if end := l.WindowEnd(now); end.After(retry) {
				retry = end
			}
		}
		return &ThrottledError{RetryAt: retry}
	}
	return nil
}

func limit(key string, window time.Duration, max int64) store.RateLimit {
	return store.RateLimit{Key: "auth:" + key, Window: window, Max: max}
}

// at is " at <the dashboard page>" when the service's public URL is known,
// else "": a link is never made from the Host a request named, which a
// client chooses (a reset link to a host of the attacker's would hand them
// the token).
// linkLine ends a sentence with a colon and the link to a dashboard page on
// a line of its own with nothing after it, so that whoever copies the link
// takes no punctuation along; with no public URL, a full stop.
func linkLine(base, page string) string {
	if base == "" {
		return ".\n\n"
	}
	return ":\n\n" + strings.TrimRight(base, "/") + "/#/" + page + "\n\n"
}

func at(base, page string) string {
	if base == "" {
		return ""
	}
	return " at " + strings.TrimRight(base, "/") + "/#/" + page
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}
