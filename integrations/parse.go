package integrations

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ErrTopic is returned by Parse for a topic no event comes of.
var ErrTopic = errors.New("no event comes of this topic")

// maxProducts bounds the variants looked at in one product.
const maxVariants = 250

// num is a JSON number or a string holding one, as the platforms write
// prices ("19.99") and ids (a number, or a string in some versions).
type num struct {
	s  string
	ok bool
}

func (n *num) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) {
		*n = num{}
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		s = strings.TrimSpace(s)
		*n = num{s: s, ok: s != ""}
		return nil
	}
	var x json.Number
	if err := json.Unmarshal(b, &x); err != nil {
		return err
	}
	*n = num{s: x.String(), ok: true}
	return nil
}

// id is the number as an id ("" for none, 0 or a negative).
func (n num) id() string {
	if !n.ok || n.s == "0" || strings.HasPrefix(n.s, "-") || len(n.s) > 100 {
		return ""
	}
	return n.s
}

// float is the number as a finite float.
func (n num) float() (float64, bool) {
	if !n.ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(n.s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

type shopifyCustomer struct {
	ID    num    `json:"id"`
	Email string `json:"email"`
}

type shopifyOrder struct {
	ID         num              `json:"id"`
	Name       string           `json:"name"`
	Email      string           `json:"email"`
	TotalPrice num              `json:"total_price"`
	Currency   string           `json:"currency"`
	Customer   *shopifyCustomer `json:"customer"`
}

type shopifyCheckout struct {
	ID          num              `json:"id"`
	Token       string           `json:"token"`
	Email       string           `json:"email"`
	TotalPrice  num              `json:"total_price"`
	Currency    string           `json:"currency"`
	CompletedAt *string          `json:"completed_at"`
	AbandonURL  string           `json:"abandoned_checkout_url"`
	Customer    *shopifyCustomer `json:"customer"`
}

type shopifyProduct struct {
	ID       num    `json:"id"`
	Title    string `json:"title"`
	Handle   string `json:"handle"`
	Variants []struct {
		ID                   num    `json:"id"`
		Title                string `json:"title"`
		Price                num    `json:"price"`
		CompareAtPrice       num    `json:"compare_at_price"`
		InventoryQuantity    num    `json:"inventory_quantity"`
		OldInventoryQuantity num    `json:"old_inventory_quantity"`
	} `json:"variants"`
	Image *struct {
		Src string `json:"src"`
	} `json:"image"`
}

type wooOrder struct {
	ID         num     `json:"id"`
	Status     string  `json:"status"`
	Currency   string  `json:"currency"`
	Total      num     `json:"total"`
	DatePaid   *string `json:"date_paid"`
	CustomerID num     `json:"customer_id"`
	Billing    *struct {
		Email string `json:"email"`
	} `json:"billing"`
}

type wooProduct struct {
	ID           num    `json:"id"`
	ParentID     num    `json:"parent_id"` // a variation's product
	Name         string `json:"name"`
	Permalink    string `json:"permalink"`
	Price        num    `json:"price"`
	RegularPrice num    `json:"regular_price"`
	SalePrice    num    `json:"sale_price"`
	OnSale       bool   `json:"on_sale"`
	StockStatus  string `json:"stock_status"` // instock, outofstock or onbackorder
	// When the product last changed: date_modified_gmt in UTC, else
	// date_modified (the site's time zone, taken as UTC), both
	// "2006-01-02T15:04:05"; null for a product never saved.
	DateModifiedGMT *string `json:"date_modified_gmt"`
	DateModified    *string `json:"date_modified"`
	Images          []struct {
		Src string `json:"src"`
	} `json:"images"`
}

// person is the external id chosen by the settings: the customer's id
// (default) or e-mail, "" when the payload has none.
func person(by, customerID, email string) string {
	if by == ByEmail {
		return strings.ToLower(strings.TrimSpace(email))
	}
	return customerID
}

// Parse maps a delivery's topic and body to events. by is the settings'
// commerceExternalId; deliveryID keys the events told once per delivery.
// ErrTopic for a topic no event comes of; another error for a body that is
// not the topic's JSON.
func Parse(platform, topic string, body []byte, by, deliveryID string) ([]Event, error) {
	topic = strings.ToLower(strings.TrimSpace(topic))
	switch platform + " " + topic {
	case Shopify + " orders/paid":
		var o shopifyOrder
		if err := unmarshal(body, &o); err != nil {
			return nil, err
		}
		cid, email := "", o.Email
		if o.Customer != nil {
			cid = o.Customer.ID.id()
			if email == "" {
				email = o.Customer.Email
			}
		}
		return []Event{purchase(o.ID.id(), o.TotalPrice, o.Currency, person(by, cid, email), deliveryID)}, nil
	case Shopify + " checkouts/create", Shopify + " checkouts/update":
		var c shopifyCheckout
		if err := unmarshal(body, &c); err != nil {
			return nil, err
		}
		cid, email := "", c.Email
		if c.Customer != nil {
			cid = c.Customer.ID.id()
			if email == "" {
				email = c.Customer.Email
			}
		}
		checkout := c.ID.id()
		if checkout == "" {
			checkout = cut(c.Token, 100)
		}
		props := map[string]any{"checkoutId": checkout}
		if v, ok := c.TotalPrice.float(); ok {
			props["value"] = v
		}
		if cur := currency(c.Currency); cur != "" {
			props["currency"] = cur
		}
		who := person(by, cid, email)
		if topic == "checkouts/update" && c.CompletedAt != nil && *c.CompletedAt != "" {
			return []Event{{Name: "checkout.completed", ExternalID: who, Properties: props, Key: "checkout:" + checkout}}, nil
		}
		if u := c.AbandonURL; u != "" && len(u) <= 2048 && strings.HasPrefix(u, "https://") {
			props["url"] = u
		}
		return []Event{{Name: "cart.updated", ExternalID: who, Properties: props, Key: "cart:" + checkout + ":" + deliveryID}}, nil
	case Shopify + " products/update":
		var p shopifyProduct
		if err := unmarshal(body, &p); err != nil {
			return nil, err
		}
		product := p.ID.id()
		if product == "" {
			return nil, fmt.Errorf("products/update without a product id")
		}
		var out []Event
		dropped, restocked := false, false
		for i, v := range p.Variants {
			if i == maxVariants {
				break
			}
			price, okP := v.Price.float()
			was, okW := v.CompareAtPrice.float()
			if !dropped && okP && okW && price < was {
				dropped = true
				props := map[string]any{"productId": product, "variantId": v.ID.id(), "title": cut(p.Title, 200), "price": price, "oldPrice": was}
				if p.Image != nil && strings.HasPrefix(p.Image.Src, "https://") && len(p.Image.Src) <= 2048 {
					props["image"] = p.Image.Src
				}
				out = append(out, Event{Name: "price_drop", Properties: props, Key: "price:" + product + ":" + v.Price.s})
			}
			now, okN := v.InventoryQuantity.float()
			old, okO := v.OldInventoryQuantity.float()
			if !restocked && okN && okO && old <= 0 && now > 0 {
				restocked = true
				props := map[string]any{"productId": product, "variantId": v.ID.id(), "title": cut(p.Title, 200)}
				out = append(out, Event{Name: "back_in_stock", Properties: props, Key: "stock:" + product + ":" + deliveryID})
			}
		}
		return out, nil
	case WooCommerce + " order.created", WooCommerce + " order.updated":
		var o wooOrder
		if err := unmarshal(body, &o); err != nil {
			return nil, err
		}
		if o.DatePaid == nil || *o.DatePaid == "" {
			return nil, nil
		}
		email := ""
		if o.Billing != nil {
			email = o.Billing.Email
		}
		return []Event{purchase(o.ID.id(), o.Total, o.Currency, person(by, o.CustomerID.id(), email), deliveryID)}, nil
	case WooCommerce + " product.created", WooCommerce + " product.updated":
		var p wooProduct
		if err := unmarshal(body, &p); err != nil {
			return nil, err
		}
		product := p.ID.id()
		if product == "" {
			return nil, fmt.Errorf("%s without a product id", topic)
		}
		var out []Event
		if e, ok := wooPriceDrop(p, product); ok && topic == "product.updated" {
			out = append(out, e)
		}
		if e, ok := wooStock(p, product, deliveryID); ok {
			out = append(out, e)
		}
		return out, nil
	}
	return nil, ErrTopic
}

// wooPriceDrop is the price_drop of a WooCommerce product on sale.
func wooPriceDrop(p wooProduct, product string) (Event, bool) {
	// The price a buyer pays now: a sale scheduled for later fills
	// sale_price already, with on_sale false and price still the regular
	// one.
	price, okP := p.Price.float()
	was, okW := p.RegularPrice.float()
	if !p.OnSale || !okP || !okW || price >= was {
		return Event{}, false
	}
	props := map[string]any{"productId": product, "title": cut(p.Name, 200), "price": price, "oldPrice": was}
	if u := p.Permalink; strings.HasPrefix(u, "https://") && len(u) <= 2048 {
		props["url"] = u
	}
	if len(p.Images) > 0 && strings.HasPrefix(p.Images[0].Src, "https://") && len(p.Images[0].Src) <= 2048 {
		props["image"] = p.Images[0].Src
	}
	return Event{Name: "price_drop", Properties: props, Key: "price:" + product + ":" + p.SalePrice.s}, true
}

// wooStock is the back_in_stock a WooCommerce product or variation may
// make, as Shopify's: {productId, variantId, title}, a variation naming
// its product (parent_id) and itself, a product itself alone. The
// payload tells the stock now only (stock_status, which WooCommerce sets
// from manage_stock and stock_quantity; on backorder is not in stock):
// the event is tracked only if the store saw the item out of stock
// before (Stock). None for a payload without stock_status.
func wooStock(p wooProduct, item, deliveryID string) (Event, bool) {
	status := strings.ToLower(strings.TrimSpace(p.StockStatus))
	if status == "" {
		return Event{}, false
	}
	props := map[string]any{"productId": item, "title": cut(p.Name, 200)}
	if parent := p.ParentID.id(); parent != "" {
		props["productId"], props["variantId"] = parent, item
	}
	return Event{Name: "back_in_stock", Properties: props, Key: "stock:" + item + ":" + deliveryID,
		Stock: &Stock{Item: item, InStock: status == "instock", At: wooModified(p)}}, true
}

// wooModified is when a WooCommerce product or variation last changed
// (date_modified_gmt, else date_modified taken as UTC); zero when the
// payload tells neither (or not as WooCommerce writes it).
func wooModified(p wooProduct) time.Time {
	for _, d := range []*string{p.DateModifiedGMT, p.DateModified} {
		if d == nil {
			continue
		}
		v := strings.TrimSpace(*d)
		if t, err := time.Parse("2006-01-02T15:04:05", v); err == nil {
			return t.UTC()
		}
		if t, err := time.Parse(time.RFC3339, v); err == nil {
			return t.UTC()
		}
	}
	return time.Time{}
}

// purchase is the purchase event of an order: once per order, whichever
// delivery tells it.
func purchase(order string, total num, cur, who, deliveryID string) Event {
	props := map[string]any{"orderId": order}
	key := "order:" + order
	if order == "" {
		key = "delivery:" + deliveryID
	}
	if v, ok := total.float(); ok {
		props["value"] = v
	}
	if c := currency(cur); c != "" {
		props["currency"] = c
	}
	return Event{Name: "purchase", ExternalID: who, Properties: props, Key: key}
}

// currency is an ISO 4217 code in upper case, "" for anything else.
func currency(c string) string {
	c = strings.ToUpper(strings.TrimSpace(c))
	if len(c) != 3 {
		return ""
	}
	for _, r := range c {
		if r < 'A' || r > 'Z' {
			return ""
		}
	}
	return c
}

func unmarshal(body []byte, v any) error {
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("the body is not the topic's JSON: %w", err)
	}
	return nil
}
