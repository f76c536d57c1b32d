-- Version 39: the push ledger, in place of deliveries. A send's push
-- results are kept as runs of endpoint ids, not a row each: one row per
-- send, audience shard, bucket (the id's first character), outcome and
-- push service of each write of a pusher's recorder, holding the ids of
-- the endpoints whose results that write recorded (store.PackEndpoints:
-- in byte order, one a line), the first and the last of them, and how
-- many. A shard's audience is read in endpoint id order, and a run never
-- leaves its bucket, so a batch's check of what is done (Undelivered, the
-- frequency cap) reads only the runs of its own stretch of the shard: one
-- range of the key, last_endpoint from the batch's first id up to the end
-- of its last id's bucket. The runs of one send and shard hold disjoint
-- ids (the recorder writes a send's results under its notification row's
-- lock), so last_endpoint is unique among them. push_service is kept for
-- failed and pruned runs (a report's delivery health, read through
-- push_ledger_trouble), NULL for sent ones.
--
-- The rows of deliveries are moved here, a thousand ids a run at most
-- (the block "move" of 0039_push_ledger.sqlite.sql and
-- 0039_push_ledger.postgres.sql). Those of endpoints that are gone are
-- kept under shard -1, which no check reads: nothing pushes to them
-- again, and a report still counts them.
CREATE TABLE push_ledger (
	notification_seq {{.Bigint}} NOT NULL,
	shard            INTEGER NOT NULL,
	last_endpoint    TEXT{{.ByteOrder}} NOT NULL,
	first_endpoint   TEXT{{.ByteOrder}} NOT NULL,
	outcome          TEXT NOT NULL CHECK (outcome IN ('sent', 'failed', 'pruned')),
	push_service     TEXT,
	pushes           INTEGER NOT NULL,
	endpoints        TEXT NOT NULL,
	PRIMARY KEY (notification_seq, shard, last_endpoint)
){{.WithoutRowid}};

CREATE INDEX push_ledger_trouble ON push_ledger (notification_seq, outcome, push_service, pushes) WHERE outcome <> 'sent';

{{template "move" .}}

DROP TABLE deliveries;
