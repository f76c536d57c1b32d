package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relaybell/relaybell/store"
)

var templateCases = []testCase{
	{"CRUD", testTemplateCRUD},
	{"Uses", testTemplateUses},
}

func newTemplate(t *testing.T, s store.Store, websiteID, name string, created time.Time) store.Template {
	t.Helper()
	tp := store.Template{ID: uuid.NewString(), WebsiteID: websiteID, Name: name,
		Content: []byte(`{"title":"Hi {first_name|there}","ttl":60}`), CreatedAt: created, UpdatedAt: created}
	noErr(t, "CreateTemplate", s.CreateTemplate(context.Background(), tp))
	return tp
}

func testTemplateCRUD(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	other := newWebsite(t, s)
	a := newTemplate(t, s, w.Website.ID, "House", at(time.Minute))
	b := newTemplate(t, s, w.Website.ID, "Sale", at(2*time.Minute))
	newTemplate(t, s, other.Website.ID, "Theirs", at(3*time.Minute))

	list, err := s.ListTemplates(ctx, w.Website.ID)
	noErr(t, "ListTemplates", err)
	same(t, "ListTemplates, newest first", list, []store.Template{b, a})
	got, err := s.Template(ctx, w.Website.ID, a.ID)
	noErr(t, "Template", err)
	same(t, "Template", got, a)
	_, err = s.Template(ctx, other.Website.ID, a.ID)
	wantErr(t, "another website's template", err, store.ErrNotFound)
	_, err = s.Template(ctx, w.Website.ID, uuid.NewString())
	wantErr(t, "an unknown template", err, store.ErrNotFound)

	a.Name, a.Content, a.UpdatedAt = "House style", []byte(`{"body":"Read on","icon":"https://example.com/i.png"}`), at(time.Hour)
	noErr(t, "UpdateTemplate", s.UpdateTemplate(ctx, a))
	got, err = s.Template(ctx, w.Website.ID, a.ID)
	noErr(t, "Template", err)
	same(t, "updated template, content kept byte for byte", got, a)
	theirs := a
	theirs.WebsiteID = other.Website.ID
	wantErr(t, "UpdateTemplate of another website's", s.UpdateTemplate(ctx, theirs), store.ErrNotFound)

	_, err = s.DeleteTemplate(ctx, other.Website.ID, a.ID)
	wantErr(t, "DeleteTemplate of another website's", err, store.ErrNotFound)
	uses, err := s.DeleteTemplate(ctx, w.Website.ID, a.ID)
	noErr(t, "DeleteTemplate", err)
	same(t, "uses of a deleted template", uses, nil)
	_, err = s.Template(ctx, w.Website.ID, a.ID)
	wantErr(t, "a deleted template", err, store.ErrNotFound)
	_, err = s.DeleteTemplate(ctx, w.Website.ID, a.ID)
	wantErr(t, "DeleteTemplate again", err, store.ErrNotFound)
	list, err = s.ListTemplates(ctx, w.Website.ID)
	noErr(t, "ListTemplates", err)
	same(t, "ListTemplates after the delete", list, []store.Template{b})
}

// A template is in use while an automation's definition, or any version
// of a journey's, names it; the website's own only.
func testTemplateUses(t *testing.T, s store.Store) {
	ctx := context.Background()
	w := newWebsite(t, s)
	other := newWebsite(t, s)
	tp := newTemplate(t, s, w.Website.ID, "House", at(0))
	spare := newTemplate(t, s, w.Website.ID, "Spare", at(0))
	names := `"templateId":"` + tp.ID + `"`

	uses, err := s.TemplateUses(ctx, w.Website.ID, tp.ID)
	noErr(t, "TemplateUses", err)
	same(t, "uses of a template nothing names", uses, []store.TemplateUse{})

	auto := newAutomation(t, s, w.Website.ID, at(time.Minute))
	auto.Name = "Zebra cart"
	auto.Definition = []byte(`{"trigger":{"type":"event","event":"cart.updated"},"messages":[{"delaySeconds":0,` + names + `}]}`)
	noErr(t, "UpdateAutomation", s.UpdateAutomation(ctx, auto))
	theirs := newAutomation(t, s, other.Website.ID, at(time.Minute)) // another website's text naming it counts nothing
	theirs.Definition = auto.Definition
	noErr(t, "UpdateAutomation", s.UpdateAutomation(ctx, theirs))

	j := newJourney(t, s, w.Website.ID, at(time.Minute))
	j.Definition = []byte(`{"steps":[{"id":"a","type":"send","content":{` + names + `}}]}`)
	j, err = s.UpdateJourney(ctx, j) // version 1 names it
	noErr(t, "UpdateJourney", err)
	p := subscribe(t, s, subscription(w.Website.ID))
	enroll(t, s, j, p.SubscriberID, 0, at(time.Hour))
	j.Definition = []byte(`{"steps":[{"id":"a","type":"exit"}]}`)
	j, err = s.UpdateJourney(ctx, j) // version 2 no longer does; the enrolment still runs version 1
	noErr(t, "UpdateJourney", err)
	if j.Version != 2 {
		t.Fatalf("journey version %d, want 2", j.Version)
	}

	uses, err = s.TemplateUses(ctx, w.Website.ID, tp.ID)
	noErr(t, "TemplateUses", err)
	want := []store.TemplateUse{
		{Kind: store.TemplateUseAutomation, ID: auto.ID, Name: "Zebra cart"},
		{Kind: store.TemplateUseJourney, ID: j.ID, Name: "Welcome"},
	}
	same(t, "uses by kind then name", uses, want)
	uses, err = s.TemplateUses(ctx, w.Website.ID, spare.ID)
	noErr(t, "TemplateUses", err)
	same(t, "uses of another template", uses, []store.TemplateUse{})

	uses, err = s.DeleteTemplate(ctx, w.Website.ID, tp.ID)
	wantErr(t, "DeleteTemplate in use", err, store.ErrConflict)
	same(t, "DeleteTemplate in use names its uses", uses, want)
	_, err = s.Template(ctx, w.Website.ID, tp.ID)
	noErr(t, "Template still there", err)

	noErr(t, "DeleteAutomation", s.DeleteAutomation(ctx, w.Website.ID, auto.ID))
	noErr(t, "DeleteJourney", s.DeleteJourney(ctx, w.Website.ID, j.ID))
	uses, err = s.DeleteTemplate(ctx, w.Website.ID, tp.ID)
	noErr(t, "DeleteTemplate once nothing names it", err)
	same(t, "uses", uses, nil)
}
