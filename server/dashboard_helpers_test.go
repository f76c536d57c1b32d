package server

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
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

// rows names the body rows of the table whose caption (its accessible
// name) is table, in order: each by the text of its first link, else of its
// header cell, else of its first cell.
func (b *dashboard) rows(table string) []string {
	b.t.Helper()
	caption, _ := json.Marshal(table)
	var out []string
	b.d.page(`[...document.querySelectorAll('table')].filter((t) => t.caption && t.caption.textContent === `+string(caption)+`)
		.flatMap((t) => [...t.tBodies].flatMap((body) => [...body.rows]))
		.map((r) => (r.querySelector('a') || r.querySelector('th') || r.cells[0]).textContent)`, &out)
	return out
}

// waitRows waits until the rows of table are want, in order, failing with
// the rows shown last.
func (b *dashboard) waitRows(table string, want []string) {
	b.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for got := b.rows(table); !slices.Equal(got, want); got = b.rows(table) {
		if time.Now().After(deadline) {
			b.t.Fatalf("table %q: rows %q, want %q", table, got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// recordCalls makes the page keep the path and query of every fetch it
// makes from now on (until it is loaded again), for calls to return.
func (b *dashboard) recordCalls() {
	b.t.Helper()
	b.d.page(`(window.__calls = [], window.fetch = ((fetch) => (url, init) => (window.__calls.push(String(url)), fetch(url, init)))(window.fetch), true)`, nil)
}

// calls are the recorded fetches whose path starts with prefix, oldest
// first.
func (b *dashboard) calls(prefix string) []string {
	b.t.Helper()
	var all []string
	b.d.page(`window.__calls`, &all)
	var out []string
	for _, c := range all {
		if strings.HasPrefix(c, prefix) {
			out = append(out, c)
		}
	}
	return out
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
	if raceDetector {
		// make test runs them in its first pass, without it. Under it the
		// server is several times slower, and the dashboard tests' waits
		// for the page, which check its script and not the server's
		// concurrency, failed now and then (stop 45: three runs, three
		// different waits).
		t.Skip("the dashboard's browser tests run without the race detector")
	}
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
