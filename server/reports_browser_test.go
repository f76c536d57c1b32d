package server

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestReportSettingsInChromium: an owner sets a weekly report to
// themselves on the Settings page, and mails themselves a test report;
// the report's HTML, its chart inline, renders in Chromium
// (RELAYBELL_SCREENSHOTS=dir saves it as report-mail-*.png).
func TestReportSettingsInChromium(t *testing.T) {
	ts := startServer(t)
	b, _ := startDashboard(t, ts)
	b.role("link", "Settings", "click")
	b.heading("Reports by mail")
	b.label("Report frequency", "select", "weekly")
	b.label("Day of the week", "select", "fri")
	b.label("Hour", "select", "7")
	b.role("checkbox", "grace@shop.example", "click")
	b.role("button", "Save report settings", "click")
	statuses := func() []string {
		var out []string
		b.d.page(`[...document.querySelectorAll('[role=status]')].map((e) => e.textContent)`, &out)
		return out
	}
	waitFor(t, "saved", func() bool { return slices.Contains(statuses(), "Saved.") })
	var got struct {
		Frequency  string   `json:"frequency"`
		Day        string   `json:"day"`
		Hour       int      `json:"hour"`
		Recipients []string `json:"recipients"`
		Timezone   string   `json:"timezone"`
	}
	b.api("GET", "/reports", "", &got)
	if got.Frequency != "weekly" || got.Day != "fri" || got.Hour != 7 || !slices.Equal(got.Recipients, []string{"grace@shop.example"}) || got.Timezone != "Europe/Paris" {
		t.Fatalf("GET /reports after saving: %+v", got)
	}
	b.role("button", "Send me a test report", "click")
	waitFor(t, "the test report sent", func() bool {
		return slices.ContainsFunc(statuses(), func(s string) bool {
			return strings.HasPrefix(s, "A test report of ") && strings.HasSuffix(s, " is on its way to grace@shop.example.")
		})
	})
	b.shoot("settings-reports")

	ms, err := ts.srv.store.Emails(context.Background(), false, 0)
	if err != nil {
		t.Fatal(err)
	}
	var body, ctype string
	for _, m := range ms {
		if m.To == "grace@shop.example" && strings.HasPrefix(m.ContentType, "multipart/related;") {
			body, ctype = m.Body, m.ContentType
		}
	}
	if body == "" {
		t.Fatalf("no report in the outbox: %d messages", len(ms))
	}
	_, leaves := mimeParts(t, ctype, strings.NewReader(body))
	if len(leaves) != 3 {
		t.Fatalf("%d parts", len(leaves))
	}
	renderMail(t, b.d, leaves, "RelayBell report for Shop", "")
}

// renderMail opens a report's HTML in Chromium with its chart in place of
// the cid: reference (as a mail reader shows it), checks that the heading
// shows and the chart loads, and with RELAYBELL_SCREENSHOTS=dir and a
// name saves it there as name.png.
func renderMail(t *testing.T, d *driver, leaves []mailPart, heading, name string) {
	t.Helper()
	page := strings.ReplaceAll(string(leaves[1].body), "cid:chart@relaybell", "data:image/png;base64,"+base64.StdEncoding.EncodeToString(leaves[2].body))
	d.call("goto", map[string]string{"url": "data:text/html;base64," + base64.StdEncoding.EncodeToString([]byte(page))}, nil)
	b := &dashboard{t: t, d: d}
	b.role("heading", heading, "wait")
	var loaded bool
	d.page(`(() => { const i = document.querySelector('img'); return i.complete && i.naturalWidth === 600; })()`, &loaded)
	if !loaded {
		t.Fatal("the chart did not render")
	}
	if dir := os.Getenv("RELAYBELL_SCREENSHOTS"); dir != "" && name != "" {
		d.call("screenshot", map[string]any{"path": filepath.Join(dir, name+".png"), "width": 800, "height": 900, "dark": false}, nil)
	}
}
