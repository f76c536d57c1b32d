package sqlstore

import (
	"context"
	"fmt"
	"time"
)

// CappedEndpointsQuery is CappedEndpoints' query on d, for the engines'
// plan tests and benchmarks: d.CappedQuery, or the generic one. The generic
// query counts the batch's ($4) sent results among the website's ($1) other
// non-transactional sends started since $2. The subquery picks those sends'
// seqs first (one range of notifications_started); deliveries is then read
// by primary key, (seq, endpoint) pairs, so on SQLite the cost follows the
// recent sends and the batch, not the table (TestCappedQueryPlan). A
// broadcast in the window costs a lookup per endpoint; a send to a few
// browsers, about 4 µs a batch (BenchmarkCappedEndpoints).
func CappedEndpointsQuery(d Dialect) string {
	if d.CappedQuery != "" {
		return d.CappedQuery
	}
	return `SELECT endpoint_id FROM deliveries
	WHERE notification_seq IN (SELECT seq FROM notifications
		WHERE website_id = $1 AND started_at >= $2 AND NOT transactional AND id <> $3)
	  AND ` + d.In("endpoint_id", "$4") + `
	  AND outcome = 'sent'
	GROUP BY endpoint_id HAVING count(*) >= $5`
}

// CappedEndpoints returns, in input order, the endpoints that already got
// max pushes from the website's other non-transactional sends started at or
// after since (see store.Store). PostgreSQL reads the recent sends' results
// its own way (Dialect.CappedQuery).
func (s *Store) CappedEndpoints(ctx context.Context, websiteID, notificationID string, endpointIDs []string, since time.Time, max int) ([]string, error) {
	if len(endpointIDs) == 0 {
		return nil, nil
	}
	if max < 1 {
		return endpointIDs, nil
	}
	rows, err := s.db.Read().Query(ctx, CappedEndpointsQuery(s.d),
		websiteID, s.time(since), notificationID, s.d.List(endpointIDs), max)
	capped, err := collectIDSet(rows, err)
	if err != nil {
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
