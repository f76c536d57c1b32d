package events

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/relaybell/relaybell/store"
)

func TestCutName(t *testing.T) {
	for in, want := range map[string]string{
		"":                             "",
		"  purchase ":                  "purchase",
		strings.Repeat("ü", 121):       strings.Repeat("ü", 120),
		strings.Repeat("a", 120):       strings.Repeat("a", 120),
		" " + strings.Repeat("b", 130): strings.Repeat("b", 120),
	} {
		if got := CutName(in); got != want {
			t.Errorf("CutName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestProperties(t *testing.T) {
	for _, c := range []struct {
		raw     string
		value   float64
		valued  bool
		product string
	}{
		{``, 0, false, ""},
		{`{}`, 0, false, ""},
		{`{"value":12.5,"revenue":3}`, 12.5, true, ""},
		{`{"revenue":-3}`, -3, true, ""},
		{`{"value":"12"}`, 0, false, ""},
		{`{"value":1e400}`, 0, false, ""},
		{`{"value":null,"revenue":2}`, 2, true, ""},
		{`{"productId":"  sku-1 "}`, 0, false, "sku-1"},
		{`{"productId":123}`, 0, false, "123"},
		{`{"productId":true}`, 0, false, ""},
		{`{"productId":{"a":1}}`, 0, false, ""},
		{`{"productId":"` + strings.Repeat("é", 250) + `"}`, 0, false, strings.Repeat("é", 200)},
	} {
		p, err := readProperties(json.RawMessage(c.raw))
		if err != nil {
			t.Fatalf("%s: %v", c.raw, err)
		}
		v, ok := p.value()
		if v != c.value || ok != c.valued || p.productID() != c.product {
			t.Errorf("%s: value %v %v, product %q; want %v %v %q", c.raw, v, ok, p.productID(), c.value, c.valued, c.product)
		}
	}
	for _, raw := range []string{`[1]`, `"x"`, `3`, `{"a":}`} {
		if _, err := readProperties(json.RawMessage(raw)); err != ErrProperties {
			t.Errorf("%s: %v, want ErrProperties", raw, err)
		}
	}
}

func TestIsConversion(t *testing.T) {
	def := store.Settings{}
	own := store.Settings{ConversionEvents: []string{"trial.started"}}
	for _, c := range []struct {
		name   string
		valued bool
		s      store.Settings
		want   bool
	}{
		{"purchase", false, def, true},
		{"order.completed", false, def, true},
		{"checkout.completed", false, def, true},
		{"signup", true, def, true},
		{"signup", false, def, false},
		{"cart.updated", true, def, false},
		{"checkout.started", true, def, false},
		{"purchase", false, own, false},
		{"trial.started", false, own, true},
		{"purchase", true, own, true},
	} {
		if got := isConversion(c.name, c.valued, c.s); got != c.want {
			t.Errorf("isConversion(%q, %v, %v) = %v", c.name, c.valued, c.s.ConversionEvents, got)
		}
	}
}

func TestAlertRequest(t *testing.T) {
	w := store.Website{Settings: store.Settings{Currency: "EUR"}}
	props := func(raw string) properties {
		p, err := readProperties(json.RawMessage(raw))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct {
		w                 store.Website
		kind, raw         string
		title, body, link string
	}{
		{w, store.InterestPriceDrop, `{"title":"Red shoes","price":59,"oldPrice":"79 €","url":"https://s.example/p","image":"ftp://x"}`,
			"Price drop: Red shoes", "Now 59 EUR, was 79 €.", "https://s.example/p"},
		{w, store.InterestPriceDrop, `{"price":59}`, "Price drop: sku", "Now 59 EUR.", ""},
		{w, store.InterestPriceDrop, `{}`, "Price drop: sku", "The price just went down.", ""},
		{w, store.InterestBackInStock, `{"title":"Red shoes","url":"javascript:alert(1)"}`,
			"Back in stock: Red shoes", "It is available again. Get it before it is gone.", ""},
		{store.Website{Settings: store.Settings{AlertTexts: &store.AlertTexts{PriceDrop: store.AlertText{Title: "{product.price}", Body: "Hi {name|there}, {product.oldPrice}"}}}},
			store.InterestPriceDrop, `{}`, "sku", "Hi {name|there},", ""},
	} {
		r := alertRequest(c.w, c.kind, "sku", props(c.raw))
		body, link := "", ""
		if r.Body != nil {
			body = *r.Body
		}
		if r.URL != nil {
			link = *r.URL
		}
		if *r.Title != c.title || body != c.body || link != c.link || r.Image != nil {
			t.Errorf("%s %s: %q %q %q %v", c.kind, c.raw, *r.Title, body, link, r.Image)
		}
	}
}

// FuzzTrackInput: no properties a request can carry make the parsing or
// the alert's text panic, and a request's title is never empty.
func FuzzTrackInput(f *testing.F) {
	for _, s := range []string{`{}`, `{"productId":1,"price":"x","oldPrice":1e400,"title":""}`, `{"value":"1","revenue":-0}`, `[`, `{"title":"{product.title}"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		p, err := readProperties(json.RawMessage(raw))
		if err != nil {
			return
		}
		p.value()
		product := p.productID()
		if product == "" {
			product = "sku"
		}
		for _, kind := range []string{store.InterestPriceDrop, store.InterestBackInStock} {
			if r := alertRequest(store.Website{}, kind, product, p); r.Title == nil || strings.TrimSpace(*r.Title) == "" {
				t.Fatalf("%s: empty title for %q", kind, raw)
			}
		}
	})
}

// sendsStore answers WriteEvents' credits with the subscriber id and
// website as the notification id, and keeps what it was asked, each
// website's credits and the interests.
type sendsStore struct {
	Store
	calls     map[string][]store.Attribution
	interests []store.ProductInterest
	writes    int
}

func (f *sendsStore) WriteEvents(_ context.Context, w store.EventWrites) (map[string]map[string]store.Interaction, error) {
	f.writes++
	f.interests = append(f.interests, w.Interests...)
	out := map[string]map[string]store.Interaction{}
	for websiteID, qs := range w.Credits {
		f.calls[websiteID] = append(f.calls[websiteID], qs...)
		out[websiteID] = map[string]store.Interaction{}
		for _, q := range qs {
			if q.SubscriberID != "nobody" {
				out[websiteID][q.EventID] = store.Interaction{NotificationID: websiteID + "/" + q.SubscriberID, Clicked: q.SubscriberID == "clicker"}
			}
		}
	}
	return out, nil
}

// TestAttributions: a batch of events' writes credits their conversions
// and records their interests in one store call, each answer back with its
// own event; an event with an interest only answers no send, and one
// alone is made the same way.
func TestAttributions(t *testing.T) {
	ctx := context.Background()
	st := &sendsStore{calls: map[string][]store.Attribution{}}
	s := New(st, nil, nil, nil, Config{})
	q := func(site, person string, d time.Duration) write {
		return write{websiteID: site, credit: &store.Attribution{EventID: site + person, SubscriberID: person, Since: time.Unix(0, 0).Add(d)}}
	}
	interest := store.ProductInterest{WebsiteID: "a", SubscriberID: "ann", ProductID: "sku-1", Kind: store.InterestPriceDrop}
	withInterest := q("b", "ann", 0)
	withInterest.interest = &interest
	list := []write{q("a", "ann", 0), withInterest, q("a", "nobody", time.Hour), {websiteID: "a", interest: &interest},
		q("a", "clicker", 2*time.Hour), q("b", "bob", 0)}
	got, err := s.write(ctx, list)
	if err != nil {
		t.Fatal(err)
	}
	want := []store.Interaction{{NotificationID: "a/ann"}, {NotificationID: "b/ann"}, {}, {}, {NotificationID: "a/clicker", Clicked: true}, {NotificationID: "b/bob"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("write = %+v, want %+v", got, want)
	}
	wantCalls := map[string][]store.Attribution{
		"a": {*list[0].credit, *list[2].credit, *list[4].credit},
		"b": {*list[1].credit, *list[5].credit},
	}
	if st.writes != 1 || !reflect.DeepEqual(st.calls, wantCalls) || !reflect.DeepEqual(st.interests, []store.ProductInterest{interest, interest}) {
		t.Fatalf("%d store calls of credits %+v and interests %+v, want one of %+v and two interests", st.writes, st.calls, st.interests, wantCalls)
	}
	for _, c := range []struct {
		q    write
		want store.Interaction
	}{{q("a", "nobody", 0), store.Interaction{}}, {q("a", "ann", 0), store.Interaction{NotificationID: "a/ann"}}, {write{websiteID: "a", interest: &interest}, store.Interaction{}}} {
		if got, err := s.writeOne(ctx, c.q); err != nil || got != c.want {
			t.Fatalf("writeOne(%+v) = %+v, %v; want %+v", c.q, got, err, c.want)
		}
	}
}
