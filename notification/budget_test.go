package notification

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/relaybell/relaybell/store"
)

func TestCheckSizeNamesTheLongestMember(t *testing.T) {
	f := func(body, wantMessage string) {
		t.Helper()
		_, err := prepare(t, body)
		var e *Error
		if wantMessage == "" {
			if err != nil {
				t.Fatalf("%.80s: %v", body, err)
			}
			return
		}
		if !errors.As(err, &e) || e.Code != "payload_too_large" || e.Message != wantMessage {
			t.Fatalf("%.80s: got %v, want payload_too_large: %s", body, err, wantMessage)
		}
	}
	x := func(n int) string { return strings.Repeat("x", n) }
	// The fixture's website adds its icon and UTM tags: a plain send's
	// push, with ids of 36 characters, is this long without its body.
	base := len(`{"notificationId":"` + placeholderID + `","endpointId":"` + placeholderID + `","title":"t","body":"",` +
		`"url":"https://shop.example?utm_source=relaybell&utm_medium=push","icon":"https://shop.example/logo.png",` +
		`"image":"","badge":"","actions":[],"requireInteraction":false,"tag":"","variant":null}`)
	room := MaxPayload - base
	f(`{"title":"t","body":"`+x(room)+`"}`, "")
	f(`{"title":"t","body":"`+x(room+1)+`"}`, "body is 1 byte too long for a push (a push holds at most 3,993 bytes)")
	f(`{"title":"t","body":"`+x(room+1234)+`"}`, "body is 1,234 bytes too long for a push (a push holds at most 3,993 bytes)")
	// Button links and HTML characters count as written, without escapes.
	f(`{"title":"t","body":"`+x(room-len(`{"action":"btn1","title":"a"},{"action":"btn2","title":"b","url":"https://x.example/?a=<>&"}`)+1)+`",
		"actions":[{"title":"a"},{"title":"b","url":"https://x.example/?a=<>&"}]}`, "body is 1 byte too long for a push (a push holds at most 3,993 bytes)")
	over := len(`{"action":"btn1","title":"a"},{"action":"btn2","title":"b","url":"https://x.example/"}`)
	f(`{"title":"t","actions":[{"title":"a"},{"title":"b","url":"https://x.example/`+x(room)+`"}]}`,
		"actions[1].url is "+thousands(over)+" bytes too long for a push (a push holds at most 3,993 bytes)")
	// No member alone can make room: the message says so.
	f(`{"title":"`+x(room)+`","body":"`+x(room)+`","tag":"`+x(room+1)+`"}`,
		"the push is "+thousands(2*room)+" bytes too long (a push holds at most 3,993 bytes); its longest member is tag")
	// A draft is not checked.
	f(`{"draft":true,"title":"t","body":"`+x(2*room)+`"}`, "")
}

func TestThousands(t *testing.T) {
	for n, want := range map[int]string{0: "0", 7: "7", 999: "999", 1000: "1,000", 3993: "3,993", 1234567: "1,234,567"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestPushPayloadFits(t *testing.T) {
	recipient := func(tags map[string]string) *store.Recipient {
		return &store.Recipient{Endpoint: store.Endpoint{ID: placeholderID}, Subscriber: store.Subscriber{Tags: tags}}
	}
	push := func(c Content, r *store.Recipient) Payload {
		t.Helper()
		b, err := c.PushPayload(placeholderID, r, "")
		if err != nil || len(b) > MaxPayload {
			t.Fatalf("%d bytes (%v)", len(b), err)
		}
		var p Payload
		if err := json.Unmarshal(b, &p); err != nil {
			t.Fatal(err)
		}
		full := c.Payload(placeholderID, r, "")
		full.Title, full.Body, full.URL = p.Title, p.Body, p.URL
		if want, _ := full.Encode(); string(want) != string(b) {
			t.Fatalf("payload %s, want %s", b, want)
		}
		return full
	}
	long := strings.Repeat("ß", 3000)

	// The longer text is cut first; the other stays whole.
	c := Content{Title: "{a|}Hello", Body: "Short"}
	p := push(c, recipient(map[string]string{"a": long}))
	if p.Body != "Short" || !strings.HasSuffix(p.Title, "ß…") || !strings.HasPrefix(p.Title, "ßß") {
		t.Fatalf("title %.20q… body %q", p.Title, p.Body)
	}
	// Both texts, when a person's link leaves too little room for one.
	c = Content{Title: "{a|}", Body: "{b|}", URL: "https://shop.example/?u={c|}"}
	p = push(c, recipient(map[string]string{"a": strings.Repeat("a", 1000), "b": strings.Repeat("b", 1200), "c": strings.Repeat("c", 3500)}))
	if p.Body != "" || !strings.HasPrefix(p.Title, "aaa") || !strings.HasSuffix(p.Title, "a…") || len(p.Title) > 500 || len(p.URL) != 3524 {
		t.Fatalf("title %.20q… (%d bytes) body %.20q url of %d bytes", p.Title, len(p.Title), p.Body, len(p.URL))
	}
	// A link is never cut: once the texts are empty, the url goes back to
	// its fallback.
	c = Content{Title: "Hi", Body: "There", URL: "https://shop.example/?u={a|me}"}
	p = push(c, recipient(map[string]string{"a": strings.Repeat("é", 1000)}))
	if p.Title != "" || p.Body != "" || p.URL != "https://shop.example/?u=me" {
		t.Fatalf("title %q body %q url %q", p.Title, p.Body, p.URL)
	}
	// What fits is left alone.
	c = Content{Title: "Hi {a|}", Body: "There"}
	if p = push(c, recipient(map[string]string{"a": "Ada"})); p.Title != "Hi Ada" || p.Body != "There" {
		t.Fatalf("title %q body %q", p.Title, p.Body)
	}
}
