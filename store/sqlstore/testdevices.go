package sqlstore

import (
	"context"
	"fmt"
	"time"

	"github.com/relaybell/relaybell/store"
)

// testDeviceCols are a test device's columns, of test_devices t, its
// endpoint e and its subscriber s.
const testDeviceCols = `t.endpoint_id, t.name, e.subscriber_id, s.external_id, e.device, e.user_agent, t.created_at, e.last_seen_at`

const testDeviceFrom = ` FROM test_devices t
	CROSS JOIN endpoints e
	CROSS JOIN subscribers s
	WHERE e.id = t.endpoint_id AND s.id = e.subscriber_id AND t.website_id = $1`

func scanTestDevice(row interface{ Scan(...any) error }) (store.TestDevice, error) {
	var d store.TestDevice
	err := row.Scan(&d.EndpointID, &d.Name, &d.SubscriberID, textDest{&d.ExternalID}, &d.Device, &d.UserAgent,
		timeDest{&d.CreatedAt}, timeDest{&d.LastSeenAt})
	return d, err
}

// AddTestDevice makes the website's endpoint a test device, or renames it.
// The website's row is locked first, so concurrent adds count one after
// the other against MaxTestDevices.
func (s *Store) AddTestDevice(ctx context.Context, websiteID, endpointID, name string, at time.Time) (store.TestDevice, bool, error) {
	var (
		out     store.TestDevice
		created bool
	)
	err := s.db.Tx(ctx, TxOptions{}, func(tx Conn) error {
		var id string
		if err := tx.QueryRow(ctx, `SELECT id FROM websites WHERE id = $1 `+s.d.LockRows("NO KEY UPDATE"), websiteID).Scan(&id); err != nil {
			return s.mapErr(err)
		}
		// Held until the insert: an unsubscription meanwhile waits, so the
		// endpoint is still there for the foreign key.
		if err := tx.QueryRow(ctx, `SELECT id FROM endpoints WHERE id = $1 AND website_id = $2 `+s.d.LockRows("KEY SHARE"),
			endpointID, websiteID).Scan(&id); err != nil {
			return s.mapErr(err)
		}
		var others int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM test_devices WHERE website_id = $1 AND endpoint_id <> $2`,
			websiteID, endpointID).Scan(&others); err != nil {
			return err
		}
		if others >= store.MaxTestDevices {
			return fmt.Errorf("%d test devices already: %w", others, store.ErrConflict)
		}
		n, err := tx.Exec(ctx, `UPDATE test_devices SET name = $3 WHERE endpoint_id = $1 AND website_id = $2`, endpointID, websiteID, name)
		if err != nil {
			return err
		}
		if n == 0 {
			if _, err := tx.Exec(ctx, `INSERT INTO test_devices (endpoint_id, website_id, name, created_at) VALUES ($1, $2, $3, $4)`,
				endpointID, websiteID, name, s.time(at)); err != nil {
				return err
			}
			created = true
		}
		out, err = scanTestDevice(tx.QueryRow(ctx, `SELECT `+testDeviceCols+testDeviceFrom+` AND t.endpoint_id = $2`, websiteID, endpointID))
		return err
	})
	if err != nil {
		return store.TestDevice{}, false, fmt.Errorf("adding test device: %w", err)
	}
	return out, created, nil
}

// TestDevices lists the website's test devices, newest first.
func (s *Store) TestDevices(ctx context.Context, websiteID string) ([]store.TestDevice, error) {
	rows, err := s.db.Read().Query(ctx, `SELECT `+testDeviceCols+testDeviceFrom+` ORDER BY t.created_at DESC, t.endpoint_id`, websiteID)
	if err != nil {
		return nil, fmt.Errorf("listing test devices: %w", err)
	}
	defer rows.Close()
	out := []store.TestDevice{}
	for rows.Next() {
		d, err := scanTestDevice(rows)
		if err != nil {
			return nil, fmt.Errorf("listing test devices: %w", err)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing test devices: %w", err)
	}
	return out, nil
}

// RemoveTestDevice makes the endpoint no test device.
func (s *Store) RemoveTestDevice(ctx context.Context, websiteID, endpointID string) error {
	if _, err := s.db.Write().Exec(ctx, `DELETE FROM test_devices WHERE endpoint_id = $1 AND website_id = $2`, endpointID, websiteID); err != nil {
		return fmt.Errorf("removing test device: %w", err)
	}
	return nil
}
