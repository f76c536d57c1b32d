-- Version 39: the push ledger. A send's sent pushes are kept as rows of
-- endpoint ids, not a deliveries row each: one row per send, audience
-- shard and write of a pusher's recorder, holding the ids of the
-- endpoints of that shard whose pushes that write recorded as sent
-- (store.PackEndpoints: in byte order, one a line), and the first and
-- the last of them. A shard's audience is read in endpoint id order, so
-- the ids of one write lie close together in that order, and a batch's
-- check of what is done already (Undelivered, and the frequency cap)
-- reads only the rows whose [first_endpoint, last_endpoint] meets the
-- batch's own: one range of the key, from last_endpoint >= the batch's
-- first id. The rows of one send and shard hold disjoint ids (the
-- recorder writes a send's ids under its notification row's lock), so
-- last_endpoint is unique among them.
--
-- Failed and pruned pushes keep their deliveries row each: the reports'
-- delivery health reads them by push service. The sent rows already in
-- deliveries are moved here, a thousand ids a row (the block "move" of
-- 0039_push_ledger.sqlite.sql and 0039_push_ledger.postgres.sql); those
-- of endpoints that are gone are dropped, as nothing pushes to them
-- again nor caps them.
CREATE TABLE push_ledger (
	notification_seq {{.Bigint}} NOT NULL,
	shard            INTEGER NOT NULL,
	last_endpoint    TEXT{{.ByteOrder}} NOT NULL,
	first_endpoint   TEXT{{.ByteOrder}} NOT NULL,
	endpoints        TEXT NOT NULL,
	PRIMARY KEY (notification_seq, shard, last_endpoint)
){{.WithoutRowid}};

{{template "move" .}}

DELETE FROM deliveries WHERE outcome = 'sent';
