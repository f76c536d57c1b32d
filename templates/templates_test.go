package templates

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/relaybell/relaybell/notification"
	"github.com/relaybell/relaybell/store"
)

// fakeStore holds templates by website and id.
type fakeStore map[string]store.Template

func (f fakeStore) Template(_ context.Context, websiteID, id string) (store.Template, error) {
	t, ok := f[id]
	if !ok || t.WebsiteID != websiteID {
		return store.Template{}, store.ErrNotFound
	}
	return t, nil
}

const houseID = "6f1c3c6e-1b1e-4a53-9f0e-2b7f4f7d6a10"

var house = store.Template{ID: houseID, WebsiteID: "w1", Name: "House", Content: []byte(
	`{"title":"Hi {first_name|there}","body":"From the template","icon":"https://shop.example/i.png",` +
		`"actions":[{"title":"Read","url":"https://shop.example/r"}],"ttl":60,"requireInteraction":true,"translations":{"fr":{"title":"Salut","body":"b"}}}`)}

func str(s string) *string { return &s }

func encode(t *testing.T, r *notification.Request) string {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Apply fills what the request leaves out, the request's members win, and
// templateId is gone from the resolved request.
func TestApply(t *testing.T) {
	s := NewService(fakeStore{houseID: house})
	r := &notification.Request{Body: str("Mine"), TTL: new(int64), TemplateID: str(strings.ToUpper(houseID)),
		Translations: map[string]notification.Translation{}}
	if err := s.Apply(context.Background(), "w1", houseID, r); err != nil {
		t.Fatal(err)
	}
	want := `{"title":"Hi {first_name|there}","body":"Mine","icon":"https://shop.example/i.png",` +
		`"actions":[{"title":"Read","url":"https://shop.example/r"}],"requireInteraction":true,"ttl":0}`
	if got := encode(t, r); got != want {
		t.Fatalf("applied\n %s\nwant\n %s", got, want)
	}
	// The request owns what it got: changing it changes no template.
	r.Actions[0].Title = "changed"
	again := &notification.Request{}
	if err := s.Apply(context.Background(), "w1", houseID, again); err != nil || again.Actions[0].Title != "Read" {
		t.Fatalf("the template changed through a request: %v %+v", err, again.Actions)
	}

	// Resolve applies the request's own templateId, in any letter case.
	r = &notification.Request{TemplateID: str(strings.ToUpper(houseID))}
	if err := s.Resolve(context.Background(), "w1", r); err != nil || r.TemplateID != nil || *r.Title != "Hi {first_name|there}" {
		t.Fatalf("resolve: %v %s", err, encode(t, r))
	}

	// Another website's, an unknown id, no UUID: store.ErrNotFound, and
	// the request is left as it was.
	for _, c := range []struct{ website, id string }{{"w2", houseID}, {"w1", "6f1c3c6e-1b1e-4a53-9f0e-2b7f4f7d6a11"}, {"w1", "house"}, {"w1", ""}} {
		r := &notification.Request{Title: str("t")}
		err := s.Apply(context.Background(), c.website, c.id, r)
		if !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("%v: %v, want store.ErrNotFound", c, err)
		}
		if got := encode(t, r); got != `{"title":"t"}` {
			t.Fatalf("%v: the request changed: %s", c, got)
		}
		if te := NotFound(err, c.id); te == nil || te.Code != CodeTemplateNotFound || te.Message != fmt.Sprintf("no template %q on this website", c.id) {
			t.Fatalf("NotFound: %+v", te)
		}
	}
	if NotFound(errors.New("disk"), "x") != nil {
		t.Fatal("NotFound of another error")
	}
}

// Patch: members given replace, null clears, the rest stay; name null
// is a blank name (Check refuses it).
func TestPatch(t *testing.T) {
	d, err := Of(house)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Patch([]byte(`{"name":"New","body":null,"actions":null,"ttl":90,"tag":"x"}`)); err != nil {
		t.Fatal(err)
	}
	got, err := d.Stored(store.Template{})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"title":"Hi {first_name|there}","icon":"https://shop.example/i.png","ttl":90,"tag":"x","requireInteraction":true,"translations":{"fr":{"title":"Salut","body":"b"}}}`
	if got.Name != "New" || string(got.Content) != want {
		t.Fatalf("patched %q\n %s\nwant\n %s", got.Name, got.Content, want)
	}
	var te *Error
	if err := d.Patch([]byte(`{}`)); !errors.As(err, &te) || te.Code != CodeNothingToUpdate {
		t.Fatalf("empty patch: %v", err)
	}
	if err := d.Patch([]byte(`{"name":null}`)); err != nil || d.Name != "" {
		t.Fatalf("name null: %v %q", err, d.Name)
	}
	if err := d.Check(store.Website{URL: "https://shop.example"}); !errors.As(err, &te) || te.Code != CodeNameRequired {
		t.Fatalf("check of a blank name: %v", err)
	}
}

// FuzzPatch: any JSON object patches a template without a panic, and
// what Check lets through is stored content that decodes back to itself.
func FuzzPatch(f *testing.F) {
	for _, seed := range []string{
		`{"name":"x"}`, `{"title":"{a|b}","url":"https://x.example/{id|1}"}`, `{"actions":[{"title":"a"},{"title":"b"},{"title":"c"}]}`,
		`{"translations":{"FR":{"title":"t","body":"b"},"x":null}}`, `{"ttl":-5}`, `{"ttl":1e20}`, `{"name":null,"body":null}`,
		`{"icon":"javascript:1"}`, `{"title":"\ud800"}`, `[]`, `null`, `{"requireInteraction":"yes"}`,
	} {
		f.Add(seed)
	}
	w := store.Website{URL: "https://shop.example"}
	f.Fuzz(func(t *testing.T, body string) {
		d, err := Of(house)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Patch([]byte(body)); err != nil {
			return
		}
		if err := d.Check(w); err != nil {
			return
		}
		stored, err := d.Stored(store.Template{})
		if err != nil {
			t.Fatal(err)
		}
		back, err := Of(stored)
		if err != nil {
			t.Fatalf("stored content does not decode: %s: %v", stored.Content, err)
		}
		again, err := back.Stored(store.Template{})
		if err != nil || string(again.Content) != string(stored.Content) {
			t.Fatalf("stored content changes on a round trip: %s then %s", stored.Content, again.Content)
		}
		if err := back.Check(w); err != nil {
			t.Fatalf("stored content no longer checks: %s: %v", stored.Content, err)
		}
	})
}

// With answers the changed template for its own id and website, and
// anything else as the lookup under it does.
func TestWith(t *testing.T) {
	ctx := context.Background()
	other := store.Template{ID: "7a2d4d7f-2c2f-4b64-8a1f-3c8a5a8e7b21", WebsiteID: "w1", Content: []byte(`{"title":"Other"}`)}
	changed := house
	changed.Content = []byte(`{"body":"Changed"}`)
	lk := With(fakeStore{houseID: house, other.ID: other}, changed)
	f := func(websiteID, id, want string) {
		t.Helper()
		got, err := lk.Template(ctx, websiteID, id)
		if want == "" {
			if !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("Template(%s, %s) = %s, %v; want ErrNotFound", websiteID, id, got.Content, err)
			}
			return
		}
		if err != nil || string(got.Content) != want {
			t.Fatalf("Template(%s, %s) = %s, %v; want %s", websiteID, id, got.Content, err, want)
		}
	}
	f("w1", houseID, `{"body":"Changed"}`)
	f("w1", other.ID, `{"title":"Other"}`)
	f("w2", houseID, "")
}
