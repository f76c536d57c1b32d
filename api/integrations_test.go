package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/relaybell/relaybell/integrations"
)

// delivery posts a fixture of integrations/testdata as the platform
// sends it: signed with secret (its base64 HMAC-SHA256), under a
// delivery id and a topic.
func (h *harness) delivery(t *testing.T, platform, topic, file, deliveryID, secret string) response {
	t.Helper()
	body, err := os.ReadFile(filepath.Join("..", "integrations", "testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	return h.deliveryBody(platform, topic, body, deliveryID, secret)
}

// wooModifiedAt is a WooCommerce fixture whose product last changed at at
// (date_modified, which orders its stock state).
func wooModifiedAt(t *testing.T, file string, at time.Time) []byte {
	t.Helper()
	body, err := os.ReadFile(filepath.Join("..", "integrations", "testdata", "woocommerce", file))
	if err != nil {
		t.Fatal(err)
	}
	return regexp.MustCompile(`"date_modified": "[^"]*"`).ReplaceAll(body, []byte(`"date_modified": "`+at.UTC().Format("2006-01-02T15:04:05")+`"`))
}

// deliveryBody posts body as the platform sends it.
func (h *harness) deliveryBody(platform, topic string, body []byte, deliveryID, secret string) response {
	names := integrations.HeaderNames[platform]
	headers := []string{"Content-Type", "application/json", names.Topic, topic, names.DeliveryID, deliveryID}
	if secret != "" {
		headers = append(headers, names.Signature, integrations.Sign(secret, body))
	}
	return h.doBytes("POST", "/api/v1/integrations/"+platform+"/"+h.site.ProjectID, "application/json", body, headers...)
}

// commerceSecret is the website's current commerce signing secret.
func (h *harness) commerceSecret(t *testing.T) string {
	t.Helper()
	w, err := h.st.Website(context.Background(), h.site.WebsiteID)
	if err != nil {
		t.Fatal(err)
	}
	return w.Settings.CommerceSecret
}

// listedEvents are GET /events' events.
func (h *harness) listedEvents(t *testing.T) []eventJSON {
	t.Helper()
	r := h.do("GET", "/api/v1/events", "", auth(h.site.APIKey)...)
	if r.status != 200 {
		t.Fatalf("GET /events: %d %s", r.status, r.body)
	}
	var out struct{ Events []eventJSON }
	if err := json.Unmarshal(r.body, &out); err != nil {
		t.Fatal(err)
	}
	return out.Events
}

func eventIDOf(t *testing.T, r response) string {
	t.Helper()
	var a struct{ Events []struct{ EventID string } }
	if err := json.Unmarshal(r.body, &a); err != nil || len(a.Events) != 1 {
		t.Fatalf("one event: %s", r.body)
	}
	return a.Events[0].EventID
}

func TestIntegrationsShopify(t *testing.T) {
	h := newHarness(t, func(c *testConfig) { c.FoldByHand = true })
	secret := h.commerceSecret(t)
	const customer, checkoutCustomer = "115310627314723954", "603851970716743426"
	john := h.browser(t, `,"externalId":"`+customer+`"`)
	h.browser(t, `,"externalId":"`+checkoutCustomer+`"`)
	n := h.sendTo(t, "Spring sale", customer)
	h.ping(t, "delivered", n, john.EndpointID)
	h.clock.Add(time.Minute)

	// orders/paid: a purchase of the customer, credited to the notification.
	r := h.delivery(t, "shopify", "orders/paid", "shopify/orders_paid.json", "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043", secret)
	id := eventIDOf(t, r)
	want := fmt.Sprintf(`{"ok":true,"replayed":false,"events":[{"name":"purchase","eventId":%q,"subscriberId":%q,"isConversion":true,`+
		`"attribution":{"notificationId":%q,"value":403}}],"ignored":null}`, id, john.SubscriberID, n)
	if r.status != 200 || string(r.body) != want {
		t.Fatalf("orders/paid: %d\n %s\nwant\n %s", r.status, r.body, want)
	}
	evs := h.listedEvents(t)
	if len(evs) != 1 || evs[0].ID != id || evs[0].Name != "purchase" || *evs[0].ExternalID != customer || *evs[0].SubscriberID != john.SubscriberID ||
		string(evs[0].Properties) != `{"currency":"USD","orderId":"820982911946154508","value":403}` {
		t.Fatalf("GET /events: %+v", evs)
	}

	// The platform's retry of the delivery does nothing; another delivery
	// of the same order paid stores no second purchase.
	r = h.delivery(t, "shopify", "orders/paid", "shopify/orders_paid.json", "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043", secret)
	if r.status != 200 || string(r.body) != `{"ok":true,"replayed":true,"events":[],"ignored":null}` {
		t.Fatalf("replay: %d %s", r.status, r.body)
	}
	if r = h.delivery(t, "shopify", "orders/paid", "shopify/orders_paid.json", "other-delivery", secret); r.status != 200 || eventIDOf(t, r) != id {
		t.Fatalf("the same order again: %d %s", r.status, r.body)
	}
	if evs := h.listedEvents(t); len(evs) != 1 {
		t.Fatalf("a replay stored an event: %+v", evs)
	}
	h.api.events.Fold(context.Background())
	if r := h.do("GET", "/api/v1/notifications/"+n, "", auth(h.site.APIKey)...); !strings.Contains(string(r.body), `"conversions":1,`) {
		t.Fatalf("the notification is not credited once: %s", r.body)
	}

	// Unsigned, wrongly signed, or for an unknown project: nothing done.
	expectError(t, h.delivery(t, "shopify", "orders/paid", "shopify/orders_paid_guest.json", "d-unsigned", ""), 401, CodeInvalidSignature,
		`,"message":"X-Shopify-Hmac-Sha256 must be the base64 HMAC-SHA256 of the body under the commerce signing secret"`)
	expectError(t, h.delivery(t, "shopify", "orders/paid", "shopify/orders_paid_guest.json", "d-wrong", "rbcs_WRONG"), 401, CodeInvalidSignature,
		`,"message":"X-Shopify-Hmac-Sha256 must be the base64 HMAC-SHA256 of the body under the commerce signing secret"`)
	body, _ := os.ReadFile("../integrations/testdata/shopify/orders_paid_guest.json")
	expectError(t, h.doBytes("POST", "/api/v1/integrations/shopify/00000000-0000-4000-8000-000000000000", "application/json", body,
		"X-Shopify-Topic", "orders/paid", "X-Shopify-Webhook-Id", "d-x", "X-Shopify-Hmac-Sha256", integrations.Sign(secret, body)), 404, CodeNotFound, "")
	expectError(t, h.delivery(t, "shopify", "orders/paid", "shopify/orders_paid_guest.json", "", secret), 400, CodeDeliveryIDMissing,
		`,"message":"X-Shopify-Webhook-Id is required (at most 200 characters)"`)
	if evs := h.listedEvents(t); len(evs) != 1 {
		t.Fatalf("a refused delivery stored an event: %+v", evs)
	}

	// No customer: the purchase names nobody.
	r = h.delivery(t, "shopify", "orders/paid", "shopify/orders_paid_guest.json", "d-guest", secret)
	want = fmt.Sprintf(`{"ok":true,"replayed":false,"events":[{"name":"purchase","eventId":%q,"subscriberId":null,"isConversion":true,"attribution":null}],"ignored":null}`, eventIDOf(t, r))
	if r.status != 200 || string(r.body) != want {
		t.Fatalf("guest: %d %s", r.status, r.body)
	}
	if e := h.listedEvents(t)[0]; e.ExternalID != nil || e.SubscriberID != nil || string(e.Properties) != `{"currency":"USD","orderId":"820982911946154509","value":25}` {
		t.Fatalf("guest event: %+v", e)
	}

	// Checkouts: created and updated → cart.updated, completed → checkout.completed.
	for i, c := range []struct{ topic, file, name string }{
		{"checkouts/create", "shopify/checkouts_create.json", "cart.updated"},
		{"checkouts/update", "shopify/checkouts_update.json", "cart.updated"},
		{"checkouts/update", "shopify/checkouts_update_completed.json", "checkout.completed"},
	} {
		h.clock.Add(time.Second)
		if r := h.delivery(t, "shopify", c.topic, c.file, fmt.Sprintf("d-checkout-%d", i), secret); r.status != 200 {
			t.Fatalf("%s: %d %s", c.file, r.status, r.body)
		}
		if e := h.listedEvents(t)[0]; e.Name != c.name || *e.ExternalID != checkoutCustomer {
			t.Fatalf("%s: %+v", c.file, e)
		}
	}
	if e := h.listedEvents(t)[1]; string(e.Properties) != `{"checkoutId":"981820079255243537","currency":"USD","url":"https://checkout.local/548380009/checkouts/123123123/recover?key=example-secret-token","value":597.99}` {
		t.Fatalf("cart.updated: %s", e.Properties)
	}

	// Products: a lowered price → price_drop, a variant back → back_in_stock;
	// both name nobody (product alerts).
	for i, c := range []struct{ file, name, props string }{
		{"shopify/products_update_price_drop.json", "price_drop", `{"image":"https://cdn.shopify.com/s/files/1/example-t-shirt.png","oldPrice":24.99,"price":19.99,"productId":"788032119674292922","title":"Example T-Shirt","variantId":"642667041472713922"}`},
		{"shopify/products_update_back_in_stock.json", "back_in_stock", `{"productId":"788032119674292922","title":"Example T-Shirt","variantId":"757650484644203962"}`},
	} {
		h.clock.Add(time.Second)
		if r := h.delivery(t, "shopify", "products/update", c.file, fmt.Sprintf("d-product-%d", i), secret); r.status != 200 {
			t.Fatalf("%s: %d %s", c.file, r.status, r.body)
		}
		if e := h.listedEvents(t)[0]; e.Name != c.name || e.ExternalID != nil || string(e.Properties) != c.props {
			t.Fatalf("%s: %+v %s", c.file, e, e.Properties)
		}
	}

	// A payload no event can come of: 200, recorded with its error.
	h.clock.Add(time.Second)
	if r := h.delivery(t, "shopify", "products/update", "shopify/products_update_no_id.json", "d-bad", secret); r.status != 200 ||
		string(r.body) != `{"ok":true,"replayed":false,"events":[],"ignored":"payload"}` {
		t.Fatalf("bad payload: %d %s", r.status, r.body)
	}
	failedAt := h.clock.Now().UTC()
	// Topics no event comes of: 200, recorded as tracking nothing, not
	// as failing; ten of them push the failed one out of the latest ten.
	for i := range 10 {
		h.clock.Add(time.Second)
		id := "d-customer"
		if i > 0 {
			id += fmt.Sprint("-", i)
		}
		if r := h.delivery(t, "shopify", "customers/create", "shopify/orders_paid_guest.json", id, secret); r.status != 200 ||
			string(r.body) != `{"ok":true,"replayed":false,"events":[],"ignored":"topic"}` {
			t.Fatalf("other topic: %d %s", r.status, r.body)
		}
	}

	// GET /integrations: receiver URLs, the last delivery and error.
	var list struct {
		Integrations []integrationJSON `json:"integrations"`
		ExternalID   string            `json:"externalId"`
		Previous     *time.Time        `json:"previousSecretValidUntil"`
	}
	r = h.do("GET", "/api/v1/integrations", "", auth(h.key([]string{"send"}, nil))...)
	if r.status != 200 || json.Unmarshal(r.body, &list) != nil || len(list.Integrations) != 2 {
		t.Fatalf("GET /integrations: %d %s", r.status, r.body)
	}
	shop, woo := list.Integrations[0], list.Integrations[1]
	if shop.Platform != "shopify" || !strings.HasSuffix(shop.ReceiverURL, "/api/v1/integrations/shopify/"+h.site.ProjectID) ||
		woo.Platform != "woocommerce" || !strings.HasSuffix(woo.ReceiverURL, "/api/v1/integrations/woocommerce/"+h.site.ProjectID) ||
		list.ExternalID != "customerId" || list.Previous != nil || woo.LastDelivery != nil || len(woo.Deliveries) != 0 {
		t.Fatalf("GET /integrations: %s", r.body)
	}
	if d := shop.LastDelivery; d == nil || d.DeliveryID != "d-customer-9" || d.Topic != "customers/create" || d.Event != nil ||
		d.Error != nil || !d.ReceivedAt.Equal(h.clock.Now().UTC().Truncate(time.Microsecond)) {
		t.Fatalf("last delivery: %s", r.body)
	}
	if d := shop.LastError; d == nil || d.DeliveryID != "d-bad" || d.Topic != "products/update" || d.Event != nil ||
		d.Error == nil || *d.Error != "products/update without a product id" || !d.ReceivedAt.Equal(failedAt.Truncate(time.Microsecond)) {
		t.Fatalf("last error: %s", r.body)
	}
	if len(shop.Deliveries) != 10 || shop.Deliveries[9].DeliveryID != "d-customer" || shop.Deliveries[9].Error != nil {
		t.Fatalf("deliveries: %s", r.body)
	}
}

func TestIntegrationsWooCommerceByEmailAndRotation(t *testing.T) {
	h := newHarness(t)
	key := auth(h.site.APIKey)
	expectError(t, h.do("PUT", "/api/v1/settings", `{"commerceExternalId":"phone"}`, key...), 400, CodeInvalidJSON,
		`,"message":"commerceExternalId is customerId or email"`)
	if r := h.do("PUT", "/api/v1/settings", `{"commerceExternalId":"email"}`, key...); r.status != 200 || !strings.Contains(string(r.body), `"commerceExternalId":"email"`) {
		t.Fatalf("settings: %d %s", r.status, r.body)
	}
	john := h.browser(t, `,"externalId":"john.doe@example.com"`)
	old := h.commerceSecret(t)

	// Rotation: settings:write only; the answer shows the new secret.
	expectError(t, h.do("POST", "/api/v1/integrations/secret/rotate", "", auth(h.key([]string{"send"}, nil))...),
		403, CodeInsufficientScope, `,"required":"settings:write"`)
	r := h.do("POST", "/api/v1/integrations/secret/rotate", "", auth(h.key([]string{ScopeSettingsWrite}, nil))...)
	fresh := h.commerceSecret(t)
	until := h.clock.Now().Add(24 * time.Hour).UTC().Format(time.RFC3339Nano)
	if want := fmt.Sprintf(`{"commerceSigningSecret":%q,"previousSecretValidUntil":%q}`, fresh, until); r.status != 200 || string(r.body) != want || fresh == old {
		t.Fatalf("rotate: %d\n %s\nwant\n %s", r.status, r.body, want)
	}

	// Within the grace period both secrets sign; an unpaid order is nothing.
	if r := h.delivery(t, "woocommerce", "order.created", "woocommerce/order_created_unpaid.json", "w-1", old); r.status != 200 ||
		string(r.body) != `{"ok":true,"replayed":false,"events":[],"ignored":"nothing to track"}` {
		t.Fatalf("unpaid: %d %s", r.status, r.body)
	}
	h.clock.Add(24*time.Hour - time.Second)
	r = h.delivery(t, "woocommerce", "order.created", "woocommerce/order_created_paid.json", "w-2", old)
	if r.status != 200 || !strings.Contains(string(r.body), `"name":"purchase"`) || !strings.Contains(string(r.body), `"subscriberId":"`+john.SubscriberID+`"`) {
		t.Fatalf("old secret within the grace period: %d %s", r.status, r.body)
	}
	if e := h.listedEvents(t)[0]; e.Name != "purchase" || *e.ExternalID != "john.doe@example.com" || string(e.Properties) != `{"currency":"USD","orderId":"727","value":29.35}` {
		t.Fatalf("woo purchase: %+v %s", e, e.Properties)
	}
	// Past it, the old secret is refused and the new one goes on.
	h.clock.Add(time.Second)
	expectError(t, h.delivery(t, "woocommerce", "order.updated", "woocommerce/order_updated_paid.json", "w-3", old), 401, CodeInvalidSignature,
		`,"message":"X-WC-Webhook-Signature must be the base64 HMAC-SHA256 of the body under the commerce signing secret"`)
	if r := h.delivery(t, "woocommerce", "order.updated", "woocommerce/order_updated_paid.json", "w-3", fresh); r.status != 200 || !strings.Contains(string(r.body), `"name":"purchase"`) {
		t.Fatalf("new secret: %d %s", r.status, r.body)
	}
	if r := h.delivery(t, "woocommerce", "order.updated", "woocommerce/order_updated_paid.json", "w-3", fresh); string(r.body) != `{"ok":true,"replayed":true,"events":[],"ignored":null}` {
		t.Fatalf("replay: %d %s", r.status, r.body)
	}
	// A guest order: no customer, no e-mail.
	if r := h.delivery(t, "woocommerce", "order.created", "woocommerce/order_created_guest.json", "w-4", fresh); !strings.Contains(string(r.body), `"subscriberId":null`) {
		t.Fatalf("guest: %d %s", r.status, r.body)
	}
	if e := h.listedEvents(t)[0]; e.ExternalID != nil || string(e.Properties) != `{"currency":"USD","orderId":"729","value":29.35}` {
		t.Fatalf("guest: %+v", e)
	}
	// A sale → price_drop.
	if r := h.delivery(t, "woocommerce", "product.updated", "woocommerce/product_updated_sale.json", "w-5", fresh); r.status != 200 {
		t.Fatalf("sale: %d %s", r.status, r.body)
	}
	if e := h.listedEvents(t)[0]; e.Name != "price_drop" || !strings.Contains(string(e.Properties), `"oldPrice":21.99,"price":18.99,"productId":"794"`) {
		t.Fatalf("sale: %+v %s", e, e.Properties)
	}
	if evs := h.listedEvents(t); len(evs) != 4 {
		t.Fatalf("events: %d", len(evs))
	}

	// Another website's receiver takes only its own secret, and its
	// events are its own.
	other, err := CreateWebsite(context.Background(), h.st, NewWebsite{Name: "Other", URL: "https://other.example"}, testStart)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := os.ReadFile("../integrations/testdata/woocommerce/order_created_paid.json")
	post := func(secret string) response {
		return h.doBytes("POST", "/api/v1/integrations/woocommerce/"+other.ProjectID, "application/json", body,
			"X-WC-Webhook-Topic", "order.created", "X-WC-Webhook-Delivery-ID", "w-2", "X-WC-Webhook-Signature", integrations.Sign(secret, body))
	}
	expectError(t, post(fresh), 401, CodeInvalidSignature,
		`,"message":"X-WC-Webhook-Signature must be the base64 HMAC-SHA256 of the body under the commerce signing secret"`)
	ow, err := h.st.Website(context.Background(), other.WebsiteID)
	if err != nil {
		t.Fatal(err)
	}
	if r := post(ow.Settings.CommerceSecret); r.status != 200 || !strings.Contains(string(r.body), `"replayed":false`) {
		t.Fatalf("the other website's own delivery w-2: %d %s", r.status, r.body)
	}
	if evs := h.listedEvents(t); len(evs) != 4 {
		t.Fatalf("another website's delivery shows here: %d", len(evs))
	}

	// A body over 1 MiB: 413, nothing done.
	big := append([]byte(`{"id":1,"date_paid":"2017-03-22T16:28:08","pad":"`), make([]byte, integrations.MaxBody)...)
	for i := len(big) - integrations.MaxBody; i < len(big); i++ {
		big[i] = 'x'
	}
	big = append(big, `"}`...)
	r = h.doBytes("POST", "/api/v1/integrations/woocommerce/"+h.site.ProjectID, "application/json", big,
		"X-WC-Webhook-Topic", "order.created", "X-WC-Webhook-Delivery-ID", "w-big", "X-WC-Webhook-Signature", integrations.Sign(fresh, big))
	if r.status != 413 || !strings.Contains(string(r.body), `"error":"payload_too_large"`) {
		t.Fatalf("large body: %d %s", r.status, r.body)
	}
	if evs := h.listedEvents(t); len(evs) != 4 {
		t.Fatalf("a refused body stored an event: %d", len(evs))
	}
}

// WooCommerce's product.updated tells the stock now only: the store keeps
// each product's last state, and a product seen out of stock that comes
// back makes one back_in_stock (naming nobody: a product alert), whatever
// delivery ids tell it; its first sight and in → in make nothing.
func TestIntegrationsWooCommerceBackInStock(t *testing.T) {
	h := newHarness(t)
	secret := h.commerceSecret(t)
	const nothing = `{"ok":true,"replayed":false,"events":[],"ignored":"nothing to track"}`
	deliver := func(file, id string) response {
		t.Helper()
		h.clock.Add(time.Second)
		return h.deliveryBody("woocommerce", "product.updated", wooModifiedAt(t, file, h.clock.Now()), id, secret)
	}
	for _, c := range []struct{ file, id string }{
		{"product_updated_back_in_stock.json", "w-first"}, // first sight, in stock
		{"product_updated_back_in_stock.json", "w-in"},    // in → in
		{"product_updated_out_of_stock.json", "w-out"},    // in → out
		{"product_updated_out_of_stock.json", "w-out-2"},  // out → out
	} {
		if r := deliver(c.file, c.id); r.status != 200 || string(r.body) != nothing {
			t.Fatalf("%s %s: %d %s", c.id, c.file, r.status, r.body)
		}
	}
	if evs := h.listedEvents(t); len(evs) != 0 {
		t.Fatalf("events before the return to stock: %+v", evs)
	}

	// Out → in: one back_in_stock; its ledger row fails to be written, so
	// the platform retries the delivery, which tells the same event.
	h.st.setFail("RecordIntegrationDelivery", errors.New("disk full"))
	if r := deliver("product_updated_back_in_stock.json", "w-back"); r.status != 500 {
		t.Fatalf("ledger failure: %d %s", r.status, r.body)
	}
	h.st.setFail("RecordIntegrationDelivery", nil)
	r := deliver("product_updated_back_in_stock.json", "w-back")
	id := eventIDOf(t, r)
	want := fmt.Sprintf(`{"ok":true,"replayed":false,"events":[{"name":"back_in_stock","eventId":%q,"subscriberId":null,"isConversion":false,"attribution":null}],"ignored":null}`, id)
	if r.status != 200 || string(r.body) != want {
		t.Fatalf("back in stock: %d\n %s\nwant\n %s", r.status, r.body, want)
	}
	// The same return under another delivery id, and the retry of the
	// delivery recorded: nothing more.
	if r := deliver("product_updated_back_in_stock.json", "w-back-2"); r.status != 200 || string(r.body) != nothing {
		t.Fatalf("the same return again: %d %s", r.status, r.body)
	}
	if r := deliver("product_updated_back_in_stock.json", "w-back"); string(r.body) != `{"ok":true,"replayed":true,"events":[],"ignored":null}` {
		t.Fatalf("replay: %d %s", r.status, r.body)
	}
	evs := h.listedEvents(t)
	if len(evs) != 1 || evs[0].ID != id || evs[0].Name != "back_in_stock" || evs[0].ExternalID != nil || evs[0].SubscriberID != nil ||
		string(evs[0].Properties) != `{"productId":"799","title":"Ship Your Idea"}` || evs[0].Source != "server" {
		t.Fatalf("GET /events: %+v", evs)
	}

	// Out and back again: a second return, a second event.
	deliver("product_updated_out_of_stock.json", "w-out-3")
	if r := deliver("product_updated_back_in_stock.json", "w-back-3"); r.status != 200 || eventIDOf(t, r) == id {
		t.Fatalf("second return: %d %s", r.status, r.body)
	}
	if evs := h.listedEvents(t); len(evs) != 2 || evs[0].Name != "back_in_stock" {
		t.Fatalf("second return: %+v", evs)
	}
	// A late delivery (its product changed before the return) changes
	// nothing: the next routine edit in stock is no return.
	late := wooModifiedAt(t, "product_updated_out_of_stock.json", h.clock.Now().Add(-time.Minute))
	if r := h.deliveryBody("woocommerce", "product.updated", late, "w-late-out", secret); r.status != 200 || string(r.body) != nothing {
		t.Fatalf("late out of stock: %d %s", r.status, r.body)
	}
	if r := deliver("product_updated_back_in_stock.json", "w-edit"); r.status != 200 || string(r.body) != nothing {
		t.Fatalf("an edit after a late delivery: %d %s", r.status, r.body)
	}
	// A return whose event fails to be stored is taken back: the next
	// delivery in stock tells it (WooCommerce does not retry a refused
	// one).
	deliver("product_updated_out_of_stock.json", "w-out-4")
	h.an.setErr(errors.New("disk full"))
	if r := deliver("product_updated_back_in_stock.json", "w-back-4"); r.status != 500 {
		t.Fatalf("event failure: %d %s", r.status, r.body)
	}
	h.an.setErr(nil)
	if r := deliver("product_updated_back_in_stock.json", "w-back-5"); r.status != 200 || eventIDOf(t, r) == id {
		t.Fatalf("the return after a failure: %d %s", r.status, r.body)
	}
	if evs := h.listedEvents(t); len(evs) != 3 || evs[0].Name != "back_in_stock" {
		t.Fatalf("the return after a failure: %+v", evs)
	}

	// Another website's products are its own: its first sight of 799.
	other, err := CreateWebsite(context.Background(), h.st, NewWebsite{Name: "Other", URL: "https://other.example"}, testStart)
	if err != nil {
		t.Fatal(err)
	}
	ow, err := h.st.Website(context.Background(), other.WebsiteID)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := os.ReadFile("../integrations/testdata/woocommerce/product_updated_back_in_stock.json")
	r = h.doBytes("POST", "/api/v1/integrations/woocommerce/"+other.ProjectID, "application/json", body,
		"X-WC-Webhook-Topic", "product.updated", "X-WC-Webhook-Delivery-ID", "w-other", "X-WC-Webhook-Signature", integrations.Sign(ow.Settings.CommerceSecret, body))
	if r.status != 200 || string(r.body) != nothing {
		t.Fatalf("another website's first sight: %d %s", r.status, r.body)
	}
}

// The receivers take 1,200 requests a minute per address, both platforms
// and every project together, counted before the signature: past it a
// signed delivery answers 429 rate_limited with Retry-After and nothing
// is tracked or recorded; another address goes on.
func TestIntegrationsRateLimit(t *testing.T) {
	h := newHarness(t, func(c *testConfig) { c.TrustProxy = true; c.RateSync = -1 })
	h.clock.Add(-20 * time.Second) // 20 s left in the window
	secret := h.commerceSecret(t)
	body, err := os.ReadFile("../integrations/testdata/woocommerce/order_created_paid.json")
	if err != nil {
		t.Fatal(err)
	}
	post := func(platform, project, from string, signed bool) response {
		names := integrations.HeaderNames[platform]
		headers := []string{"X-Forwarded-For", from, names.Topic, "order.created", names.DeliveryID, "d-flood"}
		if signed {
			headers = append(headers, names.Signature, integrations.Sign(secret, body))
		}
		return h.doBytes("POST", "/api/v1/integrations/"+platform+"/"+project, "application/json", body, headers...)
	}
	for i := 1; i <= DefaultCommerceRateLimit; i++ {
		platform, project := "woocommerce", h.site.ProjectID
		if i%3 == 0 {
			platform = "shopify"
		}
		if i%5 == 0 {
			project = "00000000-0000-4000-8000-000000000000"
		}
		r := post(platform, project, "198.51.100.7", false)
		if (r.status != 401 && r.status != 404) || r.header["Ratelimit-Limit"] != "1200" ||
			r.header["Ratelimit-Remaining"] != strconv.Itoa(DefaultCommerceRateLimit-i) || r.header["Ratelimit-Reset"] != "20" {
			t.Fatalf("request %d: %d %v", i, r.status, r.header)
		}
	}
	for _, platform := range integrations.Platforms {
		r := post(platform, h.site.ProjectID, "198.51.100.7", true)
		expectError(t, r, 429, CodeRateLimited, `,"message":"this address may call the commerce receivers 1200 times a minute"`)
		if r.header["Retry-After"] != "20" || r.header["Ratelimit-Remaining"] != "0" {
			t.Fatalf("%s: headers %v", platform, r.header)
		}
	}
	if evs := h.listedEvents(t); len(evs) != 0 {
		t.Fatalf("a refused delivery stored an event: %+v", evs)
	}
	r := h.do("GET", "/api/v1/integrations", "", auth(h.site.APIKey)...)
	if r.status != 200 || strings.Count(string(r.body), `"deliveries":[]`) != 2 {
		t.Fatalf("a refused delivery is in the ledger: %d %s", r.status, r.body)
	}
	// Another address, and the next minute, go on.
	if r := post("woocommerce", h.site.ProjectID, "198.51.100.8", true); r.status != 200 || !strings.Contains(string(r.body), `"name":"purchase"`) {
		t.Fatalf("another address: %d %s", r.status, r.body)
	}
	h.clock.Add(20 * time.Second)
	if r := post("woocommerce", h.site.ProjectID, "198.51.100.7", true); r.status != 200 || string(r.body) != `{"ok":true,"replayed":true,"events":[],"ignored":null}` ||
		r.header["Ratelimit-Remaining"] != "1199" {
		t.Fatalf("next minute: %d %s %v", r.status, r.body, r.header)
	}
}

// Config.CommerceRateLimit sets the receivers' limit; negative turns it
// off: no request counted, none refused.
func TestIntegrationsRateLimitConfigured(t *testing.T) {
	for _, limit := range []int{3, -1} {
		h := newHarness(t, func(c *testConfig) { c.TrustProxy = true; c.RateSync = -1; c.CommerceRateLimit = limit })
		for i := 1; i <= 10; i++ {
			r := h.doBytes("POST", "/api/v1/integrations/woocommerce/"+h.site.ProjectID, "application/json", []byte(`{}`),
				"X-Forwarded-For", "198.51.100.7", "X-WC-Webhook-Topic", "order.created", "X-WC-Webhook-Delivery-ID", "d-flood")
			switch {
			case limit < 0:
				if r.status != 401 || r.header["Ratelimit-Limit"] != "" || r.header["Ratelimit-Remaining"] != "" {
					t.Fatalf("limit off, request %d: %d %v", i, r.status, r.header)
				}
			case i <= limit:
				if r.status != 401 || r.header["Ratelimit-Limit"] != "3" || r.header["Ratelimit-Remaining"] != strconv.Itoa(limit-i) {
					t.Fatalf("limit %d, request %d: %d %v", limit, i, r.status, r.header)
				}
			default:
				expectError(t, r, 429, CodeRateLimited, `,"message":"this address may call the commerce receivers 3 times a minute"`)
			}
		}
	}
}
