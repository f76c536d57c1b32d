package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/mail"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/notification"
	"github.com/relaybell/relaybell/store"
	"github.com/relaybell/relaybell/webpush"
)

// NewWebsite is the body of POST /admin/v1/websites and the input of
// `relaybell admin website create`.
type NewWebsite struct {
	Name          string `json:"name"`
	URL           string `json:"url"`
	OwnerEmail    string `json:"ownerEmail,omitempty"`
	EmailVerified *bool  `json:"emailVerified,omitempty"` // default true
	Timezone      string `json:"timezone,omitempty"`      // default "UTC"
}

// WebsiteCreated is the answer to a website creation. APIKey (scope full)
// is shown only here.
type WebsiteCreated struct {
	AccountID      string `json:"accountId"`
	WebsiteID      string `json:"websiteId"`
	ProjectID      string `json:"projectId"`
	APIKey         string `json:"apiKey"`
	VAPIDPublicKey string `json:"vapidPublicKey"`
}

const maxWebsiteNameChars = 200

// CreateWebsite validates in and stores a new account with one website, its
// VAPID key pair, a public project id and a full-scope API key. Validation
// failures are *Error (name_required, invalid_url, invalid_tz, invalid_json).
func CreateWebsite(ctx context.Context, st store.Accounts, in NewWebsite, now time.Time) (WebsiteCreated, error) {
	email := strings.TrimSpace(in.OwnerEmail)
	if email != "" {
		if addr, err := mail.ParseAddress(email); err != nil || addr.Address != email {
			return WebsiteCreated{}, errorf(CodeInvalidJSON, "ownerEmail is not an e-mail address")
		}
	}
	now = now.UTC()
	acc := store.Account{
		ID:            uuid.NewString(),
		OwnerEmail:    email,
		EmailVerified: in.EmailVerified == nil || *in.EmailVerified,
		CreatedAt:     now,
	}
	w, err := newWebsite(acc.ID, in.Name, in.URL, in.Timezone, now)
	if err != nil {
		return WebsiteCreated{}, err
	}
	secret, key, err := NewAPIKey(w.ID, defaultKeyName, []string{ScopeFull}, nil, now)
	if err != nil {
		return WebsiteCreated{}, err
	}
	if err := st.CreateWebsite(ctx, acc, w, key); err != nil {
		return WebsiteCreated{}, fmt.Errorf("creating website: %w", err)
	}
	return WebsiteCreated{
		AccountID:      acc.ID,
		WebsiteID:      w.ID,
		ProjectID:      w.ProjectID,
		APIKey:         secret,
		VAPIDPublicKey: w.VAPIDPublicKey,
	}, nil
}

// newWebsite validates a website's name, URL and time zone (default UTC)
// and makes its record for accountID: ids, a VAPID key pair, a commerce
// secret. Failures are *Error (name_required, invalid_url, invalid_tz).
func newWebsite(accountID, name, rawURL, tz string, now time.Time) (store.Website, error) {
	name, apiErr := websiteName(name)
	if apiErr != nil {
		return store.Website{}, apiErr
	}
	siteURL, apiErr := websiteURL(rawURL)
	if apiErr != nil {
		return store.Website{}, apiErr
	}
	tz = strings.TrimSpace(tz)
	if tz == "" {
		tz = "UTC"
	}
	if !validTimezone(tz) {
		return store.Website{}, errorf(CodeInvalidTZ, "unknown time zone %q", tz)
	}
	vapid, err := webpush.GenerateVAPIDKey()
	if err != nil {
		return store.Website{}, fmt.Errorf("generating vapid key: %w", err)
	}
	return store.Website{
		ID:              uuid.NewString(),
		AccountID:       accountID,
		ProjectID:       uuid.NewString(),
		Name:            name,
		URL:             siteURL,
		Timezone:        tz,
		VAPIDPublicKey:  vapid.PublicKey(),
		VAPIDPrivateKey: vapid.PrivateKey(),
		Settings:        store.Settings{CommerceSecret: newCommerceSecret()},
		CreatedAt:       now.UTC(),
	}, nil
}

// websiteName trims a website's name, required, and cuts it to 200
// characters.
func websiteName(name string) (string, *Error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return "", errorf(CodeNameRequired, "name is required")
	}
	return cutRunes(name, maxWebsiteNameChars), nil
}

// websiteURL accepts an absolute http(s) URL with a host (the check of
// every link, notification.IsHTTPURL), no user info, and at most 2,048
// bytes.
func websiteURL(raw string) (string, *Error) {
	raw = strings.TrimSpace(raw)
	if u, err := url.Parse(raw); !notification.IsHTTPURL(raw) || err != nil || u.User != nil || len(raw) > 2048 {
		return "", errorf(CodeInvalidURL, "url must be an absolute http(s) URL")
	}
	return raw, nil
}

// validTimezone accepts IANA zone names (not "Local").
func validTimezone(tz string) bool {
	_, ok := loadTimezone(tz)
	return ok
}

// loadTimezone loads an IANA zone by name (not "Local").
func loadTimezone(tz string) (*time.Location, bool) {
	if tz == "" || tz == "Local" || len(tz) > 64 {
		return nil, false
	}
	loc, err := time.LoadLocation(tz)
	return loc, err == nil
}

// tzArg reads the tz query parameter, def when absent; a bad one is 400
// invalid_tz.
func tzArg(r *request, def string) (*time.Location, *Error) {
	args := r.fc.QueryArgs()
	if !args.Has("tz") {
		if loc, ok := loadTimezone(def); ok {
			return loc, nil
		}
		return time.UTC, nil
	}
	tz := string(args.Peek("tz"))
	loc, ok := loadTimezone(tz)
	if !ok {
		return nil, errorf(CodeInvalidTZ, "unknown time zone %q", tz)
	}
	return loc, nil
}

// handleAdminCreateWebsite serves POST /admin/v1/websites.
func (a *API) handleAdminCreateWebsite(r *request) error {
	var in NewWebsite
	if err := decodeJSON(r.fc.Request.Body(), &in, strict); err != nil {
		return err
	}
	out, err := CreateWebsite(r.ctx, a.st, in, r.now)
	if err != nil {
		return err
	}
	a.log.Info("website created", "request_id", r.id, "account_id", out.AccountID, "website_id", out.WebsiteID)
	return r.json(http.StatusCreated, out)
}

// handleAdminCreateKey serves POST /admin/v1/websites/{websiteId}/keys.
func (a *API) handleAdminCreateKey(r *request) error {
	websiteID := r.param("websiteId")
	if !isUUID(websiteID) {
		return errCode(CodeNotFound)
	}
	if _, err := a.st.Website(r.ctx, websiteID); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return errCode(CodeNotFound)
		}
		return fmt.Errorf("loading website: %w", err)
	}
	return a.createKey(r, websiteID)
}

// accountAction serves POST /admin/v1/accounts/{accountId}/<action>. Every
// change purges the key cache so it holds on this node at once; the store
// moves its auth version with the change, so other nodes drop theirs
// within Config.AuthPoll (authwatch.go).
func (a *API) accountAction(action string, change func(ctx context.Context, id string) error) func(r *request) error {
	return func(r *request) error {
		id := r.param("accountId")
		if !isUUID(id) {
			return errCode(CodeNotFound)
		}
		if _, err := a.st.Account(r.ctx, id); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return errCode(CodeNotFound)
			}
			return fmt.Errorf("loading account: %w", err)
		}
		if err := change(r.ctx, id); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return errCode(CodeNotFound)
			}
			return fmt.Errorf("%s account: %w", action, err)
		}
		a.keys.purge()
		a.log.Info("account changed", "request_id", r.id, "account_id", id, "action", action)
		return r.json(http.StatusOK, okBody)
	}
}

func (a *API) adminRoutes(rt *router) {
	if a.cfg.AdminToken == "" {
		return
	}
	add := func(path string, h func(*request) error) {
		rt.add(&route{method: http.MethodPost, pattern: path, auth: authAdmin, handle: h})
	}
	add("/admin/v1/websites", a.handleAdminCreateWebsite)
	add("/admin/v1/websites/{websiteId}/keys", a.handleAdminCreateKey)
	add("/admin/v1/accounts/{accountId}/suspend", a.accountAction("suspending",
		func(ctx context.Context, id string) error { return a.st.SetAccountSuspended(ctx, id, true) }))
	add("/admin/v1/accounts/{accountId}/unsuspend", a.accountAction("unsuspending",
		func(ctx context.Context, id string) error { return a.st.SetAccountSuspended(ctx, id, false) }))
	add("/admin/v1/accounts/{accountId}/verify-email", a.accountAction("verifying",
		a.st.SetAccountEmailVerified))
	rt.add(&route{method: http.MethodGet, pattern: "/admin/v1/review", auth: authAdmin, handle: a.handleAdminHeld})
	add("/admin/v1/notifications/{id}/approve", a.reviewAction(true))
	add("/admin/v1/notifications/{id}/reject", a.reviewAction(false))
	rt.add(&route{method: http.MethodGet, pattern: "/admin/v1/emails", auth: authAdmin, handle: a.handleAdminEmails})
}

// maxEmailsListed bounds one read of the e-mail outbox.
const maxEmailsListed = 100

// emailView is a message of the e-mail outbox.
type emailView struct {
	ID      string `json:"id"`
	To      string `json:"to"`
	Subject string `json:"subject"`
	Body    string `json:"body"`
	// ContentType is the body's MIME type when it is not plain text (a
	// report's multipart/related).
	ContentType string  `json:"contentType,omitempty"`
	CreatedAt   string  `json:"created_at"`
	SentAt      *string `json:"sent_at"`
}

// handleAdminEmails serves GET /admin/v1/emails: the e-mail outbox, newest
// first, up to 100 (unsent=true: only those not sent yet). Without an SMTP
// relay this is where the operator reads the owners' mail.
func (a *API) handleAdminEmails(r *request) error {
	unsent := string(r.fc.QueryArgs().Peek("unsent")) == "true"
	ms, err := a.st.Emails(r.ctx, unsent, maxEmailsListed)
	if err != nil {
		return err
	}
	out := make([]emailView, 0, len(ms))
	for _, m := range ms {
		out = append(out, emailView{ID: m.ID, To: m.To, Subject: m.Subject, Body: m.Body, ContentType: m.ContentType,
			CreatedAt: m.CreatedAt.UTC().Format(notification.TimeLayout), SentAt: notification.TimeOrNil(m.SentAt)})
	}
	return r.json(http.StatusOK, map[string][]emailView{"emails": out})
}

// okBody is {"ok": true}.
var okBody = map[string]bool{"ok": true}

// isUUID accepts only the 36-character form (notification.IsUUID).
func isUUID(s string) bool { return notification.IsUUID(s) }
