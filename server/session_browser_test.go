package server

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestBrowserSession: the dashboard's routes from a page of RelayBell's
// own origin, with the browser's cookie jar holding the session (the test
// never reads nor sets the cookie): a person signs up (the cookie is
// HttpOnly), verifies the address with the mailed code, signs out and in,
// creates a website, creates an API key that works from a server and
// revokes it, after which it no longer does; a change without the CSRF
// header is refused.
func TestBrowserSession(t *testing.T) {
	d := startDriver(t)
	ts := startServer(t)
	d.call("launch", map[string]any{
		"executablePath": chromiumPath, "origin": ts.base, "locale": "en-GB", "timezoneId": "Europe/London",
		"subscription": map[string]string{},
	}, nil)
	// Any page of RelayBell's will do: the fetches below run in it, same
	// origin.
	d.call("goto", map[string]string{"url": ts.base + "/healthz"}, nil)

	// fetch runs the page's own fetch, with the cookie jar, and decodes the
	// answer's JSON into out (when not nil). csrf sends X-RelayBell-CSRF.
	fetch := func(method, path string, body any, csrf bool, out any) int {
		t.Helper()
		args, err := json.Marshal(map[string]any{"method": method, "path": path, "body": body, "csrf": csrf})
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Status int    `json:"status"`
			Body   string `json:"body"`
		}
		d.page(fmt.Sprintf(`(async (a) => {
			const headers = {};
			if (a.csrf) headers['X-RelayBell-CSRF'] = '1';
			const init = { method: a.method, headers, credentials: 'same-origin' };
			if (a.body !== null) {
				headers['Content-Type'] = 'application/json';
				init.body = JSON.stringify(a.body);
			}
			const r = await fetch(a.path, init);
			return { status: r.status, body: await r.text() };
		})(%s)`, args), &got)
		if out != nil {
			if err := json.Unmarshal([]byte(got.Body), out); err != nil {
				t.Fatalf("%s %s: %d %s: %v", method, path, got.Status, got.Body, err)
			}
		}
		return got.Status
	}
	type apiError struct {
		Error string `json:"error"`
	}
	type okAnswer struct {
		OK bool `json:"ok"`
	}
	type me struct {
		User struct {
			ID            string `json:"id"`
			Email         string `json:"email"`
			Name          string `json:"name"`
			EmailVerified bool   `json:"emailVerified"`
		} `json:"user"`
		Accounts []struct {
			ID            string `json:"id"`
			Role          string `json:"role"`
			OwnerEmail    string `json:"ownerEmail"`
			EmailVerified bool   `json:"emailVerified"`
		} `json:"accounts"`
		Websites []struct {
			ProjectID string `json:"projectId"`
		} `json:"websites"`
	}
	sessionCookieVisible := func() bool {
		t.Helper()
		var cookies string
		d.page("document.cookie", &cookies)
		return strings.Contains(cookies, "rb_session")
	}
	const email, password, name = "ada@shop.example", "correct horse battery staple", "Ada"

	// 1. Sign up: 201, unverified, signed in with a cookie no script reads.
	var signedUp me
	if code := fetch("POST", "/api/v1/auth/signup", map[string]string{"email": email, "password": password, "name": name}, true, &signedUp); code != 201 ||
		signedUp.User.Email != email || signedUp.User.Name != name || signedUp.User.EmailVerified || signedUp.User.ID == "" ||
		len(signedUp.Accounts) != 0 || len(signedUp.Websites) != 0 {
		t.Fatalf("POST /auth/signup: %d %+v", code, signedUp)
	}
	if sessionCookieVisible() {
		t.Fatal("document.cookie shows rb_session: the session cookie is not HttpOnly")
	}
	var signedIn me
	if code := fetch("GET", "/api/v1/auth/me", nil, false, &signedIn); code != 200 || signedIn.User.ID != signedUp.User.ID || signedIn.User.EmailVerified {
		t.Fatalf("GET /auth/me after sign-up: %d %+v", code, signedIn)
	}

	// 2. The code from the mailbox (the outbox, without SMTP) verifies the
	// address.
	var outbox struct {
		Emails []struct {
			To, Subject, Body string
		} `json:"emails"`
	}
	if code := ts.call("GET", "/admin/v1/emails", adminToken, nil, &outbox); code != 200 {
		t.Fatalf("GET /admin/v1/emails: %d", code)
	}
	var verifyCode string
	for _, m := range outbox.Emails {
		if sub := regexp.MustCompile(`give this code there: (\S+)`).FindStringSubmatch(m.Body); m.To == email && sub != nil {
			verifyCode = sub[1]
		}
	}
	if verifyCode == "" {
		t.Fatalf("no verification code mailed to %s in %+v", email, outbox.Emails)
	}
	var ok okAnswer
	if code := fetch("POST", "/api/v1/auth/verify-email", map[string]string{"token": verifyCode}, true, &ok); code != 200 || !ok.OK {
		t.Fatalf("POST /auth/verify-email: %d %+v", code, ok)
	}

	// 3. Sign out: the session ends and the cookie goes.
	ok = okAnswer{}
	if code := fetch("POST", "/api/v1/auth/logout", nil, true, &ok); code != 200 || !ok.OK {
		t.Fatalf("POST /auth/logout: %d %+v", code, ok)
	}
	var refused apiError
	if code := fetch("GET", "/api/v1/auth/me", nil, false, &refused); code != 401 || refused.Error != "not_authenticated" {
		t.Fatalf("GET /auth/me after logout: %d %+v", code, refused)
	}

	// 4. Sign in: verified, owner of their account.
	var loggedIn me
	if code := fetch("POST", "/api/v1/auth/login", map[string]string{"email": email, "password": password}, true, &loggedIn); code != 200 ||
		loggedIn.User.ID != signedUp.User.ID || !loggedIn.User.EmailVerified {
		t.Fatalf("POST /auth/login: %d %+v", code, loggedIn)
	}
	if sessionCookieVisible() {
		t.Fatal("document.cookie shows rb_session after login")
	}
	signedIn = me{}
	if code := fetch("GET", "/api/v1/auth/me", nil, false, &signedIn); code != 200 || signedIn.User.ID != signedUp.User.ID ||
		signedIn.User.Email != email || !signedIn.User.EmailVerified || len(signedIn.Accounts) != 1 ||
		signedIn.Accounts[0].Role != "owner" || signedIn.Accounts[0].OwnerEmail != email || !signedIn.Accounts[0].EmailVerified ||
		len(signedIn.Websites) != 0 {
		t.Fatalf("GET /auth/me after login: %d %+v", code, signedIn)
	}

	// 5. A website, in the person's account.
	var created struct {
		Website struct {
			ID             string `json:"id"`
			AccountID      string `json:"accountId"`
			ProjectID      string `json:"projectId"`
			Name           string `json:"name"`
			URL            string `json:"url"`
			VAPIDPublicKey string `json:"vapidPublicKey"`
			Role           string `json:"role"`
		} `json:"website"`
	}
	if code := fetch("POST", "/api/v1/websites", map[string]string{"name": "Shop", "url": "https://shop.example"}, true, &created); code != 201 ||
		created.Website.ProjectID == "" || created.Website.VAPIDPublicKey == "" || created.Website.ID == "" ||
		created.Website.AccountID != signedIn.Accounts[0].ID || created.Website.Name != "Shop" ||
		created.Website.URL != "https://shop.example" || created.Website.Role != "owner" {
		t.Fatalf("POST /websites: %d %+v", code, created)
	}
	project := "?projectId=" + created.Website.ProjectID

	// 6. An API key, shown once; it works from a server.
	var newKey struct {
		APIKey string `json:"apiKey"`
		Key    struct {
			ID     string   `json:"id"`
			Prefix string   `json:"prefix"`
			Name   string   `json:"name"`
			Scopes []string `json:"scopes"`
		} `json:"key"`
	}
	if code := fetch("POST", "/api/v1/keys"+project, map[string]string{"name": "Server"}, true, &newKey); code != 201 ||
		!strings.HasPrefix(newKey.APIKey, "rb_live_") || newKey.Key.ID == "" || newKey.Key.Name != "Server" ||
		!strings.HasPrefix(newKey.APIKey, newKey.Key.Prefix) || len(newKey.Key.Scopes) != 1 || newKey.Key.Scopes[0] != "full" {
		t.Fatalf("POST /keys: %d %+v", code, newKey)
	}
	if code := ts.call("GET", "/api/v1/notifications", newKey.APIKey, nil, nil); code != 200 {
		t.Fatalf("GET /notifications with the new key: %d", code)
	}

	// 7. Listed, then revoked: the key is refused from then on.
	var listed struct {
		Keys []struct {
			ID      string `json:"id"`
			Prefix  string `json:"prefix"`
			Name    string `json:"name"`
			Current bool   `json:"current"`
		} `json:"keys"`
	}
	if code := fetch("GET", "/api/v1/keys"+project, nil, false, &listed); code != 200 || len(listed.Keys) != 1 ||
		listed.Keys[0].ID != newKey.Key.ID || listed.Keys[0].Prefix != newKey.Key.Prefix || listed.Keys[0].Name != "Server" || listed.Keys[0].Current {
		t.Fatalf("GET /keys: %d %+v", code, listed)
	}
	ok = okAnswer{}
	if code := fetch("DELETE", "/api/v1/keys/"+newKey.Key.ID+project, nil, true, &ok); code != 200 || !ok.OK {
		t.Fatalf("DELETE /keys/%s: %d %+v", newKey.Key.ID, code, ok)
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		var e apiError
		code := ts.call("GET", "/api/v1/notifications", newKey.APIKey, nil, &e)
		if code == 401 && e.Error == "invalid_api_key" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET /notifications with the revoked key: %d %+v, want 401 invalid_api_key", code, e)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// 8. A change without the CSRF header is refused, and changes nothing.
	refused = apiError{}
	if code := fetch("POST", "/api/v1/websites", map[string]string{"name": "Forged", "url": "https://forged.example"}, false, &refused); code != 403 ||
		refused.Error != "csrf_failed" {
		t.Fatalf("POST /websites without %s: %d %+v", "X-RelayBell-CSRF", code, refused)
	}
	var websites struct {
		Websites []struct {
			ProjectID string `json:"projectId"`
		} `json:"websites"`
	}
	if code := fetch("GET", "/api/v1/websites", nil, false, &websites); code != 200 || len(websites.Websites) != 1 ||
		websites.Websites[0].ProjectID != created.Website.ProjectID {
		t.Fatalf("GET /websites after the refused change: %d %+v", code, websites)
	}
}
