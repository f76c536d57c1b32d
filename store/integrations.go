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
	Error      string // why it became nothing; "" when it did not fail
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
}
