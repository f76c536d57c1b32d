package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// recentSendsQuery picks the website's other non-transactional sends
// started at or after $2 (one range of notifications_started), with how
// many results each has recorded.
const recentSendsQuery = `SELECT seq, recipients FROM notifications
	WHERE website_id = $1 AND started_at >= $2 AND NOT transactional AND id <> $3`

// cappedQuery counts the batch's ($3) sent results among the recent sends,
// through the deliveries primary key either way. A send with more results
// than the batch has endpoints ($1) is probed once per endpoint, a unique
// (notification_seq, endpoint_id) lookup; a smaller one ($2) has its
// results read as one range of the key and matched against the batch in a
// hash (endpoint_id || '' keeps the planner from probing it 500 times for a
// result or two). So a batch costs at most one probe or one row per recent
// send and endpoint, whatever the planner thinks of the average send, and
// the seq scan that an IN (subquery) of the recent sends got on small
// tables never happens.
const cappedQuery = `SELECT endpoint_id FROM (
		SELECT d.endpoint_id FROM unnest($1::bigint[]) AS s (seq)
			CROSS JOIN unnest($3::text[]) AS b (id)
			JOIN deliveries d ON d.notification_seq = s.seq AND d.endpoint_id = b.id
		WHERE d.outcome = 'sent'
		UNION ALL
		SELECT d.endpoint_id FROM deliveries d
			JOIN unnest($3::text[]) AS b (id) ON b.id = d.endpoint_id || ''
		WHERE d.notification_seq = ANY ($2::bigint[]) AND d.outcome = 'sent'
	) AS r GROUP BY endpoint_id HAVING count(*) >= $4`

// CappedEndpoints returns, in input order, the endpoints that already got
// max pushes from the website's other non-transactional sends started at or
// after since (see store.Store). It takes two queries, the recent sends and
// then their results (cappedQuery), where the SQLite store takes one: the
// split of the sends by size is what keeps PostgreSQL's plan on the key.
func (s *Store) CappedEndpoints(ctx context.Context, websiteID, notificationID string, endpointIDs []string, since time.Time, max int) ([]string, error) {
	if len(endpointIDs) == 0 {
		return nil, nil
	}
	if max < 1 {
		return endpointIDs, nil
	}
	rows, err := s.pool.Query(ctx, recentSendsQuery, websiteID, ts(since), notificationID)
	if err != nil {
		return nil, fmt.Errorf("checking the frequency cap: %w", err)
	}
	var large, small []int64
	var seq, recipients int64
	_, err = pgx.ForEachRow(rows, []any{&seq, &recipients}, func() error {
		// The counter only picks the cheaper way to read a send's
		// results; both ways count the same rows.
		if recipients > int64(len(endpointIDs)) {
			large = append(large, seq)
		} else {
			small = append(small, seq)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("checking the frequency cap: %w", err)
	}
	if len(large)+len(small) < max {
		return nil, nil // no endpoint can have max results
	}
	rows, err = s.pool.Query(ctx, cappedQuery, large, small, endpointIDs, max)
	if err != nil {
		return nil, fmt.Errorf("checking the frequency cap: %w", err)
	}
	capped := make(map[string]struct{})
	var id string
	_, err = pgx.ForEachRow(rows, []any{&id}, func() error {
		capped[id] = struct{}{}
		return nil
	})
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
