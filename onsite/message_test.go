package onsite

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/relaybell/relaybell/notification"
	"github.com/relaybell/relaybell/store"
)

func TestMessageApplies(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	start, end := now.Add(-time.Hour), now.Add(time.Hour)
	inSegment := func(id string) (bool, error) { return id == "vip", nil }
	f := func(name string, m Message, v View, want bool) {
		t.Helper()
		if v.Now.IsZero() {
			v.Now = now
		}
		if v.URL == "" {
			v.URL = "https://s.example/shop/a"
		}
		if err := m.Check(); err != nil {
			t.Fatalf("%s: Check: %v", name, err)
		}
		got, err := m.Applies(v)
		if err != nil || got != want {
			t.Fatalf("%s: %v %v, want %v", name, got, err, want)
		}
	}
	active := func(change func(*Message)) Message {
		m := NewMessage()
		m.Name, m.Title, m.Status = "m", "t", StatusActive
		if change != nil {
			change(&m)
		}
		return m
	}
	f("active, no targeting", active(nil), View{}, true)
	f("draft", active(func(m *Message) { m.Status = StatusDraft }), View{}, false)
	f("paused", active(func(m *Message) { m.Status = StatusPaused }), View{}, false)
	f("within start and end", active(func(m *Message) { m.StartAt, m.EndAt = &start, &end }), View{}, true)
	f("before its start", active(func(m *Message) { m.StartAt = &end }), View{}, false)
	f("at its end", active(func(m *Message) { m.EndAt = &now }), View{}, false)
	f("URL included", active(func(m *Message) { m.Targeting.Include = []string{"/shop*"} }), View{}, true)
	f("URL not included", active(func(m *Message) { m.Targeting.Include = []string{"/blog*"} }), View{}, false)
	f("URL excluded", active(func(m *Message) { m.Targeting.Exclude = []string{"/shop/*"} }), View{}, false)
	f("device", active(func(m *Message) { m.Targeting.Devices = []string{"ios"} }), View{Device: "ios"}, true)
	f("other device", active(func(m *Message) { m.Targeting.Devices = []string{"ios"} }), View{Device: "desktop"}, false)
	f("subscribed only, subscribed", active(func(m *Message) { m.Targeting.Subscribed = SubscribedYes }), View{Subscribed: true}, true)
	f("subscribed only, not", active(func(m *Message) { m.Targeting.Subscribed = SubscribedYes }), View{}, false)
	f("not subscribed only, subscribed", active(func(m *Message) { m.Targeting.Subscribed = SubscribedNo }), View{Subscribed: true}, false)
	f("segment, in", active(func(m *Message) { m.Targeting.SegmentID = "vip" }), View{Subscribed: true, InSegment: inSegment}, true)
	f("segment, out", active(func(m *Message) { m.Targeting.SegmentID = "other" }), View{Subscribed: true, InSegment: inSegment}, false)
	f("segment, visitor not known", active(func(m *Message) { m.Targeting.SegmentID = "vip" }), View{}, false)
}

// apply decodes a PUT body, as the API does once (strictly), and sets it
// over w.
func (w *Welcome) apply(body []byte) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var b WelcomeBody
	if err := dec.Decode(&b); err != nil {
		return err
	}
	w.Set(b)
	return nil
}

func TestWelcomeJSON(t *testing.T) {
	var w Welcome
	if err := w.apply([]byte(`{"enabled":true,"delaySeconds":5,"title":"Hi","url":"https://s.example/"}`)); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(w)
	if want := `{"enabled":true,"delaySeconds":5,"templateId":null,"title":"Hi","url":"https://s.example/"}`; string(b) != want {
		t.Fatalf("%s\nwant %s", b, want)
	}
	// A template clears the content; content clears the template.
	if err := w.apply([]byte(`{"templateId":"tpl"}`)); err != nil {
		t.Fatal(err)
	}
	b, _ = json.Marshal(w)
	if want := `{"enabled":true,"delaySeconds":5,"templateId":"tpl"}`; string(b) != want {
		t.Fatalf("%s\nwant %s", b, want)
	}
	back, err := ReadWelcome(b)
	if err != nil || back.TemplateID != "tpl" || !back.Enabled {
		t.Fatalf("read back %+v %v", back, err)
	}
	if err := w.apply([]byte(`{"title":"Again"}`)); err != nil {
		t.Fatal(err)
	}
	if w.TemplateID != "" || *w.Content.Title != "Again" {
		t.Fatalf("%+v", w)
	}
	// A content member given, even null, replaces the content as a
	// whole; a null templateId clears the template alone.
	if err := w.apply([]byte(`{"body":null}`)); err != nil {
		t.Fatal(err)
	}
	if w.TemplateID != "" || w.Content.Title != nil || !w.Enabled {
		t.Fatalf("after a null content member: %+v", w)
	}
	w = Welcome{TemplateID: "tpl"}
	if err := w.apply([]byte(`{"templateId":null,"enabled":true}`)); err != nil {
		t.Fatal(err)
	}
	if w.TemplateID != "" || !w.Enabled {
		t.Fatalf("after a null templateId: %+v", w)
	}
}

// fakeTemplates fills from template "tpl" only.
type fakeTemplates struct{}

func (fakeTemplates) Apply(_ context.Context, _, id string, r *notification.Request) error {
	title := "From " + id
	r.Title = &title
	return nil
}

func TestWelcomeNotification(t *testing.T) {
	site := store.Website{ID: "w1", Timezone: "UTC"}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	w := Welcome{Enabled: true, TemplateID: "tpl"}
	if _, err := w.Notification(context.Background(), site, nil, "e1", now); err == nil {
		t.Fatal("a template without templates made a send")
	}
	if err := w.Check(context.Background(), site, nil, now); err == nil {
		t.Fatal("Check took a template without templates")
	}
	n, err := w.Notification(context.Background(), site, fakeTemplates{}, "e1", now)
	if err != nil {
		t.Fatal(err)
	}
	// The one browser that subscribed, not its person's others.
	if n.Title != "From tpl" || !n.Welcome || !n.Automation || string(n.Target) != `{"endpointId":"e1"}` ||
		n.TargetSummary != "Browser e1" || n.SendBody != nil {
		t.Fatalf("%+v", n)
	}
	if _, err := w.Notification(context.Background(), site, fakeTemplates{}, "", now); err == nil {
		t.Fatal("a welcome to nobody (everyone)")
	}
}
