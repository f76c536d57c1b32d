package reports

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"html/template"
	"mime"
	"mime/multipart"
	"net/textproto"
	"strconv"
	"strings"
)

// ChartCID is the Content-ID of the chart in the message.
const ChartCID = "chart@relaybell"

// Figure is one line of the figures table: the period's value, the
// previous period's, and the change.
type Figure struct {
	Name            string
	Current, Before string
	Change          string
}

// Figures are the report's figures in the order the mail shows them.
func (r Report) Figures() []Figure {
	c, p := r.Current, r.Previous
	ints := []struct {
		name string
		a, b int64
	}{
		{"Subscribers", c.Subscribers, p.Subscribers},
		{"New subscribers", c.NewSubscribers, p.NewSubscribers},
		{"Lost subscribers", c.Unsubscribed, p.Unsubscribed},
		{"Sends", c.Notifications, p.Notifications},
		{"Delivered", c.Delivered, p.Delivered},
		{"Clicks", c.Clicked, p.Clicked},
	}
	var out []Figure
	for _, f := range ints {
		out = append(out, Figure{f.name, strconv.FormatInt(f.a, 10), strconv.FormatInt(f.b, 10), change(float64(f.a), float64(f.b))})
	}
	out = append(out,
		Figure{"CTR", pct(c.Ctr), pct(p.Ctr), points(c.Ctr - p.Ctr)},
		Figure{"Conversions", strconv.FormatInt(c.Conversions, 10), strconv.FormatInt(p.Conversions, 10), change(float64(c.Conversions), float64(p.Conversions))},
		Figure{"Revenue", money(c.Revenue), money(p.Revenue), change(c.Revenue, p.Revenue)},
	)
	return out
}

func pct(v float64) string   { return strconv.FormatFloat(v, 'f', 1, 64) + "%" }
func money(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

// change is the relative change from b to a, "n/a" from zero.
func change(a, b float64) string {
	if b == 0 {
		if a == 0 {
			return "0%"
		}
		return "n/a"
	}
	return fmt.Sprintf("%+.1f%%", (a-b)/b*100)
}

func points(d float64) string { return fmt.Sprintf("%+.1f pts", d) }

// Subject is the mail's subject line (encoded as RFC 2047 asks when it is
// not ASCII).
func (r Report) Subject() string {
	return mime.QEncoding.Encode("utf-8", fmt.Sprintf("RelayBell report for %s: %s to %s", oneLine(r.Website), r.Period.From, r.Period.To))
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// Text is the report as plain text.
func (r Report) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "RelayBell report for %s\n%s to %s (%s), against %s to %s\n\n", oneLine(r.Website), r.Period.From, r.Period.To, r.Timezone, r.Period.PrevFrom, r.Period.PrevTo)
	fmt.Fprintf(&b, "%-18s %14s %14s %10s\n", "", "This period", "Before", "Change")
	for _, f := range r.Figures() {
		fmt.Fprintf(&b, "%-18s %14s %14s %10s\n", f.Name, f.Current, f.Before, f.Change)
	}
	sends := func(title string, ss []Send) {
		fmt.Fprintf(&b, "\n%s\n", title)
		if len(ss) == 0 {
			b.WriteString("  No sends in the period.\n")
		}
		for i, s := range ss {
			fmt.Fprintf(&b, "  %d. %s: CTR %s (%d clicks of %d sent)\n", i+1, oneLine(s.Title), pct(s.Ctr), s.Clicked, s.Sent)
		}
	}
	sends("Best sends by CTR", r.Best)
	sends("Worst sends by CTR", r.Worst)
	h := r.Health
	fmt.Fprintf(&b, "\nDelivery health\n  Failed pushes: %d\n  Pruned browsers: %d\n", h.Failed, h.Pruned)
	if len(h.Services) > 0 {
		fmt.Fprintf(&b, "  %-14s %8s %8s\n", "Push service", "Failed", "Pruned")
		for _, t := range h.Services {
			fmt.Fprintf(&b, "  %-14s %8d %8d\n", t.Service, t.Failed, t.Pruned)
		}
	}
	for _, g := range []struct {
		name string
		ts   []Trouble
	}{{"Failing webhooks", h.Webhooks}, {"Feeds in trouble", h.Feeds}, {"Schedules in trouble", h.Schedules}} {
		fmt.Fprintf(&b, "  %s: %d\n", g.name, len(g.ts))
		for _, t := range g.ts {
			fmt.Fprintf(&b, "    - %s (%s)\n", oneLine(t.Name), t.Reason)
		}
	}
	return b.String()
}

var htmlReport = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>RelayBell report for {{.Website}}</title></head>
<body style="font-family:Arial,Helvetica,sans-serif;color:#111;max-width:640px;margin:0 auto;padding:16px">
<h1 style="font-size:20px">RelayBell report for {{.Website}}</h1>
<p>{{.Period.From}} to {{.Period.To}} ({{.Timezone}}), against {{.Period.PrevFrom}} to {{.Period.PrevTo}}</p>
<table style="border-collapse:collapse;width:100%" aria-label="Figures">
<thead><tr><th style="text-align:left">Figure</th><th style="text-align:right">This period</th><th style="text-align:right">Before</th><th style="text-align:right">Change</th></tr></thead>
<tbody>{{range .Figures}}<tr style="border-top:1px solid #ddd"><td>{{.Name}}</td><td style="text-align:right">{{.Current}}</td><td style="text-align:right">{{.Before}}</td><td style="text-align:right">{{.Change}}</td></tr>{{end}}</tbody>
</table>
<h2 style="font-size:16px">Sends and clicks per day</h2>
<p><img src="cid:` + ChartCID + `" width="600" height="200" alt="Sends (blue) and clicks (orange) per day"></p>
{{define "sends"}}{{if .}}<ol>{{range .}}<li>{{.Title}}: CTR {{printf "%.1f" .Ctr}}% ({{.Clicked}} clicks of {{.Sent}} sent)</li>{{end}}</ol>{{else}}<p>No sends in the period.</p>{{end}}{{end}}
<h2 style="font-size:16px">Best sends by CTR</h2>
{{template "sends" .Best}}
<h2 style="font-size:16px">Worst sends by CTR</h2>
{{template "sends" .Worst}}
<h2 style="font-size:16px">Delivery health</h2>
<ul><li>Failed pushes: {{.Health.Failed}}</li><li>Pruned browsers: {{.Health.Pruned}}</li></ul>
{{with .Health.Services}}<table style="border-collapse:collapse" aria-label="Failed and pruned pushes by push service">
<thead><tr><th style="text-align:left;padding-right:24px">Push service</th><th style="text-align:right;padding-right:24px">Failed</th><th style="text-align:right">Pruned</th></tr></thead>
<tbody>{{range .}}<tr style="border-top:1px solid #ddd"><td style="padding-right:24px">{{.Service}}</td><td style="text-align:right;padding-right:24px">{{.Failed}}</td><td style="text-align:right">{{.Pruned}}</td></tr>{{end}}</tbody>
</table>{{end}}
<ul><li>Failing webhooks: {{len .Health.Webhooks}}{{template "trouble" .Health.Webhooks}}</li>
<li>Feeds in trouble: {{len .Health.Feeds}}{{template "trouble" .Health.Feeds}}</li>
<li>Schedules in trouble: {{len .Health.Schedules}}{{template "trouble" .Health.Schedules}}</li></ul>
{{define "trouble"}}{{if .}}<ul>{{range .}}<li>{{.Name}} ({{.Reason}})</li>{{end}}</ul>{{end}}{{end}}
</body></html>
`))

// HTML is the report as an HTML page whose chart is the message's part
// cid:ChartCID. Every text from the website is escaped.
func (r Report) HTML() (string, error) {
	var b strings.Builder
	if err := htmlReport.Execute(&b, r); err != nil {
		return "", err
	}
	return b.String(), nil
}

// Message is the report's MIME body and its Content-Type: multipart/
// related holding a multipart/alternative (plain text, then HTML) and
// the chart as image/png with Content-ID ChartCID. Lines end in CRLF.
func (r Report) Message() (body, contentType string, err error) {
	html, err := r.HTML()
	if err != nil {
		return "", "", err
	}
	chart, err := Chart(r.Days)
	if err != nil {
		return "", "", err
	}
	var alt bytes.Buffer
	aw := multipart.NewWriter(&alt)
	for _, p := range []struct{ ctype, text string }{{"text/plain; charset=utf-8", r.Text()}, {"text/html; charset=utf-8", html}} {
		w, err := aw.CreatePart(textproto.MIMEHeader{"Content-Type": {p.ctype}, "Content-Transfer-Encoding": {"base64"}})
		if err != nil {
			return "", "", err
		}
		writeBase64(w, []byte(p.text))
	}
	if err := aw.Close(); err != nil {
		return "", "", err
	}
	var rel bytes.Buffer
	rw := multipart.NewWriter(&rel)
	w, err := rw.CreatePart(textproto.MIMEHeader{"Content-Type": {"multipart/alternative; boundary=" + aw.Boundary()}})
	if err != nil {
		return "", "", err
	}
	w.Write(alt.Bytes())
	w, err = rw.CreatePart(textproto.MIMEHeader{
		"Content-Type":              {"image/png"},
		"Content-Transfer-Encoding": {"base64"},
		"Content-ID":                {"<" + ChartCID + ">"},
		"Content-Disposition":       {`inline; filename="chart.png"`},
	})
	if err != nil {
		return "", "", err
	}
	writeBase64(w, chart)
	if err := rw.Close(); err != nil {
		return "", "", err
	}
	return rel.String(), `multipart/related; type="multipart/alternative"; boundary=` + rw.Boundary(), nil
}

// writeBase64 writes b base64-encoded in lines of 76 characters (RFC 2045).
func writeBase64(w interface{ Write([]byte) (int, error) }, b []byte) {
	s := base64.StdEncoding.EncodeToString(b)
	for len(s) > 76 {
		w.Write([]byte(s[:76] + "\r\n"))
		s = s[76:]
	}
	w.Write([]byte(s + "\r\n"))
}
