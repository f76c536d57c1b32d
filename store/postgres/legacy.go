package postgres

import "github.com/relaybell/relaybell/store"

// What the methods not yet moved to sqlstore share (issue 22: one store).

const websiteCols = `w.id, w.account_id, w.project_id, w.name, w.url, w.timezone,
	w.vapid_public_key, w.vapid_private_key, w.settings, w.created_at`

func websiteDest(w *store.Website) []any {
	return []any{&w.ID, &w.AccountID, &w.ProjectID, &w.Name, &w.URL, &w.Timezone,
		&w.VAPIDPublicKey, &w.VAPIDPrivateKey, &w.Settings, &w.CreatedAt}
}

const accountCols = `a.id, a.owner_email, a.email_verified, a.suspended, a.created_at`

func accountDest(a *store.Account) []any {
	return []any{&a.ID, &a.OwnerEmail, &a.EmailVerified, &a.Suspended, &a.CreatedAt}
}
