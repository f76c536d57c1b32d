package postgres

// cappedQuery is the Dialect.CappedQuery hook. It counts the batch's ($4)
// sent results among the website's other non-transactional sends started
// at or after $2 (s: one range of notifications_started), reading
// deliveries by its primary key only, one send at a time, whichever way is
// cheaper for the send (both count the same rows; the send's recipients
// counter only picks the way):
//
//   - a send with more results than the batch has endpoints is probed
//     once per endpoint, a unique (notification_seq, endpoint_id) lookup;
//   - a smaller one has its results read as one range of the key, and the
//     rows are matched against the batch in a hash.
//
// So a batch costs at most one lookup or one row per recent send and
// endpoint. OFFSET 0 keeps each LATERAL read a loop over the sends: left
// to itself the planner, judging every send by the average one (a
// broadcast's results weigh as much as a thousand single sends'), reads the
// whole of deliveries instead, as it does for the generic query's
// notification_seq IN (the recent sends): over 12M results, 0.6 s a batch
// (50 s on a generic plan) where this query takes 20 ms
// (BenchmarkCappedEndpoints/year-generic shows the same on a smaller
// table). It relies on the pool's jit = off (Open).
const cappedQuery = `WITH s AS (
		SELECT seq, recipients FROM notifications
		WHERE website_id = $1 AND started_at >= $2 AND NOT transactional AND id <> $3
	)
	SELECT endpoint_id FROM (
		SELECT r.endpoint_id FROM s CROSS JOIN unnest($4::text[]) AS b (id)
			CROSS JOIN LATERAL (SELECT endpoint_id FROM deliveries
				WHERE notification_seq = s.seq AND endpoint_id = b.id AND outcome = 'sent' OFFSET 0) AS r
		WHERE s.recipients > cardinality($4::text[])
		UNION ALL
		SELECT t.endpoint_id FROM (
			SELECT r.endpoint_id FROM s CROSS JOIN LATERAL (SELECT endpoint_id FROM deliveries
				WHERE notification_seq = s.seq AND outcome = 'sent' OFFSET 0) AS r
			WHERE s.recipients <= cardinality($4::text[]) OFFSET 0
		) AS t JOIN unnest($4::text[]) AS b (id) ON b.id = t.endpoint_id
	) AS c GROUP BY endpoint_id HAVING count(*) >= $5`
