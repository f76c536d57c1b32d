package sqlite

import (
	"encoding/json"
	"fmt"

	"github.com/relaybell/relaybell/store"
)

// What the methods not yet moved to sqlstore share (issue 22: one store).

const websiteCols = `w.id, w.account_id, w.project_id, w.name, w.url, w.timezone,
	w.vapid_public_key, w.vapid_private_key, w.settings, w.created_at`

func websiteDest(w *store.Website) []any {
	return []any{&w.ID, &w.AccountID, &w.ProjectID, &w.Name, &w.URL, &w.Timezone,
		&w.VAPIDPublicKey, &w.VAPIDPrivateKey, jsonText{&w.Settings}, msTime{&w.CreatedAt}}
}

const accountCols = `a.id, a.owner_email, a.email_verified, a.suspended, a.created_at`

func accountDest(a *store.Account) []any {
	return []any{&a.ID, &a.OwnerEmail, &a.EmailVerified, &a.Suspended, msTime{&a.CreatedAt}}
}

// jsonText scans a JSON TEXT column into v; NULL or "" leaves v untouched.
type jsonText struct{ v any }

func (j jsonText) Scan(src any) error {
	var b []byte
	switch x := src.(type) {
	case nil:
		return nil
	case string:
		b = []byte(x)
	case []byte:
		b = x
	default:
		return fmt.Errorf("scanning json: unexpected %T", src)
	}
	if len(b) == 0 {
		return nil
	}
	return json.Unmarshal(b, j.v)
}
