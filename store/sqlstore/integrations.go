package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/relaybell/relaybell/store"
)

// IntegrationDelivered reports whether the delivery is in the ledger.
func (s *Store) IntegrationDelivered(ctx context.Context, websiteID, platform, deliveryID string) (bool, error) {
	var n int
	err := s.db.Read().QueryRow(ctx, `SELECT count(*) FROM integration_deliveries
		WHERE website_id = $1 AND platform = $2 AND delivery_id = $3`, websiteID, platform, deliveryID).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("reading integration delivery: %w", err)
	}
	return n > 0, nil
}

// RecordIntegrationDelivery adds the delivery to the ledger.
func (s *Store) RecordIntegrationDelivery(ctx context.Context, d store.IntegrationDelivery) error {
	n, err := s.db.Write().Exec(ctx, `INSERT INTO integration_deliveries
		(website_id, platform, delivery_id, topic, event, event_id, error, received_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (website_id, platform, delivery_id) DO NOTHING`,
		d.WebsiteID, d.Platform, d.DeliveryID, d.Topic, d.Event, d.EventID, d.Error, s.time(d.ReceivedAt))
	if err = s.mapErr(err); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return err
		}
		return fmt.Errorf("recording integration delivery: %w", err)
	}
	if n == 0 {
		return store.ErrConflict
	}
	return nil
}

// IntegrationDeliveries lists the platform's latest deliveries.
func (s *Store) IntegrationDeliveries(ctx context.Context, websiteID, platform string, limit int) ([]store.IntegrationDelivery, error) {
	rows, err := s.db.Read().Query(ctx, `SELECT `+deliveryColumns+` FROM integration_deliveries
		WHERE website_id = $1 AND platform = $2
		ORDER BY received_at DESC, delivery_id DESC LIMIT $3`, websiteID, platform, limit)
	out, err := collectDeliveries(rows, err, websiteID, platform)
	if err != nil {
		return nil, fmt.Errorf("listing integration deliveries: %w", err)
	}
	return out, nil
}

// LastIntegrationError is the platform's latest delivery that failed: the
// literal condition is the partial index integration_deliveries_failed's
// (version 37), so that it reads that index's newest entry.
func (s *Store) LastIntegrationError(ctx context.Context, websiteID, platform string) (store.IntegrationDelivery, error) {
	rows, err := s.db.Read().Query(ctx, LastIntegrationErrorSQL, websiteID, platform)
	out, err := collectDeliveries(rows, err, websiteID, platform)
	if err != nil {
		return store.IntegrationDelivery{}, fmt.Errorf("finding the last integration error: %w", err)
	}
	if len(out) == 0 {
		return store.IntegrationDelivery{}, store.ErrNotFound
	}
	return out[0], nil
}

// deliveryColumns are the columns collectDeliveries reads.
const deliveryColumns = `delivery_id, topic, event, event_id, error, received_at`

// LastIntegrationErrorSQL is LastIntegrationError's query ($1 the
// website, $2 the platform; TestQueryPlans).
const LastIntegrationErrorSQL = `SELECT ` + deliveryColumns + ` FROM integration_deliveries
	WHERE website_id = $1 AND platform = $2 AND error <> ''
	ORDER BY received_at DESC, delivery_id DESC LIMIT 1`

func collectDeliveries(rows Rows, err error, websiteID, platform string) ([]store.IntegrationDelivery, error) {
	return CollectRows(rows, err, func(d *store.IntegrationDelivery) []any {
		d.WebsiteID, d.Platform = websiteID, platform
		return []any{&d.DeliveryID, &d.Topic, &d.Event, &d.EventID, &d.Error, timeDest{&d.ReceivedAt}}
	})
}

// ObserveCommerceStock records an item's stock state and reports its
// return to stock (store.Integrations). An observation older than the
// stored one (updated_at) changes nothing and reports nothing, so that a
// late delivery does not overwrite a newer state. In stock: the
// conditional UPDATE is the decision (PostgreSQL re-reads a row another
// transaction changed before updating it, SQLite writes one at a time),
// else the item's first sight is inserted or a newer in-stock
// observation's time recorded; out of stock: the state is set.
func (s *Store) ObserveCommerceStock(ctx context.Context, websiteID, platform, item string, inStock bool, deliveryID string, at time.Time) (bool, error) {
	if !inStock {
		_, err := s.db.Write().Exec(ctx, `INSERT INTO commerce_stock (website_id, platform, item, in_stock, restocked_by, updated_at)
			VALUES ($1, $2, $3, false, '', $4) ON CONFLICT (website_id, platform, item) DO UPDATE SET in_stock = false, updated_at = excluded.updated_at
			WHERE commerce_stock.updated_at <= excluded.updated_at`,
			websiteID, platform, item, s.time(at))
		return false, s.stockErr(err)
	}
	// Back: out of stock as of no later than at, or in stock since this
	// very delivery (its retry, whose time is not moved back).
	n, err := s.db.Write().Exec(ctx, `UPDATE commerce_stock SET in_stock = true, restocked_by = $4,
			updated_at = CASE WHEN updated_at <= $5 THEN $5 ELSE updated_at END
		WHERE website_id = $1 AND platform = $2 AND item = $3
			AND ((in_stock = false AND updated_at <= $5) OR (in_stock = true AND restocked_by = $4))`,
		websiteID, platform, item, deliveryID, s.time(at))
	if err != nil || n > 0 {
		return n > 0, s.stockErr(err)
	}
	_, err = s.db.Write().Exec(ctx, `INSERT INTO commerce_stock (website_id, platform, item, in_stock, restocked_by, updated_at)
		VALUES ($1, $2, $3, true, '', $4) ON CONFLICT (website_id, platform, item) DO UPDATE SET updated_at = excluded.updated_at
		WHERE commerce_stock.in_stock = true AND commerce_stock.updated_at <= excluded.updated_at`,
		websiteID, platform, item, s.time(at))
	return false, s.stockErr(err)
}

// UndoCommerceRestock takes back a return to stock (store.Integrations):
// while the item is in stock since deliveryID.
func (s *Store) UndoCommerceRestock(ctx context.Context, websiteID, platform, item, deliveryID string) error {
	_, err := s.db.Write().Exec(ctx, `UPDATE commerce_stock SET in_stock = false
		WHERE website_id = $1 AND platform = $2 AND item = $3 AND in_stock = true AND restocked_by = $4`,
		websiteID, platform, item, deliveryID)
	if err = s.mapErr(err); err != nil {
		return fmt.Errorf("undoing a return to stock: %w", err)
	}
	return nil
}

func (s *Store) stockErr(err error) error {
	if err = s.mapErr(err); err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("recording commerce stock: %w", err)
	}
	return err
}
