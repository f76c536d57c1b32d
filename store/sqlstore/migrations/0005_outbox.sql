-- Version 5: the webhook outbox.

-- Events to deliver to the websites' webhooks, read in seq order. seq is
-- strictly increasing and never reused (.Serial), and events commit in seq
-- order: SQLite has one writer, and on PostgreSQL the store takes an
-- advisory lock before inserting (lockOutbox). So a reader continuing after
-- the last seq it handled misses nothing. data is the event's JSON kept
-- byte for byte as it will be sent (.JSON: not jsonb, which would reorder
-- its keys).
CREATE TABLE webhook_events (
	seq        {{.Serial}},
	id         TEXT NOT NULL UNIQUE,
	website_id TEXT NOT NULL REFERENCES websites (id) ON DELETE CASCADE,
	event      TEXT NOT NULL,
	data       {{.JSON}} NOT NULL,
	created_at {{.Time}} NOT NULL
);

CREATE INDEX webhook_events_website ON webhook_events (website_id, seq);
