package api

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
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
	name = strings.TrimSpace(name)
	if name == "" {
		return defaultKeyName
	}
	if utf8.RuneCountInString(name) > maxKeyNameChars {
		name = strings.TrimSpace(string([]rune(name)[:maxKeyNameChars]))
	}
	return name
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
