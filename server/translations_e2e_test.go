package server

import (
	"maps"
	"testing"

	"github.com/relaybell/relaybell/webpush/webpushtest"
)

// TestEachBrowserInItsOwnLanguage: a push takes the translation of its
// browser's language, not its person's: Ada's German phone gets German
// after her English laptop registered, in a broadcast (walked without the
// subscribers) and in a send filtered by language (which reads the
// person's language, en-GB now, so both her browsers get it, each in
// its own). The send's report counts its pushes by the browsers'
// languages.
func TestEachBrowserInItsOwnLanguage(t *testing.T) {
	ts := startServer(t)
	w := ts.createWebsite()
	phone := ts.push.NewBrowser(w.VAPIDPublicKey)
	laptop := ts.push.NewBrowser(w.VAPIDPublicKey)
	french := ts.push.NewBrowser(w.VAPIDPublicKey)
	ts.subscribe(w, phone, map[string]any{"externalId": "ada", "language": "de-DE"})
	ts.subscribe(w, laptop, map[string]any{"externalId": "ada", "language": "en-GB"})
	ts.subscribe(w, french, map[string]any{"language": "fr"})

	content := map[string]any{"title": "Sale", "body": "Everything must go",
		"translations": map[string]any{"de": map[string]any{"title": "Schlussverkauf", "body": "Alles muss raus"},
			"fr": map[string]any{"title": "Soldes", "body": ""}}}
	browsers := map[string]*webpushtest.Browser{"phone": phone, "laptop": laptop, "french": french}
	want := func(id string, titles map[string]string) {
		t.Helper()
		for name, title := range titles {
			got := received(t, browsers[name], id)
			if title == "" {
				if len(got) != 0 {
					t.Fatalf("%s got %d pushes of %s", name, len(got), id)
				}
				continue
			}
			if len(got) != 1 || got[0].Title != title {
				t.Fatalf("%s got %+v, want one push titled %q", name, got, title)
			}
		}
	}

	everyone := ts.send(w, content)
	ts.waitSent(w, everyone)
	want(everyone, map[string]string{"phone": "Schlussverkauf", "laptop": "Sale", "french": "Soldes"})

	filtered := map[string]any{"filters": map[string]any{"rules": []map[string]any{{"field": "language", "value": "en-GB"}}}}
	maps.Copy(filtered, content)
	english := ts.send(w, filtered)
	ts.waitSent(w, english)
	want(english, map[string]string{"phone": "Schlussverkauf", "laptop": "Sale", "french": ""})

	byLanguage := map[string]int64{"de": 1, "en": 1, "fr": 1}
	waitFor(t, "the broadcast's pushes counted by language", func() bool {
		var d struct {
			Languages []struct {
				Language string `json:"language"`
				Sent     int64  `json:"sent"`
			} `json:"languages"`
		}
		if code := ts.call("GET", "/api/v1/notifications/"+everyone, w.APIKey, nil, &d); code != 200 {
			t.Fatalf("detail: %d", code)
		}
		sent := map[string]int64{}
		for _, l := range d.Languages {
			sent[l.Language] = l.Sent
		}
		return maps.Equal(sent, byLanguage)
	})
}
