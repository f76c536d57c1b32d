package api

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/relaybell/relaybell/store"
)

func TestAdminCreateWebsite(t *testing.T) {
	h := newHarness(t)
	admin := auth(testAdminToken)
	r := h.do("POST", "/admin/v1/websites", `{"name":" Blog ","url":"https://blog.example/","ownerEmail":"o@blog.example","emailVerified":false,"timezone":"Europe/Berlin"}`, admin...)
	if r.status != 201 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	var out WebsiteCreated
	if err := json.Unmarshal(r.body, &out); err != nil {
		t.Fatal(err)
	}
	if !isUUID(out.AccountID) || !isUUID(out.WebsiteID) || !isUUID(out.ProjectID) {
		t.Errorf("ids %+v", out)
	}
	if !regexp.MustCompile(`^rb_live_[0-9A-Za-z]{40}$`).MatchString(out.APIKey) {
		t.Errorf("api key %q", out.APIKey)
	}
	if pub, err := base64.RawURLEncoding.DecodeString(out.VAPIDPublicKey); err != nil || len(pub) != 65 {
		t.Errorf("vapid public key %q: %v", out.VAPIDPublicKey, err)
	}
	w, err := h.st.Website(context.Background(), out.WebsiteID)
	if err != nil || w.Name != "Blog" || w.URL != "https://blog.example/" || w.Timezone != "Europe/Berlin" ||
		w.ProjectID != out.ProjectID || w.VAPIDPrivateKey == "" || w.VAPIDPublicKey != out.VAPIDPublicKey {
		t.Errorf("website %+v (%v)", w, err)
	}
	acc, _ := h.st.Account(context.Background(), out.AccountID)
	if acc.EmailVerified || acc.OwnerEmail != "o@blog.example" {
		t.Errorf("account %+v", acc)
	}
	owner, err := h.st.KeyOwner(context.Background(), hashOf(out.APIKey))
	if err != nil || owner.Key.Prefix != out.APIKey[:12] || len(owner.Key.Scopes) != 1 || owner.Key.Scopes[0] != "full" {
		t.Errorf("key %+v (%v)", owner.Key, err)
	}
	// The new key works, and the account is unverified so sends are refused.
	expectError(t, h.do("POST", "/api/v1/notifications", `{"title":"hi"}`, auth(out.APIKey)...), 403, "email_not_verified",
		`,"message":"verify the account's e-mail address before sending"`)
	if r := h.do("POST", "/admin/v1/accounts/"+out.AccountID+"/verify-email", "", admin...); r.status != 200 {
		t.Fatalf("verify: %d", r.status)
	}
	if r := h.do("POST", "/api/v1/notifications", `{"title":"hi"}`, auth(out.APIKey)...); r.status != 202 {
		t.Errorf("send after verification: %d %s", r.status, r.body)
	}
}

func TestAdminCreateWebsiteDefaults(t *testing.T) {
	h := newHarness(t)
	st, _ := openStores(t)
	out, err := CreateWebsite(context.Background(), st, NewWebsite{Name: "A", URL: "http://a.example"}, testStart)
	if err != nil {
		t.Fatal(err)
	}
	acc, _ := st.Account(context.Background(), out.AccountID)
	w, _ := st.Website(context.Background(), out.WebsiteID)
	if !acc.EmailVerified || w.Timezone != "UTC" || !acc.CreatedAt.Equal(testStart) {
		t.Errorf("account %+v website %+v", acc, w)
	}

	admin := auth(testAdminToken)
	f := func(body string, status int, code string) {
		t.Helper()
		expectCode(t, h.do("POST", "/admin/v1/websites", body, admin...), status, code)
	}
	f(`{"url":"https://a.example"}`, 400, "name_required")
	f(`{"name":"  ","url":"https://a.example"}`, 400, "name_required")
	f(`{"name":"A"}`, 400, "invalid_url")
	f(`{"name":"A","url":"ftp://a.example"}`, 400, "invalid_url")
	f(`{"name":"A","url":"/relative"}`, 400, "invalid_url")
	f(`{"name":"A","url":"https://u:p@a.example"}`, 400, "invalid_url")
	f(`{"name":"A","url":"https://a.example","timezone":"Mars/Base"}`, 400, "invalid_tz")
	f(`{"name":"A","url":"https://a.example","ownerEmail":"nope"}`, 400, "invalid_json")
	f(`{"name":"A","url":"https://a.example","extra":1}`, 400, "unknown_field")
	f(`{"name":1}`, 400, "invalid_json")
	f(``, 400, "invalid_json")
	f(`[]`, 400, "invalid_json")
}

func TestAdminCreateKey(t *testing.T) {
	h := newHarness(t)
	admin := auth(testAdminToken)
	path := "/admin/v1/websites/" + h.site.WebsiteID + "/keys"
	exp := testStart.Add(48 * time.Hour).Format(time.RFC3339)
	r := h.do("POST", path, `{"name":"CMS plugin","scopes":["send","events:write","send"],"expiresAt":"`+exp+`"}`, admin...)
	if r.status != 201 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	var out struct {
		APIKey string         `json:"apiKey"`
		Key    map[string]any `json:"key"`
	}
	if err := json.Unmarshal(r.body, &out); err != nil {
		t.Fatal(err)
	}
	keyJSON, _ := json.Marshal(out.Key)
	want := `{"created_at":"2026-03-01T12:00:00.000Z","current":false,"expired":false,"expires_at":"2026-03-03T12:00:00.000Z","id":"` +
		out.Key["id"].(string) + `","last_used_at":null,"name":"CMS plugin","prefix":"` + out.APIKey[:12] + `","scopes":["send","events:write"]}`
	if string(keyJSON) != want {
		t.Errorf("key\n %s\nwant\n %s", keyJSON, want)
	}
	// The key works with its scopes.
	if r := h.do("GET", "/api/v1/notifications", "", auth(out.APIKey)...); r.status != 200 {
		t.Errorf("new key: %d %s", r.status, r.body)
	}

	// Defaults: name 'API key', scopes ['full'], no expiry; an empty body is fine.
	for _, body := range []string{``, `{}`, `{"name":"","scopes":null,"expiresAt":null}`} {
		r := h.do("POST", path, body, admin...)
		if r.status != 201 {
			t.Fatalf("%q: %d %s", body, r.status, r.body)
		}
		k := r.json(t)["key"].(map[string]any)
		if k["name"] != "API key" || k["expires_at"] != nil || len(k["scopes"].([]any)) != 1 || k["scopes"].([]any)[0] != "full" {
			t.Errorf("%q: key %v", body, k)
		}
	}
	r = h.do("POST", path, `{"scopes":["send","full"]}`, admin...)
	if k := r.json(t)["key"].(map[string]any); len(k["scopes"].([]any)) != 1 || k["scopes"].([]any)[0] != "full" {
		t.Errorf("full collapses: %v", k)
	}

	f := func(p, body string, status int, code string) {
		t.Helper()
		expectCode(t, h.do("POST", p, body, admin...), status, code)
	}
	f(path, `{"scopes":["send","root"]}`, 400, "invalid_scopes")
	f(path, `{"scopes":"full"}`, 400, "invalid_scopes")
	f(path, `{"expiresAt":"2026-03-01T11:59:59Z"}`, 400, "invalid_expiry")
	f(path, `{"expiresAt":"2026-03-01T12:00:00Z"}`, 400, "invalid_expiry")
	f(path, `{"expiresAt":"2029-03-02T00:00:00Z"}`, 400, "invalid_expiry")
	f(path, `{"expiresAt":"tomorrow"}`, 400, "invalid_expiry")
	f(path, `{"expiresAt":12}`, 400, "invalid_expiry")
	f(path, `{"nmae":"typo"}`, 400, "unknown_field")
	f("/admin/v1/websites/not-a-uuid/keys", `{}`, 404, "not_found")
	f("/admin/v1/websites/00000000-0000-4000-8000-000000000000/keys", `{}`, 404, "not_found")
}

func TestAdminAccountActionsUnknown(t *testing.T) {
	h := newHarness(t)
	for _, action := range []string{"suspend", "unsuspend", "verify-email"} {
		expectError(t, h.do("POST", "/admin/v1/accounts/00000000-0000-4000-8000-000000000000/"+action, "", auth(testAdminToken)...), 404, "not_found", "")
		expectError(t, h.do("POST", "/admin/v1/accounts/nope/"+action, "", auth(testAdminToken)...), 404, "not_found", "")
	}
}

func TestAdminEmails(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	for i, to := range []string{"a@shop.example", "b@shop.example"} {
		if err := h.st.AddEmail(ctx, store.Email{ID: fmt.Sprintf("00000000-0000-4000-8000-00000000000%d", i+1), To: to,
			Subject: "Webhook off", Body: "Because.\n", CreatedAt: testStart.Add(time.Duration(i) * time.Minute)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.st.MarkEmailSent(ctx, "00000000-0000-4000-8000-000000000001", testStart.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	r := h.do("GET", "/admin/v1/emails", "", auth(testAdminToken)...)
	want := `{"emails":[` +
		`{"id":"00000000-0000-4000-8000-000000000002","to":"b@shop.example","subject":"Webhook off","body":"Because.\n","created_at":"2026-03-01T12:01:00.000Z","sent_at":null},` +
		`{"id":"00000000-0000-4000-8000-000000000001","to":"a@shop.example","subject":"Webhook off","body":"Because.\n","created_at":"2026-03-01T12:00:00.000Z","sent_at":"2026-03-01T13:00:00.000Z"}]}`
	if r.status != 200 || string(r.body) != want {
		t.Fatalf("%d %s\nwant %s", r.status, r.body, want)
	}
	r = h.do("GET", "/admin/v1/emails?unsent=true", "", auth(testAdminToken)...)
	if r.status != 200 || !strings.Contains(string(r.body), `"b@shop.example"`) || strings.Contains(string(r.body), `"a@shop.example"`) {
		t.Fatalf("unsent: %d %s", r.status, r.body)
	}
	expectCode(t, h.do("GET", "/admin/v1/emails", "", auth(h.site.APIKey)...), 401, "invalid_api_key")
}
