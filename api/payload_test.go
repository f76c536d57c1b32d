package api

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/relaybell/relaybell/notification"
)

// pushOf is the push payload a browser of the harness website (address
// https://shop.example, no UTM tags, no icon) gets for a send titled "t"
// with this body, written out by hand: the door check must measure this
// JSON, ids as long as real ones. variant is "null" or `"a"`/`"b"`.
func pushOf(body, variant string) string {
	return `{"notificationId":"00000000-0000-4000-8000-000000000000","endpointId":"00000000-0000-4000-8000-000000000000",` +
		`"title":"t","body":"` + body + `","url":"https://shop.example","icon":"","image":"","badge":"","actions":[],` +
		`"requireInteraction":false,"tag":"","variant":` + variant + `}`
}

// roomForBody is how long a plain body can be in a push of pushOf.
var roomForBody = notification.MaxPayload - len(pushOf("", "null"))

// tooLong is the message of a payload_too_large naming member.
func tooLong(member string, over int) string {
	unit := "bytes"
	if over == 1 {
		unit = "byte"
	}
	return fmt.Sprintf(`,"message":"%s is %d %s too long for a push (a push holds at most 3,993 bytes)"`, member, over, unit)
}

// sendBody is a send request titled "t" with the given extra members.
func sendBody(members string) string { return `{"title":"t"` + members + `}` }

func TestSendPayloadBudget(t *testing.T) {
	h := newHarness(t)
	key := auth(h.site.APIKey)
	x := func(n int) string { return strings.Repeat("x", n) }
	refused := func(body, message string) {
		t.Helper()
		before := h.notificationCount()
		expectError(t, h.do("POST", "/api/v1/notifications", body, key...), 413, CodePayloadTooLarge, message)
		if n := h.notificationCount(); n != before || h.disp.count() != 0 {
			t.Fatalf("a refused send stored %d notifications, dispatched %d", n-before, h.disp.count())
		}
	}
	if roomForBody != 3993-len(pushOf("", "null")) || roomForBody < 3000 {
		t.Fatalf("room for a body %d", roomForBody)
	}

	// Plain: the body 912 bytes over, then one byte over.
	refused(sendBody(`,"body":"`+x(roomForBody+912)+`"`), tooLong("body", 912))
	refused(sendBody(`,"body":"`+x(roomForBody+1)+`"`), tooLong("body", 1))
	// Bytes, not characters: "é" is two bytes, '"' is written \".
	refused(sendBody(`,"body":"`+strings.Repeat("é", roomForBody/2+1)+`"`), tooLong("body", 2-roomForBody%2))
	refused(sendBody(`,"body":"`+strings.Repeat(`\"`, roomForBody/2+1)+`"`), tooLong("body", 2-roomForBody%2))
	// A translation, then version B of an A/B test (its variant "b" is a
	// byte shorter than null), then a merge tag at its fallback.
	refused(sendBody(`,"body":"short","translations":{"de":{"title":"","body":"`+x(roomForBody+10)+`"}}`), tooLong("translations.de.body", 10))
	refused(sendBody(`,"translations":{"FR":{"title":"`+x(roomForBody+20)+`","body":""}}`), tooLong("translations.fr.title", 19))
	refused(sendBody(`,"ab":{"b":{"body":"`+x(roomForBody+5)+`"}}`), tooLong("ab.b.body", 4))
	refused(sendBody(`,"body":"{first_name|`+x(roomForBody+7)+`}"`), tooLong("body", 7))
	// The longest member is named when several are long.
	refused(sendBody(`,"body":"`+x(roomForBody/2)+`","tag":"`+x(roomForBody/2+30)+`"`), tooLong("tag", roomForBody/2*2+30-roomForBody))

	// Exactly at the limit: accepted, and the stored send is that long.
	if len(pushOf(x(roomForBody), "null")) != 3993 {
		t.Fatalf("the full push is %d bytes", len(pushOf(x(roomForBody), "null")))
	}
	r := h.do("POST", "/api/v1/notifications", sendBody(`,"body":"`+x(roomForBody)+`"`), key...)
	if r.status != 202 || h.disp.count() != 1 {
		t.Fatalf("at the limit: %d %s", r.status, r.body)
	}
	// A merge tag whose fallback fits is accepted, whatever values people
	// have: a long one is cut at push time.
	r = h.do("POST", "/api/v1/notifications", sendBody(`,"body":"{first_name|}`+x(roomForBody-len("{first_name|}"))+`"`), key...)
	if r.status != 202 {
		t.Fatalf("merge tag: %d %s", r.status, r.body)
	}
	// A/B and translations that fit: accepted.
	r = h.do("POST", "/api/v1/notifications", sendBody(`,"ab":{"b":{"body":"`+x(roomForBody+1)+`"}},"translations":{"de":{"title":"t","body":"`+x(roomForBody)+`"}}`), key...)
	if r.status != 202 {
		t.Fatalf("A/B at the limit: %d %s", r.status, r.body)
	}
}

func TestDraftAndTestSendPayloadBudget(t *testing.T) {
	h := newHarness(t)
	key := auth(h.site.APIKey)
	long := strings.Repeat("x", roomForBody+50)

	// A draft saves without checks, and is refused when it is sent.
	r := h.do("POST", "/api/v1/notifications", `{"draft":true,"title":"t","body":"`+long+`","url":"javascript:alert(1)"}`, key...)
	if r.status != 201 {
		t.Fatalf("draft: %d %s", r.status, r.body)
	}
	id := r.json(t)["notificationId"].(string)
	if r := h.do("PATCH", "/api/v1/notifications/"+id, `{"icon":"not a url"}`, key...); r.status != 200 {
		t.Fatalf("patch: %d %s", r.status, r.body)
	}
	expectError(t, h.do("POST", "/api/v1/notifications/"+id+"/send", "", key...), 400, CodeInvalidURL,
		`,"message":"url must be an absolute http(s) link"`)
	expectError(t, h.do("POST", "/api/v1/notifications/"+id+"/send", `{"url":null,"icon":null}`, key...), 413, CodePayloadTooLarge,
		tooLong("body", 50))
	if got := h.detailOf(t, id)["status"]; got != "draft" || h.disp.count() != 0 {
		t.Fatalf("a refused draft send left status %v, dispatched %d", got, h.disp.count())
	}
	r = h.do("POST", "/api/v1/notifications/"+id+"/send", `{"url":null,"icon":null,"body":"fits"}`, key...)
	if r.status != 202 || h.disp.count() != 1 {
		t.Fatalf("draft send: %d %s", r.status, r.body)
	}

	// A test send: the same checks.
	_, endpoint := h.subscribeEndpoint(t, h.site.ProjectID, "https://fcm.googleapis.com/fcm/send/laptop", "")
	if r := h.do("POST", "/api/v1/test-devices", `{"endpointId":"`+endpoint+`"}`, key...); r.status != 201 {
		t.Fatalf("test device: %d %s", r.status, r.body)
	}
	before := h.notificationCount()
	expectError(t, h.do("POST", "/api/v1/test-devices/send", sendBody(`,"body":"`+long+`"`), key...), 413, CodePayloadTooLarge,
		tooLong("body", 50))
	expectError(t, h.do("POST", "/api/v1/test-devices/send", sendBody(`,"image":"ftp://x"`), key...), 400, CodeInvalidURL,
		`,"message":"image must be an absolute http(s) link"`)
	if n := h.notificationCount(); n != before {
		t.Fatalf("refused test sends stored %d notifications", n-before)
	}
	if r := h.do("POST", "/api/v1/test-devices/send", sendBody(`,"body":"fits"`), key...); r.status != 202 {
		t.Fatalf("test send: %d %s", r.status, r.body)
	}
}

func TestSendLinksChecked(t *testing.T) {
	h := newHarness(t)
	key := auth(h.site.APIKey)
	// members are send requests with a link (JSON) as each link member.
	members := map[string]func(link string) string{
		"url":   func(l string) string { return sendBody(`,"url":` + l) },
		"icon":  func(l string) string { return sendBody(`,"icon":` + l) },
		"image": func(l string) string { return sendBody(`,"image":` + l) },
		"badge": func(l string) string { return sendBody(`,"badge":` + l) },
		"actions[0].url": func(l string) string {
			return sendBody(`,"actions":[{"title":"Go","url":` + l + `},{"title":"Later"}]`)
		},
		"actions[1].url": func(l string) string {
			return sendBody(`,"actions":[{"title":"Go","url":"https://shop.example/go"},{"title":"Later","url":` + l + `}]`)
		},
		"ab.b.url":   func(l string) string { return sendBody(`,"ab":{"b":{"title":"B","url":` + l + `}}`) },
		"ab.b.image": func(l string) string { return sendBody(`,"ab":{"b":{"title":"B","image":` + l + `}}`) },
	}
	quote := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	sent := 0
	for member, body := range members {
		for _, bad := range []string{"javascript:alert(1)", "ftp://x", "not a url", "shop.example/sale", "https://", "//shop.example/x", " https://shop.example"} {
			expectError(t, h.do("POST", "/api/v1/notifications", body(quote(bad)), key...), 400, CodeInvalidURL,
				`,"message":"`+member+` must be an absolute http(s) link"`)
		}
		if n := h.notificationCount(); n != sent || h.disp.count() != sent {
			t.Fatalf("%s: refused sends stored %d, dispatched %d", member, n-sent, h.disp.count()-sent)
		}
		for _, good := range []string{"https://shop.example/sale?x=1&y=2", "HTTP://shop.example", `""`} {
			if good != `""` {
				good = quote(good)
			}
			if r := h.do("POST", "/api/v1/notifications", body(good), key...); r.status != 202 {
				t.Fatalf("%s = %s: %d %s", member, good, r.status, r.body)
			}
			sent++
		}
	}
	// The url members are filled with their merge tags' fallbacks first.
	for _, body := range []string{
		sendBody(`,"url":"https://shop.example/{path|sale}?u={external_id}"`),
		sendBody(`,"url":"{link|https://shop.example/sale}"`),
		sendBody(`,"ab":{"b":{"url":"{link|https://shop.example/b}"}}`),
	} {
		if r := h.do("POST", "/api/v1/notifications", body, key...); r.status != 202 {
			t.Fatalf("%s: %d %s", body, r.status, r.body)
		}
	}
	for body, member := range map[string]string{
		sendBody(`,"url":"{link}"`):                           "url",
		sendBody(`,"url":"{link|shop.example}"`):              "url",
		sendBody(`,"ab":{"b":{"url":"{link|javascript:x}"}}`): "ab.b.url",
		// Icons are not filled: a merge tag in their host stays one.
		sendBody(`,"icon":"https://{cdn|cdn.example}/i.png"`): "icon",
	} {
		expectError(t, h.do("POST", "/api/v1/notifications", body, key...), 400, CodeInvalidURL,
			`,"message":"`+member+` must be an absolute http(s) link"`)
	}
}

func TestWebsiteLinksChecked(t *testing.T) {
	h := newHarness(t)
	key := auth(h.site.APIKey)
	owner, site := h.owner(t, "ada@shop.example", "Mine")
	admin := []string{"Authorization", "Bearer " + testAdminToken}
	quote := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	for _, bad := range []string{"javascript:alert(1)", "ftp://x", "not a url", "shop.example/sale"} {
		msg := `,"message":"url must be an absolute http(s) URL"`
		expectError(t, owner.do("POST", "/api/v1/websites", `{"name":"New","url":`+quote(bad)+`}`), 400, CodeInvalidURL, msg)
		expectError(t, owner.do("PUT", "/api/v1/websites/"+site.ID, `{"url":`+quote(bad)+`}`), 400, CodeInvalidURL, msg)
		expectError(t, h.do("POST", "/admin/v1/websites", `{"name":"New","url":`+quote(bad)+`}`, admin...), 400, CodeInvalidURL, msg)
		for _, member := range []string{"defaultUrl", "defaultIcon"} {
			expectError(t, h.do("PUT", "/api/v1/settings", `{"`+member+`":`+quote(bad)+`}`, key...), 400, CodeInvalidURL,
				`,"message":"`+member+` must be an absolute http(s) URL"`)
		}
	}
	if n := len(owner.do("GET", "/api/v1/websites", "").json(t)["websites"].([]any)); n != 1 {
		t.Fatalf("refused websites made %d websites", n-1)
	}
	if r := owner.do("PUT", "/api/v1/websites/"+site.ID, `{"url":"https://mine.example/shop"}`); r.status != 200 {
		t.Fatalf("put website: %d %s", r.status, r.body)
	}
	if r := h.do("PUT", "/api/v1/settings", `{"defaultUrl":"https://shop.example/new","defaultIcon":"https://shop.example/i.png"}`, key...); r.status != 200 {
		t.Fatalf("settings: %d %s", r.status, r.body)
	}
}

// A product alert is made from the event's properties, not refused at a
// door: when its links leave its texts no room in one push (each link may
// hold 2,048 bytes), it goes without them.
func TestProductAlertTooLongGoesWithoutItsLinks(t *testing.T) {
	h := newHarness(t)
	h.browser(t, `,"externalId":"ann"`)
	h.track(t, `{"event":"product.viewed","externalId":"ann","properties":{"productId":"sku-1"}}`)
	h.clock.Add(time.Second)

	link := "https://shop.example/p/" + strings.Repeat("p", 2000)
	ans := h.track(t, `{"event":"price_drop","properties":{"productId":"sku-1","title":"`+strings.Repeat("é", 190)+
		`","price":59,"url":"`+link+`","image":"`+link+`"}}`)
	if ans["productAlerts"] != 1.0 || ans["alertAudience"] != 1.0 || h.disp.count() != 1 {
		t.Fatalf("answer %v, dispatched %d", ans, h.disp.count())
	}
	c, err := notification.DecodeContent(h.disp.sent[0].Content)
	if err != nil {
		t.Fatal(err)
	}
	if c.URL != "https://shop.example" || c.Image != "" || c.Title != "Price drop: "+strings.Repeat("é", 188) {
		t.Fatalf("alert url %.40q image %.40q title %q", c.URL, c.Image, c.Title)
	}

	// Links that fit stay.
	h.clock.Add(time.Hour)
	h.track(t, `{"event":"price_drop","properties":{"productId":"sku-1","price":49,"url":"`+link+`","image":"https://shop.example/i.png"}}`)
	if c, err = notification.DecodeContent(h.disp.sent[1].Content); err != nil || c.URL != link || c.Image != "https://shop.example/i.png" {
		t.Fatalf("alert url %.40q image %q (%v)", c.URL, c.Image, err)
	}
}
