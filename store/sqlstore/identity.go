package sqlstore

import (
	"context"
	"fmt"
	"slices"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/store"
)

// identityQuery reads a website's identity verification in one statement:
// one row per secret, oldest first, or one row of NULL secret columns when
// it has none; no row for an unknown website.
const identityQuery = `SELECT coalesce(v.mode, 'off'), x.id, x.secret, x.created_at
	FROM websites w
	LEFT JOIN identity_verification v ON v.website_id = w.id
	LEFT JOIN identity_secrets x ON x.website_id = w.id
	WHERE w.id = $1
	ORDER BY x.created_at, x.id`

// IdentityVerification returns the website's identity verification as
// stored now.
func (s *Store) IdentityVerification(ctx context.Context, websiteID string) (store.IdentityVerification, error) {
	iv, err := s.identity(ctx, s.db.Read(), websiteID)
	if err != nil {
		return store.IdentityVerification{}, fmt.Errorf("loading identity verification: %w", err)
	}
	return iv, nil
}

func (s *Store) identity(ctx context.Context, c Conn, websiteID string) (store.IdentityVerification, error) {
	rows, err := c.Query(ctx, identityQuery, websiteID)
	if err != nil {
		return store.IdentityVerification{}, err
	}
	defer rows.Close()
	var (
		iv    store.IdentityVerification
		found bool
	)
	for rows.Next() {
		var sec store.IdentitySecret
		if err := rows.Scan(&iv.Mode, textDest{&sec.ID}, textDest{&sec.Secret}, timeDest{&sec.CreatedAt}); err != nil {
			return store.IdentityVerification{}, err
		}
		found = true
		if sec.ID != "" {
			iv.Secrets = append(iv.Secrets, sec)
		}
	}
	if err := rows.Err(); err != nil {
		return store.IdentityVerification{}, err
	}
	if !found {
		return store.IdentityVerification{}, store.ErrNotFound
	}
	return iv, nil
}

// UpdateIdentityVerification changes the website's identity verification
// in one transaction. The website's row is locked first (FOR NO KEY
// UPDATE on PostgreSQL, which inserts referring to the website do not
// wait for), so concurrent updates of one website run one after the
// other and each sees the last one's secrets: two nodes adding a secret
// at once cannot hold more than MaxIdentitySecrets between them.
func (s *Store) UpdateIdentityVerification(ctx context.Context, websiteID string, change func(*store.IdentityVerification) error) (store.IdentityVerification, error) {
	var out store.IdentityVerification
	err := s.db.Tx(ctx, TxOptions{}, func(tx Conn) error {
		var id string
		if err := tx.QueryRow(ctx, `SELECT id FROM websites WHERE id = $1 `+s.d.LockRows("NO KEY UPDATE"), websiteID).Scan(&id); err != nil {
			return s.mapErr(err)
		}
		old, err := s.identity(ctx, tx, websiteID)
		if err != nil {
			return s.mapErr(err)
		}
		next := store.IdentityVerification{Mode: old.Mode, Secrets: slices.Clone(old.Secrets)}
		if err := change(&next); err != nil {
			return err
		}
		switch next.Mode {
		case store.IdentityOff, store.IdentityReport, store.IdentityEnforce:
		default:
			return fmt.Errorf("identity verification mode %q: want off, report or enforce", next.Mode)
		}
		if len(next.Secrets) > store.MaxIdentitySecrets {
			return fmt.Errorf("%d identity secrets, at most %d: %w", len(next.Secrets), store.MaxIdentitySecrets, store.ErrConflict)
		}
		kept := map[string]bool{}
		for i := range next.Secrets {
			sec := &next.Secrets[i]
			if sec.ID == "" {
				sec.ID = uuid.NewString()
			}
			if kept[sec.ID] {
				return fmt.Errorf("identity secret %s named twice: %w", sec.ID, store.ErrConflict)
			}
			kept[sec.ID] = true
		}
		if next.Mode != old.Mode {
			if _, err := tx.Exec(ctx, `INSERT INTO identity_verification (website_id, mode) VALUES ($1, $2)
				ON CONFLICT (website_id) DO UPDATE SET mode = excluded.mode`, websiteID, next.Mode); err != nil {
				return err
			}
		}
		stored := map[string]bool{}
		for _, sec := range old.Secrets {
			stored[sec.ID] = true
			if !kept[sec.ID] {
				if _, err := tx.Exec(ctx, `DELETE FROM identity_secrets WHERE website_id = $1 AND id = $2`, websiteID, sec.ID); err != nil {
					return err
				}
			}
		}
		for _, sec := range next.Secrets {
			if stored[sec.ID] {
				continue
			}
			if _, err := tx.Exec(ctx, `INSERT INTO identity_secrets (website_id, id, secret, created_at) VALUES ($1, $2, $3, $4)`,
				websiteID, sec.ID, sec.Secret, s.now(sec.CreatedAt)); err != nil {
				return s.mapErr(err)
			}
		}
		out, err = s.identity(ctx, tx, websiteID)
		return err
	})
	if err != nil {
		return store.IdentityVerification{}, fmt.Errorf("updating identity verification: %w", err)
	}
	return out, nil
}
