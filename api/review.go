package api

import (
	"errors"
	"net/http"

	"github.com/relaybell/relaybell/notification"
	"github.com/relaybell/relaybell/review"
	"github.com/relaybell/relaybell/store"
)

// Review of a new account's first large broadcast (spec 3.1): the rule
// is package review's, the one the schedules and feeds apply too.
//
// Such a send is stored held_for_review; the 202's message says so. The
// operator approves (it goes out, or waits for its sendAt) or rejects (it
// fails with review_rejected) through the admin API; the customer may cancel
// it meanwhile. Once one large broadcast went out, later ones never wait.
const (
	DefaultReviewThreshold = review.DefaultThreshold
	maxHeldListed          = 100
)

// heldMessage is the 202's message for a held send.
const heldMessage = "This is the account's first large broadcast, so it is held for review. " +
	"It goes out once an operator approves it (usually within a few hours) and can be canceled meanwhile."

// needsReview applies review.Held to a checked send.
func (a *API) needsReview(r *request, req *notification.Request, n *store.Notification) (bool, error) {
	return review.Held(r.ctx, a.st, a.cfg.ReviewThreshold, r.owner.Account, req, n, r.now)
}

// heldView is one send in the operator's review list.
type heldView struct {
	notification.Item
	WebsiteID string `json:"websiteId"`
}

// handleAdminHeld serves GET /admin/v1/review: the sends waiting for
// review, oldest first.
func (a *API) handleAdminHeld(r *request) error {
	held, err := a.st.HeldForReview(r.ctx, maxHeldListed)
	if err != nil {
		return err
	}
	out := make([]heldView, 0, len(held))
	for _, n := range held {
		out = append(out, heldView{Item: notification.ListItem(n), WebsiteID: n.WebsiteID})
	}
	return r.json(http.StatusOK, map[string][]heldView{"notifications": out})
}

// reviewAction serves POST /admin/v1/notifications/{id}/approve and
// /reject. 404 not_found unless the send is held.
func (a *API) reviewAction(approve bool) func(r *request) error {
	return func(r *request) error {
		id := r.param("id")
		if !isUUID(id) {
			return errCode(CodeNotFound)
		}
		n, err := a.st.ReviewNotification(r.ctx, id, approve, r.now)
		if errors.Is(err, store.ErrNotFound) {
			return errorf(CodeNotFound, "no send held for review with this id")
		}
		if err != nil {
			return err
		}
		if n.Status == store.StatusQueued {
			a.dispatch(r, n)
		}
		a.log.Info("send reviewed", "request_id", r.id, "notification_id", id, "approved", approve, "status", n.Status)
		return r.json(http.StatusOK, map[string]any{"ok": true, "notificationId": n.ID, "status": n.Status})
	}
}
