package store

import (
	"context"
	"time"
)

// Identity verification modes. Off: a browser links any external id it
// names. Report: a link without a valid hash goes through, and the API
// logs and counts it (the trial run before enforcing). Enforce: such a
// link is refused.
const (
	IdentityOff     = "off"
	IdentityReport  = "report"
	IdentityEnforce = "enforce"
)

// MaxIdentitySecrets is how many identity secrets a website holds at
// once: two, so that a secret can be rotated (add the new one, move the
// servers to it, remove the old one) without a moment when the servers'
// hashes are refused.
const MaxIdentitySecrets = 2

// IdentitySecret is one active identity-verification secret of a website:
// the key of the HMAC-SHA256 the customer's server signs external ids with.
// It is kept whole (the API must compute the HMAC); only the API's answer
// to its creation shows it.
type IdentitySecret struct {
	ID        string
	Secret    string
	CreatedAt time.Time
}

// IdentityVerification is a website's identity verification: its mode
// and its active secrets, oldest first. A website that never set it up is
// off with no secret.
type IdentityVerification struct {
	Mode    string
	Secrets []IdentitySecret
}

// Identity holds each website's identity verification. It lives apart
// from the website's row and settings, so no answer that shows a website
// or its settings (or KeyOwner, or the key caches) ever holds a secret.
type Identity interface {
	// IdentityVerification returns the website's mode and secrets as
	// stored now (nothing is cached: a change made through any node is
	// seen by the next call). ErrNotFound for an unknown website.
	IdentityVerification(ctx context.Context, websiteID string) (IdentityVerification, error)
	// UpdateIdentityVerification changes the website's identity
	// verification in one transaction, which concurrent updates of the
	// same website wait for: change gets the stored state and may set
	// Mode, append secrets (an empty ID gets a new UUID, a zero CreatedAt
	// the current time) and remove secrets. A secret is named by its ID: a
	// stored one stays as stored, and one missing from Secrets after
	// change is deleted. change's error aborts the update and is returned
	// as is; change may run more than once, so it must not change anything
	// outside the state it is given. It returns the state as stored.
	// ErrNotFound for an unknown website, ErrConflict for more than
	// MaxIdentitySecrets secrets or two with one ID; an unknown mode is an
	// error.
	UpdateIdentityVerification(ctx context.Context, websiteID string, change func(*IdentityVerification) error) (IdentityVerification, error)
}
