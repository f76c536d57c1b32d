package api

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestNewAPIKey(t *testing.T) {
	exp := testStart.Add(time.Hour).In(time.FixedZone("X", 3600))
	seen := map[string]bool{}
	for range 100 {
		secret, k, err := NewAPIKey("w1", "n", []string{ScopeSend}, &exp, testStart)
		if err != nil {
			t.Fatal(err)
		}
		if !regexp.MustCompile(`^rb_live_[0-9A-Za-z]{40}$`).MatchString(secret) {
			t.Fatalf("secret %q", secret)
		}
		if seen[secret] {
			t.Fatal("repeated secret")
		}
		seen[secret] = true
		if k.Prefix != secret[:12] || k.Hash != hashOf(secret) || k.WebsiteID != "w1" || !isUUID(k.ID) ||
			!slices.Equal(k.Scopes, []string{"send"}) || !k.ExpiresAt.Equal(exp) || k.ExpiresAt.Location() != time.UTC ||
			!k.CreatedAt.Equal(testStart) || k.LastUsedAt != nil || k.RevokedAt != nil {
			t.Fatalf("key %+v", k)
		}
	}
}

func TestNormalizeScopes(t *testing.T) {
	f := func(in []string, want string, code string) {
		t.Helper()
		got, err := NormalizeScopes(in)
		if code != "" {
			if err == nil || err.Code != code {
				t.Errorf("%v: err %v, want %s", in, err, code)
			}
			return
		}
		if err != nil || strings.Join(got, ",") != want {
			t.Errorf("%v: %v %v, want %s", in, got, err, want)
		}
	}
	f(nil, "full", "")
	f([]string{}, "full", "")
	f([]string{"send", "full"}, "full", "")
	f([]string{"send", "events:write", "send"}, "send,events:write", "")
	f([]string{"webhooks:write"}, "webhooks:write", "")
	f([]string{"SEND"}, "", "invalid_scopes")
	f([]string{""}, "", "invalid_scopes")
}

func TestParseExpiry(t *testing.T) {
	f := func(raw string, want string, code string) {
		t.Helper()
		got, err := parseExpiry(json.RawMessage(raw), testStart)
		if code != "" {
			if err == nil || err.Code != code {
				t.Errorf("%s: err %v, want %s", raw, err, code)
			}
			return
		}
		if err != nil {
			t.Errorf("%s: %v", raw, err)
			return
		}
		s := "nil"
		if got != nil {
			s = got.Format(time.RFC3339)
		}
		if s != want {
			t.Errorf("%s: %s, want %s", raw, s, want)
		}
	}
	f(``, "nil", "")
	f(`null`, "nil", "")
	f(`"2026-03-02"`, "2026-03-02T00:00:00Z", "")
	f(`"2026-03-01T13:00:00+02:00"`, "", "invalid_expiry") // 11:00 UTC, past
	f(`"2026-03-01T15:00:00+02:00"`, "2026-03-01T13:00:00Z", "")
	f(`"2029-03-01T12:00:00Z"`, "2029-03-01T12:00:00Z", "") // exactly 3 years
	f(`"2029-03-01T12:00:01Z"`, "", "invalid_expiry")
	f(`"2026-03-01"`, "", "invalid_expiry")
	f(`""`, "", "invalid_expiry")
	f(`true`, "", "invalid_expiry")
}

func TestNormalizeKeyName(t *testing.T) {
	f := func(in, want string) {
		t.Helper()
		if got := normalizeKeyName(in); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
	f("", "API key")
	f("   ", "API key")
	f(" CMS ", "CMS")
	f(strings.Repeat("é", 70), strings.Repeat("é", 60))
}
