package server

import (
	"reflect"
	"strings"
	"testing"
)

// templateOf is GET /templates/{id} without what the server sets (id,
// times).
func templateOf(b *dashboard, id string) map[string]any {
	b.t.Helper()
	var t map[string]any
	b.api("GET", "/templates/"+id, "", &t)
	for _, k := range []string{"id", "created_at", "updated_at"} {
		delete(t, k)
	}
	return t
}

// templateIDs lists the website's templates' names and ids, newest first.
func templateIDs(b *dashboard) (names, ids []string) {
	b.t.Helper()
	var list struct {
		Templates []struct{ ID, Name string } `json:"templates"`
	}
	b.api("GET", "/templates", "", &list)
	for _, t := range list.Templates {
		names, ids = append(names, t.Name), append(ids, t.ID)
	}
	return names, ids
}

// TestDashboardTemplates makes a template on the Templates page, found by
// role and name, with the composer's content fields and previews: a
// refusal shows the API's message at its field and stores nothing; the
// stored template is exactly what the form says; a change clears what
// the form empties. The composer starts from a template (from the list,
// and from its picker) and saves its content as a new one. Deleting a
// template an automation names is refused with what names it; deleting
// another asks, then it is gone.
func TestDashboardTemplates(t *testing.T) {
	ts := startServer(t)
	b, _ := startDashboard(t, ts)
	role, heading := b.role, b.heading

	role("link", "Templates", "click")
	heading("Templates")
	waitFor(t, "the empty state", func() bool { return strings.Contains(b.mainText(), "No templates yet.") })
	b.shoot("templates-empty")

	// A template needs a name: the refusal shows at the field.
	role("button", "New template", "click")
	role("textbox", "Title", "fill", "Hello {first_name|there}")
	role("button", "Create template", "click")
	waitFor(t, "the refusal at the name", func() bool { return role("textbox", "Template name", "invalid") == "true" })
	if got := role("textbox", "Template name", "description"); got != "a name is required" {
		t.Fatalf("name described %q", got)
	}
	if names, _ := templateIDs(b); len(names) != 0 {
		t.Fatalf("a refused template was stored: %v", names)
	}
	role("textbox", "Template name", "fill", "House style")
	role("textbox", "Message", "fill", "Fresh from the blog")
	role("textbox", "Link", "fill", "https://shop.example/blog")
	role("textbox", "Icon", "fill", "not a link")
	role("textbox", "Button 1 text", "fill", "Read")
	role("img", "Chrome on Windows preview: Hello there, Fresh from the blog", "wait")
	role("button", "Create template", "click")
	waitFor(t, "the refusal at the icon", func() bool { return role("textbox", "Icon", "invalid") == "true" })
	if got := role("textbox", "Icon", "description"); got != "icon must be an absolute http(s) link" {
		t.Fatalf("icon described %q", got)
	}
	role("textbox", "Icon", "fill", "")
	b.shoot("template-form")
	role("button", "Create template", "click")
	heading("House style")
	_, ids := templateIDs(b)
	if len(ids) != 1 {
		t.Fatalf("templates %v", ids)
	}
	house := ids[0]
	stored := `{"name": "House style", "title": "Hello {first_name|there}", "body": "Fresh from the blog",
		"url": "https://shop.example/blog", "actions": [{"title": "Read"}]}`
	if got, want := templateOf(b, house), wantJSON(t, stored); !reflect.DeepEqual(got, want) {
		t.Fatalf("stored %v\nwant   %v", got, want)
	}

	// A change: the button emptied is cleared, a tag added, the rest kept.
	role("button", "Change template House style", "click")
	if got := role("textbox", "Message", "value"); got != "Fresh from the blog" {
		t.Fatalf("the message shows %q", got)
	}
	role("textbox", "Button 1 text", "fill", "")
	role("button", "More options", "click")
	role("textbox", "Tag", "fill", "blog")
	role("button", "Save template", "click")
	waitFor(t, "the saved change", func() bool {
		return !strings.Contains(b.mainText(), "Buttons") && strings.Contains(b.mainText(), "House style")
	})
	stored = `{"name": "House style", "title": "Hello {first_name|there}", "body": "Fresh from the blog",
		"url": "https://shop.example/blog", "tag": "blog"}`
	if got, want := templateOf(b, house), wantJSON(t, stored); !reflect.DeepEqual(got, want) {
		t.Fatalf("changed %v\nwant   %v", got, want)
	}
	b.fits("templates")
	b.shoot("templates-list")

	// The composer starts from it, and saves its content as a new one.
	role("button", "Use template House style", "click")
	heading("New notification")
	if got := role("textbox", "Title", "value"); got != "Hello {first_name|there}" {
		t.Fatalf("the composer's title %q", got)
	}
	if got := role("textbox", "Message", "value"); got != "Fresh from the blog" {
		t.Fatalf("the composer's message %q", got)
	}
	role("img", "Android preview: Hello there, Fresh from the blog", "wait")
	role("textbox", "Title", "fill", "This week’s digest")
	role("button", "Save as template", "click")
	role("button", "Save template", "click")
	waitFor(t, "the refusal at the template's name", func() bool { return role("textbox", "Template name", "invalid") == "true" })
	role("textbox", "Template name", "fill", "Digest")
	b.shoot("compose-save-template")
	role("button", "Save template", "click")
	waitFor(t, "the saved template", func() bool { return strings.Contains(b.mainText(), "Saved as template “Digest”.") })
	names, ids := templateIDs(b)
	if !reflect.DeepEqual(names, []string{"Digest", "House style"}) {
		t.Fatalf("templates %v", names)
	}
	digest := ids[0]
	if got, want := templateOf(b, digest), wantJSON(t, `{"name": "Digest", "title": "This week’s digest", "body": "Fresh from the blog",
		"url": "https://shop.example/blog", "tag": "blog"}`); !reflect.DeepEqual(got, want) {
		t.Fatalf("saved from the composer %v\nwant   %v", got, want)
	}
	// The picker replaces the form's content with a template's.
	role("textbox", "Message", "fill", "Something else")
	role("combobox", "Start from a template", "select", house)
	waitFor(t, "the template's content", func() bool {
		return role("textbox", "Title", "value") == "Hello {first_name|there}" && role("textbox", "Message", "value") == "Fresh from the blog"
	})
	b.shoot("compose-template")

	// An automation's push names Digest in the editor, its title left to
	// the template; the editor shows it again as saved.
	role("link", "Automations", "click")
	role("link", "New automation", "click")
	heading("New automation")
	role("textbox", "Automation name", "fill", "Weekly")
	role("combobox", "Starts when", "select", "subscribed")
	role("combobox", "Template (push 1)", "select", digest)
	waitFor(t, "the template's title in the hint", func() bool {
		return strings.Contains(role("combobox", "Template (push 1)", "description"), "(its title: This week’s digest)")
	})
	b.shoot("automation-template")
	role("button", "Create automation", "click")
	heading("Automations")
	var autos struct {
		Automations []map[string]any `json:"automations"`
	}
	b.api("GET", "/automations", "", &autos)
	if len(autos.Automations) != 1 || !reflect.DeepEqual(autos.Automations[0]["messages"],
		wantJSON(t, `{"m": [{"delaySeconds": 3600, "templateId": "`+digest+`"}]}`)["m"]) {
		t.Fatalf("automations %v", autos.Automations)
	}
	role("link", "Weekly", "click")
	heading("Automation “Weekly”")
	if got := role("combobox", "Template (push 1)", "value"); got != digest {
		t.Fatalf("the push's template shows %q", got)
	}

	// Digest's deletion is refused, naming the automation.
	role("link", "Templates", "click")
	heading("Digest")
	role("button", "Delete template Digest", "click")
	waitFor(t, "the refusal", func() bool {
		return strings.Contains(b.mainText(), "The deletion failed: the template is used by automation \"Weekly\"; remove it from them first")
	})
	if names, _ := templateIDs(b); len(names) != 2 {
		t.Fatalf("a refused deletion deleted: %v", names)
	}
	role("button", "Delete template House style", "click")
	waitFor(t, "the template gone", func() bool { return !strings.Contains(b.mainText(), "House style") })
	var refused struct{ Error string }
	if code := b.apiStatus("GET", "/templates/"+house, "", &refused); code != 404 || refused.Error != "not_found" {
		t.Fatalf("the deleted template: %d %+v", code, refused)
	}
}
