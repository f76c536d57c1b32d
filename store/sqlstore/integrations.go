package sqlstore

import (
	"context"
	"errors"
	"fmt"

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
	rows, err := s.db.Read().Query(ctx, `SELECT delivery_id, topic, event, event_id, error, received_at FROM integration_deliveries
		WHERE website_id = $1 AND platform = $2 ORDER BY received_at DESC, delivery_id DESC LIMIT $3`, websiteID, platform, limit)
	if err != nil {
		return nil, fmt.Errorf("listing integration deliveries: %w", err)
	}
	defer rows.Close()
	var out []store.IntegrationDelivery
	for rows.Next() {
		d := store.IntegrationDelivery{WebsiteID: websiteID, Platform: platform}
		if err := rows.Scan(&d.DeliveryID, &d.Topic, &d.Event, &d.EventID, &d.Error, timeDest{&d.ReceivedAt}); err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, rows.Err()
}
