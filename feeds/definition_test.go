package feeds

import (
	"encoding/json"
	"errors"
	"testing"
)

// Every refusal of a definition, with its exact code.
func TestDefinitionRefusals(t *testing.T) {
	f := func(body, code string) {
		t.Helper()
		var b Body
		if err := json.Unmarshal([]byte(body), &b); err != nil {
			t.Fatal(err)
		}
		d := New()
		err := d.Apply(b, true)
		var fe *Error
		if code == "" {
			if err != nil {
				t.Fatalf("%s: %v", body, err)
			}
			return
		}
		if !errors.As(err, &fe) || fe.Code != code {
			t.Fatalf("%s: got %v, want %s", body, err, code)
		}
	}
	const ok = `"name": "Blog", "url": "https://blog.example.com/feed"`
	f(`{"url": "https://blog.example.com/feed", "audience": {"everyone": true}}`, CodeNameRequired)
	f(`{"name": "  ", "url": "https://blog.example.com/feed", "audience": {"everyone": true}}`, CodeNameRequired)
	f(`{"name": "`+string(make([]byte, 0))+`x", "audience": {"everyone": true}}`, CodeInvalidURL)
	f(`{"name": "Blog", "url": "ftp://blog.example.com/feed", "audience": {"everyone": true}}`, CodeInvalidURL)
	f(`{"name": "Blog", "url": "/feed", "audience": {"everyone": true}}`, CodeInvalidURL)
	f(`{`+ok+`}`, CodeInvalidAudience)
	f(`{`+ok+`, "audience": {}}`, CodeInvalidAudience)
	f(`{`+ok+`, "audience": {"everyone": false}}`, CodeInvalidAudience)
	f(`{`+ok+`, "audience": {"everyone": true, "topicId": "news"}}`, CodeInvalidAudience)
	f(`{`+ok+`, "audience": {"topicId": "news", "segmentId": "4d0c2a59-7a7e-4a43-9bd1-6a7f0b1a3c11"}}`, CodeInvalidAudience)
	f(`{`+ok+`, "audience": {"topicId": ""}}`, CodeInvalidAudience)
	f(`{`+ok+`, "audience": {"excludeSegmentId": "4d0c2a59-7a7e-4a43-9bd1-6a7f0b1a3c11"}}`, CodeInvalidAudience)
	f(`{`+ok+`, "audience": {"everyone": true}, "pollMinutes": 4}`, CodeInvalidPollMinutes)
	f(`{`+ok+`, "audience": {"everyone": true}, "pollMinutes": 1441}`, CodeInvalidPollMinutes)
	f(`{`+ok+`, "audience": {"everyone": true}, "maxPerPoll": 0}`, CodeInvalidMaxPerPoll)
	f(`{`+ok+`, "audience": {"everyone": true}, "maxPerPoll": 11}`, CodeInvalidMaxPerPoll)
	f(`{`+ok+`, "audience": {"everyone": true}, "sendExisting": -1}`, CodeInvalidSendExisting)
	f(`{`+ok+`, "audience": {"everyone": true}, "sendExisting": 51}`, CodeInvalidSendExisting)
	f(`{`+ok+`, "audience": {"everyone": true}, "status": "draft"}`, CodeInvalidStatus)
	f(`{`+ok+`, "audience": {"everyone": true}, "template": {"title": "{item.author}"}}`, CodeInvalidTemplate)
	f(`{`+ok+`, "audience": {"everyone": true}, "template": {"title": " "}}`, CodeInvalidTemplate)
	f(`{`+ok+`, "audience": {"everyone": true}, "template": {"templateId": "4d0c2a59-7a7e-4a43-9bd1-6a7f0b1a3c11", "title": "x"}}`, CodeInvalidTemplate)
	f(`{`+ok+`, "audience": {"everyone": true}, "template": {"templateId": "nope"}}`, CodeTemplateNotFound)
	f(`{`+ok+`, "audience": {"everyone": true}, "pollMinutes": 5, "maxPerPoll": 10, "sendExisting": 50}`, "")
	f(`{`+ok+`, "audience": {"filters": {"match": "all", "rules": []}, "excludeSegmentId": "4d0c2a59-7a7e-4a43-9bd1-6a7f0b1a3c11"}}`, "")
}

func TestItemKey(t *testing.T) {
	for _, c := range []struct {
		it   Item
		want string
	}{
		{Item{GUID: "urn:1", Link: "https://x.example/1"}, "guid:urn:1"},
		{Item{Link: "https://x.example/1"}, "link:https://x.example/1"},
		{Item{Title: "no id"}, ""},
		{Item{GUID: string(make([]byte, 300))}, "sha256:"},
	} {
		got := c.it.Key()
		if c.want == "sha256:" {
			if len(got) != len("sha256:")+64 {
				t.Fatalf("long key %q", got)
			}
			continue
		}
		if got != c.want {
			t.Fatalf("Key(%+v) = %q, want %q", c.it, got, c.want)
		}
	}
}
