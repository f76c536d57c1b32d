package api

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/notification"
	"github.com/relaybell/relaybell/store"
)

// API key format (DESIGN.md): the live prefix and random base62 characters.
const (
	KeyPrefix        = "rb_live_"
	keyRandomChars   = 40
	keyListPrefixLen = 12
	maxKeyNameChars  = 60
	defaultKeyName   = "API key"
	maxKeyLifetime   = 3 // years (spec 4.7, 8.2)
)

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// NewAPIKey makes a key for a website: the secret to show once, and the
// record to store (hash and prefix only). Scopes must already be valid
// (see NormalizeScopes); name is used as given.
func NewAPIKey(websiteID, name string, scopes []string, expiresAt *time.Time, now time.Time) (secret string, k store.APIKey, err error) {
	var sb strings.Builder
	sb.Grow(len(KeyPrefix) + keyRandomChars)
	sb.WriteString(KeyPrefix)
	var buf [64]byte
	for sb.Len() < len(KeyPrefix)+keyRandomChars {
		if _, err := rand.Read(buf[:]); err != nil {
			return "", store.APIKey{}, fmt.Errorf("generating api key: %w", err)
		}
		for _, b := range buf {
			// 248 = 4*62: rejecting above it keeps every character equally likely.
			if b < 248 && sb.Len() < len(KeyPrefix)+keyRandomChars {
				sb.WriteByte(base62[b%62])
			}
		}
	}
	secret = sb.String()
	sum := sha256.Sum256([]byte(secret))
	var exp *time.Time
	if expiresAt != nil {
		t := expiresAt.UTC()
		exp = &t
	}
	k = store.APIKey{
		ID:        uuid.NewString(),
		WebsiteID: websiteID,
		Name:      name,
		Prefix:    secret[:keyListPrefixLen],
		Hash:      hex.EncodeToString(sum[:]),
		Scopes:    slices.Clone(scopes),
		ExpiresAt: exp,
		CreatedAt: now.UTC(),
	}
	return secret, k, nil
}

// NormalizeScopes applies spec 4.7: no scopes means ['full'], a list
// holding full becomes ['full'], duplicates go, and an unknown scope is 400
// invalid_scopes.
func NormalizeScopes(in []string) ([]string, *Error) {
	if len(in) == 0 {
		return []string{ScopeFull}, nil
	}
	known := Scopes()
	var out []string
	for _, s := range in {
		if !slices.Contains(known, s) {
			return nil, errorf(CodeInvalidScopes, "unknown scope %q", s)
		}
		if s == ScopeFull {
			return []string{ScopeFull}, nil
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out, nil
}

// normalizeKeyName trims a key name, defaults it and cuts it to 60 characters.
func normalizeKeyName(name string) string {
	return trimmedName(name, defaultKeyName, maxKeyNameChars)
}

// trimmedName is name without surrounding spaces and cut to max
// characters, or def when it is blank.
func trimmedName(name, def string, max int) string {
	name = strings.TrimSpace(name)
	if name == "" {
		return def
	}
	return strings.TrimSpace(cutRunes(name, max))
}

// cutRunes cuts s to at most n characters.
func cutRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}

// parseExpiry reads expiresAt: null or absent is no expiry; otherwise an
// ISO date-time (or date, meaning its start in UTC) in the future and at
// most 3 years ahead, else 400 invalid_expiry.
func parseExpiry(raw json.RawMessage, now time.Time) (*time.Time, *Error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, errorf(CodeInvalidExpiry, "expiresAt must be an ISO date or null")
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		if t, err = time.Parse(time.DateOnly, s); err != nil {
			return nil, errorf(CodeInvalidExpiry, "expiresAt must be an ISO date or null")
		}
	}
	if !t.After(now) {
		return nil, errorf(CodeInvalidExpiry, "expiresAt must be in the future")
	}
	if t.After(now.AddDate(maxKeyLifetime, 0, 0)) {
		return nil, errorf(CodeInvalidExpiry, "expiresAt must be within 3 years")
	}
	t = t.UTC()
	return &t, nil
}

// KeyView is the listed form of an API key (spec 2.11).
type KeyView struct {
	ID         string   `json:"id"`
	Prefix     string   `json:"prefix"`
	Name       string   `json:"name"`
	Scopes     []string `json:"scopes"`
	ExpiresAt  *string  `json:"expires_at"`
	CreatedAt  string   `json:"created_at"`
	LastUsedAt *string  `json:"last_used_at"`
	Expired    bool     `json:"expired"`
	Current    bool     `json:"current"`
}

// NewKeyView shows k; current says whether k is the key making the call.
func NewKeyView(k store.APIKey, current bool, now time.Time) KeyView {
	scopes := k.Scopes
	if len(scopes) == 0 {
		scopes = []string{ScopeFull}
	}
	return KeyView{
		ID:         k.ID,
		Prefix:     k.Prefix,
		Name:       k.Name,
		Scopes:     scopes,
		ExpiresAt:  notification.TimeOrNil(k.ExpiresAt),
		CreatedAt:  k.CreatedAt.UTC().Format(notification.TimeLayout),
		LastUsedAt: notification.TimeOrNil(k.LastUsedAt),
		Expired:    k.ExpiresAt != nil && !k.ExpiresAt.After(now),
		Current:    current,
	}
}

// timeString writes a date-time the way every API answer does, or null.

// keyRequest is the body of POST /keys and of POST
// /admin/v1/websites/{websiteId}/keys (spec 4.7). preset "cms" is the CMS
// plugin's key (spec 5, rule 6): send and events:write only.
type keyRequest struct {
	Name      *string         `json:"name"`
	Scopes    json.RawMessage `json:"scopes"`
	ExpiresAt json.RawMessage `json:"expiresAt"`
	Preset    *string         `json:"preset"`
}

// presetCMS is the preset of the CMS plugin's key.
const presetCMS = "cms"

// createKey reads a key request, stores the key for websiteID and answers
// 201 {apiKey, key}: the only time the key is visible.
func (a *API) createKey(r *request, websiteID string) error {
	var in keyRequest
	if body := bytes.TrimSpace(r.fc.Request.Body()); len(body) > 0 {
		if err := decodeJSON(body, &in, strict); err != nil {
			return err
		}
	}
	var scopes []string
	if raw := bytes.TrimSpace(in.Scopes); len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &scopes); err != nil {
			return errorf(CodeInvalidScopes, "scopes must be an array of strings")
		}
	}
	name := ""
	if in.Name != nil {
		name = *in.Name
	}
	if in.Preset != nil {
		if *in.Preset != presetCMS {
			return errorf(CodeInvalidScopes, "unknown preset %q: the one preset is %q", *in.Preset, presetCMS)
		}
		if scopes != nil {
			return errorf(CodeInvalidScopes, "give a preset or scopes, not both")
		}
		scopes = []string{ScopeSend, ScopeEventsWrite}
		if strings.TrimSpace(name) == "" {
			name = "CMS plugin"
		}
	}
	scopes, apiErr := NormalizeScopes(scopes)
	if apiErr != nil {
		return apiErr
	}
	expires, apiErr := parseExpiry(in.ExpiresAt, r.now)
	if apiErr != nil {
		return apiErr
	}
	secret, key, err := NewAPIKey(websiteID, normalizeKeyName(name), scopes, expires, r.now)
	if err != nil {
		return err
	}
	if err := a.st.CreateAPIKey(r.ctx, key); err != nil {
		return fmt.Errorf("creating api key: %w", err)
	}
	a.keys.purge()
	a.log.Info("api key created", "request_id", r.id, "website_id", websiteID, "key_id", key.ID, "scopes", strings.Join(scopes, ","))
	return r.json(http.StatusCreated, map[string]any{
		"apiKey": secret,
		"key":    NewKeyView(key, false, r.now),
	})
}

// keyRoutes are the API key routes of spec 4.7.
func (a *API) keyRoutes(rt *router) {
	rt.add(&route{method: http.MethodPost, pattern: "/api/v1/keys", auth: authKey, sessionOnly: true, handle: a.handleCreateKey})
	rt.add(&route{method: http.MethodGet, pattern: "/api/v1/keys", auth: authKey, scope: ScopeFull, role: store.RoleAdmin, handle: a.handleListKeys})
	rt.add(&route{method: http.MethodDelete, pattern: "/api/v1/keys/{id}", auth: authKey, handle: a.handleRevokeKey})
}

// handleCreateKey serves POST /api/v1/keys: a dashboard session only (a
// key's call is refused before it gets here, 403 session_required).
func (a *API) handleCreateKey(r *request) error {
	return a.createKey(r, r.owner.Website.ID)
}

// handleListKeys serves GET /api/v1/keys: the website's keys, never the
// keys themselves, and every scope name.
func (a *API) handleListKeys(r *request) error {
	ks, err := a.st.APIKeys(r.ctx, r.owner.Website.ID)
	if err != nil {
		return err
	}
	views := make([]KeyView, 0, len(ks))
	for _, k := range ks {
		views = append(views, NewKeyView(k, !r.bySession() && k.ID == r.owner.Key.ID, r.now))
	}
	return r.json(http.StatusOK, map[string]any{"keys": views, "scopes": Scopes()})
}

// handleRevokeKey serves DELETE /api/v1/keys/{id}: a session revokes any
// key of the website; a key only itself, by its id or "current" (spec
// 4.7), any other id answering 403 session_required. The store moves the
// auth version, so every API node refuses the key within a poll.
func (a *API) handleRevokeKey(r *request) error {
	id := r.param("id")
	if !r.bySession() {
		if id != "current" && id != r.owner.Key.ID {
			return errorf(CodeSessionRequired, "a key may revoke only itself; revoke other keys from the dashboard")
		}
		id = r.owner.Key.ID
	}
	if !isUUID(id) {
		return errCode(CodeNotFound)
	}
	if err := a.st.RevokeAPIKey(r.ctx, r.owner.Website.ID, id, r.now); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return errCode(CodeNotFound)
		}
		return err
	}
	a.keys.purge()
	a.log.Info("api key revoked", "request_id", r.id, "website_id", r.owner.Website.ID, "key_id", id)
	return r.json(http.StatusOK, okBody)
}
