package server

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image/png"
	"io"
	"mime"
	"mime/multipart"
	"net/mail"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/relaybell/relaybell/webhooks/smtptest"

	"github.com/relaybell/relaybell/webpush"
	"github.com/relaybell/relaybell/webpush/webpushtest"
)

// mailPart is one leaf of a MIME message.
type mailPart struct {
	ctype, cid string
	body       []byte
}

// mimeParts walks a multipart body and returns its leaves in order, with
// the types of the multiparts met on the way.
func mimeParts(t *testing.T, ctype string, body io.Reader) (multis []string, leaves []mailPart) {
	t.Helper()
	mt, params, err := mime.ParseMediaType(ctype)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(mt, "multipart/") {
		t.Fatalf("not multipart: %s", ctype)
	}
	multis = append(multis, mt)
	mr := multipart.NewReader(body, params["boundary"])
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			return multis, leaves
		}
		if err != nil {
			t.Fatal(err)
		}
		pt := p.Header.Get("Content-Type")
		if strings.HasPrefix(pt, "multipart/") {
			m, l := mimeParts(t, pt, p)
			multis, leaves = append(multis, m...), append(leaves, l...)
			continue
		}
		raw, _ := io.ReadAll(p)
		if p.Header.Get("Content-Transfer-Encoding") == "base64" {
			if raw, err = base64.StdEncoding.DecodeString(strings.NewReplacer("\r", "", "\n", "").Replace(string(raw))); err != nil {
				t.Fatal(err)
			}
		}
		leaves = append(leaves, mailPart{ctype: pt, cid: p.Header.Get("Content-ID"), body: raw})
	}
}

// TestReportTestGoesThroughSMTP sends a test report through a real SMTP
// server and checks its MIME parts, its figures against GET /stats and the
// notification list, and its inline chart.
func TestReportTestGoesThroughSMTP(t *testing.T) {
	relay := smtptest.New(t)
	clock := &testClock{}
	clock.advance(time.Until(time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)))
	ts := startServer(t, func(c *Config) {
		c.SMTPAddr, c.SMTPFrom = relay.Addr, "relaybell@ops.example"
		c.Now = clock.now
	})
	var w website
	if code := ts.call("POST", "/admin/v1/websites", adminToken, map[string]any{"name": "Shop <&>", "url": "https://shop.example",
		"ownerEmail": "owner@shop.example"}, &w); code != 201 {
		t.Fatalf("create website: %d", code)
	}
	browsers := make([]*webpushtest.Browser, 4)
	for i := range browsers {
		browsers[i] = ts.push.NewBrowser(w.VAPIDPublicKey)
		ts.subscribe(w, browsers[i], nil)
	}
	// The push service refuses a fifth browser's pushes.
	refused := ts.push.NewBrowser(w.VAPIDPublicKey)
	refused.SetBehavior(webpushtest.Behavior{Status: 400})
	ts.subscribe(w, refused, nil)
	// Two sends on 10 March: the first clicked by two browsers of four,
	// the second by none.
	first := ts.send(w, map[string]any{"title": "Spring sale", "body": "b"})
	ts.waitSent(w, first)
	second := ts.send(w, map[string]any{"title": "Quiet news", "body": "b"})
	ts.waitSent(w, second)
	for _, b := range browsers[:2] {
		ps := received(t, b, first)
		if len(ps) != 1 {
			t.Fatalf("browser got %d of the first send", len(ps))
		}
		if code := ts.call("POST", "/api/v1/projects/"+w.ProjectID+"/pings/clicked", "",
			map[string]string{"notificationId": ps[0].NotificationID, "endpointId": ps[0].EndpointID}, nil); code != 204 {
			t.Fatalf("clicked ping: %d", code)
		}
	}
	clock.advance(24 * time.Hour)

	var settings map[string]any
	if code := ts.call("PUT", "/api/v1/reports", w.APIKey, map[string]any{"frequency": "daily", "hour": 9,
		"recipients": []string{"Owner@Shop.example"}}, &settings); code != 200 {
		t.Fatalf("PUT /reports: %d %v", code, settings)
	}
	var sent struct {
		From, To   string
		Recipients []string
	}
	if code := ts.call("POST", "/api/v1/reports/test", w.APIKey, map[string]any{"to": "me"}, &sent); code != 200 ||
		sent.From != "2026-03-10" || sent.To != "2026-03-10" || len(sent.Recipients) != 1 || sent.Recipients[0] != "owner@shop.example" {
		t.Fatalf("POST /reports/test: %d %+v", code, sent)
	}

	msgs := relay.Wait(t, 1)
	m, err := mail.ReadMessage(strings.NewReader(msgs[0]))
	if err != nil {
		t.Fatal(err)
	}
	subject, _ := new(mime.WordDecoder).DecodeHeader(m.Header.Get("Subject"))
	if got := m.Header.Get("To"); got != "owner@shop.example" || subject != "RelayBell report for Shop <&>: 2026-03-10 to 2026-03-10" {
		t.Fatalf("To %q, Subject %q", got, subject)
	}
	multis, leaves := mimeParts(t, m.Header.Get("Content-Type"), m.Body)
	if strings.Join(multis, " ") != "multipart/related multipart/alternative" || len(leaves) != 3 ||
		leaves[0].ctype != "text/plain; charset=utf-8" || leaves[1].ctype != "text/html; charset=utf-8" ||
		leaves[2].ctype != "image/png" || leaves[2].cid != "<chart@relaybell>" {
		t.Fatalf("MIME structure %v %+v", multis, leaves)
	}
	text, html := string(leaves[0].body), string(leaves[1].body)
	img, err := png.Decode(bytes.NewReader(leaves[2].body))
	if err != nil || img.Bounds().Dx() != 600 || img.Bounds().Dy() != 200 {
		t.Fatalf("chart: %v %v", err, img)
	}
	// The HTML renders in Chromium, chart and all (docs/screenshots/report-mail.png).
	if os.Getenv("RELAYBELL_SCREENSHOTS") != "" {
		d := startDriver(t)
		d.call("launch", map[string]any{"executablePath": chromiumPath, "origin": ts.base, "locale": "en-GB", "timezoneId": "Europe/London",
			"subscription": map[string]string{}}, nil)
		renderMail(t, d, leaves, "RelayBell report for Shop <&>", "report-mail")
	}
	if !strings.Contains(html, `src="cid:chart@relaybell"`) || !strings.Contains(html, "Shop &lt;&amp;&gt;") {
		t.Fatalf("HTML does not show the inline chart or escape the name:\n%s", html)
	}

	// The figures are GET /stats's of the period and of the one before.
	type counts struct {
		Subscribers, NewSubscribers, Unsubscribed, Notifications, Delivered, Clicked, Conversions int64
		Ctr, Revenue                                                                              float64
	}
	statsOf := func(day string) counts {
		var rep struct {
			Totals counts
			Days   []counts
		}
		if code := ts.call("GET", "/api/v1/stats?from="+day+"&to="+day, w.APIKey, nil, &rep); code != 200 || len(rep.Days) != 1 {
			t.Fatalf("GET /stats: %d", code)
		}
		c := rep.Totals
		c.Subscribers = rep.Days[0].Subscribers
		return c
	}
	cur, prev := statsOf("2026-03-10"), statsOf("2026-03-09")
	if cur.Notifications != 2 || cur.Clicked != 2 || cur.NewSubscribers != 5 || cur.Subscribers != 5 {
		t.Fatalf("stats of the period %+v", cur)
	}
	row := func(name string, a, b any) string { return fmt.Sprintf("%-18s %14v %14v", name, a, b) }
	for _, want := range []string{
		row("Subscribers", cur.Subscribers, prev.Subscribers),
		row("New subscribers", cur.NewSubscribers, prev.NewSubscribers),
		row("Lost subscribers", cur.Unsubscribed, prev.Unsubscribed),
		row("Sends", cur.Notifications, prev.Notifications),
		row("Delivered", cur.Delivered, prev.Delivered),
		row("Clicks", cur.Clicked, prev.Clicked),
		row("CTR", fmt.Sprintf("%.1f%%", cur.Ctr), fmt.Sprintf("%.1f%%", prev.Ctr)),
		row("Conversions", cur.Conversions, prev.Conversions),
		row("Revenue", fmt.Sprintf("%.2f", cur.Revenue), fmt.Sprintf("%.2f", prev.Revenue)),
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the text lacks %q:\n%s", want, text)
		}
	}
	// The ranking is the notification list's sends by CTR.
	var list struct {
		Items []struct {
			ID, Title     string
			Sent, Clicked int64
		}
	}
	if code := ts.call("GET", "/api/v1/notifications", w.APIKey, nil, &list); code != 200 || len(list.Items) != 2 {
		t.Fatalf("GET /notifications: %d %+v", code, list)
	}
	line := map[string]string{}
	for _, n := range list.Items {
		line[n.ID] = fmt.Sprintf("%s: CTR %.1f%% (%d clicks of %d sent)", n.Title, float64(n.Clicked)*100/float64(n.Sent), n.Clicked, n.Sent)
	}
	wantRank := "Best sends by CTR\n  1. " + line[first] + "\n  2. " + line[second] + "\n\nWorst sends by CTR\n  1. " + line[second] + "\n  2. " + line[first] + "\n"
	if !strings.Contains(text, wantRank) || !strings.Contains(text, "Spring sale: CTR 50.0% (2 clicks of 4 sent)") {
		t.Errorf("the ranking is not\n%s\nin\n%s", wantRank, text)
	}
	// The refused pushes, by the push service the pusher named (the fake
	// service's is other), in both parts.
	service := webpush.ServiceOf(ts.push.URL)
	wantHealth := "\nDelivery health\n  Failed pushes: 2\n  Pruned browsers: 0\n" +
		"  Push service     Failed   Pruned\n" +
		"  " + fmt.Sprintf("%-14s", service) + "        2        0\n  Failing webhooks: 0\n"
	if !strings.Contains(text, wantHealth) {
		t.Errorf("the health is not\n%s\nin\n%s", wantHealth, text)
	}
	if want := `<td style="padding-right:24px">` + service + `</td><td style="text-align:right;padding-right:24px">2</td><td style="text-align:right">0</td>`; !strings.Contains(html, want) {
		t.Errorf("the HTML lacks %s:\n%s", want, html)
	}
}
