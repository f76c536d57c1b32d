-- SQLite's block of 0039_push_ledger.sql: group_concat joins each run's
-- ids, in byte order.
{{define "move"}}
INSERT INTO push_ledger (notification_seq, shard, last_endpoint, first_endpoint, outcome, push_service, pushes, endpoints)
SELECT notification_seq, shard, max(endpoint_id), min(endpoint_id), outcome, push_service, count(*),
	group_concat(endpoint_id, char(10) ORDER BY endpoint_id)
FROM (SELECT d.notification_seq, coalesce(e.shard, -1) AS shard, d.endpoint_id, d.outcome, d.push_service,
		substr(d.endpoint_id, 1, 1) AS bucket,
		(row_number() OVER (PARTITION BY d.notification_seq, coalesce(e.shard, -1), substr(d.endpoint_id, 1, 1), d.outcome, d.push_service
			ORDER BY d.endpoint_id) - 1) / 1000 AS part
	FROM deliveries d LEFT JOIN endpoints e ON e.id = d.endpoint_id) AS r
GROUP BY notification_seq, shard, bucket, outcome, push_service, part;
{{end}}
