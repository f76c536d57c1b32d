package server

import (
	"bytes"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/relaybell/relaybell/integrations"
)

// TestDashboardIntegrations opens the Integrations page from Settings,
// found by role and name: each platform's receiver URL; a Shopify delivery signed with the
// website's secret shows in its deliveries, a payload no event comes of
// as the last error (an ignored topic after it is none); the person chooser saves settings commerceExternalId; rotating
// the secret shows the new one once, which then signs, as the old one
// still does within its 24 hours.
func TestDashboardIntegrations(t *testing.T) {
	ts := startServer(t)
	b, site := startDashboard(t, ts)
	role, heading := b.role, b.heading
	var settings struct {
		Settings struct {
			Secret string `json:"commerceSigningSecret"`
		} `json:"settings"`
	}
	b.api("GET", "/settings", "", &settings)
	old := settings.Settings.Secret
	if old == "" {
		t.Fatal("the owner sees no commerce secret")
	}
	deliver := func(topic, file, id, secret string) int {
		t.Helper()
		body, err := os.ReadFile("../integrations/testdata/" + file)
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest("POST", ts.base+"/api/v1/integrations/shopify/"+site.ProjectID, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Shopify-Topic", topic)
		req.Header.Set("X-Shopify-Webhook-Id", id)
		req.Header.Set("X-Shopify-Hmac-Sha256", integrations.Sign(secret, body))
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}

	role("link", "Settings", "click")
	heading("Settings")
	role("link", "Integrations", "click")
	heading("Integrations")
	var current string
	if b.d.page(`document.querySelector('nav[aria-label=Main] a[aria-current=page]').textContent`, &current); current != "Settings" {
		t.Fatalf("the current area is %q, not Settings", current)
	}
	if got := role("textbox", "Shopify receiver URL", "value"); got != ts.base+"/api/v1/integrations/shopify/"+site.ProjectID {
		t.Fatalf("Shopify receiver URL %q", got)
	}
	if got := role("textbox", "WooCommerce receiver URL", "value"); got != ts.base+"/api/v1/integrations/woocommerce/"+site.ProjectID {
		t.Fatalf("WooCommerce receiver URL %q", got)
	}
	// The list is newest first, and deliveries received in the same
	// millisecond go by their webhook id, descending: the ids rise with
	// the order they are sent in, so the list's order is that either way.
	if s := deliver("orders/paid", "shopify/orders_paid.json", "d-1", old); s != 200 {
		t.Fatalf("orders/paid: %d", s)
	}
	if s := deliver("products/update", "shopify/products_update_no_id.json", "d-2", old); s != 200 {
		t.Fatalf("products/update: %d", s)
	}
	if s := deliver("customers/create", "shopify/orders_paid.json", "d-3", old); s != 200 {
		t.Fatalf("customers/create: %d", s)
	}
	if s := deliver("orders/paid", "shopify/orders_paid_guest.json", "d-wrong", "rbcs_WRONG"); s != 401 {
		t.Fatalf("wrongly signed: %d", s)
	}

	// The person chooser saves the setting and the page reloads.
	role("combobox", "The events name the customer by", "select", "email")
	waitFor(t, "saved", func() bool { return strings.Contains(b.mainText(), "Saved.") })
	b.waitRows("Shopify deliveries", []string{"customers/create", "products/update", "orders/paid"})
	if !strings.Contains(b.mainText(), `Last error: products/update without a product id`) {
		t.Fatalf("no last error: %s", b.mainText())
	}
	var list struct {
		ExternalID string `json:"externalId"`
	}
	if b.api("GET", "/integrations", "", &list); list.ExternalID != "email" {
		t.Fatalf("externalId %q", list.ExternalID)
	}

	// Rotate: the new secret shown once; both sign for 24 hours.
	role("button", "Rotate signing secret", "click")
	fresh := role("textbox", "New signing secret", "value")
	if !strings.HasPrefix(fresh, "rbcs_") || fresh == old {
		t.Fatalf("new secret %q", fresh)
	}
	b.shoot("integrations")
	if s := deliver("orders/paid", "shopify/orders_paid_guest.json", "d-4", fresh); s != 200 {
		t.Fatalf("the new secret: %d", s)
	}
	if s := deliver("orders/paid", "shopify/orders_paid_guest.json", "d-5", old); s != 200 {
		t.Fatalf("the old secret within its grace period: %d", s)
	}
}
