package sqlstore

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/relaybell/relaybell/store"
)

// CappedQuery is CappedEndpoints' query, for the engines' plan tests and
// benchmarks: the push ledger's sent runs of shard $4 that meet the range
// of endpoint ids [$5, $6] ($7: the end of $6's bucket, as in LedgerQuery),
// of the website's ($1) other ($3) non-transactional sends started since
// $2. The sends are picked first (one range of notifications_started),
// and each one's runs are then one range of the ledger's key, so the cost
// follows the recent sends and the batch, not the table
// (TestCappedQueryPlan, TestQueryPlans).
const CappedQuery = `SELECT c.endpoints FROM notifications n
	JOIN push_ledger c ON c.notification_seq = n.seq AND c.shard = $4
		AND c.last_endpoint >= $5 AND c.last_endpoint < $7 AND c.first_endpoint <= $6 AND c.outcome = 'sent'
	WHERE n.website_id = $1 AND n.started_at >= $2 AND NOT n.transactional AND n.id <> $3`

// CappedEndpoints returns, in input order, the ids of the endpoints that
// already got max pushes from the website's other non-transactional sends
// started at or after since (see store.Store): one read a shard of the
// batch (CappedQuery), each of a send's pushes counted once, as a send's
// runs hold disjoint ids.
func (s *Store) CappedEndpoints(ctx context.Context, websiteID, notificationID string, endpoints []store.ShardEndpoint, since time.Time, max int) ([]string, error) {
	if len(endpoints) == 0 {
		return nil, nil
	}
	if max < 1 {
		out := make([]string, len(endpoints))
		for i, e := range endpoints {
			out[i] = e.ID
		}
		return out, nil
	}
	pushes := make(map[string]int, len(endpoints))
	for _, e := range endpoints {
		pushes[e.ID] = 0
	}
	for shard, ids := range byShard(endpoints) {
		lo, hi := slices.Min(ids), slices.Max(ids)
		rows, err := s.db.Read().Query(ctx, CappedQuery,
			websiteID, s.time(since), notificationID, shard, lo, hi, ledgerBucketEnd(hi))
		if err != nil {
			return nil, fmt.Errorf("checking the frequency cap: %w", err)
		}
		err = eachRun(rows, func(id string) {
			if n, ok := pushes[id]; ok {
				pushes[id] = n + 1
			}
		})
		if err != nil {
			return nil, fmt.Errorf("checking the frequency cap: %w", err)
		}
	}
	var out []string
	for _, e := range endpoints {
		if pushes[e.ID] >= max {
			out = append(out, e.ID)
		}
	}
	return out, nil
}
