package postgres

import (
	"context"
	"time"

	"github.com/relaybell/relaybell/store"
	"github.com/relaybell/relaybell/store/sqlstore"
)

// recordResultsQuery inserts a batch in one statement over three parallel
// arrays (endpoint ids, outcomes, push services: sqlstore.ResultService,
// "" stored as NULL); the rows ON CONFLICT DO NOTHING lets through, and
// so RETURNING yields, are exactly the new results, and the same
// statement adds them to the counters. It returns the notification's
// seq, NULL for an unknown notification.
const recordResultsQuery = `WITH n AS (
		SELECT seq FROM notifications WHERE id = $1
	), ins AS (
		INSERT INTO deliveries (notification_seq, endpoint_id, outcome, at, push_service)
		SELECT n.seq, r.endpoint_id, r.outcome, $4, NULLIF(r.push_service, '')
		FROM n CROSS JOIN unnest($2::text[], $3::text[], $5::text[]) AS r (endpoint_id, outcome, push_service)
		ON CONFLICT DO NOTHING
		RETURNING outcome
	), c AS (
		SELECT count(*) AS n_total,
			count(*) FILTER (WHERE outcome = 'sent') AS n_sent,
			count(*) FILTER (WHERE outcome = 'failed') AS n_failed,
			count(*) FILTER (WHERE outcome = 'pruned') AS n_pruned
		FROM ins
	), upd AS (
		UPDATE notifications SET recipients = recipients + n_total, processed = processed + n_total,
			sent = sent + n_sent, failed = failed + n_failed, pruned = pruned + n_pruned
		FROM c WHERE notifications.id = $1 AND n_total > 0
	)
	SELECT (SELECT seq FROM n)`

// recordResults is the Dialect.RecordResults hook: the batch in one
// statement (recordResultsQuery), one round trip where the generic insert
// takes five.
func recordResults(ctx context.Context, tx sqlstore.Conn, notificationID string, rs []store.PushResult, at time.Time) (bool, error) {
	ids, outcomes, services := make([]string, len(rs)), make([]string, len(rs)), make([]string, len(rs))
	for i, r := range rs {
		ids[i], outcomes[i], services[i] = r.EndpointID, r.Outcome, sqlstore.ResultService(r)
	}
	var seq *int64
	if err := tx.QueryRow(ctx, recordResultsQuery, notificationID, ids, outcomes, ts(at), services).Scan(&seq); err != nil {
		return false, err
	}
	return seq != nil, nil
}
