package server

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/color"
	"image/png"
	"reflect"
	"strings"
	"testing"
)

// logoPNG is a 256x128 PNG: the icon the server makes of it is 192x192.
func logoPNG(t *testing.T) string {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, 256, 128))
	for y := range 128 {
		for x := range 256 {
			img.Set(x, y, color.NRGBA{uint8(x), 90, uint8(255 - x), 255})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b.Bytes())
}

// TestDashboardLogo sets the website's logo on the settings page, found by
// role and name: an uploaded image (the preview shows the 192x192 icon the
// server made), an https address, a refused http one (the API's message,
// nothing stored), and its removal. Each is checked in GET /logo.
func TestDashboardLogo(t *testing.T) {
	ts := startServer(t)
	b, _ := startDashboard(t, ts)
	role, heading := b.role, b.heading
	type logo struct {
		UploadID *string `json:"uploadId"`
		URL      string  `json:"url"`
	}
	stored := func() *logo {
		var out struct{ Logo *logo }
		b.api("GET", "/logo", "", &out)
		return out.Logo
	}

	role("link", "Settings", "click")
	heading("Logo")
	waitFor(t, "the empty logo", func() bool { return strings.Contains(b.mainText(), "No logo yet") })

	b.d.call("role", map[string]any{"label": "Upload a logo", "action": "upload",
		"value": map[string]string{"name": "logo.png", "mimeType": "image/png", "base64": logoPNG(t)}}, nil)
	role("status", "", "wait")
	waitFor(t, "the upload", func() bool { return strings.Contains(b.mainText(), "Logo uploaded.") })
	l := stored()
	if l == nil || l.UploadID == nil || l.URL != ts.base+"/api/v1/uploads/"+*l.UploadID+"/icon" {
		t.Fatalf("stored logo %+v", l)
	}
	role("img", "Logo preview", "wait")
	var size []int
	waitFor(t, "the preview loaded", func() bool {
		b.d.page(`(() => { const i = document.querySelector('main img'); return i && i.complete ? [i.naturalWidth, i.naturalHeight] : []; })()`, &size)
		return len(size) == 2
	})
	if !reflect.DeepEqual(size, []int{192, 192}) {
		t.Fatalf("the preview is %v, want the 192x192 icon", size)
	}
	b.shoot("settings-logo")

	// The composer's preview shows the logo for a send without an icon.
	role("link", "New notification", "click")
	heading("New notification")
	var icons []string
	waitFor(t, "the logo in the previews", func() bool {
		b.d.page(`[...document.querySelectorAll('.previews img.icon')].map((i) => i.src)`, &icons)
		return len(icons) == 3
	})
	for _, src := range icons {
		if src != l.URL {
			t.Fatalf("preview icons %v, want the logo %s", icons, l.URL)
		}
	}
	role("link", "Settings", "click")
	heading("Logo")
	role("img", "Logo preview", "wait")

	// An http address is refused with the API's message, and stores nothing.
	role("textbox", "Logo address", "fill", "http://shop.example/logo.png")
	role("button", "Use this address", "click")
	role("alert", "", "wait")
	if got := role("alert", "", "text"); got != "url must be an https URL of at most 2048 characters" {
		t.Fatalf("alert %q", got)
	}
	if got := stored(); got == nil || got.UploadID == nil {
		t.Fatalf("the refusal changed the logo: %+v", got)
	}
	role("textbox", "Logo address", "fill", "https://shop.example/logo.png")
	role("button", "Use this address", "click")
	waitFor(t, "the address saved", func() bool { return strings.Contains(b.mainText(), "Logo address saved.") })
	if got := stored(); got == nil || got.UploadID != nil || got.URL != "https://shop.example/logo.png" {
		t.Fatalf("stored logo %+v", got)
	}
	if !strings.Contains(b.mainText(), "From https://shop.example/logo.png") {
		t.Fatalf("the page shows %s", b.mainText())
	}

	role("button", "Remove logo", "click")
	waitFor(t, "the removal", func() bool { return strings.Contains(b.mainText(), "Logo removed.") })
	if got := stored(); got != nil {
		t.Fatalf("logo after removal %+v", got)
	}
}

// TestDashboardSuggestions asks for copy suggestions in the composer: the
// rules' suggestions are listed with their reasons, as text (markup in the
// title stays text), and one click puts one into the title and message.
func TestDashboardSuggestions(t *testing.T) {
	ts := startServer(t)
	b, _ := startDashboard(t, ts)
	role, heading := b.role, b.heading

	role("link", "New notification", "click")
	heading("New notification")
	role("button", "Suggest", "click")
	waitFor(t, "the missing title", func() bool { return role("alert", "", "count") == "1" })
	if got := role("alert", "", "text"); got != "No suggestions: Write a title first: the suggestions start from it." {
		t.Fatalf("alert %q", got)
	}
	role("textbox", "Title", "fill", "New arrivals")
	role("textbox", "Message", "fill", "See what came in.")
	role("button", "Suggest", "click")
	role("list", "Suggestions", "wait")
	var items []string
	waitFor(t, "three suggestions", func() bool {
		b.d.page(`[...document.querySelectorAll('ol[aria-label="Suggestions"] > li')].map((li) => [...li.querySelectorAll('p')].map((p) => p.textContent).join(' / '))`, &items)
		return len(items) == 3
	})
	want := []string{
		"Today only: new arrivals / See what came in. Don't miss out. / A deadline gives a reason to act now rather than later; use it only when it is true.",
		`New arrivals / Hi {first_name|there}, see what came in. / A name catches the eye: {first_name|there} puts in each subscriber's first_name tag, or "there" for those without one.`,
		"Have you heard? New arrivals / See what came in. Want to take a look? / A question invites an answer: people open the notification to find it.",
	}
	if !reflect.DeepEqual(items, want) {
		t.Fatalf("suggestions\n%q\nwant\n%q", items, want)
	}
	b.shoot("composer-suggestions")

	role("button", "Use suggestion 2", "click")
	if title, body := role("textbox", "Title", "value"), role("textbox", "Message", "value"); title != "New arrivals" ||
		body != "Hi {first_name|there}, see what came in." {
		t.Fatalf("applied %q / %q", title, body)
	}
	role("button", "Use suggestion 3", "click")
	if title, body := role("textbox", "Title", "value"), role("textbox", "Message", "value"); title != "Have you heard? New arrivals" ||
		body != "See what came in. Want to take a look?" {
		t.Fatalf("applied %q / %q", title, body)
	}

	// Markup in the texts is shown as text, never made into elements.
	role("textbox", "Title", "fill", `<img src=x onerror="document.title='owned'"> Sale`)
	role("button", "Suggest", "click")
	waitFor(t, "the suggestions of the markup", func() bool {
		b.d.page(`[...document.querySelectorAll('ol[aria-label="Suggestions"] > li strong')].map((s) => s.textContent)`, &items)
		return len(items) > 0 && strings.Contains(items[0], "<img src=x")
	})
	var imgs int
	var title string
	b.d.page(`document.querySelectorAll('ol[aria-label="Suggestions"] img').length`, &imgs)
	b.d.page(`document.title`, &title)
	if imgs != 0 || title == "owned" {
		t.Fatalf("markup became elements: %d images, title %q", imgs, title)
	}
}
