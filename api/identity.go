package api

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/relaybell/relaybell/notification"
	"github.com/relaybell/relaybell/store"
)

// Identity verification (spec 4.9 names GET and PUT /identity; the shape
// is RelayBell's). A website's secrets key the HMAC-SHA256 its own server
// computes over a user's external id; a browser that links an external id
// (the SDK's login) sends that hash as externalIdHash, so that nobody can
// link their browser to someone else's id, and receive their
// notifications, by naming it. The secrets and the mode are read from the
// store at each such registration, never cached: a change made through
// any API node holds on every node at once.
const (
	identitySecretPrefix = "rbid_"
	identityPrefixLen    = 12
	identityHashLen      = 2 * sha256.Size // hex digits
)

// identityModeRank orders the modes by how much they refuse: a key may
// raise the mode, only the dashboard lower it.
var identityModeRank = map[string]int{store.IdentityOff: 0, store.IdentityReport: 1, store.IdentityEnforce: 2}

// identityView is the answer of GET and PUT /identity. The secrets are
// listed by id and prefix only; newSecret, the one PUT added, is the only
// time a whole secret is shown.
type identityView struct {
	Mode      string               `json:"mode"`
	Secrets   []identitySecretView `json:"secrets"`
	NewSecret *identityNewSecret   `json:"newSecret,omitempty"`
}

type identitySecretView struct {
	ID        string `json:"id"`
	Prefix    string `json:"prefix"`
	CreatedAt string `json:"created_at"`
}

type identityNewSecret struct {
	ID        string `json:"id"`
	Prefix    string `json:"prefix"`
	Secret    string `json:"secret"`
	CreatedAt string `json:"created_at"`
}

// identityPatch is the body of PUT /identity. It is applied in this order
// and as a whole, or not at all: removeSecretId, addSecret, mode. null is
// the same as leaving a member out.
type identityPatch struct {
	Mode           *string `json:"mode"`
	AddSecret      *bool   `json:"addSecret"`
	RemoveSecretID *string `json:"removeSecretId"`
}

func (a *API) identityRoutes(rt *router) {
	rt.add(&route{method: http.MethodGet, pattern: "/api/v1/identity", auth: authKey, handle: a.handleGetIdentity})
	rt.add(&route{method: http.MethodPut, pattern: "/api/v1/identity", auth: authKey, handle: a.handlePutIdentity})
}

// handleGetIdentity serves GET /api/v1/identity: any key (spec 5, rule 1).
func (a *API) handleGetIdentity(r *request) error {
	iv, err := a.st.IdentityVerification(r.ctx, r.owner.Website.ID)
	if errors.Is(err, store.ErrNotFound) {
		return errCode(CodeNotFound) // the website was deleted meanwhile
	}
	if err != nil {
		return err
	}
	return r.json(http.StatusOK, viewIdentity(iv, ""))
}

// handlePutIdentity serves PUT /api/v1/identity: any key (spec 5, rule 1),
// but only a session may lower the mode (spec 4.9: only the dashboard can
// turn verification off). Report-only refuses nothing, so going from
// enforce down to report is turning it off too: a leaked key can add a
// secret or raise the mode, never stop verification.
func (a *API) handlePutIdentity(r *request) error {
	var p identityPatch
	if err := decodeJSON(r.fc.Request.Body(), &p, strict); err != nil {
		return err
	}
	add := p.AddSecret != nil && *p.AddSecret
	if p.Mode == nil && !add && p.RemoveSecretID == nil {
		return errorf(CodeNothingToUpdate, "give mode, addSecret: true or removeSecretId")
	}
	if p.Mode != nil {
		if _, ok := identityModeRank[*p.Mode]; !ok {
			return errorf(CodeInvalidJSON, "mode must be off, report or enforce")
		}
	}
	var removeID string
	if p.RemoveSecretID != nil {
		if removeID = strings.TrimSpace(*p.RemoveSecretID); isUUID(removeID) {
			removeID = strings.ToLower(removeID)
		}
	}
	var added string
	iv, err := a.st.UpdateIdentityVerification(r.ctx, r.owner.Website.ID, func(iv *store.IdentityVerification) error {
		added = "" // change may run again (a retried transaction)
		if p.Mode != nil && identityModeRank[*p.Mode] < identityModeRank[iv.Mode] && !r.bySession() {
			return errorf(CodeSessionRequired, "only the signed-in dashboard can turn identity verification off or down to report-only (mode is %s)", iv.Mode)
		}
		if p.RemoveSecretID != nil {
			i := slices.IndexFunc(iv.Secrets, func(s store.IdentitySecret) bool { return s.ID == removeID })
			if i < 0 {
				return errorf(CodeNotFound, "removeSecretId names no identity secret of this website")
			}
			iv.Secrets = slices.Delete(iv.Secrets, i, i+1)
		}
		if add {
			if len(iv.Secrets) >= store.MaxIdentitySecrets {
				return errorf(CodeTooManySecrets, "at most %d identity secrets are active at once: remove one (removeSecretId) to add another", store.MaxIdentitySecrets)
			}
			added = identitySecretPrefix + rand.Text()
			iv.Secrets = append(iv.Secrets, store.IdentitySecret{Secret: added, CreatedAt: r.now.UTC()})
		}
		if p.Mode != nil {
			iv.Mode = *p.Mode
		}
		if iv.Mode != store.IdentityOff && len(iv.Secrets) == 0 {
			return errorf(CodeSecretRequired, "identity verification in %s mode needs an active secret: add one (addSecret: true), in the same call or before", iv.Mode)
		}
		return nil
	})
	if errors.Is(err, store.ErrNotFound) {
		return errCode(CodeNotFound) // the website was deleted meanwhile
	}
	if err != nil {
		return err
	}
	return r.json(http.StatusOK, viewIdentity(iv, added))
}

// viewIdentity shows iv; added is the whole secret to show once ("" for
// none).
func viewIdentity(iv store.IdentityVerification, added string) identityView {
	v := identityView{Mode: iv.Mode, Secrets: make([]identitySecretView, len(iv.Secrets))}
	for i, s := range iv.Secrets {
		created := s.CreatedAt.UTC().Format(notification.TimeLayout)
		v.Secrets[i] = identitySecretView{ID: s.ID, Prefix: secretPrefix(s.Secret), CreatedAt: created}
		if added != "" && s.Secret == added {
			v.NewSecret = &identityNewSecret{ID: s.ID, Prefix: secretPrefix(s.Secret), Secret: s.Secret, CreatedAt: created}
		}
	}
	return v
}

func secretPrefix(s string) string { return s[:min(len(s), identityPrefixLen)] }

// Why a link was not verified: the values of the failures counter's
// reason label.
const (
	hashMissing   = "missing"
	hashMalformed = "malformed"
	hashMismatch  = "mismatch"
)

var hashProblems = map[string]string{
	hashMissing:   "externalIdHash is required to link an external id: the website verifies identities",
	hashMalformed: "externalIdHash must be the 64 hex digits of the HMAC-SHA256 of externalId under the website's identity secret",
	hashMismatch:  "externalIdHash does not match externalId under any active identity secret of the website",
}

// verifyExternalID applies the website's identity verification to a
// registration that links externalID with hash (its externalIdHash): nil
// when the link may go through. Off: anything goes. Report: a link
// without a valid hash goes through, logged and counted. Enforce: it is
// 403 invalid_external_id_hash, and the caller stores nothing.
func (a *API) verifyExternalID(r *request, w store.Website, externalID, hash string) error {
	iv, err := a.defs.IdentityVerification(r.ctx, w.ID) // cached, dropped on any change
	if err != nil {
		return fmt.Errorf("loading identity verification: %w", err)
	}
	if iv.Mode == store.IdentityOff {
		return nil
	}
	problem := externalIDHashProblem(iv.Secrets, externalID, hash)
	if problem == "" {
		return nil
	}
	a.metrics.identityFailures.WithLabelValues(iv.Mode, problem).Inc()
	if iv.Mode == store.IdentityReport {
		a.log.Warn("identity verification would refuse a link (report-only mode)",
			"request_id", r.id, "website_id", w.ID, "reason", problem)
		return nil
	}
	a.log.Info("identity verification refused a link", "request_id", r.id, "website_id", w.ID, "reason", problem)
	return errorf(CodeInvalidExternalIDHash, "%s. Nothing was stored: register without externalId to subscribe anonymously", hashProblems[problem])
}

// externalIDHashProblem is why hash is not the HMAC-SHA256 of externalID
// under one of secrets (hex, either case), or "" when it is.
func externalIDHashProblem(secrets []store.IdentitySecret, externalID, hash string) string {
	if hash == "" {
		return hashMissing
	}
	if len(hash) != identityHashLen {
		return hashMalformed
	}
	got, err := hex.DecodeString(hash)
	if err != nil {
		return hashMalformed
	}
	for _, s := range secrets {
		if hmac.Equal(got, identityHMAC(s.Secret, externalID)) {
			return ""
		}
	}
	return hashMismatch
}

// identityHMAC is the HMAC-SHA256 of externalID keyed with the whole
// secret text, prefix included.
func identityHMAC(secret, externalID string) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(externalID))
	return m.Sum(nil)
}
