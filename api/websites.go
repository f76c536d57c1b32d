package api

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/relaybell/relaybell/accounts"
	"github.com/relaybell/relaybell/notification"
	"github.com/relaybell/relaybell/store"
)

// websiteRoutes are a signed-in person's websites and their accounts'
// members (RelayBell's own routes, in the OpenAPI document). Websites are
// named by id; members by the website's project, as every session call.
func (a *API) websiteRoutes(rt *router) {
	rt.add(&route{method: http.MethodGet, pattern: "/api/v1/websites", auth: authSession, handle: a.handleListWebsites})
	rt.add(&route{method: http.MethodPost, pattern: "/api/v1/websites", auth: authSession, handle: a.handleCreateWebsite})
	rt.add(&route{method: http.MethodPut, pattern: "/api/v1/websites/{id}", auth: authSession, handle: a.handleUpdateWebsite})
	rt.add(&route{method: http.MethodDelete, pattern: "/api/v1/websites/{id}", auth: authSession, handle: a.handleDeleteWebsite})
	member := func(method, path, role string, h func(*request) error) {
		rt.add(&route{method: method, pattern: path, auth: authKey, sessionOnly: true, role: role, handle: h})
	}
	member(http.MethodGet, "/api/v1/members", store.RoleViewer, a.handleListMembers)
	member(http.MethodPost, "/api/v1/members", store.RoleOwner, a.handleInviteMember)
	member(http.MethodPut, "/api/v1/members/{userId}", store.RoleOwner, a.handleSetMemberRole)
	member(http.MethodDelete, "/api/v1/members/{userId}", store.RoleOwner, a.handleRemoveMember)
	member(http.MethodDelete, "/api/v1/members/invites/{email}", store.RoleOwner, a.handleRemoveInvite)
}

// handleListWebsites serves GET /api/v1/websites: the websites of every
// account the person is a member of, with their role.
func (a *API) handleListWebsites(r *request) error {
	me, err := a.me(r)
	if err != nil {
		return err
	}
	return r.json(http.StatusOK, map[string][]myWebsiteView{"websites": me.Websites})
}

// websiteRequest is the body of POST and PUT /websites. accountId names
// the account of a new website; by default the person's own (the first
// they own).
type websiteRequest struct {
	Name      *string `json:"name"`
	URL       *string `json:"url"`
	Timezone  *string `json:"timezone"`
	AccountID *string `json:"accountId"`
}

func orEmpty(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// handleCreateWebsite serves POST /api/v1/websites: 201 with the website,
// its Project ID and VAPID public key. It makes no API key (spec 5, rule
// 2): the person makes one with POST /keys.
func (a *API) handleCreateWebsite(r *request) error {
	if err := verified(r); err != nil {
		return err
	}
	var in websiteRequest
	if err := decodeJSON(r.fc.Request.Body(), &in, strict); err != nil {
		return err
	}
	accountID, role, err := a.accountFor(r, orEmpty(in.AccountID))
	if err != nil {
		return err
	}
	if !roleAllows(role, store.RoleAdmin) {
		return insufficientRole(store.RoleAdmin)
	}
	acc, err := a.st.Account(r.ctx, accountID)
	if err != nil {
		return err
	}
	if acc.Suspended {
		return errCode(CodeAccountSuspended)
	}
	w, err := newWebsite(accountID, orEmpty(in.Name), orEmpty(in.URL), orEmpty(in.Timezone), r.now)
	if err != nil {
		return err
	}
	if err := a.st.CreateWebsite(r.ctx, acc, w, store.APIKey{}); err != nil {
		return fmt.Errorf("creating website: %w", err)
	}
	a.log.Info("website created", "request_id", r.id, "account_id", accountID, "website_id", w.ID, "user_id", r.session.User.ID)
	return r.json(http.StatusCreated, map[string]myWebsiteView{"website": newMyWebsiteView(w, role)})
}

// accountFor is the account a new website goes to, and the person's role
// in it: the one named, of which they must be a member (not_found
// otherwise), or their first as owner, else their first.
func (a *API) accountFor(r *request, accountID string) (string, string, error) {
	ms, err := a.st.Memberships(r.ctx, r.session.User.ID)
	if err != nil {
		return "", "", err
	}
	if accountID != "" {
		for _, m := range ms {
			if strings.EqualFold(m.AccountID, accountID) {
				return m.AccountID, m.Role, nil
			}
		}
		return "", "", errorf(CodeNotFound, "no such account")
	}
	for _, m := range ms {
		if m.Role == store.RoleOwner {
			return m.AccountID, m.Role, nil
		}
	}
	if len(ms) == 0 {
		return "", "", errorf(CodeNotFound, "no account: ask to be invited to one")
	}
	return ms[0].AccountID, ms[0].Role, nil
}

// memberWebsite loads the website {id} and the person's role in its
// account, refusing one they are not a member of as not_found, and a role
// below need.
func (a *API) memberWebsite(r *request, need string) (store.Website, error) {
	if err := verified(r); err != nil {
		return store.Website{}, err
	}
	id := r.param("id")
	if !isUUID(id) {
		return store.Website{}, errCode(CodeNotFound)
	}
	w, err := a.st.Website(r.ctx, id)
	if err := a.enter(r, w, err, need, errCode(CodeNotFound)); err != nil {
		return store.Website{}, err
	}
	return w, nil
}

// handleUpdateWebsite serves PUT /api/v1/websites/{id}: name, url and
// timezone, each when given; admin or owner.
func (a *API) handleUpdateWebsite(r *request) error {
	w, err := a.memberWebsite(r, store.RoleAdmin)
	if err != nil {
		return err
	}
	var in websiteRequest
	if err := decodeJSON(r.fc.Request.Body(), &in, strict); err != nil {
		return err
	}
	if in.AccountID != nil {
		return errorf(CodeUnknownField, "a website cannot move to another account")
	}
	if in.Name == nil && in.URL == nil && in.Timezone == nil {
		return errorf(CodeNothingToUpdate, "give name, url or timezone")
	}
	// Validate everything first: a mistake changes nothing.
	name, url, tz := w.Name, w.URL, w.Timezone
	var apiErr *Error
	if in.Name != nil {
		if name, apiErr = websiteName(*in.Name); apiErr != nil {
			return apiErr
		}
	}
	if in.URL != nil {
		if url, apiErr = websiteURL(*in.URL); apiErr != nil {
			return apiErr
		}
	}
	if in.Timezone != nil {
		tz = strings.TrimSpace(*in.Timezone)
		if !validTimezone(tz) {
			return errorf(CodeInvalidTZ, "unknown time zone %q", tz)
		}
	}
	w, err = a.st.EditWebsite(r.ctx, w.ID, name, url, tz)
	if errors.Is(err, store.ErrNotFound) {
		return errCode(CodeNotFound)
	}
	if err != nil {
		return err
	}
	a.keys.purge() // the key cache holds the website
	return r.json(http.StatusOK, map[string]myWebsiteView{"website": newMyWebsiteView(w, r.session.Role)})
}

// handleDeleteWebsite serves DELETE /api/v1/websites/{id}: the website and
// everything of it (keys, subscribers, notifications, webhooks) go; owner
// only.
func (a *API) handleDeleteWebsite(r *request) error {
	w, err := a.memberWebsite(r, store.RoleOwner)
	if err != nil {
		return err
	}
	if err := a.st.DeleteWebsite(r.ctx, w.ID); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return errCode(CodeNotFound)
		}
		return err
	}
	a.keys.purge()
	a.log.Info("website deleted", "request_id", r.id, "website_id", w.ID, "user_id", r.session.User.ID)
	return r.json(http.StatusOK, okBody)
}

// memberView is a member of an account; inviteView an invite waiting.
type memberView struct {
	UserID    string `json:"userId"`
	Email     string `json:"email"`
	Name      string `json:"name"`
	Role      string `json:"role"`
	CreatedAt string `json:"created_at"`
}

type inviteView struct {
	Email     string `json:"email"`
	Role      string `json:"role"`
	CreatedAt string `json:"created_at"`
}

// handleListMembers serves GET /api/v1/members: the members of the named
// website's account and the invites waiting.
func (a *API) handleListMembers(r *request) error {
	accountID := r.owner.Account.ID
	ms, err := a.st.Members(r.ctx, accountID)
	if err != nil {
		return err
	}
	is, err := a.st.Invites(r.ctx, accountID)
	if err != nil {
		return err
	}
	members := make([]memberView, 0, len(ms))
	for _, m := range ms {
		members = append(members, memberView{UserID: m.UserID, Email: m.Email, Name: m.Name, Role: m.Role,
			CreatedAt: m.CreatedAt.UTC().Format(notification.TimeLayout)})
	}
	invites := make([]inviteView, 0, len(is))
	for _, i := range is {
		invites = append(invites, inviteView{Email: i.Email, Role: i.Role, CreatedAt: i.CreatedAt.UTC().Format(notification.TimeLayout)})
	}
	return r.json(http.StatusOK, map[string]any{"members": members, "invites": invites})
}

// memberRequest is the body of POST /members and PUT /members/{userId}.
type memberRequest struct {
	Email *string `json:"email"`
	Role  string  `json:"role"`
}

func checkRole(role string) error {
	if _, ok := roleRank[role]; !ok {
		return errorf(CodeInvalidRole, "role must be owner, admin or viewer")
	}
	return nil
}

// handleInviteMember serves POST /api/v1/members {email, role}: an invite
// to the address, mailed; it becomes a membership when the person verifies
// that address or signs in with it (accounts.Invite). 201 with the invite.
func (a *API) handleInviteMember(r *request) error {
	var in memberRequest
	if err := decodeJSON(r.fc.Request.Body(), &in, strict); err != nil {
		return err
	}
	email, err := accounts.NormalizeEmail(orEmpty(in.Email))
	if err != nil {
		return authFail(r, err)
	}
	if err := checkRole(in.Role); err != nil {
		return err
	}
	acc := r.owner.Account
	if u, err := a.st.UserByEmail(r.ctx, email); err == nil {
		if _, err := a.st.Role(r.ctx, u.ID, acc.ID); err == nil {
			return errorf(CodeNothingToChange, "%s is a member already: change their role instead", email)
		}
	} else if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	inv := store.Invite{AccountID: acc.ID, Email: email, Role: in.Role, CreatedAt: r.now}
	if err := a.accounts.Invite(r.ctx, inv, r.session.User.Email, r.owner.Website.Name, a.client(r)); err != nil {
		return authFail(r, err)
	}
	a.log.Info("member invited", "request_id", r.id, "account_id", acc.ID, "role", in.Role, "user_id", r.session.User.ID)
	return r.json(http.StatusCreated, map[string]inviteView{"invite": {Email: email, Role: in.Role,
		CreatedAt: r.now.UTC().Format(notification.TimeLayout)}})
}

// handleSetMemberRole serves PUT /api/v1/members/{userId} {role}.
func (a *API) handleSetMemberRole(r *request) error {
	var in memberRequest
	if err := decodeJSON(r.fc.Request.Body(), &in, strict); err != nil {
		return err
	}
	if in.Email != nil {
		return errorf(CodeUnknownField, "email cannot change: invite the address instead")
	}
	if err := checkRole(in.Role); err != nil {
		return err
	}
	userID := r.param("userId")
	if _, err := a.st.Role(r.ctx, userID, r.owner.Account.ID); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return errCode(CodeNotFound)
		}
		return err
	}
	err := a.st.SetMember(r.ctx, store.Member{AccountID: r.owner.Account.ID, UserID: userID, Role: in.Role, CreatedAt: r.now})
	if err != nil {
		return memberFail(err)
	}
	return r.json(http.StatusOK, okBody)
}

// handleRemoveMember serves DELETE /api/v1/members/{userId}.
func (a *API) handleRemoveMember(r *request) error {
	if err := a.st.RemoveMember(r.ctx, r.owner.Account.ID, r.param("userId")); err != nil {
		return memberFail(err)
	}
	return r.json(http.StatusOK, okBody)
}

// handleRemoveInvite serves DELETE /api/v1/members/invites/{email}.
func (a *API) handleRemoveInvite(r *request) error {
	email, err := accounts.NormalizeEmail(r.param("email"))
	if err != nil {
		return errCode(CodeNotFound)
	}
	if err := a.st.RemoveInvite(r.ctx, r.owner.Account.ID, email); err != nil {
		return memberFail(err)
	}
	return r.json(http.StatusOK, okBody)
}

// memberFail maps the store's answers to a membership change.
func memberFail(err error) error {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return errCode(CodeNotFound)
	case errors.Is(err, store.ErrConflict):
		return errorf(CodeLastOwner, "an account keeps at least one owner")
	}
	return err
}
