package postgres

import "time"

// audienceFrom is dialect.AudienceFrom: a page of an audience walk reads
// one range of the endpoints_audience index (keyset paging on e.id), and
// looks each endpoint's subscriber up by its primary key. The lookup is a
// LATERAL subquery with OFFSET 0 so that it stays one: written as a plain
// join, it was planned as a hash join over a sequential scan of every
// subscriber of the store, per page (27 ms against 5 ms a page of 1,500 at
// 100k subscribers, and a cost per page growing with the audience;
// BenchmarkAudience, TestAudienceLooksEachSubscriberUp).
const audienceFrom = `endpoints e CROSS JOIN LATERAL (SELECT * FROM subscribers s
		WHERE s.id = e.subscriber_id AND s.unsubscribed_at IS NULL OFFSET 0) AS s`

// scanTime is dialect.ScanTime: pgx scans a timestamptz into a *time.Time
// itself, in UTC (the codec Open registers), without an allocation.
func scanTime(t *time.Time) any { return t }
