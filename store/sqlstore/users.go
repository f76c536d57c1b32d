package sqlstore

import (
	"context"
	"fmt"
	"time"

	"github.com/relaybell/relaybell/store"
)

const userCols = `u.id, u.email, u.name, u.password_hash, u.email_verified, u.created_at`

func userDest(u *store.User) []any {
	return []any{&u.ID, &u.Email, &u.Name, &u.PasswordHash, &u.EmailVerified, timeDest{&u.CreatedAt}}
}

// CreateUser stores a user, their account and their owner membership of
// it in one transaction. An address already taken is store.ErrConflict.
func (s *Store) CreateUser(ctx context.Context, in store.Signup) error {
	u, a := in.User, in.Account
	err := s.db.Tx(ctx, TxOptions{}, func(tx Conn) error {
		if _, err := tx.Exec(ctx, `INSERT INTO users (id, email, name, password_hash, email_verified, created_at)
			VALUES ($1, $2, $3, $4, $5, $6)`,
			u.ID, u.Email, u.Name, u.PasswordHash, u.EmailVerified, s.now(u.CreatedAt)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO accounts (id, owner_email, email_verified, suspended, created_at)
			VALUES ($1, $2, $3, $4, $5)`,
			a.ID, a.OwnerEmail, a.EmailVerified, a.Suspended, s.now(a.CreatedAt)); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO members (account_id, user_id, role, created_at) VALUES ($1, $2, $3, $4)`,
			a.ID, u.ID, store.RoleOwner, s.now(u.CreatedAt))
		return err
	})
	if err != nil {
		return fmt.Errorf("creating user: %w", s.mapErr(err))
	}
	return nil
}

// UserByEmail returns the user with that address (kept in lower case).
func (s *Store) UserByEmail(ctx context.Context, email string) (store.User, error) {
	return s.user(ctx, `u.email = $1`, email)
}

// User returns a user by id.
func (s *Store) User(ctx context.Context, id string) (store.User, error) {
	return s.user(ctx, `u.id = $1`, id)
}

func (s *Store) user(ctx context.Context, where, arg string) (store.User, error) {
	var u store.User
	if err := s.db.Read().QueryRow(ctx, `SELECT `+userCols+` FROM users u WHERE `+where, arg).Scan(userDest(&u)...); err != nil {
		return store.User{}, fmt.Errorf("loading user: %w", s.mapErr(err))
	}
	return u, nil
}

// SetPassword replaces a user's password hash, ends every session of
// theirs but keep and drops their unused reset tokens, in one transaction.
func (s *Store) SetPassword(ctx context.Context, userID, hash, keep string) error {
	err := s.db.Tx(ctx, TxOptions{}, func(tx Conn) error {
		if err := affected(tx.Exec(ctx, `UPDATE users SET password_hash = $2 WHERE id = $1`, userID, hash)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM user_tokens WHERE user_id = $1 AND kind = $2`, userID, store.TokenResetPassword); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM sessions WHERE user_id = $1 AND id <> $2`, userID, keep)
		return err
	})
	if err != nil {
		return fmt.Errorf("setting password: %w", s.mapErr(err))
	}
	return nil
}

// VerifyEmail marks the user's address verified and the accounts they own
// verified, and turns the invites to the address into memberships (an
// existing membership keeps its role), in one transaction.
func (s *Store) VerifyEmail(ctx context.Context, userID string, at time.Time) error {
	err := s.db.Tx(ctx, TxOptions{}, func(tx Conn) error {
		var email string
		if err := tx.QueryRow(ctx, `UPDATE users SET email_verified = true WHERE id = $1 RETURNING email`, userID).Scan(&email); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE accounts SET email_verified = true
			WHERE NOT email_verified AND id IN (SELECT account_id FROM members WHERE user_id = $1 AND role = 'owner')`, userID); err != nil {
			return err
		}
		return s.acceptInvites(ctx, tx, userID, email, at)
	})
	if err != nil {
		return fmt.Errorf("verifying e-mail: %w", s.mapErr(err))
	}
	return nil
}

// AcceptInvites turns the invites to a verified user's address into
// memberships.
func (s *Store) AcceptInvites(ctx context.Context, userID string, at time.Time) error {
	err := s.db.Tx(ctx, TxOptions{}, func(tx Conn) error {
		var email string
		var verified bool
		if err := tx.QueryRow(ctx, `SELECT email, email_verified FROM users WHERE id = $1`, userID).Scan(&email, &verified); err != nil {
			return err
		}
		if !verified {
			return nil
		}
		return s.acceptInvites(ctx, tx, userID, email, at)
	})
	if err != nil {
		return fmt.Errorf("accepting invites: %w", s.mapErr(err))
	}
	return nil
}

func (s *Store) acceptInvites(ctx context.Context, tx Conn, userID, email string, at time.Time) error {
	if _, err := tx.Exec(ctx, `INSERT INTO members (account_id, user_id, role, created_at)
		SELECT account_id, $1, role, $3 FROM invites WHERE email = $2
		ON CONFLICT (account_id, user_id) DO NOTHING`, userID, email, s.time(at)); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `DELETE FROM invites WHERE email = $1`, email)
	return err
}

const memberCols = `m.account_id, m.user_id, m.role, u.email, u.name, m.created_at`

func memberDest(m *store.Member) []any {
	return []any{&m.AccountID, &m.UserID, &m.Role, &m.Email, &m.Name, timeDest{&m.CreatedAt}}
}

// Members lists an account's members, oldest first.
func (s *Store) Members(ctx context.Context, accountID string) ([]store.Member, error) {
	return s.members(ctx, `m.account_id = $1`, accountID)
}

// Memberships lists a user's memberships, oldest first.
func (s *Store) Memberships(ctx context.Context, userID string) ([]store.Member, error) {
	return s.members(ctx, `m.user_id = $1`, userID)
}

func (s *Store) members(ctx context.Context, where, arg string) ([]store.Member, error) {
	rows, err := s.db.Read().Query(ctx, `SELECT `+memberCols+` FROM members m JOIN users u ON u.id = m.user_id
		WHERE `+where+` ORDER BY m.created_at, m.account_id, m.user_id`, arg)
	ms, err := CollectRows(rows, err, memberDest)
	if err != nil {
		return nil, fmt.Errorf("listing members: %w", err)
	}
	return ms, nil
}

// Role is the user's role in the account; store.ErrNotFound for none.
func (s *Store) Role(ctx context.Context, userID, accountID string) (string, error) {
	var role string
	if err := s.db.Read().QueryRow(ctx, `SELECT role FROM members WHERE user_id = $1 AND account_id = $2`,
		userID, accountID).Scan(&role); err != nil {
		return "", fmt.Errorf("reading role: %w", s.mapErr(err))
	}
	return role, nil
}

// SetMember adds a user to an account or changes their role. Demoting the
// account's last owner is store.ErrConflict.
func (s *Store) SetMember(ctx context.Context, m store.Member) error {
	err := s.db.Tx(ctx, TxOptions{}, func(tx Conn) error {
		if m.Role != store.RoleOwner {
			if err := s.keepAnOwner(ctx, tx, m.AccountID, m.UserID); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, `INSERT INTO members (account_id, user_id, role, created_at) VALUES ($1, $2, $3, $4)
			ON CONFLICT (account_id, user_id) DO UPDATE SET role = excluded.role`,
			m.AccountID, m.UserID, m.Role, s.now(m.CreatedAt))
		return err
	})
	if err != nil {
		return fmt.Errorf("setting member: %w", s.mapErr(err))
	}
	return nil
}

// RemoveMember ends a membership; removing the last owner is
// store.ErrConflict.
func (s *Store) RemoveMember(ctx context.Context, accountID, userID string) error {
	err := s.db.Tx(ctx, TxOptions{}, func(tx Conn) error {
		if err := s.keepAnOwner(ctx, tx, accountID, userID); err != nil {
			return err
		}
		return affected(tx.Exec(ctx, `DELETE FROM members WHERE account_id = $1 AND user_id = $2`, accountID, userID))
	})
	if err != nil {
		return fmt.Errorf("removing member: %w", s.mapErr(err))
	}
	return nil
}

// errLastOwner is a change that would leave an account without an owner.
var errLastOwner = fmt.Errorf("%w: an account keeps at least one owner", store.ErrConflict)

// keepAnOwner refuses, with errLastOwner, a change that takes userID's
// ownership of the account when no other owner is left. The account's
// owner rows are locked, so two owners demoting each other at once cannot
// both succeed.
func (s *Store) keepAnOwner(ctx context.Context, tx Conn, accountID, userID string) error {
	rows, err := tx.Query(ctx, `SELECT user_id FROM members WHERE account_id = $1 AND role = 'owner' `+
		s.d.ForUpdate(), accountID)
	owners, err := CollectRows(rows, err, func(id *string) []any { return []any{id} })
	if err != nil {
		return err
	}
	if len(owners) == 1 && owners[0] == userID {
		return errLastOwner
	}
	return nil
}

// Invites lists an account's pending invites, oldest first.
func (s *Store) Invites(ctx context.Context, accountID string) ([]store.Invite, error) {
	rows, err := s.db.Read().Query(ctx, `SELECT account_id, email, role, created_at FROM invites
		WHERE account_id = $1 ORDER BY created_at, email`, accountID)
	is, err := CollectRows(rows, err, func(i *store.Invite) []any {
		return []any{&i.AccountID, &i.Email, &i.Role, timeDest{&i.CreatedAt}}
	})
	if err != nil {
		return nil, fmt.Errorf("listing invites: %w", err)
	}
	return is, nil
}

// Invite stores an invite, or changes the role of the one pending.
func (s *Store) Invite(ctx context.Context, i store.Invite) error {
	if _, err := s.db.Write().Exec(ctx, `INSERT INTO invites (account_id, email, role, created_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (account_id, email) DO UPDATE SET role = excluded.role`,
		i.AccountID, i.Email, i.Role, s.now(i.CreatedAt)); err != nil {
		return fmt.Errorf("inviting: %w", s.mapErr(err))
	}
	return nil
}

// RemoveInvite drops a pending invite; store.ErrNotFound for none.
func (s *Store) RemoveInvite(ctx context.Context, accountID, email string) error {
	if err := affected(s.db.Write().Exec(ctx, `DELETE FROM invites WHERE account_id = $1 AND email = $2`, accountID, email)); err != nil {
		return fmt.Errorf("removing invite: %w", err)
	}
	return nil
}

// WebsitesOf lists the websites of the accounts the user is a member of,
// by account then creation.
func (s *Store) WebsitesOf(ctx context.Context, userID string) ([]store.Website, error) {
	rows, err := s.db.Read().Query(ctx, `SELECT `+websiteCols+` FROM websites w
		JOIN members m ON m.account_id = w.account_id AND m.user_id = $1
		ORDER BY m.created_at, w.account_id, w.created_at, w.id`, userID)
	ws, err := CollectRows(rows, err, websiteDest)
	if err != nil {
		return nil, fmt.Errorf("listing websites: %w", err)
	}
	return ws, nil
}

const sessionCols = `se.id, coalesce(se.user_id, ''), se.hash, se.email, se.name, se.user_agent, se.ip,
	se.created_at, se.last_seen_at, se.expires_at`

func sessionDest(se *store.Session) []any {
	return []any{&se.ID, &se.UserID, &se.Hash, &se.Email, &se.Name, &se.UserAgent, &se.IP,
		timeDest{&se.CreatedAt}, timeDest{&se.LastSeenAt}, timeDest{&se.ExpiresAt}}
}

// CreateSession stores a session of an existing user (store.ErrNotFound
// otherwise), or without a user when UserID is "".
func (s *Store) CreateSession(ctx context.Context, se store.Session) error {
	if _, err := s.db.Write().Exec(ctx, `INSERT INTO sessions (id, user_id, hash, email, name, user_agent, ip,
		created_at, last_seen_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		se.ID, nullString(se.UserID), se.Hash, se.Email, se.Name, se.UserAgent, se.IP, s.now(se.CreatedAt), s.now(se.LastSeenAt), s.time(se.ExpiresAt)); err != nil {
		return fmt.Errorf("creating session: %w", s.mapErr(err))
	}
	return nil
}

// SessionByHash returns the session with that token hash and its user.
func (s *Store) SessionByHash(ctx context.Context, hash string) (store.Session, store.User, error) {
	var se store.Session
	var u store.User
	err := s.db.Read().QueryRow(ctx, `SELECT `+sessionCols+`, coalesce(u.id, ''), coalesce(u.email, ''),
			coalesce(u.name, ''), coalesce(u.password_hash, ''), coalesce(u.email_verified, false),
			coalesce(u.created_at, se.created_at)
		FROM sessions se LEFT JOIN users u ON u.id = se.user_id WHERE se.hash = $1`, hash).Scan(append(sessionDest(&se), userDest(&u)...)...)
	if err != nil {
		return store.Session{}, store.User{}, fmt.Errorf("resolving session: %w", s.mapErr(err))
	}
	return se, u, nil
}

// TouchSession records a session's last use.
func (s *Store) TouchSession(ctx context.Context, id string, at time.Time) error {
	if err := affected(s.db.Write().Exec(ctx, `UPDATE sessions SET last_seen_at = $2 WHERE id = $1`, id, s.now(at))); err != nil {
		return fmt.Errorf("touching session: %w", err)
	}
	return nil
}

// Sessions lists a user's sessions, newest first.
func (s *Store) Sessions(ctx context.Context, userID string) ([]store.Session, error) {
	rows, err := s.db.Read().Query(ctx, `SELECT `+sessionCols+` FROM sessions se WHERE se.user_id = $1
		ORDER BY se.created_at DESC, se.id`, userID)
	ss, err := CollectRows(rows, err, sessionDest)
	if err != nil {
		return nil, fmt.Errorf("listing sessions: %w", err)
	}
	return ss, nil
}

// DeleteSession ends one of a user's sessions; store.ErrNotFound for none.
func (s *Store) DeleteSession(ctx context.Context, userID, id string) error {
	if err := affected(s.db.Write().Exec(ctx, `DELETE FROM sessions WHERE coalesce(user_id, '') = $1 AND id = $2`, userID, id)); err != nil {
		return fmt.Errorf("ending session: %w", err)
	}
	return nil
}

// CreateToken stores a mailed token of an existing user.
func (s *Store) CreateToken(ctx context.Context, t store.UserToken) error {
	if _, err := s.db.Write().Exec(ctx, `INSERT INTO user_tokens (hash, user_id, kind, email, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6)`,
		t.Hash, t.UserID, t.Kind, t.Email, s.now(t.CreatedAt), s.time(t.ExpiresAt)); err != nil {
		return fmt.Errorf("creating token: %w", s.mapErr(err))
	}
	return nil
}

// UseToken spends an unexpired token of that kind: the row goes in the
// statement that reads it, so of two uses at once exactly one gets it.
func (s *Store) UseToken(ctx context.Context, hash, kind string, now time.Time) (store.UserToken, error) {
	var t store.UserToken
	err := s.db.Write().QueryRow(ctx, `DELETE FROM user_tokens WHERE hash = $1 AND kind = $2
		RETURNING hash, user_id, kind, email, created_at, expires_at`, hash, kind).
		Scan(&t.Hash, &t.UserID, &t.Kind, &t.Email, timeDest{&t.CreatedAt}, timeDest{&t.ExpiresAt})
	if err != nil {
		return store.UserToken{}, fmt.Errorf("using token: %w", s.mapErr(err))
	}
	if !t.ExpiresAt.After(now) {
		return store.UserToken{}, fmt.Errorf("using token: expired: %w", store.ErrNotFound)
	}
	return t, nil
}

// Token reads an unexpired token of that kind, leaving it unspent.
func (s *Store) Token(ctx context.Context, hash, kind string, now time.Time) (store.UserToken, error) {
	var t store.UserToken
	err := s.db.Read().QueryRow(ctx, `SELECT hash, user_id, kind, email, created_at, expires_at FROM user_tokens
		WHERE hash = $1 AND kind = $2`, hash, kind).
		Scan(&t.Hash, &t.UserID, &t.Kind, &t.Email, timeDest{&t.CreatedAt}, timeDest{&t.ExpiresAt})
	if err != nil {
		return store.UserToken{}, fmt.Errorf("reading token: %w", s.mapErr(err))
	}
	if !t.ExpiresAt.After(now) {
		return store.UserToken{}, fmt.Errorf("reading token: expired: %w", store.ErrNotFound)
	}
	return t, nil
}
