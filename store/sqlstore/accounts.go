package sqlstore

import (
	"context"
	"fmt"
	"time"

	"github.com/relaybell/relaybell/store"
)

// CreateWebsite stores a website with its first API key (none when k.ID is
// ""), and the account
// unless an account with that id exists already (a second website of the same
// account). A duplicate website, project id or key is store.ErrConflict.
func (s *Store) CreateWebsite(ctx context.Context, a store.Account, w store.Website, k store.APIKey) error {
	settings, err := jsonText(w.Settings)
	if err != nil {
		return fmt.Errorf("creating website: %w", err)
	}
	if w.AccountID == "" {
		w.AccountID = a.ID
	}
	if k.WebsiteID == "" {
		k.WebsiteID = w.ID
	}
	err = s.db.Tx(ctx, TxOptions{}, func(tx Conn) error {
		if _, err := tx.Exec(ctx, `INSERT INTO accounts (id, owner_email, email_verified, suspended, created_at)
			VALUES ($1, $2, $3, $4, $5) ON CONFLICT (id) DO NOTHING`,
			a.ID, a.OwnerEmail, a.EmailVerified, a.Suspended, s.now(a.CreatedAt)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO websites (id, account_id, project_id, name, url, timezone,
			vapid_public_key, vapid_private_key, settings, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
			w.ID, w.AccountID, w.ProjectID, w.Name, w.URL, w.Timezone, w.VAPIDPublicKey, w.VAPIDPrivateKey,
			settings, s.now(w.CreatedAt)); err != nil {
			return err
		}
		if k.ID == "" {
			return nil
		}
		return s.insertAPIKey(ctx, tx, k)
	})
	if err != nil {
		return fmt.Errorf("creating website: %w", s.mapErr(err))
	}
	return nil
}

// CreateAPIKey stores a key of an existing website (store.ErrNotFound
// otherwise). A duplicate id or hash is store.ErrConflict.
func (s *Store) CreateAPIKey(ctx context.Context, k store.APIKey) error {
	if err := s.insertAPIKey(ctx, s.db.Write(), k); err != nil {
		return fmt.Errorf("creating api key: %w", s.mapErr(err))
	}
	return nil
}

func (s *Store) insertAPIKey(ctx context.Context, c Conn, k store.APIKey) error {
	scopes := k.Scopes
	if scopes == nil {
		scopes = []string{}
	}
	js, err := jsonText(scopes)
	if err != nil {
		return err
	}
	_, err = c.Exec(ctx, `INSERT INTO api_keys (id, website_id, name, prefix, hash, scopes,
		expires_at, created_at, last_used_at, revoked_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		k.ID, k.WebsiteID, k.Name, k.Prefix, k.Hash, js,
		s.timePtr(k.ExpiresAt), s.now(k.CreatedAt), s.timePtr(k.LastUsedAt), s.timePtr(k.RevokedAt))
	return err
}

const websiteCols = `w.id, w.account_id, w.project_id, w.name, w.url, w.timezone,
	w.vapid_public_key, w.vapid_private_key, w.settings, w.created_at`

func websiteDest(w *store.Website) []any {
	return []any{&w.ID, &w.AccountID, &w.ProjectID, &w.Name, &w.URL, &w.Timezone,
		&w.VAPIDPublicKey, &w.VAPIDPrivateKey, jsonDest{&w.Settings}, timeDest{&w.CreatedAt}}
}

const accountCols = `a.id, a.owner_email, a.email_verified, a.suspended, a.created_at`

func accountDest(a *store.Account) []any {
	return []any{&a.ID, &a.OwnerEmail, &a.EmailVerified, &a.Suspended, timeDest{&a.CreatedAt}}
}

// KeyOwner resolves an unrevoked key by the hex SHA-256 of its secret.
// Expiry is left to the caller.
func (s *Store) KeyOwner(ctx context.Context, hash string) (store.KeyOwner, error) {
	var o store.KeyOwner
	dest := keyDest(&o.Key)
	dest = append(dest, websiteDest(&o.Website)...)
	dest = append(dest, accountDest(&o.Account)...)
	err := s.db.Read().QueryRow(ctx, `SELECT `+keyCols+`, `+websiteCols+`, `+accountCols+`
		FROM api_keys k
		JOIN websites w ON w.id = k.website_id
		JOIN accounts a ON a.id = w.account_id
		WHERE k.hash = $1 AND k.revoked_at IS NULL`, hash).Scan(dest...)
	if err != nil {
		return store.KeyOwner{}, fmt.Errorf("resolving api key: %w", s.mapErr(err))
	}
	return o, nil
}

// TouchAPIKey records when a key was last used.
func (s *Store) TouchAPIKey(ctx context.Context, id string, at time.Time) error {
	if err := affected(s.db.Write().Exec(ctx, `UPDATE api_keys SET last_used_at = $1 WHERE id = $2`, s.now(at), id)); err != nil {
		return fmt.Errorf("touching api key: %w", err)
	}
	return nil
}

// Website returns a website by id.
func (s *Store) Website(ctx context.Context, id string) (store.Website, error) {
	return s.website(ctx, `w.id = $1`, id)
}

// WebsiteByProjectID returns a website by its public project id.
func (s *Store) WebsiteByProjectID(ctx context.Context, projectID string) (store.Website, error) {
	return s.website(ctx, `w.project_id = $1`, projectID)
}

func (s *Store) website(ctx context.Context, where, arg string) (store.Website, error) {
	var w store.Website
	err := s.db.Read().QueryRow(ctx, `SELECT `+websiteCols+` FROM websites w WHERE `+where, arg).Scan(websiteDest(&w)...)
	if err != nil {
		return store.Website{}, fmt.Errorf("loading website: %w", s.mapErr(err))
	}
	return w, nil
}

// Account returns an account by id.
func (s *Store) Account(ctx context.Context, id string) (store.Account, error) {
	var a store.Account
	err := s.db.Read().QueryRow(ctx, `SELECT `+accountCols+` FROM accounts a WHERE a.id = $1`, id).Scan(accountDest(&a)...)
	if err != nil {
		return store.Account{}, fmt.Errorf("loading account: %w", s.mapErr(err))
	}
	return a, nil
}

// SetAccountSuspended suspends or reinstates an account.
func (s *Store) SetAccountSuspended(ctx context.Context, id string, suspended bool) error {
	if err := affected(s.db.Write().Exec(ctx, `UPDATE accounts SET suspended = $1 WHERE id = $2`, suspended, id)); err != nil {
		return fmt.Errorf("suspending account: %w", err)
	}
	return nil
}

// SetAccountEmailVerified marks the owner's e-mail verified.
func (s *Store) SetAccountEmailVerified(ctx context.Context, id string) error {
	if err := affected(s.db.Write().Exec(ctx, `UPDATE accounts SET email_verified = true WHERE id = $1`, id)); err != nil {
		return fmt.Errorf("verifying account e-mail: %w", err)
	}
	return nil
}

// AuthVersion reads the auth version, which triggers move with every
// change to what KeyOwner answers (each engine's auth_version migration): a
// method that changes accounts, websites or api_keys (a key revocation
// included) moves it without doing anything for it.
func (s *Store) AuthVersion(ctx context.Context) (int64, error) {
	var v int64
	if err := s.db.Read().QueryRow(ctx, `SELECT version FROM auth_version`).Scan(&v); err != nil {
		return 0, fmt.Errorf("reading auth version: %w", err)
	}
	return v, nil
}

const keyCols = `k.id, k.website_id, k.name, k.prefix, k.hash, k.scopes, k.expires_at, k.created_at, k.last_used_at, k.revoked_at`

func keyDest(k *store.APIKey) []any {
	return []any{&k.ID, &k.WebsiteID, &k.Name, &k.Prefix, &k.Hash, jsonDest{&k.Scopes},
		timePtrDest{&k.ExpiresAt}, timeDest{&k.CreatedAt}, timePtrDest{&k.LastUsedAt}, timePtrDest{&k.RevokedAt}}
}

// APIKeys lists a website's unrevoked keys, newest first.
func (s *Store) APIKeys(ctx context.Context, websiteID string) ([]store.APIKey, error) {
	rows, err := s.db.Read().Query(ctx, `SELECT `+keyCols+` FROM api_keys k
		WHERE k.website_id = $1 AND k.revoked_at IS NULL ORDER BY k.created_at DESC, k.id`, websiteID)
	ks, err := CollectRows(rows, err, keyDest)
	if err != nil {
		return nil, fmt.Errorf("listing api keys: %w", err)
	}
	return ks, nil
}

// RevokeAPIKey revokes a website's unrevoked key. The auth version moves
// with it (the api_keys trigger), so every API node drops the key.
func (s *Store) RevokeAPIKey(ctx context.Context, websiteID, id string, at time.Time) error {
	if err := affected(s.db.Write().Exec(ctx, `UPDATE api_keys SET revoked_at = $3
		WHERE website_id = $1 AND id = $2 AND revoked_at IS NULL`, websiteID, id, s.now(at))); err != nil {
		return fmt.Errorf("revoking api key: %w", err)
	}
	return nil
}

// DeleteWebsite deletes a website; its rows in every other table go with
// it (ON DELETE CASCADE), its sends' push ledger (keyed by their seq,
// with no foreign key) first, and the definitions version moves (its
// settings documents and on-site messages have no trigger).
func (s *Store) DeleteWebsite(ctx context.Context, id string) error {
	err := s.db.Tx(ctx, TxOptions{}, func(tx Conn) error {
		if _, err := tx.Exec(ctx, `DELETE FROM push_ledger
			WHERE notification_seq IN (SELECT seq FROM notifications WHERE website_id = $1)`, id); err != nil {
			return err
		}
		if err := affected(tx.Exec(ctx, `DELETE FROM websites WHERE id = $1`, id)); err != nil {
			return err
		}
		return bumpDefinitions(ctx, tx)
	})
	if err != nil {
		return fmt.Errorf("deleting website: %w", err)
	}
	return nil
}

// EditWebsite sets a website's name, URL and time zone.
func (s *Store) EditWebsite(ctx context.Context, id, name, url, timezone string) (store.Website, error) {
	var w store.Website
	err := s.db.Tx(ctx, TxOptions{}, func(tx Conn) error {
		if err := affected(tx.Exec(ctx, `UPDATE websites SET name = $2, url = $3, timezone = $4 WHERE id = $1`,
			id, name, url, timezone)); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `SELECT `+websiteCols+` FROM websites w WHERE w.id = $1`, id).Scan(websiteDest(&w)...)
	})
	if err != nil {
		return store.Website{}, fmt.Errorf("editing website: %w", s.mapErr(err))
	}
	return w, nil
}
