package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// cappedQuery counts a batch's sent results among the website's other
// non-transactional sends started since ?2. The subquery picks those sends'
// seqs first (one range of notifications_started); deliveries is then read
// by primary key, (seq, endpoint) pairs, so the cost follows the recent
// sends and the batch, not the table (TestCappedQueryPlan). A broadcast in
// the window costs a lookup per endpoint; a send to a few browsers, about
// 4 µs a batch (BenchmarkCappedEndpoints).
const cappedQuery = `SELECT endpoint_id FROM deliveries
	WHERE notification_seq IN (SELECT seq FROM notifications
		WHERE website_id = ?1 AND started_at >= ?2 AND transactional = 0 AND id <> ?3)
	  AND endpoint_id IN (SELECT value FROM json_each(?4))
	  AND outcome = 'sent'
	GROUP BY endpoint_id HAVING count(*) >= ?5`

// CappedEndpoints returns, in input order, the endpoints that already got
// max pushes from the website's other non-transactional sends started at or
// after since (see store.Store).
func (s *Store) CappedEndpoints(ctx context.Context, websiteID, notificationID string, endpointIDs []string, since time.Time, max int) ([]string, error) {
	if len(endpointIDs) == 0 {
		return nil, nil
	}
	if max < 1 {
		return endpointIDs, nil
	}
	ids, err := json.Marshal(endpointIDs)
	if err != nil {
		return nil, fmt.Errorf("checking the frequency cap: %w", err)
	}
	rows, err := s.r.query(ctx, cappedQuery, websiteID, ms(since), notificationID, string(ids), max)
	if err != nil {
		return nil, fmt.Errorf("checking the frequency cap: %w", err)
	}
	defer rows.Close()
	capped := make(map[string]struct{})
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("checking the frequency cap: %w", err)
		}
		capped[id] = struct{}{}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("checking the frequency cap: %w", err)
	}
	if len(capped) == 0 {
		return nil, nil
	}
	out := make([]string, 0, len(capped))
	for _, id := range endpointIDs {
		if _, ok := capped[id]; ok {
			out = append(out, id)
		}
	}
	return out, nil
}
