package server

import (
	"fmt"
	"strings"
	"testing"
)

// TestDashboardGettingStarted walks the dashboard as a new user does, in
// Chromium, finding every control by its role (or label) and accessible
// name: sign up (a short password refused next to its field), verify the
// address with the mailed code, add a website whose name is markup (shown
// as text), read the install snippet, sign out, fail and then succeed to
// sign in. With RELAYBELL_SCREENSHOTS=dir it saves each page there at
// desktop and phone widths, light and dark (docs/screenshots).
func TestDashboardGettingStarted(t *testing.T) {
	d := startDriver(t)
	ts := startServer(t)
	d.call("launch", map[string]any{
		"executablePath": chromiumPath, "origin": ts.base, "locale": "en-GB", "timezoneId": "Europe/London",
		"subscription": map[string]string{},
	}, nil)
	b := &dashboard{t: t, d: d, ts: ts}
	role, label, heading, shoot := b.role, b.label, b.heading, b.shoot

	headers := map[string]string{}
	d.call("headers", map[string]string{"url": ts.base + "/"}, &headers)
	if csp := headers["content-security-policy"]; !strings.Contains(csp, "frame-ancestors 'none'") || strings.Contains(csp, "unsafe-inline") {
		t.Fatalf("Content-Security-Policy %q", csp)
	}
	heading("Sign in")
	shoot("signin")

	// Sign up, with a password too short first: the error is the
	// password field's.
	role("link", "Create an account", "click")
	heading("Create your account")
	const email, password = "ada@shop.example", "correct horse battery staple"
	role("textbox", "Name", "fill", "Ada")
	role("textbox", "Email", "fill", email)
	label("Password", "fill", "short")
	role("button", "Create account", "click")
	waitFor(t, "the password's error", func() bool { return label("Password", "invalid") == "true" })
	if got := label("Password", "description"); !strings.Contains(got, "8") {
		t.Fatalf("the password's description %q", got)
	}
	shoot("signup")
	label("Password", "fill", password)
	role("button", "Create account", "click")
	heading("Verify your email")

	// The code from the outbox.
	code := b.mailedCode(email)
	adaCode := code
	shoot("verify")
	role("textbox", "Code", "fill", "not-the-code")
	role("button", "Verify", "click")
	waitFor(t, "the code's error", func() bool { return role("textbox", "Code", "invalid") == "true" })
	role("textbox", "Code", "fill", code)
	role("button", "Verify", "click")

	// The first website; its name is markup, shown as text.
	heading("Add your first website")
	const hostile = `<img src=x onerror="window.__xss=1">`
	role("textbox", "Website name", "fill", hostile)
	role("textbox", "Website address", "fill", "not a url")
	role("button", "Add website", "click")
	waitFor(t, "the address's error", func() bool { return role("textbox", "Website address", "invalid") == "true" })
	shoot("add-website")
	role("textbox", "Website address", "fill", "https://shop.example")
	role("combobox", "Time zone", "select", "Europe/Paris")
	role("button", "Add website", "click")
	heading("Install on " + hostile)

	var me struct {
		Websites []struct {
			ProjectID      string `json:"projectId"`
			Name           string `json:"name"`
			Timezone       string `json:"timezone"`
			VAPIDPublicKey string `json:"vapidPublicKey"`
		} `json:"websites"`
	}
	d.page(`fetch('/api/v1/auth/me').then((r) => r.json())`, &me)
	if len(me.Websites) != 1 || me.Websites[0].Name != hostile || me.Websites[0].Timezone != "Europe/Paris" {
		t.Fatalf("websites %+v", me.Websites)
	}
	w := me.Websites[0]
	b.project = w.ProjectID
	base := ts.base + "/api/v1/projects/" + w.ProjectID
	for name, want := range map[string]string{
		"Script tag":          `<script src="` + base + `/sdk.js" async></script>`,
		"Service worker file": `importScripts('` + base + `/sw.js');`,
		"VAPID public key":    w.VAPIDPublicKey,
	} {
		if got := role("textbox", name, "value"); got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
	var xss struct {
		Images int  `json:"images"`
		Ran    bool `json:"ran"`
	}
	d.page(`({ images: document.querySelectorAll('img').length, ran: window.__xss === 1 })`, &xss)
	if xss.Images != 0 || xss.Ran {
		t.Fatalf("the website's name became markup: %+v", xss)
	}
	if got := role("combobox", "Website", "text"); got != hostile {
		t.Fatalf("the switcher shows %q", got)
	}
	shoot("install")

	// This very browser subscribes and gets a test notification; the
	// detail's funnel moves with the worker's delivered and clicked pings.
	pushed := ts.push.NewBrowser(w.VAPIDPublicKey)
	sub := pushed.Subscription()
	d.page(fmt.Sprintf(`(window.__rbSubscription = { endpoint: %q, p256dh: %q, auth: %q }, true)`, sub.Endpoint, sub.P256dh, sub.Auth), nil)
	role("button", "Subscribe this browser", "click")
	role("status", "", "wait")
	waitFor(t, "the subscription", func() bool { return role("status", "", "text") == "Subscribed." })
	// This browser is now one of the website's test devices, listed.
	role("button", "Remove test device Ada: Chrome on Linux", "wait")
	role("button", "Send a test notification", "click")
	role("link", "Watch it go", "wait")
	testID := strings.TrimPrefix(role("link", "Watch it go", "href"), "#/notifications/")
	got := waitReceived(t, pushed, testID)
	if got.Title != "Hello from RelayBell" {
		t.Fatalf("test notification %+v", got)
	}
	var plaintext []byte
	for _, dl := range pushed.Received() {
		if strings.Contains(string(dl.Payload), testID) {
			plaintext = dl.Payload
		}
	}
	d.call("cdp", map[string]any{"method": "ServiceWorker.deliverPushMessage",
		"params": map[string]string{"origin": ts.base, "registrationId": d.registrationID(ts.base + "/"), "data": string(plaintext)}}, nil)
	// The worker pings once showNotification resolved; only then is the
	// notification read (a getNotifications call that overlaps
	// showNotification can leave it out for good: see TestBrowserSDK).
	waitFor(t, "the delivered ping", func() bool {
		var dt struct{ Funnel struct{ Delivered int } }
		b.api("GET", "/notifications/"+testID, "", &dt)
		return dt.Funnel.Delivered == 1
	})
	if shown := d.notifications(); len(shown) != 1 || shown[0].Title != "Hello from RelayBell" {
		t.Fatalf("the worker shows %+v", shown)
	}
	role("link", "Watch it go", "click")
	heading("Hello from RelayBell")
	funnel := func(step string) string {
		t.Helper()
		var n string
		d.page(fmt.Sprintf(`[...document.querySelectorAll('table.funnel tr')].find((r) => r.querySelector('th').textContent === %q).querySelector('td').textContent`, step), &n)
		return n
	}
	reload := func() {
		role("link", "All notifications", "click")
		role("link", "Hello from RelayBell", "click")
		heading("Hello from RelayBell")
	}
	waitFor(t, "the delivered ping in the funnel", func() bool { reload(); return funnel("Delivered") == "1" })
	d.worker(`(self.clients.openWindow = async () => null, self.registration.getNotifications().then((ns) => self.relaybellHandleClick(ns[0].data, '')))`, nil)
	waitFor(t, "the clicked ping in the funnel", func() bool { reload(); return funnel("Clicked") == "1" })
	shoot("notification-funnel")
	role("link", "Install", "click")
	heading("Install on " + hostile)

	role("link", "Home", "click")
	heading(hostile)
	role("heading", "Latest sends", "wait")
	// This browser in the 30-day charts; the test send is listed but is
	// no send of the stats.
	role("img", "Pushes sent a day over the last 30 days, 0 in all", "wait")
	role("img", "Subscribers at the end of each day over the last 30 days, 1 now", "wait")
	role("link", "Hello from RelayBell", "wait")
	role("combobox", "Period", "select", "7")
	role("img", "New subscribers a day over the last 7 days, 1 in all", "wait")
	role("button", "Numbers by day", "click")
	role("table", "Numbers by day", "wait")
	shoot("home-first")

	// A send (made through the session, as the composer will), listed,
	// filtered and opened.
	const title = "<b>Spring</b> sale"
	var sent struct {
		NotificationID string `json:"notificationId"`
	}
	d.page(`fetch('/api/v1/notifications', {method: 'POST', credentials: 'same-origin', headers: {'Content-Type': 'application/json',
		'X-RelayBell-CSRF': '1', 'X-Project-Id': '`+w.ProjectID+`'}, body: JSON.stringify({title: '`+title+`', body: 'Everything 20% off'})}).then((r) => r.json())`, &sent)
	if sent.NotificationID == "" {
		t.Fatal("no send made")
	}
	role("link", "Notifications", "click")
	heading("Notifications")
	role("link", title, "wait")
	if href := role("link", "Export CSV", "href"); !strings.Contains(href, "projectId="+w.ProjectID) {
		t.Fatalf("export link %q", href)
	}
	role("searchbox", "Search", "fill", "no such words")
	role("button", "Filter", "click")
	waitFor(t, "the empty list", func() bool { return role("link", title, "count") == "0" })
	role("searchbox", "Search", "fill", "spring")
	label("From", "fill", "2026-03-10")
	label("To", "fill", "2026-03-01")
	role("button", "Filter", "click")
	waitFor(t, "the range's error", func() bool { return label("From", "invalid") == "true" })
	label("From", "fill", "")
	label("To", "fill", "")
	role("button", "Filter", "click")
	role("link", title, "click")
	heading(title)
	role("rowheader", "Recipients", "wait")
	shoot("notification")
	role("link", "All notifications", "click")
	heading("Notifications")
	shoot("notifications")

	// The composer: a send to named people, confirmed with its audience.
	role("link", "New notification", "click")
	heading("New notification")
	role("button", "Review and send", "click")
	waitFor(t, "the title's error", func() bool { return role("textbox", "Title", "invalid") == "true" })
	role("textbox", "Title", "fill", "Flash sale")
	role("textbox", "Message", "fill", "Two hours only")
	role("radio", "Specific people", "click")
	role("textbox", "External ids", "fill", "ann, bob")
	role("textbox", "Button 1 text", "fill", "Shop now")
	role("textbox", "Button 1 link", "fill", "https://shop.example/sale")
	role("img", "Android preview: Flash sale, Two hours only", "wait")
	role("img", "macOS preview: Flash sale, Two hours only", "wait")
	shoot("compose")
	role("button", "Review and send", "click")
	if got := role("dialog", "Send “Flash sale”?", "text"); !strings.Contains(got, "2 people named") || !strings.Contains(got, "now") {
		t.Fatalf("confirmation %q", got)
	}
	role("button", "Send", "click")
	heading("Flash sale")

	var facts string
	d.page(`document.querySelector('dl.facts').textContent`, &facts)
	if !strings.Contains(facts, "2 users") {
		t.Fatalf("facts %q", facts)
	}
	var sendBody struct {
		SendBody struct {
			Actions []struct{ Title, URL string } `json:"actions"`
		} `json:"sendBody"`
	}
	d.page(`fetch('/api/v1/notifications/' + location.hash.split('/').pop(), {headers: {'X-Project-Id': '`+w.ProjectID+`'}}).then((r) => r.json())`, &sendBody)
	if len(sendBody.SendBody.Actions) != 1 || sendBody.SendBody.Actions[0].Title != "Shop now" || sendBody.SendBody.Actions[0].URL != "https://shop.example/sale" {
		t.Fatalf("the send's buttons %+v", sendBody.SendBody.Actions)
	}

	// Later, at a wall-clock time of the website's zone (Europe/Paris).
	role("link", "New notification", "click")
	role("textbox", "Title", "fill", "Tomorrow")
	role("radio", "Later", "click")
	label("Send at (Europe/Paris)", "fill", "2099-07-01T09:30")
	role("button", "Review and send", "click")
	if got := role("dialog", "Send “Tomorrow”?", "text"); !strings.Contains(got, "1 Jul 2099, 09:30 CEST") {
		t.Fatalf("confirmation %q", got)
	}
	role("button", "Send", "click")
	heading("Tomorrow")
	// Duplicate opens the composer with the send's fields.
	role("button", "Duplicate", "click")
	heading("New notification")
	if got := role("textbox", "Title", "value"); got != "Tomorrow" {
		t.Fatalf("duplicated title %q", got)
	}
	d.page(`(history.back(), true)`, nil)
	heading("Tomorrow")
	var later struct {
		Notification struct {
			ScheduledAt string `json:"scheduled_at"`
		} `json:"notification"`
	}
	d.page(`fetch('/api/v1/notifications/' + location.hash.split('/').pop(), {headers: {'X-Project-Id': '`+w.ProjectID+`'}}).then((r) => r.json())`, &later)
	if !strings.HasPrefix(later.Notification.ScheduledAt, "2099-07-01T07:30:00") {
		t.Fatalf("scheduled at %q, want 07:30 UTC", later.Notification.ScheduledAt)
	}

	// Audience: a person imported with markup for external id and label,
	// shown as text; a subscribed browser with an event; a profile; an
	// erasure.
	post := func(path string, body string, out any) {
		t.Helper()
		d.page(`fetch('/api/v1`+path+`', {method: 'POST', credentials: 'same-origin', headers: {'Content-Type': 'application/json',
			'X-RelayBell-CSRF': '1', 'X-Project-Id': '`+w.ProjectID+`'}, body: JSON.stringify(`+body+`)}).then((r) => r.json())`, out)
	}
	const markup = `<img src=x onerror=alert(1)>`
	var imported struct{ Processed int }
	post("/subscribers/import", `{subscribers: [{externalId: '`+markup+`', tags: {plan: '`+markup+`'}}]}`, &imported)
	if imported.Processed != 1 {
		t.Fatalf("import %+v", imported)
	}
	ann := ts.subscribe(website{ProjectID: w.ProjectID, VAPIDPublicKey: w.VAPIDPublicKey}, ts.push.NewBrowser(w.VAPIDPublicKey), map[string]any{"externalId": "ann", "country": "FR"})
	var tracked struct{ OK bool }
	post("/events", `{event: 'purchase', externalId: 'ann', properties: {value: 12.5}}`, &tracked)
	if !tracked.OK {
		t.Fatal("event refused")
	}
	role("link", "Audience", "click")
	heading("Audience")
	role("link", markup, "wait")
	// A CSV import, its columns mapped: id, and plan as a label.
	role("button", "Import people from a CSV file", "click")
	d.call("role", map[string]any{"label": "CSV file", "action": "upload",
		"value": map[string]string{"name": "people.csv", "text": "email,user_id,plan\r\n\"a@x.example\",u-1,gold\r\nb@x.example,u-2,\"silver, old\"\n"}}, nil)
	if got := role("combobox", "External id column", "text"); !strings.Contains(got, "user_id") {
		t.Fatalf("id column choices %q", got)
	}
	role("checkbox", "plan", "click")
	role("button", "Import", "click")
	waitFor(t, "the import", func() bool { return role("link", "u-2", "count") == "1" })
	role("cell", "plan=silver, old", "wait")
	role("cell", "plan="+markup, "wait")
	d.page(`({ images: document.querySelectorAll('img').length, ran: window.__xss === 1 })`, &xss)
	if xss.Images != 0 || xss.Ran {
		t.Fatalf("a person's markup became markup: %+v", xss)
	}
	shoot("audience")
	role("combobox", "Status", "select", "subscribed")
	role("button", "Filter", "click")
	waitFor(t, "the filtered list", func() bool { return role("link", markup, "count") == "0" })
	role("link", "ann", "click")
	heading("ann")
	role("cell", "purchase", "wait")
	if got := role("cell", `{"value":12.5}`, "text"); got != `{"value":12.5}` {
		t.Fatalf("the event's properties %q", got)
	}
	shoot("person")
	role("button", "Erase this person", "click")
	heading("Audience")
	waitFor(t, "ann's erasure", func() bool {
		var n struct{ Error string }
		d.page(`fetch('/api/v1/subscribers/`+ann.SubscriberID+`/profile', {headers: {'X-Project-Id': '`+w.ProjectID+`'}}).then((r) => r.json())`, &n)
		return n.Error == "not_found"
	})

	// Segments with a live count, and topics.
	role("link", "Segments", "click")
	heading("Segments and topics")
	role("textbox", "Segment name", "fill", "French")
	role("textbox", "Value of rule 1", "fill", "FR")
	// The live count: nobody left in France (Ann was erased).
	waitFor(t, "the rule's count", func() bool { return strings.Contains(role("group", "Rules", "text"), "Reaches 0 browsers now.") })
	role("button", "Create segment", "click")
	role("cell", "French", "wait")
	role("button", "Add rule", "click")
	role("combobox", "Field of rule 2", "select", "tag")
	role("textbox", "Label name of rule 2", "fill", "plan")
	role("combobox", "Condition of rule 2", "select", "exists")
	role("textbox", "Segment name", "fill", "")
	role("button", "Create segment", "click")
	waitFor(t, "the name's error", func() bool { return role("textbox", "Segment name", "invalid") == "true" })
	role("textbox", "Topic name", "fill", "Deals")
	role("button", "Create topic", "click")
	role("cell", "deals", "wait")
	shoot("segments")
	role("button", "Delete topic Deals", "click")
	waitFor(t, "the topic's deletion", func() bool { return role("cell", "deals", "count") == "0" })

	// Webhooks: made with its secret shown once, a test event in the log.
	role("link", "Webhooks", "click")
	heading("Webhooks")
	role("textbox", "Webhook address", "fill", "ftp://hooks.shop.example")
	role("button", "Create webhook", "click")
	waitFor(t, "the address's error", func() bool { return role("textbox", "Webhook address", "invalid") == "true" })
	role("textbox", "Webhook address", "fill", "https://hooks.shop.example/relaybell")
	role("checkbox", "notification.clicked", "click")
	role("button", "Create webhook", "click")
	if secret := role("textbox", "Signing secret", "value"); len(secret) < 20 {
		t.Fatalf("signing secret %q", secret)
	}
	shoot("webhooks")
	role("link", "https://hooks.shop.example/relaybell", "click")
	heading("Delivery log")
	role("button", "Send a test event", "click")
	role("link", "webhook.test", "click")
	waitFor(t, "the delivery's request", func() bool {
		return strings.Contains(role("textbox", "Request body", "value"), `"event":"webhook.test"`)
	})
	shoot("webhook-log")

	// Settings: a key with one scope, shown once, working, then revoked;
	// an invitation.
	role("link", "Settings", "click")
	heading("Settings")
	role("textbox", "Revenue currency", "wait")
	role("textbox", "Revenue currency", "fill", "EURO")
	role("button", "Save settings", "click")
	waitFor(t, "the currency's error", func() bool { return role("textbox", "Revenue currency", "invalid") == "true" })
	role("textbox", "Revenue currency", "fill", "eur")
	role("checkbox", "Quiet hours", "click")
	role("button", "Save settings", "click")
	role("status", "", "wait")
	if got := role("textbox", "Revenue currency", "value"); got != "EUR" {
		t.Fatalf("currency after saving %q", got)
	}
	var settings struct {
		Settings struct {
			RevenueCurrency string                       `json:"revenueCurrency"`
			QuietHours      *struct{ Start, End string } `json:"quietHours"`
		} `json:"settings"`
	}
	d.page(`fetch('/api/v1/settings', {headers: {'X-Project-Id': '`+w.ProjectID+`'}}).then((r) => r.json())`, &settings)
	if settings.Settings.RevenueCurrency != "EUR" || settings.Settings.QuietHours == nil || settings.Settings.QuietHours.Start != "22:00" {
		t.Fatalf("settings stored %+v", settings.Settings)
	}
	role("heading", "API keys", "wait")
	role("textbox", "Key name", "fill", "Shop server")
	role("checkbox", "full", "click")
	role("checkbox", "send", "click")
	role("button", "Create key", "click")
	role("textbox", "New API key", "wait")
	key := role("textbox", "New API key", "value")
	if !strings.HasPrefix(key, "rb_live_") {
		t.Fatalf("new key %q", key)
	}
	shoot("settings")
	if code := ts.call("POST", "/api/v1/notifications", key, map[string]any{"title": "From the server"}, nil); code != 202 {
		t.Fatalf("the new key sends: %d", code)
	}
	if code := ts.call("GET", "/api/v1/events", key, nil, nil); code != 403 {
		t.Fatalf("the send-only key reads events: %d", code)
	}
	role("link", "Home", "click")
	role("link", "Settings", "click")
	role("heading", "API keys", "wait")
	role("button", "Revoke Shop server", "wait")
	if n := role("textbox", "New API key", "count"); n != "0" {
		t.Fatal("the key is shown again")
	}
	role("button", "Revoke Shop server", "click")
	waitFor(t, "the revoked key to go", func() bool { return role("button", "Revoke Shop server", "count") == "0" })
	waitFor(t, "the revoked key to stop working", func() bool {
		return ts.call("POST", "/api/v1/notifications", key, map[string]any{"title": "Revoked"}, nil) == 401
	})
	role("button", "Add a secret", "click")
	if got := role("textbox", "New identity secret", "value"); !strings.HasPrefix(got, "rbid_") {
		t.Fatalf("identity secret %q", got)
	}
	role("radio", "Enforce: links without a valid hash are refused", "click")
	var identity struct{ Mode string }
	waitFor(t, "enforce mode", func() bool {
		d.page(`fetch('/api/v1/identity', {headers: {'X-Project-Id': '`+w.ProjectID+`'}}).then((r) => r.json())`, &identity)
		return identity.Mode == "enforce"
	})
	role("radio", "Off: a browser links any external id", "click")
	waitFor(t, "off again (only a session may lower it)", func() bool {
		d.page(`fetch('/api/v1/identity', {headers: {'X-Project-Id': '`+w.ProjectID+`'}}).then((r) => r.json())`, &identity)
		return identity.Mode == "off"
	})
	role("textbox", "Email to invite", "fill", "bob@shop.example")
	role("combobox", "Role", "select", "viewer")
	role("button", "Invite", "click")
	role("cell", "bob@shop.example (invited)", "wait")

	// Bob signs up with the invited address: a viewer of Ada's website,
	// who sees no control that would change anything there (search forms
	// only read).
	role("button", "Sign out", "click")
	heading("Sign in")
	role("link", "Create an account", "click")
	role("textbox", "Email", "fill", "bob@shop.example")
	label("Password", "fill", "another long passphrase")
	role("button", "Create account", "click")
	heading("Verify your email")
	code = b.mailedCode("bob@shop.example")
	role("textbox", "Code", "fill", code)
	role("button", "Verify", "click")
	heading(hostile)
	if n := role("link", "New notification", "count"); n != "0" {
		t.Error("a viewer sees the composer")
	}
	for _, page := range []struct{ link, heading string }{{"Settings", "Settings"}, {"Segments", "Segments and topics"}, {"Webhooks", "Webhooks"}, {"Audience", "Audience"}, {"Install", "Install on " + hostile}} {
		role("link", page.link, "click")
		heading(page.heading)
		if page.link == "Settings" {
			// The one control a viewer has there mails the viewer a
			// test report, which changes nothing; wait for it, so the
			// check below runs on the whole page.
			role("button", "Send me a test report", "wait")
		}
		var enabled []string
		d.page(`[...document.querySelectorAll('main button:enabled, main input:enabled:not([readonly]), main select:enabled, main textarea:enabled:not([readonly])')]
			.filter((e) => !e.closest('form[role=search]') && e.textContent !== 'Send me a test report').map((e) => e.outerHTML.slice(0, 80))`, &enabled)
		if len(enabled) != 0 {
			t.Errorf("%s: a viewer has controls %q", page.link, enabled)
		}
	}

	// Sign out; a wrong password is refused on the form; then in.
	role("button", "Sign out", "click")
	heading("Sign in")
	role("textbox", "Email", "fill", email)
	label("Password", "fill", "wrong password")
	role("button", "Sign in", "click")
	var alert string
	waitFor(t, "the sign-in error", func() bool {
		var n string
		d.call("role", map[string]any{"role": "alert", "action": "count"}, &n)
		if n == "0" {
			return false
		}
		d.call("role", map[string]any{"role": "alert", "action": "text"}, &alert)
		return alert != ""
	})
	if !strings.Contains(strings.ToLower(alert), "password") {
		t.Fatalf("sign-in error %q", alert)
	}
	// The last sign-in from the keyboard alone: Tab to the fields, Enter.
	d.call("goto", map[string]string{"url": ts.base + "/?keyboard#/signin"}, nil) // a fresh load: the focus starts at the top
	heading("Sign in")
	var focus string
	d.call("keyboard", map[string]any{"steps": []map[string]string{{"press": "Tab"}}}, &focus)
	if focus != "Email" {
		t.Fatalf("the first Tab reaches %q, want Email", focus)
	}
	d.call("keyboard", map[string]any{"steps": []map[string]string{{"press": "Control+A"}, {"type": email}, {"press": "Tab"}}}, &focus)
	if focus != "Password" {
		t.Fatalf("the second Tab reaches %q, want Password", focus)
	}
	d.call("keyboard", map[string]any{"steps": []map[string]string{{"type": password}, {"press": "Enter"}}}, &focus)
	heading(hostile)
	// … and on to a page by its link.
	for range 30 {
		if d.call("keyboard", map[string]any{"steps": []map[string]string{{"press": "Tab"}}}, &focus); focus == "Notifications" {
			break
		}
	}
	if focus != "Notifications" {
		t.Fatalf("Tab never reached the Notifications link (last %q)", focus)
	}
	d.call("keyboard", map[string]any{"steps": []map[string]string{{"press": "Enter"}}}, &focus)
	heading("Notifications")

	// The owner makes Bob an admin.
	role("link", "Settings", "click")
	role("combobox", "Role of bob@shop.example", "select", "admin")
	waitFor(t, "Bob an admin", func() bool {
		var team struct {
			Members []struct{ Email, Role string } `json:"members"`
		}
		b.api("GET", "/members", "", &team)
		for _, m := range team.Members {
			if m.Email == "bob@shop.example" {
				return m.Role == "admin"
			}
		}
		return false
	})

	// Ada forgets her password: a code by mail, a new password, and in.
	role("button", "Sign out", "click")
	heading("Sign in")
	role("link", "Forgot your password?", "click")
	heading("Reset your password")
	shoot("forgot-password")
	role("textbox", "Email", "fill", email)
	role("button", "Send the reset code", "click")
	role("link", "I have the code", "click")
	heading("Choose a new password")
	shoot("reset-password")
	var reset string
	waitFor(t, "the reset code mailed", func() bool {
		for _, c := range b.mailedCodes(email) {
			if c != adaCode {
				reset = c
			}
		}
		return reset != ""
	})
	role("textbox", "Code", "fill", reset)
	label("New password", "fill", "an even longer passphrase")
	role("button", "Set password", "click")
	role("link", "Sign in", "click")
	heading("Sign in")
	role("textbox", "Email", "fill", email)
	label("Password", "fill", "an even longer passphrase")
	role("button", "Sign in", "click")
	heading(hostile)
}
