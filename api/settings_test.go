package api

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/relaybell/relaybell/store"
)

func TestSettingsReadAndDefaults(t *testing.T) {
	h := newHarness(t)
	r := h.do("GET", "/api/v1/settings", "", auth(h.site.APIKey)...)
	if r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	w, err := h.st.Website(context.Background(), h.site.WebsiteID)
	if err != nil {
		t.Fatal(err)
	}
	secret := w.Settings.CommerceSecret
	if !strings.HasPrefix(secret, "rbcs_") || len(secret) != len("rbcs_")+26 {
		t.Fatalf("commerce secret %q made at creation", secret)
	}
	want := `{"settings":{"timezone":"UTC","defaultUrl":null,"defaultIcon":null,"utm":{"source":"","medium":"","campaign":""},` +
		`"quietHours":null,"frequencyCap":null,"revenueCurrency":null,` +
		`"conversionEvents":["purchase","order.completed","checkout.completed"],"attributionWindowHours":24,` +
		defaultAlertTexts + `,"commerceSigningSecret":"` + secret + `"}}`
	if string(r.body) != want {
		t.Fatalf("body\n %s\nwant\n %s", r.body, want)
	}
	// Without full or settings:write, the secret is left out (spec 5, rule 2).
	for _, scopes := range [][]string{{"send"}, {"subscribers:read", "webhooks:write"}} {
		r := h.do("GET", "/api/v1/settings", "", auth(h.key(scopes, nil))...)
		if r.status != 200 || strings.Contains(string(r.body), "commerceSigningSecret") || strings.Contains(string(r.body), secret) {
			t.Fatalf("%v: %d %s", scopes, r.status, r.body)
		}
	}
	if r := h.do("GET", "/api/v1/settings", "", auth(h.key([]string{ScopeSettingsWrite}, nil))...); !strings.Contains(string(r.body), secret) {
		t.Fatalf("settings:write sees no secret: %s", r.body)
	}

	// A website from before the secret existed gets one on the first read
	// that may see it, and keeps it.
	if _, err := h.st.UpdateWebsite(context.Background(), h.site.WebsiteID, func(w *store.Website) error {
		w.Settings.CommerceSecret = ""
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	h.api.keys.purge()
	if r := h.do("GET", "/api/v1/settings", "", auth(h.key([]string{"send"}, nil))...); strings.Contains(string(r.body), "rbcs_") {
		t.Fatalf("send key: %s", r.body)
	}
	first := decode[map[string]settingsView](t, h.do("GET", "/api/v1/settings", "", auth(h.site.APIKey)...))["settings"].CommerceSigningSecret
	second := decode[map[string]settingsView](t, h.do("GET", "/api/v1/settings", "", auth(h.site.APIKey)...))["settings"].CommerceSigningSecret
	if first == nil || second == nil || *first != *second || *first == secret || !strings.HasPrefix(*first, "rbcs_") {
		t.Fatalf("lazily made secret %v then %v", first, second)
	}
}

func TestSettingsUpdate(t *testing.T) {
	h := newHarness(t)
	key := auth(h.site.APIKey)
	put := func(body string) response { return h.do("PUT", "/api/v1/settings", body, key...) }

	r := put(`{"timezone":"Europe/Paris","defaultUrl":"https://shop.example/new","defaultIcon":"https://cdn.shop.example/i.png",
		"utm":{"source":"rb","medium":"push","campaign":"spring sale"},"quietHours":{"start":"22:00","end":"7:30"},
		"frequencyCap":{"max":3,"hours":24},"revenueCurrency":"eur","conversionEvents":["signup"," purchase ","signup"],
		"attributionWindowHours":72}`)
	if r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	got := decode[map[string]settingsView](t, r)["settings"]
	got.CommerceSigningSecret = nil
	b, _ := json.Marshal(got)
	want := `{"timezone":"Europe/Paris","defaultUrl":"https://shop.example/new","defaultIcon":"https://cdn.shop.example/i.png",` +
		`"utm":{"source":"rb","medium":"push","campaign":"spring sale"},"quietHours":{"start":"22:00","end":"07:30"},` +
		`"frequencyCap":{"max":3,"hours":24},"revenueCurrency":"EUR","conversionEvents":["signup","purchase"],"attributionWindowHours":72,` + defaultAlertTexts + `}`
	if string(b) != want {
		t.Fatalf("settings\n %s\nwant\n %s", b, want)
	}
	// GET shows the same at once (the key cache was refreshed), and sends use it.
	again := decode[map[string]settingsView](t, h.do("GET", "/api/v1/settings", "", key...))["settings"]
	again.CommerceSigningSecret = nil
	if b2, _ := json.Marshal(again); string(b2) != want {
		t.Fatalf("GET after PUT\n %s", b2)
	}
	sent := h.post(h.site.APIKey, `{"title":"hi"}`).json(t)["notificationId"].(string)
	detail := h.do("GET", "/api/v1/notifications/"+sent, "", key...).json(t)
	if detail["currency"] != "EUR" {
		t.Fatalf("detail currency %v, want EUR", detail["currency"])
	}
	content := detail["notification"].(map[string]any)
	if content["url"] != "https://shop.example/new?utm_source=rb&utm_medium=push&utm_campaign=spring+sale" ||
		content["icon"] != "https://cdn.shop.example/i.png" {
		t.Fatalf("send does not use the new settings: url %v icon %v", content["url"], content["icon"])
	}

	// A member left out stays; null puts it back to its default.
	r = put(`{"quietHours":null,"frequencyCap":null,"revenueCurrency":null,"conversionEvents":null,"attributionWindowHours":null,"defaultUrl":null,"utm":null}`)
	got = decode[map[string]settingsView](t, r)["settings"]
	got.CommerceSigningSecret = nil
	b, _ = json.Marshal(got)
	want = `{"timezone":"Europe/Paris","defaultUrl":null,"defaultIcon":"https://cdn.shop.example/i.png",` +
		`"utm":{"source":"","medium":"","campaign":""},"quietHours":null,"frequencyCap":null,"revenueCurrency":null,` +
		`"conversionEvents":["purchase","order.completed","checkout.completed"],"attributionWindowHours":24,` + defaultAlertTexts + `}`
	if string(b) != want {
		t.Fatalf("after nulls\n %s\nwant\n %s", b, want)
	}

	// Rotating the commerce secret.
	before := decode[map[string]settingsView](t, h.do("GET", "/api/v1/settings", "", key...))["settings"].CommerceSigningSecret
	after := decode[map[string]settingsView](t, put(`{"rotateCommerceSigningSecret":true}`))["settings"].CommerceSigningSecret
	if before == nil || after == nil || *before == *after {
		t.Fatalf("rotate: %v -> %v", before, after)
	}
}

func TestSettingsErrors(t *testing.T) {
	h := newHarness(t)
	key := auth(h.site.APIKey)
	stored := func() store.Website {
		w, err := h.st.Website(context.Background(), h.site.WebsiteID)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	start := stored()
	for _, c := range []struct{ body, code, msg string }{
		{`{}`, CodeNothingToUpdate, "send at least one setting"},
		{`not json`, CodeInvalidJSON, ""},
		{`{"colour":"red"}`, CodeUnknownField, `unknown field "colour"`},
		{`{"timezone":"Mars/Olympus"}`, CodeInvalidTZ, `unknown time zone "Mars/Olympus"`},
		{`{"timezone":7}`, CodeInvalidJSON, "timezone has the wrong type"},
		{`{"defaultUrl":"ftp://x"}`, CodeInvalidURL, "defaultUrl must be an absolute http(s) URL"},
		{`{"defaultIcon":"/icon.png"}`, CodeInvalidURL, "defaultIcon must be an absolute http(s) URL"},
		{`{"utm":{"source":"a","term":"b"}}`, CodeUnknownField, `utm: unknown field "term"`},
		{`{"utm":{"source":"` + strings.Repeat("x", 101) + `"}}`, CodeInvalidJSON, "utm values are at most 100 characters"},
		{`{"quietHours":{"start":"22:00","end":"22:00"}}`, CodeInvalidJSON, "quietHours needs start and end as H:MM or HH:MM, and they must differ"},
		{`{"quietHours":{"start":"25:00","end":"07:00"}}`, CodeInvalidJSON, "quietHours needs start and end as H:MM or HH:MM, and they must differ"},
		{`{"quietHours":{"start":"22:00"}}`, CodeInvalidJSON, "quietHours needs start and end as H:MM or HH:MM, and they must differ"},
		{`{"frequencyCap":{"max":0,"hours":24}}`, CodeInvalidJSON, "frequencyCap needs max 1-100 and hours 1-168"},
		{`{"frequencyCap":{"max":2,"hours":169}}`, CodeInvalidJSON, "frequencyCap needs max 1-100 and hours 1-168"},
		{`{"revenueCurrency":"EURO"}`, CodeInvalidJSON, "revenueCurrency is a three-letter ISO 4217 code"},
		{`{"conversionEvents":[""]}`, CodeInvalidJSON, "conversion event names are 1-120 characters"},
		{`{"conversionEvents":"purchase"}`, CodeInvalidJSON, "conversionEvents has the wrong type"},
		{`{"attributionWindowHours":0}`, CodeInvalidJSON, "attributionWindowHours is 1-720"},
		{`{"attributionWindowHours":721}`, CodeInvalidJSON, "attributionWindowHours is 1-720"},
		// One bad member refuses the whole change.
		{`{"timezone":"Asia/Tokyo","revenueCurrency":"12"}`, CodeInvalidJSON, "revenueCurrency is a three-letter ISO 4217 code"},
	} {
		r := h.do("PUT", "/api/v1/settings", c.body, key...)
		if c.msg == "" {
			expectCode(t, r, 400, c.code)
		} else {
			extra, _ := json.Marshal(c.msg)
			expectError(t, r, 400, c.code, `,"message":`+string(extra))
		}
	}
	if got := stored(); got.Timezone != start.Timezone || !jsonEqual(t, got.Settings, start.Settings) {
		t.Fatalf("a refused change was stored: %+v", got)
	}
	// Only full or settings:write may change settings.
	expectError(t, h.do("PUT", "/api/v1/settings", `{"timezone":"Asia/Tokyo"}`, auth(h.key([]string{"send"}, nil))...),
		403, CodeInsufficientScope, `,"required":"settings:write"`)
	if r := h.do("PUT", "/api/v1/settings", `{"timezone":"Asia/Tokyo"}`, auth(h.key([]string{ScopeSettingsWrite}, nil))...); r.status != 200 {
		t.Fatalf("settings:write: %d %s", r.status, r.body)
	}
	// Another website's settings are its own.
	other, err := CreateWebsite(context.Background(), h.st, NewWebsite{Name: "Other", URL: "https://other.example", Timezone: "America/Chicago"}, testStart)
	if err != nil {
		t.Fatal(err)
	}
	if tz := decode[map[string]settingsView](t, h.do("GET", "/api/v1/settings", "", auth(other.APIKey)...))["settings"].Timezone; tz != "America/Chicago" {
		t.Fatalf("other website's zone %q", tz)
	}
}

func jsonEqual(t *testing.T, a, b any) bool {
	t.Helper()
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// defaultAlertTexts is the productAlertTexts member of a website that kept
// the default texts, with the default commerceExternalId after it.
const defaultAlertTexts = `"productAlertTexts":{"backInStock":{"title":"Back in stock: {product.title}","body":"It is available again. Get it before it is gone."},` +
	`"priceDrop":{"title":"Price drop: {product.title}","body":"Now {product.price}, was {product.oldPrice}."}},"commerceExternalId":"customerId"`
