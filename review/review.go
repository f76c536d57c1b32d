// Package review decides whether a send must wait for an operator or for
// its account, the one rule that POST /notifications, the recurring
// schedules and the feeds apply (spec 3.1):
//
//   - an account whose e-mail address is not verified sends nothing
//     (Verified);
//   - a new account's first large broadcast is held for review (Held):
//     it applies to broadcasts (everyone, a segment, a topic or filters),
//     never to sends to specific users or test devices; of an account
//     younger than AccountAge; whose websites never started a send that
//     reached the threshold (store.LargestSend); when the send's audience,
//     counted as /segments/preview counts it, is at least the threshold
//     (audience.Reaches stops counting there).
package review

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/relaybell/relaybell/audience"
	"github.com/relaybell/relaybell/notification"
	"github.com/relaybell/relaybell/store"
)

// DefaultThreshold is the audience, in browsers, from which a new
// account's first broadcast is held.
const DefaultThreshold = 10000

// AccountAge is how long an account is new.
const AccountAge = 14 * 24 * time.Hour

// ErrEmailNotVerified is Verified's answer for an account whose e-mail
// address is not verified (the catalog's email_not_verified).
var ErrEmailNotVerified = errors.New("verify the account's e-mail address before sending")

// Verified reports whether the account may send: ErrEmailNotVerified
// when its e-mail address is not verified.
func Verified(a store.Account) error {
	if !a.EmailVerified {
		return ErrEmailNotVerified
	}
	return nil
}

// Store is what Held reads.
type Store interface {
	audience.Segments
	audience.Reader
	LargestSend(ctx context.Context, websiteID string) (int64, error)
}

// Held reports whether a checked send (req, prepared as n) of account a
// must be held for review at now. threshold is the audience in browsers
// from which it is; negative turns review off, 0 is DefaultThreshold.
func Held(ctx context.Context, st Store, threshold int, a store.Account, req *notification.Request, n *store.Notification, now time.Time) (bool, error) {
	if threshold == 0 {
		threshold = DefaultThreshold
	}
	limit := int64(threshold)
	if limit < 0 || req.SpecificUsers() || req.TestDevices || now.Sub(a.CreatedAt) >= AccountAge {
		return false, nil
	}
	largest, err := st.LargestSend(ctx, n.WebsiteID)
	if err != nil || largest >= limit {
		return false, err
	}
	sel, err := audience.CompileStored(ctx, st, n.WebsiteID, n.Target)
	if err != nil {
		return false, fmt.Errorf("compiling the audience: %w", err)
	}
	return audience.Reaches(ctx, st, sel, limit)
}
