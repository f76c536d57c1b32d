package store

import (
	"context"
	"time"
)

// IntegrationDelivery is one delivery of a commerce platform's webhook to
// a website (package integrations): what it was and what it became.
type IntegrationDelivery struct {
	WebsiteID  string
	Platform   string // "shopify" or "woocommerce"
	DeliveryID string // the platform's own delivery id
	Topic      string // the platform's topic
	Event      string // the RelayBell event it became; "" for none
	EventID    string // that event's id; "" for none
	Error      string // why it failed (a payload no event can come of); "" when it did not (an ignored topic, nothing to track)
	ReceivedAt time.Time
}

// Integrations holds the ledger of the commerce platforms' deliveries.
type Integrations interface {
	// IntegrationDelivered reports whether the website's platform already
	// delivered deliveryID.
	IntegrationDelivered(ctx context.Context, websiteID, platform, deliveryID string) (bool, error)
	// RecordIntegrationDelivery adds d to the ledger; ErrConflict when
	// its delivery id is there already (a retry: nothing is changed).
	RecordIntegrationDelivery(ctx context.Context, d IntegrationDelivery) error
	// IntegrationDeliveries lists the website's platform's latest
	// deliveries, newest first, at most limit.
	IntegrationDeliveries(ctx context.Context, websiteID, platform string, limit int) ([]IntegrationDelivery, error)
	// LastIntegrationError is the website's platform's latest delivery
	// that failed (its Error set), however many came after it.
	// ErrNotFound when none did.
	LastIntegrationError(ctx context.Context, websiteID, platform string) (IntegrationDelivery, error)
	// ObserveCommerceStock records whether the website's platform's item
	// (a product or variation id) is in stock, as delivery deliveryID
	// tells at at, and reports whether it is back in stock: seen out of
	// stock before and in stock now, or in stock since this very delivery
	// (the platform's retry of it). The first sight of an item records
	// it and reports false. The record and the answer are one
	// conditional update: of two deliveries telling the same return, at
	// once or one after the other, one only reports it. An observation
	// older than the item's stored one (at before it) changes nothing and
	// reports false. ErrNotFound for an unknown website.
	ObserveCommerceStock(ctx context.Context, websiteID, platform, item string, inStock bool, deliveryID string, at time.Time) (bool, error)
	// UndoCommerceRestock takes back the return to stock delivery
	// deliveryID reported, whose event could not be stored: the item is
	// out of stock again as of the time that delivery told, unless
	// another delivery brought it back since, so that the delivery's
	// retry or the next in-stock delivery reports the return.
	UndoCommerceRestock(ctx context.Context, websiteID, platform, item, deliveryID string) error
}
