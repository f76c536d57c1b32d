package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/relaybell/relaybell/notification"
	"github.com/relaybell/relaybell/review"
	"github.com/relaybell/relaybell/store"
)

// maxDrafts is how many drafts a website keeps (spec 3.1, 8.2).
const maxDrafts = 500

// submit validates a send request and stores it: a new send or draft, or,
// when draft is set, that draft edited (req.Draft) or going out. A queued
// send's intent is then published. size is the request's size in bytes.
// Only editing a draft is allowed before the account's e-mail is verified.
func (a *API) submit(r *request, req *notification.Request, size int, draft *store.Notification) (*store.Notification, error) {
	if err := review.Verified(r.owner.Account); err != nil && (draft == nil || !req.IsDraft()) {
		return nil, errorf(CodeEmailNotVerified, "%s", err.Error())
	}
	if req.IsDraft() {
		if size > maxDraftBytes {
			return nil, errorf(CodeDraftTooLarge, "a draft is at most %d bytes", maxDraftBytes)
		}
		if draft == nil {
			n, err := a.st.CountDrafts(r.ctx, r.owner.Website.ID)
			if err != nil {
				return nil, err
			}
			if n >= maxDrafts {
				return nil, errorf(CodeTooManyDrafts, "a website keeps at most %d drafts; send or delete some", maxDrafts)
			}
		}
	}
	if err := a.resolveTemplate(r, req); err != nil {
		return nil, err
	}
	n, err := notification.Prepare(r.ctx, req, r.owner.Website, a.st, r.now)
	if err != nil {
		return nil, fromNotificationError(err)
	}
	// Sends are counted once they passed their checks; saving a new draft
	// only reports the key's rates, editing one is no limited route.
	if draft == nil || !req.IsDraft() {
		if err := a.takeSendLimits(r, req, !req.IsDraft()); err != nil {
			return nil, err
		}
	}
	if n.Status == store.StatusQueued || n.Status == store.StatusScheduled {
		switch held, err := a.needsReview(r, req, n); {
		case err != nil:
			return nil, fmt.Errorf("deciding review: %w", err)
		case held:
			n.Status = store.StatusHeldForReview
		}
	}
	if draft == nil {
		if err := a.st.CreateNotification(r.ctx, n); err != nil {
			return nil, fmt.Errorf("storing notification: %w", err)
		}
	} else {
		n.ID = draft.ID
		if n.Status == store.StatusDraft {
			n.CreatedAt = draft.CreatedAt // an edit keeps the draft's date; a send takes its moment
		}
		switch err := a.st.ReplaceDraft(r.ctx, n); {
		case errors.Is(err, store.ErrConflict):
			return nil, errorf(CodeNotADraft, "only a draft can be changed or sent")
		case errors.Is(err, store.ErrNotFound):
			return nil, errCode(CodeNotFound)
		case err != nil:
			return nil, err
		}
	}
	if n.Status == store.StatusQueued {
		a.dispatch(r, *n)
	}
	return n, nil
}

// sendAnswerOf is the success answer of a send or a new draft; message
// says what happens next when the send does not go out at once.
func sendAnswerOf(r *request, req *notification.Request, n *store.Notification) error {
	out := sendAnswer{OK: true, NotificationID: n.ID, Status: n.Status}
	switch n.Status {
	case store.StatusDraft:
		return r.json(http.StatusCreated, out)
	case store.StatusHeldForReview:
		out.Message = heldMessage
	case store.StatusScheduled:
		w := r.owner.Website
		if t := notification.SendTiming(req, w, r.now); t.Quiet {
			out.Message = fmt.Sprintf("Held by the website's quiet hours (%s-%s, %s); it goes out at %s.",
				w.Settings.QuietHours.Start, w.Settings.QuietHours.End, w.Timezone, t.At.Format(time.RFC3339))
		}
	}
	return r.json(http.StatusAccepted, out)
}

// loadDraft reads the {id} notification: 404 not_found when it is not the
// website's, 409 not_a_draft when it is no draft.
func (a *API) loadDraft(r *request) (store.Notification, error) {
	id := r.param("id")
	if !isUUID(id) {
		return store.Notification{}, errCode(CodeNotFound)
	}
	n, err := a.st.Notification(r.ctx, r.owner.Website.ID, id)
	if errors.Is(err, store.ErrNotFound) {
		return store.Notification{}, errCode(CodeNotFound)
	}
	if err != nil {
		return store.Notification{}, fmt.Errorf("loading notification: %w", err)
	}
	if n.Status != store.StatusDraft {
		return store.Notification{}, errorf(CodeNotADraft, "only a draft can be changed, deleted or sent; this one is %s", n.Status)
	}
	return n, nil
}

// How a request body's null members apply to a draft's saved fields.
const (
	nullClears = true  // PATCH: null clears the member (spec 3.1)
	nullIsNull = false // send: the body's members go out as sent, null included
)

// mergeSendBody applies patch, send-request fields, to a draft's saved
// send body: a null member clears the saved one when nullClears, and
// replaces it with null otherwise, so that the send is checked with the
// null (a null externalIds never sends to everyone). "draft" in the patch is
// dropped (the route decides). Both are checked as send requests first.
func mergeSendBody(saved, patch []byte, clears bool) ([]byte, error) {
	if err := decodeJSON(patch, new(notification.Request), strict); err != nil {
		return nil, err
	}
	fields := map[string]json.RawMessage{}
	if len(saved) > 0 {
		if err := json.Unmarshal(saved, &fields); err != nil {
			return nil, fmt.Errorf("reading a draft's saved fields: %w", err)
		}
	}
	var changes map[string]json.RawMessage
	if err := json.Unmarshal(patch, &changes); err != nil {
		return nil, fmt.Errorf("reading a checked patch: %w", err)
	}
	for k, v := range changes {
		if clears && bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			delete(fields, k)
		} else {
			fields[k] = v
		}
	}
	delete(fields, "draft")
	return json.Marshal(fields)
}

// draftRequest is the draft's saved fields with the request body applied
// (an empty body changes nothing), as a send request, and its size.
func (a *API) draftRequest(r *request, draft store.Notification, clears bool) (*notification.Request, int, error) {
	merged := draft.SendBody
	if body := bytes.TrimSpace(r.fc.Request.Body()); len(body) > 0 {
		var err error
		if merged, err = mergeSendBody(draft.SendBody, body, clears); err != nil {
			return nil, 0, err
		}
	}
	req := new(notification.Request)
	if len(merged) > 0 {
		if err := decodeJSON(merged, req, strict); err != nil {
			return nil, 0, fmt.Errorf("reading a draft's saved fields: %w", err)
		}
	}
	return req, len(merged), nil
}

// handlePatchDraft serves PATCH /api/v1/notifications/{id}.
func (a *API) handlePatchDraft(r *request) error {
	draft, err := a.loadDraft(r)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(r.fc.Request.Body())) == 0 {
		return errorf(CodeInvalidJSON, "a JSON object body is required")
	}
	req, size, err := a.draftRequest(r, draft, nullClears)
	if err != nil {
		return err
	}
	yes := true
	req.Draft = &yes
	n, err := a.submit(r, req, size, &draft)
	if err != nil {
		return err
	}
	return r.json(http.StatusOK, struct {
		OK             bool            `json:"ok"`
		NotificationID string          `json:"notificationId"`
		Status         string          `json:"status"`
		SendBody       json.RawMessage `json:"sendBody"`
	}{true, n.ID, n.Status, n.SendBody})
}

// handleSendDraft serves POST /api/v1/notifications/{id}/send.
func (a *API) handleSendDraft(r *request) error {
	draft, err := a.loadDraft(r)
	if err != nil {
		return err
	}
	req, size, err := a.draftRequest(r, draft, nullIsNull)
	if err != nil {
		return err
	}
	n, err := a.submit(r, req, size, &draft)
	if err != nil {
		return err
	}
	return sendAnswerOf(r, req, n)
}

// handleDeleteDraft serves DELETE /api/v1/notifications/{id}.
func (a *API) handleDeleteDraft(r *request) error {
	id := r.param("id")
	if !isUUID(id) {
		return errCode(CodeNotFound)
	}
	switch err := a.st.DeleteDraft(r.ctx, r.owner.Website.ID, id); {
	case errors.Is(err, store.ErrConflict):
		return errorf(CodeNotADraft, "only a draft can be deleted")
	case errors.Is(err, store.ErrNotFound):
		return errCode(CodeNotFound)
	case err != nil:
		return err
	}
	return r.json(http.StatusOK, map[string]bool{"ok": true, "deleted": true})
}

// handleCancel serves POST /api/v1/notifications/{id}/cancel: a scheduled
// or held send becomes canceled; anything else is 404 not_scheduled.
func (a *API) handleCancel(r *request) error {
	id := r.param("id")
	if !isUUID(id) {
		return errCode(CodeNotFound)
	}
	err := a.st.CancelNotification(r.ctx, r.owner.Website.ID, id, r.now)
	if errors.Is(err, store.ErrNotFound) {
		return errorf(CodeNotScheduled, "only a scheduled or held send can be canceled")
	}
	if err != nil {
		return err
	}
	return r.json(http.StatusOK, map[string]bool{"ok": true, "canceled": true})
}
