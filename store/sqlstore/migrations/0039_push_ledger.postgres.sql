-- PostgreSQL's block of 0039_push_ledger.sql: string_agg joins the ids of
-- each thousand of a send's shard, in byte order.
{{define "move"}}
INSERT INTO push_ledger (notification_seq, shard, last_endpoint, first_endpoint, endpoints)
SELECT notification_seq, shard, max(endpoint_id), min(endpoint_id),
	string_agg(endpoint_id, E'\n' ORDER BY endpoint_id)
FROM (SELECT d.notification_seq, e.shard, d.endpoint_id COLLATE "C" AS endpoint_id,
		(row_number() OVER (PARTITION BY d.notification_seq, e.shard ORDER BY d.endpoint_id COLLATE "C") - 1) / 1000 AS part
	FROM deliveries d JOIN endpoints e ON e.id = d.endpoint_id
	WHERE d.outcome = 'sent') AS sent
GROUP BY notification_seq, shard, part;
{{end}}
