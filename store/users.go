package store

import (
	"context"
	"time"
)

// Roles of a member of an account. An owner does everything; an admin
// everything but managing members and deleting websites; a viewer reads
// and changes nothing.
const (
	RoleOwner  = "owner"
	RoleAdmin  = "admin"
	RoleViewer = "viewer"
)

// User is a person who signs in to the dashboard. Email is kept in lower
// case and is unique; only an argon2id hash of the password is kept.
type User struct {
	ID            string
	Email         string
	Name          string
	PasswordHash  string
	EmailVerified bool
	CreatedAt     time.Time
}

// Member is a user's membership of an account, with the user's address
// and name for lists.
type Member struct {
	AccountID string
	UserID    string
	Role      string
	Email     string
	Name      string
	CreatedAt time.Time
}

// Invite is a membership waiting for the person invited to verify the
// address it was sent to.
type Invite struct {
	AccountID string
	Email     string
	Role      string
	CreatedAt time.Time
}

// Session is a signed-in browser. Only the SHA-256 of its token is kept
// (Hash). It ends at ExpiresAt, or earlier when idle too long (the
// caller's rule, from LastSeenAt). A session without a UserID is a sign-up
// for an address already taken, with the Email and Name it gave: it must
// look like a new, unverified person's session and do nothing.
type Session struct {
	ID         string
	UserID     string
	Hash       string
	Email      string
	Name       string
	UserAgent  string
	IP         string
	CreatedAt  time.Time
	LastSeenAt time.Time
	ExpiresAt  time.Time
}

// Token kinds: a single-use token mailed to a user.
const (
	TokenVerifyEmail   = "verify_email"
	TokenResetPassword = "reset_password"
)

// UserToken is a single-use token mailed to a user; only its SHA-256 is
// kept.
type UserToken struct {
	Hash      string
	UserID    string
	Kind      string
	Email     string // the address it was sent to (verification: the one it verifies)
	CreatedAt time.Time
	ExpiresAt time.Time
}

// Signup is what signing up creates, in one transaction: the user, their
// account and their owner membership of it.
type Signup struct {
	User    User
	Account Account
}

// Users holds the people who sign in: their accounts' memberships,
// invites, sessions and mailed tokens (the mail itself goes through the
// outbox of Webhooks.AddEmail).
type Users interface {
	// CreateUser stores a user, their account and the owner membership of
	// it in one transaction. An address already taken is ErrConflict.
	CreateUser(ctx context.Context, s Signup) error
	UserByEmail(ctx context.Context, email string) (User, error)
	User(ctx context.Context, id string) (User, error)
	// SetPassword replaces a user's password hash, ends every session of
	// theirs but keep (the one that changed it; "" ends them all) and
	// drops their unused password reset tokens.
	SetPassword(ctx context.Context, userID, hash, keep string) error
	// VerifyEmail marks the user's address verified, the accounts they
	// own verified (email_not_verified lifts), and turns the invites sent
	// to the address into memberships, in one transaction.
	VerifyEmail(ctx context.Context, userID string, at time.Time) error

	// AcceptInvites turns the invites to a verified user's address into
	// memberships (an existing membership keeps its role); an unverified
	// user's wait.
	AcceptInvites(ctx context.Context, userID string, at time.Time) error
	// Members lists an account's members, oldest first.
	Members(ctx context.Context, accountID string) ([]Member, error)
	// Memberships lists a user's memberships, oldest first.
	Memberships(ctx context.Context, userID string) ([]Member, error)
	// Role is the user's role in the account, ErrNotFound for none.
	Role(ctx context.Context, userID, accountID string) (string, error)
	// SetMember adds a user to an account or changes their role.
	SetMember(ctx context.Context, m Member) error
	// RemoveMember ends a membership; ErrNotFound for none. An account
	// keeps at least one owner: removing or demoting the last is
	// ErrConflict (SetMember too).
	RemoveMember(ctx context.Context, accountID, userID string) error
	// Invites lists an account's pending invites; Invite stores or
	// replaces one; RemoveInvite drops one (ErrNotFound for none).
	Invites(ctx context.Context, accountID string) ([]Invite, error)
	Invite(ctx context.Context, i Invite) error
	RemoveInvite(ctx context.Context, accountID, email string) error
	// WebsitesOf lists the websites of the accounts a user is a member of.
	WebsitesOf(ctx context.Context, userID string) ([]Website, error)

	// CreateSession stores a session.
	CreateSession(ctx context.Context, s Session) error
	// SessionByHash returns the session with that token hash and its user
	// (ErrNotFound for none: revoked, or never made); the zero User for a
	// session without one. Expiry is the caller's to check.
	SessionByHash(ctx context.Context, hash string) (Session, User, error)
	// TouchSession records a session's last use.
	TouchSession(ctx context.Context, id string, at time.Time) error
	// Sessions lists a user's sessions, newest first.
	Sessions(ctx context.Context, userID string) ([]Session, error)
	// DeleteSession ends one of a user's sessions (userID "": a session
	// without a user); ErrNotFound for none.
	DeleteSession(ctx context.Context, userID, id string) error

	// CreateToken stores a mailed token.
	CreateToken(ctx context.Context, t UserToken) error
	// UseToken spends an unexpired token of that kind, once: a second use
	// or an expired or unknown token is ErrNotFound.
	UseToken(ctx context.Context, hash, kind string, now time.Time) (UserToken, error)
	// Token reads an unexpired token of that kind without spending it:
	// ErrNotFound as for UseToken.
	Token(ctx context.Context, hash, kind string, now time.Time) (UserToken, error)
}
