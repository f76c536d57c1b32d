package notification

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/relaybell/relaybell/store"
)

type fakeLookup struct {
	segments map[string]bool
	topics   map[string]bool
}

func (f fakeLookup) Segment(_ context.Context, _, id string) (store.Segment, error) {
	if !f.segments[id] {
		return store.Segment{}, store.ErrNotFound
	}
	return store.Segment{ID: id}, nil
}

// Topic resolves any case of a known slug to the id "topic-" + the slug.
func (f fakeLookup) Topic(_ context.Context, _, idOrSlug string) (store.Topic, error) {
	slug := strings.ToLower(idOrSlug)
	if !f.topics[slug] {
		return store.Topic{}, store.ErrNotFound
	}
	return store.Topic{ID: "topic-" + slug, Slug: slug}, nil
}

var (
	now     = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	website = store.Website{
		ID:  "w1",
		URL: "https://shop.example",
		Settings: store.Settings{
			DefaultIcon: "https://shop.example/logo.png",
			UTMSource:   "relaybell",
			UTMMedium:   "push",
		},
	}
	lookup = fakeLookup{
		segments: map[string]bool{"6f1c2a9e-0000-4000-8000-000000000001": true},
		topics:   map[string]bool{"news": true},
	}
)

func prepare(t *testing.T, body string) (*store.Notification, error) {
	t.Helper()
	r, err := decodeStrict([]byte(body))
	if err != nil {
		return nil, err
	}
	return Prepare(context.Background(), r, website, lookup, now)
}

// decodeStrict decodes a send request as the API does (unknown fields
// refused); the API's decoder owns the error messages.
func decodeStrict(body []byte) (*Request, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var r Request
	if err := dec.Decode(&r); err != nil {
		return nil, err
	}
	return &r, nil
}

func TestPrepareErrors(t *testing.T) {
	f := func(body, code string) {
		t.Helper()
		_, err := prepare(t, body)
		var e *Error
		if !errors.As(err, &e) || e.Code != code {
			t.Fatalf("body %s: got %v, want %s", body, err, code)
		}
	}
	// Malformed bodies and unknown fields are the API decoder's
	// (api's TestSendErrorsHaveNoSideEffect); these are Prepare's own refusals.
	f(`{"body":"no title"}`, "title_required")
	f(`{"title":"   "}`, "title_required")
	f(`{"title":"a","externalIds":[]}`, "external_ids_empty")
	f(`{"title":"a","segmentId":"6f1c2a9e-0000-4000-8000-000000000002"}`, "segment_not_found")
	f(`{"title":"a","segmentId":"not-a-uuid"}`, "segment_not_found")
	f(`{"title":"a","excludeSegmentId":"6f1c2a9e-0000-4000-8000-000000000009"}`, "segment_not_found")
	f(`{"title":"a","topicId":"sports"}`, "unknown_topic")
	f(`{"title":"a","perTimezone":true,"localTime":"25:00"}`, "invalid_json")
	f(`{"title":"a","perTimezone":true,"localTime":"9:5"}`, "invalid_json")
	f(`{"title":"a","perTimezone":true}`, "invalid_json")
	// A targeting member that is present but names no one is refused,
	// never read as "everyone" (issue 21).
	f(`{"title":"a","externalIds":null}`, "external_ids_empty")
	f(`{"title":"a","externalIds":[""]}`, "external_ids_empty")
	f(`{"title":"a","externalIds":["  "]}`, "external_ids_empty")
	f(`{"title":"a","externalIds":null,"externalId":"u1"}`, "external_ids_empty")
	f(`{"title":"a","externalId":""}`, "external_ids_empty")
	f(`{"title":"a","externalId":null}`, "external_ids_empty")
	f(`{"title":"a","externalId":" "}`, "external_ids_empty")
	f(`{"title":"a","segmentId":null}`, "segment_not_found")
	f(`{"title":"a","segmentId":""}`, "segment_not_found")
	f(`{"title":"a","excludeSegmentId":null}`, "segment_not_found")
	f(`{"title":"a","excludeSegmentId":""}`, "segment_not_found")
	f(`{"title":"a","topicId":null}`, "unknown_topic")
	f(`{"title":"a","topicId":""}`, "unknown_topic")
	f(`{"title":"a","filters":null}`, "invalid_filters")
	f(`{"title":"a","filters":{}}`, "invalid_filters")
	f(`{"title":"a","filters":{"rules":[]}}`, "invalid_filters")
	f(`{"title":"a","filters":{"rules":[{"field":"country"}]}}`, "invalid_filters")
	f(`{"title":"a","filters":{"rules":[{"field":"tag:","op":"exists"}]}}`, "invalid_filters")
	f(`{"title":"a","excludeFilters":null}`, "invalid_filters")
	f(`{"title":"a","excludeFilters":{"match":"any","rules":[]}}`, "invalid_filters")
	f(`{"title":"a","excludeFilters":{"rules":[{"field":"language","value":[""]}]}}`, "invalid_filters")
}

func content(t *testing.T, n *store.Notification) Content {
	t.Helper()
	c, err := DecodeContent(n.Content)
	if err != nil {
		t.Fatal(err)
	}
	return *c
}

func TestPrepareDefaults(t *testing.T) {
	n, err := prepare(t, `{"title":"Hi","body":"there"}`)
	if err != nil {
		t.Fatal(err)
	}
	c := content(t, n)
	if n.Status != store.StatusQueued || n.ScheduledAt != nil {
		t.Fatalf("status %s scheduled %v", n.Status, n.ScheduledAt)
	}
	if c.URL != "https://shop.example?utm_source=relaybell&utm_medium=push" {
		t.Fatalf("url %q", c.URL)
	}
	if c.Icon != "https://shop.example/logo.png" || c.TTL != 24*3600 {
		t.Fatalf("icon %q ttl %d", c.Icon, c.TTL)
	}
	if n.Target != nil || n.TargetSummary != "All subscribers" {
		t.Fatalf("target %s summary %q", n.Target, n.TargetSummary)
	}
	if string(n.SendBody) != `{"title":"Hi","body":"there"}` {
		t.Fatalf("sendBody %s", n.SendBody)
	}
}

func TestPrepareContentRules(t *testing.T) {
	n, err := prepare(t, `{"title":"Hi","url":"https://x.example/p?a=1#top","ttl":99999999,
		"actions":[{"title":"One"},{"title":"Two","action":"go","url":"https://x.example/2"},{"title":"Three"}],
		"ab":{"b":{"title":"Hey"}},"abTest":{"autoWinner":true,"testPercent":95}}`)
	if err != nil {
		t.Fatal(err)
	}
	c := content(t, n)
	if c.URL != "https://x.example/p?a=1&utm_source=relaybell&utm_medium=push#top" {
		t.Fatalf("url %q", c.URL)
	}
	if c.TTL != MaxTTL {
		t.Fatalf("ttl %d", c.TTL)
	}
	want := []Action{{Action: "btn1", Title: "One"}, {Action: "go", Title: "Two", URL: "https://x.example/2"}}
	got, _ := json.Marshal(c.Actions)
	wantJSON, _ := json.Marshal(want)
	if string(got) != string(wantJSON) {
		t.Fatalf("actions %s, want %s", got, wantJSON)
	}
	if c.ABTest == nil || *c.ABTest != (ABSettings{AutoWinner: true, TestPercent: 90, AfterHours: 4}) || !n.AB {
		t.Fatalf("abTest %+v ab %v", c.ABTest, n.AB)
	}
	n, err = prepare(t, `{"title":"Hi","ttl":0,"ab":{"b":{}},"abTest":{"autoWinner":true}}`)
	if err != nil {
		t.Fatal(err)
	}
	c = content(t, n)
	if c.TTL != 1 || n.AB || c.ABTest != nil {
		t.Fatalf("ttl %d ab %v abTest %+v (an empty ab.b is no A/B test)", c.TTL, n.AB, c.ABTest)
	}
}

func TestPrepareTiming(t *testing.T) {
	f := func(sendAt string, wantStatus string) {
		t.Helper()
		n, err := prepare(t, `{"title":"Hi","sendAt":`+sendAt+`}`)
		if err != nil {
			t.Fatal(err)
		}
		if n.Status != wantStatus {
			t.Fatalf("sendAt %s: status %s, want %s", sendAt, n.Status, wantStatus)
		}
	}
	f(`"2026-11-23T08:00:00Z"`, store.StatusScheduled)
	f(`"2026-11-23T08:00:00+02:00"`, store.StatusScheduled)
	f(`"2025-01-01T00:00:00Z"`, store.StatusQueued)
	f(`"tomorrow-ish"`, store.StatusQueued)
	f(`12345`, store.StatusQueued)
	n, err := prepare(t, `{"title":"Hi","sendAt":"2026-11-23T08:00:00Z","perTimezone":true,"localTime":"9:30"}`)
	if err != nil {
		t.Fatal(err)
	}
	if n.Status != store.StatusQueued || content(t, n).LocalTime != "09:30" {
		t.Fatalf("perTimezone ignores sendAt: %s %q", n.Status, content(t, n).LocalTime)
	}
	n, err = prepare(t, `{"title":"Hi","sendAt":"2026-11-23T08:00:00Z"}`)
	if err != nil {
		t.Fatal(err)
	}
	if !n.ScheduledAt.Equal(time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)) {
		t.Fatalf("scheduled at %v", n.ScheduledAt)
	}
}

func TestPrepareTargets(t *testing.T) {
	f := func(body, target, summary string) {
		t.Helper()
		n, err := prepare(t, body)
		if err != nil {
			t.Fatal(err)
		}
		if string(n.Target) != target || n.TargetSummary != summary {
			t.Fatalf("body %s:\n target %s\n want   %s\n summary %q want %q", body, n.Target, target, n.TargetSummary, summary)
		}
	}
	f(`{"title":"a","externalId":"u1"}`, `{"externalIds":["u1"]}`, "User u1")
	f(`{"title":"a","externalId":"u1","externalIds":["u2","u3","u2"]}`, `{"externalIds":["u2","u3"]}`, "2 users")
	f(`{"title":"a","filters":{"rules":[{"field":"country","value":"DE"}]}}`,
		`{"filters":{"match":"all","rules":[{"field":"country","op":"eq","value":"DE"}]}}`, "Subscribers matching 1 filter")
	f(`{"title":"a","excludeFilters":{"match":"any","rules":[{"field":"tag:vip","op":"exists"},{"field":"language","value":"fr"}]}}`,
		`{"excludeFilters":{"match":"any","rules":[{"field":"tag:vip","op":"exists"},{"field":"language","op":"eq","value":"fr"}]}}`,
		"All subscribers, excluding 2 filters")
	f(`{"title":"a","topicId":"NEWS"}`, `{"topicId":"topic-news"}`, "All subscribers, in topic NEWS")
	f(`{"title":"a","externalIds":["u1",""," ","u1"]}`, `{"externalIds":["u1"]}`, "User u1")
	f(`{"title":"a","segmentId":"6F1C2A9E-0000-4000-8000-000000000001"}`, `{"segmentId":"6f1c2a9e-0000-4000-8000-000000000001"}`,
		"Segment 6f1c2a9e-0000-4000-8000-000000000001")
	f(`{"title":"a"}`, ``, "All subscribers")
}

// TestDraftKeepsNulls: a draft saves an explicit null as null, so sending
// it later is checked like any send instead of reaching everyone.
func TestDraftKeepsNulls(t *testing.T) {
	n, err := prepare(t, `{"draft":true,"title":"a","externalIds":null,"segmentId":"x"}`)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"title":"a","externalIds":null,"segmentId":"x"}`; string(n.SendBody) != want {
		t.Fatalf("send body %s, want %s", n.SendBody, want)
	}
	r, err := decodeStrict(n.SendBody)
	if err != nil {
		t.Fatal(err)
	}
	var e *Error
	if _, err := Prepare(context.Background(), r, website, lookup, now); !errors.As(err, &e) || e.Code != "external_ids_empty" {
		t.Fatalf("sending the draft: %v, want external_ids_empty", err)
	}
}

func TestDraftSkipsChecks(t *testing.T) {
	n, err := prepare(t, `{"draft":true,"externalIds":[],"topicId":"nope"}`)
	if err != nil {
		t.Fatal(err)
	}
	if n.Status != store.StatusDraft {
		t.Fatalf("status %s", n.Status)
	}
}

func TestPayload(t *testing.T) {
	n, err := prepare(t, `{"title":"Hi","body":"A","translations":{"de":{"title":"Hallo","body":"B"}},"ab":{"b":{"title":"Hey","url":"https://x.example/b"}}}`)
	if err != nil {
		t.Fatal(err)
	}
	c := content(t, n)
	p := c.Payload("n1", &store.Recipient{Endpoint: store.Endpoint{ID: "e1", Language: "de-DE"}, Subscriber: store.Subscriber{Language: "en"}}, "b")
	if p.Title != "Hallo" || p.Body != "B" || p.URL != "https://x.example/b?utm_source=relaybell&utm_medium=push" || *p.Variant != "b" {
		t.Fatalf("payload %+v", p)
	}
	// The browser's language, not its person's.
	p = c.Payload("n1", &store.Recipient{Endpoint: store.Endpoint{ID: "e1", Language: "en"}, Subscriber: store.Subscriber{Language: "de"}}, "a")
	if p.Title != "Hi" || p.Body != "A" || *p.Variant != "a" || p.Actions == nil {
		t.Fatalf("payload %+v", p)
	}
	seen := map[string]int{}
	for _, id := range []string{"e1", "e2", "e3", "e4", "e5", "e6", "e7", "e8", "e9", "e10"} {
		v := c.Variant("n1", id, "")
		if v != c.Variant("n1", id, "") {
			t.Fatal("variant not stable")
		}
		seen[v]++
	}
	if seen["a"] == 0 || seen["b"] == 0 {
		t.Fatalf("variants %v", seen)
	}
}

// A stored target with a member this version does not know is refused,
// never read as a narrower or an empty (everyone) target; a product
// alert's target is never everyone.
func TestDecodeTargetFailsClosed(t *testing.T) {
	if _, err := DecodeTarget([]byte(`{"segmentId":"s1","futureNarrowing":{"x":1}}`)); err == nil {
		t.Fatal("unknown member: no error")
	}
	got, err := DecodeTarget([]byte(`{"productAlert":{"id":"n1","kind":"price_drop","productId":"sku-1"}}`))
	if err != nil || got.ProductAlert == nil || got.ProductAlert.ID != "n1" || got.Everyone() {
		t.Fatalf("product alert target %+v, %v", got, err)
	}
	if got.Summary() != "People interested in product sku-1" {
		t.Fatalf("summary %q", got.Summary())
	}
	// One browser's (a welcome's) target is never everyone either.
	got, err = DecodeTarget([]byte(`{"endpointId":"e1"}`))
	if err != nil || got.EndpointID != "e1" || got.Everyone() || got.Summary() != "Browser e1" {
		t.Fatalf("one browser's target %+v (%q), %v", got, got.Summary(), err)
	}
}
