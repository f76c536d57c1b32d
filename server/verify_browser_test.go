package server

import (
	"net"
	"regexp"
	"strings"
	"testing"
)

// TestVerifyLinkElsewhere: a person signs up in one browser, and opens the
// mailed link in a second one (another device): there the dashboard asks
// for a password, which verifies the address and lands the person signed
// in on the dashboard; the first browser's session is over, and its
// password refused with a message that says what to do. A link in the
// signing-up browser verifies at once; one mailed to a sign-up made again
// (a session without a user) asks for the password there too.
func TestVerifyLinkElsewhere(t *testing.T) {
	// The mail's links go to the public URL, which must be known before
	// the server listens: a free port, taken again at once.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	ts := startServer(t, func(c *Config) {
		c.HTTPAddr = addr
		c.PublicURL = "http://" + addr
	})
	open := func() *dashboard {
		b := &dashboard{t: t, d: startDriver(t), ts: ts}
		b.d.call("launch", map[string]any{
			"executablePath": chromiumPath, "origin": ts.base, "locale": "en-GB", "timezoneId": "Europe/London",
			"subscription": map[string]string{},
		}, nil)
		return b
	}
	// paragraph is the text of the page's paragraph holding part.
	paragraph := func(b *dashboard, part string) string {
		t.Helper()
		var text string
		b.d.page(`[...document.querySelectorAll('p')].map((p) => p.textContent).find((s) => s.includes(`+jsString(part)+`)) || ''`, &text)
		return text
	}
	link := func(email string) string {
		t.Helper()
		var outbox struct {
			Emails []struct{ To, Body string } `json:"emails"`
		}
		ts.call("GET", "/admin/v1/emails", adminToken, nil, &outbox)
		for _, m := range outbox.Emails { // newest first
			if sub := regexp.MustCompile(`:\n\n(http://\S+/#/verify-email\?token=[A-Za-z0-9_-]+)\n\n`).FindStringSubmatch(m.Body); m.To == email && sub != nil {
				return sub[1]
			}
		}
		t.Fatalf("no verification link mailed to %s", email)
		return ""
	}
	// signUp signs up from the sign-in page, to the verify page.
	signUp := func(b *dashboard, email, password string) {
		t.Helper()
		b.heading("Sign in")
		b.role("link", "Create an account", "click")
		b.role("textbox", "Email", "fill", email)
		b.label("Password", "fill", password)
		b.role("button", "Create account", "click")
		b.heading("Verify your email")
	}
	const email = "lin@shop.example"

	// The laptop: sign up; the verify page explains the link.
	laptop := open()
	laptop.d.call("goto", map[string]string{"url": ts.base + "/"}, nil)
	signUp(laptop, email, "the laptop's passphrase")
	if got := paragraph(laptop, "The link works in any browser"); !strings.Contains(got, email) {
		t.Errorf("the verify page says %q", got)
	}
	if got := paragraph(laptop, "Send the code again"); got != "Send the code again · Sign out" {
		t.Errorf("the verify page's actions read %q", got)
	}

	// The phone opens the mailed link: it asks for a password.
	url := link(email)
	if !strings.HasPrefix(url, ts.base+"/#/verify-email?token=") {
		t.Fatalf("the link %q is not the public URL's", url)
	}
	phone := open()
	phone.d.call("goto", map[string]string{"url": url}, nil)
	phone.heading("Choose your password")
	if got, want := phone.role("textbox", "Code", "value"), url[strings.Index(url, "token=")+len("token="):]; got != want {
		t.Fatalf("the code field holds %q, want %q", got, want)
	}
	phone.label("New password", "fill", "short")
	phone.role("button", "Verify and sign in", "click")
	waitFor(t, "the password's error", func() bool { return phone.label("New password", "invalid") == "true" })
	phone.label("New password", "fill", "the phone's passphrase")
	phone.role("button", "Verify and sign in", "click")
	phone.heading("Add your first website")
	var me struct {
		User struct {
			Email         string `json:"email"`
			EmailVerified bool   `json:"emailVerified"`
		} `json:"user"`
	}
	phone.api("GET", "/auth/me", "", &me)
	if me.User.Email != email || !me.User.EmailVerified {
		t.Fatalf("the phone's session: %+v", me)
	}

	// The laptop's session is over; its password is refused, with a
	// message that says what to do.
	var refused struct{ Error string }
	if status := laptop.apiStatus("GET", "/auth/me", "", &refused); status != 401 || refused.Error != "not_authenticated" {
		t.Fatalf("the laptop's session: %d %+v", status, refused)
	}
	laptop.d.call("goto", map[string]string{"url": ts.base + "/?again#/"}, nil)
	laptop.heading("Sign in")
	laptop.role("textbox", "Email", "fill", email)
	laptop.label("Password", "fill", "the laptop's passphrase")
	laptop.role("button", "Sign in", "click")
	const refusal = "wrong e-mail address or password, or the address is not verified yet: open the link in the verification mail, in any browser, or use Forgot your password?"
	waitFor(t, "the sign-in's refusal", func() bool {
		var alert string
		laptop.d.page(`document.querySelector('[role=alert]')?.textContent || ''`, &alert)
		return alert == refusal
	})
	laptop.label("Password", "fill", "the phone's passphrase")
	laptop.role("button", "Sign in", "click")
	laptop.heading("Add your first website")

	// Someone else signs up on the phone's browser and opens their link
	// there: the signing-up session verifies at once, no password asked.
	phone.role("button", "Sign out", "click")
	signUp(phone, "kim@shop.example", "kim's own passphrase")
	phone.d.call("goto", map[string]string{"url": strings.Replace(link("kim@shop.example"), "/#/", "/?link#/", 1)}, nil)
	phone.heading("Add your first website")

	// Jo signs up, signs out before verifying, and signs up again (the
	// address is taken: this session has no user, and a new link is
	// mailed): the new link, opened in this session, asks for the
	// password, and gets Jo in.
	laptop.role("button", "Sign out", "click")
	signUp(laptop, "jo@shop.example", "jo's first passphrase")
	laptop.role("button", "Sign out", "click")
	signUp(laptop, "jo@shop.example", "jo's second passphrase")
	laptop.d.call("goto", map[string]string{"url": strings.Replace(link("jo@shop.example"), "/#/", "/?again#/", 1)}, nil)
	laptop.heading("Choose your password")
	laptop.label("New password", "fill", "jo's own passphrase")
	laptop.role("button", "Verify and sign in", "click")
	laptop.heading("Add your first website")
}

// jsString quotes s as a JavaScript string.
func jsString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}
