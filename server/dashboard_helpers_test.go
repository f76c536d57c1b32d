package server

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// dashboard drives the dashboard in Chromium for a test. Controls are found
// only by their role (or label) and accessible name.
type dashboard struct {
	t       *testing.T
	d       *driver
	ts      *testServer
	project string // the X-Project-Id of api calls
}

// role acts on the control with this role and accessible name: fill,
// click, select, value, text, count, wait, description, invalid, href.
func (b *dashboard) role(role, name, action string, value ...string) string {
	b.t.Helper()
	return b.act(map[string]any{"role": role, "name": name}, action, value)
}

// label acts on the form control with this label.
func (b *dashboard) label(label, action string, value ...string) string {
	b.t.Helper()
	return b.act(map[string]any{"label": label}, action, value)
}

func (b *dashboard) act(args map[string]any, action string, value []string) string {
	b.t.Helper()
	args["action"] = action
	if len(value) > 0 {
		args["value"] = value[0]
	}
	var out any
	b.d.call("role", args, &out)
	s, _ := out.(string)
	return s
}

func (b *dashboard) heading(name string) {
	b.t.Helper()
	b.role("heading", name, "wait")
}

// api calls /api/v1 from the page with the session, as the dashboard does;
// body is a JavaScript expression (or "" for none). An error answer fails
// the test.
func (b *dashboard) api(method, path, body string, out any) {
	b.t.Helper()
	if status := b.apiStatus(method, path, body, out); status >= 400 {
		b.t.Fatalf("%s %s: status %d", method, path, status)
	}
}

// apiStatus is api for an answer that may be an error: it returns the
// status, and decodes the body (an error's too) into out.
func (b *dashboard) apiStatus(method, path, body string, out any) int {
	b.t.Helper()
	if body == "" {
		body = "undefined"
	} else {
		body = "JSON.stringify(" + body + ")"
	}
	project, _ := json.Marshal(b.project)
	var answer struct {
		Status int             `json:"status"`
		Body   json.RawMessage `json:"body"`
	}
	b.d.page(`fetch('/api/v1`+path+`', {method: '`+method+`', credentials: 'same-origin', headers: {'Content-Type': 'application/json',
		'X-RelayBell-CSRF': '1', 'X-Project-Id': `+string(project)+`}, body: `+body+`}).then(async (r) => ({status: r.status, body: await r.json()}))`, &answer)
	if out != nil {
		if err := json.Unmarshal(answer.Body, out); err != nil {
			b.t.Fatalf("%s %s: %s: %v", method, path, answer.Body, err)
		}
	}
	return answer.Status
}

// mailedCodes are the codes mailed to email (verification, reset), in the
// outbox's order.
func (b *dashboard) mailedCodes(email string) []string {
	b.t.Helper()
	var outbox struct {
		Emails []struct{ To, Body string } `json:"emails"`
	}
	b.ts.call("GET", "/admin/v1/emails", adminToken, nil, &outbox)
	var codes []string
	for _, m := range outbox.Emails {
		if sub := regexp.MustCompile(`give this code there: (\S+)`).FindStringSubmatch(m.Body); m.To == email && sub != nil {
			codes = append(codes, sub[1])
		}
	}
	return codes
}

// mailedCode is the one code mailed to email.
func (b *dashboard) mailedCode(email string) string {
	b.t.Helper()
	codes := b.mailedCodes(email)
	if len(codes) != 1 {
		b.t.Fatalf("%d codes mailed to %s, want 1", len(codes), email)
	}
	return codes[0]
}

// startDashboard opens the dashboard in Chromium signed in as a verified
// owner of a new website (made through the API, the walk-through test
// covers the forms), on its home page.
func startDashboard(t *testing.T, ts *testServer) (*dashboard, website) {
	t.Helper()
	b := &dashboard{t: t, d: startDriver(t), ts: ts}
	b.d.call("launch", map[string]any{
		"executablePath": chromiumPath, "origin": ts.base, "locale": "en-GB", "timezoneId": "Europe/London",
		"subscription": map[string]string{},
	}, nil)
	b.d.call("goto", map[string]string{"url": ts.base + "/"}, nil)
	b.heading("Sign in")
	var me struct{ OK bool }
	const email = "grace@shop.example"
	b.api("POST", "/auth/signup", `{name: 'Grace', email: '`+email+`', password: 'a long enough passphrase'}`, &me)
	b.api("POST", "/auth/verify-email", `{token: '`+b.mailedCode(email)+`'}`, &me)
	var added struct {
		Website website `json:"website"`
	}
	b.api("POST", "/websites", `{name: 'Shop', url: 'https://shop.example', timezone: 'Europe/Paris'}`, &added)
	if added.Website.ProjectID == "" {
		t.Fatal("no website made")
	}
	b.project = added.Website.ProjectID
	b.d.call("goto", map[string]string{"url": ts.base + "/?signed-in#/"}, nil) // a load, not a change of fragment
	b.role("heading", "Latest sends", "wait")
	return b, added.Website
}

// shoot checks the page is usable at 375 px (nothing makes it scroll
// sideways) and, with RELAYBELL_SCREENSHOTS=dir, saves it there as
// name-desktop.png, name-phone.png and name-desktop-dark.png.
func (b *dashboard) shoot(name string) {
	b.t.Helper()
	d := b.d
	d.call("viewport", map[string]any{"width": 375, "height": 740, "dark": false}, nil)
	var wide float64
	d.page(`document.documentElement.scrollWidth`, &wide)
	if wide > 375 {
		var who []string
		d.page(`[...document.querySelectorAll('body *')].filter((e) => e.getBoundingClientRect().right > 376).slice(0, 8).map((e) => e.tagName + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right))`, &who)
		b.t.Errorf("%s is %v px wide at 375: %v", name, wide, who)
	}
	d.call("viewport", map[string]any{"width": 1280, "height": 800, "dark": false}, nil)
	shots := os.Getenv("RELAYBELL_SCREENSHOTS")
	if shots == "" {
		return
	}
	for _, v := range []struct {
		suffix        string
		width, height int
		dark          bool
	}{{"desktop", 1280, 800, false}, {"phone", 375, 740, false}, {"desktop-dark", 1280, 800, true}} {
		d.call("screenshot", map[string]any{"path": filepath.Join(shots, name+"-"+v.suffix+".png"),
			"width": v.width, "height": v.height, "dark": v.dark}, nil)
	}
	d.call("viewport", map[string]any{"width": 1280, "height": 800, "dark": false}, nil)
}
