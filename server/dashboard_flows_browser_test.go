package server

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relaybell/relaybell/webhooks/signature"
)

// The dashboard's flows that the walk-through and the composer test leave
// out, in Chromium, each checked through the API: canceling a scheduled
// send, Load more, the Home page's long periods, bulk labels and bulk
// deletion, a webhook's resend and deletion, a test device removed, an
// invitation withdrawn and the website switcher.

// TestDashboardFlowsNotifications cancels a scheduled send from its detail
// page, pages through the drafts with Load more and switches Home to 90
// days and 12 months.
func TestDashboardFlowsNotifications(t *testing.T) {
	ts := startServer(t)
	b, _ := startDashboard(t, ts)
	role, heading := b.role, b.heading

	status := func(id string) string {
		t.Helper()
		var c struct {
			Notification struct{ Status string } `json:"notification"`
		}
		b.api("GET", "/notifications/"+id, "", &c)
		return c.Notification.Status
	}

	// Two sends scheduled for 2099; one canceled from its page, the other
	// left as it was.
	var summer, autumn struct{ NotificationID, Status string }
	b.api("POST", "/notifications", `{title: 'Summer sale', sendAt: '2099-07-01T09:00:00Z'}`, &summer)
	b.api("POST", "/notifications", `{title: 'Autumn sale', sendAt: '2099-10-01T09:00:00Z'}`, &autumn)
	if summer.Status != "scheduled" || autumn.Status != "scheduled" {
		t.Fatalf("set-up: %+v, %+v", summer, autumn)
	}
	b.d.call("goto", map[string]string{"url": ts.base + "/?cancel#/notifications/" + summer.NotificationID}, nil)
	heading("Summer sale")
	role("button", "Cancel send", "click") // the confirmation is accepted
	waitFor(t, "the page to show the send canceled", func() bool {
		var facts string
		b.d.page(`document.querySelector('dl.facts')?.textContent ?? ''`, &facts) // not drawn yet: ''
		return strings.Contains(facts, "Statuscanceled")
	})
	if n := role("button", "Cancel send", "count"); n != "0" {
		t.Fatal("a canceled send is offered for canceling")
	}
	if got := status(summer.NotificationID); got != "canceled" {
		t.Fatalf("the canceled send is %s", got)
	}
	if got := status(autumn.NotificationID); got != "scheduled" {
		t.Fatalf("the other send is %s", got)
	}
	var refused struct{ Error string }
	if code := b.apiStatus("POST", "/notifications/"+summer.NotificationID+"/cancel", "", &refused); code != 404 || refused.Error != "not_scheduled" {
		t.Fatalf("canceling again: %d %+v", code, refused)
	}

	// 27 drafts: the first page shows the newest 25, Load more the last two.
	var drafts []string // newest first
	for i := 1; i <= 27; i++ {
		title := fmt.Sprintf("Draft %02d", i)
		var made struct{ Status string }
		b.api("POST", "/notifications", `{title: '`+title+`', draft: true}`, &made)
		if made.Status != "draft" {
			t.Fatalf("%s: %+v", title, made)
		}
		drafts = append([]string{title}, drafts...)
	}
	role("link", "All notifications", "click")
	heading("Notifications")
	b.waitRows("Notifications", []string{"Autumn sale", "Summer sale"})
	role("combobox", "Status", "select", "draft")
	role("button", "Filter", "click")
	b.waitRows("Notifications", drafts[:25])
	role("button", "Load more", "click")
	b.waitRows("Notifications", drafts)
	if n := role("button", "Load more", "count"); n != "0" {
		t.Fatal("Load more offered after the last page")
	}

	// Home over 90 days and 12 months: the stats asked for those calendar
	// days of the website's zone, to today, one row a day in the table.
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	y, m, d := time.Now().In(paris).Date()
	today := time.Date(y, m, d, 12, 0, 0, 0, time.UTC)
	statsOf := func(days int) string {
		return "/api/v1/stats?from=" + today.AddDate(0, 0, 1-days).Format(time.DateOnly) + "&to=" + today.Format(time.DateOnly)
	}
	b.recordCalls()
	role("link", "Home", "click")
	role("img", "Pushes sent a day over the last 30 days, 0 in all", "wait")
	role("button", "Numbers by day", "click")
	waitFor(t, "30 rows by day", func() bool { return len(b.rows("Numbers by day")) == 30 })
	want := []string{statsOf(30)}
	for _, p := range []struct {
		value, name string
		days        int
	}{{"90", "last 90 days", 90}, {"365", "last 12 months", 365}} {
		role("combobox", "Period", "select", p.value)
		role("img", "Pushes sent a day over the "+p.name+", 0 in all", "wait")
		want = append(want, statsOf(p.days))
		// The chart's label follows the select at once; the stats are
		// asked for just after.
		waitFor(t, p.name+"'s stats asked", func() bool { return len(b.calls("/api/v1/stats")) >= len(want) })
		if got := b.calls("/api/v1/stats"); !slices.Equal(got, want) {
			t.Fatalf("%s: stats asked %q, want %q", p.name, got, want)
		}
		waitFor(t, fmt.Sprintf("%d rows by day", p.days), func() bool { return len(b.rows("Numbers by day")) == p.days })
		var main string
		b.d.page(`document.querySelector('main').textContent`, &main)
		if !strings.Contains(main, "Over the "+p.name+", days in Europe/Paris.") {
			t.Fatalf("%s: the page says %q", p.name, main)
		}
	}
}

// audienceList is GET /audience/subscribers with query, everyone on one
// page.
type audienceList struct {
	Items []struct {
		ID         string `json:"id"`
		ExternalID string `json:"externalId"`
		Tags       []struct {
			Key   string  `json:"key"`
			Value *string `json:"value"`
		} `json:"tags"`
	} `json:"items"`
	Total int `json:"total"`
}

func (l audienceList) externalIDs() []string {
	out := make([]string, 0, len(l.Items))
	for _, p := range l.Items {
		out = append(out, p.ExternalID)
	}
	return out
}

// TestDashboardFlowsAudience pages through the audience with Load more,
// labels people picked on both pages and deletes others.
func TestDashboardFlowsAudience(t *testing.T) {
	ts := startServer(t)
	b, _ := startDashboard(t, ts)
	role, heading := b.role, b.heading

	people := make([]string, 27)
	for i := range people {
		people[i] = fmt.Sprintf("p-%02d", i+1)
	}
	rows, _ := json.Marshal(people)
	var imported struct{ Processed int }
	b.api("POST", "/subscribers/import", `{subscribers: `+string(rows)+`.map((externalId) => ({externalId}))}`, &imported)
	if imported.Processed != 27 {
		t.Fatalf("import %+v", imported)
	}
	list := func(query string) audienceList {
		t.Helper()
		var l audienceList
		b.api("GET", "/audience/subscribers?limit=100&count=1"+query, "", &l)
		return l
	}
	// The list's order (newest first; people imported together are
	// ordered by id) is the API's.
	all := list("")
	order := all.externalIDs()
	if sorted := slices.Sorted(slices.Values(order)); all.Total != 27 || !slices.Equal(sorted, people) {
		t.Fatalf("set-up: %d people %q", all.Total, order)
	}
	idOf := map[string]string{}
	for _, p := range all.Items {
		idOf[p.ExternalID] = p.ID
	}

	role("link", "Audience", "click")
	heading("Audience")
	b.waitRows("People", order[:25])
	role("button", "Load more", "click")
	b.waitRows("People", order)
	if n := role("button", "Load more", "count"); n != "0" {
		t.Fatal("Load more offered after the last page")
	}

	// A label for two people, one from each page.
	labelled := []string{order[1], order[26]}
	for _, p := range labelled {
		role("checkbox", "Pick "+p, "click")
	}
	role("heading", "2 picked", "wait")
	role("textbox", "Label", "fill", "vip")
	role("textbox", "Value", "fill", "yes")
	role("button", "Add label", "click")
	var vip audienceList
	// Wait for the page and its total both to show the labels (the API
	// reads them from one snapshot; the test does not lean on that).
	waitFor(t, "the label", func() bool {
		vip = list("&tag=vip")
		return vip.Total == len(labelled) && len(vip.Items) == len(labelled)
	})
	if got := slices.Sorted(slices.Values(vip.externalIDs())); !slices.Equal(got, slices.Sorted(slices.Values(labelled))) {
		t.Fatalf("labelled %q, want %q", got, labelled)
	}
	for _, p := range vip.Items {
		if len(p.Tags) != 1 || p.Tags[0].Key != "vip" || p.Tags[0].Value == nil || *p.Tags[0].Value != "yes" {
			t.Fatalf("%s's labels %+v", p.ExternalID, p.Tags)
		}
	}
	// The list is read again from its first page, nobody picked.
	b.waitRows("People", order[:25])
	waitFor(t, "the label shown", func() bool { return role("cell", "vip=yes", "count") == "1" })
	if n := role("heading", "2 picked", "count"); n != "0" {
		t.Fatal("people still picked after labelling")
	}

	// Two others deleted; everyone else stays, labels and all.
	deleted := []string{order[0], order[2]}
	for _, p := range deleted {
		role("checkbox", "Pick "+p, "click")
	}
	role("button", "Delete picked", "click") // the confirmation is accepted
	var left []string
	for _, p := range order {
		if !slices.Contains(deleted, p) {
			left = append(left, p)
		}
	}
	b.waitRows("People", left[:25])
	if got := list(""); got.Total != 25 || !slices.Equal(got.externalIDs(), left) {
		t.Fatalf("after the deletion %d people %q, want %q", got.Total, got.externalIDs(), left)
	}
	for _, p := range deleted {
		var e struct{ Error string }
		if code := b.apiStatus("GET", "/subscribers/"+idOf[p]+"/profile", "", &e); code != 404 || e.Error != "not_found" {
			t.Fatalf("%s's profile after the deletion: %d %+v", p, code, e)
		}
	}
	if got := list("&tag=vip"); got.Total != 2 {
		t.Fatalf("labelled after the deletion: %q", got.externalIDs())
	}
}

// TestDashboardFlowsWebhooks resends a delivery from the log and deletes a
// webhook, with a receiver on loopback.
func TestDashboardFlowsWebhooks(t *testing.T) {
	type hit struct{ Path, Event, Delivery string }
	var (
		mu   sync.Mutex
		hits []hit
	)
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		hits = append(hits, hit{r.URL.Path, r.Header.Get(signature.HeaderEvent), r.Header.Get(signature.HeaderDelivery)})
		mu.Unlock()
	}))
	t.Cleanup(rc.Close)
	receivedHits := func() []hit {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(hits)
	}
	u, _ := url.Parse(rc.URL)
	ts := startServer(t, func(c *Config) { c.WebhookAllowHosts = u.Host })
	b, _ := startDashboard(t, ts)
	role, heading := b.role, b.heading

	type hook struct {
		ID          string  `json:"id"`
		URL         string  `json:"url"`
		LastFiredAt *string `json:"last_fired_at"`
	}
	var kept, gone struct{ Webhook hook }
	b.api("POST", "/webhooks", `{url: '`+rc.URL+`/kept'}`, &kept)
	b.api("POST", "/webhooks", `{url: '`+rc.URL+`/gone'}`, &gone)
	webhooks := func() []hook {
		t.Helper()
		var l struct{ Webhooks []hook }
		b.api("GET", "/webhooks", "", &l)
		return l.Webhooks
	}
	// firedAt is when gone's last attempt was recorded, read from the list
	// (delivery-log reads are limited to 30 a minute).
	firedAt := func() string {
		for _, h := range webhooks() {
			if h.ID == gone.Webhook.ID && h.LastFiredAt != nil {
				return *h.LastFiredAt
			}
		}
		return ""
	}
	var test struct {
		Delivery struct{ ID string } `json:"delivery"`
	}
	b.api("POST", "/webhooks/"+gone.Webhook.ID+"/test", "", &test)
	waitFor(t, "the test event", func() bool { return firedAt() != "" })
	first := firedAt()

	// Resend from the delivery's page: the same delivery again.
	b.d.call("goto", map[string]string{"url": ts.base + "/?log#/webhooks/" + gone.Webhook.ID}, nil)
	heading("Delivery log")
	role("link", "webhook.test", "click")
	role("heading", "Delivery "+test.Delivery.ID, "wait")
	role("button", "Resend", "click")
	waitFor(t, "the resend", func() bool { return firedAt() != first })
	want := []hit{{"/gone", "webhook.test", test.Delivery.ID}, {"/gone", "webhook.test", test.Delivery.ID}}
	if got := receivedHits(); !slices.Equal(got, want) {
		t.Fatalf("the receiver got %+v, want %+v", got, want)
	}
	var one struct {
		Delivery struct {
			Status   string `json:"status"`
			Attempts int    `json:"attempts"`
		} `json:"delivery"`
	}
	b.api("GET", "/webhooks/"+gone.Webhook.ID+"/deliveries/"+test.Delivery.ID, "", &one)
	if one.Delivery.Status != "succeeded" || one.Delivery.Attempts != 2 {
		t.Fatalf("the delivery after its resend %+v", one.Delivery)
	}

	// Delete one webhook, its log with it; the other stays.
	b.d.call("goto", map[string]string{"url": ts.base + "/?hooks#/webhooks"}, nil) // the log links back to Webhooks too
	heading("Webhooks")
	role("button", "Delete "+rc.URL+"/gone", "click") // the confirmation is accepted
	waitFor(t, "the deleted webhook to go", func() bool { return role("button", "Delete "+rc.URL+"/gone", "count") == "0" })
	if got := webhooks(); len(got) != 1 || got[0].ID != kept.Webhook.ID || got[0].URL != rc.URL+"/kept" {
		t.Fatalf("webhooks after the deletion %+v", got)
	}
	var e struct{ Error string }
	if code := b.apiStatus("GET", "/webhooks/"+gone.Webhook.ID+"/deliveries", "", &e); code != 404 || e.Error != "not_found" {
		t.Fatalf("the deleted webhook's log: %d %+v", code, e)
	}
	role("button", "Delete "+rc.URL+"/kept", "wait")
}

// TestDashboardFlowsWebsites removes a test device, withdraws an
// invitation and switches between two websites.
func TestDashboardFlowsWebsites(t *testing.T) {
	ts := startServer(t)
	b, shop := startDashboard(t, ts)
	role, heading := b.role, b.heading

	// Two test devices; one removed on the Install page, its browser still
	// subscribed.
	endpoints := map[string]string{}
	for _, name := range []string{"Desk", "Phone"} {
		s := ts.subscribe(shop, ts.push.NewBrowser(shop.VAPIDPublicKey), map[string]any{"externalId": strings.ToLower(name)})
		endpoints[name] = s.EndpointID
		b.api("POST", "/test-devices", `{endpointId: '`+s.EndpointID+`', name: '`+name+`'}`, nil)
	}
	role("link", "Install", "click")
	heading("Install on Shop")
	role("button", "Remove test device Phone", "wait")
	role("button", "Remove test device Desk", "click")
	b.waitRows("Test devices", []string{"Phone"})
	var devices struct {
		TestDevices []struct{ ID, Name string } `json:"testDevices"`
	}
	b.api("GET", "/test-devices", "", &devices)
	if len(devices.TestDevices) != 1 || devices.TestDevices[0].ID != endpoints["Phone"] || devices.TestDevices[0].Name != "Phone" {
		t.Fatalf("test devices after the removal %+v", devices.TestDevices)
	}
	var desk struct {
		Endpoints []struct{ ID string } `json:"endpoints"`
	}
	b.api("GET", "/subscribers/desk/profile", "", &desk)
	if len(desk.Endpoints) != 1 || desk.Endpoints[0].ID != endpoints["Desk"] {
		t.Fatalf("the removed test device's browser %+v", desk.Endpoints)
	}

	// Two invitations; one withdrawn in Settings.
	b.api("POST", "/members", `{email: 'bob@shop.example', role: 'viewer'}`, nil)
	b.api("POST", "/members", `{email: 'cy@shop.example', role: 'admin'}`, nil)
	role("link", "Settings", "click")
	heading("Settings")
	role("cell", "bob@shop.example (invited)", "wait")
	role("button", "Withdraw the invitation of bob@shop.example", "click")
	waitFor(t, "the withdrawn invitation to go", func() bool { return role("cell", "bob@shop.example (invited)", "count") == "0" })
	role("cell", "cy@shop.example (invited)", "wait")
	var team struct {
		Members []struct{ Email, Role string } `json:"members"`
		Invites []struct{ Email, Role string } `json:"invites"`
	}
	b.api("GET", "/members", "", &team)
	if len(team.Invites) != 1 || team.Invites[0].Email != "cy@shop.example" || team.Invites[0].Role != "admin" ||
		len(team.Members) != 1 || team.Members[0].Email != "grace@shop.example" || team.Members[0].Role != "owner" {
		t.Fatalf("the team after the withdrawal %+v", team)
	}

	// A second website, each with its own draft; the switcher changes
	// every page's data to the chosen website's, and back.
	var blog struct {
		Website website `json:"website"`
	}
	b.api("POST", "/websites", `{name: 'Blog', url: 'https://blog.example', timezone: 'UTC'}`, &blog)
	b.api("POST", "/notifications", `{title: 'Shop news', draft: true}`, nil)
	b.project = blog.Website.ProjectID
	b.api("POST", "/notifications", `{title: 'Blog news', draft: true}`, nil)
	b.project = shop.ProjectID
	b.d.call("goto", map[string]string{"url": ts.base + "/?switch#/notifications?status=draft"}, nil) // a load: the switcher learns of Blog
	heading("Notifications")
	if got := role("combobox", "Website", "value"); got != shop.ProjectID {
		t.Fatalf("the switcher shows %q, want Shop's %q", got, shop.ProjectID)
	}
	b.waitRows("Notifications", []string{"Shop news"})
	role("combobox", "Website", "select", "Blog")
	b.waitRows("Notifications", []string{"Blog news"})
	role("link", "Install", "click")
	heading("Install on Blog")
	if got, want := role("textbox", "Script tag", "value"), `<script src="`+ts.base+`/api/v1/projects/`+blog.Website.ProjectID+`/sdk.js" async></script>`; got != want {
		t.Fatalf("Blog's script tag %q, want %q", got, want)
	}
	waitFor(t, "Blog's test devices", func() bool {
		var main string
		b.d.page(`document.querySelector('main').textContent`, &main)
		return strings.Contains(main, "No test devices yet")
	})
	role("combobox", "Website", "select", "Shop")
	heading("Install on Shop")
	b.waitRows("Test devices", []string{"Phone"})
}
