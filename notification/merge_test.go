package notification

import (
	"strings"
	"testing"

	"github.com/relaybell/relaybell/store"
)

// mergeRecipient is a subscriber with every attribute and a few tags.
var mergeRecipient = &store.Recipient{
	Endpoint: store.Endpoint{ID: "e1", Device: "android", Language: "de-DE"},
	Subscriber: store.Subscriber{
		ID:         "s1",
		ExternalID: "u42",
		Country:    "DE",
		Language:   "de-DE",
		Timezone:   "Europe/Berlin",
		Tags: map[string]string{
			"first_name": "Ana",
			"plan":       "gold",
			"Plan":       "silver",
			"City":       "São Paulo",
			"empty":      "",
			"q":          "a&b=c #d/é",
			"country":    "tag, not attribute",
		},
	},
}

func TestMergeTags(t *testing.T) {
	f := func(in string, query bool, want string) {
		t.Helper()
		if got := mergeTags(in, mergeRecipient, query); got != want {
			t.Fatalf("mergeTags(%q, query=%v) = %q, want %q", in, query, got, want)
		}
	}
	// Tag hit, exact case first, then case-insensitive.
	f("Hi {first_name}!", false, "Hi Ana!")
	f("{plan} / {Plan} / {PLAN}", false, "gold / silver / silver")
	f("{city}", false, "São Paulo")
	f("{first_name|there}", false, "Ana")
	// Attribute hit, case-insensitive; an attribute wins over a tag.
	f("{external_id} {externalId} {EXTERNALID} {External_Id}", false, "u42 u42 u42 u42")
	f("{country}-{Language}-{TIMEZONE}-{device}-{subscriber_id}", false, "DE-de-DE-Europe/Berlin-android-s1")
	// Missing with and without fallback; empty values use the fallback.
	f("Hi {nickname|there}!", false, "Hi there!")
	f("Hi {nickname}!", false, "Hi !")
	f("Hi {nickname|}!", false, "Hi !")
	f("{empty|none}", false, "none")
	f("{nickname|dear friend | of ours}", false, "dear friend | of ours")
	// Names: allowed bytes and length.
	f("{a.b:c-d_9|x}", false, "x")
	f("{"+strings.Repeat("n", 64)+"|ok}", false, "ok")
	f("{"+strings.Repeat("n", 65)+"|ok}", false, "{"+strings.Repeat("n", 65)+"|ok}")
	// Not tags: left exactly as written.
	f(`{"a":1}`, false, `{"a":1}`)
	f("{ }", false, "{ }")
	f("{}", false, "{}")
	f("{|x}", false, "{|x}")
	f("{first name}", false, "{first name}")
	f("{first_name }", false, "{first_name }")
	f("{plän}", false, "{plän}")
	f(`x {"a":{plan}} y`, false, `x {"a":gold} y`)
	// Unmatched braces and no nesting.
	f("{", false, "{")
	f("}", false, "}")
	f("a { b", false, "a { b")
	f("{plan", false, "{plan")
	f("{plan|x", false, "{plan|x")
	f("{{plan}}", false, "{gold}")
	f("{nickname|{plan}}", false, "{nickname|gold}")
	f("}{plan}{", false, "}gold{")
	// URL: values are query-escaped, the fallback and the link are not.
	f("https://x.example/?q={q}&c={City}", true, "https://x.example/?q=a%26b%3Dc+%23d%2F%C3%A9&c=S%C3%A3o+Paulo")
	f("https://x.example/{nickname|a b}", true, "https://x.example/a b")
	f("https://x.example/?q={q}", false, "https://x.example/?q=a&b=c #d/é")
	// Nothing to do.
	f("", false, "")
	f("plain text", false, "plain text")
}

func TestMergeTagsNilRecipient(t *testing.T) {
	if got := mergeTags("Hi {first_name|there}, {country}", nil, false); got != "Hi there, " {
		t.Fatalf("got %q", got)
	}
}

func TestMergeTagsNoAllocWithoutTags(t *testing.T) {
	for _, s := range []string{"Big sale today, 50% off", `{"a":1} { } {`} {
		if n := testing.AllocsPerRun(100, func() { _ = mergeTags(s, mergeRecipient, false) }); n != 0 {
			t.Fatalf("%q: %v allocs", s, n)
		}
	}
}

func TestPayloadMergeTags(t *testing.T) {
	n, err := prepare(t, `{"title":"Hi {first_name|there}","body":"A {plan}","url":"https://x.example/a?u={external_id}",
		"translations":{"de":{"title":"Hallo {first_name|du}","body":"Dein Plan: {plan|keiner}"}},
		"ab":{"b":{"title":"Hey {first_name}","url":"https://x.example/b?c={city}"}}}`)
	if err != nil {
		t.Fatal(err)
	}
	c := content(t, n)
	f := func(r *store.Recipient, variant, title, body, link string) {
		t.Helper()
		p := c.Payload("n1", r, variant)
		if p.Title != title || p.Body != body || p.URL != link {
			t.Fatalf("variant %q: title %q body %q url %q\nwant  title %q body %q url %q", variant, p.Title, p.Body, p.URL, title, body, link)
		}
	}
	const utm = "&utm_source=relaybell&utm_medium=push"
	// Variant B and the German translation are chosen first, then merged.
	f(mergeRecipient, "b", "Hallo Ana", "Dein Plan: gold", "https://x.example/b?c=S%C3%A3o+Paulo"+utm)
	en := &store.Recipient{Endpoint: store.Endpoint{ID: "e2", Language: "en"}, Subscriber: store.Subscriber{Language: "de", ExternalID: "a b"}}
	f(en, "b", "Hey ", "A ", "https://x.example/b?c="+utm)
	f(en, "a", "Hi there", "A ", "https://x.example/a?u=a+b"+utm)
	f(nil, "", "Hi there", "A ", "https://x.example/a?u="+utm)
}

// Merges finds a merge tag in any text a payload takes from the content,
// and nothing in braces that are not a tag.
func TestMerges(t *testing.T) {
	text := func(s string) *string { return &s }
	for _, c := range []struct {
		name string
		c    Content
		want bool
	}{
		{"plain", Content{Title: "Sale", Body: `{"a":1} { } {}`, URL: "https://example.com/?q={}"}, false},
		{"title", Content{Title: "Hi {externalId}"}, true},
		{"body with a fallback", Content{Title: "Sale", Body: "for {name|you}"}, true},
		{"url", Content{Title: "Sale", URL: "https://example.com/?c={country}"}, true},
		{"version B", Content{Title: "Sale", B: &Variant{Title: text("Sale"), Body: text("{first_name|Hi}")}}, true},
		{"version B plain", Content{Title: "Sale", B: &Variant{Title: text("Soldes"), URL: text("https://example.com/b")}}, false},
		{"translation", Content{Title: "Sale", Translations: map[string]Translation{"de": {Title: "Hallo {tz}"}}}, true},
		{"translation plain", Content{Title: "Sale", Translations: map[string]Translation{"de": {Title: "Angebot", Body: "{ }"}}}, false},
	} {
		if got := c.c.Merges(); got != c.want {
			t.Errorf("%s: Merges() = %v, want %v", c.name, got, c.want)
		}
	}
}
