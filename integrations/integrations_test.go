package integrations

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/relaybell/relaybell/store"
)

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseFixtures(t *testing.T) {
	for _, c := range []struct {
		platform, topic, file, by string
		want                      string // the events as JSON
	}{
		{Shopify, "orders/paid", "shopify/orders_paid.json", "",
			`[{"Name":"purchase","ExternalID":"115310627314723954","Properties":{"currency":"USD","orderId":"820982911946154508","value":403},"Key":"order:820982911946154508"}]`},
		{Shopify, "orders/paid", "shopify/orders_paid.json", ByEmail,
			`[{"Name":"purchase","ExternalID":"jon@example.com","Properties":{"currency":"USD","orderId":"820982911946154508","value":403},"Key":"order:820982911946154508"}]`},
		{Shopify, "orders/paid", "shopify/orders_paid_guest.json", "",
			`[{"Name":"purchase","ExternalID":"","Properties":{"currency":"USD","orderId":"820982911946154509","value":25},"Key":"order:820982911946154509"}]`},
		{Shopify, "checkouts/create", "shopify/checkouts_create.json", "",
			`[{"Name":"cart.updated","ExternalID":"603851970716743426","Properties":{"checkoutId":"981820079255243537","currency":"USD","url":"https://checkout.local/548380009/checkouts/123123123/recover?key=example-secret-token","value":398},"Key":"cart:981820079255243537:d1"}]`},
		{Shopify, "checkouts/update", "shopify/checkouts_update.json", ByEmail,
			`[{"Name":"cart.updated","ExternalID":"john@example.com","Properties":{"checkoutId":"981820079255243537","currency":"USD","url":"https://checkout.local/548380009/checkouts/123123123/recover?key=example-secret-token","value":597.99},"Key":"cart:981820079255243537:d1"}]`},
		{Shopify, "checkouts/update", "shopify/checkouts_update_completed.json", "",
			`[{"Name":"checkout.completed","ExternalID":"603851970716743426","Properties":{"checkoutId":"981820079255243537","currency":"USD","value":597.99},"Key":"checkout:981820079255243537"}]`},
		{Shopify, "products/update", "shopify/products_update_price_drop.json", "",
			`[{"Name":"price_drop","ExternalID":"","Properties":{"image":"https://cdn.shopify.com/s/files/1/example-t-shirt.png","oldPrice":24.99,"price":19.99,"productId":"788032119674292922","title":"Example T-Shirt","variantId":"642667041472713922"},"Key":"price:788032119674292922:19.99"}]`},
		{Shopify, "products/update", "shopify/products_update_back_in_stock.json", "",
			`[{"Name":"back_in_stock","ExternalID":"","Properties":{"productId":"788032119674292922","title":"Example T-Shirt","variantId":"757650484644203962"},"Key":"stock:788032119674292922:d1"}]`},
		{WooCommerce, "order.created", "woocommerce/order_created_paid.json", "",
			`[{"Name":"purchase","ExternalID":"25","Properties":{"currency":"USD","orderId":"727","value":29.35},"Key":"order:727"}]`},
		{WooCommerce, "order.created", "woocommerce/order_created_paid.json", ByEmail,
			`[{"Name":"purchase","ExternalID":"john.doe@example.com","Properties":{"currency":"USD","orderId":"727","value":29.35},"Key":"order:727"}]`},
		{WooCommerce, "order.created", "woocommerce/order_created_unpaid.json", "", `null`},
		{WooCommerce, "order.updated", "woocommerce/order_updated_paid.json", "",
			`[{"Name":"purchase","ExternalID":"25","Properties":{"currency":"USD","orderId":"728","value":29.35},"Key":"order:728"}]`},
		{WooCommerce, "order.created", "woocommerce/order_created_guest.json", "",
			`[{"Name":"purchase","ExternalID":"","Properties":{"currency":"USD","orderId":"729","value":29.35},"Key":"order:729"}]`},
		{WooCommerce, "product.updated", "woocommerce/product_updated_sale.json", "",
			`[{"Name":"price_drop","ExternalID":"","Properties":{"image":"https://example.com/wp-content/uploads/2017/03/T_2_front-4.jpg","oldPrice":21.99,"price":18.99,"productId":"794","title":"Premium Quality","url":"https://example.com/product/premium-quality-19/"},"Key":"price:794:18.99"},` +
				`{"Name":"back_in_stock","ExternalID":"","Properties":{"productId":"794","title":"Premium Quality"},"Key":"stock:794:d1","Stock":{"Item":"794","InStock":true,"At":"2017-03-24T11:02:00Z"}}]`},
		// A product's stock now: back_in_stock if the store saw it out
		// of stock (Receive asks); product.created makes no price_drop.
		{WooCommerce, "product.updated", "woocommerce/product_updated_out_of_stock.json", "",
			`[{"Name":"back_in_stock","ExternalID":"","Properties":{"productId":"799","title":"Ship Your Idea"},"Key":"stock:799:d1","Stock":{"Item":"799","InStock":false,"At":"2017-03-24T09:12:40Z"}}]`},
		{WooCommerce, "product.updated", "woocommerce/product_updated_back_in_stock.json", "",
			`[{"Name":"back_in_stock","ExternalID":"","Properties":{"productId":"799","title":"Ship Your Idea"},"Key":"stock:799:d1","Stock":{"Item":"799","InStock":true,"At":"2017-03-27T14:03:11Z"}}]`},
		{WooCommerce, "product.created", "woocommerce/product_updated_sale.json", "",
			`[{"Name":"back_in_stock","ExternalID":"","Properties":{"productId":"794","title":"Premium Quality"},"Key":"stock:794:d1","Stock":{"Item":"794","InStock":true,"At":"2017-03-24T11:02:00Z"}}]`},
	} {
		evs, err := Parse(c.platform, c.topic, fixture(t, c.file), c.by, "d1")
		if err != nil {
			t.Fatalf("%s %s: %v", c.topic, c.file, err)
		}
		got, _ := json.Marshal(evs)
		if string(got) != c.want {
			t.Errorf("%s %s by %q:\n %s\nwant\n %s", c.topic, c.file, c.by, got, c.want)
		}
	}
	// A variation names its product and itself; on backorder is not in
	// stock; no stock_status, no stock.
	for body, want := range map[string]string{
		`{"id":732,"parent_id":731,"name":"Ship Your Idea - Black","stock_status":"instock","manage_stock":"parent"}`: `[{"Name":"back_in_stock","ExternalID":"","Properties":{"productId":"731","title":"Ship Your Idea - Black","variantId":"732"},"Key":"stock:732:d1","Stock":{"Item":"732","InStock":true}}]`,
		`{"id":733,"parent_id":0,"name":"Hoodie","stock_status":"onbackorder"}`:                                       `[{"Name":"back_in_stock","ExternalID":"","Properties":{"productId":"733","title":"Hoodie"},"Key":"stock:733:d1","Stock":{"Item":"733","InStock":false}}]`,
		`{"id":734,"name":"Hoodie"}`: `null`,
		// The stock's time: date_modified_gmt, else date_modified as UTC.
		`{"id":735,"name":"Cap","stock_status":"instock","date_modified":"2026-11-29T17:00:00","date_modified_gmt":"2026-11-29T16:00:00"}`: `[{"Name":"back_in_stock","ExternalID":"","Properties":{"productId":"735","title":"Cap"},"Key":"stock:735:d1","Stock":{"Item":"735","InStock":true,"At":"2026-11-29T16:00:00Z"}}]`,
		`{"id":736,"name":"Cap","stock_status":"instock","date_modified":"2026-11-29T17:00:00","date_modified_gmt":null}`:                  `[{"Name":"back_in_stock","ExternalID":"","Properties":{"productId":"736","title":"Cap"},"Key":"stock:736:d1","Stock":{"Item":"736","InStock":true,"At":"2026-11-29T17:00:00Z"}}]`,
	} {
		evs, err := Parse(WooCommerce, "product.updated", []byte(body), "", "d1")
		if got, _ := json.Marshal(evs); err != nil || string(got) != want {
			t.Errorf("%s: %v\n %s\nwant\n %s", body, err, got, want)
		}
	}
	if _, err := Parse(Shopify, "customers/create", []byte(`{}`), "", "d"); !errors.Is(err, ErrTopic) {
		t.Fatalf("unknown topic: %v", err)
	}
	if _, err := Parse(Shopify, "orders/paid", []byte(`[1]`), "", "d"); err == nil || errors.Is(err, ErrTopic) {
		t.Fatalf("not an order: %v", err)
	}
}

func TestVerifyAndRotate(t *testing.T) {
	body := fixture(t, "shopify/orders_paid.json")
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	s := store.Settings{CommerceSecret: "rbcs_OLD"}
	oldSig := Sign("rbcs_OLD", body)
	if !Verify(s, body, oldSig, t0) {
		t.Fatal("the current secret's signature refused")
	}
	for _, bad := range []string{"", "not base64!", Sign("rbcs_other", body), Sign("rbcs_OLD", append([]byte(" "), body...))} {
		if Verify(s, body, bad, t0) {
			t.Fatalf("%q accepted", bad)
		}
	}
	Rotate(&s, t0)
	if s.CommerceSecret == "rbcs_OLD" || s.PreviousCommerceSecret != "rbcs_OLD" || !s.CommerceSecretRotatedAt.Equal(t0) {
		t.Fatalf("rotated: %+v", s)
	}
	if !Verify(s, body, Sign(s.CommerceSecret, body), t0) || !Verify(s, body, oldSig, t0.Add(RotationGrace-time.Nanosecond)) {
		t.Fatal("refused within the grace period")
	}
	if Verify(s, body, oldSig, t0.Add(RotationGrace)) {
		t.Fatal("the old secret accepted past its grace period")
	}
	if got := PreviousValidUntil(s); got == nil || !got.Equal(t0.Add(RotationGrace)) {
		t.Fatalf("valid until %v", got)
	}
	// No secret at all: nothing verifies, not even an empty HMAC.
	if Verify(store.Settings{}, body, Sign("", body), t0) {
		t.Fatal("verified without a secret")
	}
}

func FuzzParse(f *testing.F) {
	for _, c := range []struct{ platform, topic, file string }{
		{Shopify, "orders/paid", "shopify/orders_paid.json"},
		{Shopify, "checkouts/update", "shopify/checkouts_update_completed.json"},
		{Shopify, "products/update", "shopify/products_update_price_drop.json"},
		{Shopify, "products/update", "shopify/products_update_back_in_stock.json"},
		{WooCommerce, "order.updated", "woocommerce/order_updated_paid.json"},
		{WooCommerce, "product.updated", "woocommerce/product_updated_sale.json"},
		{WooCommerce, "product.updated", "woocommerce/product_updated_back_in_stock.json"},
	} {
		f.Add(c.platform, c.topic, fixture(f, c.file), false)
	}
	f.Add(Shopify, "orders/paid", []byte(`{"id":"1e999","total_price":"NaN","customer":{"id":-1}}`), true)
	f.Add(WooCommerce, "order.created", []byte(`{"id":1,"date_paid":"x","total":1e400}`), false)
	f.Fuzz(func(t *testing.T, platform, topic string, body []byte, byEmail bool) {
		by := ""
		if byEmail {
			by = ByEmail
		}
		evs, err := Parse(platform, topic, body, by, "d")
		if err != nil && evs != nil {
			t.Fatal("events with an error")
		}
		for _, e := range evs {
			if _, err := json.Marshal(e.Properties); err != nil {
				t.Fatalf("properties do not encode: %v", err)
			}
			if e.Key == "" || e.Name == "" {
				t.Fatalf("event without a key or name: %+v", e)
			}
		}
		_ = Verify(store.Settings{CommerceSecret: "s"}, body, string(body), time.Time{})
	})
}

// A WooCommerce sale scheduled for later fills sale_price already, with
// on_sale false and price the regular one: no price_drop until it starts.
func TestWooScheduledSaleIsNoDrop(t *testing.T) {
	body := []byte(`{"id": 71, "name": "Mug", "permalink": "https://shop.example/mug", "price": "24.00",
		"regular_price": "24.00", "sale_price": "18.99", "on_sale": false}`)
	evs, err := Parse(WooCommerce, "product.updated", body, "", "d1")
	if err != nil || len(evs) != 0 {
		t.Fatalf("a scheduled sale: %+v %v", evs, err)
	}
	body = []byte(`{"id": 71, "name": "Mug", "permalink": "https://shop.example/mug", "price": "18.99",
		"regular_price": "24.00", "sale_price": "18.99", "on_sale": true}`)
	if evs, err := Parse(WooCommerce, "product.updated", body, "", "d2"); err != nil || len(evs) != 1 || evs[0].Name != "price_drop" {
		t.Fatalf("a sale on: %+v %v", evs, err)
	}
}
